// Value types for what a snapshot repository describes: its snapshots, the indices in each,
// their metadata, the global metadata (templates), and each shard's file list.
//
// They are plain data decoded from repository blobs (docs/formats.md A.2-A.6); JSON subtrees that
// callers pass on unchanged (settings, mappings, aliases, templates) stay boost::json values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "rfs/core/version.hpp"

namespace rfs::snapshot {

/// The repository layout family, which decides blob names (docs/formats.md A.1, A.8).
enum class RepositoryLayout {
  kEs1,     // root `index` JSON; `snapshot-<name>`, `metadata-<name>`; index folders by name
  kEs2,     // root `index` JSON; `snap-<name>.dat`, `meta-<name>.dat`; index folders by name
  kModern,  // ES 5.x+ and OpenSearch: `index-N`, UUID-named snapshots and index folders
};
const char* LayoutName(RepositoryLayout layout);

/// Decodes a Version id: major*1000000 + minor*10000 + revision*100 + build; OpenSearch ids
/// carry bit 0x08000000 (OpenSearch Version.MASK). ES 8.10+ IndexVersion ids (>= 8500000) are
/// mapped through a table of known releases. Product kUnknown for ids <= 0.
core::ClusterVersion VersionFromId(int64_t id);
/// The first ES IndexVersion id (8.10): ids from here on name an index format, not a release.
inline constexpr int64_t kFirstIndexVersionId = 8500000;
/// Parses "7.10.2" (all three parts) with the given product.
std::optional<core::ClusterVersion> ParseVersionNumber(core::ClusterVersion::Product product,
                                                       std::string_view text);

/// One snapshot as listed by the repository index.
struct SnapshotEntry {
  std::string name;
  std::string uuid;  // equals name in ES 1.x/2.x layouts
  /// "SUCCESS", "PARTIAL", "FAILED", "IN_PROGRESS", "INCOMPATIBLE" or "" when not listed.
  std::string state;
  std::optional<std::string> version;  // the `version` string of index-N, when present
  std::optional<int64_t> index_version;
  int64_t start_time_millis = 0;
  /// index repository id -> metadata identifier (ES 7.9+).
  std::map<std::string, std::string> index_metadata_lookup;
};

/// One index as listed by the repository index.
struct IndexEntry {
  std::string name;
  std::string id;  // folder name under indices/ (the index name in ES 1.x/2.x)
  std::vector<std::string> snapshot_uuids;
  std::vector<std::optional<std::string>> shard_generations;
  int shard_path_type = 0;  // OpenSearch: 0 fixed, 1 hashed prefix, 2 hashed infix
};

struct ShardFailure {
  std::string index;
  int shard = -1;
  std::string reason;
  std::string status;
};

/// snap-<uuid>.dat (SnapshotInfo).
struct SnapshotInfo {
  std::string name;
  std::string uuid;
  int64_t version_id = 0;
  core::ClusterVersion source_version;
  std::vector<std::string> indices;
  std::vector<std::string> data_streams;
  std::string state;
  std::string reason;
  bool include_global_state = false;
  int64_t start_time = 0;
  int64_t end_time = 0;
  int total_shards = 0;
  int successful_shards = 0;
  std::vector<ShardFailure> failures;
};

/// A data stream (ES 7.9+, OpenSearch 1.0+): a name that accepts only appends (`create`), whose
/// documents live in hidden backing indices, `.ds-<name>-<generation>` (ES 7.11+ adds a date).
struct DataStream {
  std::string name;
  std::string timestamp_field = "@timestamp";
  std::vector<std::string> backing_indices;  // oldest first; the last one is the write index
  boost::json::object raw;  // as the snapshot holds it (ES adds _meta, hidden, ...)
};

/// meta-<uuid>.dat: the cluster-level metadata, of which rfs uses the templates and the data
/// streams. Elasticsearch writes it with the data streams even for a snapshot taken without
/// global state (then without templates).
struct GlobalMetadata {
  boost::json::object legacy_templates;     // name -> template (`templates`)
  boost::json::object component_templates;  // name -> {template, version, _meta}
  boost::json::object index_templates;      // name -> composable index template
  std::vector<DataStream> data_streams;     // sorted by name
  boost::json::object raw;                  // the whole "meta-data" object
};

/// The data stream `index` is a backing index of, or null.
const DataStream* DataStreamOf(const std::vector<DataStream>& streams, std::string_view index);

/// indices/<id>/meta-<blob>.dat (IndexMetadata).
struct IndexMetadata {
  std::string name;
  int number_of_shards = 0;
  int number_of_replicas = 0;
  std::string state;             // "open" / "close"
  boost::json::object settings;  // flat: "index.number_of_shards" -> "1"
  boost::json::object mappings;  // type name -> mapping (decompressed when stored compressed)
  boost::json::object aliases;   // alias name -> alias metadata
  int64_t version_created = 0;   // index.version.created
  boost::json::object raw;
};

/// One Lucene file of a shard snapshot (BlobStoreIndexShardSnapshot.FileInfo).
struct FileInfo {
  std::string name;           // blob name: `__<id>` or `v__<id>`
  std::string physical_name;  // Lucene file name
  uint64_t length = 0;
  std::string checksum;  // base36 of the footer CRC-32
  std::optional<uint64_t> part_size;
  std::string written_by;
  std::vector<uint8_t> meta_hash;  // for v__ files: the whole content

  bool is_virtual() const { return name.starts_with("v__"); }
  uint64_t number_of_parts() const;
  /// Blob name of part `i` (the name itself for a single part).
  std::string PartName(uint64_t i) const;
};

/// indices/<id>/<shard>/snap-<uuid>.dat.
struct ShardSnapshot {
  std::string snapshot_name;
  int64_t index_version = 0;  // Lucene commit generation (informational)
  /// When the shard's snapshot started (ms since the epoch; 0 when not recorded).
  int64_t start_time = 0;
  std::vector<FileInfo> files;
  uint64_t total_file_bytes() const;
};

}  // namespace rfs::snapshot
