#include <thread>

#include <catch2/catch.hpp>

#include "rfs/core/clock.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "support/opensearch_double.hpp"

namespace rfs::net {
namespace {

using rfs::testing::Fault;
using rfs::testing::OpenSearchDouble;
using rfs::testing::OpenSearchDoubleOptions;

std::unique_ptr<OpenSearchDouble> StartDouble(OpenSearchDoubleOptions options = {}) {
  auto server = OpenSearchDouble::Start(std::move(options));
  REQUIRE(server.ok());
  return *std::move(server);
}

std::unique_ptr<BeastHttpTransport> OpenTransport(HttpTransportOptions options) {
  auto transport = BeastHttpTransport::Open(std::move(options));
  REQUIRE(transport.ok());
  return *std::move(transport);
}

net::HttpRequest Get(std::string target) {
  net::HttpRequest request;
  request.target = std::move(target);
  return request;
}

TEST_CASE("transport sends requests and reuses keep-alive connections", "[reindex][http]") {
  auto server = StartDouble();
  auto transport = OpenTransport({.endpoint = server->endpoint()});
  for (int i = 0; i < 5; ++i) {
    auto response = transport->Send(Get("/"));
    REQUIRE(response.ok());
    CHECK(response->status == 200);
    CHECK(response->body.find("\"distribution\":\"opensearch\"") != std::string::npos);
    CHECK(response->Header("content-type").value_or("").starts_with("application/json"));
  }
  CHECK(transport->connections_opened() == 1);
  CHECK(server->stats().connections == 1);
}

TEST_CASE("a large response body is read whole, within the limit, and the connection kept",
          "[reindex][http]") {
  // Bodies of 256 KiB and more with a Content-Length are read straight into the response.
  auto server = StartDouble();
  auto transport = OpenTransport({.endpoint = server->endpoint()});
  std::string value(600 * 1024, 'x');
  for (size_t i = 0; i < value.size(); i += 97) value[i] = static_cast<char>('a' + i % 26);
  net::HttpRequest put;
  put.method = "PUT";
  put.target = "/big/_doc/1?refresh=true";
  put.headers.emplace_back("Content-Type", "application/json");
  put.body = "{\"v\":\"" + value + "\"}";
  auto stored = transport->Send(put);
  REQUIRE(stored.ok());
  REQUIRE(stored->status / 100 == 2);
  for (int i = 0; i < 3; ++i) {
    auto got = transport->Send(Get("/big/_doc/1"));
    REQUIRE(got.ok());
    CHECK(got->status == 200);
    CHECK(got->body.find(put.body) != std::string::npos);
    CHECK(got->body.size() > put.body.size());
  }
  CHECK(transport->connections_opened() == 1);

  auto small = OpenTransport({.endpoint = server->endpoint(), .max_response_bytes = 512 * 1024});
  auto refused = small->Send(Get("/big/_doc/1"));
  REQUIRE_FALSE(refused.ok());
  CHECK(absl::IsResourceExhausted(refused.status()));
  CHECK(refused.status().message().find("larger than the configured limit") != std::string::npos);
}

TEST_CASE("transport returns error statuses as responses", "[reindex][http]") {
  auto server = StartDouble();
  auto transport = OpenTransport({.endpoint = server->endpoint()});
  auto missing = transport->Send(Get("/nope/_doc/1"));
  REQUIRE(missing.ok());
  CHECK(missing->status == 404);
  CHECK(missing->body.find("index_not_found_exception") != std::string::npos);

  net::HttpRequest head;
  head.method = "HEAD";
  head.target = "/nope";
  auto head_response = transport->Send(head);
  REQUIRE(head_response.ok());
  CHECK(head_response->status == 404);
  // The connection survives a bodiless HEAD response.
  auto again = transport->Send(Get("/"));
  REQUIRE(again.ok());
  CHECK(again->status == 200);
  CHECK(transport->connections_opened() == 1);
}

TEST_CASE("transport sends basic auth and never shows the password", "[reindex][http]") {
  auto server = StartDouble({.username = "admin", .password = "s3cr3t-Pa55"});
  auto anonymous = OpenTransport({.endpoint = server->endpoint()});
  auto denied = anonymous->Send(Get("/"));
  REQUIRE(denied.ok());
  CHECK(denied->status == 401);
  CHECK(denied->Header("www-authenticate").has_value());

  HttpTransportOptions options{.endpoint = server->endpoint(),
                               .basic_auth = BasicAuth{"admin", "s3cr3t-Pa55"}};
  const std::string debug = DebugString(options);
  CHECK(debug.find("s3cr3t") == std::string::npos);
  CHECK(debug.find("admin") != std::string::npos);
  auto transport = OpenTransport(options);
  CHECK(transport->endpoint().find("s3cr3t") == std::string::npos);
  auto allowed = transport->Send(Get("/"));
  REQUIRE(allowed.ok());
  CHECK(allowed->status == 200);

  auto wrong =
      OpenTransport({.endpoint = server->endpoint(), .basic_auth = BasicAuth{"admin", "wrong"}});
  auto rejected = wrong->Send(Get("/"));
  REQUIRE(rejected.ok());
  CHECK(rejected->status == 401);
}

TEST_CASE("transport rejects malformed endpoints without echoing credentials", "[reindex][http]") {
  auto with_user = BeastHttpTransport::Open({.endpoint = "http://admin:hunter2@localhost:9200"});
  REQUIRE(absl::IsInvalidArgument(with_user.status()));
  CHECK(with_user.status().message().find("hunter2") == std::string::npos);
  // Passwords holding '@' or '/' leave no part of themselves in the message either.
  for (const char* endpoint : {"http://admin:hun@ter2@localhost:9200",
                               "https://admin:hun/ter2@localhost:9200", "http://admin:hunter2@"}) {
    auto refused = BeastHttpTransport::Open({.endpoint = endpoint});
    INFO(endpoint);
    REQUIRE(absl::IsInvalidArgument(refused.status()));
    CHECK(refused.status().message().find("hun") == std::string::npos);
    CHECK(refused.status().message().find("ter2") == std::string::npos);
  }
  CHECK(absl::IsInvalidArgument(BeastHttpTransport::Open({.endpoint = "ftp://host"}).status()));
  CHECK(absl::IsInvalidArgument(BeastHttpTransport::Open({.endpoint = "http://:9200"}).status()));
  CHECK(absl::IsInvalidArgument(BeastHttpTransport::Open({.endpoint = "http://h:99x"}).status()));
  auto ok = BeastHttpTransport::Open({.endpoint = "https://search.example.com/prefix/"});
  REQUIRE(ok.ok());
  CHECK((*ok)->endpoint() == "https://search.example.com:443/prefix");
}

TEST_CASE("transport maps connection failures to Unavailable", "[reindex][http]") {
  uint16_t port = 0;
  {
    auto server = StartDouble();
    port = server->port();
  }  // stopped: nothing listens on the port now
  auto transport = OpenTransport({.endpoint = "http://127.0.0.1:" + std::to_string(port),
                                  .connect_timeout = std::chrono::milliseconds(2000)});
  auto response = transport->Send(Get("/"));
  CHECK(absl::IsUnavailable(response.status()));
  CHECK(response.status().message().find("127.0.0.1") != std::string::npos);
}

TEST_CASE("transport times out slow responses and recovers", "[reindex][http]") {
  auto server = StartDouble();
  testing::FaultOptions faults;
  faults.path_contains = "/slow";
  faults.schedule[1] = Fault::kSlowResponse;
  faults.slow_delay = std::chrono::milliseconds(1500);
  server->SetFaults(faults);
  auto transport = OpenTransport({.endpoint = server->endpoint()});
  net::HttpRequest slow = Get("/slow/_doc/1");
  slow.timeout = std::chrono::milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  auto response = transport->Send(slow);
  CHECK(absl::IsDeadlineExceeded(response.status()));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1400));
  // The timed-out connection is dropped; the next request opens a new one.
  auto next = transport->Send(Get("/"));
  REQUIRE(next.ok());
  CHECK(next->status == 200);
  CHECK(transport->connections_opened() == 2);
}

