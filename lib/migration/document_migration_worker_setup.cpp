// DocumentMigrationWorker's shard setup: the work items of the selected indices, once across all
// workers, and the check that the store was set up for this run.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/status_payloads.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/segment_infos.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/snapshot/models.hpp"

#include "absl/strings/cord.h"
#include "migration/document_migration_worker_internal.hpp"

namespace rfs::migration {

using coordination::kSetupForWorkItemId;
using coordination::kSetupIndicesPrefix;
using coordination::RecordCompletedItem;
using coordination::SettingsHash;
using coordination::WorkItemId;

absl::Status DocumentMigrationWorker::CheckSourceStorage() const {
  for (const std::string& index : SelectedIndices()) {
    auto metadata = repository_.ReadIndexMetadata(*snapshot_, index);
    if (!metadata.ok()) return MarkSnapshotReadFailure(metadata.status());
    const lucene::IndexSource source = lucene::DescribeIndexSource(*metadata);
    if (!source.storage.incomplete()) continue;
    if (options_.enable_sourceless_migrations) continue;
    const bool partial = source.storage.mode == lucene::SourceStorage::Mode::kStored;
    absl::Status error = absl::FailedPreconditionError(core::StrCat(
        "index ", index,
        partial ? " keeps only part of each _source (" : " has no stored _source (",
        source.storage.Describe(),
        partial ? "); the fields left out can only be rebuilt from doc values and stored fields"
                : "); its documents can only be rebuilt from doc values and stored fields",
        ": run with --enable-sourceless-migrations (MetadataMigration evaluate lists what can "
        "be rebuilt)"));
    error.SetPayload(core::payload::kSourcelessIndex, absl::Cord(index));
    return error;
  }
  return absl::OkStatus();
}

absl::Status DocumentMigrationWorker::CheckPreserveVersion() {
  if (!options_.preserve_version) return absl::OkStatus();
  std::set<std::string> streams;
  for (const std::string& index : SelectedIndices()) {
    if (const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index)) {
      streams.insert(stream->name);
      continue;
    }
    auto metadata = repository_.ReadIndexMetadata(*snapshot_, index);
    if (!metadata.ok()) return MarkSnapshotReadFailure(metadata.status());
    const core::ClusterVersion created = snapshot::VersionFromId(metadata->version_created);
    // Elasticsearch 5 and older write `_version` in doc-values formats rfs does not read
    // (Lucene 6's and older), or, before 2.0, as a payload of `_uid`.
    if (created.elasticsearch() && created.major < 6) {
      absl::Status error = absl::InvalidArgumentError(core::StrCat(
          "--preserve-version: index ", index, " was created by ", created.LongName(),
          ", whose segments keep _version in a form rfs does not read (only indices created by "
          "Elasticsearch 6 or later, or OpenSearch, keep it as doc values rfs reads); migrate it "
          "without --preserve-version, or leave it out with --index-allowlist"));
      error.SetPayload(core::payload::kPreserveVersion, absl::Cord(index));
      return error;
    }
  }
  for (const std::string& stream : streams) {
    summary_.data_streams_without_versions.push_back(stream);
    WorkerEvent event;
    event.kind = WorkerEvent::Kind::kPreserveVersionNotApplied;
    event.index = stream;
    event.message = core::StrCat(
        "--preserve-version: data stream ", stream,
        " takes only create with internal versions; its documents are written without their "
        "source versions (a create never replaces a document the stream holds, whatever its "
        "version, and the copies written carry the target's own versions)");
    Emit(std::move(event));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<WorkItemId>> DocumentMigrationWorker::ShardItems(
    const std::string& index, int shard) const {
  return internal::ShardWorkItems(repository_, *snapshot_, options_, previous_snapshot_ != nullptr,
                                  index, shard);
}

absl::StatusOr<std::vector<WorkItemId>> internal::ShardWorkItems(
    const snapshot::SnapshotRepository& repository, const snapshot::SnapshotEntry& snapshot,
    const DocumentMigrationOptions& options, bool delta, const std::string& index, int shard) {
  const WorkItemId whole{index, static_cast<uint32_t>(shard), 0, std::nullopt};
  // A delta's deletes come after the shard's cursors: its shards are never split.
  // A trial's limit is per shard: its shards are not split either.
  if (options.split_shard_bytes == 0 || delta || options.max_docs_per_shard > 0) {
    return std::vector<WorkItemId>{whole};
  }
  auto files = repository.ReadShardSnapshot(snapshot, index, shard);
  // A shard without data (NotFound) is one item that finds nothing; other errors stop setup.
  if (absl::IsNotFound(files.status())) return std::vector<WorkItemId>{whole};
  if (!files.ok()) return MarkSnapshotReadFailure(files.status());
  const uint64_t bytes = files->total_file_bytes();
  if (bytes <= options.split_shard_bytes) return std::vector<WorkItemId>{whole};
  auto directory = repository.OpenShardFiles(snapshot, index, shard);
  if (!directory.ok()) return MarkSnapshotReadFailure(directory.status());
  auto infos = lucene::ReadSegmentInfos(**directory);
  if (!infos.ok()) return MarkSnapshotReadFailure(infos.status());
  const uint64_t max_cursor = infos->total_max_doc();
  // Disjoint ranges of the cursor space, about split_shard_bytes of files each.
  const uint64_t parts = std::min<uint64_t>(
      {(bytes + options.split_shard_bytes - 1) / options.split_shard_bytes, max_cursor, 4096});
  if (parts <= 1) return std::vector<WorkItemId>{whole};
  std::vector<WorkItemId> items;
  for (uint64_t part = 0; part < parts; ++part) {
    const uint64_t begin = max_cursor * part / parts;
    const uint64_t end = max_cursor * (part + 1) / parts;
    items.push_back(WorkItemId{index, static_cast<uint32_t>(shard), begin, end});
  }
  return items;
}

std::vector<std::string> DocumentMigrationWorker::SelectedIndices() const {
  std::vector<std::string> out;
  for (std::string& index : repository_.IndicesIn(*snapshot_)) {
    const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, index);
    if (transform::SelectIndex(options_.index_allowlist, index, stream ? stream->name : "")) {
      out.push_back(std::move(index));
    }
  }
  return out;
}

std::string DocumentMigrationWorker::SetupIdentity() const {
  // What decides the shard items and where their documents go: the snapshot (its uuid tells a
  // snapshot from a later one of the same name, in any copy of the repository), the split size
  // and the multi-type policy.
  std::string identity = core::StrCat(
      "snapshot '", snapshot_->name, "' (uuid ", snapshot_->uuid, "), --split-shard-bytes ",
      options_.split_shard_bytes, ", --multi-type-behavior ",
      options_.multi_type_policy == transform::MultiTypePolicy::kSplit ? "split" : "union");
  if (options_.trial()) {
    // A trial's items are its own: a full run never resumes them, nor they a full run.
    identity += core::StrCat(", trial: ", options_.max_docs_per_shard,
                             " documents per shard at most, index prefix '",
                             options_.target_index_prefix, "'");
  }
  if (previous_snapshot_ != nullptr) {
    // A delta's items are its own: never those of the full run or of another delta.
    identity +=
        core::StrCat(", delta from snapshot '", previous_snapshot_->name, "' (uuid ",
                     previous_snapshot_->uuid, ") ", lucene::DeltaModeName(options_.delta_mode));
  }
  return identity;
}

std::string DocumentMigrationWorker::SetupIndicesMarker() const {
  std::string names;
  for (const auto& index : SelectedIndices()) names += core::StrCat(index, "\n");
  return core::StrCat(kSetupIndicesPrefix, SettingsHash(names));
}

absl::Status DocumentMigrationWorker::CheckStoreIsForThisRun() {
  const std::string identity = SetupIdentity();
  const uint64_t mine = SettingsHash(identity);
  RFS_ASSIGN_OR_RETURN(auto record, coordinator_.GetWorkItem(kSetupForWorkItemId));
  if (!record || !record->completed() || !record->progress) {
    // A store set up by an rfs that kept no such record: it is adopted for this run's settings
    // (the first worker to record them decides).
    RFS_RETURN_IF_ERROR(coordination::RecordSetupDescription(coordinator_, clock_, mine, identity,
                                                             options_.initial_lease));
    RFS_RETURN_IF_ERROR(RecordCompletedItem(coordinator_, clock_, kSetupForWorkItemId,
                                            options_.initial_lease, mine));
    RFS_ASSIGN_OR_RETURN(record, coordinator_.GetWorkItem(kSetupForWorkItemId));
  }
  if (!record || !record->progress || record->progress->next_cursor != mine) {
    // What the store was set up for, when it says (stores set up before it was recorded do not).
    std::optional<std::string> theirs;
    if (record && record->progress) {
      RFS_ASSIGN_OR_RETURN(
          theirs, coordination::ReadSetupDescription(coordinator_, record->progress->next_cursor));
    }
    // Its completed items would read as "no work left" for work never done.
    absl::Status status = absl::FailedPreconditionError(core::StrCat(
        "this work-coordination store was set up for another snapshot or other settings than "
        "this run's ",
        identity, ": it was set up for ",
        theirs ? *theirs : std::string("settings it does not name (set up by an older rfs)"),
        ". Its completed items say nothing of this run. Use a store of its own (--session-name "
        "NAME, another --output-dir or --coordinator-db), or the settings it was set up with"));
    status.SetPayload(core::payload::kStoreMismatch, absl::Cord("1"));
    return status;
  }
  RFS_ASSIGN_OR_RETURN(auto indices, coordinator_.GetWorkItem(SetupIndicesMarker()));
  if (!indices) {
    // Another selection of indices over the same snapshot: adding the items it lacks is safe
    // (creation leaves existing items alone); the items of other indices stay in the store.
    RFS_RETURN_IF_ERROR(CreateShardItems());
  }
  return absl::OkStatus();
}

absl::Status DocumentMigrationWorker::SetupShards() {
  RFS_RETURN_IF_ERROR(CreateShardItems());
  if (options_.trial()) {
    // Says "trial" to whoever reads the store (the console), beside the setup identity.
    RFS_RETURN_IF_ERROR(RecordCompletedItem(
        coordinator_, clock_,
        core::StrCat(coordination::kSetupTrialPrefix, options_.max_docs_per_shard),
        options_.initial_lease, options_.max_docs_per_shard));
  }
  // The words first: whenever the hash is there, so is what it stands for.
  const std::string identity = SetupIdentity();
  RFS_RETURN_IF_ERROR(coordination::RecordSetupDescription(
      coordinator_, clock_, SettingsHash(identity), identity, options_.initial_lease));
  return RecordCompletedItem(coordinator_, clock_, kSetupForWorkItemId, options_.initial_lease,
                             SettingsHash(identity));
}

absl::Status DocumentMigrationWorker::CreateShardItems() {
  uint64_t created = 0;
  uint64_t indices = 0;
  for (const std::string& index : SelectedIndices()) {
    auto metadata = repository_.ReadIndexMetadata(*snapshot_, index);
    if (!metadata.ok()) return MarkSnapshotReadFailure(metadata.status());
    ++indices;
    for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
      RFS_ASSIGN_OR_RETURN(std::vector<WorkItemId> items, ShardItems(index, shard));
      for (const WorkItemId& item : items) {
        auto fresh = coordinator_.CreateUnassignedWorkItem(item.ToString(), 0);
        if (!fresh.ok()) return fresh.status();
        created += *fresh ? 1 : 0;
      }
    }
  }
  WorkerEvent event;
  event.kind = WorkerEvent::Kind::kShardSetup;
  event.docs = created;
  event.message = core::StrCat(created, " shard work items for ", indices, " indices of snapshot ",
                               snapshot_->name);
  Emit(std::move(event));
  return RecordCompletedItem(coordinator_, clock_, SetupIndicesMarker(), options_.initial_lease);
}

}  // namespace rfs::migration
