// The tools' entry points (see tools.hpp).
#include "rfs/migration/tools.hpp"

#include <cstdio>
#include <filesystem>
#include <random>
#include <utility>

#include "rfs/coordination/console_work_coordinator.hpp"
#include "rfs/coordination/opensearch_work_coordinator.hpp"
#include "rfs/coordination/postgres_work_coordinator.hpp"
#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/core/version.hpp"
#include "rfs/lucene/segment_infos.hpp"
#include "rfs/migration/cluster_metadata.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/document_sink.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/snapshot/source_repo.hpp"
#include "rfs/solr/documents.hpp"

#include "migration/documents_wiring_internal.hpp"
#include "migration/target_tuning_internal.hpp"
#include <unistd.h>

namespace rfs::migration {
namespace {

using core::StrCat;
using internal::OpenTransport;

DocumentsToolResult Finish(DocumentsToolResult result, absl::Status status, int exit_code) {
  result.status = std::move(status);
  result.exit_code = exit_code;
  return result;
}

// --source-version against the snapshot: product and major must agree ("ES_7_10" and "ES 7.10"
// name the same version). Only a warning: the reader goes by what the files say.
void CheckSourceVersion(const snapshot::SnapshotRepository& repository,
                        const DocumentsToolOptions& options) {
  if (options.source_version.empty() || !options.on_warning || options.repository.solr) return;
  const auto* snapshot =
      options.migration.snapshot_name.empty()
          ? repository.LatestSnapshot().value_or(nullptr)
          : repository.FindSnapshot(options.migration.snapshot_name).value_or(nullptr);
  if (snapshot == nullptr) return;
  auto detected = repository.DetectSourceVersion(*snapshot);
  if (!detected.ok()) return;
  auto given = core::ClusterVersion::Parse(options.source_version);
  if (!given.ok() || given->product != detected->product || given->major != detected->major) {
    options.on_warning(StrCat("--source-version ", options.source_version,
                              " differs from the snapshot's ", detected->ToString(),
                              "; reading by what the snapshot's files say"));
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<snapshot::ISourceRepo>> OpenCloudRepo(
    std::string_view uri, const RepositoryLocation& location) {
  if (uri.starts_with("s3://")) return s3::S3Repo::Open(uri, location.s3);
  if (uri.starts_with("gs://")) return cloud::GcsRepo::Open(uri, location.gcs);
  if (uri.starts_with("az://")) return cloud::AzureRepo::Open(uri, location.azure);
  return std::shared_ptr<snapshot::ISourceRepo>();
}

absl::StatusOr<std::unique_ptr<snapshot::SnapshotRepository>> OpenSnapshotRepository(
    const RepositoryLocation& location) {
  RFS_ASSIGN_OR_RETURN(std::shared_ptr<snapshot::ISourceRepo> repo,
                       OpenCloudRepo(location.uri, location));
  if (repo == nullptr) {
    std::string folder = location.uri;
    if (folder.starts_with("file://")) folder = folder.substr(7);
    RFS_ASSIGN_OR_RETURN(repo, snapshot::FileSystemRepo::Open(folder));
  }
  if (location.solr) {
    return solr::OpenBackupAsSnapshotRepository(
        std::move(repo), location.solr->backup_name,
        {location.solr->collection, location.solr->backup_id}, location.solr->schema_file);
  }
  return snapshot::SnapshotRepository::Open(std::move(repo));
}

absl::Status ValidateCoordinatorDb(std::string_view db) {
  const auto scheme = db.find("://");
  if (scheme == std::string_view::npos || db.starts_with("postgresql://") ||
      db.starts_with("postgres://")) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      StrCat("--coordinator-db takes a SQLite file path or a postgresql:// URL, not a ",
             db.substr(0, scheme), ":// URL"));
}

std::string DefaultWorkerId() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "host");
  std::random_device random;
  return StrCat(host, "-", static_cast<int64_t>(getpid()), "-",
                static_cast<uint64_t>(random()) % 1000000);
}

namespace {

// --redrive-failed-documents: the same target, sinks, transforms and stores, another source.
DocumentsToolResult RunRedrive(DocumentsToolOptions& options, internal::DocumentsWiring& wiring,
                               DocumentsToolResult result) {
  result.redrive = RedriveSummary{};  // a redrive reports as one, even one that fails at once
  std::shared_ptr<snapshot::ISourceRepo> source;
  if (auto remote = OpenCloudRepo(options.redrive_source, options.repository); !remote.ok()) {
    return Finish(std::move(result), remote.status(), core::kExitUsage);
  } else if (*remote != nullptr) {
    source = *std::move(remote);
  } else {
    std::string folder = options.redrive_source;
    if (folder.starts_with("file://")) folder = folder.substr(7);
    auto repo = snapshot::FileSystemRepo::Open(folder);
    if (!repo.ok()) return Finish(std::move(result), repo.status(), core::kExitUsage);
    source = *std::move(repo);
  }
  int exit_code = core::kExitFailure;
  auto coordinator = internal::OpenCoordinator(options, wiring, result.worker_id,
                                               internal::ItemSpace::kRedrive, &exit_code);
  if (!coordinator.ok()) return Finish(std::move(result), coordinator.status(), exit_code);
  std::unique_ptr<transform::IJsonTransformer> transformer;
  if (options.migration.doc_transformer_config) {
    transform::TransformerContext context;
    context.limits = options.migration.transform_limits;
    context.limits.stop_requested = options.migration.stop_requested;
    context.limits.shutdown_grace = options.migration.shutdown_timeout;
    auto loaded = transform::LoadTransformers(*options.migration.doc_transformer_config, context);
    if (!loaded.ok()) return Finish(std::move(result), loaded.status(), core::kExitUsage);
    transformer = *std::move(loaded);
  }
  RedriveOptions redrive;
  redrive.source_description = options.redrive_source;
  redrive.initial_lease =
      std::chrono::duration_cast<std::chrono::milliseconds>(options.migration.initial_lease);
  redrive.reindexer = options.migration.reindexer;
  redrive.transform_batch = options.migration.transform_batch;
  redrive.transform_batch.transform_memory_bytes = options.migration.transform_limits.memory_bytes;
  redrive.on_progress = options.on_redrive_progress;
  core::SystemClock clock;
  RedriveSummary so_far;
  auto summary = RedriveFailedDocuments(*source, **coordinator, wiring.sinks, *wiring.failed_sink,
                                        transformer.get(), clock, redrive, &so_far);
  // The counts of what was done stand whether the run ended well or not.
  result.redrive = so_far;
  if (!summary.ok()) return Finish(std::move(result), summary.status(), core::kExitFailure);
  // Records not redriven, for whatever reason, are the partial failure's code (6).
  const bool partial =
      summary->still_failed > 0 || summary->refused > 0 || !summary->bad_files.empty();
  return Finish(std::move(result), absl::OkStatus(), partial ? core::kExitDocumentsFailed : 0);
}

}  // namespace

DocumentsToolResult RunDocumentsFromSnapshotMigration(DocumentsToolOptions options) {
  DocumentsToolResult result;
  result.worker_id = options.worker_id.empty() ? DefaultWorkerId() : options.worker_id;
  internal::DocumentsWiring wiring;
  if (auto error = internal::WireTransformsAndMetrics(options, "DocumentsFromSnapshotMigration",
                                                      result.worker_id, wiring)) {
    return Finish(std::move(result), error->status, error->exit_code);
  }
  if (auto error = internal::WireTarget(options, result.worker_id, wiring)) {
    return Finish(std::move(result), error->status, error->exit_code);
  }
  result.failed_documents_path = wiring.failed_documents_path;
  if (!options.redrive_source.empty()) return RunRedrive(options, wiring, std::move(result));
  // The repository before the coordinator: a console coordinator declares shard totals from it.
  auto repository = OpenSnapshotRepository(options.repository);
  if (!repository.ok()) {
    // A Solr backup asked for by a wrong collection or point is a usage error.
    const bool usage = options.repository.solr && absl::IsInvalidArgument(repository.status());
    return Finish(std::move(result), repository.status(),
                  usage ? core::kExitUsage : core::kExitSnapshotUnreadable);
  }
  wiring.repository = *std::move(repository);
  int exit_code = core::kExitFailure;
  auto coordinator = internal::OpenCoordinator(options, wiring, result.worker_id,
                                               internal::ItemSpace::kWorkItems, &exit_code);
  if (!coordinator.ok()) return Finish(std::move(result), coordinator.status(), exit_code);

  CheckSourceVersion(*wiring.repository, options);
  core::SystemClock clock;
  options.migration.target_indices = wiring.target_indices.get();
  internal::TuningWiring tuning;
  if (absl::Status wired = internal::WireTargetTuning(options, wiring, result.worker_id, clock, {},
                                                      /*tune_by_default=*/false, tuning);
      !wired.ok()) {
    return Finish(std::move(result), wired, core::kExitFailure);
  }
  options.migration.target_tuning = tuning.tuning.get();
  DocumentMigrationWorker worker(*wiring.repository, **coordinator, wiring.sinks,
                                 wiring.failed_sink.get(), clock, options.migration);
  absl::StatusOr<WorkerSummary> run = worker.Run();
  result.summary = worker.summary();
  if (tuning.tuning && (!run.ok() || run->outcome == WorkerOutcome::kStopped)) {
    // A run that fails or is stopped leaves no index tuned: the rest of a load still under way
    // elsewhere goes on untuned.
    auto restored = tuning.tuning->RestoreAll({}, [&](const std::string& index,
                                                      const absl::Status& status) {
      if (options.on_warning) {
        options.on_warning(core::StrCat("index ", index,
                                        " is still tuned (0 replicas, no "
                                        "refresh): ",
                                        status.message(), "; run again to put its settings back"));
      }
    });
    if (!restored.ok() && options.on_warning) {
      options.on_warning(
          core::StrCat("tuned indices could not be restored: ", restored.status().message()));
    }
  }
  result.summary.stale_temp_files_removed = wiring.stale_temp_files_removed;
  if (!run.ok()) {
    return Finish(std::move(result), run.status(),
                  IsSnapshotReadFailure(run.status()) ? core::kExitSnapshotUnreadable
                  : IsStoreMismatch(run.status()) || IsSourcelessIndex(run.status()) ||
                          IsDeltaOrderRefusal(run.status()) ||
                          IsPreserveVersionRefusal(run.status())
                      ? core::kExitUsage
                      : core::kExitFailure);
  }
  const int code = ExitCode(result.summary);
  return Finish(std::move(result), absl::OkStatus(), code);
}

CreateSnapshotToolResult RunCreateSnapshot(CreateSnapshotToolOptions options) {
  CreateSnapshotToolResult result;
  result.endpoint = options.source.endpoint;
  auto fail = [&](absl::Status status, int code) {
    result.status = std::move(status);
    result.exit_code = code;
    return std::move(result);
  };
  if (options.snapshot.name.empty()) {
    return fail(absl::InvalidArgumentError("--snapshot-name is required"), core::kExitUsage);
  }
  if (options.repository_name.empty()) {
    return fail(absl::InvalidArgumentError("--snapshot-repo-name must not be empty"),
                core::kExitUsage);
  }
  for (const auto& entry : options.snapshot.indices) {
    if (entry.starts_with("regex:")) {
      return fail(absl::InvalidArgumentError(
                      StrCat("--index-allowlist ", entry,
                             ": a snapshot takes index names and wildcards, not regex:")),
                  core::kExitUsage);
    }
  }
  // Checks the S3 URI and the rest before anything is sent.
  if (auto body = opensearch::RepositoryBody(options.repository); !body.ok()) {
    return fail(body.status(), core::kExitUsage);
  }
  // Not resent: a snapshot request applied but unanswered would come back "already exists".
  auto transport = OpenTransport(options.source, /*max_connections=*/2);
  if (!transport.ok()) {
    return fail(transport.status(), absl::IsInvalidArgument(transport.status())
                                        ? core::kExitUsage
                                        : core::kExitFailure);
  }
  result.endpoint = (*transport)->endpoint();
  opensearch::OpenSearchClient client(**transport);
  opensearch::SnapshotCreator creator(client, options.repository_name);
  if (auto status = creator.RegisterRepository(options.repository); !status.ok()) {
    return fail(status, core::kExitFailure);
  }
  if (auto status = creator.StartSnapshot(options.snapshot); !status.ok()) {
    return fail(status, core::kExitFailure);
  }
  if (options.no_wait) return result;
  const auto start = std::chrono::steady_clock::now();
  auto info =
      creator.WaitForSnapshot(options.snapshot.name, core::SystemClock::Instance(), options.wait);
  result.elapsed = std::chrono::steady_clock::now() - start;
  if (!info.ok()) return fail(info.status(), core::kExitFailure);
  result.info = *std::move(info);
  return result;
}

MetadataToolResult RunMetadataMigration(MetadataToolOptions options) {
  MetadataToolResult result;
  auto fail = [&](absl::Status status, int code) {
    result.status = std::move(status);
    result.exit_code = code;
    return std::move(result);
  };
  if (options.migration.mode == MetadataMode::kMigrate && !options.target &&
      options.migration.output_dir.empty()) {
    return fail(absl::InvalidArgumentError("migrate needs a target: --target-host URL, or "
                                           "--output-dir DIR for the embedded default"),
                core::kExitUsage);
  }
  auto cluster = internal::OpenMetadataTarget(options.target);
  if (!cluster.ok()) return fail(cluster.status(), core::kExitUsage);
  opensearch::OpenSearchClient* const client = cluster->client.get();
  absl::StatusOr<std::unique_ptr<snapshot::SnapshotRepository>> repository;
  std::vector<std::string> source_notes;
  if (options.source) {
    // Read once, before anything is migrated: an unreachable source changes nothing.
    auto transport = internal::OpenPatientTransport(*options.source, /*max_connections=*/2);
    if (!transport.ok()) return fail(transport.status(), core::kExitUsage);
    // Nothing is sent to the source but small GETs: no compression to detect.
    opensearch::OpenSearchClient source(**transport, {.compression = false});
    repository = ReadClusterMetadata(source, options.migration.source_version, &source_notes);
    if (!repository.ok()) return fail(repository.status(), core::kExitFailure);
    options.snapshot_name = kLiveClusterSnapshotName;
    // The version the source was read as (its own, or --source-version where it stood in) is
    // the one it is migrated from.
    options.migration.source_version.reset();
  } else {
    repository = OpenSnapshotRepository(options.repository);
    if (!repository.ok()) return fail(repository.status(), core::kExitSnapshotUnreadable);
  }
  auto snapshot = options.snapshot_name.empty()
                      ? (*repository)->LatestSnapshot()
                      : (*repository)->FindSnapshot(options.snapshot_name);
  if (!snapshot.ok()) return fail(snapshot.status(), core::kExitSnapshotUnreadable);

  const bool existing_index_fails = options.migration.existing_index_fails;
  const bool empty_fails = options.migration.empty_fails;
  MetadataMigrator migrator(**repository, **snapshot, client, std::move(options.migration));
  auto report = migrator.Run();
  if (!report.ok()) {
    switch (migrator.failure_source()) {
      case MetadataFailureSource::kSnapshot:
        return fail(report.status(), core::kExitSnapshotUnreadable);
      case MetadataFailureSource::kOptions:
        return fail(report.status(), core::kExitUsage);
      default:
        return fail(report.status(), core::kExitFailure);
    }
  }
  size_t found = 0;
  for (MetadataItemReport& item : report->items) {
    if (item.outcome != MetadataOutcome::kSkippedByAllowlist &&
        item.outcome != MetadataOutcome::kSkippedSystem) {
      ++found;
    }
    if (existing_index_fails && item.kind == MetadataItemKind::kIndex &&
        item.outcome == MetadataOutcome::kAlreadyExists) {
      item.outcome = MetadataOutcome::kFailed;
      item.error = "the index is on the target already (--allow-existing-indexes false)";
    }
  }
  result.exit_code = report->ok() ? 0 : core::kExitFailure;
  report->warnings.insert(report->warnings.begin(), source_notes.begin(), source_notes.end());
  if (empty_fails && found == 0) {
    report->warnings.push_back(
        "nothing to migrate: no template, data stream or index (--succeed-on-empty false); check "
        "the snapshot and the allowlists");
    result.exit_code = core::kExitFailure;
  }
  result.report = *std::move(report);
  return result;
}

}  // namespace rfs::migration
