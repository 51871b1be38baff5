// Solr documents as rfs reads them: a backup presented as a snapshot repository of one snapshot
// holding one index (the collection, or the core), so that every reader of snapshots (the
// worker and its leases, split shards, trial runs, the export, SnapshotInspector docs, the
// verifier) reads it unchanged; and the plan that rebuilds each document from its stored fields
// and doc values as Solr's own `/select` returns it (docs/solr.md):
//   - every field Solr returns: stored fields in their stored order (duplicates kept), fields
//     kept only in doc values (useDocValuesAsStored) in doc-values order (sorted; strings and
//     booleans each once, numbers with their repeats);
//   - a multiValued field as an array even with one value, a single-valued one as a scalar;
//   - numbers as Java prints them, dates as ISO-8601 instants ("2020-01-01T03:04:05Z",
//     "...:05.500Z"), booleans as true/false, a point as its "lat,lon" text, a vector as an
//     array of floats;
//   - child documents (a `_nest_path_`) inside their parent under their path's name, an array
//     for "name#N" and an object for "name#", as `fl=*,[child]` returns them; anonymous
//     children (`_childDocuments_`, no path) are documents of their own, as `/select` counts
//     them;
//   - `_version_`, `_root_`, `_nest_path_` and fields Solr does not return are left out.
// Each document's `_id` is its uniqueKey.
//
// Thread safety: plain functions; the repository returned is as thread-safe as any.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/lucene/source_rebuild.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/solr/backup.hpp"
#include "rfs/solr/schema.hpp"

#include "absl/status/statusor.h"

namespace rfs::solr {

/// One backup point with its schema and the field names its segments hold.
struct LoadedBackup {
  SolrBackup backup;
  std::string schema_path;  ///< the schema's path in the location
  std::string schema_text;
  SolrSchema schema;
  /// The field names of every segment of every shard, sorted, each once.
  std::vector<std::string> index_fields;
};

/// Reads backup `name` of `location` (SolrBackupLocation::ReadBackup), its schema and each
/// shard's field names. `schema_file`, a local file, is the schema instead of the backup's (a
/// standalone core backup keeps none). InvalidArgument for a wrong choice of collection or
/// point, a schema file that cannot be read, or a backup without a schema and no file given;
/// NotFound for a backup that is not there; DataLoss naming the file for damaged content.
absl::StatusOr<LoadedBackup> LoadBackup(const SolrBackupLocation& location, std::string_view name,
                                        const ReadBackupOptions& options = {},
                                        const std::string& schema_file = "");

/// The plan that rebuilds documents of `schema` as `/select` returns them (see above).
/// `index_fields` are the field names the index holds: each a dynamic field matches is read by
/// name. Fields Solr does not return are listed in the plan's `unrebuildable`.
/// FailedPrecondition for a schema without a uniqueKey (documents without an `_id`).
absl::StatusOr<lucene::SourceRebuildPlan> RebuildPlanFromSchema(
    const SolrSchema& schema, const std::vector<std::string>& index_fields);

/// Backup `name` of the location in `repo` as a repository holding one snapshot named `name`,
/// whose one index is named after the collection (or core), with the collection's shards in
/// name order and the mapping MappingFromSchema makes. Errors as LoadBackup.
absl::StatusOr<std::unique_ptr<snapshot::SnapshotRepository>> OpenBackupAsSnapshotRepository(
    std::shared_ptr<const snapshot::ISourceRepo> repo, std::string_view name,
    const ReadBackupOptions& options = {}, const std::string& schema_file = "");

/// The plan of an index of such a repository; nullptr for any other index (a snapshot's).
absl::StatusOr<std::shared_ptr<const lucene::SourceRebuildPlan>> RebuildPlanForBackupIndex(
    const snapshot::IndexMetadata& index);

}  // namespace rfs::solr
