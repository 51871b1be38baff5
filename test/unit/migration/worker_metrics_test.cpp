#include "rfs/migration/worker_metrics.hpp"

#include <string>

#include <catch2/catch.hpp>

#include "support/metrics_text.hpp"

using rfs::migration::MetricsExport;
using rfs::migration::MetricsOptions;
using rfs::migration::WorkerCounters;

TEST_CASE("a worker's metrics are served as Prometheus text promtool accepts",
          "[migration][metrics]") {
  MetricsOptions options;
  options.port = 0;
  options.bind_address = "127.0.0.1";
  auto started = MetricsExport::Start(options, "DocumentsFromSnapshotMigration", "worker-1");
  REQUIRE(started.ok());
  MetricsExport& exported = **started;
  REQUIRE(exported.endpoint_url().starts_with("http://127.0.0.1:"));
  WorkerCounters counters(exported.registry());
  counters.documents_read.Add(1000);
  counters.source_bytes_read.Add(250000);
  counters.documents_sent.Add(990);
  counters.bulk_latency.Observe(0.12);
  counters.retries.With({"too_many_requests"}).Add(2);
  counters.rejections.Add(2);
  counters.concurrency.Set(3);
  counters.lease_renewals.Add();
  counters.work_items.With({"completed"}).Add();
  counters.failed_documents.With({"transform"}).Add(4);
  counters.transform_dropped.Add(6);
  counters.documents_rebuilt.With({"logs-1"}).Add(7);
  counters.documents_rebuilt_inexact.With({"logs-1"}).Add(5);

  const std::string text = rfs::test::ScrapeMetrics(exported.endpoint_url());
  INFO(text);
  const std::string labels = R"({tool="DocumentsFromSnapshotMigration",worker_id="worker-1")";
  CHECK(rfs::test::MetricValue(text, "rfs_documents_read_total" + labels + "}") == 1000);
  CHECK(rfs::test::MetricValue(
            text, "rfs_bulk_retries_total" + labels + R"(,cause="too_many_requests"})") == 2);
  CHECK(rfs::test::MetricValue(text, "rfs_bulk_concurrency" + labels + "}") == 3);
  CHECK(rfs::test::MetricValue(text,
                               "rfs_work_items_total" + labels + R"(,outcome="completed"})") == 1);
  // Series exist before anything happens to them.
  CHECK(rfs::test::MetricValue(text, "rfs_work_items_total" + labels + R"(,outcome="lost"})") == 0);
  CHECK(rfs::test::MetricValue(
            text, "rfs_failed_documents_total" + labels + R"(,reason="transform"})") == 4);
  CHECK(rfs::test::MetricValue(text, "rfs_bulk_request_duration_seconds_count" + labels + "}") ==
        1);
  CHECK(rfs::test::MetricValue(
            text, "rfs_documents_rebuilt_total" + labels + R"(,index="logs-1"})") == 7);
  CHECK(rfs::test::MetricValue(
            text, "rfs_documents_rebuilt_inexact_total" + labels + R"(,index="logs-1"})") == 5);
  auto [status, output] = rfs::test::PromtoolCheck(text);
  INFO(output);
  CHECK(status == 0);
  exported.Stop();
}
