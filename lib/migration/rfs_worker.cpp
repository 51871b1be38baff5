// RfsWorker: the run, its shared records, and a phase run once across the workers (see
// rfs_worker_internal.hpp for the other phases).
#include <algorithm>
#include <mutex>

#include <boost/json.hpp>

#include "rfs/core/backoff.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/status_payloads.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/migration/redrive.hpp"
#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/retrying_transport.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "migration/document_migration_worker_internal.hpp"
#include "migration/document_pipeline_internal.hpp"
#include "migration/rfs_worker_internal.hpp"
#include <unistd.h>

namespace rfs::migration::internal {
namespace {

// Words that travel as the creator (worker id) of a record: every store keeps a creator, but
// as one line of bounded length, so control characters become spaces and the text is cut.
std::string CreatorWords(std::string words) {
  for (char& c : words) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (words.size() > 240) words = words.substr(0, 237) + "...";
  return words;
}

}  // namespace

std::string PhaseRecord(WorkerPhase phase) {
  return StrCat("phase_", static_cast<int>(phase) + 1, "_", ToString(phase));
}

std::string IndexRecord(std::string_view index) {
  return StrCat("index__", core::Base64UrlEncode(index));
}

absl::Status PhaseFailed(std::string reason) {
  absl::Status status = absl::FailedPreconditionError(reason);
  status.SetPayload(core::payload::kPhaseFailed, absl::Cord("1"));
  return status;
}

bool IsPhaseFailure(const absl::Status& status) {
  return !status.ok() && status.GetPayload(core::payload::kPhaseFailed).has_value();
}

RfsWorkerResult AllPhaseWorker::Run() {
  DocumentsToolOptions& docs = options_.documents;
  result_.worker_id = docs.worker_id.empty() ? DefaultWorkerId() : docs.worker_id;
  docs.worker_id = result_.worker_id;
  result_.snapshot_name = docs.migration.snapshot_name;
  if (result_.snapshot_name.empty() && options_.source) {
    result_.snapshot_name = DeriveSnapshotName(options_);
  }
  docs.migration.snapshot_name = result_.snapshot_name;
  if (options_.max_attempts < 1) {
    return Finish(absl::InvalidArgumentError("--max-attempts must be at least 1"),
                  core::kExitUsage);
  }
  if (options_.source && !options_.source_repository) {
    return Finish(
        absl::InvalidArgumentError("--source-host needs the repository to register on the source: "
                                   "--snapshot-local-dir (as the source's path.repo sees it) or "
                                   "--s3-repo-uri"),
        core::kExitUsage);
  }
  if (auto error =
          internal::WireTransformsAndMetrics(docs, "RfsWorker", result_.worker_id, wiring_)) {
    return Finish(error->status, error->exit_code);
  }
  if (auto error = internal::WireTarget(docs, result_.worker_id, wiring_)) {
    return Finish(error->status, error->exit_code);
  }
  result_.failed_documents_path = wiring_.failed_documents_path;
  if (options_.verify_all && !wiring_.client) {
    return Finish(absl::InvalidArgumentError(
                      "--verify-all fetches every document from a target cluster "
                      "(--target-host); the embedded target (--output-dir) is verified by "
                      "its count and sample (--verify-sample)"),
                  core::kExitUsage);
  }

  if (options_.verify_only) {
    if (auto status = OpenRepository(); !status.ok())
      return Finish(status, core::kExitSnapshotUnreadable);
    if (options_.verify_all) return VerifyAllOnly();
    auto report = Verify();
    if (!report.ok()) return Finish(report.status(), core::kExitFailure);
    result_.verify = *report;
    if (!report->ok()) return Finish(PhaseFailed(MissingReason(*report)), core::kExitPhaseFailed);
    return Finish(absl::OkStatus(), 0);
  }

  if (options_.restore_target_settings) return RestoreTargetSettings();

  // What can be checked without the store is checked first, so that a mistyped option is a
  // usage error (64) and never a FAILED record every later worker would meet.
  if (auto code = CheckBeforeTheStore()) return Finish(precheck_status_, *code);

  int exit_code = core::kExitFailure;
  if (auto status = OpenRecords(&exit_code); !status.ok()) return Finish(status, exit_code);
  if (auto status = ReadResetEpoch(); !status.ok()) return Finish(status, core::kExitFailure);
  if (options_.reset_failed) {
    if (auto status = ResetFailed(); !status.ok()) return Finish(status, core::kExitFailure);
  }
  if (auto status = WireTuning(/*always=*/false); !status.ok()) {
    return Finish(status, core::kExitFailure);
  }

  absl::Status status = RunPhases();
  if ((stopped_ || !status.ok()) && exit_code_override_ != core::kExitUsage) {
    RestoreTunedAfterFailure();
  }
  if (stopped_) return Finish(absl::OkStatus(), core::kExitHandoffOrStopped);
  if (IsPhaseFailure(status)) {
    result_.failure = std::string(status.message());
    return Finish(status, core::kExitPhaseFailed);
  }
  if (!status.ok()) return Finish(status, exit_code_override_.value_or(core::kExitFailure));
  return Finish(absl::OkStatus(),
                result_.documents.docs_failed > 0 ? core::kExitDocumentsFailed : 0);
}

absl::Status AllPhaseWorker::OpenRecords(int* exit_code) {
  auto records = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                           internal::ItemSpace::kWorkerRecords, exit_code);
  if (!records.ok()) return records.status();
  *exit_code = core::kExitFailure;
  raw_records_ = *std::move(records);
  // Every call on the records meets the target's passing faults (429, 5xx, resets) the way the
  // document workers' calls do: retried with backoff. A lost lease (another worker won) is not.
  records_ = std::make_unique<coordination::RetryingWorkCoordinator>(*raw_records_, clock_,
                                                                     CoordinatorRetries());
  return records_->Setup();
}

