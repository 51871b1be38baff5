// The document pipeline: the stages one shard's documents go through on their way to a sink,
// built once here and put together by the worker (DocumentMigrationWorker) for full, trial and
// delta runs. docs/document-trip.md follows one document through them.
//
//   1. Source, in cursor order (IConvertedSource): a shard's live documents from a cursor, read
//      on this thread (OpenSerialSource, also over a delta's lucene::ShardDeltaReader) or decoded
//      ahead on reader threads (OpenParallelSource), always handed on in cursor order so that a
//      checkpoint is exact.
//   2. Conversion (ConvertDocument): placement (target index by data stream, mapping type and
//      multi-type policy, trial prefix), the bulk operation, and `_source` as one-line JSON
//      (SMILE, CBOR and YAML converted; values of translated fields in the form the target's
//      mapping takes, IndexPlacement::values); what cannot be sent is marked with the reason.
//      For the export, the line it writes instead of bulk lines (export_lines), and a huge JSON
//      document handed on unconverted (defer_json_over, Kind::kDeferred).
//   3. Admission (ShardDocumentStream): stops at the item's end, a trial's limit, a stop or the
//      lease's checkpoint time; records documents that cannot be sent in the failed-document
//      sink; counts.
//   4. Transforms (reindex::TransformingDocumentStream), when a user transform is configured.
//   5. Batching and sending (reindex::DocumentReindexer) into the sink (reindex::IDocumentSink).
//
// Laid-out lines, a capability of the sink: a sink whose writes_rendered_lines() is true writes
// the bulk lines the reader lays out (SourceDocument::rendered) as they are. The worker asks the
// sink once, before the source opens, and passes its action_options() to OpenParallelSource as
// `render`; the decoding threads then write each document's action and source lines while its
// bytes are in their cache. Never with a transform (it changes the documents after stage 2) or
// for a data stream (its documents are checked once converted). Documents flow only downstream:
// no stage calls back into the sink while documents move.
//
// The NDJSON export (export.cpp, SnapshotInspector docs) reads through the same sources: stage
// 2 lays out its lines in the export's own format (ConversionTarget::export_lines) on the thread
// that decoded each document, and the export writes them as they are.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rfs/core/memory_budget.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/lucene/shard_reader.hpp"
#include "rfs/migration/worker_metrics.hpp"
#include "rfs/reindex/bulk_format.hpp"
#include "rfs/reindex/document_reindexer.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/snapshot/models.hpp"
#include "rfs/transform/es_mapping_rules.hpp"
#include "rfs/transform/type_policy.hpp"

#include "absl/status/statusor.h"

