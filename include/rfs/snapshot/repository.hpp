// SnapshotRepository: reads a snapshot repository's metadata, from the repository index down to
// each shard's file list, for every layout Elasticsearch 1.x-9.x and OpenSearch 1.x-3.x write.
//
// Only what the repository index references counts: blobs left over from deleted or failed
// snapshots are never read. The layout is detected once at Open() (docs/formats.md A.1, A.8, A.9):
//   ES 1.x   root `index` JSON; `snapshot-<name>`, `metadata-<name>`, folders named by index
//   ES 2.x   root `index` JSON; `snap-<name>.dat`, `meta-<name>.dat`, folders named by index
//   ES 5.x+  `index-N` (+ `index.latest`), UUID names, `index_metadata_lookup` (7.9+),
//            OpenSearch `shard_path_type` with shard folders listed in `snapshot_shard_paths/`.
//
// Thread safety: after Open(), all methods are const and may be called concurrently.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/random_access.hpp"
#include "rfs/snapshot/models.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "absl/status/statusor.h"

namespace rfs::snapshot {

struct ShardFilesOptions {
  /// Verify each Lucene file's footer CRC-32 against the snapshot's checksum when it is opened
  /// (reads the whole file once). Off by default: the Lucene reader checks what it reads.
  bool verify_checksums = false;
};

/// A source of another kind (a Solr backup: rfs/solr/documents.hpp) presented as a repository
/// that holds one snapshot, so that everything reading snapshots reads it unchanged: what the
/// repository index and metadata blobs would say is given rather than read.
struct SnapshotCatalog {
  /// The one snapshot: its name, uuid, indices, state, start time and source version.
  SnapshotInfo info;
  std::vector<IndexMetadata> indices;
  /// The file lists of each index's shards, by index name, then by shard number.
  std::map<std::string, std::vector<ShardSnapshot>> shards;
  /// Opens shard `shard` of `index`: its Lucene files in place. Empty for a source that
  /// describes its indices but holds no files (a live cluster read for its metadata).
  std::function<absl::StatusOr<std::shared_ptr<const core::IDirectory>>(
      std::string_view index, int shard, const ShardFilesOptions& options)>
      open_shard;
  /// Templates and data streams; none when absent.
  std::optional<GlobalMetadata> global;
};

class SnapshotRepository {
 public:
  /// Reads the repository index. NotFound when `repo` holds no repository index; DataLoss when
  /// it is corrupt; Unimplemented for a layout rfs does not read.
  static absl::StatusOr<std::unique_ptr<SnapshotRepository>> Open(
      std::shared_ptr<const ISourceRepo> repo);

  /// A repository over `catalog` (see SnapshotCatalog); `repo` is where its files are.
  /// InvalidArgument when the catalog names an index it does not describe.
  static absl::StatusOr<std::unique_ptr<SnapshotRepository>> FromCatalog(
      std::shared_ptr<const ISourceRepo> repo, SnapshotCatalog catalog);

  RepositoryLayout layout() const { return layout_; }
  /// False for a catalog without shard files (SnapshotCatalog::open_shard): its indices are
  /// described, their documents cannot be read.
  bool holds_shard_files() const { return !catalog_ || catalog_->open_shard != nullptr; }
  /// The generation N of the `index-N` read (-1 for ES 1.x/2.x layouts).
  int64_t generation() const { return generation_; }
  const ISourceRepo& repo() const { return *repo_; }
  const std::vector<SnapshotEntry>& snapshots() const { return snapshots_; }
  const std::vector<IndexEntry>& indices() const { return indices_; }
  /// What Open() noticed and worked around (e.g. an index.latest older than the listing).
  const std::vector<std::string>& warnings() const { return warnings_; }

  /// The snapshot with this name; NotFound listing the names present otherwise. The snapshot
  /// returned by this and LatestSnapshot() has been cross-checked with its checksummed
  /// SnapshotInfo blob (DataLoss naming the blob and the field when they disagree).
  absl::StatusOr<const SnapshotEntry*> FindSnapshot(std::string_view name) const;
  /// The newest snapshot by its start time (from the repository index, else from its
  /// SnapshotInfo blob). FailedPrecondition, asking for a snapshot name, when two snapshots
  /// started at the same millisecond or one records no start time; never a guess by order.
  absl::StatusOr<const SnapshotEntry*> LatestSnapshot() const;
  /// Names of the indices in `snapshot`, sorted.
  std::vector<std::string> IndicesIn(const SnapshotEntry& snapshot) const;
  absl::StatusOr<const IndexEntry*> FindIndex(std::string_view name) const;

