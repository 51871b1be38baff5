// The Lucene directory view of one shard snapshot (not installed).
#pragma once

#include <memory>
#include <string>

#include "rfs/core/random_access.hpp"
#include "rfs/snapshot/models.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "absl/status/statusor.h"

namespace rfs::snapshot::internal {

/// Each physical Lucene file of `shard` readable in place: from one blob, from its `.partN`
/// blobs in order, or from the inline `meta_hash` of a `v__` entry.
absl::StatusOr<std::shared_ptr<const core::IDirectory>> MakeShardDirectory(
    std::shared_ptr<const ISourceRepo> repo, std::string folder, ShardSnapshot shard,
    std::string description, ShardFilesOptions options);

}  // namespace rfs::snapshot::internal
