// ParallelDocumentReader: a shard's live documents in cursor order, decoded ahead on several
// threads. The cursor range from `start` is cut into ranges of `range_docs` cursors; thread t
// decodes ranges t, t+T, t+2T, ... with its own DocumentCursor (seeking forward from range to
// range), copies each range's documents into a buffer, and the caller takes them in order.
// Decoding runs at most `max_ranges_ahead` ranges and `max_buffered_bytes` of sources ahead of
// the caller (the range the caller waits for is always decoded), so memory stays bounded
// whatever the shard. The order, and position(), are exactly a DocumentCursor's, so checkpoints
// and resumption do not change.
//
// Thread safety: one caller thread; the reader owns its decoding threads and joins them when
// destroyed (decoded-ahead documents are dropped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

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
