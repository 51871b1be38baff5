// Target tuning for the load (target_tuning_internal.hpp), and DocumentMigrationWorker's part of
// it: tune an index before an item's first bulk, restore it once no item of it is left.
#include <algorithm>
#include <atomic>
#include <optional>
#include <set>
#include <utility>
#include <variant>

#include <boost/json.hpp>

#include "rfs/coordination/retrying_work_coordinator.hpp"
#include "rfs/coordination/target_tuning_records.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/transform/type_policy.hpp"

#include "migration/lease_keeper_internal.hpp"
#include "migration/target_tuning_internal.hpp"

namespace rfs::migration {
namespace internal {
namespace {

namespace json = boost::json;
using coordination::TuningRecordId;
using core::StrCat;

constexpr std::string_view kReplicas = "index.number_of_replicas";
constexpr std::string_view kRefresh = "index.refresh_interval";
constexpr std::string_view kAutoExpand = "index.auto_expand_replicas";

std::optional<std::string> StringSetting(const json::object& settings, std::string_view key) {
  const json::value* value = settings.if_contains(key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (value->is_string()) return std::string(value->as_string());
  return json::serialize(*value);
}

// The flat settings of `index` in a GET _settings answer; nullopt when the answer does not name
// it (an alias answers with its indices' names: never tuned).
std::optional<json::object> SettingsOf(const json::object& answer, std::string_view index) {
  const json::value* entry = answer.if_contains(index);
  if (entry == nullptr || !entry->is_object()) return std::nullopt;
  const json::value* settings = entry->as_object().if_contains("settings");
  if (settings == nullptr || !settings->is_object()) return json::object();
  return settings->as_object();
}

std::string Describe(const std::optional<std::string>& value) {
  return value ? *value : std::string("not set");
}

}  // namespace

std::string TunedOriginalsJson(const TunedOriginals& originals) {
  json::object out;
  auto value = [](const std::optional<std::string>& v) -> json::value {
    return v ? json::value(*v) : json::value(nullptr);
  };
  if (originals.replicas_changed) out["number_of_replicas"] = value(originals.number_of_replicas);
  out["refresh_interval"] = value(originals.refresh_interval);
  return core::JsonText(out);
}

std::optional<TunedOriginals> ParseTunedOriginals(std::string_view text) {
  boost::system::error_code error;
  const json::value parsed = json::parse(text, error);
  if (error || !parsed.is_object()) return std::nullopt;
  const json::object& object = parsed.as_object();
  if (!object.contains("refresh_interval")) return std::nullopt;
  TunedOriginals out;
  out.replicas_changed = object.contains("number_of_replicas");
  out.number_of_replicas = StringSetting(object, "number_of_replicas");
  out.refresh_interval = StringSetting(object, "refresh_interval");
  return out;
}

TargetTuning::TargetTuning(std::shared_ptr<net::IHttpTransport> transport,
                           coordination::IWorkCoordinator& records, core::IClock& clock,
                           TargetTuningOptions options)
    : transport_(std::move(transport)),
      client_(*transport_),
      records_(records),
      clock_(clock),
      options_(std::move(options)) {}

absl::StatusOr<bool> TargetTuning::IsComplete(std::string_view id) {
  RFS_ASSIGN_OR_RETURN(auto state, records_.GetWorkItem(id));
  return state && state->completed();
}

absl::StatusOr<std::optional<TunedOriginals>> TargetTuning::ReadOriginals(
    const std::string& index) {
  RFS_ASSIGN_OR_RETURN(auto tuned,
                       records_.GetWorkItem(TuningRecordId(coordination::kTunedPrefix, index)));
  if (!tuned || !tuned->completed() || tuned->successor_ids.size() != 1) return std::nullopt;
  const std::string_view text_id = tuned->successor_ids[0];
  if (!text_id.starts_with(coordination::kTunedOriginalPrefix)) return std::nullopt;
  auto text = core::Base64Decode(text_id.substr(coordination::kTunedOriginalPrefix.size()));
  if (!text.ok()) return std::nullopt;
  return ParseTunedOriginals(std::string(text->begin(), text->end()));
}

absl::Status TargetTuning::UnderLock(const std::string& index,
                                     const std::function<absl::Status()>& body, bool* lost_lock) {
  const std::string id = TuningRecordId(coordination::kTuningLockPrefix, index);
  // A holder renews its lease while it works: waiting goes on while the lease moves, and ends
  // only after four lock leases of a lease that stays where it is.
  auto give_up = clock_.Now() + 4 * options_.lock_lease;
  std::optional<coordination::TimePoint> holder_until;
  while (true) {
    // A fixed lease: a holder killed in the body says nothing about how long the next one needs
    // (the body is a few requests), so it must not make the lock, and every later wait, longer.
    RFS_ASSIGN_OR_RETURN(auto outcome, records_.AcquireFixedLease(id, options_.lock_lease));
    if (const auto* acquired = std::get_if<coordination::Acquired>(&outcome)) {
      absl::Status status;
      coordination::Lease held = acquired->lease;
      std::atomic<bool> lost{false};
      {
        // Renewed while the body runs, so that a slow target never outlasts the lock, which can
        // so be short (all that a holder killed in the body costs the others).
        HealthGuard guard(options_.lock_renewals != nullptr ? *options_.lock_renewals : records_,
                          clock_, held, [&lost](const std::string&) { lost = true; }, {});
        status = body();
        held = guard.lease();
      }
      // Also a lease that ran out after the guard's last look.
      if (clock_.Now() >= held.local_deadline()) lost = true;
      if (lost_lock != nullptr) *lost_lock = lost;
      if (lost && status.ok()) {
        // Another worker may have tuned or restored the index meanwhile: done again, under the
        // lock, by whoever comes next (both are idempotent).
        return absl::UnavailableError(
            StrCat("the tuning lock of index ", index, " ran out while its settings changed"));
      }
      // Given back, never completed: the next tuning or restore of the index takes it again.
      records_.ReleaseWorkItem(held).IgnoreError();
      return status;
    }
    if (std::holds_alternative<coordination::AlreadyCompleted>(outcome)) return body();
    if (const auto* busy = std::get_if<coordination::AllLeasedElsewhere>(&outcome)) {
      if (holder_until != busy->earliest_expiry) {
        holder_until = busy->earliest_expiry;
        give_up = clock_.Now() + 4 * options_.lock_lease;
      }
    }
    if (clock_.Now() >= give_up) {
      return absl::UnavailableError(
          StrCat("the tuning lock of index ", index, " stays held by another worker"));
    }
    clock_.SleepFor(std::chrono::milliseconds(200));
  }
}

absl::Status TargetTuning::MarkCreatedEmpty(const std::string& target_index) {
  return coordination::RecordCompletedItem(
      records_, clock_, TuningRecordId(coordination::kCreatedEmptyPrefix, target_index),
      options_.lock_lease);
}

absl::Status TargetTuning::AtShardSetup(const std::vector<std::string>& target_indices) {
  if (!options_.empty_at_shard_setup) return absl::OkStatus();
  for (const std::string& index : target_indices) {
    RFS_ASSIGN_OR_RETURN(bool tuned, IsComplete(TuningRecordId(coordination::kTunedPrefix, index)));
    if (tuned) continue;
    auto count = client_.Count(index);
    if (absl::IsNotFound(count.status())) continue;  // the target creates it: its own settings
    RFS_RETURN_IF_ERROR(count.status());
    if (*count == 0) RFS_RETURN_IF_ERROR(MarkCreatedEmpty(index));
  }
  return absl::OkStatus();
}

absl::Status TargetTuning::BeforeBulk(const std::string& target_index) {
  {
    std::lock_guard lock(mu_);
    if (settled_.contains(target_index)) return absl::OkStatus();
  }
  // Cheap looks first: most items meet an index settled by another worker long ago.
  RFS_ASSIGN_OR_RETURN(bool created_empty,
                       IsComplete(TuningRecordId(coordination::kCreatedEmptyPrefix, target_index)));
  RFS_ASSIGN_OR_RETURN(bool tuned,
                       IsComplete(TuningRecordId(coordination::kTunedPrefix, target_index)));
  if (created_empty && !tuned) {
    bool lost_lock = false;
    absl::Status status = UnderLock(
        target_index, [&] { return TuneLocked(target_index); }, &lost_lock);
    if (lost_lock) {
      // The tuning's settings may have landed after a restore by the worker that took the lock
      // over: an index restored meanwhile gets its originals back again, under the lock.
      RFS_RETURN_IF_ERROR(
          UnderLock(target_index, [&] { return RestoreLocked(target_index, /*again=*/true); }));
    }
    if (!status.ok() && core::IsRetryable(status)) return status;
    if (!status.ok() && options_.on_event) {
      // A target that refuses these settings (a managed service's limits) is loaded untuned.
      options_.on_event("tuning_failed", target_index, std::string(status.message()));
    }
  }
  std::lock_guard lock(mu_);
  settled_[target_index] = created_empty;
  return absl::OkStatus();
}

absl::Status TargetTuning::TuneLocked(const std::string& index) {
  // Under the lock: looked at again, a restore or a tuning may have come in between.
  RFS_ASSIGN_OR_RETURN(bool restored,
                       IsComplete(TuningRecordId(coordination::kRestoredPrefix, index)));
  RFS_ASSIGN_OR_RETURN(bool tuned, IsComplete(TuningRecordId(coordination::kTunedPrefix, index)));
  if (restored || tuned) return absl::OkStatus();
  auto answer = client_.GetIndexSettings(index, StrCat(kReplicas, ",", kRefresh, ",", kAutoExpand));
  if (absl::IsNotFound(answer.status())) return absl::OkStatus();
  RFS_RETURN_IF_ERROR(answer.status());
  const std::optional<json::object> settings = SettingsOf(*answer, index);
  if (!settings) return absl::OkStatus();
  TunedOriginals originals;
  originals.number_of_replicas = StringSetting(*settings, kReplicas);
  originals.refresh_interval = StringSetting(*settings, kRefresh);
  // With auto_expand_replicas the node sets the replicas itself: left to it.
  const std::optional<std::string> auto_expand = StringSetting(*settings, kAutoExpand);
  originals.replicas_changed = !auto_expand || *auto_expand == "false";

  // The originals are in the store before anything changes: a worker killed at any point leaves
  // an index that is either untouched or restorable.
  const std::string text_id = StrCat(coordination::kTunedOriginalPrefix,
                                     core::Base64UrlEncode(TunedOriginalsJson(originals)));
  RFS_RETURN_IF_ERROR(
      coordination::RecordCompletedItem(records_, clock_, text_id, options_.lock_lease));
  const std::string tuned_id = TuningRecordId(coordination::kTunedPrefix, index);
  RFS_ASSIGN_OR_RETURN(auto outcome, records_.AcquireFixedLease(tuned_id, options_.lock_lease));
  if (const auto* acquired = std::get_if<coordination::Acquired>(&outcome)) {
    const std::vector<std::string> successors{text_id};
    RFS_RETURN_IF_ERROR(records_.CreateSuccessorsAndComplete(acquired->lease, successors, 0));
  }
  RFS_ASSIGN_OR_RETURN(std::optional<TunedOriginals> kept, ReadOriginals(index));
  if (!kept) {
    return absl::UnavailableError(
        StrCat("the original settings of index ", index, " are not readable in the store yet"));
  }
  json::object tuning{{"refresh_interval", "-1"}};
  if (kept->replicas_changed) tuning["number_of_replicas"] = 0;
  if (options_.before_tuning) options_.before_tuning(index);
  RFS_RETURN_IF_ERROR(client_.UpdateIndexSettings(index, json::object{{"index", tuning}}));
  if (options_.on_event) {
    options_.on_event(
        "tuned", index,
        StrCat(kept->replicas_changed
                   ? StrCat("number_of_replicas 0 (was ", Describe(kept->number_of_replicas), "), ")
                   : std::string("number_of_replicas left to auto_expand_replicas, "),
               "refresh_interval -1 (was ", Describe(kept->refresh_interval),
               ") until its last item is done"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> TargetTuning::NeedsRestore(const std::string& target_index) {
  {
    std::lock_guard lock(mu_);
    // Not created empty: no worker tunes it, ever.
    if (auto it = settled_.find(target_index); it != settled_.end() && !it->second) return false;
  }
  RFS_ASSIGN_OR_RETURN(bool tuned,
                       IsComplete(TuningRecordId(coordination::kTunedPrefix, target_index)));
  if (!tuned) return false;
  RFS_ASSIGN_OR_RETURN(bool restored,
                       IsComplete(TuningRecordId(coordination::kRestoredPrefix, target_index)));
  if (restored) {
    std::lock_guard lock(mu_);
    settled_[target_index] = false;
  }
  return !restored;
}

absl::Status TargetTuning::Restore(const std::string& target_index) {
  RFS_ASSIGN_OR_RETURN(bool needed, NeedsRestore(target_index));
  if (!needed) return absl::OkStatus();
  if (options_.before_restore) options_.before_restore(target_index);
  RFS_RETURN_IF_ERROR(UnderLock(target_index, [&] { return RestoreLocked(target_index); }));
  std::lock_guard lock(mu_);
  settled_[target_index] = false;
  return absl::OkStatus();
}

absl::Status TargetTuning::RestoreLocked(const std::string& index, bool again) {
  const std::string restored_id = TuningRecordId(coordination::kRestoredPrefix, index);
  RFS_ASSIGN_OR_RETURN(bool restored, IsComplete(restored_id));
  // Once restored, only put back again (`again`); never before the first restore.
  if (restored != again) return absl::OkStatus();
  RFS_ASSIGN_OR_RETURN(std::optional<TunedOriginals> originals, ReadOriginals(index));
  if (!originals) return absl::OkStatus();
  auto value = [](const std::optional<std::string>& v) -> json::value {
    return v ? json::value(*v) : json::value(nullptr);  // null: back to the default
  };
  json::object settings{{"refresh_interval", value(originals->refresh_interval)}};
  if (originals->replicas_changed) {
    settings["number_of_replicas"] = value(originals->number_of_replicas);
  }
  absl::Status put = client_.UpdateIndexSettings(index, json::object{{"index", settings}});
  // An index deleted since has nothing to put back.
  if (!absl::IsNotFound(put)) {
    RFS_RETURN_IF_ERROR(put);
    absl::Status refreshed = client_.Refresh(index);
    if (!absl::IsNotFound(refreshed)) RFS_RETURN_IF_ERROR(refreshed);
  }
  RFS_RETURN_IF_ERROR(
      coordination::RecordCompletedItem(records_, clock_, restored_id, options_.lock_lease));
  if (options_.on_event) {
    options_.on_event(
        "restored", index,
        StrCat(originals->replicas_changed
                   ? StrCat("number_of_replicas ", Describe(originals->number_of_replicas), ", ")
                   : std::string(),
               "refresh_interval ", Describe(originals->refresh_interval), ", refreshed"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> TargetTuning::RestoreAll(
    const std::vector<std::string>& candidates,
    const std::function<void(const std::string&, const absl::Status&)>& on_failure) {
  std::set<std::string> names(candidates.begin(), candidates.end());
  // Every index that looks tuned: a tuned index this worker does not know by name (another
  // selection, or a run stopped before its snapshot was read) is found too.
  auto answer = client_.GetIndexSettings("", StrCat(kReplicas, ",", kRefresh));
  RFS_RETURN_IF_ERROR(answer.status());
  for (const auto& [index, entry] : *answer) {
    const std::optional<json::object> settings = SettingsOf(*answer, index);
    if (!settings) continue;
    if (StringSetting(*settings, kReplicas) == "0" || StringSetting(*settings, kRefresh) == "-1") {
      names.insert(std::string(index));
    }
  }
  std::vector<std::string> restored;
  for (const std::string& index : names) {
    auto needed = NeedsRestore(index);
    absl::Status status = needed.status();
    if (needed.ok() && *needed) status = Restore(index);
    if (status.ok()) {
      if (needed.ok() && *needed) restored.push_back(index);
      continue;
    }
    if (!on_failure) return status;
    on_failure(index, status);
  }
  return restored;
}

absl::Status WireTargetTuning(const DocumentsToolOptions& options, DocumentsWiring& wiring,
                              const std::string& worker_id, core::IClock& clock, HeldRecords held,
                              bool tune_by_default, TuningWiring& out,
                              coordination::Duration lock_lease) {
  if (!options.tune_target.value_or(tune_by_default) || !options.target || !wiring.client ||
      !options.migration.previous_snapshot_name.empty()) {
    return absl::OkStatus();
  }
  coordination::IWorkCoordinator* records = held.records;
  coordination::IWorkCoordinator* raw = held.raw;
  if (records == nullptr) {
    int exit_code = core::kExitFailure;
    RFS_ASSIGN_OR_RETURN(out.raw_records, OpenCoordinator(options, wiring, worker_id,
                                                          ItemSpace::kWorkerRecords, &exit_code));
    out.records = std::make_unique<coordination::RetryingWorkCoordinator>(
        *out.raw_records, clock, options.migration.coordinator_retries);
    RFS_RETURN_IF_ERROR(out.records->Setup());
    records = out.records.get();
    raw = out.raw_records.get();
  }
  // Each settings request is safe to send twice: passing faults are resent.
  RFS_ASSIGN_OR_RETURN(auto transport, OpenPatientTransport(*options.target, 2));
  TargetTuningOptions tuning;
  tuning.empty_at_shard_setup = !tune_by_default;
  tuning.on_event = options.on_tuning;
  tuning.before_restore = options.before_settings_restore;
  tuning.lock_lease = lock_lease;
  tuning.lock_renewals = raw;
  out.tuning = std::make_unique<TargetTuning>(std::move(transport), *records, clock, tuning);
  return absl::OkStatus();
}

}  // namespace internal

// --- DocumentMigrationWorker's part --------------------------------------------------------

std::optional<std::string> DocumentMigrationWorker::TunableTarget(const std::string& index,
                                                                  bool data_stream,
                                                                  int type_count) const {
  if (options_.target_tuning == nullptr || previous_snapshot_ != nullptr) return std::nullopt;
  // A data stream's backing indices are the stream's; a split index's documents go to several.
  if (data_stream) return std::nullopt;
  if (options_.multi_type_policy == transform::MultiTypePolicy::kSplit && type_count > 1) {
    return std::nullopt;
  }
  return options_.target_index_prefix + index;
}

absl::Status DocumentMigrationWorker::TuningAtShardSetup() {
  if (options_.target_tuning == nullptr || previous_snapshot_ != nullptr) return absl::OkStatus();
  std::vector<std::string> targets;
  for (const std::string& index : SelectedIndices()) {
    const bool stream = snapshot::DataStreamOf(data_streams_, index) != nullptr;
    auto metadata = repository_.ReadIndexMetadata(*snapshot_, index);
    if (!metadata.ok()) return MarkSnapshotReadFailure(metadata.status());
    const int types = static_cast<int>(transform::CountMappingTypes(metadata->mappings));
    if (auto target = TunableTarget(index, stream, types)) targets.push_back(*target);
  }
  return options_.target_tuning->AtShardSetup(targets);
}

absl::Status DocumentMigrationWorker::TuneBeforeItem(const std::string& index, bool data_stream,
                                                     int type_count) {
  const std::optional<std::string> target = TunableTarget(index, data_stream, type_count);
  if (!target) return absl::OkStatus();
  return options_.target_tuning->BeforeBulk(*target);
}

absl::StatusOr<bool> DocumentMigrationWorker::IndexItemsComplete(const std::string& index) {
  auto roots = index_item_roots_.find(index);
  if (roots == index_item_roots_.end()) {
    auto metadata = repository_.ReadIndexMetadata(*snapshot_, index);
    if (!metadata.ok()) return MarkSnapshotReadFailure(metadata.status());
    std::vector<std::string> ids;
    for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
      RFS_ASSIGN_OR_RETURN(std::vector<coordination::WorkItemId> items, ShardItems(index, shard));
      for (const auto& item : items) ids.push_back(item.ToString());
    }
    roots = index_item_roots_.emplace(index, std::move(ids)).first;
  }
  // Each shard's chain: its first item, then the successors each checkpoint handed on.
  std::vector<std::string> pending = roots->second;
  while (!pending.empty()) {
    const std::string id = std::move(pending.back());
    pending.pop_back();
    RFS_ASSIGN_OR_RETURN(auto state, coordinator_.GetWorkItem(id));
    if (!state || !state->completed()) return false;
    for (const std::string& successor : state->successor_ids) pending.push_back(successor);
  }
  return true;
}

absl::Status DocumentMigrationWorker::RestoreIfIndexDone(const std::string& index) {
  const bool stream = snapshot::DataStreamOf(data_streams_, index) != nullptr;
  const std::optional<std::string> target = TunableTarget(index, stream, 0);
  if (!target) return absl::OkStatus();
  RFS_ASSIGN_OR_RETURN(bool needed, options_.target_tuning->NeedsRestore(*target));
  if (!needed) return absl::OkStatus();
  RFS_ASSIGN_OR_RETURN(bool complete, IndexItemsComplete(index));
  if (!complete) return absl::OkStatus();
  return options_.target_tuning->Restore(*target);
}

absl::Status DocumentMigrationWorker::RestoreTunedIndices(bool all_done) {
  if (options_.target_tuning == nullptr || previous_snapshot_ != nullptr) return absl::OkStatus();
  for (const std::string& index : SelectedIndices()) {
    if (!all_done) {
      RFS_RETURN_IF_ERROR(RestoreIfIndexDone(index));
      continue;
    }
    const bool stream = snapshot::DataStreamOf(data_streams_, index) != nullptr;
    if (auto target = TunableTarget(index, stream, 0)) {
      RFS_RETURN_IF_ERROR(options_.target_tuning->Restore(*target));
    }
  }
  return absl::OkStatus();
}

}  // namespace rfs::migration
