// SourceDocument: one document on its way from a snapshot shard to a target, and
// IDocumentStream, the pull interface the reindexer reads them through.
//
// The Lucene reader produces SourceDocuments in shard order; `cursor` is the reader's position
// (for example the Lucene doc id within the shard) and only needs to grow along the stream
// (documents made from one source document by a transform share its cursor), so the reindexer can
// report "every document up to this cursor is acknowledged" and a restarted worker can resume after
// it.
//
// Thread safety: SourceDocument is a plain value. An IDocumentStream is used by one thread at a
// time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace rfs::reindex {

struct SourceDocument {
  /// Target index name.
  std::string index;
  std::string id;
  /// Mapping type of ES <= 6 sources; used only for targets that still need one.
  std::optional<std::string> type;
  std::optional<std::string> routing;
  /// The `_source` as JSON bytes; may span several lines (pretty-printed sources are kept as
  /// stored).
  std::string source;
  /// Set when `source` is known to hold no raw CR or LF (the shard reader's stream makes JSON
  /// sources one line as it copies them), so bulk writers need not scan it again.
  bool one_line = false;
  /// Position of the document in its stream; never decreasing (equal only for documents a
  /// transform made from one source document).
  uint64_t cursor = 0;
};

class IDocumentStream {
 public:
  virtual ~IDocumentStream() = default;
  /// The next document, std::nullopt at the end. An error ends the stream (the reindexer stops
  /// and returns it).
  virtual absl::StatusOr<std::optional<SourceDocument>> Next() = 0;
};

/// A stream over documents held in memory (tests, benchmarks, small embedders). Moves each
/// document out as it is read.
class VectorDocumentStream final : public IDocumentStream {
 public:
  explicit VectorDocumentStream(std::vector<SourceDocument> docs) : docs_(std::move(docs)) {}
  absl::StatusOr<std::optional<SourceDocument>> Next() override {
    if (next_ == docs_.size()) return std::optional<SourceDocument>();
    return std::optional<SourceDocument>(std::move(docs_[next_++]));
  }

 private:
  std::vector<SourceDocument> docs_;
  size_t next_ = 0;
};

}  // namespace rfs::reindex
