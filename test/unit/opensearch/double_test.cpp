// The OpenSearch double is only as useful as it is strict: where it is more lenient than a real
// cluster, bugs hide. These cases pin the behaviours the tools depend on, each as OpenSearch
// documents or implements it.
#include <filesystem>
#include <fstream>
#include <set>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/clock.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/gzip.hpp"

#include "support/corpus.hpp"
#include "support/double_connection.hpp"
#include "support/opensearch_double.hpp"
#include "support/opensearch_double_internal.hpp"

namespace {

namespace json = boost::json;
using rfs::net::HttpRequest;
using rfs::net::HttpResponse;
using rfs::testing::OpenSearchDouble;
using rfs::testing::OpenSearchDoubleOptions;

struct Cluster : rfs::test::DoubleConnection {
  explicit Cluster(OpenSearchDoubleOptions options = {}) : DoubleConnection(std::move(options)) {}
  HttpResponse Send(std::string method, std::string target, std::string body = "",
                    std::string content_type = "application/json") {
    HttpRequest request;
    request.method = std::move(method);
    request.target = std::move(target);
    if (!content_type.empty()) request.headers.emplace_back("Content-Type", content_type);
    request.body = std::move(body);
    auto response = transport->Send(request);
    REQUIRE(response.ok());
    return *std::move(response);
  }
  int64_t Count(const std::string& index) {
    const HttpResponse r = Send("GET", "/" + index + "/_count");
    REQUIRE(r.status == 200);
    return json::parse(r.body).as_object().at("count").to_number<int64_t>();
  }
};

TEST_CASE("the double refuses a body without a supported Content-Type (406)", "[double]") {
  Cluster c;
  c.server->AllowProtocolErrors();  // provoked on purpose
  // (The transport adds application/json to a body without a type, so "missing" is not sent.)
  const HttpResponse text = c.Send("PUT", "/i/_doc/1", R"({"a":1})", "text/plain");
  CHECK(text.status == 406);
  CHECK(text.body.find("Content-Type header [text/plain] is not supported") != std::string::npos);
  CHECK(c.Send("PUT", "/i/_doc/1", R"({"a":1})", "application/json; charset=UTF-8").status == 201);
}

TEST_CASE("the double rejects unknown query parameters as OpenSearch does", "[double]") {
  Cluster c;
  c.server->AllowProtocolErrors();  // provoked on purpose
  const HttpResponse r = c.Send("PUT", "/i/_doc/1?refesh=true", R"({"a":1})");
  CHECK(r.status == 400);
  CHECK(r.body.find("contains unrecognized parameter: [refesh]") != std::string::npos);
  CHECK(c.Send("GET", "/i/_search?sizee=3").status == 400);
  CHECK(c.Send("PUT", "/i/_doc/1?refresh=true&routing=r", R"({"a":1})").status == 201);
}

TEST_CASE("the double shows writes to search only after a refresh", "[double]") {
  rfs::core::FakeClock clock;
  OpenSearchDoubleOptions options;
  options.clock = &clock;
  Cluster c(options);
  REQUIRE(c.Send("PUT", "/i", R"({"settings":{"index":{"number_of_shards":1}}})").status == 200);
  REQUIRE(c.Send("PUT", "/i/_doc/1", R"({"a":1})").status == 201);
  // A real-time get sees it at once; search does not.
  CHECK(c.Send("GET", "/i/_doc/1").status == 200);
  CHECK(c.Count("i") == 0);
  REQUIRE(c.Send("POST", "/i/_refresh").status == 200);
  CHECK(c.Count("i") == 1);
  // refresh=true on the write publishes it.
  REQUIRE(c.Send("PUT", "/i/_doc/2?refresh=true", R"({"a":2})").status == 201);
  CHECK(c.Count("i") == 2);
  // And the periodic refresh (index.refresh_interval, 1 s by default).
  REQUIRE(c.Send("PUT", "/i/_doc/3", R"({"a":3})").status == 201);
  CHECK(c.Count("i") == 2);
  clock.Advance(std::chrono::seconds(1));
  CHECK(c.Count("i") == 3);
}

TEST_CASE("the double routes documents to shards: one _id under two routings is two documents",
          "[double]") {
  Cluster c;
  REQUIRE(c.Send("PUT", "/i", R"({"settings":{"index":{"number_of_shards":5}}})").status == 200);
  // Some pair of routings lands in different shards; find one by writing and counting.
  int written = 0;
  for (int r = 0; r < 8; ++r) {
    const std::string target = "/i/_doc/same?routing=r" + std::to_string(r) + "&refresh=true";
    const HttpResponse w = c.Send("PUT", target, R"({"r":)" + std::to_string(r) + "}");
    REQUIRE((w.status == 200 || w.status == 201));
    written += w.status == 201 ? 1 : 0;
  }
  CHECK(written > 1);  // Several shards hold a document "same".
  CHECK(c.Count("i") == written);
  // A get reads the shard its routing names (r7 wrote last into its shard).
  const HttpResponse got = c.Send("GET", "/i/_doc/same?routing=r7");
  REQUIRE(got.status == 200);
  CHECK(json::parse(got.body).as_object().at("_routing").as_string() == "r7");
  // Sequence numbers are per shard: they restart in every shard.
  const HttpResponse other = c.Send("PUT", "/i/_doc/x?routing=r0", R"({"n":1})");
  REQUIRE(other.status == 201);
}

TEST_CASE("http.max_content_length applies to the decompressed body", "[double]") {
  OpenSearchDoubleOptions options;
  options.max_content_length = 64 << 10;
  Cluster c(options);
  std::string bulk;
  while (bulk.size() < (200 << 10)) {
    bulk += R"({"index":{"_index":"i"}})"
            "\n"
            R"({"text":")" +
            std::string(1000, 'a') + "\"}\n";
  }
  auto gz = rfs::net::GzipCompress(bulk);
  REQUIRE(gz.ok());
  REQUIRE(gz->size() < options.max_content_length);  // Small on the wire...
  HttpRequest request;
  request.method = "POST";
  request.target = "/_bulk";
  request.headers = {{"Content-Type", "application/x-ndjson"}, {"Content-Encoding", "gzip"}};
  request.body = *gz;
  auto response = c.transport->Send(request);
  REQUIRE(response.ok());
  CHECK(response->status == 413);  // ...too large once inflated.
}