// Target tuning (target_tuning_internal.hpp) over this worker's records; `always` for
// --restore-target-settings, whatever --no-tune-target or a delta says.
absl::Status AllPhaseWorker::WireTuning(bool always) {
  DocumentsToolOptions options = options_.documents;
  if (always) {
    options.tune_target = true;
    options.migration.previous_snapshot_name.clear();
  }
  options.on_tuning = [this](const std::string& kind, const std::string& index,
                             const std::string& what) {
    Emit(WorkerPhase::kDocuments, kind, StrCat("index ", index), what);
  };
  // An index's tuning lock is a record too: no longer than the phases' records.
  return internal::WireTargetTuning(
      options, wiring_, result_.worker_id, clock_, {records_.get(), raw_records_.get()},
      /*tune_by_default=*/true, tuning_,
      std::min<coordination::Duration>(internal::kDefaultTuningLockLease, options_.record_lease));
}

// A worker that fails or is stopped leaves no index tuned (a load still under way in other
// workers goes on untuned); a killed one leaves that to the next worker of the session or to
// --restore-target-settings.
void AllPhaseWorker::RestoreTunedAfterFailure() {
  if (!tuning_.tuning) return;
  auto restored =
      tuning_.tuning->RestoreAll({}, [&](const std::string& index, const absl::Status& status) {
        Emit(WorkerPhase::kDocuments, "failed", StrCat("index ", index),
             StrCat("still tuned (its settings could not be put back: ", status.message(),
                    "); run RfsWorker --restore-target-settings"));
      });
  if (!restored.ok()) {
    Emit(WorkerPhase::kDocuments, "failed", "tuned indices",
         StrCat("their settings could not be put back: ", restored.status().message(),
                "; run RfsWorker --restore-target-settings"));
  }
}

// --restore-target-settings: only the restore of every tuned index of this store.
RfsWorkerResult AllPhaseWorker::RestoreTargetSettings() {
  if (!options_.documents.target) {
    return Finish(absl::InvalidArgumentError("--restore-target-settings needs --target-host"),
                  core::kExitUsage);
  }
  int exit_code = core::kExitFailure;
  auto records = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                           internal::ItemSpace::kWorkerRecords, &exit_code);
  if (!records.ok()) return Finish(records.status(), exit_code);
  raw_records_ = *std::move(records);
  records_ = std::make_unique<coordination::RetryingWorkCoordinator>(*raw_records_, clock_,
                                                                     CoordinatorRetries());
  if (auto status = records_->Setup(); !status.ok()) return Finish(status, core::kExitFailure);
  if (auto status = WireTuning(/*always=*/true); !status.ok()) {
    return Finish(status, core::kExitFailure);
  }
  std::string failures;
  auto restored =
      tuning_.tuning->RestoreAll({}, [&](const std::string& index, const absl::Status& status) {
        failures += StrCat(failures.empty() ? "" : "; ", index, ": ", status.message());
      });
  if (!restored.ok()) return Finish(restored.status(), core::kExitFailure);
  Emit(WorkerPhase::kDocuments, "completed", "restore target settings",
       restored->empty() ? std::string("no index was left tuned")
                         : StrCat(restored->size(), " indices restored"));
  if (!failures.empty()) {
    return Finish(absl::UnavailableError(StrCat("not restored: ", failures)), core::kExitFailure);
  }
  return Finish(absl::OkStatus(), 0);
}

