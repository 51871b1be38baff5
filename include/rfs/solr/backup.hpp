// Solr backups as a source: the backups a Solr backup location holds, each one's collection
// state, configset and shards, and each shard's Lucene files readable in place.
//
// A location is the folder (or S3 prefix) Solr's `location` parameter names; it holds backups by
// name. Three layouts are read (Solr's source, solr/core/src/java/org/apache/solr/...):
//   incremental  (SolrCloud, Solr 8.9+, the default in 9: cloud/api/collections/BackupCmd.java,
//                core/backup/BackupFilePaths.java)
//                <name>/<collection>/backup_N.properties   one per backup point N (BackupId)
//                <name>/<collection>/shard_backup_metadata/md_<shard>_N.json   each shard's files:
//                    {"<unique name>": {"fileName": "_0.fdt", "size": 165, "checksum": <crc>}}
//                    (ShardBackupMetadata.java; checksum: the file's Lucene footer CRC-32)
//                <name>/<collection>/index/<unique name>  the files of every point, shared
//                <name>/<collection>/zk_backup_N/collection_state.json, configs/<configName>/
//   full         (SolrCloud before 8.9, or incremental=false: BackupManager.java)
//                <name>/backup.properties, <name>/snapshot.<shard>/ (the shard's Lucene files,
//                written by handler/SnapShooter.java), <name>/zk_backup/
//   core         (a standalone core: the replication handler's command=backup, SnapShooter.java)
//                snapshot.<name>/ with the core's Lucene files and nothing else: no schema.
//
// Every blob is untrusted: a malformed properties or JSON file, a listed file that is missing or
// of another size, a checksum that differs is DataLoss naming the file.
//
// Thread safety: after Open, every method is const and may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/core/random_access.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "absl/status/statusor.h"

namespace rfs::solr {

enum class BackupLayout { kIncremental, kFull, kCore };
/// "incremental", "full", "core".
const char* BackupLayoutName(BackupLayout layout);

/// The keys and values of a Java properties file (java.util.Properties.load: `#`/`!` comments,
/// `=`, `:` or blanks between key and value, backslash escapes and `\uXXXX`, continued lines),
/// read as UTF-8 as Solr writes them (BackupProperties.java). DataLoss naming `source` and the
/// line for a malformed escape.
absl::StatusOr<std::map<std::string, std::string>> ParseJavaProperties(std::string_view text,
                                                                       std::string_view source);

/// One Lucene file of a backed-up shard.
struct BackupFile {
  std::string lucene_name;  ///< "_0.fdt", "segments_2"
  std::string blob;         ///< its path in the location
  uint64_t size = 0;
  /// The Lucene footer CRC-32 the backup records (incremental backups only).
  std::optional<uint32_t> checksum;
};

struct BackupShard {
  std::string name;               ///< "shard1"; a core backup's one shard is named after the backup
  std::string range;              ///< its hash range ("80000000-ffffffff"), "" when not recorded
  std::vector<BackupFile> files;  ///< sorted by lucene_name
  uint64_t total_bytes() const;
};

/// What ListBackups finds under one name of the location.
struct BackupSummary {
  std::string name;  ///< the folder's name ("snapshot.<name>" for a core backup)
  BackupLayout layout = BackupLayout::kIncremental;
  /// The collection backed up (incremental: each collection folder; full: from
  /// backup.properties; core: none).
  std::vector<std::string> collections;
  /// Incremental backups: the backup points of the (first) collection, ascending.
  std::vector<int> backup_ids;
};

/// One backup point, read and cross-checked.
struct SolrBackup {
  std::string name;  ///< the backup's folder under the location
  BackupLayout layout = BackupLayout::kIncremental;
  /// The collection; for a core backup the backup's name without "snapshot.".
  std::string collection;
  int backup_id = -1;  ///< incremental backups only
  std::string folder;  ///< where its properties (or, for a core, its files) live
  std::map<std::string, std::string> properties;  ///< backup[_N].properties (none for a core)
  std::string config_name;                        ///< collection.configName ("" for a core)
  std::string lucene_version;  ///< indexVersion, the Lucene version that wrote it ("" unknown)
  std::string start_time;      ///< startTime, ISO-8601 ("" unknown)
  /// zk_backup[_N]/collection_state.json's object for the collection (empty for a core).
  boost::json::object collection_state;
  std::string zk_folder;  ///< "" for a core backup, or when the backup holds no ZooKeeper state
  std::vector<BackupShard> shards;  ///< sorted by name
};

struct ReadBackupOptions {
  /// The collection folder of an incremental backup name that holds several.
  std::optional<std::string> collection;
  /// The backup point of an incremental backup; the newest when not set.
  std::optional<int> backup_id;
};

class SolrBackupLocation {
 public:
  explicit SolrBackupLocation(std::shared_ptr<const snapshot::ISourceRepo> repo)
      : repo_(std::move(repo)) {}

  const snapshot::ISourceRepo& repo() const { return *repo_; }

  /// Every backup of the location, by name. A folder that is none of the three layouts is left
  /// out.
  absl::StatusOr<std::vector<BackupSummary>> ListBackups() const;

  /// Reads backup `name` (a folder of the location; for a core backup also its name without
  /// "snapshot."). NotFound naming the backups present when there is none of that name;
  /// InvalidArgument (a wrong option) when the name holds several collections and none is
  /// chosen, or the collection or point asked for does not exist; DataLoss for damaged metadata.
  absl::StatusOr<SolrBackup> ReadBackup(std::string_view name,
                                        const ReadBackupOptions& options = {}) const;

  /// The files of the backed-up configset (paths below configs/<configName>/), sorted; none for
  /// a core backup or a backup taken without its configset.
  absl::StatusOr<std::vector<std::string>> ListConfigFiles(const SolrBackup& backup) const;
  /// One file of the configset (at most 64 MiB). NotFound when absent.
  absl::StatusOr<std::string> ReadConfigFile(const SolrBackup& backup, std::string_view file) const;
  /// The schema of the configset: managed-schema.xml (Solr 9), managed-schema (Solr 6-8) or
  /// schema.xml, the first present; `file` says which. NotFound when the backup holds none.
  struct Schema {
    std::string file;
    std::string text;
  };
  absl::StatusOr<Schema> ReadSchema(const SolrBackup& backup) const;

  /// The shard's Lucene files, each read in place. With `verify_checksums`, a file whose backup
  /// records a checksum is checked against its footer when opened (DataLoss naming it).
  absl::StatusOr<std::shared_ptr<const core::IDirectory>> OpenShardFiles(
      const SolrBackup& backup, std::string_view shard, bool verify_checksums = false) const;

 private:
  absl::StatusOr<SolrBackup> ReadIncremental(std::string name, std::string collection,
                                             const ReadBackupOptions& options) const;
  absl::StatusOr<SolrBackup> ReadFull(std::string name) const;
  absl::StatusOr<SolrBackup> ReadCore(std::string name) const;
  absl::StatusOr<std::map<std::string, std::string>> ReadProperties(const std::string& path) const;
  absl::Status ReadCollectionState(SolrBackup& backup) const;
  absl::StatusOr<std::vector<BackupFile>> ListLuceneFolder(const std::string& folder) const;

  std::shared_ptr<const snapshot::ISourceRepo> repo_;
};

}  // namespace rfs::solr