TEST_CASE("transport reports a connection reset as Unavailable", "[reindex][http]") {
  auto server = StartDouble();
  testing::FaultOptions faults;
  faults.path_contains = "";
  faults.schedule[1] = Fault::kResetBeforeApply;
  server->SetFaults(faults);
  auto transport = OpenTransport({.endpoint = server->endpoint()});
  auto response = transport->Send(Get("/"));
  CHECK(absl::IsUnavailable(response.status()));
  auto next = transport->Send(Get("/"));
  REQUIRE(next.ok());
  CHECK(next->status == 200);
}

TEST_CASE("transport discards pooled connections the server closed", "[reindex][http]") {
  auto server = StartDouble();
  auto transport = OpenTransport({.endpoint = server->endpoint()});
  net::HttpRequest closing = Get("/");
  REQUIRE(transport->Send(closing).ok());
  // A request with Connection: close makes the server close after answering; the transport must
  // then open a fresh connection rather than fail on the dead one.
  closing.headers.emplace_back("Connection", "close");
  auto closed = transport->Send(closing);
  REQUIRE(closed.ok());
  auto next = transport->Send(Get("/"));
  REQUIRE(next.ok());
  CHECK(next->status == 200);
  CHECK(transport->connections_opened() == 2);
}

TEST_CASE("transport serves concurrent callers", "[reindex][http][tsan]") {
  auto server = StartDouble();
  auto transport = OpenTransport({.endpoint = server->endpoint()});
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto response = transport->Send(Get("/"));
        if (response.ok() && response->status == 200) ok.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(ok.load() == 160);
  CHECK(transport->connections_opened() <= 8);
}

}  // namespace
}  // namespace rfs::net