absl::Status AllPhaseWorker::OpenRepository() {
  auto repository = OpenSnapshotRepository(options_.documents.repository);
  if (!repository.ok()) return repository.status();
  wiring_.repository = *std::move(repository);
  auto snapshot = result_.snapshot_name.empty()
                      ? wiring_.repository->LatestSnapshot()
                      : wiring_.repository->FindSnapshot(result_.snapshot_name);
  if (!snapshot.ok()) return snapshot.status();
  snapshot_ = *snapshot;
  result_.snapshot_name = snapshot_->name;
  options_.documents.migration.snapshot_name = snapshot_->name;
  auto streams = wiring_.repository->ReadDataStreams(*snapshot_);
  if (!streams.ok()) return streams.status();
  data_streams_ = *std::move(streams);
  return absl::OkStatus();
}

// nullopt when the run may touch the store; else the exit code (precheck_status_ says why).
std::optional<int> AllPhaseWorker::CheckBeforeTheStore() {
  // A malformed URL is a usage error; a cluster that does not answer within the patient
  // transport's half minute is named, with nothing recorded.
  auto check_cluster = [&](const net::HttpTransportOptions& cluster, const char* role,
                           const char* option) -> std::optional<int> {
    auto transport = internal::OpenPatientTransport(cluster, 2);
    if (!transport.ok()) {
      precheck_status_ = core::WithContext(transport.status(), option);
      return core::kExitUsage;
    }
    opensearch::OpenSearchClient client(**transport);
    if (auto version = client.GetVersion(); !version.ok()) {
      precheck_status_ =
          core::WithContext(version.status(), StrCat("the ", role, " cluster at ", cluster.endpoint,
                                                     " does not answer (check ", option, ")"));
      return core::IsRetryable(version.status()) ? core::kExitFailure : core::kExitUsage;
    }
    return std::nullopt;
  };
  if (options_.source) {
    if (auto code = check_cluster(*options_.source, "source", "--source-host")) return code;
  }
  if (options_.documents.target) {
    if (auto code = check_cluster(*options_.documents.target, "target", "--target-host")) {
      return code;
    }
  }
  if (options_.source) return std::nullopt;
  // No source: the snapshot must be in the repository already.
  absl::Status status = OpenRepository();
  if (status.ok()) {
    // A delta from this snapshot or a newer one is refused before the store is touched (a
    // previous snapshot not found is reported by the documents phase, as before).
    const std::string& previous = options_.documents.migration.previous_snapshot_name;
    if (previous.empty()) return std::nullopt;
    auto found = wiring_.repository->FindSnapshot(previous);
    if (!found.ok()) return std::nullopt;
    absl::Status order = CheckDeltaSnapshots(*wiring_.repository, *snapshot_, **found);
    if (!IsDeltaOrderRefusal(order)) return std::nullopt;
    precheck_status_ = order;
    return core::kExitUsage;
  }
  if (absl::IsNotFound(status) && !result_.snapshot_name.empty()) {
    precheck_status_ = core::WithContext(status, "--snapshot-name");
    return core::kExitUsage;
  }
  precheck_status_ = status;
  return core::kExitSnapshotUnreadable;
}

// Resets (--reset-failed) are records failed_reset_1, _2, ...; after N of them the FAILED
// record is failed.N and each record and work item has N x --max-attempts attempts.
absl::Status AllPhaseWorker::ReadResetEpoch() {
  while (true) {
    auto reset = records_->GetWorkItem(StrCat(kResetPrefix, epoch_ + 1));
    if (!reset.ok()) return reset.status();
    if (!*reset) return absl::OkStatus();
    ++epoch_;
  }
}