  absl::StatusOr<SnapshotInfo> ReadSnapshotInfo(const SnapshotEntry& snapshot) const;
  absl::StatusOr<GlobalMetadata> ReadGlobalMetadata(const SnapshotEntry& snapshot) const;
  /// The snapshot's data streams (GlobalMetadata::data_streams); none when it holds no global
  /// metadata blob at all (snapshots before ES 7.9 hold no data streams).
  absl::StatusOr<std::vector<DataStream>> ReadDataStreams(const SnapshotEntry& snapshot) const;
  absl::StatusOr<IndexMetadata> ReadIndexMetadata(const SnapshotEntry& snapshot,
                                                  std::string_view index) const;
  /// The shard's file list. NotFound when the snapshot holds no data for that shard (e.g. a
  /// failed shard of a PARTIAL snapshot); Unimplemented for OpenSearch shallow (remote-store)
  /// snapshots, which hold no Lucene files.
  absl::StatusOr<ShardSnapshot> ReadShardSnapshot(const SnapshotEntry& snapshot,
                                                  std::string_view index, int shard) const;
  /// The folder holding the shard's blobs ("indices/<id>/<shard>" or an OpenSearch hashed path).
  absl::StatusOr<std::string> ShardFolder(const IndexEntry& index, int shard) const;

  /// The shard's Lucene files, each readable in place whether stored in one blob, split into
  /// `.partN` blobs, or inline (`v__`). The directory keeps the repository alive.
  absl::StatusOr<std::shared_ptr<const core::IDirectory>> OpenShardFiles(
      const SnapshotEntry& snapshot, std::string_view index, int shard,
      ShardFilesOptions options = {}) const;

  /// The product and version that wrote `snapshot`, from the repository index and SnapshotInfo.
  absl::StatusOr<core::ClusterVersion> DetectSourceVersion(const SnapshotEntry& snapshot) const;

 private:
  SnapshotRepository() = default;
  // `root_blobs`: the root's listing, which Open has made already.
  // `latest_bytes`: index.latest, read (or not found) while the root was listed.
  absl::Status LoadModern(const std::vector<std::string>& root_blobs,
                          absl::StatusOr<std::vector<uint8_t>> latest_bytes);
  absl::Status LoadLegacy();
  std::string SnapshotBlobName(const SnapshotEntry& snapshot) const;
  std::string SnapshotNames() const;
  /// DataLoss unless every fact of index-N that decides what `snapshot` reads (its name, uuid,
  /// state, version and the indices listed in it) agrees with the checksummed snap-<uuid>.dat.
  absl::Status VerifyRepositoryIndex(const SnapshotEntry& snapshot) const;
  /// The same for ES 1.x/2.x layouts, whose SnapshotInfo is the only index: its name, its
  /// indices against the index metadata present, its start time against its shards'.
  absl::Status VerifyLegacySnapshot(const SnapshotEntry& snapshot) const;
  /// DataLoss when a legacy snapshot's start time disagrees with its first shard's; else that
  /// shard's start time (0 when unknown).
  absl::StatusOr<int64_t> VerifyLegacyStartTime(const SnapshotEntry& snapshot) const;
  // The start time that chooses the newest snapshot, checked against the snapshot's own record
  // (modern layouts), or as read at Open() (ES 1.x/2.x).
  absl::StatusOr<int64_t> CheckedStartTime(const SnapshotEntry& snapshot) const;
  // ES 1.x/2.x: the newest by the snapshots' records must be the newest by their shards' too.
  absl::Status VerifyLegacyNewest(const SnapshotEntry& best) const;
  std::string GlobalMetadataBlobName(const SnapshotEntry& snapshot) const;
  absl::StatusOr<std::string> IndexMetadataBlobName(const SnapshotEntry& snapshot,
                                                    const IndexEntry& index) const;

  std::shared_ptr<const ISourceRepo> repo_;
  RepositoryLayout layout_ = RepositoryLayout::kModern;
  int64_t generation_ = -1;
  std::vector<SnapshotEntry> snapshots_;
  std::vector<IndexEntry> indices_;
  std::vector<std::string> warnings_;
  // Snapshots (by uuid) VerifyRepositoryIndex found consistent: checked once per run.
  mutable std::mutex verified_mu_;
  mutable std::set<std::string> verified_;
  boost::json::object index_metadata_identifiers_;
  std::optional<SnapshotCatalog> catalog_;
};

}  // namespace rfs::snapshot
