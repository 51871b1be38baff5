// TransformingDocumentStream: user transforms (rfs/transform/json_transformer.hpp) between a
// shard's documents and the reindexer.
//
// Documents are read in batches (by count and `_source` bytes), given to the transformer as one
// JSON array in the Java tool's document shape, and its output array becomes the stream. A
// transform may drop, re-route (`_index`, routing), rewrite or split documents. Every output of a
// batch carries the cursor of the batch's last input document, so the reindexer acknowledges the
// batch as a whole (it never splits documents sharing a cursor across bulks) and a worker that
// dies redoes the whole batch rather than losing the outputs of a half-written one.
//
// When a batch fails (a transform error, or an output that is not a document), its documents are
// transformed one by one, each output keeping its own document's cursor; a document that still
// fails goes to the failed-document sink (error type "transform_exception", the reason, and its
// source) and the shard goes on. When no transformer reads sources (ReadsDocumentSource), sources
// are neither parsed nor re-serialised: they pass through byte for byte.
//
// Thread safety: as IDocumentStream, one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "rfs/core/memory_budget.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/reindex/source_document.hpp"
#include "rfs/transform/json_transformer.hpp"

#include "absl/status/statusor.h"

namespace rfs::reindex {

struct DocumentTransformOptions {
  size_t max_batch_docs = 256;
  size_t max_batch_bytes = size_t{4} << 20;
  /// The worker's shared memory budget, or null. A batch is transformed once the budget has room
  /// for kTransformFootprint times its `_source` bytes (the parsed documents, the program's copy,
  /// the outputs), and holds that much while it is: a batch of huge documents waits for the bulks
  /// in flight and the readers' large chunks, and goes alone.
  core::MemoryBudget* memory_budget = nullptr;
  /// The transforms' memory bound (transform::TransformLimits::memory_bytes), or 0. A document
  /// whose footprint (kTransformFootprint times its `_source`) is over it fails at once as
  /// "transform_budget_exceeded", without the batch it would have joined: the program's own
  /// bound is watched every few milliseconds and may not see a fast copy of a huge document.
  size_t transform_memory_bytes = 0;
};

/// What transforming a batch holds, in multiples of its `_source` bytes (measured: jq about 3.3
/// times a 100 MB document, JavaScript about 5).
inline constexpr size_t kTransformFootprint = 4;

class TransformingDocumentStream final : public IDocumentStream {
 public:
  /// `failed_sink` may be null (failures are then only counted). Everything must outlive the
  /// stream.
  TransformingDocumentStream(IDocumentStream& input, transform::IJsonTransformer& transformer,
                             IFailedDocumentSink* failed_sink,
                             DocumentTransformOptions options = {});

  absl::StatusOr<std::optional<SourceDocument>> Next() override;

  /// Documents read, written out, dropped by the transform, and failed (recorded).
  uint64_t docs_in() const { return docs_in_; }
  uint64_t docs_out() const { return docs_out_; }
  uint64_t docs_dropped() const { return docs_dropped_; }
  uint64_t docs_failed() const { return docs_failed_; }

 private:
  absl::Status Refill();
  absl::Status TransformBatch(std::vector<SourceDocument>& batch);
  /// Counts `doc` as failed and records it (its source moved out) with `error` as the reason.
  absl::Status RecordFailure(SourceDocument& doc, const absl::Status& error);
  /// The outputs of `docs` (all given `cursor`), or an error for the whole group.
  absl::StatusOr<std::vector<SourceDocument>> Apply(std::vector<SourceDocument*> docs,
                                                    uint64_t cursor);

  IDocumentStream& input_;
  transform::IJsonTransformer& transformer_;
  IFailedDocumentSink* failed_sink_;
  const DocumentTransformOptions options_;
  const bool parse_sources_;
  std::deque<SourceDocument> ready_;
  bool input_done_ = false;
  uint64_t docs_in_ = 0;
  uint64_t docs_out_ = 0;
  uint64_t docs_dropped_ = 0;
  uint64_t docs_failed_ = 0;
};

}  // namespace rfs::reindex
