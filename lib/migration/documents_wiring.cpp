#include <filesystem>

#include "rfs/coordination/console_work_coordinator.hpp"
#include "rfs/coordination/opensearch_work_coordinator.hpp"
#include "rfs/coordination/postgres_work_coordinator.hpp"
#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/coordination/verify_records.hpp"
#include "rfs/core/file_util.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/segment_infos.hpp"
#include "rfs/migration/failed_document_stream.hpp"
#include "rfs/net/retrying_transport.hpp"

#include "migration/documents_wiring_internal.hpp"

namespace rfs::migration::internal {
namespace {

using core::StrCat;

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

// OpenPatientTransport's: about half a minute of resends with backoff.
net::TransportRetryPolicy PatientPolicy() {
  net::TransportRetryPolicy policy;
  policy.max_attempts = 9;
  policy.initial_backoff = std::chrono::milliseconds(250);
  policy.max_backoff = std::chrono::seconds(8);
  return policy;
}

// The target's indices through a client of their own: each lookup is safe to send twice, so a
// passing fault is resent as by OpenPatientTransport (the bulk client's transport resends
// nothing).
class ClusterTargetIndices final : public ITargetIndices {
 public:
  explicit ClusterTargetIndices(std::shared_ptr<net::IHttpTransport> transport)
      : transport_(std::make_shared<net::RetryingHttpTransport>(
            std::move(transport), core::SystemClock::Instance(), PatientPolicy())),
        client_(*transport_) {}
  absl::StatusOr<std::vector<std::string>> IndexUuids(std::string_view name) override {
    return client_.IndexUuids(name);
  }
  absl::StatusOr<std::optional<std::vector<std::string>>> DataStreamIndexUuids(
      std::string_view name) override {
    return client_.DataStreamIndexUuids(name);
  }

