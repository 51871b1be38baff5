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

#include <string>
#include <string_view>

#include "rfs/core/json_string.hpp"
#include "rfs/reindex/source_document.hpp"

namespace rfs::reindex {

struct BulkActionOptions {
  /// Adds `"_type"` (the document's type, or "_doc") for Elasticsearch 5/6 targets, which
  /// require one; OpenSearch and Elasticsearch 8 reject it.
  bool include_type = false;
};

/// Appends `{"index":{"_index":...,"_id":...[,"_type":...][,"routing":...]}}\n` to `out`,
/// JSON-escaping the values.
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

}  // namespace rfs::reindex
