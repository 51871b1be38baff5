// Where a Registry's metrics go: a Prometheus scrape endpoint (`--metrics-port`) and a periodic
// OTLP/HTTP push to an OpenTelemetry collector (`--otel-metrics-collector-endpoint`).
//
// Thread safety: both run on their own threads; Stop may be called from any thread, once or more.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rfs/metrics/registry.hpp"
#include "rfs/net/http_server.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::metrics {

/// Serves `GET /metrics` (the Prometheus text format) on `bind_address`:`port` (0: any free
/// port), over HTTPS when `tls` is set; every other path is a 404. The registry must outlive the
/// server.
class PrometheusEndpoint {
 public:
  static absl::StatusOr<std::unique_ptr<PrometheusEndpoint>> Start(
      const Registry& registry, uint16_t port, std::string bind_address,
      std::optional<net::HttpServerTls> tls = {});
  uint16_t port() const { return server_->port(); }
  std::string url() const { return server_->url() + "/metrics"; }
  void Stop() { server_->Stop(); }

 private:
  explicit PrometheusEndpoint(std::unique_ptr<net::HttpServer> server)
      : server_(std::move(server)) {}
  std::unique_ptr<net::HttpServer> server_;
};

struct OtlpExporterOptions {
  /// Resource attributes of every export, e.g. {"service.name", "DocumentsFromSnapshotMigration"}.
  std::vector<std::pair<std::string, std::string>> resource_attributes;
  std::chrono::milliseconds interval{10'000};
  /// The path requests are posted to (the collector's OTLP/HTTP receiver).
  std::string path = "/v1/metrics";
};

/// Posts the registry as OTLP JSON (`application/json`) through `transport` every interval, and
/// once more on Stop so that the last counts of a finishing process arrive. A failed export is
/// reported through `last_error` and tried again at the next interval; it never stops the process.
class OtlpExporter {
 public:
  OtlpExporter(const Registry& registry, std::shared_ptr<net::IHttpTransport> transport,
               OtlpExporterOptions options);
  ~OtlpExporter();
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  /// Exports now (the timer's work, callable directly).
  absl::Status ExportOnce();
  /// Stops the timer and exports a final time. Idempotent.
  void Stop();
  uint64_t exports() const;
  absl::Status last_error() const;

 private:
  void Loop();
  const Registry& registry_;
  const std::shared_ptr<net::IHttpTransport> transport_;
  const OtlpExporterOptions options_;
  const std::chrono::system_clock::time_point start_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;    // guarded by mu_
  bool stopped_ = false;     // guarded by mu_
  uint64_t exports_ = 0;     // guarded by mu_
  absl::Status last_error_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace rfs::metrics
