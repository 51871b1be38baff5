#include "rfs/snapshot/repository.hpp"

#include <algorithm>
#include <charconv>
#include <future>

#include "rfs/core/base64.hpp"
#include "rfs/core/byte_reader.hpp"
#include "rfs/core/checked_path.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/index_settings.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/snapshot/blob_envelope.hpp"

#include "absl/strings/str_join.h"
#include "snapshot/json_access_internal.hpp"
#include "snapshot/shard_directory_internal.hpp"

namespace rfs::snapshot {

using core::StrCat;
namespace json = boost::json;
using internal::Find;
using internal::OptInt;
using internal::OptString;

namespace {

// Codec names of ChecksumBlobStoreFormat envelopes (ES BlobStoreRepository).
constexpr std::string_view kSnapshotCodec = "snapshot";
constexpr std::string_view kGlobalMetadataCodec = "metadata";
constexpr std::string_view kIndexMetadataCodec = "index-metadata";

// SnapshotState byte values in index-N (ES snapshots/SnapshotState.java).
std::string StateName(int64_t state) {
  switch (state) {
    case 0:
      return "IN_PROGRESS";
    case 1:
      return "SUCCESS";
    case 2:
      return "FAILED";
    case 3:
      return "PARTIAL";
    case 4:
      return "INCOMPATIBLE";
  }
  return StrCat("UNKNOWN(", state, ")");
}

std::optional<int64_t> ParseDecimal(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

absl::StatusOr<json::value> ReadJsonBlob(const ISourceRepo& repo, std::string_view path,
                                         std::string_view codec) {
  RFS_ASSIGN_OR_RETURN(auto bytes, repo.ReadBlob(path));
  return DecodeMetadataBlob(bytes, path, codec);
}

// An index's settings under their dotted names, kept as the snapshot holds them: strings and lists
// as they are, other leaves as text.
json::object FlatSettings(const json::object& settings) {
  json::object out;
  for (const auto& [name, value] : core::FlattenSettings(settings)) {
    out[name] =
        value->is_string() || value->is_array() ? *value : json::value(json::serialize(*value));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SnapshotRepository>> SnapshotRepository::Open(
    std::shared_ptr<const ISourceRepo> repo) {
  std::unique_ptr<SnapshotRepository> out(new SnapshotRepository());
  out->repo_ = std::move(repo);
  // index.latest is read while the root is listed: in an object store the two are otherwise two
  // round trips one after the other before index-N can be asked for. (Not used, and NotFound,
  // in a repository of the legacy layouts.)
  auto latest = std::async(std::launch::async,
                           [repo = out->repo_] { return repo->ReadBlob("index.latest", 64); });
  RFS_ASSIGN_OR_RETURN(auto root_blobs, out->repo_->ListBlobs(""));
  const bool has_generations = std::any_of(root_blobs.begin(), root_blobs.end(), [](auto& b) {
    return b == "index.latest" || (b.starts_with("index-") && ParseDecimal(b.substr(6)));
  });
  const bool has_legacy_index =
      std::find(root_blobs.begin(), root_blobs.end(), "index") != root_blobs.end();
  if (has_generations) {
    out->layout_ = RepositoryLayout::kModern;
    RFS_RETURN_IF_ERROR(out->LoadModern(root_blobs, latest.get()));
  } else if (has_legacy_index) {
    const bool es2 = std::any_of(root_blobs.begin(), root_blobs.end(), [](auto& b) {
      return b.starts_with("snap-") && b.ends_with(".dat");
    });
    out->layout_ = es2 ? RepositoryLayout::kEs2 : RepositoryLayout::kEs1;
    RFS_RETURN_IF_ERROR(out->LoadLegacy());
  } else {
    return absl::NotFoundError(StrCat("no snapshot repository index (index-N, index.latest or ",
                                      "index) in ", out->repo_->description()));
  }
  return out;
}

namespace {

// One entry of the repository index's "snapshots" array.
absl::StatusOr<SnapshotEntry> ParseSnapshotEntry(const json::value& item,
                                                 const std::string& index_blob) {
  if (!item.is_object()) return internal::FieldError(index_blob, "snapshots[]", "an object");
  const auto& s = item.get_object();
  SnapshotEntry entry;
  RFS_ASSIGN_OR_RETURN(entry.name, internal::RequireString(s, "name", index_blob));
  // Repositories from before ES 5 have no UUIDs: uuid == name (A.8).
  entry.uuid = OptString(s, "uuid").value_or(entry.name);
  if (auto state = OptInt(s, "state")) entry.state = StateName(*state);
  entry.version = OptString(s, "version");
  entry.index_version = OptInt(s, "index_version");
  entry.start_time_millis = OptInt(s, "start_time_millis").value_or(0);
  if (const auto* lookup = Find(s, "index_metadata_lookup"); lookup && lookup->is_object()) {
    for (const auto& [id, ident] : lookup->get_object()) {
      if (ident.is_string()) {
        entry.index_metadata_lookup[std::string(id)] = internal::ToStdString(ident.get_string());
      }
    }
  }
  return entry;
}

// One entry of the repository index's "indices" object: the index `name`'s id, snapshots and
// shard generations.
absl::StatusOr<IndexEntry> ParseIndexEntry(std::string_view name, const json::value& value,
                                           const std::string& index_blob) {
  if (!value.is_object()) return internal::FieldError(index_blob, name, "an object");
  const auto& i = value.get_object();
  IndexEntry entry;
  entry.name = std::string(name);
  RFS_ASSIGN_OR_RETURN(entry.id, internal::RequireString(i, "id", index_blob));
  if (const auto* snaps = Find(i, "snapshots"); snaps && snaps->is_array()) {
    for (const auto& s : snaps->get_array()) {
      // Before ES 5.4.1 entries were {"name", "uuid"} objects (A.2).
      if (s.is_string()) {
        entry.snapshot_uuids.push_back(internal::ToStdString(s.get_string()));
      } else if (s.is_object()) {
        auto uuid = OptString(s.get_object(), "uuid");
        if (!uuid) uuid = OptString(s.get_object(), "name");
        if (uuid) entry.snapshot_uuids.push_back(*uuid);
      }
    }
  }
  if (const auto* gens = Find(i, "shard_generations"); gens && gens->is_array()) {
    for (const auto& g : gens->get_array()) {
      if (g.is_string()) {
        entry.shard_generations.push_back(internal::ToStdString(g.get_string()));
      } else {
        entry.shard_generations.push_back(std::nullopt);
      }
    }
  }
  entry.shard_path_type = static_cast<int>(OptInt(i, "shard_path_type").value_or(0));
  return entry;
}

}  // namespace

absl::Status SnapshotRepository::LoadModern(const std::vector<std::string>& root_blobs,
                                            absl::StatusOr<std::vector<uint8_t>> latest_bytes) {
  // The newest generation: the largest index-N listed, cross-checked with index.latest.
  int64_t listed = -1;
  for (const auto& blob : root_blobs) {
    if (!blob.starts_with("index-")) continue;
    if (auto n = ParseDecimal(std::string_view(blob).substr(6))) listed = std::max(listed, *n);
  }
  int64_t latest = -1;
  if (auto& bytes = latest_bytes; bytes.ok()) {
    core::ByteReader in(*bytes, "index.latest");
    if (bytes->size() != 8) return in.ErrorAt(0, "index.latest must hold 8 bytes");
    latest = static_cast<int64_t>(in.ReadBeU64().value());
  } else if (!absl::IsNotFound(bytes.status())) {
    return core::WithContext(bytes.status(), "reading index.latest");
  }
  // ES prefers the listing; index.latest serves stores that cannot list (A.1). index.latest
  // naming a generation newer than every listed index-N means that index-N is missing: reading
  // the older one would silently give an older list of snapshots. One naming an older
  // generation is legitimate (ES may stop updating it, e.g. without support_url_repo): the
  // listing is used, and the disagreement reported.
  if (listed >= 0 && latest > listed) {
    return absl::DataLossError(
        StrCat("index.latest of ", repo_->description(), " names generation ", latest,
               " but the newest repository index listed is index-", listed, " (index-", latest,
               " is missing): the repository is damaged or was copied while a snapshot was being "
               "written"));
  }
  if (listed >= 0 && latest >= 0 && latest < listed) {
    warnings_.push_back(StrCat("index.latest names generation ", latest, " but index-", listed,
                               " is listed; reading index-", listed));
  }
  generation_ = listed >= 0 ? listed : latest;
  if (generation_ < 0) {
    return absl::NotFoundError(StrCat("no index-N blob in ", repo_->description()));
  }
  const std::string index_blob = StrCat("index-", generation_);
  auto bytes_or = repo_->ReadBlob(index_blob);
  if (absl::IsNotFound(bytes_or.status())) {
    // index.latest names a generation whose blob is gone.
    return absl::DataLossError(StrCat(index_blob, " of ", repo_->description(),
                                      " is named by index.latest but cannot be found"));
  }
  RFS_ASSIGN_OR_RETURN(auto bytes, std::move(bytes_or));
  RFS_ASSIGN_OR_RETURN(auto root_value, DecodeXContent(bytes, index_blob));
  RFS_ASSIGN_OR_RETURN(auto* root, internal::RequireObject(root_value, index_blob, "(root)"));

  if (const auto* snapshots = Find(*root, "snapshots"); snapshots && snapshots->is_array()) {
    for (const auto& item : snapshots->get_array()) {
      RFS_ASSIGN_OR_RETURN(SnapshotEntry entry, ParseSnapshotEntry(item, index_blob));
      snapshots_.push_back(std::move(entry));
    }
  }
  if (const auto* indices = Find(*root, "indices"); indices && indices->is_object()) {
    for (const auto& [name, value] : indices->get_object()) {
      RFS_ASSIGN_OR_RETURN(IndexEntry entry, ParseIndexEntry(name, value, index_blob));
      indices_.push_back(std::move(entry));
    }
  }
  if (const auto* idents = Find(*root, "index_metadata_identifiers");
      idents && idents->is_object()) {
    index_metadata_identifiers_ = idents->get_object();
  }
  std::sort(indices_.begin(), indices_.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return absl::OkStatus();
}

absl::Status SnapshotRepository::LoadLegacy() {
  RFS_ASSIGN_OR_RETURN(auto bytes, repo_->ReadBlob("index"));
  RFS_ASSIGN_OR_RETURN(auto root_value, DecodeXContent(bytes, "index"));
  RFS_ASSIGN_OR_RETURN(auto* root, internal::RequireObject(root_value, "index", "(root)"));
  const auto* names = Find(*root, "snapshots");
  if (names == nullptr || !names->is_array()) {
    return internal::FieldError("index", "snapshots", "an array");
  }
  std::map<std::string, IndexEntry> indices;
  for (const auto& n : names->get_array()) {
    if (!n.is_string()) return internal::FieldError("index", "snapshots[]", "a string");
    SnapshotEntry entry;
    entry.name = internal::ToStdString(n.get_string());
    entry.uuid = entry.name;
    // Legacy repository indices list names only: the rest comes from each SnapshotInfo.
    RFS_ASSIGN_OR_RETURN(auto info, ReadSnapshotInfo(entry));
    entry.state = info.state;
    entry.start_time_millis = info.start_time;
    for (const auto& index : info.indices) {
      auto& ie = indices[index];
      ie.name = index;
      ie.id = index;  // ES 1.x/2.x index folders are named by index
      ie.snapshot_uuids.push_back(entry.uuid);
    }
    snapshots_.push_back(std::move(entry));
  }
  for (auto& [name, entry] : indices) indices_.push_back(std::move(entry));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SnapshotRepository>> SnapshotRepository::FromCatalog(
    std::shared_ptr<const ISourceRepo> repo, SnapshotCatalog catalog) {
  std::unique_ptr<SnapshotRepository> out(new SnapshotRepository());
  out->repo_ = std::move(repo);
  SnapshotEntry& snapshot = out->snapshots_.emplace_back();
  snapshot.name = catalog.info.name;
  snapshot.uuid = catalog.info.uuid;
  snapshot.state = catalog.info.state;
  snapshot.start_time_millis = catalog.info.start_time;
  for (const std::string& name : catalog.info.indices) {
    const bool described =
        std::any_of(catalog.indices.begin(), catalog.indices.end(),
                    [&](const IndexMetadata& index) { return index.name == name; });
    const auto shards = catalog.shards.find(name);
    if (!described || shards == catalog.shards.end()) {
      return absl::InvalidArgumentError(StrCat("the catalog of ", out->repo_->description(),
                                               " names index '", name,
                                               "' without its metadata or shards"));
    }
    IndexEntry& index = out->indices_.emplace_back();
    index.name = name;
    index.id = name;
    index.snapshot_uuids.push_back(snapshot.uuid);
    index.shard_generations.resize(shards->second.size());
  }
  out->catalog_ = std::move(catalog);
  return out;
}

absl::StatusOr<const SnapshotEntry*> SnapshotRepository::FindSnapshot(std::string_view name) const {
  for (const auto& s : snapshots_) {
    if (s.name == name) {
      RFS_RETURN_IF_ERROR(VerifyRepositoryIndex(s));
      return &s;
    }
  }
  return absl::NotFoundError(StrCat("snapshot '", name, "' not found in ", repo_->description(),
                                    " (snapshots: ", SnapshotNames(), ")"));
}

absl::StatusOr<const SnapshotEntry*> SnapshotRepository::LatestSnapshot() const {
  if (snapshots_.empty()) {
    return absl::NotFoundError(StrCat("repository ", repo_->description(), " holds no snapshot"));
  }
  if (snapshots_.size() == 1) {
    // The only snapshot is the newest, but what index-N says of it (its uuid, which indices it
    // holds) is as unchecked as with many: a damaged byte there must not read another snapshot's
    // files, or none at all.
    RFS_RETURN_IF_ERROR(VerifyRepositoryIndex(snapshots_.front()));
    return &snapshots_.front();
  }
  // The listing order says nothing: OpenSearch lists newest first, Elasticsearch oldest first.
  // Only the snapshot's own start time decides, read from its checksummed snap-<uuid>.dat (the
  // copy in index-N, ES 7.6+, is unchecked JSON: it must agree, so one damaged digit cannot
  // silently pick an older snapshot).
  const SnapshotEntry* best = nullptr;
  int64_t best_time = 0;
  bool tie = false;
  for (const auto& s : snapshots_) {
    RFS_ASSIGN_OR_RETURN(const int64_t start, CheckedStartTime(s));
    if (start <= 0) {
      return absl::FailedPreconditionError(
          StrCat("snapshot '", s.name, "' in ", repo_->description(),
                 " records no start time, so the newest snapshot is unknown: pass "
                 "--snapshot-name (snapshots: ",
                 SnapshotNames(), ")"));
    }
    if (best == nullptr || start > best_time) {
      best = &s;
      best_time = start;
      tie = false;
    } else if (start == best_time) {
      tie = true;
    }
  }
  if (tie) {
    return absl::FailedPreconditionError(StrCat(
        "several snapshots in ", repo_->description(), " started at ", best_time,
        " ms, so the newest is ambiguous: pass --snapshot-name (snapshots: ", SnapshotNames(),
        ")"));
  }
  if (layout_ != RepositoryLayout::kModern) RFS_RETURN_IF_ERROR(VerifyLegacyNewest(*best));
  RFS_RETURN_IF_ERROR(VerifyRepositoryIndex(*best));
  return best;
}

absl::StatusOr<int64_t> SnapshotRepository::CheckedStartTime(const SnapshotEntry& s) const {
  // ES 1.x/2.x layouts took every start time from the SnapshotInfo at Open(): no second read.
  if (layout_ != RepositoryLayout::kModern) return s.start_time_millis;
  auto info = ReadSnapshotInfo(s);
  if (!info.ok()) {
    return core::WithContext(
        info.status(), StrCat("finding the newest snapshot (reading the start time of '", s.name,
                              "'); pass --snapshot-name to choose one"));
  }
  const int64_t start = info->start_time;
  if (s.start_time_millis > 0 && start > 0 && s.start_time_millis != start) {
    return absl::DataLossError(
        StrCat("index-", generation_, " of ", repo_->description(), " lists snapshot '", s.name,
               "' as started at ", s.start_time_millis, " ms but its ", SnapshotBlobName(s),
               " says ", start, " ms; pass --snapshot-name to choose a snapshot"));
  }
  return start;
}

absl::Status SnapshotRepository::VerifyLegacyNewest(const SnapshotEntry& best) const {
  // Every start time took part in the choice, and ES 1.x kept them unchecksummed: each must fit
  // its own shard's recorded start, and the newest must also be the newest by the start times its
  // shards recorded (in other files, which one damaged byte cannot also change).
  std::vector<int64_t> shard_starts;
  shard_starts.reserve(snapshots_.size());
  for (const auto& s : snapshots_) {
    RFS_ASSIGN_OR_RETURN(const int64_t shard_start, VerifyLegacyStartTime(s));
    shard_starts.push_back(shard_start);
  }
  const int64_t best_shard_start = shard_starts[static_cast<size_t>(&best - snapshots_.data())];
  for (size_t i = 0; i < snapshots_.size(); ++i) {
    const SnapshotEntry& s = snapshots_[i];
    if (&s != &best && best_shard_start > 0 && shard_starts[i] > best_shard_start) {
      return absl::DataLossError(
          StrCat("the start times recorded for snapshots '", best.name, "' and '", s.name, "' in ",
                 repo_->description(),
                 " disagree with the start times of their shards: a snapshot's "
                 "record is damaged; pass --snapshot-name to choose one"));
    }
  }
  return absl::OkStatus();
}

absl::Status SnapshotRepository::VerifyLegacySnapshot(const SnapshotEntry& snapshot) const {
  // ES 1.x wrote its SnapshotInfo as plain JSON without a checksum, and every fact of a legacy
  // snapshot comes from it: what it says is checked against the files the snapshot wrote.
  const std::string info_blob = SnapshotBlobName(snapshot);
  RFS_ASSIGN_OR_RETURN(auto info, ReadSnapshotInfo(snapshot));
  if (info.name != snapshot.name) {
    return absl::DataLossError(StrCat(info_blob, " of ", repo_->description(), " names snapshot '",
                                      info.name, "', not '", snapshot.name, "'"));
  }
  // The indices it lists are exactly the index folders holding its index metadata.
  std::vector<std::string> listed = IndicesIn(snapshot);
  std::vector<std::string> present;
  RFS_ASSIGN_OR_RETURN(auto folders, repo_->ListFolders("indices"));
  for (const auto& folder : folders) {
    IndexEntry entry;
    entry.name = entry.id = folder;
    RFS_ASSIGN_OR_RETURN(const std::string blob, IndexMetadataBlobName(snapshot, entry));
    if (repo_->BlobSize(blob).ok()) present.push_back(folder);
  }
  std::sort(present.begin(), present.end());
  if (listed != present) {
    return absl::DataLossError(
        StrCat(info_blob, " of ", repo_->description(), " lists the indices [",
               absl::StrJoin(listed, ", "), "] of snapshot '", snapshot.name,
               "' but the repository holds metadata of [", absl::StrJoin(present, ", "),
               "] for it: the snapshot's record is damaged"));
  }
  return VerifyLegacyStartTime(snapshot).status();
}

absl::StatusOr<int64_t> SnapshotRepository::VerifyLegacyStartTime(
    const SnapshotEntry& snapshot) const {
  // A legacy snapshot's start time decides which snapshot is the newest, and ES 1.x kept it
  // unchecksummed: it must agree with the start time its first shard recorded.
  const std::string info_blob = SnapshotBlobName(snapshot);
  RFS_ASSIGN_OR_RETURN(auto info, ReadSnapshotInfo(snapshot));
  std::vector<std::string> listed = IndicesIn(snapshot);
  if (info.start_time > 0 && !listed.empty()) {
    auto shard = ReadShardSnapshot(snapshot, listed.front(), 0);
    if (shard.ok() && shard->start_time > 0 &&
        (shard->start_time < info.start_time ||
         (info.end_time >= info.start_time && shard->start_time > info.end_time))) {
      return absl::DataLossError(StrCat(
          info_blob, " of ", repo_->description(), " says snapshot '", snapshot.name, "' ran from ",
          info.start_time, " to ", info.end_time, " ms but shard 0 of ", listed.front(),
          " started at ", shard->start_time, " ms: the snapshot's record is damaged"));
    }
    if (shard.ok()) return shard->start_time;
  }
  return int64_t{0};
}

absl::Status SnapshotRepository::VerifyRepositoryIndex(const SnapshotEntry& snapshot) const {
  if (catalog_) return absl::OkStatus();  // no repository index: the catalog is the source
  {
    std::lock_guard lock(verified_mu_);
    if (verified_.contains(snapshot.uuid)) return absl::OkStatus();
  }
  if (layout_ != RepositoryLayout::kModern) {
    RFS_RETURN_IF_ERROR(VerifyLegacySnapshot(snapshot));
    std::lock_guard lock(verified_mu_);
    verified_.insert(snapshot.uuid);
    return absl::OkStatus();
  }
  // index-N is unchecksummed JSON; snap-<uuid>.dat is checksummed. Every fact of index-N that
  // decides what is read must agree with it, or one damaged byte would silently read another
  // index, none at all, or another snapshot's files.
  const std::string index_blob = StrCat("index-", generation_);
  const std::string info_blob = SnapshotBlobName(snapshot);
  auto info = ReadSnapshotInfo(snapshot);
  if (absl::IsNotFound(info.status())) {
    return absl::DataLossError(StrCat(index_blob, " of ", repo_->description(), " lists snapshot '",
                                      snapshot.name, "' with uuid '", snapshot.uuid, "' but ",
                                      info_blob, " does not exist"));
  }
  if (!info.ok()) return info.status();
  auto disagree = [&](std::string_view field, std::string_view listed, std::string_view stored) {
    return absl::DataLossError(StrCat(index_blob, " of ", repo_->description(), ": ", field,
                                      " of snapshot '", snapshot.name, "' is '", listed, "' but ",
                                      info_blob, " says '", stored, "'"));
  };
  if (info->name != snapshot.name) return disagree("the name", snapshot.name, info->name);
  if (info->uuid != snapshot.uuid) return disagree("the uuid", snapshot.uuid, info->uuid);
  if (!snapshot.state.empty() && !info->state.empty() && snapshot.state != info->state) {
    return disagree("the state", snapshot.state, info->state);
  }
  // A real Version id says exactly which release wrote the snapshot; ES 8.10+ IndexVersion ids
  // do not, and index-N's version string is then a placeholder.
  if (snapshot.version && info->version_id > 0 && info->source_version.patch >= 0) {
    const auto listed = ParseVersionNumber(info->source_version.product, *snapshot.version);
    const std::string stored = StrCat(info->source_version.major, ".", info->source_version.minor,
                                      ".", info->source_version.patch);
    if (!listed || listed->major != info->source_version.major ||
        listed->minor != info->source_version.minor ||
        listed->patch != info->source_version.patch) {
      return disagree("the version", *snapshot.version, stored);
    }
  }
  if (snapshot.index_version && info->version_id >= kFirstIndexVersionId &&
      *snapshot.index_version != info->version_id) {
    return disagree("the index_version", std::to_string(*snapshot.index_version),
                    std::to_string(info->version_id));
  }
  std::vector<std::string> listed = IndicesIn(snapshot);
  std::vector<std::string> stored = info->indices;
  std::sort(stored.begin(), stored.end());
  if (listed != stored) {
    std::string only_listed, only_stored;
    for (const auto& name : listed) {
      if (!std::binary_search(stored.begin(), stored.end(), name)) {
        only_listed += StrCat(only_listed.empty() ? "" : ", ", name);
      }
    }
    for (const auto& name : stored) {
      if (!std::binary_search(listed.begin(), listed.end(), name)) {
        only_stored += StrCat(only_stored.empty() ? "" : ", ", name);
      }
    }
    return absl::DataLossError(StrCat(index_blob, " of ", repo_->description(), " and ", info_blob,
                                      " disagree on the indices of snapshot '", snapshot.name,
                                      "' (only in ", index_blob, ": [", only_listed, "]; only in ",
                                      info_blob, ": [", only_stored,
                                      "]): the repository index is damaged"));
  }
  std::lock_guard lock(verified_mu_);
  verified_.insert(snapshot.uuid);
  return absl::OkStatus();
}

std::string SnapshotRepository::SnapshotNames() const {
  std::string names;
  for (const auto& s : snapshots_) names += names.empty() ? s.name : StrCat(", ", s.name);
  return names.empty() ? "none" : names;
}

std::vector<std::string> SnapshotRepository::IndicesIn(const SnapshotEntry& snapshot) const {
  std::vector<std::string> out;
  for (const auto& index : indices_) {
    if (std::find(index.snapshot_uuids.begin(), index.snapshot_uuids.end(), snapshot.uuid) !=
        index.snapshot_uuids.end()) {
      out.push_back(index.name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<const IndexEntry*> SnapshotRepository::FindIndex(std::string_view name) const {
  for (const auto& index : indices_) {
    if (index.name == name) return &index;
  }
  return absl::NotFoundError(StrCat("index '", name, "' not found in ", repo_->description()));
}

std::string SnapshotRepository::SnapshotBlobName(const SnapshotEntry& snapshot) const {
  switch (layout_) {
    case RepositoryLayout::kEs1:
      return StrCat("snapshot-", snapshot.name);
    case RepositoryLayout::kEs2:
      return StrCat("snap-", snapshot.name, ".dat");
    case RepositoryLayout::kModern:
      break;
  }
  return StrCat("snap-", snapshot.uuid, ".dat");
}

std::string SnapshotRepository::GlobalMetadataBlobName(const SnapshotEntry& snapshot) const {
  switch (layout_) {
    case RepositoryLayout::kEs1:
      return StrCat("metadata-", snapshot.name);
    case RepositoryLayout::kEs2:
      return StrCat("meta-", snapshot.name, ".dat");
    case RepositoryLayout::kModern:
      break;
  }
  return StrCat("meta-", snapshot.uuid, ".dat");
}

absl::StatusOr<std::string> SnapshotRepository::IndexMetadataBlobName(
    const SnapshotEntry& snapshot, const IndexEntry& index) const {
  switch (layout_) {
    case RepositoryLayout::kEs1:
      return core::CheckedPath({"indices", index.id, StrCat("snapshot-", snapshot.name)},
                               "the repository's index-N");
    case RepositoryLayout::kEs2:
      return core::CheckedPath({"indices", index.id, StrCat("meta-", snapshot.name, ".dat")},
                               "the repository's index-N");
    case RepositoryLayout::kModern:
      break;
  }
  // ES 7.9+: snapshot -> metadata identifier -> blob id (IndexMetaDataGenerations, A.2).
  if (auto it = snapshot.index_metadata_lookup.find(index.id);
      it != snapshot.index_metadata_lookup.end()) {
    const auto* blob_id = Find(index_metadata_identifiers_, it->second);
    if (blob_id == nullptr || !blob_id->is_string()) {
      return absl::DataLossError(StrCat("index-", generation_, ": index_metadata_identifiers has ",
                                        "no blob for '", it->second, "' (index ", index.name,
                                        ", snapshot ", snapshot.name, ")"));
    }
    return core::CheckedPath(
        {"indices", index.id,
         StrCat("meta-", internal::ToStdString(blob_id->get_string()), ".dat")},
        StrCat("index-", generation_));
  }
  return core::CheckedPath({"indices", index.id, StrCat("meta-", snapshot.uuid, ".dat")},
                           StrCat("index-", generation_));
}

absl::StatusOr<SnapshotInfo> SnapshotRepository::ReadSnapshotInfo(
    const SnapshotEntry& snapshot) const {
  if (catalog_) return catalog_->info;
  const std::string blob = SnapshotBlobName(snapshot);
  RFS_ASSIGN_OR_RETURN(auto value, ReadJsonBlob(*repo_, blob, kSnapshotCodec));
  RFS_ASSIGN_OR_RETURN(auto* root, internal::RequireObject(value, blob, "(root)"));
  RFS_ASSIGN_OR_RETURN(auto* s, internal::RequireObjectField(*root, "snapshot", blob));
  SnapshotInfo info;
  RFS_ASSIGN_OR_RETURN(info.name, internal::RequireString(*s, "name", blob));
  info.uuid = OptString(*s, "uuid").value_or(info.name);
  info.version_id = OptInt(*s, "version_id").value_or(0);
  info.source_version = VersionFromId(info.version_id);
  info.state = OptString(*s, "state").value_or("");
  info.reason = OptString(*s, "reason").value_or("");
  if (const auto* v = Find(*s, "include_global_state"); v && v->is_bool()) {
    info.include_global_state = v->get_bool();
  }
  info.start_time = OptInt(*s, "start_time").value_or(0);
  info.end_time = OptInt(*s, "end_time").value_or(0);
  info.total_shards = static_cast<int>(OptInt(*s, "total_shards").value_or(0));
  info.successful_shards = static_cast<int>(OptInt(*s, "successful_shards").value_or(0));
  auto strings = [](const json::value* v, std::vector<std::string>& out) {
    if (v == nullptr || !v->is_array()) return;
    for (const auto& item : v->get_array()) {
      if (item.is_string()) out.push_back(internal::ToStdString(item.get_string()));
    }
  };
  strings(Find(*s, "indices"), info.indices);
  strings(Find(*s, "data_streams"), info.data_streams);
  if (const auto* failures = Find(*s, "failures"); failures && failures->is_array()) {
    for (const auto& f : failures->get_array()) {
      if (!f.is_object()) continue;
      const auto& fo = f.get_object();
      ShardFailure failure;
      failure.index = OptString(fo, "index").value_or("");
      failure.shard = static_cast<int>(OptInt(fo, "shard_id").value_or(-1));
      failure.reason = OptString(fo, "reason").value_or("");
      failure.status = OptString(fo, "status").value_or("");
      info.failures.push_back(std::move(failure));
    }
  }
  return info;
}

absl::StatusOr<GlobalMetadata> SnapshotRepository::ReadGlobalMetadata(
    const SnapshotEntry& snapshot) const {
  if (catalog_) return catalog_->global.value_or(GlobalMetadata());
  const std::string blob = GlobalMetadataBlobName(snapshot);
  auto value_or = ReadJsonBlob(*repo_, blob, kGlobalMetadataCodec);
  if (absl::IsNotFound(value_or.status())) {
    // Absent is "no global state" only when the snapshot says it was taken without it.
    RFS_ASSIGN_OR_RETURN(auto info, ReadSnapshotInfo(snapshot));
    if (info.include_global_state) {
      return absl::DataLossError(StrCat(blob, " is missing from ", repo_->description(), " but ",
                                        SnapshotBlobName(snapshot), " says snapshot '",
                                        snapshot.name, "' includes the global state"));
    }
  }
  RFS_ASSIGN_OR_RETURN(auto value, std::move(value_or));
  RFS_ASSIGN_OR_RETURN(auto* root, internal::RequireObject(value, blob, "(root)"));
  RFS_ASSIGN_OR_RETURN(auto* meta, internal::RequireObjectField(*root, "meta-data", blob));
  GlobalMetadata out;
  out.raw = *meta;
  if (const auto* t = Find(*meta, "templates"); t && t->is_object()) {
    out.legacy_templates = t->get_object();
  }
  // Composable templates are wrapped twice: {"component_template": {"component_template": {...}}}
  // (ES ComponentTemplateMetadata / ComposableIndexTemplateMetadata).
  auto unwrap = [&](std::string_view key, json::object& into) {
    const auto* outer = Find(*meta, key);
    if (outer == nullptr || !outer->is_object()) return;
    const auto* inner = Find(outer->get_object(), key);
    if (inner != nullptr && inner->is_object()) into = inner->get_object();
  };
  unwrap("component_template", out.component_templates);
  unwrap("index_template", out.index_templates);
  // {"data_stream": {"data_stream": {name: {name, timestamp_field: {name}, indices: [{index_name,
  // index_uuid}], generation, ...}}}} (ES/OpenSearch DataStreamMetadata, DataStream).
  json::object streams;
  unwrap("data_stream", streams);
  for (const auto& [key, value] : streams) {
    const std::string where = StrCat(blob, ": data stream ", std::string_view(key));
    RFS_ASSIGN_OR_RETURN(const json::object* stream,
                         internal::RequireObject(value, where, "(data stream)"));
    DataStream ds;
    ds.name = std::string(key);
    ds.raw = *stream;
    if (const auto* ts = Find(*stream, "timestamp_field"); ts && ts->is_object()) {
      if (const auto* name = Find(ts->get_object(), "name"); name && name->is_string()) {
        ds.timestamp_field = std::string(name->get_string());
      }
    }
    const auto* indices = Find(*stream, "indices");
    if (indices == nullptr || !indices->is_array()) {
      return absl::DataLossError(StrCat(where, " lists no backing indices"));
    }
    for (const auto& entry : indices->get_array()) {
      const auto* name = entry.is_object() ? Find(entry.get_object(), "index_name") : nullptr;
      if (name == nullptr || !name->is_string()) {
        return absl::DataLossError(StrCat(where, " has a backing index without index_name"));
      }
      ds.backing_indices.emplace_back(name->get_string());
    }
    out.data_streams.push_back(std::move(ds));
  }
  std::sort(out.data_streams.begin(), out.data_streams.end(),
            [](const DataStream& a, const DataStream& b) { return a.name < b.name; });
  return out;
}

absl::StatusOr<std::vector<DataStream>> SnapshotRepository::ReadDataStreams(
    const SnapshotEntry& snapshot) const {
  auto global = ReadGlobalMetadata(snapshot);
  if (absl::IsNotFound(global.status())) return std::vector<DataStream>();
  if (!global.ok()) return global.status();
  return std::move(global->data_streams);
}

absl::StatusOr<IndexMetadata> SnapshotRepository::ReadIndexMetadata(
    const SnapshotEntry& snapshot, std::string_view index_name) const {
  RFS_ASSIGN_OR_RETURN(const IndexEntry* index, FindIndex(index_name));
  if (catalog_) {
    for (const IndexMetadata& metadata : catalog_->indices) {
      if (metadata.name == index->name) return metadata;
    }
  }
  RFS_ASSIGN_OR_RETURN(const std::string blob, IndexMetadataBlobName(snapshot, *index));
  auto value_or = ReadJsonBlob(*repo_, blob, kIndexMetadataCodec);
  if (absl::IsNotFound(value_or.status()) &&
      std::find(index->snapshot_uuids.begin(), index->snapshot_uuids.end(), snapshot.uuid) !=
          index->snapshot_uuids.end()) {
    // The repository index says the snapshot holds this index (under this id): its metadata
    // must be there.
    return absl::DataLossError(StrCat(blob, " is missing from ", repo_->description(), " (index '",
                                      index->name, "' with id '", index->id, "' in snapshot '",
                                      snapshot.name, "')"));
  }
  RFS_ASSIGN_OR_RETURN(auto value, std::move(value_or));
  RFS_ASSIGN_OR_RETURN(auto* root, internal::RequireObject(value, blob, "(root)"));
  if (root->size() != 1) {
    return absl::DataLossError(StrCat(blob, ": index metadata must have one key, the index name"));
  }
  const auto& [name, body] = *root->begin();
  if (name != index->name) {
    return absl::DataLossError(StrCat(blob, " holds the metadata of index '",
                                      std::string_view(name), "' but the repository index lists '",
                                      index->name, "' under id '", index->id, "'"));
  }
  RFS_ASSIGN_OR_RETURN(auto* m, internal::RequireObject(body, blob, name));
  IndexMetadata out;
  out.name = std::string(name);
  out.raw = *m;
  out.state = OptString(*m, "state").value_or("open");
  if (const auto* settings = Find(*m, "settings"); settings && settings->is_object()) {
    out.settings = FlatSettings(settings->get_object());
  }
  const auto shards = OptInt(out.settings, "index.number_of_shards");
  if (!shards || *shards <= 0 || *shards > 100000) {
    return internal::FieldError(blob, "settings.index.number_of_shards", "a positive integer");
  }
  out.number_of_shards = static_cast<int>(*shards);
  out.number_of_replicas =
      static_cast<int>(OptInt(out.settings, "index.number_of_replicas").value_or(0));
  out.version_created = OptInt(out.settings, "index.version.created").value_or(0);

  // Mappings: an array of single-key objects {type: mapping}, or compressed binary entries
  // (CompressedXContent, base64 in our JSON form of SMILE binaries) (A.5).
  if (const auto* mappings = Find(*m, "mappings")) {
    auto add = [&](const json::value& entry) -> absl::Status {
      if (entry.is_object()) {
        for (const auto& [type, mapping] : entry.get_object()) out.mappings[type] = mapping;
        return absl::OkStatus();
      }
      if (entry.is_string()) {
        const auto& text = entry.get_string();
        auto raw = core::Base64Decode(std::string_view(text.data(), text.size()));
        if (!raw.ok()) return absl::DataLossError(StrCat(blob, ": bad compressed mapping"));
        RFS_ASSIGN_OR_RETURN(auto decoded, DecodeXContent(*raw, StrCat(blob, " (mapping)")));
        if (!decoded.is_object()) return internal::FieldError(blob, "mappings[]", "an object");
        for (const auto& [type, mapping] : decoded.get_object()) out.mappings[type] = mapping;
        return absl::OkStatus();
      }
      return internal::FieldError(blob, "mappings[]", "an object or compressed mapping");
    };
    if (mappings->is_array()) {
      for (const auto& entry : mappings->get_array()) RFS_RETURN_IF_ERROR(add(entry));
    } else if (mappings->is_object()) {
      RFS_RETURN_IF_ERROR(add(*mappings));
    }
  }
  if (const auto* aliases = Find(*m, "aliases"); aliases && aliases->is_object()) {
    out.aliases = aliases->get_object();
  }
  return out;
}

absl::StatusOr<std::string> SnapshotRepository::ShardFolder(const IndexEntry& index,
                                                            int shard) const {
  if (catalog_) {
    return absl::UnimplementedError(StrCat(repo_->description(), " keeps index ", index.name,
                                           " shard ", shard, " in no snapshot shard folder"));
  }
  if (index.shard_path_type == 0) {
    return core::CheckedPath({"indices", index.id, std::to_string(shard)},
                             StrCat("index-", generation_));
  }
  // Hashed shard paths (OpenSearch 2.17+): read the companion listing rather than recompute
  // the hash (A.9). Its name starts with snapshot_path_<indexId>.
  const std::string prefix = StrCat("snapshot_path_", index.id, ".");
  RFS_ASSIGN_OR_RETURN(auto blobs, repo_->ListBlobs("snapshot_shard_paths"));
  for (const auto& blob : blobs) {
    if (!blob.starts_with(prefix)) continue;
    const std::string path = StrCat("snapshot_shard_paths/", blob);
    RFS_ASSIGN_OR_RETURN(auto bytes, repo_->ReadBlob(path));
    RFS_ASSIGN_OR_RETURN(auto value, DecodeXContent(bytes, path));
    RFS_ASSIGN_OR_RETURN(auto* root, internal::RequireObject(value, path, "(root)"));
    const auto* paths = Find(*root, "paths");
    if (paths == nullptr || !paths->is_array() || shard < 0 ||
        static_cast<size_t>(shard) >= paths->get_array().size() ||
        !paths->get_array()[shard].is_string()) {
      return internal::FieldError(path, StrCat("paths[", shard, "]"), "a string");
    }
    std::string folder = internal::ToStdString(paths->get_array()[shard].get_string());
    while (!folder.empty() && folder.back() == '/') folder.pop_back();
    // A folder the listing names must stay inside the repository.
    return core::CheckedPath({folder}, path);
  }
  return absl::UnimplementedError(StrCat("index ", index.name, " uses OpenSearch shard path type ",
                                         index.shard_path_type, " but no snapshot_shard_paths/",
                                         prefix, "* blob lists its shard folders"));
}

absl::StatusOr<ShardSnapshot> SnapshotRepository::ReadShardSnapshot(const SnapshotEntry& snapshot,
                                                                    std::string_view index_name,
                                                                    int shard) const {
  RFS_ASSIGN_OR_RETURN(const IndexEntry* index, FindIndex(index_name));
  if (catalog_) {
    const auto& shards = catalog_->shards.at(index->name);
    if (shard < 0 || static_cast<size_t>(shard) >= shards.size()) {
      return absl::NotFoundError(
          StrCat("index ", index_name, " of ", repo_->description(), " has no shard ", shard));
    }
    return shards[static_cast<size_t>(shard)];
  }
  RFS_ASSIGN_OR_RETURN(const std::string folder, ShardFolder(*index, shard));
  std::string name;
  switch (layout_) {
    case RepositoryLayout::kEs1:
      name = StrCat("snapshot-", snapshot.name);
      break;
    case RepositoryLayout::kEs2:
      name = StrCat("snap-", snapshot.name, ".dat");
      break;
    case RepositoryLayout::kModern:
      name = StrCat("snap-", snapshot.uuid, ".dat");
      break;
  }
  RFS_ASSIGN_OR_RETURN(const std::string blob,
                       core::CheckedPath({folder, name}, StrCat("index-", generation_)));
  auto bytes = repo_->ReadBlob(blob);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) {
      auto shallow = repo_->BlobSize(StrCat(folder, "/shallow-snap-", snapshot.uuid, ".dat"));
      if (shallow.ok()) {
        return absl::UnimplementedError(
            StrCat("shard ", shard, " of index ", index_name, " in snapshot ", snapshot.name,
                   " is an OpenSearch shallow (remote-store) snapshot without Lucene files"));
      }
      return absl::NotFoundError(StrCat("snapshot ", snapshot.name, " holds no data for shard ",
                                        shard, " of index ", index_name, " (", blob,
                                        " not found)"));
    }
    return bytes.status();
  }
  RFS_ASSIGN_OR_RETURN(auto value, DecodeMetadataBlob(*bytes, blob, kSnapshotCodec));
  RFS_ASSIGN_OR_RETURN(auto* root, internal::RequireObject(value, blob, "(root)"));
  ShardSnapshot out;
  out.snapshot_name = OptString(*root, "name").value_or(snapshot.name);
  out.index_version = OptInt(*root, "index_version").value_or(0);
  out.start_time = OptInt(*root, "start_time").value_or(0);
  const auto* files = Find(*root, "files");
  if (files == nullptr || !files->is_array()) {
    return internal::FieldError(blob, "files", "an array");
  }
  for (const auto& f : files->get_array()) {
    RFS_ASSIGN_OR_RETURN(auto* fo, internal::RequireObject(f, blob, "files[]"));
    FileInfo info;
    RFS_ASSIGN_OR_RETURN(info.name, internal::RequireString(*fo, "name", blob));
    RFS_ASSIGN_OR_RETURN(info.physical_name, internal::RequireString(*fo, "physical_name", blob));
    RFS_ASSIGN_OR_RETURN(auto length, internal::RequireInt(*fo, "length", blob));
    if (length < 0) return internal::FieldError(blob, "files[].length", "non-negative");
    info.length = static_cast<uint64_t>(length);
    info.checksum = OptString(*fo, "checksum").value_or("");
    if (auto part_size = OptInt(*fo, "part_size"); part_size && *part_size > 0) {
      info.part_size = static_cast<uint64_t>(*part_size);
    }
    info.written_by = OptString(*fo, "written_by").value_or("");
    if (auto hash = OptString(*fo, "meta_hash"); hash && !hash->empty()) {
      auto raw = core::Base64Decode(*hash);
      if (!raw.ok()) {
        return absl::DataLossError(
            StrCat(blob, ": meta_hash of ", info.physical_name, " is not base64"));
      }
      info.meta_hash = std::move(raw).value();
    }
    if (core::PathSegmentProblem(info.name) || core::PathSegmentProblem(info.physical_name)) {
      return absl::DataLossError(StrCat(blob, ": invalid file name '", info.name, "'"));
    }
    out.files.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const core::IDirectory>> SnapshotRepository::OpenShardFiles(
    const SnapshotEntry& snapshot, std::string_view index, int shard,
    ShardFilesOptions options) const {
  RFS_ASSIGN_OR_RETURN(const IndexEntry* entry, FindIndex(index));
  if (catalog_) {
    RFS_RETURN_IF_ERROR(ReadShardSnapshot(snapshot, index, shard).status());
    if (!catalog_->open_shard) {
      return absl::FailedPreconditionError(
          StrCat(repo_->description(), " describes index ", index, " but holds none of its files"));
    }
    return catalog_->open_shard(entry->name, shard, options);
  }
  RFS_ASSIGN_OR_RETURN(auto shard_snapshot, ReadShardSnapshot(snapshot, index, shard));
  RFS_ASSIGN_OR_RETURN(auto folder, ShardFolder(*entry, shard));
  return internal::MakeShardDirectory(
      repo_, std::move(folder), std::move(shard_snapshot),
      StrCat("index ", index, " shard ", shard, " of snapshot ", snapshot.name), options);
}

absl::StatusOr<core::ClusterVersion> SnapshotRepository::DetectSourceVersion(
    const SnapshotEntry& snapshot) const {
  RFS_ASSIGN_OR_RETURN(auto info, ReadSnapshotInfo(snapshot));
  core::ClusterVersion version = info.source_version;
  // ES 8.10+ writes IndexVersion ids; the index-N entry's numeric index_version says the same,
  // and its `version` string is a placeholder ("8.11.0") then, so it is not used.
  if (version.product == core::ClusterVersion::Product::kUnknown && snapshot.version) {
    if (auto parsed =
            ParseVersionNumber(core::ClusterVersion::Product::kElasticsearch, *snapshot.version)) {
      version = *parsed;
    }
  }
  return version;
}

}  // namespace rfs::snapshot