namespace rfs::migration::internal {

/// The failed-document record's error_type for a source that could not be made JSON (its bytes
/// are kept in base64); a redrive knows such records by it.
inline constexpr std::string_view kSourceConversionError = "source_conversion_exception";

/// How a shard of `index` is opened for migration or export: non-JSON sources passed through
/// (converted per document in stage 2), and, with `enable_sourceless_migrations`, the rebuild
/// plan of the index's mapping.
/// With `preserve_version`, each document's `_version` is read too (its doc values).
absl::StatusOr<lucene::ShardReaderOptions> ShardReaderOptionsFor(
    const snapshot::IndexMetadata& index, bool enable_sourceless_migrations,
    bool preserve_version = false);

/// What the worker knows about a source index to place its documents.
struct IndexPlacement {
  size_t type_count = 0;
  std::optional<std::string> mapping_type;
  /// Set for a data stream's backing index: its documents are written to the stream, as
  /// `create`, and must hold the stream's timestamp field.
  std::optional<std::string> data_stream;
  std::string timestamp_field;
  /// A trial run's prefix of every target index name.
  std::string target_prefix;
  /// Values of translated fields the target takes in another form (hex vectors, legacy
  /// semantic_text), or null when the index has none.
  std::shared_ptr<const transform::DocumentValueConversions> values;
};

/// Where a shard's documents go, for ConvertDocument.
struct ConversionTarget {
  const std::string& index;
  const IndexPlacement& placement;
  transform::MultiTypePolicy policy;
  /// `--preserve-version`: an `index` carries the document's source `_version` as an external
  /// version (a data stream's `create` and a delta's `delete` carry none).
  bool preserve_version = false;
  /// Lines laid out for the NDJSON export instead of bulk lines (ConvertedDocument::line_owner).
  bool export_lines = false;
  /// When set, a JSON source larger than this is not converted: the document is handed on as
  /// kDeferred, for a consumer that reads it again from the shard and writes it a piece at a
  /// time (the export), so that no copy of a huge document is ever made.
  size_t defer_json_over = 0;
};

/// One shard document as the worker sends it (or the export writes it), or why it cannot be. Made
/// without side effects, so the parallel source makes them on its decoding threads.
struct ConvertedDocument {
  enum class Kind : uint8_t { kDocument, kWithoutSource, kUnconvertible, kDeferred };
  /// Why a kUnconvertible document cannot be sent. Apart, since it is rare: every document of a
  /// range in flight holds its ConvertedDocument, and the memory budget charges them.
  struct Unconvertible {
    std::string reason;
    std::string error_type;  // the failed-document record's error_type
    /// The source as the failed-document record keeps it, for an operator: base64 of the
    /// stored bytes when they could not be decoded, else the JSON.
    std::string recorded_source;
  };
  Kind kind = Kind::kDocument;
  // Index, id and cursor in every kind; the source for kDocument, unless it is laid out (in
  // doc.rendered, or for the export in line_owner).
  reindex::SourceDocument doc;
  std::unique_ptr<Unconvertible> unconvertible;  // set for kUnconvertible
  bool rebuilt = false;          // the source was rebuilt from doc values and stored fields
  bool rebuilt_inexact = false;  // with a value that may differ from the one indexed
  /// kUnconvertible for a source that could not be made JSON: why, as a status code
  /// (kUnimplemented: a format without a JSON form; anything else: damaged bytes).
  absl::StatusCode conversion_error = absl::StatusCode::kOk;
  /// Bytes of the source as stored (before conversion).
  size_t stored_source_bytes = 0;
  /// With ConversionTarget::export_lines and laid-out lines: the document's export line, at
  /// [line_begin, line_end) of `line_owner`'s bytes (complete once the document is handed on).
  std::shared_ptr<const reindex::RenderedLines> line_owner;
  size_t line_begin = 0;
  size_t line_end = 0;
};

/// The NDJSON export's line up to its source: `{"_index":..,["_type":..,]"_id":..,
/// ["_routing":..,]"_source":` (the source and `}\n` follow).
void AppendExportLineHead(const reindex::SourceDocument& doc, std::string& out);

/// Stage 2: converts `in` into `out`. With `lines`, its bulk lines are laid out there at once
/// (for a sink that writes them as they are), while its decoded bytes are still in this
/// thread's cache.
void ConvertDocument(lucene::Document& in, const ConversionTarget& target,
                     const std::shared_ptr<reindex::RenderedLines>* lines, ConvertedDocument& out);

/// Stage 1 with stage 2 applied: a shard's documents from a cursor position, converted, in
/// cursor order; position() is where a successor resumes after the documents returned so far.
class IConvertedSource {
 public:
  virtual ~IConvertedSource() = default;
  virtual absl::StatusOr<bool> Next(ConvertedDocument& out) = 0;
  /// The next document where the source holds it (valid until the next call), or nullptr at the
  /// end: for a reader that only looks at each document, without moving it out.
  virtual absl::StatusOr<const ConvertedDocument*> NextInPlace() {
    RFS_ASSIGN_OR_RETURN(const bool more, Next(in_place_));
    return more ? &in_place_ : nullptr;
  }
  /// The next document where it stays, unchanged, while a copy of `holder` as this call leaves
  /// it is kept (reindex::IDocumentStream::NextInPlace), or nullptr at the end. The caller may
  /// move out of the fields it does not hand on. The default converts each document into a
  /// holder of its own.
  virtual absl::StatusOr<ConvertedDocument*> NextHeld(reindex::DocumentHolder& holder) {
    auto held = std::make_shared<ConvertedDocument>();
    RFS_ASSIGN_OR_RETURN(const bool more, Next(*held));
    if (!more) return nullptr;
    ConvertedDocument* doc = held.get();
    holder = std::move(held);
    return doc;
  }
  virtual uint64_t position() const = 0;
  /// The document last read, as decoded, when this source reads on the calling thread (valid
  /// until the next call): a kDeferred document is written from it without a second read.
  virtual const lucene::Document* last_read() const { return nullptr; }

