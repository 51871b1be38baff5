// The metrics of a document worker (DocumentsFromSnapshotMigration, RfsWorker), and how a tool
// exposes them: a Prometheus endpoint (`--metrics-port`) and an OTLP/HTTP push
// (`--otel-metrics-collector-endpoint`).
//
//   rfs_documents_read_total, rfs_source_bytes_read_total     live documents read from shards
//   rfs_documents_sent_total, rfs_source_bytes_sent_total     in bulk requests (retries included)
//   rfs_bulk_request_duration_seconds                         bulk latency histogram
//   rfs_bulk_retries_total{cause}                             resent requests or items, by cause
//   rfs_bulk_rejections_total                                 429s (whole requests and items)
//   rfs_bulk_concurrency                                      bulk requests allowed in flight now
//   rfs_lease_renewals_total                                  heartbeats that renewed a lease
//   rfs_work_items_total{outcome}                             acquired, completed, handed_on,
//                                                             released, lost
//   rfs_failed_documents_total{reason}                        rejected by the target, no source,
//                                                             source conversion, transform
//   rfs_transform_dropped_documents_total                     dropped by a user transform
// Every series carries the labels tool and worker_id.
//
// Thread safety: counters are atomics; any thread may update them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "rfs/metrics/exporters.hpp"
#include "rfs/metrics/registry.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "absl/status/statusor.h"

namespace rfs::migration {

/// The 429s and retries a worker met at its target, kept whether or not metrics are exported: its
/// progress reports carry them to a console (ConsoleWorkCoordinatorOptions::back_pressure).
struct BackPressureTally {
  std::atomic<uint64_t> rejected_429{0};
  std::atomic<uint64_t> retries{0};
};

struct WorkerCounters {
  explicit WorkerCounters(metrics::Registry& registry);
  metrics::Counter& documents_read;
  metrics::Counter& source_bytes_read;
  metrics::Counter& documents_sent;
  metrics::Counter& source_bytes_sent;
  metrics::Histogram& bulk_latency;
  metrics::Family<metrics::Counter>& retries;
  metrics::Counter& rejections;
  metrics::Gauge& concurrency;
  metrics::Counter& lease_renewals;
  metrics::Family<metrics::Counter>& work_items;
  metrics::Family<metrics::Counter>& failed_documents;
  metrics::Counter& transform_dropped;
  /// Documents rebuilt without a stored `_source`, by index (--enable-sourceless-migrations).
  metrics::Family<metrics::Counter>& documents_rebuilt;
  /// Of those, documents with a value that may differ from the one indexed (an array sorted, a
  /// rounded or normalized value: docs/sourceless.md), by index.
  metrics::Family<metrics::Counter>& documents_rebuilt_inexact;
  /// The per-index account of the summary (WorkerSummary::IndexAccount), by index and outcome:
  /// read, written, rejected, not_convertible, transform_failed, transform_dropped.
  metrics::Family<metrics::Counter>& index_documents;
};

struct MetricsOptions {
  /// Serve GET /metrics on this port (0: any free port); unset: no endpoint.
  std::optional<uint16_t> port;
  std::string bind_address = "0.0.0.0";
  /// Push OTLP/HTTP JSON here (e.g. http://collector:4318); a URL without a path posts to
  /// /v1/metrics. Empty: no push.
  std::string otel_endpoint;
  std::chrono::milliseconds otel_interval{10'000};
};

/// A registry labelled with the tool and worker, and its exporters while they run.
class MetricsExport {
 public:
  /// Starts what `options` asks for. InvalidArgument for a malformed collector URL, Unavailable
  /// when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsExport>> Start(const MetricsOptions& options,
                                                              const std::string& tool,
                                                              const std::string& worker_id);
  ~MetricsExport();
  metrics::Registry& registry() { return *registry_; }
  /// The endpoint's URL ("" without one).
  std::string endpoint_url() const;
  /// Stops the endpoint and pushes the final counts. Idempotent.
  void Stop();

 private:
  MetricsExport() = default;
  std::unique_ptr<metrics::Registry> registry_;
  std::unique_ptr<metrics::PrometheusEndpoint> endpoint_;
  std::unique_ptr<metrics::OtlpExporter> exporter_;
};

}  // namespace rfs::migration