absl::Status AllPhaseWorker::ResetFailed() {
  auto failed = records_->GetWorkItem(FailedRecord());
  if (!failed.ok()) return failed.status();
  if (!*failed) {
    Emit(WorkerPhase::kSnapshot, "reset", "", "the migration is not FAILED: nothing to reset");
    return absl::OkStatus();
  }
  RFS_RETURN_IF_ERROR(coordination::RecordCompletedItem(
      *records_, clock_, StrCat(kResetPrefix, epoch_ + 1), options_.record_lease));
  RFS_RETURN_IF_ERROR(ReadResetEpoch());
  Emit(WorkerPhase::kSnapshot, "reset", "",
       StrCat("the FAILED mark is cleared (reset ", epoch_,
              "); phases go on where they stopped, each record with ", options_.max_attempts,
              " more attempts"));
  return absl::OkStatus();
}

// Sleeps `duration`, waking early when a stop is requested.
void AllPhaseWorker::SleepUnlessStopped(std::chrono::milliseconds duration) {
  const auto until = clock_.Now() + duration;
  while (!StopRequested() && clock_.Now() < until) {
    clock_.SleepFor(std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(100),
        std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_.Now()) +
            std::chrono::milliseconds(1)));
  }
}

// The migration's FAILED record, if any: its reason.
absl::Status AllPhaseWorker::CheckFailed() {
  auto failed = records_->GetWorkItem(FailedRecord());
  if (!failed.ok()) return failed.status();
  if (!*failed) return absl::OkStatus();
  std::string reason = (*failed)->creator_id;
  if (reason.starts_with(kFailedPrefix)) reason = reason.substr(kFailedPrefix.size());
  return PhaseFailed(StrCat("the migration FAILED: ", reason,
                            " (after fixing the cause, run once with --reset-failed)"));
}

// Records the failure (the first one stands) and returns it as every worker will see it. The
// reason travels as the creator of the FAILED record, which every store keeps.
absl::Status AllPhaseWorker::MarkFailed(WorkerPhase phase, std::string_view item,
                                        std::string_view why) {
  const std::string reason =
      CreatorWords(StrCat(kFailedPrefix, "phase ", ToString(phase), " (", item, "): ", why));
  int exit_code = core::kExitFailure;
  auto marker = internal::OpenCoordinator(options_.documents, wiring_, reason,
                                          internal::ItemSpace::kWorkerRecords, &exit_code);
  if (marker.ok()) {
    coordination::RetryingWorkCoordinator retrying(**marker, clock_, CoordinatorRetries());
    auto created = retrying.CreateUnassignedWorkItem(FailedRecord(), 0);
    if (!created.ok()) return created.status();
  } else {
    return marker.status();
  }
  Emit(phase, "failed", std::string(item), std::string(why));
  absl::Status recorded = CheckFailed();
  return recorded.ok() ? PhaseFailed(reason) : recorded;
}

// Runs `body` once across all workers under the lease of `record`. kDone once the record is
// complete (whoever ran it); kBusy when another worker holds it and `wait` is false.
absl::StatusOr<AllPhaseWorker::Once> AllPhaseWorker::RunOnce(
    WorkerPhase phase, const std::string& record, const std::string& item, bool wait,
    const std::function<absl::Status()>& body) {
  int transient_rounds = 0;
  while (true) {
    RFS_RETURN_IF_ERROR(CheckFailed());
    if (StopRequested()) {
      stopped_ = true;
      return absl::CancelledError("stopped by a signal");
    }
    auto outcome = records_->AcquireWorkItem(record, options_.record_lease);
    if (!outcome.ok()) {
      if (!core::IsRetryable(outcome.status())) return outcome.status();
      Backoff();
      continue;
    }
    if (std::holds_alternative<coordination::AlreadyCompleted>(*outcome)) return Once::kDone;
    if (auto* busy = std::get_if<coordination::AllLeasedElsewhere>(&*outcome)) {
      if (!wait) return Once::kBusy;
      Emit(phase, "waiting", item, "held by another worker");
      Backoff(std::min<std::chrono::milliseconds>(
          std::chrono::duration_cast<std::chrono::milliseconds>(busy->retry_after) +
              std::chrono::milliseconds(100),
          std::chrono::milliseconds(1500)));
      continue;
    }
    const Lease lease = std::get<coordination::Acquired>(*outcome).lease;
    // A record's progress counts the grants given back after a transient error or a stop:
    // those are not failed attempts, only grants that died or failed for good are.
    coordination::ItemProgress given_back =
        lease.recorded_progress.value_or(coordination::ItemProgress{});
    const int64_t attempts = lease.generation - static_cast<int64_t>(given_back.docs);
    if (attempts > AttemptLimit()) {
      return MarkFailed(phase, item,
                        StrCat("not completed in ", AttemptLimit(),
                               " attempts (the workers holding it died or failed)"));
    }
    Emit(phase, "started", item, StrCat("attempt ", attempts));
    Lease current = lease;
    absl::Status status = RunGuarded(phase, item, lease, given_back, body, current);
    RFS_ASSIGN_OR_RETURN(std::optional<Once> settled,
                         Settle(phase, item, status, current, given_back, transient_rounds));
    if (settled) return *settled;
  }
}