TEST_CASE("the double's clock: _cat/health epoch, and a Date header only when asked", "[double]") {
  rfs::core::FakeClock clock;
  clock.Set(rfs::core::IClock::TimePoint(std::chrono::seconds(1'700'000'000)));
  OpenSearchDoubleOptions options;
  options.clock = &clock;
  {
    Cluster plain(options);
    const HttpResponse health = plain.Send("GET", "/_cat/health?format=json");
    REQUIRE(health.status == 200);
    CHECK(json::parse(health.body).as_array().at(0).as_object().at("epoch").as_string() ==
          "1700000000");
    CHECK_FALSE(health.Header("Date").has_value());  // OpenSearch's HTTP layer sends none.
  }
  options.send_date_header = true;
  Cluster managed(options);
  const HttpResponse r = managed.Send("GET", "/");
  CHECK(r.Header("Date") == "Tue, 14 Nov 2023 22:13:20 GMT");
}

}  // namespace

namespace {

// The query parameters the spec lists for `method` of `path` (e.g. "/{index}/_doc/{id}", "put"),
// read from its `$ref: '#/components/parameters/<op>::query.<name>'` lines.
std::set<std::string> SpecParameters(const std::filesystem::path& file, const std::string& path,
                                     const std::string& method) {
  std::ifstream in(file);
  std::string line;
  bool in_path = false;
  bool in_method = false;
  std::set<std::string> out;
  while (std::getline(in, line)) {
    if (line.starts_with("  /")) {
      in_path = line == "  " + path + ":";
      in_method = false;
      continue;
    }
    if (!in_path) continue;
    if (line.size() > 4 && line.starts_with("    ") && line[4] != ' ') {
      in_method = line == "    " + method + ":";
      continue;
    }
    if (!in_method) continue;
    const size_t query = line.find("::query.");
    if (query == std::string::npos) continue;
    const size_t end = line.find('\'', query);
    out.insert(line.substr(query + 8, end - query - 8));
  }
  return out;
}

}  // namespace

TEST_CASE("the double accepts no query parameter the OpenSearch spec does not list", "[double]") {
  auto spec = rfs::test::CorpusRoot("the OpenSearch REST spec");  // skips without ../shared
  const auto api = *spec / ".." / "spec" / "opensearch-api" / "namespaces";
  REQUIRE(std::filesystem::exists(api / "_core.yaml"));
  struct Case {
    std::vector<std::string> segments;
    std::string method;
    std::filesystem::path file;
    std::string path;
    std::string spec_method;
  };
  const std::vector<Case> cases = {
      {{"i", "_doc", "1"}, "PUT", api / "_core.yaml", "/{index}/_doc/{id}", "put"},
      {{"i", "_doc", "1"}, "GET", api / "_core.yaml", "/{index}/_doc/{id}", "get"},
      {{"i", "_doc", "1"}, "DELETE", api / "_core.yaml", "/{index}/_doc/{id}", "delete"},
      {{"i", "_doc"}, "POST", api / "_core.yaml", "/{index}/_doc", "post"},
      {{"i", "_create", "1"}, "PUT", api / "_core.yaml", "/{index}/_create/{id}", "put"},
      {{"_bulk"}, "POST", api / "_core.yaml", "/_bulk", "post"},
      {{"i", "_search"}, "POST", api / "_core.yaml", "/{index}/_search", "post"},
      {{"i", "_count"}, "POST", api / "_core.yaml", "/{index}/_count", "post"},
      {{"i", "_refresh"}, "POST", api / "indices.yaml", "/{index}/_refresh", "post"},
      {{"i", "_settings"}, "GET", api / "indices.yaml", "/{index}/_settings", "get"},
      {{"i", "_settings"}, "PUT", api / "indices.yaml", "/{index}/_settings", "put"},
      {{"_cat", "health"}, "GET", api / "cat.yaml", "/_cat/health", "get"},
  };
  for (const auto& c : cases) {
    const auto listed = SpecParameters(c.file, c.path, c.spec_method);
    INFO(c.spec_method << " " << c.path);
    REQUIRE_FALSE(listed.empty());
    for (std::string_view name : rfs::testing::internal::AllowedParams(c.segments, c.method)) {
      INFO("parameter " << name);
      CHECK(listed.count(std::string(name)) == 1);
    }
  }
}

TEST_CASE("the double returns _source as sent, and HEAD answers without a body", "[double]") {
  Cluster c;
  // Number texts a parse-and-print would change (the digits of a double, 1.39 as 1.39E0), and
  // whitespace.
  const std::string source = R"({"rating":-6.1499999999999996E-6,"n":1.39, "s":"x"})";
  REQUIRE(c.Send("PUT", "/i/_doc/1?refresh=true", source).status == 201);
  const HttpResponse got = c.Send("GET", "/i/_doc/1");
  REQUIRE(got.status == 200);
  CHECK(got.body.find("\"_source\":" + source) != std::string::npos);
  const HttpResponse searched = c.Send("POST", "/i/_search", R"({"query":{"match_all":{}}})");
  REQUIRE(searched.status == 200);
  CHECK(searched.body.find("\"_source\":" + source) != std::string::npos);
  CHECK(
      json::parse(searched.body).as_object().at("hits").as_object().at("hits").as_array().size() ==
      1);

  // A faulted HEAD: the status, no body.
  rfs::testing::FaultOptions faults;
  faults.reject_429 = 1.0;
  faults.path_contains = "/i";
  c.server->SetFaults(faults);
  const HttpResponse head = c.Send("HEAD", "/i", "", "");
  CHECK(head.status == 429);
  CHECK(head.body.empty());
}
