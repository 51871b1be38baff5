// Decoding a shard on several threads while its documents still come out in cursor order.
//
// ParallelShardScan is the engine: the cursor range from `start` is cut into ranges of
// `range_docs` cursors; thread t decodes ranges t, t+T, t+2T, ... with its own DocumentCursor
// (seeking forward from range to range) and runs the caller's `on_document` on each live
// document while its decoded chunk is still hot in that thread's cache, building the caller's
// ScannedRange (documents copied out, NDJSON lines, ...). The caller takes the ranges in order.
// Decoding runs at most `max_ranges_ahead` ranges and `max_buffered_bytes` (as the ranges count
// them) ahead of the caller; the range the caller waits for is always decoded. So memory stays
// bounded whatever the shard, and a range's documents are never copied between threads unless
// the caller's range does so. A huge document (a stored-fields chunk of 4 MiB or more) is
// decoded only for the range the caller waits for, after room for it and its copy in
// `memory_budget` when one is set, and its thread's buffers are dropped once the range is done.
//
// ParallelDocumentReader is an IDocumentReader over the engine: each range copies its documents
// out, and the caller takes them one at a time. The order, and position(), are exactly a
// DocumentCursor's, so checkpoints and resumption do not change.
//
// Thread safety: one caller thread; the objects own their decoding threads and join them when
// destroyed (decoded-ahead ranges are dropped). `on_document` runs on several threads at once,
// each call with its own range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "rfs/core/memory_budget.hpp"
#include "rfs/lucene/shard_reader.hpp"

#include "absl/status/statusor.h"

namespace rfs::lucene {

struct ParallelReadOptions {
  /// Decoding threads (1 still decodes ahead of the caller, on one thread).
  int threads = 2;
  /// Cursors per range: large enough that seeking is rare, small enough to spread the work.
  uint64_t range_docs = 2048;
  size_t max_ranges_ahead = 8;
  size_t max_buffered_bytes = size_t{64} << 20;
  /// A range whose documents reach this many bytes (as on_document counts them in `bytes`) is
  /// handed out in parts, each ending after the document that reached it: large documents never
  /// pile up in a range, and a huge one is decoded only once the caller took the parts before it.
  size_t max_range_bytes = size_t{16} << 20;
  /// Decode only the cursors before this one (a part of a split shard); default: to the end.
  uint64_t end_cursor = UINT64_MAX;
  /// The pipeline's shared budget (its in-flight bulks charge it): a huge chunk is decoded once
  /// twice its size fits (the chunk and the caller's copy of its document), or alone.
  core::MemoryBudget* memory_budget = nullptr;
};

/// What a decoding thread made of one range; callers derive their own.
struct ScannedRange {
  virtual ~ScannedRange() = default;
  /// Memory the range holds, counted against max_buffered_bytes (set by on_document).
  size_t bytes = 0;
  /// The range's end cursor: every document before it was given to on_document.
  uint64_t end = 0;
  /// The counts of the range's documents (and of the deleted ones skipped among them).
  ReaderStats stats;
};

class ParallelShardScan {
 public:
  using NewRange = std::function<std::unique_ptr<ScannedRange>()>;
  /// Runs on a decoding thread for each document of a range, in order; `doc.source` is valid only
  /// during the call. An error stops the scan: Next returns it at this range.
  using OnDocument = std::function<absl::Status(Document& doc, ScannedRange& range)>;
  /// Runs on a decoding thread after the range's last document (e.g. to drop a cursor that
  /// decoded a huge chunk). Returns whether the thread should reopen its cursor for the next range.
  using OnRangeDone = std::function<bool(ScannedRange& range)>;

  /// Starts decoding at `start`. `reader` must outlive the returned object.
  static absl::StatusOr<std::unique_ptr<ParallelShardScan>> Open(
      const ShardReader& reader, uint64_t start, ParallelReadOptions options, NewRange new_range,
      OnDocument on_document, OnRangeDone on_range_done = {});
  ~ParallelShardScan();

  /// The next range in cursor order; null after the last one. An error (from decoding or from
  /// on_document) ends the scan.
  absl::StatusOr<std::unique_ptr<ScannedRange>> Next();
  /// The sum of the stats of the ranges returned so far.
  const ReaderStats& stats() const;

 private:
  struct Impl;
  explicit ParallelShardScan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class ParallelDocumentReader final : public IDocumentReader {
 public:
  /// Starts decoding at `start`. `reader` must outlive the returned object.
  static absl::StatusOr<std::unique_ptr<ParallelDocumentReader>> Open(
      const ShardReader& reader, uint64_t start, ParallelReadOptions options = {});
  ~ParallelDocumentReader() override;

  absl::StatusOr<bool> Next(Document& doc) override;
  uint64_t position() const override;
  /// The counts of the documents handed out so far (and of the deleted ones skipped before them).
  const ReaderStats& stats() const;

 private:
  struct Impl;
  explicit ParallelDocumentReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rfs::lucene
