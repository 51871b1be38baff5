// What changed in one shard between two snapshots of it (docs/delta.md): the documents to index
// and the ids to delete so that a target holding the older snapshot's documents holds the newer
// one's.
//
// Segments both snapshots hold (same name, id and size: Lucene never rewrites a segment) are not
// decoded: only their live docs are compared, and a document live in the older snapshot and
// deleted in the newer is a candidate for deletion. Segments only the older snapshot holds (merged
// away) and those candidates are read once for their ids, routing and a hash of their source.
// Segments only the newer snapshot holds are read in cursor order: a document there is sent
// unless the older snapshot held the same id with the same routing and source (a document a merge
// only moved). Ids live in the older snapshot and in no segment of the newer are deleted.
//
//   auto delta = ShardDeltaReader::Open(std::move(older), std::move(newer),
//                                       DeltaMode::kUpdatesAndDeletes);
//   while ((*delta)->Next(doc) ...) { doc.deleted ? delete doc.id : index doc }
//
// Cursors: documents to index carry the newer shard's cursors; the deletes follow, at
// newer.max_cursor() + their index in id order. A reader opened at any position() resumes
// there, so the delta runs under the same work items and progress as a full shard.
//
// Thread safety: one reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rfs/lucene/shard_reader.hpp"

#include "absl/status/statusor.h"

namespace rfs::lucene {

/// Which changes a delta sends (the Java tool's --experimental-delta-mode).
enum class DeltaMode : uint8_t { kUpdatesOnly, kUpdatesAndDeletes, kDeletesOnly };

/// Parses UPDATES_ONLY / UPDATES_AND_DELETES / DELETES_ONLY (any case, '-' or '_').
std::optional<DeltaMode> ParseDeltaMode(std::string_view text);
std::string_view DeltaModeName(DeltaMode mode);

struct ShardDeltaStats {
  size_t segments_shared = 0;    ///< in both snapshots: only live docs compared
  size_t segments_previous = 0;  ///< only in the older snapshot: read for ids
  size_t segments_current = 0;   ///< only in the newer snapshot: read for documents
  uint64_t previous_docs_read = 0;
  uint64_t current_docs_read = 0;
  uint64_t docs_unchanged = 0;  ///< moved by a merge, same source: not sent
  uint64_t docs_to_index = 0;   ///< returned so far
  uint64_t docs_to_delete = 0;  ///< ids to delete (whether or not returned yet)
  size_t previous_shards = 0;   ///< older shards read (more than one: the index was reshaped)
  uint64_t other_current_docs_read = 0;  ///< newer shards' documents read for their ids
};

/// The older snapshot's side of one shard's delta.
struct DeltaPrevious {
  /// The same shard of the same index (same uuid, same shard count): segments both snapshots
  /// hold are compared by their live docs only. Null when the older snapshot lacks it.
  std::unique_ptr<ShardReader> same_shard;
  /// Instead of `same_shard`, when the index was re-created, split or shrunk between the
  /// snapshots (another uuid or shard count): every shard of the older index, each read whole for
  /// ids, routing and source hashes, since a document may now be in any shard.
  std::vector<std::unique_ptr<ShardReader>> reshaped;
  /// With `reshaped`: whether this reader deletes the ids gone from the whole index. No shard
  /// alone can tell an id is gone, so one reader per index does it (the worker's shard 0 item),
  /// given the newer snapshot's other shards in `other_current`. Every other reader sends only
  /// documents to index (and the delete of a copy whose routing changed, just before its new
  /// copy): an id is deleted only when no shard of the newer index holds it, so no delete can
  /// overtake an index operation of another item, whatever order the items run in.
  bool delete_gone = false;
  std::vector<std::unique_ptr<ShardReader>> other_current;
};

class ShardDeltaReader final : public IDocumentReader {
 public:
  /// A delta against `previous` (see DeltaPrevious).
  static absl::StatusOr<std::unique_ptr<ShardDeltaReader>> Open(
      DeltaPrevious previous, std::unique_ptr<ShardReader> current, DeltaMode mode,
      uint64_t start = 0);
  /// `previous` may be null (the shard is new: every document is sent). Both readers must use
  /// the same options (a rebuild plan included). Reads the older side and positions the reader
  /// at `start` (a position() of an earlier reader, or 0).
  static absl::StatusOr<std::unique_ptr<ShardDeltaReader>> Open(
      std::unique_ptr<ShardReader> previous, std::unique_ptr<ShardReader> current, DeltaMode mode,
      uint64_t start = 0);
  ~ShardDeltaReader() override;

  absl::StatusOr<bool> Next(Document& doc) override;
  uint64_t position() const override;
  /// One past the last position: the newer shard's max_cursor() plus the deletes.
  uint64_t end() const;
  const ShardDeltaStats& stats() const;

 private:
  struct Impl;
  explicit ShardDeltaReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rfs::lucene
