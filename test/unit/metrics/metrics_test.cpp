#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/metrics/exporters.hpp"
#include "rfs/metrics/registry.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/http_server.hpp"

#include "support/metrics_text.hpp"

namespace json = boost::json;
using rfs::metrics::Registry;

namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void FillWorkerLike(Registry& registry) {
  registry.AddCounter("rfs_documents_read_total", "Live documents read from shards.").Get().Add(42);
  auto& retries =
      registry.AddCounter("rfs_bulk_retries_total", "Resent bulk requests by cause.", {"cause"});
  retries.With({"too_many_requests"}).Add(3);
  retries.With({"server_error"}).Add(1);
  registry.AddGauge("rfs_bulk_concurrency", "Bulk requests allowed in flight.").Get().Set(4);
  auto& latency = registry.AddHistogram("rfs_bulk_request_duration_seconds",
                                        "Bulk request latency.", {0.01, 0.1, 1});
  latency.Get().Observe(0.005);
  latency.Get().Observe(0.05);
  latency.Get().Observe(0.05);
  latency.Get().Observe(5);
}

}  // namespace

TEST_CASE("the registry renders the Prometheus text format", "[metrics]") {
  Registry registry({{"tool", "RfsWorker"}, {"worker_id", "w\"1\\\n"}});
  FillWorkerLike(registry);
  const std::string text = registry.RenderPrometheusText();
  INFO(text);
  CHECK(Contains(text, "# HELP rfs_documents_read_total Live documents read from shards.\n"));
  CHECK(Contains(text, "# TYPE rfs_documents_read_total counter\n"));
  // Label values are escaped (backslash, quote, newline).
  CHECK(Contains(text, R"(rfs_documents_read_total{tool="RfsWorker",worker_id="w\"1\\\n"} 42)"));
  CHECK(Contains(
      text,
      R"(rfs_bulk_retries_total{tool="RfsWorker",worker_id="w\"1\\\n",cause="too_many_requests"} 3)"));
  CHECK(Contains(text, "# TYPE rfs_bulk_concurrency gauge\n"));
  CHECK(Contains(text, "# TYPE rfs_bulk_request_duration_seconds histogram\n"));
  // Buckets are cumulative and end at +Inf with the count.
  CHECK(Contains(
      text,
      R"(rfs_bulk_request_duration_seconds_bucket{tool="RfsWorker",worker_id="w\"1\\\n",le="0.01"} 1)"));
  CHECK(Contains(text, R"(le="0.1"} 3)"));
  CHECK(Contains(text, R"(le="1"} 3)"));
  CHECK(Contains(text, R"(le="+Inf"} 4)"));
  CHECK(Contains(
      text, R"(rfs_bulk_request_duration_seconds_count{tool="RfsWorker",worker_id="w\"1\\\n"} 4)"));
  CHECK(Contains(
      text,
      R"(rfs_bulk_request_duration_seconds_sum{tool="RfsWorker",worker_id="w\"1\\\n"} 5.105)"));
  // Families sorted by name.
  CHECK(text.find("rfs_bulk_concurrency") < text.find("rfs_documents_read_total"));

  auto [status, output] = rfs::test::PromtoolCheck(text);
  INFO(output);
  CHECK(status == 0);
}

TEST_CASE("promtool rejects what the check is there to catch", "[metrics]") {
  // The check itself must be able to fail: a counter without _total and a duplicated series.
  auto [status, output] = rfs::test::PromtoolCheck(
      "# HELP requests Requests.\n# TYPE requests counter\nrequests 1\nrequests 2\n");
  INFO(output);
  CHECK(status != 0);
}

TEST_CASE("families are registered once and validated", "[metrics]") {
  Registry registry;
  auto& a = registry.AddCounter("rfs_things_total", "Things.", {"kind"});
  auto& b = registry.AddCounter("rfs_things_total", "Things.", {"kind"});
  CHECK(&a == &b);
  a.With({"x"}).Add(2);
  b.With({"x"}).Add(3);
  CHECK(a.With({"x"}).value() == 5);
  CHECK_THROWS_AS(registry.AddCounter("bad name_total", "x"), std::invalid_argument);
  CHECK_THROWS_AS(registry.AddCounter("rfs_no_suffix", "x"), std::invalid_argument);
}

TEST_CASE("counters are safe to update from many threads", "[metrics][tsan]") {
  Registry registry;
  auto& family = registry.AddCounter("rfs_hits_total", "Hits.", {"thread"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&family, t] {
      for (int i = 0; i < 10000; ++i) family.With({t % 2 ? "odd" : "even"}).Add();
    });
  }
  for (auto& t : threads) t.join();
  CHECK(family.With({"odd"}).value() == 20000);
  CHECK(family.With({"even"}).value() == 20000);
}