// `body` run under `lease`, which a guard renews meanwhile (a lost lease closes the gate), its
// transient errors (a source or target not up yet, 429, 5xx, resets) retried for up to one
// lease duration; `current` is the lease as last renewed.
absl::Status AllPhaseWorker::RunGuarded(WorkerPhase phase, const std::string& item,
                                        const Lease& lease,
                                        const coordination::ItemProgress& given_back,
                                        const std::function<absl::Status()>& body, Lease& current) {
  // A record has no cursor: a grant that renews its lease counts as moving (its renewals
  // record the cursor one past the one it was granted with), which takes back the doubling its
  // grant added. So a record's lease doubles only after a grant that never renewed (dead or
  // frozen within a quarter of its lease), as a shard's does after one that moved nothing;
  // holders killed while at work no longer make every later wait twice as long.
  coordination::ItemProgress renewing = given_back;
  ++renewing.next_cursor;
  // Renewals go to the store directly: a failed one is tried again at the next interval.
  HealthGuard guard(
      *raw_records_, clock_, lease,
      [this](const std::string& reason) {
        lease_gate_.Close(reason);
        if (options_.on_lease_lost) options_.on_lease_lost(reason);
      },
      renewing);
  absl::Status status = body();
  // Transient errors (a source or target not up yet, 429, 5xx, resets) are retried under
  // this lease, which the guard keeps renewing, for up to one lease duration.
  const auto retry_until = clock_.Now() + options_.record_lease;
  for (int attempt = 1; core::IsRetryable(status) && !StopRequested() && clock_.Now() < retry_until;
       ++attempt) {
    Emit(phase, "waiting", item, StrCat("retrying after: ", status.message()));
    SleepUnlessStopped(std::chrono::duration_cast<std::chrono::milliseconds>(core::BackoffWait(
        std::chrono::milliseconds(250), std::chrono::seconds(15), attempt, rng_)));
    if (StopRequested()) break;
    status = body();
  }
  current = guard.lease();
  return status;
}

// The record after an attempt: completed (kDone), given back or failed (an error), or to be
// acquired again (nullopt: lost to another worker, or given back after a backoff).
// `given_back` counts the grants given back.
absl::StatusOr<std::optional<AllPhaseWorker::Once>> AllPhaseWorker::Settle(
    WorkerPhase phase, const std::string& item, const absl::Status& status, const Lease& current,
    coordination::ItemProgress& given_back, int& transient_rounds) {
  if (lease_gate_.closed()) {
    // The record may be another worker's now: neither completed nor given back from here.
    exit_code_override_ = core::kExitHandoffOrStopped;
    return absl::AbortedError(lease_gate_.reason());
  }
  ++given_back.docs;
  if (status.ok()) {
    absl::Status completed = records_->CompleteWorkItem(current);
    if (coordination::IsLeaseLost(completed)) return std::nullopt;  // another will, or did
    RFS_RETURN_IF_ERROR(completed);
    Emit(phase, "completed", item, "");
    return std::optional<Once>(Once::kDone);
  }
  if (IsPhaseFailure(status)) {
    records_->ReleaseWorkItem(current).IgnoreError();
    return status;
  }
  if (absl::IsCancelled(status) || (StopRequested() && core::IsRetryable(status))) {
    records_->ReleaseWorkItem(current, given_back).IgnoreError();
    stopped_ = true;
    return absl::CancelledError("stopped by a signal");
  }
  if (IsSnapshotReadFailure(status)) {
    // Not FAILED: once the repository is readable again, the next worker goes on.
    records_->ReleaseWorkItem(current, given_back).IgnoreError();
    exit_code_override_ = core::kExitSnapshotUnreadable;
    return status;
  }
  if (!core::IsRetryable(status)) {
    // An attempt that failed for good: given back (counted), so that after --reset-failed
    // the next worker takes the record at once instead of waiting out this lease.
    records_->ReleaseWorkItem(current).IgnoreError();
    return MarkFailed(phase, item, std::string(status.message()));
  }
  // Still transient after a whole lease of retries: give the record back (not an attempt).
  // After three such leases the worker ends (exit 1, nothing FAILED): a target or source
  // that never answers is more likely a wrong option than a passing fault.
  records_->ReleaseWorkItem(current, given_back).IgnoreError();
  if (++transient_rounds >= 3) {
    return core::WithContext(status, StrCat(item,
                                            ": still failing after three leases of "
                                            "retries"));
  }
  Backoff();
  return std::nullopt;
}

