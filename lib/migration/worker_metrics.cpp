#include "rfs/migration/worker_metrics.hpp"

#include "rfs/core/str_cat.hpp"

namespace rfs::migration {

WorkerCounters::WorkerCounters(metrics::Registry& r)
    : documents_read(
          r.AddCounter("rfs_documents_read_total", "Live documents read from snapshot shards.")
              .Get()),
      source_bytes_read(
          r.AddCounter("rfs_source_bytes_read_total", "Bytes of _source read from snapshot shards.")
              .Get()),
      documents_sent(r.AddCounter("rfs_documents_sent_total",
                                  "Documents sent in bulk requests, retries included.")
                         .Get()),
      source_bytes_sent(r.AddCounter("rfs_source_bytes_sent_total",
                                     "Bytes of _source sent in bulk requests, retries included.")
                            .Get()),
      bulk_latency(r.AddHistogram("rfs_bulk_request_duration_seconds",
                                  "Latency of bulk requests to the target.",
                                  metrics::LatencyBucketsSeconds())
                       .Get()),
      retries(r.AddCounter("rfs_bulk_retries_total",
                           "Bulk requests (or their failed items) sent again, by cause.",
                           {"cause"})),
      rejections(r.AddCounter("rfs_bulk_rejections_total",
                              "HTTP 429 answers of the target: whole requests and items.")
                     .Get()),
      concurrency(
          r.AddGauge("rfs_bulk_concurrency", "Bulk requests allowed in flight now (backpressure).")
              .Get()),
      lease_renewals(
          r.AddCounter("rfs_lease_renewals_total", "Heartbeats that renewed a work item's lease.")
              .Get()),
      work_items(r.AddCounter("rfs_work_items_total",
                              "Work items by what happened to them: acquired, completed, "
                              "handed_on (a successor carries the rest), released, lost.",
                              {"outcome"})),
      failed_documents(r.AddCounter("rfs_failed_documents_total",
                                    "Documents recorded as failed, by reason.", {"reason"})),
      transform_dropped(r.AddCounter("rfs_transform_dropped_documents_total",
                                     "Documents a user transform dropped on purpose.")
                            .Get()),
      documents_rebuilt(r.AddCounter("rfs_documents_rebuilt_total",
                                     "Documents whose _source was rebuilt from doc values and "
                                     "stored fields (--enable-sourceless-migrations), by index.",
                                     {"index"})),
      documents_rebuilt_inexact(
          r.AddCounter("rfs_documents_rebuilt_inexact_total",
                       "Of the rebuilt documents, those with a value that may differ from the one "
                       "indexed (arrays sorted, values rounded or normalized), by index.",
                       {"index"})),
      index_documents(r.AddCounter(
          "rfs_index_documents_total",
          "Each source index's documents by what became of them: read from the snapshot, "
          "written (accepted by the target), rejected, not_convertible, transform_failed, "
          "transform_dropped, already_newer (--preserve-version: the target holds an equal or "
          "higher version).",
          {"index", "outcome"})) {
  // Series that exist from the start, so dashboards and rate() see zeros rather than gaps.
  for (const char* outcome : {"acquired", "completed", "handed_on", "released", "lost"}) {
    work_items.With({outcome});
  }
  for (const char* reason : {"rejected", "no_source", "source_conversion", "transform"}) {
    failed_documents.With({reason});
  }
}

absl::StatusOr<std::unique_ptr<MetricsExport>> MetricsExport::Start(const MetricsOptions& options,
                                                                    const std::string& tool,
                                                                    const std::string& worker_id) {
  std::unique_ptr<MetricsExport> out(new MetricsExport);
  out->registry_ = std::make_unique<metrics::Registry>(
      std::vector<std::pair<std::string, std::string>>{{"tool", tool}, {"worker_id", worker_id}});
  if (options.port) {
    auto endpoint =
        metrics::PrometheusEndpoint::Start(*out->registry_, *options.port, options.bind_address);
    if (!endpoint.ok()) return endpoint.status();
    out->endpoint_ = *std::move(endpoint);
  }
  if (!options.otel_endpoint.empty()) {
    std::string base = options.otel_endpoint;
    std::string path = "/v1/metrics";
    // A URL with a path beyond "/" is taken as the full receiver URL.
    if (const size_t scheme = base.find("://"); scheme != std::string::npos) {
      if (const size_t slash = base.find('/', scheme + 3);
          slash != std::string::npos && slash + 1 < base.size()) {
        path = base.substr(slash);
        base.resize(slash);
      } else if (slash != std::string::npos) {
        base.resize(slash);
      }
    }
    net::HttpTransportOptions transport;
    transport.endpoint = base;
    transport.max_idle_connections = 1;
    transport.connect_timeout = std::chrono::seconds(5);
    auto opened = net::BeastHttpTransport::Open(transport);
    if (!opened.ok()) {
      return absl::InvalidArgumentError(
          core::StrCat("--otel-metrics-collector-endpoint: ", opened.status().message()));
    }
    metrics::OtlpExporterOptions exporter;
    exporter.resource_attributes = {{"service.name", tool}, {"service.instance.id", worker_id}};
    exporter.interval = options.otel_interval;
    exporter.path = path;
    out->exporter_ = std::make_unique<metrics::OtlpExporter>(
        *out->registry_, std::shared_ptr<net::IHttpTransport>(*std::move(opened)),
        std::move(exporter));
  }
  return out;
}

MetricsExport::~MetricsExport() { Stop(); }

std::string MetricsExport::endpoint_url() const { return endpoint_ ? endpoint_->url() : ""; }

void MetricsExport::Stop() {
  if (exporter_) exporter_->Stop();
  if (endpoint_) endpoint_->Stop();
}

}  // namespace rfs::migration
