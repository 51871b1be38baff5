// The `_bulk` NDJSON format: action lines and one-line sources.
//
// A bulk body is pairs of lines, `{"index":{"_index":"i","_id":"d","routing":"r"}}` then the
// document's `_source`; every line ends with '\n', including the last. Sources read from a
// snapshot may be pretty-printed over several lines, so they are made one line first. That needs
// no parse: in valid JSON a raw CR or LF can only be whitespace between tokens (inside strings
// they must be escaped as \n and \r), so replacing each by a space yields the same document on
// one line. Both OpenSearchBulkSink and NdjsonDirectorySink use these, so the bytes sent to a
// cluster and written to a replay file are identical. Thread-safe (pure functions).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "rfs/core/json_string.hpp"
#include "rfs/reindex/source_document.hpp"

#include "absl/status/status.h"

namespace rfs::reindex {

struct BulkActionOptions {
  /// Adds `"_type"` (the document's type, or "_doc") for Elasticsearch 5/6 targets, which
  /// require one; OpenSearch and Elasticsearch 8 reject it.
  bool include_type = false;
};

/// The bulk lines of consecutive documents, laid out once by the thread that decoded them (while
/// their bytes are still in its cache) for a sink that writes them as they are: a file sink
/// then writes long runs of them to the disk from here, where it would otherwise copy each
/// document again, from memory, long after it was decoded. Documents refer to their lines
/// (SourceDocument::rendered) and share ownership of this, which does not change once the
/// documents are handed on.
struct RenderedLines {
  /// What the action lines were made with; a sink with other options makes its own.
  BulkActionOptions options;
  std::string bytes;
};

/// Lays out `doc`'s lines at the end of `lines`: its action line (made from `doc`), then the
/// source `append_source` appends to `lines.bytes` on one line (`{}` when it appends nothing),
/// then '\n', and points `doc` at them. When `append_source` fails, `lines` is left as it was
/// and its status is returned.
template <typename AppendSource>
absl::Status AppendRenderedLines(SourceDocument& doc, const std::shared_ptr<RenderedLines>& lines,
                                 AppendSource&& append_source);

/// Whether `doc` was laid out with `options` (its lines can be written as they are).
bool HasRenderedLines(const SourceDocument& doc, const BulkActionOptions& options);

/// Appends `{"index":{"_index":...,"_id":...[,"_type":...][,"routing":...]
/// [,"version":N,"version_type":"external"]}}\n` to `out`, JSON-escaping the values.
void AppendBulkAction(const SourceDocument& doc, const BulkActionOptions& options,
                      std::string& out);

/// Appends `source` to `out` on one line (CR and LF replaced by spaces) followed by '\n'. An
/// empty source becomes `{}`.
void AppendSourceLine(std::string_view source, std::string& out);

/// AppendSourceLine for a document: a source marked `one_line` is copied without a scan.
void AppendSourceLine(const SourceDocument& doc, std::string& out);

/// Appends `value` as a JSON string literal (quotes included) to `out`; kept here for source
/// compatibility, the escaper lives in rfs/core/json_string.hpp.
using core::AppendJsonString;

/// Bytes the document adds to a bulk body (action line estimate plus source and newline); used
/// to cut batches by size without serializing twice.
size_t EstimateBulkBytes(const SourceDocument& doc);

template <typename AppendSource>
absl::Status AppendRenderedLines(SourceDocument& doc, const std::shared_ptr<RenderedLines>& lines,
                                 AppendSource&& append_source) {
  std::string& out = lines->bytes;
  const size_t begin = out.size();
  AppendBulkAction(doc, lines->options, out);
  const size_t source = out.size();
  if (absl::Status status = append_source(out); !status.ok()) {
    out.resize(begin);
    return status;
  }
  if (out.size() == source) out.append("{}");
  out.push_back('\n');
  doc.source.clear();
  doc.one_line = true;
  doc.rendered = lines;
  doc.rendered_begin = begin;
  doc.rendered_source = source;
  doc.rendered_end = out.size();
  return absl::OkStatus();
}

}  // namespace rfs::reindex