absl::Status AllPhaseWorker::RunPhases() {
  // The records in this store must be this migration's: a store set up for another snapshot
  // or other allowlists would report phases COMPLETED that never ran for this one. First by
  // the snapshot's name and the options, then, once the snapshot exists, by its uuid (a later
  // snapshot of the same name is another migration).
  RFS_RETURN_IF_ERROR(CheckRecordsAreForThisRun(kRunForRecord, RunIdentity()));
  // 1: the snapshot.
  RFS_RETURN_IF_ERROR(
      RunOnce(WorkerPhase::kSnapshot, PhaseRecord(WorkerPhase::kSnapshot), "snapshot", true, [&] {
        return SnapshotPhase();
      }).status());
  if (auto status = OpenRepository(); !status.ok()) {
    exit_code_override_ = core::kExitSnapshotUnreadable;
    return core::WithContext(status, "the snapshot cannot be read");
  }
  RFS_RETURN_IF_ERROR(CheckRecordsAreForThisRun(
      kRunSnapshotRecord, StrCat("snapshot '", snapshot_->name, "' with uuid ", snapshot_->uuid)));
  // 2: templates.
  RFS_RETURN_IF_ERROR(
      RunOnce(WorkerPhase::kMetadata, PhaseRecord(WorkerPhase::kMetadata), "templates", true, [&] {
        return Metadata(std::nullopt);
      }).status());
  // 3: the index records, then each index; busy ones are left for a later round.
  RFS_RETURN_IF_ERROR(
      RunOnce(WorkerPhase::kIndices, "phase_3_index_setup", "index setup", true, [&] {
        return SetupIndexRecords();
      }).status());
  std::vector<std::string> indices = SelectedIndices();
  while (!indices.empty()) {
    std::vector<std::string> busy;
    for (const std::string& index : indices) {
      RFS_ASSIGN_OR_RETURN(
          Once once, RunOnce(WorkerPhase::kIndices, IndexRecord(index), StrCat("index ", index),
                             false, [&] { return Metadata(index); }));
      if (once == Once::kBusy) busy.push_back(index);
    }
    if (!busy.empty()) {
      Emit(WorkerPhase::kIndices, "waiting", "",
           StrCat(busy.size(), " indices held by other workers"));
      Backoff();
    }
    indices = std::move(busy);
  }
  RFS_RETURN_IF_ERROR(
      RunOnce(WorkerPhase::kIndices, PhaseRecord(WorkerPhase::kIndices), "indices", true, [] {
        return absl::OkStatus();
      }).status());
  // 4: documents, until every shard item is complete.
  RFS_RETURN_IF_ERROR(DocumentsPhase());
  // 5: verify.
  if (options_.skip_verify) return absl::OkStatus();
  if (options_.verify_all) return VerifyAllPhase();
  return RunOnce(WorkerPhase::kVerify, PhaseRecord(WorkerPhase::kVerify), "verify", true,
                 [&]() -> absl::Status {
                   auto report = Verify();
                   if (!report.ok()) return report.status();
                   result_.verify = *report;
                   if (!report->ok()) {
                     return MarkFailed(WorkerPhase::kVerify, "verify", MissingReason(*report));
                   }
                   return absl::OkStatus();
                 })
      .status();
}

