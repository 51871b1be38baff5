#include "rfs/solr/backup.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include <boost/json.hpp>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/checked_path.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::solr {

using core::StrCat;

namespace {

// Metadata files are small; anything larger is not one Solr wrote.
constexpr uint64_t kMaxMetadataBytes = 64ull << 20;

constexpr std::string_view kFullProperties = "backup.properties";  // BackupManager
constexpr std::string_view kCorePrefix = "snapshot.";              // SnapShooter

bool IsSegmentsFile(std::string_view name) {
  return name.starts_with("segments_") && name.size() > 9;
}

// "backup_<N>.properties" -> N (BackupFilePaths.BACKUP_PROPS_ID_PTN).
std::optional<int> BackupIdOf(std::string_view blob) {
  constexpr std::string_view kPrefix = "backup_", kSuffix = ".properties";
  if (!blob.starts_with(kPrefix) || !blob.ends_with(kSuffix)) return std::nullopt;
  const std::string_view digits =
      blob.substr(kPrefix.size(), blob.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  int id = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return id;
}

std::vector<int> BackupIdsIn(const std::vector<std::string>& blobs) {
  std::vector<int> ids;
  for (const std::string& blob : blobs) {
    if (auto id = BackupIdOf(blob)) ids.push_back(*id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string JoinInts(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += StrCat(out.empty() ? "" : ", ", v);
  return out;
}

std::string Join(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += StrCat(out.empty() ? "" : ", ", v);
  return out;
}

bool Contains(const std::vector<std::string>& sorted, std::string_view name) {
  return std::binary_search(sorted.begin(), sorted.end(), name);
}

// Collection folders of an incremental backup name: dot-prefixed entries (.DS_Store) are not
// collections unless alone (BackupFilePaths.findCollectionDirs).
std::vector<std::string> CollectionFolders(std::vector<std::string> folders) {
  if (folders.size() <= 1) return folders;
  std::erase_if(folders, [](const std::string& f) { return f.starts_with("."); });
  return folders;
}

absl::StatusOr<boost::json::value> ParseJson(const std::vector<uint8_t>& bytes,
                                             std::string_view source) {
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(
      boost::json::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), ec);
  if (ec) return absl::DataLossError(StrCat(source, ": not valid JSON: ", ec.message()));
  return value;
}

// A JSON integer in [0, max], else nullopt.
std::optional<uint64_t> JsonUnsigned(const boost::json::value* v, uint64_t max) {
  if (v == nullptr) return std::nullopt;
  if (v->is_int64() && v->get_int64() >= 0 && static_cast<uint64_t>(v->get_int64()) <= max) {
    return static_cast<uint64_t>(v->get_int64());
  }
  if (v->is_uint64() && v->get_uint64() <= max) return v->get_uint64();
  return std::nullopt;
}

std::string PropertyOr(const std::map<std::string, std::string>& properties,
                       const std::string& key) {
  auto it = properties.find(key);
  return it == properties.end() ? "" : it->second;
}

// A backup's file opened in place, named as the Lucene file it holds and the blob it is in.
class BackupBlobFile final : public core::IRandomAccessFile {
 public:
  BackupBlobFile(std::string name, std::shared_ptr<const core::IRandomAccessFile> blob)
      : name_(std::move(name)), blob_(std::move(blob)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return blob_->size(); }
  absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    return core::WithContext(blob_->ReadAt(offset, out), name_);
  }
  std::optional<std::span<const uint8_t>> ContiguousView() const override {
    return blob_->ContiguousView();
  }
  absl::StatusOr<std::optional<HeldBytes>> ViewAt(uint64_t offset, uint64_t min_length,
                                                  uint64_t max_length) const override {
    auto held = blob_->ViewAt(offset, min_length, max_length);
    if (!held.ok()) return core::WithContext(held.status(), name_);
    return held;
  }
  void DropCachedPages(uint64_t offset, uint64_t length) const override {
    blob_->DropCachedPages(offset, length);
  }

 private:
  std::string name_;
  std::shared_ptr<const core::IRandomAccessFile> blob_;
};

class BackupShardDirectory final : public snapshot::ListedDirectory<BackupFile> {
 public:
  BackupShardDirectory(std::shared_ptr<const snapshot::ISourceRepo> repo, const BackupShard& shard,
                       std::string description, bool verify_checksums)
      : ListedDirectory(std::move(description)),
        repo_(std::move(repo)),
        verify_checksums_(verify_checksums) {
    for (const BackupFile& file : shard.files) Add(file.lucene_name, file);
  }

  void Prefetch(std::span<const std::string> names) const override {
    std::vector<snapshot::BlobExtent> blobs;
    for (const std::string& name : names) {
      if (const BackupFile* file = Find(name)) blobs.push_back({file->blob, file->size});
    }
    if (!blobs.empty()) repo_->Prefetch(blobs);
  }

 private:
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenListed(
      const BackupFile& info) const override {
    const std::string display = StrCat(info.lucene_name, " (", info.blob, ")");
    auto blob = repo_->OpenBlobOfSize(info.blob, info.size);
    if (!blob.ok()) {
      return core::WithContext(blob.status(), StrCat(display, " in ", description()));
    }
    if ((*blob)->size() != info.size) {
      return absl::DataLossError(StrCat(display, " in ", description(), " holds ", (*blob)->size(),
                                        " bytes but the backup lists ", info.size));
    }
    auto file = std::make_shared<BackupBlobFile>(display, *std::move(blob));
    if (verify_checksums_ && info.checksum) RFS_RETURN_IF_ERROR(Verify(*file, *info.checksum));
    return file;
  }

  static absl::Status Verify(const core::IRandomAccessFile& file, uint32_t expected) {
    RFS_ASSIGN_OR_RETURN(const uint32_t actual, codec::VerifyFileFooter(file));
    if (actual != expected) {
      return core::DataLossAt(
          file.name(), file.size() - 8,
          StrCat("footer checksum ", actual, " differs from the backup's checksum ", expected));
    }
    return absl::OkStatus();
  }

  std::shared_ptr<const snapshot::ISourceRepo> repo_;
  bool verify_checksums_;
};

}  // namespace

const char* BackupLayoutName(BackupLayout layout) {
  switch (layout) {
    case BackupLayout::kIncremental:
      return "incremental";
    case BackupLayout::kFull:
      return "full";
    case BackupLayout::kCore:
      return "core";
  }
  return "unknown";
}

uint64_t BackupShard::total_bytes() const {
  uint64_t total = 0;
  for (const BackupFile& file : files) total += file.size;
  return total;
}

absl::StatusOr<std::vector<BackupSummary>> SolrBackupLocation::ListBackups() const {
  RFS_ASSIGN_OR_RETURN(const std::vector<std::string> names, repo_->ListFolders(""));
  std::vector<BackupSummary> out;
  for (const std::string& name : names) {
    RFS_ASSIGN_OR_RETURN(const std::vector<std::string> blobs, repo_->ListBlobs(name));
    BackupSummary summary;
    summary.name = name;
    if (Contains(blobs, kFullProperties)) {
      summary.layout = BackupLayout::kFull;
      auto properties = ReadProperties(StrCat(name, "/", kFullProperties));
      if (!properties.ok()) return properties.status();
      std::string collection = PropertyOr(*properties, "collection");
      if (!collection.empty()) summary.collections.push_back(std::move(collection));
      out.push_back(std::move(summary));
      continue;
    }
    if (name.starts_with(kCorePrefix) &&
        std::any_of(blobs.begin(), blobs.end(),
                    [](const std::string& b) { return IsSegmentsFile(b); })) {
      summary.layout = BackupLayout::kCore;
      out.push_back(std::move(summary));
      continue;
    }
    RFS_ASSIGN_OR_RETURN(std::vector<std::string> folders, repo_->ListFolders(name));
    for (const std::string& collection : CollectionFolders(std::move(folders))) {
      RFS_ASSIGN_OR_RETURN(const std::vector<std::string> inner,
                           repo_->ListBlobs(StrCat(name, "/", collection)));
      std::vector<int> ids = BackupIdsIn(inner);
      if (ids.empty()) continue;
      if (summary.collections.empty()) summary.backup_ids = std::move(ids);
      summary.collections.push_back(collection);
    }
    if (!summary.collections.empty()) {
      summary.layout = BackupLayout::kIncremental;
      out.push_back(std::move(summary));
    }
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> SolrBackupLocation::ReadProperties(
    const std::string& path) const {
  auto bytes = repo_->ReadBlob(path, kMaxMetadataBytes);
  if (!bytes.ok()) {
    return core::WithContext(bytes.status(), StrCat("Solr backup properties ", path));
  }
  return ParseJavaProperties(
      std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), path);
}

absl::StatusOr<SolrBackup> SolrBackupLocation::ReadBackup(std::string_view name,
                                                          const ReadBackupOptions& options) const {
  if (auto problem = core::PathSegmentProblem(name)) {
    return absl::InvalidArgumentError(StrCat("Solr backup name '", name, "': ", *problem));
  }
  RFS_ASSIGN_OR_RETURN(const std::vector<std::string> folders, repo_->ListFolders(""));
  std::string folder(name);
  if (!Contains(folders, folder) && Contains(folders, StrCat(kCorePrefix, name))) {
    folder = StrCat(kCorePrefix, name);
  }
  if (!Contains(folders, folder)) {
    auto present = ListBackups();
    std::vector<std::string> names;
    if (present.ok()) {
      for (const BackupSummary& b : *present) names.push_back(b.name);
    }
    return absl::NotFoundError(StrCat("no Solr backup named '", name, "' in ", repo_->description(),
                                      names.empty() ? std::string(" (it holds none)")
                                                    : StrCat(" (it holds: ", Join(names), ")")));
  }
  RFS_ASSIGN_OR_RETURN(const std::vector<std::string> blobs, repo_->ListBlobs(folder));
  if (Contains(blobs, kFullProperties)) return ReadFull(std::move(folder));
  if (std::any_of(blobs.begin(), blobs.end(),
                  [](const std::string& b) { return IsSegmentsFile(b); })) {
    return ReadCore(std::move(folder));
  }
  RFS_ASSIGN_OR_RETURN(std::vector<std::string> inner, repo_->ListFolders(folder));
  std::vector<std::string> collections = CollectionFolders(std::move(inner));
  if (options.collection) {
    if (!Contains(collections, *options.collection)) {
      return absl::InvalidArgumentError(StrCat("Solr backup '", folder, "' holds no collection '",
                                               *options.collection,
                                               "' (it holds: ", Join(collections), ")"));
    }
    return ReadIncremental(std::move(folder), *options.collection, options);
  }
  if (collections.size() != 1) {
    if (collections.empty()) {
      return absl::DataLossError(StrCat(repo_->description(), "/", folder,
                                        ": neither backup.properties, a Lucene commit nor a "
                                        "collection folder: not a Solr backup"));
    }
    return absl::InvalidArgumentError(StrCat("Solr backup '", folder,
                                             "' holds several collections (", Join(collections),
                                             "): name one with --solr-collection"));
  }
  return ReadIncremental(std::move(folder), collections[0], options);
}

namespace {

// The files a shard's metadata file (`md`, read from `md_path`) lists: each unique blob under
// <folder>/index with the Lucene name, size and CRC-32 it stands for.
absl::StatusOr<std::vector<BackupFile>> ShardFiles(const boost::json::object& md,
                                                   const std::string& md_path,
                                                   const std::string& folder) {
  std::vector<BackupFile> files;
  std::set<std::string> seen;
  for (const auto& [unique, entry] : md) {
    const std::string unique_name(unique.data(), unique.size());
    const auto field_error = [&](std::string_view what) {
      return absl::DataLossError(StrCat(md_path, ": file '", unique_name, "': ", what));
    };
    if (!entry.is_object()) return field_error("not an object");
    const auto& o = entry.get_object();
    const auto* file_name = o.if_contains("fileName");
    if (file_name == nullptr || !file_name->is_string()) {
      return field_error("'fileName' is missing or not a string");
    }
    const std::string lucene_name(file_name->get_string().data(), file_name->get_string().size());
    if (auto problem = core::PathSegmentProblem(lucene_name)) {
      return field_error(StrCat("fileName '", lucene_name, "': ", *problem));
    }
    const auto size = JsonUnsigned(o.if_contains("size"), INT64_MAX);
    if (!size) return field_error("'size' is missing or not a non-negative integer");
    // Checksum.checksum is CodecUtil.retrieveChecksum's CRC-32, a long in [0, 2^32).
    const auto checksum = JsonUnsigned(o.if_contains("checksum"), UINT32_MAX);
    if (!checksum) return field_error("'checksum' is missing or not a CRC-32");
    if (!seen.insert(lucene_name).second) {
      return field_error(StrCat("a second entry for Lucene file ", lucene_name));
    }
    BackupFile file;
    file.lucene_name = lucene_name;
    RFS_ASSIGN_OR_RETURN(file.blob, core::CheckedPath({folder, "index", unique_name}, md_path));
    file.size = *size;
    file.checksum = static_cast<uint32_t>(*checksum);
    files.push_back(std::move(file));
  }
  return files;
}

// Each shard backed up must be a shard of the collection's recorded state; each takes its hash
// range from there.
absl::Status MatchRecordedShards(SolrBackup& backup, const std::string& properties_path) {
  if (const auto* shards = backup.collection_state.if_contains("shards");
      shards != nullptr && shards->is_object()) {
    for (BackupShard& shard : backup.shards) {
      const auto* state = shards->get_object().if_contains(shard.name);
      if (state == nullptr) {
        return absl::DataLossError(StrCat(properties_path, " names shard ", shard.name, ", which ",
                                          backup.zk_folder,
                                          "/collection_state.json does not list"));
      }
      if (state->is_object()) {
        if (const auto* range = state->get_object().if_contains("range");
            range != nullptr && range->is_string()) {
          shard.range = std::string(range->get_string());
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SolrBackup> SolrBackupLocation::ReadIncremental(
    std::string name, std::string collection, const ReadBackupOptions& options) const {
  SolrBackup backup;
  backup.name = std::move(name);
  backup.layout = BackupLayout::kIncremental;
  RFS_ASSIGN_OR_RETURN(backup.folder,
                       core::CheckedPath({backup.name, collection}, repo_->description()));
  backup.collection = std::move(collection);
  RFS_ASSIGN_OR_RETURN(const std::vector<std::string> blobs, repo_->ListBlobs(backup.folder));
  const std::vector<int> ids = BackupIdsIn(blobs);
  if (ids.empty()) {
    return absl::DataLossError(StrCat(repo_->description(), "/", backup.folder,
                                      ": no backup_N.properties: not an incremental Solr backup"));
  }
  if (options.backup_id) {
    if (!std::binary_search(ids.begin(), ids.end(), *options.backup_id)) {
      return absl::InvalidArgumentError(
          StrCat("Solr backup '", backup.name, "' of collection ", backup.collection,
                 " has no backup id ", *options.backup_id, " (it has ", JoinInts(ids), ")"));
    }
    backup.backup_id = *options.backup_id;
  } else {
    // The newest point, as Solr's restore takes it (BackupFilePaths.findMostRecentBackupId...).
    backup.backup_id = ids.back();
  }
  const std::string properties_path =
      StrCat(backup.folder, "/backup_", backup.backup_id, ".properties");
  RFS_ASSIGN_OR_RETURN(backup.properties, ReadProperties(properties_path));
  backup.config_name = PropertyOr(backup.properties, "collection.configName");
  backup.lucene_version = PropertyOr(backup.properties, "indexVersion");
  backup.start_time = PropertyOr(backup.properties, "startTime");
  if (const std::string recorded = PropertyOr(backup.properties, "collection");
      !recorded.empty() && recorded != backup.collection) {
    return absl::DataLossError(StrCat(properties_path, ": collection '", recorded,
                                      "' differs from its folder '", backup.collection, "'"));
  }
  backup.zk_folder = StrCat(backup.folder, "/zk_backup_", backup.backup_id);
  RFS_RETURN_IF_ERROR(ReadCollectionState(backup));

  // Each "<shard>.md" names the shard's metadata file (BackupProperties.getShardBackupIdFor).
  for (const auto& [key, value] : backup.properties) {
    if (!key.ends_with(".md") || key.size() == 3) continue;
    BackupShard shard;
    shard.name = key.substr(0, key.size() - 3);
    RFS_ASSIGN_OR_RETURN(
        const std::string md_path,
        core::CheckedPath({backup.folder, "shard_backup_metadata", value}, properties_path));
    auto bytes = repo_->ReadBlob(md_path, kMaxMetadataBytes);
    if (!bytes.ok()) {
      if (absl::IsNotFound(bytes.status())) {
        return absl::DataLossError(StrCat(properties_path, " names ", md_path, " for shard ",
                                          shard.name, ", which is missing"));
      }
      return core::WithContext(bytes.status(), md_path);
    }
    RFS_ASSIGN_OR_RETURN(const boost::json::value md, ParseJson(*bytes, md_path));
    if (!md.is_object()) return absl::DataLossError(StrCat(md_path, ": not a JSON object"));
    RFS_ASSIGN_OR_RETURN(shard.files, ShardFiles(md.get_object(), md_path, backup.folder));
    if (std::none_of(shard.files.begin(), shard.files.end(),
                     [](const BackupFile& f) { return IsSegmentsFile(f.lucene_name); })) {
      return absl::DataLossError(StrCat(md_path, ": lists no segments_N file (no Lucene commit)"));
    }
    std::sort(shard.files.begin(), shard.files.end(), [](const BackupFile& a, const BackupFile& b) {
      return a.lucene_name < b.lucene_name;
    });
    backup.shards.push_back(std::move(shard));
  }
  if (backup.shards.empty()) {
    return absl::DataLossError(StrCat(properties_path, ": names no shard (no <shard>.md entry)"));
  }
  std::sort(backup.shards.begin(), backup.shards.end(),
            [](const BackupShard& a, const BackupShard& b) { return a.name < b.name; });
  RFS_RETURN_IF_ERROR(MatchRecordedShards(backup, properties_path));
  return backup;
}

absl::Status SolrBackupLocation::ReadCollectionState(SolrBackup& backup) const {
  const std::string path = StrCat(backup.zk_folder, "/collection_state.json");
  auto bytes = repo_->ReadBlob(path, kMaxMetadataBytes);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) {
      return absl::DataLossError(StrCat(repo_->description(), "/", path,
                                        " is missing (Solr writes it with every collection "
                                        "backup)"));
    }
    return core::WithContext(bytes.status(), path);
  }
  RFS_ASSIGN_OR_RETURN(const boost::json::value state, ParseJson(*bytes, path));
  if (!state.is_object()) return absl::DataLossError(StrCat(path, ": not a JSON object"));
  // {"<collection>": {"shards": {...}, "router": ..., ...}} (BackupManager.writeCollectionState).
  const auto& top = state.get_object();
  const boost::json::value* collection = top.if_contains(backup.collection);
  if (collection == nullptr && top.size() == 1) collection = &top.begin()->value();
  if (collection == nullptr || !collection->is_object()) {
    return absl::DataLossError(
        StrCat(path, ": holds no state object for collection '", backup.collection, "'"));
  }
  backup.collection_state = collection->get_object();
  const auto* shards = backup.collection_state.if_contains("shards");
  if (shards == nullptr || !shards->is_object()) {
    return absl::DataLossError(
        StrCat(path, ": collection '", backup.collection, "' has no 'shards' object"));
  }
  if (backup.config_name.empty()) {
    if (const auto* config = backup.collection_state.if_contains("configName");
        config != nullptr && config->is_string()) {
      backup.config_name = std::string(config->get_string());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BackupFile>> SolrBackupLocation::ListLuceneFolder(
    const std::string& folder) const {
  RFS_ASSIGN_OR_RETURN(const std::vector<std::string> blobs, repo_->ListBlobs(folder));
  std::vector<BackupFile> files;
  files.reserve(blobs.size());
  for (const std::string& blob : blobs) {
    BackupFile file;
    file.lucene_name = blob;
    file.blob = StrCat(folder, "/", blob);
    RFS_ASSIGN_OR_RETURN(file.size, repo_->BlobSize(file.blob));
    files.push_back(std::move(file));
  }
  if (std::none_of(files.begin(), files.end(),
                   [](const BackupFile& f) { return IsSegmentsFile(f.lucene_name); })) {
    return absl::DataLossError(
        StrCat(repo_->description(), "/", folder, ": holds no segments_N file (no Lucene commit)"));
  }
  return files;
}

absl::StatusOr<SolrBackup> SolrBackupLocation::ReadFull(std::string name) const {
  SolrBackup backup;
  backup.layout = BackupLayout::kFull;
  backup.folder = name;
  backup.name = std::move(name);
  const std::string properties_path = StrCat(backup.folder, "/", kFullProperties);
  RFS_ASSIGN_OR_RETURN(backup.properties, ReadProperties(properties_path));
  backup.collection = PropertyOr(backup.properties, "collection");
  if (backup.collection.empty()) {
    return absl::DataLossError(StrCat(properties_path, ": no 'collection'"));
  }
  backup.config_name = PropertyOr(backup.properties, "collection.configName");
  backup.lucene_version = PropertyOr(backup.properties, "indexVersion");
  backup.start_time = PropertyOr(backup.properties, "startTime");
  backup.zk_folder = StrCat(backup.folder, "/zk_backup");
  RFS_RETURN_IF_ERROR(ReadCollectionState(backup));
  // A full backup copies each active shard's leader into snapshot.<shard>
  // (BackupCmd.copyIndexFiles, SnapShooter).
  RFS_ASSIGN_OR_RETURN(const std::vector<std::string> folders, repo_->ListFolders(backup.folder));
  for (const auto& [shard_name, state] : backup.collection_state.at("shards").get_object()) {
    BackupShard shard;
    shard.name = std::string(shard_name);
    std::string shard_state;
    if (state.is_object()) {
      if (const auto* range = state.get_object().if_contains("range");
          range != nullptr && range->is_string()) {
        shard.range = std::string(range->get_string());
      }
      if (const auto* s = state.get_object().if_contains("state"); s != nullptr && s->is_string()) {
        shard_state = std::string(s->get_string());
      }
    }
    const std::string shard_folder = StrCat(kCorePrefix, shard.name);
    if (!Contains(folders, shard_folder)) {
      // Only active shards are backed up; a missing active one is a damaged backup.
      if (!shard_state.empty() && shard_state != "active") continue;
      return absl::DataLossError(StrCat(repo_->description(), "/", backup.folder, ": shard ",
                                        shard.name, " has no ", shard_folder, " folder"));
    }
    RFS_ASSIGN_OR_RETURN(const std::string path,
                         core::CheckedPath({backup.folder, shard_folder}, properties_path));
    RFS_ASSIGN_OR_RETURN(shard.files, ListLuceneFolder(path));
    backup.shards.push_back(std::move(shard));
  }
  if (backup.shards.empty()) {
    return absl::DataLossError(
        StrCat(repo_->description(), "/", backup.folder, ": holds no snapshot.<shard> folder"));
  }
  std::sort(backup.shards.begin(), backup.shards.end(),
            [](const BackupShard& a, const BackupShard& b) { return a.name < b.name; });
  return backup;
}

absl::StatusOr<SolrBackup> SolrBackupLocation::ReadCore(std::string name) const {
  SolrBackup backup;
  backup.layout = BackupLayout::kCore;
  backup.folder = name;
  backup.collection = name.starts_with(kCorePrefix) ? name.substr(kCorePrefix.size()) : name;
  backup.name = std::move(name);
  BackupShard shard;
  shard.name = backup.collection;
  RFS_ASSIGN_OR_RETURN(shard.files, ListLuceneFolder(backup.folder));
  backup.shards.push_back(std::move(shard));
  return backup;
}

absl::StatusOr<std::vector<std::string>> SolrBackupLocation::ListConfigFiles(
    const SolrBackup& backup) const {
  if (backup.zk_folder.empty() || backup.config_name.empty()) return std::vector<std::string>{};
  RFS_ASSIGN_OR_RETURN(
      const std::string dir,
      core::CheckedPath({backup.zk_folder, "configs", backup.config_name}, backup.folder));
  return repo_->ListBlobsBelow(dir);
}

absl::StatusOr<std::string> SolrBackupLocation::ReadConfigFile(const SolrBackup& backup,
                                                               std::string_view file) const {
  if (backup.zk_folder.empty() || backup.config_name.empty()) {
    return absl::NotFoundError(StrCat("Solr backup '", backup.name, "' holds no configset (a ",
                                      BackupLayoutName(backup.layout), " backup)"));
  }
  RFS_ASSIGN_OR_RETURN(
      const std::string path,
      core::CheckedPath({backup.zk_folder, "configs", backup.config_name, file}, backup.folder));
  auto bytes = repo_->ReadBlob(path, kMaxMetadataBytes);
  if (!bytes.ok()) return core::WithContext(bytes.status(), path);
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

absl::StatusOr<SolrBackupLocation::Schema> SolrBackupLocation::ReadSchema(
    const SolrBackup& backup) const {
  // ManagedIndexSchemaFactory's resource (managed-schema.xml from Solr 9, managed-schema
  // before), then ClassicIndexSchemaFactory's schema.xml.
  for (std::string_view file : {"managed-schema.xml", "managed-schema", "schema.xml"}) {
    auto text = ReadConfigFile(backup, file);
    if (text.ok()) return Schema{std::string(file), *std::move(text)};
    if (!absl::IsNotFound(text.status())) return text.status();
  }
  return absl::NotFoundError(
      StrCat("Solr backup '", backup.name, "' holds no schema (",
             backup.zk_folder.empty() ? std::string("no configset")
                                      : StrCat(backup.zk_folder, "/configs/", backup.config_name),
             " has none of managed-schema.xml, managed-schema, schema.xml)"));
}

absl::StatusOr<std::shared_ptr<const core::IDirectory>> SolrBackupLocation::OpenShardFiles(
    const SolrBackup& backup, std::string_view shard, bool verify_checksums) const {
  for (const BackupShard& s : backup.shards) {
    if (s.name != shard) continue;
    std::string description =
        backup.layout == BackupLayout::kCore
            ? StrCat("core backup ", backup.name)
            : StrCat("shard ", s.name, " of collection ", backup.collection, " in Solr backup ",
                     backup.name,
                     backup.backup_id >= 0 ? StrCat(" (backup id ", backup.backup_id, ")") : "");
    return std::shared_ptr<const core::IDirectory>(
        std::make_shared<BackupShardDirectory>(repo_, s, std::move(description), verify_checksums));
  }
  std::vector<std::string> names;
  for (const BackupShard& s : backup.shards) names.push_back(s.name);
  return absl::NotFoundError(StrCat("Solr backup '", backup.name, "' has no shard '", shard,
                                    "' (it has: ", Join(names), ")"));
}

}  // namespace rfs::solr