 private:
  ConvertedDocument in_place_;
};

/// Decodes and converts on the calling thread.
std::unique_ptr<IConvertedSource> OpenSerialSource(std::unique_ptr<lucene::IDocumentReader> cursor,
                                                   ConversionTarget target);

/// Makes `cursor` wait, before it decodes a huge document's chunk, for room in `budget` for the
/// chunk and its converted copy (or for nothing else to be charged): the serial source's share of
/// the pipeline's one memory budget. `budget` must outlive the cursor.
void AdmitLargeChunks(lucene::DocumentCursor& cursor, core::MemoryBudget& budget);

/// Decodes and converts on `threads` reader threads (lucene::ParallelShardScan), from `start` up
/// to `end`, handing documents on in cursor order. With `render`, each range's documents have
/// their bulk lines laid out with those options (the sink's laid-out-lines capability), or their
/// export lines when `target.export_lines` (the options then unused). A huge
/// document waits for room in `budget` (may be null) as AdmitLargeChunks says. `reader` and
/// `budget` must outlive the source.
absl::StatusOr<std::unique_ptr<IConvertedSource>> OpenParallelSource(
    const lucene::ShardReader& reader, uint64_t start, uint64_t end, int threads,
    ConversionTarget target, std::optional<reindex::BulkActionOptions> render,
    core::MemoryBudget* budget = nullptr);

/// Stage 3: hands one shard's converted documents to the reindexer until the shard ends or `end`
/// (a part of a split shard ends before the shard does) is reached, or `stop_reading` says so;
/// records the ones that cannot be sent.
class ShardDocumentStream final : public reindex::IDocumentStream {
 public:
  ShardDocumentStream(IConvertedSource& source, uint64_t end, std::function<bool()> stop_reading,
                      reindex::IFailedDocumentSink* failed_sink,
                      std::function<void(const reindex::SourceDocument&)> report_without_source);

  absl::StatusOr<std::optional<reindex::SourceDocument>> Next() override;
  /// Documents read by the decoding threads are handed on where they lie in their range.
  absl::StatusOr<const reindex::SourceDocument*> NextInPlace(
      reindex::DocumentHolder& holder) override;
  /// A document handed on in place holds its place in its range (until the range's last bulk
  /// is written).
  size_t bytes_held_per_document() const override { return sizeof(ConvertedDocument); }
  /// One document per shard cursor: a full batch may go at once.
  bool unique_cursors() const override { return true; }

  void set_counters(WorkerCounters* counters) { counters_ = counters; }
  /// A trial's limit on the documents read.
  void set_max_docs(uint64_t max_docs) { max_docs_ = max_docs; }
  bool stopped_early() const { return stopped_early_; }
  bool read_failed() const { return read_failed_; }
  uint64_t docs_read() const { return docs_read_; }
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t without_source() const { return without_source_; }
  uint64_t rebuilt() const { return rebuilt_; }
  uint64_t rebuilt_inexact() const { return rebuilt_inexact_; }
  uint64_t deletes() const { return deletes_; }
  uint64_t conversion_failures() const { return conversion_failures_; }
  /// Documents that reached no target: without a source, or not convertible.
  uint64_t not_convertible() const { return without_source_ + conversion_failures_; }

 private:
  // The next document to hand on, counted, or nullptr at the end (the stream's end, `end`, the
  // trial's limit, or a stop); `read` gives the next converted document or nullptr. Documents
  // that cannot be sent are recorded on the way.
  template <typename Read>
  absl::StatusOr<ConvertedDocument*> NextToHandOn(Read read);
  absl::Status RecordUnmigratable(const reindex::SourceDocument& doc, std::string_view type,
                                  std::string_view reason, std::string source);

  IConvertedSource& source_;
  const uint64_t end_;
  const std::function<bool()> stop_reading_;
  reindex::IFailedDocumentSink* const failed_sink_;
  const std::function<void(const reindex::SourceDocument&)> report_without_source_;
  ConvertedDocument converted_;
  WorkerCounters* counters_ = nullptr;
  bool stopped_early_ = false;
  bool read_failed_ = false;
  uint64_t docs_read_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t without_source_ = 0;
  uint64_t rebuilt_ = 0;
  uint64_t rebuilt_inexact_ = 0;
  uint64_t max_docs_ = UINT64_MAX;
  uint64_t deletes_ = 0;
  uint64_t conversion_failures_ = 0;
};

}  // namespace rfs::migration::internal
