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
#include "rfs/core/str_cat.hpp"
#include "rfs/core/version.hpp"
#include "rfs/lucene/segment_infos.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/document_sink.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include <unistd.h>

namespace rfs::migration {
namespace {

using core::StrCat;

DocumentsToolResult Finish(DocumentsToolResult result, absl::Status status, int exit_code) {
  result.status = std::move(status);
  result.exit_code = exit_code;
  return result;
}

absl::StatusOr<std::shared_ptr<net::IHttpTransport>> OpenTransport(
    net::HttpTransportOptions options, size_t max_connections) {
  options.max_idle_connections = max_connections;
  auto transport = net::BeastHttpTransport::Open(std::move(options));
  if (!transport.ok()) return transport.status();
  return std::shared_ptr<net::IHttpTransport>(*std::move(transport));
}

// --source-version against the snapshot: product and major must agree ("ES_7_10" and "ES 7.10"
// name the same version). Only a warning: the reader goes by what the files say.
void CheckSourceVersion(const snapshot::SnapshotRepository& repository,
                        const DocumentsToolOptions& options) {
  if (options.source_version.empty() || !options.on_warning) return;
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

// What the console shows as a shard's totals: its live documents (Lucene's count: nested
// documents count too, so it may exceed the documents migrated) and its files' bytes, read from
// the shard's snapshot file list and segments_N. Best effort: unknown totals stay empty.
coordination::WorkItemTotals ShardTotals(const snapshot::SnapshotRepository& repository,
                                         const snapshot::SnapshotEntry& snapshot,
                                         std::string_view id) {
  coordination::WorkItemTotals totals;
  auto item = coordination::WorkItemId::Parse(id);
  if (!item.ok() || item->starting_cursor != 0) return totals;
  const int shard = static_cast<int>(item->shard);
  if (auto files = repository.ReadShardSnapshot(snapshot, item->index_name, shard); files.ok()) {
    totals.total_size_bytes = files->total_file_bytes();
  }
  auto directory = repository.OpenShardFiles(snapshot, item->index_name, shard);
  if (!directory.ok()) return totals;
  auto infos = lucene::ReadSegmentInfos(**directory);
  if (!infos.ok()) return totals;
  uint64_t live = 0;
  for (const auto& segment : infos->segments) {
    live += static_cast<uint64_t>(
        std::max(0, segment.max_doc() - segment.del_count - segment.soft_del_count));
  }
  totals.document_count = live;
  return totals;
}

}  // namespace

absl::StatusOr<std::unique_ptr<snapshot::SnapshotRepository>> OpenSnapshotRepository(
    const RepositoryLocation& location) {
  if (location.uri.starts_with("s3://")) {
    auto repo = s3::S3Repo::Open(location.uri, location.s3);
    if (!repo.ok()) return repo.status();
    return snapshot::SnapshotRepository::Open(*repo);
  }
  std::string folder = location.uri;
  if (folder.starts_with("file://")) folder = folder.substr(7);
  auto repo = snapshot::FileSystemRepo::Open(folder);
  if (!repo.ok()) return repo.status();
  return snapshot::SnapshotRepository::Open(*repo);
}

std::string DefaultWorkerId() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "host");
  std::random_device random;
  return StrCat(host, "-", static_cast<int64_t>(getpid()), "-",
                static_cast<uint64_t>(random()) % 1000000);
}