TEST_CASE("the Prometheus endpoint serves GET /metrics", "[metrics][http]") {
  Registry registry;
  FillWorkerLike(registry);
  auto endpoint = rfs::metrics::PrometheusEndpoint::Start(registry, 0, "127.0.0.1");
  REQUIRE(endpoint.ok());
  rfs::net::HttpTransportOptions options;
  options.endpoint = "http://127.0.0.1:" + std::to_string((*endpoint)->port());
  auto transport = rfs::net::BeastHttpTransport::Open(options);
  REQUIRE(transport.ok());

  rfs::net::HttpRequest get;
  get.target = "/metrics";
  auto response = (*transport)->Send(get);
  REQUIRE(response.ok());
  CHECK(response->status == 200);
  CHECK(response->Header("Content-Type") ==
        std::optional<std::string>(rfs::metrics::kPrometheusContentType));
  CHECK(Contains(response->body, "rfs_documents_read_total 42\n"));
  auto [status, output] = rfs::test::PromtoolCheck(response->body);
  INFO(output);
  CHECK(status == 0);

  // Live: a later scrape sees later counts.
  registry.AddCounter("rfs_documents_read_total", "Live documents read from shards.").Get().Add(8);
  response = (*transport)->Send(get);
  REQUIRE(response.ok());
  CHECK(Contains(response->body, "rfs_documents_read_total 50\n"));

  rfs::net::HttpRequest other;
  other.target = "/other";
  response = (*transport)->Send(other);
  REQUIRE(response.ok());
  CHECK(response->status == 404);
  (*endpoint)->Stop();
}

TEST_CASE("the OTLP exporter posts to a collector", "[metrics][http][otlp]") {
  // A collector double: records every request to /v1/metrics.
  std::mutex mu;
  std::vector<rfs::net::HttpRequest> received;
  rfs::net::HttpServerOptions server_options;
  server_options.threads = 2;
  auto collector =
      rfs::net::HttpServer::Start(server_options, [&](const rfs::net::HttpRequest& request) {
        std::lock_guard<std::mutex> lock(mu);
        received.push_back(request);
        rfs::net::HttpResponse response;
        response.status = received.size() == 1 ? 503 : 200;  // the first export fails
        response.body = "{}";
        return response;
      });
  REQUIRE(collector.ok());

  Registry registry(std::vector<std::pair<std::string, std::string>>{{"worker_id", "w1"}});
  FillWorkerLike(registry);
  rfs::net::HttpTransportOptions options;
  options.endpoint = (*collector)->url();
  auto transport = rfs::net::BeastHttpTransport::Open(options);
  REQUIRE(transport.ok());
  rfs::metrics::OtlpExporterOptions exporter_options;
  exporter_options.resource_attributes = {{"service.name", "RfsWorker"}};
  exporter_options.interval = std::chrono::hours(1);  // exports below are explicit
  rfs::metrics::OtlpExporter exporter(
      registry, std::shared_ptr<rfs::net::IHttpTransport>(*std::move(transport)), exporter_options);

  CHECK_FALSE(exporter.ExportOnce().ok());  // the collector's 503
  CHECK_FALSE(exporter.last_error().ok());
  CHECK(exporter.ExportOnce().ok());
  exporter.Stop();  // a final export
  exporter.Stop();
  (*collector)->Stop();

  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(received.size() == 3);
  const rfs::net::HttpRequest& last = received.back();
  CHECK(last.method == "POST");
  CHECK(last.target == "/v1/metrics");
  CHECK(rfs::net::FindHeader(last.headers, "Content-Type") ==
        std::optional<std::string>("application/json"));
  json::value body = json::parse(last.body);
  const json::value& resource = body.at("resourceMetrics").at(0);
  CHECK(resource.at("resource").at("attributes").at(0).at("key") == "service.name");
  CHECK(resource.at("resource").at("attributes").at(0).at("value").at("stringValue") ==
        "RfsWorker");
  const json::array& metrics = resource.at("scopeMetrics").at(0).at("metrics").as_array();
  auto find = [&](const std::string& name) -> const json::object& {
    for (const auto& m : metrics) {
      if (m.at("name").as_string() == name) return m.as_object();
    }
    FAIL("no metric " << name);
    throw std::logic_error("unreachable");
  };
  const json::object& read = find("rfs_documents_read_total");
  CHECK(read.at("sum").at("isMonotonic") == true);
  CHECK(read.at("sum").at("aggregationTemporality") == 2);
  CHECK(read.at("sum").at("dataPoints").at(0).at("asInt") == "42");
  const json::object& gauge = find("rfs_bulk_concurrency");
  CHECK(gauge.at("gauge").at("dataPoints").at(0).at("asInt") == "4");
  const json::value& histogram = find("rfs_bulk_request_duration_seconds").at("histogram");
  const json::value& point = histogram.at("dataPoints").at(0);
  CHECK(point.at("count") == "4");
  CHECK(point.at("bucketCounts") == json::parse(R"(["1","2","0","1"])"));
  CHECK(point.at("explicitBounds") == json::parse("[0.01,0.1,1.0]"));
  const json::value& retries = find("rfs_bulk_retries_total").at("sum").at("dataPoints");
  CHECK(retries.as_array().size() == 2);
  bool labelled = false;
  for (const auto& attribute : retries.at(0).at("attributes").as_array()) {
    if (attribute.at("key") == "worker_id")
      labelled = attribute.at("value").at("stringValue") == "w1";
  }
  CHECK(labelled);
}
