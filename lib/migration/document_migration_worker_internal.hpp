// What the files of DocumentMigrationWorker share: how one grant of an item ended.
#pragma once

#include "rfs/migration/document_migration_worker.hpp"

namespace rfs::migration {

struct DocumentMigrationWorker::ItemResult {
  enum class Kind { kCompleted, kCheckpointed, kNoProgress, kLeaseLost, kStopped };
  Kind kind = Kind::kCompleted;
};

namespace internal {

/// The work items of one shard as a run with `options` sets them up: the whole shard, or the
/// parts of one larger than `options.split_shard_bytes` (never for a delta, `delta` true, or a
/// trial). RfsWorker's full verification walks them to add up what its items delivered.
absl::StatusOr<std::vector<coordination::WorkItemId>> ShardWorkItems(
    const snapshot::SnapshotRepository& repository, const snapshot::SnapshotEntry& snapshot,
    const DocumentMigrationOptions& options, bool delta, const std::string& index, int shard);

}  // namespace internal

}  // namespace rfs::migration