DocumentsToolResult RunDocumentsFromSnapshotMigration(DocumentsToolOptions options) {
  DocumentsToolResult result;
  result.worker_id = options.worker_id.empty() ? DefaultWorkerId() : options.worker_id;
  const bool to_directory = !options.output_dir.empty();
  if (to_directory == options.target.has_value()) {
    return Finish(std::move(result),
                  absl::InvalidArgumentError("give exactly one target: --output-dir DIR "
                                             "(embedded default) or --target-host URL"),
                  kExitUsage);
  }

  // --- Target --------------------------------------------------------------------------------
  std::shared_ptr<net::IHttpTransport> target_transport;
  std::unique_ptr<opensearch::OpenSearchClient> client;
  std::shared_ptr<reindex::IDocumentSink> cluster_sink;
  std::string coordinator_db = options.coordinator_db;
  std::string failed_dir = options.failed_documents_dir;
  if (to_directory) {
    std::error_code error;
    std::filesystem::create_directories(std::filesystem::path(options.output_dir) / ".rfs", error);
    if (error) {
      return Finish(std::move(result),
                    absl::UnavailableError(
                        StrCat("cannot create ", options.output_dir, "/.rfs: ", error.message())),
                    kExitFailure);
    }
    if (coordinator_db.empty()) coordinator_db = options.output_dir + "/.rfs/coordination.sqlite";
    if (failed_dir.empty()) failed_dir = options.output_dir + "/.rfs/failed-documents";
  } else {
    auto transport =
        OpenTransport(*options.target, options.migration.reindexer.max_concurrent_batches + 2);
    if (!transport.ok()) return Finish(std::move(result), transport.status(), kExitUsage);
    target_transport = *std::move(transport);
    client = std::make_unique<opensearch::OpenSearchClient>(*target_transport);
    cluster_sink = std::make_shared<reindex::OpenSearchBulkSink>(*client);
    if (failed_dir.empty()) failed_dir = "failed-documents";
  }

  // --- Coordination --------------------------------------------------------------------------
  // The repository first: a console coordinator declares each shard's totals from it.
  auto repository = OpenSnapshotRepository(options.repository);
  if (!repository.ok()) {
    return Finish(std::move(result), repository.status(), kSnapshotReadFailureExitCode);
  }
  std::unique_ptr<coordination::IWorkCoordinator> coordinator;
  if (!options.console_url.empty()) {
    if (!options.coordinator_db.empty() || options.coordinator) {
      return Finish(std::move(result),
                    absl::InvalidArgumentError("--console-url coordinates on its own: drop "
                                               "--coordinator-db and --coordinator-host"),
                    kExitUsage);
    }
    coordination::ConsoleWorkCoordinatorOptions console;
    console.worker_id = result.worker_id;
    console.url = options.console_url;
    console.session = options.session_name;
    console.token = options.console_token;
    const snapshot::SnapshotRepository* source = repository->get();
    const std::string snapshot_name = options.migration.snapshot_name;
    console.item_totals = [source, snapshot_name](std::string_view id) {
      auto snapshot =
          snapshot_name.empty() ? source->LatestSnapshot() : source->FindSnapshot(snapshot_name);
      if (!snapshot.ok()) return coordination::WorkItemTotals{};
      return ShardTotals(*source, **snapshot, id);
    };
    auto opened = coordination::ConsoleWorkCoordinator::Open(std::move(console));
    if (!opened.ok()) return Finish(std::move(result), opened.status(), kExitUsage);
    coordinator = *std::move(opened);
  } else if (coordinator_db.starts_with("postgresql://") ||
             coordinator_db.starts_with("postgres://")) {
    coordination::PostgresWorkCoordinatorOptions postgres;
    postgres.worker_id = result.worker_id;
    postgres.connection = coordinator_db;
    if (!options.session_name.empty()) postgres.table = StrCat("work_items_", options.session_name);
    auto opened = coordination::PostgresWorkCoordinator::Open(std::move(postgres));
    if (!opened.ok()) {
      return Finish(std::move(result), opened.status(),
                    absl::IsInvalidArgument(opened.status()) ? kExitUsage : kExitFailure);
    }
    coordinator = *std::move(opened);
  } else if (!coordinator_db.empty()) {
    coordination::SqliteWorkCoordinatorOptions sqlite;
    sqlite.worker_id = result.worker_id;
    sqlite.path = coordinator_db;
    auto opened = coordination::SqliteWorkCoordinator::Open(std::move(sqlite));
    if (!opened.ok()) return Finish(std::move(result), opened.status(), kExitFailure);
    coordinator = *std::move(opened);
  } else {
    coordination::OpenSearchWorkCoordinatorOptions remote;
    remote.worker_id = result.worker_id;
    remote.session_name = options.session_name;
    auto transport = OpenTransport(options.coordinator ? *options.coordinator : *options.target,
                                   /*max_connections=*/4);
    if (!transport.ok()) return Finish(std::move(result), transport.status(), kExitUsage);
    remote.transport = *std::move(transport);
    auto opened = coordination::OpenSearchWorkCoordinator::Open(std::move(remote));
    if (!opened.ok()) return Finish(std::move(result), opened.status(), kExitUsage);
    coordinator = *std::move(opened);
  }

  std::unique_ptr<reindex::IFailedDocumentSink> failed_sink;
  if (options.failed_document_stream) {
    FailedDocumentStreamOptions stream = *options.failed_document_stream;
    stream.worker_id = result.worker_id;
    auto opened = S3FailedDocumentStream::Open(std::move(stream));
    if (!opened.ok()) return Finish(std::move(result), opened.status(), kExitUsage);
    result.failed_documents_path = (*opened)->location();
    failed_sink = *std::move(opened);
  } else {
    auto opened = reindex::GzipFailedDocumentSink::Open(
        failed_dir, StrCat("failed-documents-", result.worker_id));
    if (!opened.ok()) return Finish(std::move(result), opened.status(), kExitFailure);
    result.failed_documents_path = (*opened)->path();
    failed_sink = *std::move(opened);
  }

  SinkFactory sinks = [&](std::string_view index,
                          int shard) -> absl::StatusOr<std::shared_ptr<reindex::IDocumentSink>> {
    if (cluster_sink) return cluster_sink;
    reindex::NdjsonDirectorySinkOptions sink_options;
    sink_options.directory = options.output_dir;
    sink_options.shard = std::to_string(shard);
    auto sink = reindex::NdjsonDirectorySink::Open(std::move(sink_options));
    if (!sink.ok()) return sink.status();
    return std::shared_ptr<reindex::IDocumentSink>(std::move(*sink));
  };

  // --- Snapshot and run ----------------------------------------------------------------------
  CheckSourceVersion(**repository, options);

  core::SystemClock clock;
  DocumentMigrationWorker worker(**repository, *coordinator, sinks, failed_sink.get(), clock,
                                 options.migration);
  absl::StatusOr<WorkerSummary> run = worker.Run();
  result.summary = worker.summary();
  if (!run.ok()) {
    return Finish(
        std::move(result), run.status(),
        IsSnapshotReadFailure(run.status()) ? kSnapshotReadFailureExitCode : kExitFailure);
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
    return fail(absl::InvalidArgumentError("--snapshot-name is required"), kExitUsage);
  }
  if (options.repository_name.empty()) {
    return fail(absl::InvalidArgumentError("--snapshot-repo-name must not be empty"), kExitUsage);
  }
  for (const auto& entry : options.snapshot.indices) {
    if (entry.starts_with("regex:")) {
      return fail(absl::InvalidArgumentError(
                      StrCat("--index-allowlist ", entry,
                             ": a snapshot takes index names and wildcards, not regex:")),
                  kExitUsage);
    }
  }
  // Checks the S3 URI and the rest before anything is sent.
  if (auto body = opensearch::RepositoryBody(options.repository); !body.ok()) {
    return fail(body.status(), kExitUsage);
  }
  auto transport = OpenTransport(options.source, /*max_connections=*/2);
  if (!transport.ok()) {
    return fail(transport.status(),
                absl::IsInvalidArgument(transport.status()) ? kExitUsage : kExitFailure);
  }
  result.endpoint = (*transport)->endpoint();
  opensearch::OpenSearchClient client(**transport);
  opensearch::SnapshotCreator creator(client, options.repository_name);
  if (auto status = creator.RegisterRepository(options.repository); !status.ok()) {
    return fail(status, kExitFailure);
  }
  if (auto status = creator.StartSnapshot(options.snapshot); !status.ok()) {
    return fail(status, kExitFailure);
  }
  if (options.no_wait) return result;
  const auto start = std::chrono::steady_clock::now();
  auto info =
      creator.WaitForSnapshot(options.snapshot.name, core::SystemClock::Instance(), options.wait);
  result.elapsed = std::chrono::steady_clock::now() - start;
  if (!info.ok()) return fail(info.status(), kExitFailure);
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
                kExitUsage);
  }
  std::shared_ptr<net::IHttpTransport> transport;
  std::unique_ptr<opensearch::OpenSearchClient> client;
  if (options.target) {
    auto opened = OpenTransport(*options.target, /*max_connections=*/4);
    if (!opened.ok()) return fail(opened.status(), kExitUsage);
    transport = *std::move(opened);
    client = std::make_unique<opensearch::OpenSearchClient>(*transport);
  }
  auto repository = OpenSnapshotRepository(options.repository);
  if (!repository.ok()) return fail(repository.status(), kExitSnapshot);
  auto snapshot = options.snapshot_name.empty()
                      ? (*repository)->LatestSnapshot()
                      : (*repository)->FindSnapshot(options.snapshot_name);
  if (!snapshot.ok()) return fail(snapshot.status(), kExitSnapshot);

  MetadataMigrator migrator(**repository, **snapshot, client.get(), std::move(options.migration));
  auto report = migrator.Run();
  if (!report.ok()) {
    switch (migrator.failure_source()) {
      case MetadataFailureSource::kSnapshot:
        return fail(report.status(), kExitSnapshot);
      case MetadataFailureSource::kOptions:
        return fail(report.status(), kExitUsage);
      default:
        return fail(report.status(), kExitFailure);
    }
  }
  result.exit_code = report->ok() ? 0 : kExitFailure;
  result.report = *std::move(report);
  return result;
}

}  // namespace rfs::migration