 private:
  std::shared_ptr<net::IHttpTransport> transport_;
  opensearch::OpenSearchClient client_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<net::IHttpTransport>> OpenTransport(
    net::HttpTransportOptions options, size_t max_connections) {
  options.max_idle_connections = max_connections;
  auto transport = net::BeastHttpTransport::Open(std::move(options));
  if (!transport.ok()) return transport.status();
  return std::shared_ptr<net::IHttpTransport>(*std::move(transport));
}

absl::StatusOr<std::shared_ptr<net::IHttpTransport>> OpenPatientTransport(
    net::HttpTransportOptions options, size_t max_connections) {
  auto transport = OpenTransport(std::move(options), max_connections);
  if (!transport.ok()) return transport.status();
  return std::shared_ptr<net::IHttpTransport>(std::make_shared<net::RetryingHttpTransport>(
      *std::move(transport), core::SystemClock::Instance(), PatientPolicy()));
}

absl::StatusOr<MetadataTarget> OpenMetadataTarget(
    const std::optional<net::HttpTransportOptions>& target) {
  MetadataTarget out;
  if (!target) return out;
  auto opened = OpenPatientTransport(*target, /*max_connections=*/4);
  if (!opened.ok()) return opened.status();
  out.transport = *std::move(opened);
  out.client = std::make_unique<opensearch::OpenSearchClient>(*out.transport);
  return out;
}

namespace {

// The embedded default's folder: OUT/.rfs made, killed writers' temporary files removed, the
// coordination store and failed-document records kept inside unless given elsewhere.
std::optional<WiringError> WireOutputDir(const DocumentsToolOptions& options,
                                         DocumentsWiring& wiring) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(options.output_dir) / ".rfs", error);
  if (error) {
    return WiringError{absl::UnavailableError(StrCat("cannot create ", options.output_dir,
                                                     "/.rfs: ", error.message())),
                       core::kExitFailure};
  }
  // Temporary files of workers that were killed mid-write (their process is gone).
  auto stale = core::RemoveStaleTempFiles(options.output_dir);
  if (!stale.ok()) return WiringError{stale.status(), core::kExitFailure};
  wiring.stale_temp_files_removed = stale->removed;
  if (!options.migration.previous_snapshot_name.empty() &&
      (!wiring.coordinator_db.empty() || !options.console_url.empty() ||
       options.coordinator.has_value())) {
    // Bulk files are named by cursor ranges: a delta writing into the folder of another run
    // would replace that run's files. Its store in OUT/.rfs refuses any run but its own.
    return WiringError{
        absl::InvalidArgumentError(
            "a delta run (--previous-snapshot-name) with --output-dir keeps its coordination "
            "store in that folder: drop --coordinator-db and give each run its own "
            "--output-dir (replay them in run order)"),
        core::kExitUsage};
  }
  if (wiring.coordinator_db.empty()) {
    wiring.coordinator_db = options.output_dir + "/.rfs/coordination.sqlite";
  }
  if (wiring.failed_documents_dir.empty()) {
    wiring.failed_documents_dir = options.output_dir + "/.rfs/failed-documents";
  }
  return std::nullopt;
}

}  // namespace

std::optional<WiringError> WireTarget(const DocumentsToolOptions& options,
                                      const std::string& worker_id, DocumentsWiring& wiring) {
  const bool to_directory = !options.output_dir.empty();
  if (to_directory == options.target.has_value()) {
    return WiringError{absl::InvalidArgumentError("give exactly one target: --output-dir DIR "
                                                  "(embedded default) or --target-host URL"),
                       core::kExitUsage};
  }
  wiring.coordinator_db = options.coordinator_db;
  wiring.failed_documents_dir = options.failed_documents_dir;
  if (to_directory) {
    if (auto error = WireOutputDir(options, wiring)) return error;
  } else {
    auto transport =
        OpenTransport(*options.target, options.migration.reindexer.max_concurrent_batches + 2);
    if (!transport.ok()) return WiringError{transport.status(), core::kExitUsage};
    wiring.target_transport = *std::move(transport);
    wiring.client = std::make_unique<opensearch::OpenSearchClient>(
        *wiring.target_transport,
        opensearch::OpenSearchClientOptions{.compression = options.target_compression});
    wiring.cluster_sink = std::make_shared<reindex::OpenSearchBulkSink>(*wiring.client);
    wiring.target_indices = std::make_unique<ClusterTargetIndices>(wiring.target_transport);
    if (wiring.failed_documents_dir.empty()) wiring.failed_documents_dir = "failed-documents";
  }

  if (options.failed_document_stream) {
    FailedDocumentStreamOptions stream = *options.failed_document_stream;
    stream.worker_id = worker_id;
    auto opened = S3FailedDocumentStream::Open(std::move(stream));
    if (!opened.ok()) return WiringError{opened.status(), core::kExitUsage};
    wiring.failed_documents_path = (*opened)->location();
    wiring.failed_sink = *std::move(opened);
  } else {
    auto opened = reindex::GzipFailedDocumentSink::Open(wiring.failed_documents_dir,
                                                        StrCat("failed-documents-", worker_id));
    if (!opened.ok()) return WiringError{opened.status(), core::kExitFailure};
    wiring.failed_documents_path = (*opened)->path();
    wiring.failed_sink = *std::move(opened);
  }

  std::shared_ptr<reindex::IDocumentSink> cluster_sink = wiring.cluster_sink;
  const std::string output_dir = options.output_dir;
  wiring.sinks = [cluster_sink, output_dir](std::string_view, std::string_view shard_label)
      -> absl::StatusOr<std::shared_ptr<reindex::IDocumentSink>> {
    if (cluster_sink) return cluster_sink;
    reindex::NdjsonDirectorySinkOptions sink_options;
    sink_options.directory = output_dir;
    sink_options.shard = std::string(shard_label);
    auto sink = reindex::NdjsonDirectorySink::Open(std::move(sink_options));
    if (!sink.ok()) return sink.status();
    return std::shared_ptr<reindex::IDocumentSink>(std::move(*sink));
  };
  return std::nullopt;
}

namespace {

// The console's coordinator for `space`: the worker's back pressure and each item's totals
// (read from the snapshot) go with its calls.
absl::StatusOr<std::unique_ptr<coordination::IWorkCoordinator>> OpenConsoleCoordinator(
    const DocumentsToolOptions& options, DocumentsWiring& wiring, const std::string& worker_id,
    ItemSpace space, int round) {
  coordination::ConsoleWorkCoordinatorOptions console;
  console.worker_id = worker_id;
  console.url = options.console_url;
  console.session = options.session_name;
  console.token = options.console_token;
  console.ca_cert_file = options.console_ca_cert_file;
  if (space == ItemSpace::kWorkerRecords) console.space = "workflow";
  if (space == ItemSpace::kVerify) console.space = coordination::VerifyConsoleSpace(round);
  const std::string snapshot_name = options.migration.snapshot_name;
  console.back_pressure = [tally = wiring.back_pressure] {
    return coordination::WorkerBackPressure{tally->rejected_429.load(), tally->retries.load()};
  };
  console.item_totals = [&wiring, snapshot_name](std::string_view id) {
    const snapshot::SnapshotRepository* source = wiring.repository.get();
    if (source == nullptr) return coordination::WorkItemTotals{};
    auto snapshot =
        snapshot_name.empty() ? source->LatestSnapshot() : source->FindSnapshot(snapshot_name);
    if (!snapshot.ok()) return coordination::WorkItemTotals{};
    return ShardTotals(*source, **snapshot, id);
  };
  return coordination::ConsoleWorkCoordinator::Open(std::move(console));
}

}  // namespace

absl::StatusOr<std::unique_ptr<coordination::IWorkCoordinator>> OpenCoordinator(
    const DocumentsToolOptions& options, DocumentsWiring& wiring, const std::string& worker_id,
    ItemSpace space, int* exit_code, int round) {
  const bool records = space == ItemSpace::kWorkerRecords;
  const bool redrive = space == ItemSpace::kRedrive;
  const bool verify = space == ItemSpace::kVerify;
  const std::string verify_space = coordination::VerifyItemsTable(round);
  const std::string& db = wiring.coordinator_db;
  absl::StatusOr<std::unique_ptr<coordination::IWorkCoordinator>> opened;
  *exit_code = core::kExitUsage;
  if (redrive && !options.console_url.empty()) {
    return absl::InvalidArgumentError(
        "a redrive coordinates through --coordinator-db or the target's index, not a console");
  }
  if (!options.console_url.empty()) {
    if (!options.coordinator_db.empty() || options.coordinator) {
      return absl::InvalidArgumentError(
          "--console-url coordinates on its own: drop --coordinator-db and --coordinator-host");
    }
    opened = OpenConsoleCoordinator(options, wiring, worker_id, space, round);
  } else if (auto valid = ValidateCoordinatorDb(db); !valid.ok()) {
    return valid;
  } else if (db.starts_with("postgresql://") || db.starts_with("postgres://")) {
    coordination::PostgresWorkCoordinatorOptions postgres;
    postgres.worker_id = worker_id;
    postgres.connection = db;
    const std::string base = records   ? "rfs_worker_records"
                             : redrive ? "redrive_items"
                             : verify  ? verify_space
                                       : "work_items";
    postgres.table = options.session_name.empty() ? base : StrCat(base, "_", options.session_name);
    opened = coordination::PostgresWorkCoordinator::Open(std::move(postgres));
    if (!opened.ok() && !absl::IsInvalidArgument(opened.status())) *exit_code = core::kExitFailure;
  } else if (!db.empty()) {
    coordination::SqliteWorkCoordinatorOptions sqlite;
    sqlite.worker_id = worker_id;
    sqlite.path = db;
    if (records) sqlite.table = "rfs_worker_records";
    if (redrive) sqlite.table = "redrive_items";
    if (verify) sqlite.table = verify_space;
    opened = coordination::SqliteWorkCoordinator::Open(std::move(sqlite));
    if (!opened.ok()) *exit_code = core::kExitFailure;
  } else {
    coordination::OpenSearchWorkCoordinatorOptions remote;
    remote.worker_id = worker_id;
    remote.session_name = options.session_name;
    if (records || redrive || verify) {
      const std::string space_name = records   ? "rfs_worker_records"
                                     : redrive ? "redrive"
                                               : verify_space;
      remote.session_name = options.session_name.empty()
                                ? std::string(space_name)
                                : StrCat(options.session_name, "_", space_name);
    }
    auto transport = OpenTransport(options.coordinator ? *options.coordinator : *options.target,
                                   /*max_connections=*/4);
    if (!transport.ok()) return transport.status();
    remote.transport = *std::move(transport);
    opened = coordination::OpenSearchWorkCoordinator::Open(std::move(remote));
  }
  return opened;
}

std::optional<WiringError> WireTransformsAndMetrics(DocumentsToolOptions& options,
                                                    const std::string& tool,
                                                    const std::string& worker_id,
                                                    DocumentsWiring& wiring) {
  options.migration.back_pressure = wiring.back_pressure.get();
  if (options.migration.doc_transformer_config) {
    auto loaded = transform::LoadTransformers(*options.migration.doc_transformer_config);
    if (!loaded.ok()) {
      return WiringError{absl::InvalidArgumentError(
                             StrCat("--doc-transformer-config: ", loaded.status().message())),
                         core::kExitUsage};
    }
  }
  if (!options.metrics.port && options.metrics.otel_endpoint.empty()) return std::nullopt;
  auto started = MetricsExport::Start(options.metrics, tool, worker_id);
  if (!started.ok()) {
    return WiringError{started.status(), absl::IsInvalidArgument(started.status())
                                             ? core::kExitUsage
                                             : core::kExitFailure};
  }
  wiring.metrics = *std::move(started);
  if (const std::string url = wiring.metrics->endpoint_url();
      !url.empty() && options.migration.on_event) {
    WorkerEvent event;
    event.kind = WorkerEvent::Kind::kMetricsEndpoint;
    event.message = url;
    options.migration.on_event(event);
  }
  wiring.counters = std::make_unique<WorkerCounters>(wiring.metrics->registry());
  options.migration.counters = wiring.counters.get();
  return std::nullopt;
}

}  // namespace rfs::migration::internal
