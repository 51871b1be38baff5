// Reading a shard of a snapshot as documents: the glue between the snapshot layer (which shard
// files a snapshot holds, where) and ShardReader (what those Lucene files contain).
//
// This is the entry point for embedding the reader: open a repository, pick a snapshot, then
// for each index and shard open a ShardReader and pull documents from a cursor.
//
//   auto repo = snapshot::FileSystemRepo::Open(dir);
//   auto repository = snapshot::SnapshotRepository::Open(*repo);
//   auto snap = (*repository)->FindSnapshot("snap-1");
//   auto reader = lucene::OpenSnapshotShard(**repository, **snap, "my-index", 0);
//   auto cursor = (*reader)->OpenAt(0);
//   while (auto doc = (*cursor)->Next(); doc.ok() && doc->has_value()) { ... }
//
// Thread safety: as ShardReader (immutable; one DocumentCursor per thread).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rfs/lucene/shard_reader.hpp"
#include "rfs/snapshot/models.hpp"
#include "rfs/snapshot/repository.hpp"

#include "absl/status/statusor.h"

namespace rfs::lucene {

/// Opens the Lucene commit that `snapshot` holds for shard `shard` of `index`, reading its files
/// in place. Errors name the index, shard and snapshot.
absl::StatusOr<std::unique_ptr<ShardReader>> OpenSnapshotShard(
    const snapshot::SnapshotRepository& repository, const snapshot::SnapshotEntry& snapshot,
    std::string_view index, int shard, ShardReaderOptions options = {});

/// The mapping type documents of this index carry when it was created with types (before
/// Elasticsearch 7): the single mapping type name; std::nullopt for typeless indices. ES 5.x
/// multi-type indices carry the type per document instead (Document::type from `_uid`).
std::optional<std::string> IndexMappingType(const snapshot::IndexMetadata& index);

/// How an index keeps `_source` (from its mapping and settings), and the mapping of its (single
/// or first) type, from which a SourceRebuildPlan is made.
struct IndexSource {
  SourceStorage storage;
  boost::json::object mapping;
};
IndexSource DescribeIndexSource(const snapshot::IndexMetadata& index);

/// Whether fields of `index` have doc values unless the mapping says otherwise (not for indices
/// created by Elasticsearch 1.x).
bool DocValuesByDefault(const snapshot::IndexMetadata& index);

/// The defaults a rebuild plan of `index` takes from the engine and version that created it.
/// `source` is how the index keeps `_source` (DescribeIndexSource).
RebuildPlanOptions RebuildPlanOptionsForIndex(const snapshot::IndexMetadata& index,
                                              const SourceStorage& source);

/// The plan that rebuilds the documents of `index` when its sources are incomplete; nullptr when
/// they are complete. InvalidArgument for a mapping that is not an object tree.
absl::StatusOr<std::shared_ptr<const SourceRebuildPlan>> RebuildPlanForIndex(
    const snapshot::IndexMetadata& index);

}  // namespace rfs::lucene
