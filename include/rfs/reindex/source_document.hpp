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
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace rfs::reindex {

struct RenderedLines;  // bulk_format.hpp

enum class BulkOp : uint8_t { kIndex, kCreate, kDelete };

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
  /// The bulk action: `index` (create or replace by `_id`, the usual), `create` (a data
  /// stream's document: data streams take nothing else; a target that already holds the `_id`,
  /// 409, has it from an earlier attempt and is not an error), or `delete` of `id` (with
  /// `routing`): a delta migration's document gone since the previous snapshot, with no source;
  /// bulk writers send its action line alone, and a target that does not hold the document
  /// (404) is not an error.
  BulkOp op = BulkOp::kIndex;
  /// Set for an `index` written with the source's `_version` (`--preserve-version`): the action
  /// carries `"version":N,"version_type":"external"`, so the target keeps whichever copy has the
  /// higher version. A target that holds a newer one answers 409 version_conflict_engine_exception,
  /// which the reindexer counts as already newer (ReindexSummary::docs_already_newer). Never on a
  /// `create` (the engines take only internal versions there) or a `delete`.
  std::optional<int64_t> version;
  /// Set when the reader already laid out this document's bulk lines (action line, one-line
  /// source, '\n') in `rendered`, after those of the documents before it, so that a file sink
  /// writes them from there (see RenderedLines). `source` is then empty: read it with
  /// SourceBytes().
  std::shared_ptr<const RenderedLines> rendered;
  /// Where this document's lines are in `rendered`: its action line begins at `rendered_begin`,
  /// its source line at `rendered_source`, and the next document's lines at `rendered_end`.
  size_t rendered_begin = 0;
  size_t rendered_source = 0;
  size_t rendered_end = 0;
};

/// The document's `_source`: `source`, or its line in `rendered` (without the '\n').
std::string_view SourceBytes(const SourceDocument& doc);
/// SourceBytes(doc).size(), without reading `rendered`.
inline size_t SourceSize(const SourceDocument& doc) {
  return doc.rendered ? doc.rendered_end - 1 - doc.rendered_source : doc.source.size();
}

/// Keeps documents handed out in place alive (IDocumentStream::NextInPlace): whatever holds
/// them (a range of a shard's documents, or one document).
using DocumentHolder = std::shared_ptr<const void>;

class IDocumentStream {
 public:
  virtual ~IDocumentStream() = default;
  /// The next document, std::nullopt at the end. An error ends the stream (the reindexer stops
  /// and returns it).
  virtual absl::StatusOr<std::optional<SourceDocument>> Next() = 0;
  /// The next document where the stream holds it, nullptr at the end (errors as Next()). It
  /// stays valid and unchanged, whatever is read after it, while a copy of `holder` as this call
  /// leaves it is kept. A stream that reads documents a range at a time (a shard's decoding
  /// threads) may leave `holder` as it is for the documents of one range, so they are handed on
  /// without being moved, each (the range then lives until the last bulk holding one of them is
  /// written). The default moves the document Next() returns into a holder of its own.
  virtual absl::StatusOr<const SourceDocument*> NextInPlace(DocumentHolder& holder);
  /// Memory each document handed on holds besides its bulk lines while the reindexer has it
  /// (the struct itself, and what its holder keeps per document). The reindexer charges it to
  /// its memory budget with the lines, so a stream of small documents stays within the budget.
  virtual size_t bytes_held_per_document() const { return sizeof(SourceDocument) + 32; }
  /// Whether no two documents share a cursor (no transform splits one in several). The reindexer
  /// then sends a batch as soon as it is full, instead of holding it (a huge document, say) until
  /// the next document shows whether it belongs with them.
  virtual bool unique_cursors() const { return false; }
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
