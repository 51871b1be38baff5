// The wiring DocumentsFromSnapshotMigration and RfsWorker share: the target (a cluster client
// and bulk sink, or the embedded NDJSON directory), the failed-document sink, and the work-item
// stores (the shards' items, and RfsWorker's phase records beside them in the same backend).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/migration/worker_metrics.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/document_sink.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/snapshot/repository.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::migration::internal {

/// An error of the wiring and the exit code the tools give it.
struct WiringError {
  absl::Status status;
  int exit_code = core::kExitFailure;
};

struct DocumentsWiring {
  std::shared_ptr<net::IHttpTransport> target_transport;
  /// The target cluster's client; null for the embedded target.
  std::unique_ptr<opensearch::OpenSearchClient> client;
  std::shared_ptr<reindex::IDocumentSink> cluster_sink;
  /// The target cluster's indices as the workers look at them (null for the embedded target).
  std::unique_ptr<ITargetIndices> target_indices;
  /// --coordinator-db, or the embedded target's default file.
  std::string coordinator_db;
  std::unique_ptr<reindex::IFailedDocumentSink> failed_sink;
  std::string failed_documents_dir;
  std::string failed_documents_path;
  SinkFactory sinks;
  /// The embedded target: temporary files of killed workers removed from the output folder.
  uint64_t stale_temp_files_removed = 0;
  /// The snapshot repository once opened; a console coordinator reads shard totals from it.
  std::unique_ptr<snapshot::SnapshotRepository> repository;
  /// The metrics export and the worker's counters (set when metrics are asked for).
  std::unique_ptr<MetricsExport> metrics;
  std::unique_ptr<WorkerCounters> counters;
  /// 429s and retries, sent to a console with the progress reports (metrics or not).
  std::shared_ptr<BackPressureTally> back_pressure = std::make_shared<BackPressureTally>();
};

/// Checks the document transformer configuration (a broken one is a usage error before any work
/// is taken) and starts the metrics `options.metrics` asks for, pointing
/// `options.migration.counters` at them.
std::optional<WiringError> WireTransformsAndMetrics(DocumentsToolOptions& options,
                                                    const std::string& tool,
                                                    const std::string& worker_id,
                                                    DocumentsWiring& wiring);

/// Checks the target options, opens the target and the failed-document sink, prepares `sinks`.
std::optional<WiringError> WireTarget(const DocumentsToolOptions& options,
                                      const std::string& worker_id, DocumentsWiring& wiring);

/// Where the coordinator keeps its items: the shards' work items, or RfsWorker's phase records
/// (a table, index or console space of their own in the same backend, so that the document
/// workers' acquisitions never meet them), or the shard items of one round of RfsWorker's full
/// verification (kVerify with the round's number: a table or index per round, "verify_items_N";
/// not in a console).
enum class ItemSpace { kWorkItems, kWorkerRecords, kRedrive, kVerify };

/// Opens the coordinator the options select (console, PostgreSQL, SQLite, or the target's
/// index), for `worker_id`. `wiring` must outlive it (shard totals read wiring.repository).
/// `round` numbers a kVerify space.
absl::StatusOr<std::unique_ptr<coordination::IWorkCoordinator>> OpenCoordinator(
    const DocumentsToolOptions& options, DocumentsWiring& wiring, const std::string& worker_id,
    ItemSpace space, int* exit_code, int round = 0);

/// Opens a transport with `max_connections` idle connections kept.
absl::StatusOr<std::shared_ptr<net::IHttpTransport>> OpenTransport(
    net::HttpTransportOptions options, size_t max_connections);

/// The same, resending each request that meets a transient fault (a reset, refused connection,
/// timeout, 429, 502, 503, 504) for up to about half a minute with backoff: for callers whose
/// requests are all safe to send twice (metadata, snapshot and cluster requests; never _bulk).
absl::StatusOr<std::shared_ptr<net::IHttpTransport>> OpenPatientTransport(
    net::HttpTransportOptions options, size_t max_connections);

/// The metadata tools' target cluster: a patient transport keeping 4 idle connections and the
/// client over it, both null when there is no `target`.
struct MetadataTarget {
  std::shared_ptr<net::IHttpTransport> transport;
  std::unique_ptr<opensearch::OpenSearchClient> client;  // over *transport
};
absl::StatusOr<MetadataTarget> OpenMetadataTarget(
    const std::optional<net::HttpTransportOptions>& target);

}  // namespace rfs::migration::internal
