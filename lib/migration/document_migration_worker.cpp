// DocumentMigrationWorker: the run (snapshots, transforms, one-time setup) and the loop that takes
// work items until one of the WorkerOutcomes; its events and exit codes. The setup of the shards'
// items is in document_migration_worker_setup.cpp, one grant of an item in
// document_migration_worker_item.cpp.
#include "rfs/migration/document_migration_worker.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <utility>
#include <variant>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/status_payloads.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/migration/worker_metrics.hpp"

#include "absl/strings/cord.h"
#include "migration/document_migration_worker_internal.hpp"

namespace rfs::migration {

using coordination::Lease;
using coordination::WorkItemId;
using reindex::IFailedDocumentSink;

namespace {

absl::Status TagSnapshotRead(absl::Status status) {
  if (!status.ok()) status.SetPayload(core::payload::kSnapshotRead, absl::Cord("1"));
  return status;
}

}  // namespace

int ExitCode(const WorkerSummary& summary) {
  if (summary.docs_failed + summary.docs_without_source > 0) return core::kExitDocumentsFailed;
  return ExitCode(summary.outcome);
}

int ExitCode(WorkerOutcome outcome) {
  switch (outcome) {
    case WorkerOutcome::kItemDone:
      return core::kExitOk;
    case WorkerOutcome::kLeaseHandoff:
    case WorkerOutcome::kStopped:
      return core::kExitHandoffOrStopped;
    case WorkerOutcome::kNoWorkLeft:
      return core::kExitNoWorkLeft;
    case WorkerOutcome::kAllLeasedElsewhere:
      return core::kExitAllLeasedElsewhere;
  }
  return core::kExitFailure;
}

std::string_view ToString(WorkerOutcome outcome) {
  switch (outcome) {
    case WorkerOutcome::kItemDone:
      return "item_done";
    case WorkerOutcome::kLeaseHandoff:
      return "lease_handoff";
    case WorkerOutcome::kNoWorkLeft:
      return "no_work_left";
    case WorkerOutcome::kAllLeasedElsewhere:
      return "all_leased_elsewhere";
    case WorkerOutcome::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::string_view ToString(WorkerEvent::Kind kind) {
  switch (kind) {
    case WorkerEvent::Kind::kShardSetup:
      return "shard_setup";
    case WorkerEvent::Kind::kMetricsEndpoint:
      return "metrics_endpoint";
    case WorkerEvent::Kind::kAcquired:
      return "acquired";
    case WorkerEvent::Kind::kProgress:
      return "progress";
    case WorkerEvent::Kind::kCompleted:
      return "completed";
    case WorkerEvent::Kind::kCheckpointed:
      return "checkpointed";
    case WorkerEvent::Kind::kLeaseLost:
      return "lease_lost";
    case WorkerEvent::Kind::kDocumentWithoutSource:
      return "document_without_source";
    case WorkerEvent::Kind::kShardTooLarge:
      return "shard_too_large";
    case WorkerEvent::Kind::kReleased:
      return "released";
    case WorkerEvent::Kind::kIndexCreatedByTarget:
      return "index_created_by_target";
    case WorkerEvent::Kind::kTargetRefused:
      return "target_refused";
    case WorkerEvent::Kind::kPreserveVersionNotApplied:
      return "preserve_version_not_applied";
    case WorkerEvent::Kind::kRetrying:
      return "retrying";
  }
  return "unknown";
}

bool IsItemOverAttempts(const absl::Status& status) {
  return !status.ok() && status.GetPayload(core::payload::kItemAttempts).has_value();
}

absl::Status MarkSnapshotReadFailure(absl::Status status) { return TagSnapshotRead(status); }

bool IsSnapshotReadFailure(const absl::Status& status) {
  return !status.ok() && status.GetPayload(core::payload::kSnapshotRead).has_value();
}

bool IsStoreMismatch(const absl::Status& status) {
  return !status.ok() && status.GetPayload(core::payload::kStoreMismatch).has_value();
}

bool IsSourcelessIndex(const absl::Status& status) {
  return !status.ok() && status.GetPayload(core::payload::kSourcelessIndex).has_value();
}

bool IsPreserveVersionRefusal(const absl::Status& status) {
  return !status.ok() && status.GetPayload(core::payload::kPreserveVersion).has_value();
}

bool IsDeltaOrderRefusal(const absl::Status& status) {
  return !status.ok() && status.GetPayload(core::payload::kDeltaOrder).has_value();
}

namespace {

// Milliseconds since the epoch as UTC, e.g. 2024-05-01T10:00:00.123Z.
std::string UtcMillis(int64_t millis) {
  const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03dZ", text, static_cast<int>(millis % 1000));
  return out;
}

absl::Status DeltaOrderRefusal(std::string message) {
  absl::Status status = absl::InvalidArgumentError(std::move(message));
  status.SetPayload(core::payload::kDeltaOrder, absl::Cord("1"));
  return status;
}

}  // namespace

absl::Status CheckDeltaSnapshots(const snapshot::SnapshotRepository& repository,
                                 const snapshot::SnapshotEntry& current,
                                 const snapshot::SnapshotEntry& previous) {
  if (previous.uuid == current.uuid) {
    return DeltaOrderRefusal(core::StrCat(
        "--previous-snapshot-name names snapshot '", previous.name,
        "', the snapshot being migrated: a delta needs an older snapshot than this one"));
  }
  // The start times of the snapshots' own (checksummed) snap-*.dat, not index-N's copy.
  auto current_info = repository.ReadSnapshotInfo(current);
  if (!current_info.ok()) return TagSnapshotRead(current_info.status());
  auto previous_info = repository.ReadSnapshotInfo(previous);
  if (!previous_info.ok()) {
    return TagSnapshotRead(core::WithContext(previous_info.status(), "--previous-snapshot-name"));
  }
  const int64_t now = current_info->start_time;
  const int64_t before = previous_info->start_time;
  if (now <= 0 || before <= 0) {
    return DeltaOrderRefusal(core::StrCat(
        "snapshot '", now <= 0 ? current.name : previous.name,
        "' records no start time, so whether --previous-snapshot-name '", previous.name,
        "' is older than '", current.name, "' is unknown: a delta needs an older snapshot"));
  }
  if (before >= now) {
    // A delta back in time would delete every document added between the two.
    return DeltaOrderRefusal(core::StrCat(
        "--previous-snapshot-name '", previous.name, "' started at ", UtcMillis(before),
        before == now ? ", the same time as" : ", after", " the snapshot being migrated, '",
        current.name, "' (", UtcMillis(now),
        "): a delta goes from an older snapshot to a newer one (were the two names swapped?)"));
  }
  return absl::OkStatus();
}

DocumentMigrationWorker::DocumentMigrationWorker(const snapshot::SnapshotRepository& repository,
                                                 coordination::IWorkCoordinator& coordinator,
                                                 SinkFactory sinks,
                                                 IFailedDocumentSink* failed_sink,
                                                 core::IClock& clock,
                                                 DocumentMigrationOptions options)
    : repository_(repository),
      raw_coordinator_(coordinator),
      retrying_(coordinator, clock, options.coordinator_retries),
      coordinator_(retrying_),
      sinks_(std::move(sinks)),
      failed_sink_(failed_sink),
      clock_(clock),
      options_(std::move(options)),
      memory_budget_(std::make_unique<core::MemoryBudget>(options_.reindexer.max_in_flight_bytes)) {
  options_.reindexer.memory_budget = memory_budget_.get();
  repository_.repo().ShareMemoryBudget(memory_budget_.get());
}

DocumentMigrationWorker::~DocumentMigrationWorker() {
  repository_.repo().ShareMemoryBudget(nullptr);
}

void DocumentMigrationWorker::Emit(WorkerEvent event) const {
  if (WorkerCounters* c = options_.counters) {
    switch (event.kind) {
      case WorkerEvent::Kind::kAcquired:
        c->work_items.With({"acquired"}).Add();
        break;
      case WorkerEvent::Kind::kCompleted:
        c->work_items.With({"completed"}).Add();
        break;
      case WorkerEvent::Kind::kCheckpointed:
        c->work_items.With({"handed_on"}).Add();
        break;
      case WorkerEvent::Kind::kReleased:
        c->work_items.With({"released"}).Add();
        break;
      case WorkerEvent::Kind::kLeaseLost:
        c->work_items.With({"lost"}).Add();
        break;
      case WorkerEvent::Kind::kProgress:
        c->concurrency.Set(static_cast<int64_t>(event.concurrency));
        break;
      default:
        break;
    }
  }
  if (options_.on_event) options_.on_event(event);
}

absl::StatusOr<DocumentMigrationWorker::ItemResult> DocumentMigrationWorker::MigrateItem(
    const Lease& lease) {
  std::optional<coordination::ItemProgress> progress;
  auto result = MigrateLeasedItem(lease, progress);
  if (result.ok()) return result;
  // The run ends in an error: give the item back now, with its cursor, so that the next worker
  // resumes there at once instead of waiting out the lease (and getting a doubled one). Best
  // effort: a lost lease or an unreachable store leaves it to expire.
  if (coordinator_.ReleaseWorkItem(lease, progress).ok()) {
    WorkerEvent event;
    event.kind = WorkerEvent::Kind::kReleased;
    event.work_item = lease.work_item_id;
    if (auto item = WorkItemId::Parse(lease.work_item_id); item.ok()) {
      event.index = item->index_name;
      event.shard = static_cast<int>(item->shard);
      event.starting_cursor = item->starting_cursor;
    }
    if (progress) event.cursor = progress->next_cursor;
    event.message = core::StrCat("released after an error: ", result.status().message());
    Emit(std::move(event));
  }
  return result;
}

// Everything one grant of an item holds, from its opening to its end.
absl::StatusOr<WorkerSummary> DocumentMigrationWorker::Run() {
  const auto started = clock_.Now();
  summary_ = {};
  absl::Status status = RunLoop();
  // The counts stand whether the run ended well or not: the caller reports them either way.
  summary_.elapsed = clock_.Now() - started;
  if (!status.ok()) return status;
  return summary_;
}

absl::Status DocumentMigrationWorker::RunLoop() {
  RFS_RETURN_IF_ERROR(PrepareRun());
  RFS_RETURN_IF_ERROR(CheckSourceStorage());
  RFS_RETURN_IF_ERROR(CheckPreserveVersion());
  RFS_RETURN_IF_ERROR(coordinator_.Setup());
  coordination::OneTimeSetupOptions setup_options;
  setup_options.initial_lease = options_.initial_lease;
  // Setup takes milliseconds to seconds (one metadata read per index): poll for it briskly so
  // that workers started together all get work.
  setup_options.initial_backoff = std::chrono::milliseconds(20);
  setup_options.max_backoff = std::chrono::seconds(5);
  RFS_RETURN_IF_ERROR(coordination::RunOneTimeSetup(
      coordinator_, clock_, coordination::kShardSetupWorkItemId,
      [&](const Lease&) {
        // Before any item exists, so before any bulk (target_tuning.cpp).
        RFS_RETURN_IF_ERROR(TuningAtShardSetup());
        return SetupShards();
      },
      setup_options));
  RFS_RETURN_IF_ERROR(CheckStoreIsForThisRun());
  // An index whose items were all completed by a worker killed before it restored the index's
  // settings is restored now.
  RFS_RETURN_IF_ERROR(RestoreTunedIndices(/*all_done=*/false));
  return TakeItems();
}

absl::Status DocumentMigrationWorker::PrepareRun() {
  if (options_.doc_transformer_config) {
    transform::TransformerContext context;
    context.limits = options_.transform_limits;
    context.limits.stop_requested = options_.stop_requested;
    context.limits.shutdown_grace = options_.shutdown_timeout;
    auto loaded = transform::LoadTransformers(*options_.doc_transformer_config, context);
    if (!loaded.ok()) {
      return absl::InvalidArgumentError(
          core::StrCat("--doc-transformer-config: ", loaded.status().message()));
    }
    transformer_ = *std::move(loaded);
  }
  if (options_.snapshot_name.empty()) {
    auto latest = repository_.LatestSnapshot();
    if (!latest.ok()) return TagSnapshotRead(latest.status());
    snapshot_ = *latest;
  } else {
    auto found = repository_.FindSnapshot(options_.snapshot_name);
    if (!found.ok()) return TagSnapshotRead(found.status());
    snapshot_ = *found;
  }
  if (!options_.previous_snapshot_name.empty()) {
    auto found = repository_.FindSnapshot(options_.previous_snapshot_name);
    if (!found.ok()) {
      return TagSnapshotRead(core::WithContext(found.status(), "--previous-snapshot-name"));
    }
    previous_snapshot_ = *found;
    RFS_RETURN_IF_ERROR(CheckDeltaSnapshots(repository_, *snapshot_, *previous_snapshot_));
    const std::vector<std::string> now = repository_.IndicesIn(*snapshot_);
    for (const std::string& index : repository_.IndicesIn(*previous_snapshot_)) {
      if (!std::binary_search(now.begin(), now.end(), index) &&
          transform::SelectIndex(options_.index_allowlist, index, "")) {
        summary_.indices_only_in_previous.push_back(index);
      }
    }
  }
  if (options_.trial()) {
    summary_.trial = core::StrCat(
        options_.max_docs_per_shard > 0
            ? core::StrCat("at most ", options_.max_docs_per_shard, " documents of each shard")
            : std::string("every document"),
        " into indices prefixed '", options_.target_index_prefix, "'");
  }
  {
    auto streams = repository_.ReadDataStreams(*snapshot_);
    if (!streams.ok()) return TagSnapshotRead(streams.status());
    data_streams_ = *std::move(streams);
  }
  return absl::OkStatus();
}

absl::Status DocumentMigrationWorker::TakeItems() {
  while (true) {
    if (options_.stop_requested != nullptr && options_.stop_requested->load()) {
      summary_.outcome = WorkerOutcome::kStopped;
      break;
    }
    auto outcome = coordinator_.AcquireNextWorkItem(options_.initial_lease);
    if (!outcome.ok()) return outcome.status();
    if (std::holds_alternative<coordination::NoAvailableWork>(*outcome)) {
      // Every item is complete: no index stays tuned past the load.
      RFS_RETURN_IF_ERROR(RestoreTunedIndices(/*all_done=*/true));
      summary_.outcome = WorkerOutcome::kNoWorkLeft;
      break;
    }
    if (std::holds_alternative<coordination::AllLeasedElsewhere>(*outcome)) {
      summary_.outcome = WorkerOutcome::kAllLeasedElsewhere;
      break;
    }
    const auto* acquired = std::get_if<coordination::Acquired>(&*outcome);
    if (acquired == nullptr) continue;
    if (coordination::IsBookkeepingItem(acquired->lease.work_item_id) &&
        acquired->lease.work_item_id != coordination::kShardSetupWorkItemId) {
      // Caught between its creation and its completion by the worker that records it: given
      // back for that worker (a lost lease means it has it already). A setup description (words
      // for messages alone) is completed instead: no later run records it again, so one whose
      // recorder died would otherwise stay open, and "no work left" never come.
      const std::string_view id = acquired->lease.work_item_id;
      if (id.starts_with(coordination::kSetupDescribedPrefix) ||
          id.starts_with(coordination::kSetupDescriptionPrefix)) {
        absl::Status completed = coordinator_.CompleteWorkItem(acquired->lease);
        if (!completed.ok() && !coordination::IsLeaseLost(completed)) return completed;
        continue;
      }
      absl::Status released = coordinator_.ReleaseWorkItem(acquired->lease);
      if (!released.ok() && !coordination::IsLeaseLost(released)) return released;
      continue;
    }
    if (options_.max_item_attempts > 0 && acquired->lease.generation > options_.max_item_attempts) {
      // Its holders keep dying or failing on it: give it back and end the run, naming it.
      coordinator_.ReleaseWorkItem(acquired->lease).IgnoreError();
      // Its attempts are used up: no retry of this run can help (core::NotRetryable).
      absl::Status over = core::NotRetryable(absl::ResourceExhaustedError(core::StrCat(
          "work item ", acquired->lease.work_item_id, " was acquired ", acquired->lease.generation,
          " times without finishing (limit ", options_.max_item_attempts, ")")));
      over.SetPayload(core::payload::kItemAttempts, absl::Cord("1"));
      return over;
    }
    RFS_ASSIGN_OR_RETURN(ItemResult result, MigrateItem(acquired->lease));
    if (result.kind == ItemResult::Kind::kLeaseLost) {
      ++summary_.items_lost;
      continue;
    }
    if (result.kind == ItemResult::Kind::kCompleted) {
      ++summary_.items_completed;
      if (options_.single_work_item) {
        summary_.outcome = WorkerOutcome::kItemDone;
        break;
      }
      continue;
    }
    if (result.kind == ItemResult::Kind::kStopped) {
      summary_.outcome = WorkerOutcome::kStopped;
      break;
    }
    if (result.kind == ItemResult::Kind::kCheckpointed) ++summary_.items_checkpointed;
    summary_.outcome = WorkerOutcome::kLeaseHandoff;
    break;
  }
  return absl::OkStatus();
}

}  // namespace rfs::migration
