// net::HttpServer: requests reach the handler whole (method, target, headers, body), keep-alive
// connections serve many requests, handlers run concurrently, oversized bodies get 413, a
// throwing handler gets 500, TLS works with a certificate the client trusts, a taken port is an
// error.
#include "rfs/net/http_server.hpp"

#include <atomic>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/errors.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "reindex_test_util.hpp"
#include "support/opensearch_double_certs.hpp"

namespace {

using rfs::net::HttpRequest;
using rfs::net::HttpResponse;

std::unique_ptr<rfs::net::IHttpTransport> Client(const std::string& url,
                                                 rfs::net::TlsOptions tls = {}) {
  rfs::net::HttpTransportOptions options;
  options.endpoint = url;
  options.tls = std::move(tls);
  auto transport = rfs::net::BeastHttpTransport::Open(options);
  REQUIRE(transport.ok());
  return *std::move(transport);
}

HttpResponse Echo(const HttpRequest& request) {
  if (request.target == "/throw") throw std::runtime_error("handler bug");
  HttpResponse response;
  response.status = request.method == "POST" ? 201 : 200;
  response.headers.emplace_back("Content-Type", "text/plain");
  response.body = request.method + " " + request.target + " " +
                  rfs::net::FindHeader(request.headers, "X-Test").value_or("-") + " " +
                  request.body;
  return response;
}

}  // namespace

TEST_CASE("HttpServer hands whole requests to its handler over keep-alive connections",
          "[net][tsan]") {
  rfs::net::HttpServerOptions options;
  options.max_request_body_bytes = 1000;
  auto server = rfs::net::HttpServer::Start(options, Echo);
  REQUIRE(server.ok());
  CHECK((*server)->url() == "http://127.0.0.1:" + std::to_string((*server)->port()));
  auto client = Client((*server)->url());
  for (int i = 0; i < 20; ++i) {
    HttpRequest request;
    request.method = "POST";
    request.target = "/items?n=" + std::to_string(i);
    request.headers.emplace_back("X-Test", "yes");
    request.body = std::string(100, 'x');
    auto response = client->Send(request);
    REQUIRE(response.ok());
    CHECK(response->status == 201);
    CHECK(response->body == "POST /items?n=" + std::to_string(i) + " yes " + std::string(100, 'x'));
  }
  HttpRequest big;
  big.method = "PUT";
  big.body = std::string(2000, 'y');
  auto refused = client->Send(big);
  REQUIRE(refused.ok());
  CHECK(refused->status == 413);
  HttpRequest bug;
  bug.target = "/throw";
  auto failed = client->Send(bug);
  REQUIRE(failed.ok());
  CHECK(failed->status == 500);
  CHECK(failed->body.find("handler bug") != std::string::npos);

  // Handlers run concurrently: 4 requests that each wait for the others finish together.
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  auto slow = rfs::net::HttpServer::Start({}, [&](const HttpRequest&) {
    const int now = ++inside;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    --inside;
    return HttpResponse{200, {}, "ok"};
  });
  REQUIRE(slow.ok());
  // Catch's assertions are for the test's own thread: the clients only count their answers.
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      rfs::net::HttpTransportOptions options;
      options.endpoint = (*slow)->url();
      auto c = rfs::net::BeastHttpTransport::Open(options);
      if (!c.ok()) return;
      auto r = (*c)->Send(HttpRequest{});
      if (r.ok() && r->status == 200) ++answered;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(answered.load() == 4);
  CHECK(most.load() >= 2);

  // The port is taken now.
  rfs::net::HttpServerOptions same;
  same.port = (*server)->port();
  auto taken = rfs::net::HttpServer::Start(same, Echo);
  CHECK(absl::IsUnavailable(taken.status()));
  (*server)->Stop();
  (*server)->Stop();  // idempotent
  CHECK_FALSE(Client("http://127.0.0.1:" + std::to_string(same.port))->Send(HttpRequest{}).ok());
}