// What decides the phases' work: the snapshot (by name, known before phase 1 creates it; the
// documents' store also checks its uuid) and every selection and placement option.
std::string AllPhaseWorker::RunIdentity() const {
  auto list = [](const transform::Allowlist& allowlist) {
    std::string out;
    for (const auto& entry : allowlist.entries()) out += StrCat(out.empty() ? "" : ",", entry);
    return out.empty() ? std::string("(default)") : out;
  };
  return StrCat(
      "snapshot '", result_.snapshot_name, "', --index-allowlist ",
      list(options_.metadata.index_allowlist), ", --index-template-allowlist ",
      list(options_.metadata.index_template_allowlist), ", --component-template-allowlist ",
      list(options_.metadata.component_template_allowlist), ", --multi-type-behavior ",
      options_.metadata.multi_type_policy == transform::MultiTypePolicy::kSplit ? "split" : "union",
      options_.documents.migration.previous_snapshot_name.empty()
          ? std::string()
          : StrCat(", delta from snapshot '", options_.documents.migration.previous_snapshot_name,
                   "' ", lucene::DeltaModeName(options_.documents.migration.delta_mode)));
}

// The first worker records the run's identity (a hash in `record_id`); a store whose records
// were made for another run is refused.
absl::Status AllPhaseWorker::CheckRecordsAreForThisRun(std::string_view record_id,
                                                       const std::string& identity) {
  const uint64_t mine = coordination::SettingsHash(identity);
  auto record = records_->GetWorkItem(record_id);
  if (!record.ok()) return record.status();
  if (!*record || !(*record)->completed() || !(*record)->progress) {
    // A fresh store, or one an rfs without this record made: adopted for this run. Created by
    // a marker whose worker id is the identity in words: every store keeps an item's creator,
    // so a run refused later can be told what the store is for (as MarkFailed). Leased and
    // completed under this worker's own id (the marker's is the same in every worker).
    const std::string words = CreatorWords(StrCat(kRunForPrefix, identity));
    int exit_code = core::kExitFailure;
    auto marker = internal::OpenCoordinator(options_.documents, wiring_, words,
                                            internal::ItemSpace::kWorkerRecords, &exit_code);
    if (!marker.ok()) return marker.status();
    coordination::RetryingWorkCoordinator retrying(**marker, clock_, CoordinatorRetries());
    RFS_RETURN_IF_ERROR(retrying.CreateUnassignedWorkItem(record_id, 0).status());
    RFS_RETURN_IF_ERROR(coordination::RecordCompletedItem(*records_, clock_, record_id,
                                                          options_.record_lease, mine));
    record = records_->GetWorkItem(record_id);
    if (!record.ok()) return record.status();
  }
  if (*record && (*record)->progress && (*record)->progress->next_cursor == mine) {
    return absl::OkStatus();
  }
  const std::string creator = *record ? (*record)->creator_id : std::string();
  exit_code_override_ = core::kExitUsage;
  return absl::FailedPreconditionError(StrCat(
      "this store's migration records were made for another snapshot or other allowlists than "
      "this run's (",
      identity, "): they were made for ",
      creator.starts_with(kRunForPrefix)
          ? creator.substr(kRunForPrefix.size())
          : std::string("a run they do not name (recorded by an older rfs)"),
      ". Use a store of its own (--session-name NAME, another --output-dir or "
      "--coordinator-db), or the options it was set up with"));
}

}  // namespace rfs::migration::internal

namespace rfs::migration {

using core::StrCat;

std::string_view ToString(WorkerPhase phase) {
  switch (phase) {
    case WorkerPhase::kSnapshot:
      return "snapshot";
    case WorkerPhase::kMetadata:
      return "metadata";
    case WorkerPhase::kIndices:
      return "indices";
    case WorkerPhase::kDocuments:
      return "documents";
    case WorkerPhase::kVerify:
      return "verify";
  }
  return "unknown";
}

std::string DeriveSnapshotName(const RfsWorkerOptions& options) {
  std::string key =
      StrCat(options.source ? options.source->endpoint : "", "|", options.documents.repository.uri,
             "|", options.documents.session_name, "|");
  for (const auto& entry : options.metadata.index_allowlist.entries()) key += entry + ",";
  return StrCat("rfs-", net::Sha256Hex(key).substr(0, 12));
}

RfsWorkerResult RunWorker(RfsWorkerOptions options) {
  return internal::AllPhaseWorker(std::move(options)).Run();
}

}  // namespace rfs::migration