using rfs::net::BeastHttpTransport;

TEST_CASE("credentials over plain http to another host are warned about once, or refused",
          "[net][http][security]") {
  std::vector<std::string> warnings;
  rfs::net::SetPlainHttpCredentialsPolicy(rfs::net::PlainHttpCredentials::kWarn,
                                          [&](const std::string& w) { warnings.push_back(w); });
  rfs::net::HttpTransportOptions with_password;
  with_password.endpoint = "http://192.0.2.10:9200";
  with_password.basic_auth = rfs::net::BasicAuth{"admin", "planted-password"};
  CHECK(BeastHttpTransport::Open(with_password).ok());
  CHECK(BeastHttpTransport::Open(with_password).ok());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("basic-auth password") != std::string::npos);
  CHECK(warnings[0].find("192.0.2.10") != std::string::npos);
  CHECK(warnings[0].find("planted-password") == std::string::npos);
  // A bearer token counts; loopback, https and no credentials do not.
  rfs::net::HttpTransportOptions bearer;
  bearer.endpoint = "http://console.example:8080";
  bearer.sends_bearer_token = true;
  CHECK(BeastHttpTransport::Open(bearer).ok());
  CHECK(warnings.size() == 2);
  for (const char* quiet : {"http://127.0.0.1:9200", "http://localhost:9200", "http://[::1]:9200",
                            "https://192.0.2.10:9200"}) {
    with_password.endpoint = quiet;
    CHECK(BeastHttpTransport::Open(with_password).ok());
  }
  rfs::net::HttpTransportOptions anonymous;
  anonymous.endpoint = "http://192.0.2.11:9200";
  CHECK(BeastHttpTransport::Open(anonymous).ok());
  CHECK(warnings.size() == 2);

  rfs::net::SetPlainHttpCredentialsPolicy(rfs::net::PlainHttpCredentials::kRefuse);
  with_password.endpoint = "http://192.0.2.12:9200";
  auto refused = BeastHttpTransport::Open(with_password);
  REQUIRE(absl::IsInvalidArgument(refused.status()));
  CHECK(refused.status().message().find("refusing") != std::string::npos);
  CHECK(BeastHttpTransport::Open(anonymous).ok());
  rfs::net::SetPlainHttpCredentialsPolicy(rfs::net::PlainHttpCredentials::kWarn);
}

TEST_CASE("loopback hosts are told apart from the rest", "[net][security]") {
  for (const char* host : {"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1"}) {
    CHECK(rfs::net::IsLoopbackHost(host));
  }
  for (const char* host :
       {"127.0.0.1.evil.example", "10.0.0.1", "0.0.0.0", "::", "localhost.x", "127.0.0", ""}) {
    INFO(host);
    CHECK_FALSE(rfs::net::IsLoopbackHost(host));
  }
}