TEST_CASE("HttpServer serves HTTPS with the configured certificate", "[net][tls]") {
  rfs::reindex::testutil::TempDir dir;
  auto certs = rfs::testing::MakeTestCertificates(dir.path().string());
  REQUIRE(certs.ok());
  rfs::net::HttpServerOptions options;
  options.tls = rfs::net::HttpServerTls{certs->server_cert_file, certs->server_key_file};
  auto server = rfs::net::HttpServer::Start(options, Echo);
  REQUIRE(server.ok());
  CHECK((*server)->url().starts_with("https://127.0.0.1:"));
  rfs::net::TlsOptions trust;
  trust.ca_cert_file = certs->ca_cert_file;
  auto response = Client((*server)->url(), trust)->Send(HttpRequest{});
  REQUIRE(response.ok());
  CHECK(response->body == "GET / - ");
  // A client that does not trust the CA is refused.
  CHECK_FALSE(Client((*server)->url())->Send(HttpRequest{}).ok());
  // Unreadable key files are bad options.
  options.tls->private_key_file = dir.path().string() + "/missing.pem";
  CHECK(absl::IsInvalidArgument(rfs::net::HttpServer::Start(options, Echo).status()));
}

TEST_CASE("a response whose header lines pass 8 KiB is read whole", "[net]") {
  // OpenSearch answers a template overlapping older ones with a Warning header that names every
  // one of them: 22 KB with 334 templates. The request was applied; reading the answer must not
  // fail (a failure was retried, and the template put again, without end). Beast sends header
  // values of at most 64 KiB: a head of 1 MB is made of several.
  size_t warning_bytes = 0;
  int warnings = 1;
  auto server = rfs::net::HttpServer::Start({}, [&](const HttpRequest& request) {
    HttpResponse response;
    response.status = 200;
    for (int i = 0; i < warnings; ++i) {
      response.headers.emplace_back("Warning",
                                    "299 OpenSearch \"" + std::string(warning_bytes, 'w') + "\"");
    }
    response.body = request.target;
    return response;
  });
  REQUIRE(server.ok());
  auto client = Client((*server)->url());
  for (auto [count, bytes] : {std::pair{1, size_t{22'000}}, std::pair{19, size_t{50'000}}}) {
    warnings = count;
    warning_bytes = bytes;
    HttpRequest request;
    request.target = "/_index_template/t";
    auto response = client->Send(request);
    INFO(count << " warnings of " << bytes << " bytes: " << response.status().ToString());
    REQUIRE(response.ok());
    CHECK(response->status == 200);
    CHECK(response->body == "/_index_template/t");
    CHECK(response->Header("warning").value_or("").size() > bytes);
  }
}

TEST_CASE("a response header line past 1 MiB is refused once, not retried", "[net]") {
  // Beast cannot send such a line: a plain socket answers every request with one.
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  std::atomic<int> answered{0};
  std::thread server([&] {
    boost::system::error_code ec;
    asio::ip::tcp::socket socket(io);
    acceptor.accept(socket, ec);
    if (ec) return;
    std::string head;
    asio::read_until(socket, asio::dynamic_buffer(head), "\r\n\r\n", ec);
    const std::string answer = "HTTP/1.1 200 OK\r\nWarning: 299 OpenSearch \"" +
                               std::string(size_t{1} << 21, 'w') +
                               "\"\r\nContent-Length: 0\r\n\r\n";
    asio::write(socket, asio::buffer(answer), ec);
    ++answered;
  });
  auto client = Client("http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()));
  HttpRequest request;
  request.target = "/_index_template/t";
  auto refused = client->Send(request);
  server.join();
  REQUIRE_FALSE(refused.ok());
  CHECK(absl::IsResourceExhausted(refused.status()));
  CHECK_FALSE(rfs::core::IsRetryable(refused.status()));
  CHECK(refused.status().message().find("a response header line longer than 1 MiB") !=
        std::string::npos);
  CHECK(answered == 1);
}
