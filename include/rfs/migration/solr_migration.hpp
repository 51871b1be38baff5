// Solr backups as the source of MetadataMigration: the collection (or core) of one backup becomes
// one index whose mapping is made from the backed-up schema (rfs/solr/schema.hpp), reported item
// by item as for snapshots, every decision per field among its notes.
//
// The backup is chosen as the Java tool's options name it: the location (--snapshot-local-dir or
// --s3-repo-uri), the backup's name (--snapshot-name), and where needed --solr-collection and
// --solr-backup-id (default: the newest point).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "rfs/migration/tools.hpp"

#include "absl/status/statusor.h"

namespace rfs::migration {

/// The Solr major `text` names ("SOLR 9", "Solr 8.11", "solr_7"); nullopt when it names no Solr;
/// InvalidArgument for a Solr before 6 or after 9.
absl::StatusOr<std::optional<int>> ParseSolrSourceVersion(std::string_view text);

struct SolrSourceOptions {
  int major = 9;
  std::optional<std::string> collection;
  std::optional<int> backup_id;
  /// A local schema file instead of the backup's (a standalone core backup keeps none).
  std::string schema_file;
};

/// MetadataMigration over a Solr backup: options.snapshot_name is the backup's name. Exit codes
/// as RunMetadataMigration: 5 for a backup that cannot be read, 64 for a wrong option (a name
/// holding several collections with none chosen), 1 for an index the target refused.
MetadataToolResult RunSolrMetadataMigration(MetadataToolOptions options,
                                            const SolrSourceOptions& solr);

/// SnapshotInspector info over a Solr backup location: without `backup_name` every backup of it
/// ({"location", "backups": [{name, layout, collections, backup_ids}]}); with one, that backup
/// ({"backup": {name, layout, collection, backup_id, config_name, lucene_version, start_time,
/// schema_file, shards: [{name, range, files, bytes}]}}). NotFound or DataLoss from the backup.
absl::StatusOr<boost::json::object> InspectSolrBackups(const RepositoryLocation& location,
                                                       const std::string& backup_name,
                                                       const SolrSourceOptions& solr);
/// The text form of InspectSolrBackups' answer.
std::string FormatSolrInspection(const boost::json::object& inspection);

}  // namespace rfs::migration
