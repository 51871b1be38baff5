// A description of a snapshot repository for people and programs: what SnapshotInspector
// prints. Reading it walks the repository index, the chosen snapshot's SnapshotInfo, global
// metadata, each index's metadata and each shard's file list (not the Lucene files).
#pragma once

#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "rfs/snapshot/repository.hpp"

#include "absl/status/statusor.h"

namespace rfs::snapshot {

/// Describes `repository` and one snapshot (`snapshot_name`, default: the newest) as
///   {"repository", "layout", "source_version", "snapshots": [{name, uuid, state[, damaged]}],
///    "damaged_snapshots": [names],
///    "snapshot": {name, uuid, state, version_id, start_time, end_time, failures},
///    "indices": [{name, number_of_shards, number_of_replicas, shard_file_bytes, shards_missing,
///                 aliases, settings, mappings}],
///    "templates": {"legacy": {...}, "component": {...}, "index": {...}},
///    "data_streams": [{"name", "timestamp_field", "backing_indices": [...]}]}
/// A shard without data (failed shard) is listed in `shards_missing`, not an error. Every snapshot
/// listed is checked as FindSnapshot checks one to migrate (its repository-index entry against its
/// snap-*.dat); one that fails is listed with `damaged` (why) and named in `damaged_snapshots`.
/// The chosen snapshot failing it is an error (DataLoss), as for a migration.
absl::StatusOr<boost::json::object> InspectRepository(
    const SnapshotRepository& repository, const std::optional<std::string>& snapshot_name);

/// The same description as readable text.
std::string FormatInspection(const boost::json::object& inspection);

}  // namespace rfs::snapshot
