// RfsWorker's phases: the snapshot, the metadata and the documents (see rfs_worker_internal.hpp).
#include <algorithm>

#include <boost/json.hpp>

#include "rfs/core/backoff.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/migration/redrive.hpp"
#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/retrying_transport.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "migration/document_migration_worker_internal.hpp"
#include "migration/document_pipeline_internal.hpp"
#include "migration/rfs_worker_internal.hpp"
#include <unistd.h>

namespace rfs::migration::internal {

absl::Status AllPhaseWorker::SnapshotPhase() {
  if (!options_.source) {
    // No source cluster: the snapshot must be in the repository already.
    absl::Status status = OpenRepository();
    if (absl::IsNotFound(status)) {
      return absl::FailedPreconditionError(
          StrCat("snapshot ", result_.snapshot_name.empty() ? "(newest)" : result_.snapshot_name,
                 " is not in the repository: ", status.message()));
    }
    return core::IsRetryable(status) ? status : MarkSnapshotReadFailure(status);
  }
  // Each request resent on a passing fault: a snapshot start applied but unanswered comes back
  // "already exists", which is taken below as started.
  auto transport = internal::OpenPatientTransport(*options_.source, 2);
  if (!transport.ok()) return transport.status();
  GatedTransport gated(std::shared_ptr<net::IHttpTransport>(*std::move(transport)), lease_gate_);
  opensearch::OpenSearchClient client(gated);
  opensearch::SnapshotCreator creator(client, options_.source_repository_name);
  // Registered first, every time: a repository of this name left registered elsewhere by an
  // earlier migration would otherwise answer for its own snapshot of this name. The same
  // settings again change nothing on the source, even while a snapshot runs.
  RFS_RETURN_IF_ERROR(creator.RegisterRepository(*options_.source_repository));
  auto existing = creator.GetSnapshot(result_.snapshot_name);
  if (absl::IsNotFound(existing.status())) {
    opensearch::SnapshotRequest request;
    request.name = result_.snapshot_name;
    request.indices = options_.metadata.index_allowlist.entries();
    absl::Status started = creator.StartSnapshot(request);
    // Another worker (now dead) may have started it between our look and our request.
    if (!started.ok() && !absl::IsAlreadyExists(started)) return started;
  } else if (!existing.ok()) {
    return existing.status();
  }
  opensearch::WaitOptions wait;
  wait.poll_interval = options_.snapshot_poll_interval;
  wait.on_progress = [&](const opensearch::SnapshotProgress& progress) {
    Emit(WorkerPhase::kSnapshot, "progress", result_.snapshot_name,
         StrCat(progress.raw_state, " ", progress.shards_done, "/", progress.shards_total,
                " shards"));
  };
  auto info = creator.WaitForSnapshot(result_.snapshot_name, clock_, wait);
  if (!info.ok()) {
    if (absl::IsFailedPrecondition(info.status())) {
      return absl::FailedPreconditionError(
          StrCat("snapshot ", result_.snapshot_name, " failed: ", info.status().message()));
    }
    return info.status();
  }
  return absl::OkStatus();
}

std::vector<std::string> AllPhaseWorker::SelectedIndices() const {
  std::vector<std::string> out;
  for (const std::string& index : wiring_.repository->IndicesIn(*snapshot_)) {
    if (Selected(index)) out.push_back(index);
  }
  return out;
}

absl::Status AllPhaseWorker::SetupIndexRecords() {
  for (const std::string& index : SelectedIndices()) {
    auto created = records_->CreateUnassignedWorkItem(IndexRecord(index), 0);
    if (!created.ok()) return created.status();
  }
  return absl::OkStatus();
}

// Templates (no index), or one index.
absl::Status AllPhaseWorker::Metadata(const std::optional<std::string>& index) {
  MetadataMigrationOptions metadata = options_.metadata;
  metadata.mode = MetadataMode::kMigrate;
  metadata.include_templates = !index.has_value();
  metadata.include_indices = index.has_value();
  metadata.only_index = index;
  if (!wiring_.client) metadata.output_dir = options_.documents.output_dir;
  RFS_RETURN_IF_ERROR(OpenRequestClient());
  MetadataMigrator migrator(*wiring_.repository, *snapshot_, request_client_.get(), metadata);
  auto report = migrator.Run();
  if (!report.ok()) {
    if (migrator.failure_source() == MetadataFailureSource::kTarget &&
        core::IsRetryable(report.status())) {
      return report.status();
    }
    if (migrator.failure_source() == MetadataFailureSource::kSnapshot) {
      return MarkSnapshotReadFailure(report.status());
    }
    return absl::FailedPreconditionError(std::string(report.status().message()));
  }
  std::string failed;
  bool all_transient = true;
  for (const auto& item : report->items) {
    // An index created here is empty: phase 4 may tune it for its load.
    if (tuning_.tuning && item.kind == MetadataItemKind::kIndex &&
        item.outcome == MetadataOutcome::kCreated) {
      RFS_RETURN_IF_ERROR(tuning_.tuning->MarkCreatedEmpty(item.name));
    }
    if (item.outcome == MetadataOutcome::kFailed) {
      all_transient = all_transient && item.transient;
      failed +=
          StrCat(failed.empty() ? "" : "; ", ToString(item.kind), " ", item.name, ": ", item.error);
    } else {
      Emit(index ? WorkerPhase::kIndices : WorkerPhase::kMetadata, "progress",
           StrCat(ToString(item.kind), " ", item.name), std::string(ToString(item.outcome)));
    }
  }
  if (!failed.empty() && all_transient) {
    // The target's passing faults outlasted the migrator's own retries: retried under the
    // lease (RunOnce), never a FAILED migration.
    return absl::UnavailableError(StrCat("the target did not answer: ", failed));
  }
  if (!failed.empty()) return absl::FailedPreconditionError(StrCat("rejected: ", failed));
  return absl::OkStatus();
}

// The client of the metadata and verify phases: each of their requests is safe to send twice,
// so a fault is resent a few times at once (the bulk client is not); longer outages are
// retried by RunOnce, which a stop interrupts.
absl::Status AllPhaseWorker::OpenRequestClient() {
  if (!wiring_.client || request_client_) return absl::OkStatus();
  auto transport = internal::OpenTransport(*options_.documents.target, 4);
  if (!transport.ok()) return transport.status();
  request_transport_ = std::make_shared<GatedTransport>(
      std::make_shared<net::RetryingHttpTransport>(*std::move(transport), clock_), lease_gate_);
  request_client_ = std::make_unique<opensearch::OpenSearchClient>(*request_transport_);
  return absl::OkStatus();
}

absl::Status AllPhaseWorker::DocumentsPhase() {
  const std::string record = PhaseRecord(WorkerPhase::kDocuments);
  Emit(WorkerPhase::kDocuments, "started", "documents", "");
  int exit_code = core::kExitFailure;
  auto items = internal::OpenCoordinator(options_.documents, wiring_, result_.worker_id,
                                         internal::ItemSpace::kWorkItems, &exit_code);
  if (!items.ok()) return items.status();
  while (true) {
    RFS_RETURN_IF_ERROR(CheckFailed());
    auto state = records_->GetWorkItem(record);
    if (!state.ok()) return state.status();
    if (*state && (*state)->completed()) return absl::OkStatus();
    DocumentMigrationOptions migration = options_.documents.migration;
    migration.single_work_item = false;
    migration.max_item_attempts = AttemptLimit();
    migration.target_indices = wiring_.target_indices.get();
    migration.target_tuning = tuning_.tuning.get();
    DocumentMigrationWorker worker(*wiring_.repository, **items, wiring_.sinks,
                                   wiring_.failed_sink.get(), clock_, migration);
    auto run = worker.Run();
    const WorkerSummary summary = worker.summary();
    result_.documents.items_completed += summary.items_completed;
    result_.documents.items_checkpointed += summary.items_checkpointed;
    result_.documents.docs_written += summary.docs_written;
    result_.documents.docs_already_newer += summary.docs_already_newer;
    result_.documents.docs_failed += summary.docs_failed;
    if (summary.docs_already_newer > 0) {
      Emit(WorkerPhase::kDocuments, "already_newer", "",
           StrCat(summary.docs_already_newer,
                  " documents already newer on the target (--preserve-version: it holds them "
                  "in an equal or higher version; left as they are, not failures)"));
    }
    for (const std::string& stream : summary.data_streams_without_versions) {
      auto& warned = result_.documents.data_streams_without_versions;
      if (std::find(warned.begin(), warned.end(), stream) != warned.end()) continue;
      warned.push_back(stream);
      Emit(WorkerPhase::kDocuments, "warning", stream,
           StrCat("--preserve-version does not apply to data stream ", stream,
                  ", which takes only create with internal versions: its documents go without "
                  "their source versions"));
    }
    result_.documents.source_bytes += summary.source_bytes;
    if (!run.ok()) {
      if (IsItemOverAttempts(run.status())) {
        return MarkFailed(WorkerPhase::kDocuments, "documents",
                          std::string(run.status().message()));
      }
      if (IsSnapshotReadFailure(run.status())) {
        exit_code_override_ = core::kExitSnapshotUnreadable;
        return run.status();
      }
      if (IsStoreMismatch(run.status()) || IsSourcelessIndex(run.status()) ||
          IsDeltaOrderRefusal(run.status()) || IsPreserveVersionRefusal(run.status())) {
        exit_code_override_ = core::kExitUsage;
        return run.status();
      }
      if (core::IsRetryable(run.status())) {
        Backoff();
        continue;
      }
      return run.status();
    }
    switch (run->outcome) {
      case WorkerOutcome::kStopped:
        stopped_ = true;
        return absl::OkStatus();
      case WorkerOutcome::kNoWorkLeft: {
        RFS_ASSIGN_OR_RETURN(Once once, RunOnce(WorkerPhase::kDocuments, record, "documents", true,
                                                [] { return absl::OkStatus(); }));
        (void)once;
        return absl::OkStatus();
      }
      default:
        Emit(WorkerPhase::kDocuments, "waiting", "", "remaining shards are held by other workers");
        Backoff(std::chrono::milliseconds(3000));
    }
  }
}

}  // namespace rfs::migration::internal
