// The migration console against hostile and odd clients, over real sockets: stalled uploads and
// heads without a token do not lock its clients out (and show in its metrics), a body is read
// only from a peer whose token opens the route and is bounded even then, methods are the OpenAPI
// document's (405 with Allow otherwise), heads it cannot take are answered (414, 431, 400), and
// the bearer scheme is case-insensitive.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/console/console_server.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "support/metrics_text.hpp"
#include "support/temp_dir.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* kHostileAdminToken = "admin-token-for-hostile-tests-0123";

// A console with a metrics endpoint over a fresh SQLite store.
struct HostileConsole {
  explicit HostileConsole(size_t max_connections = 256) : dir("rfs-console-hostile") {
    rfs::console::ConsoleServerOptions options;
    options.store.uri = "sqlite:" + dir.File("console.db");
    options.service.admin_token = kHostileAdminToken;
    options.http.max_connections = max_connections;
    options.metrics_port = 0;
    options.metrics_bind_address = "127.0.0.1";
    auto started = rfs::console::ConsoleServer::Start(std::move(options));
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    server = *std::move(started);
  }

  std::unique_ptr<rfs::net::BeastHttpTransport> Client(
      std::chrono::milliseconds timeout = 10'000ms) const {
    rfs::net::HttpTransportOptions options;
    options.endpoint = server->url();
    options.connect_timeout = timeout;
    options.response_timeout = timeout;
    auto transport = rfs::net::BeastHttpTransport::Open(options);
    REQUIRE(transport.ok());
    return *std::move(transport);
  }

  // One request on a fresh connection: its status, or 0 when no answer came in time.
  int Call(const std::string& method, const std::string& target, const std::string& token,
           const std::string& body = "", std::chrono::milliseconds timeout = 5000ms) const {
    rfs::net::HttpRequest request;
    request.method = method;
    request.target = target;
    if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
    request.body = body;
    auto response = Client(timeout)->Send(request);
    return response.ok() ? response->status : 0;
  }

  std::string CreateSession(const std::string& name) const {
    rfs::net::HttpRequest request;
    request.method = "POST";
    request.target = "/sessions";
    request.headers = {{"Authorization", std::string("Bearer ") + kHostileAdminToken},
                       {"Content-Type", "application/json"}};
    request.body = json::serialize(json::object{{"name", name}});
    auto response = Client()->Send(request);
    REQUIRE(response.ok());
    REQUIRE(response->status == 201);
    return std::string(json::parse(response->body).at("token").as_string());
  }

  rfs::test::TempDir dir;
  std::unique_ptr<rfs::console::ConsoleServer> server;
};

// Enough descriptors for a few hundred connections on both ends (this process holds both).
void RaiseDescriptorLimit() {
  rlimit limit{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &limit) == 0);
  if (limit.rlim_cur < 4096) {
    limit.rlim_cur = std::min<rlim_t>(4096, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// A loopback connection to `port` that sends `bytes` (if any) and stays open.
int Hold(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  return fd;
}

// What the server sent on `fd` within `wait`: up to the end of the head and the body its
// Content-Length announces, or up to the close.
std::string ReadAnswer(int fd, std::chrono::milliseconds wait) {
  std::string out;
  const auto until = std::chrono::steady_clock::now() + wait;
  char buffer[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left <= 0ms) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
    const size_t head_end = out.find("\r\n\r\n");
    if (head_end == std::string::npos) continue;
    const size_t length_at = out.find("Content-Length: ");
    if (length_at == std::string::npos || length_at > head_end) break;
    const size_t length = std::stoul(out.substr(length_at + 16));
    if (out.size() >= head_end + 4 + length) break;
  }
  return out;
}

int StatusOf(const std::string& answer) {
  if (answer.size() < 12 || answer.rfind("HTTP/1.", 0) != 0) return 0;
  return std::stoi(answer.substr(9, 3));
}

// The value of the console's metric `name` with label `label` (e.g. reason="refused"); -1 if
// absent.
double Metric(const std::string& text, const std::string& name, const std::string& label) {
  size_t at = 0;
  while ((at = text.find(name + "{", at)) != std::string::npos) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    at = end;
    if (line.find(label) == std::string::npos) continue;
    return std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
  }
  return -1;
}

}  // namespace

TEST_CASE("stalled uploads and heads without a token do not lock the console's clients out",
          "[console][security]") {
  RaiseDescriptorLimit();
  HostileConsole console;
  const std::string token = console.CreateSession("held");
  const std::string status = "/sessions/held/backfill/work-items/status";
  // A worker's keep-alive connection, authenticated by its last request.
  auto worker = console.Client();
  rfs::net::HttpRequest get_status;
  get_status.target = status;
  get_status.headers = {{"Authorization", "Bearer " + token}};
  auto first = worker->Send(get_status);
  REQUIRE(first.ok());
  REQUIRE(first->status == 200);
  REQUIRE(worker->connections_opened() == 1);

  // 300 uploads without a token stalled inside a small body, and 100 half heads: more than the
  // 256 connections the console keeps.
  std::vector<int> held;
  std::vector<int> uploads;
  for (int i = 0; i < 300; ++i) {
    uploads.push_back(Hold(console.server->port(),
                           "POST /sessions/held/backfill/work-items HTTP/1.1\r\nHost: x\r\n"
                           "Content-Type: application/json\r\nContent-Length: 8000\r\n\r\n" +
                               std::string(100, '{')));
  }
  for (int i = 0; i < 100; ++i) {
    held.push_back(Hold(console.server->port(), "GET /health HTTP/1.1\r\nHo"));
  }

  // Health and status are still answered, at once, over and over.
  for (int i = 0; i < 20; ++i) {
    const auto started = std::chrono::steady_clock::now();
    CHECK(console.Call("GET", "/health", "") == 200);
    CHECK(console.Call("GET", status, token) == 200);
    CHECK(std::chrono::steady_clock::now() - started < 3s);
    // The attack goes on while they are answered.
    held.push_back(Hold(console.server->port(), "GET /health HTTP/1.1\r\nHo"));
  }
  // The worker's connection was kept for it: its next call goes over the same one.
  auto again = worker->Send(get_status);
  REQUIRE(again.ok());
  CHECK(again->status == 200);
  CHECK(worker->connections_opened() == 1);

  // Uploads not closed to make room were refused from their head, their bodies never read.
  int refused = 0;
  for (int fd : uploads) refused += StatusOf(ReadAnswer(fd, 20ms)) == 401 ? 1 : 0;
  INFO("uploads answered 401: " << refused);
  CHECK(refused > 0);

  // The metrics say what happened.
  const std::string metrics = rfs::test::ScrapeMetrics(console.server->metrics_url());
  INFO(metrics);
  CHECK(Metric(metrics, "rfs_console_connections_dropped_total",
               "reason=\"evicted_unauthenticated\"") > 0);
  CHECK(Metric(metrics, "rfs_console_requests_total", "code=\"401\"") >= refused);
  for (int fd : held) close(fd);
  for (int fd : uploads) close(fd);
}

TEST_CASE("a body is read only from a peer whose token opens the route, and only so much",
          "[console][security]") {
  HostileConsole console;
  const std::string token = console.CreateSession("bodies");
  const int port = console.server->port();
  const std::string items = "/sessions/bodies/backfill/work-items";
  // The head alone, the body never sent: refused at once (the console does not wait for it),
  // and for want of a token whatever the body's announced size.
  for (const std::string& length : {std::string("100"), std::string("8000000")}) {
    for (const std::string& authorization : {std::string(), std::string("Bearer wrong-token")}) {
      const int fd = Hold(
          port, "POST " + items + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + "\r\n" +
                    (authorization.empty() ? "" : "Authorization: " + authorization + "\r\n") +
                    "\r\n");
      const std::string answer = ReadAnswer(fd, 2000ms);
      INFO(length << " " << answer);
      CHECK(StatusOf(answer) == (authorization.empty() ? 401 : 403));
      if (authorization.empty())
        CHECK(answer.find("WWW-Authenticate: Bearer") != std::string::npos);
      close(fd);
    }
  }
  // The session's own token: a body up to the limit is read; a larger one is refused from its
  // Content-Length, so that stalled uploads cannot hold much memory even with a token.
  const size_t limit = rfs::console::ConsoleService::kMaxRequestBodyBytes;
  CHECK(limit <= 128 * 1024);
  {
    const int fd =
        Hold(port, "POST " + items + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                       "\r\nContent-Length: " + std::to_string(limit + 1) + "\r\n\r\n");
    const std::string answer = ReadAnswer(fd, 2000ms);
    INFO(answer);
    CHECK(StatusOf(answer) == 413);
    close(fd);
  }
  std::string padded = R"({"work_item_id": "padded", "index_name": "logs")";
  padded += std::string(limit - padded.size() - 1, ' ') + "}";
  CHECK(console.Call("POST", items, token, padded) == 201);
  // Without a body, a call without a token is still answered by its route.
  CHECK(console.Call("GET", "/health", "") == 200);
  CHECK(console.Call("GET", items, "") == 401);
}

TEST_CASE("each route takes the methods the OpenAPI document gives it, 405 with Allow otherwise",
          "[console]") {
  HostileConsole console;
  auto client = console.Client();
  rfs::net::HttpRequest get;
  get.target = "/openapi.json";
  auto document = client->Send(get);
  REQUIRE(document.ok());
  const json::value spec = json::parse(document->body);
  const json::object& paths = spec.at("paths").as_object();
  size_t checked = 0;
  for (const auto& [path, item] : paths) {
    std::string target(path);
    for (const auto& [name, value] : {std::pair<std::string, std::string>{"{name}", "nosuch"},
                                      {"{space}", "backfill"},
                                      {"{id}", "item-1"}}) {
      if (const size_t at = target.find(name); at != std::string::npos) {
        target.replace(at, name.size(), value);
      }
    }
    std::vector<std::string> documented;
    for (const char* method : {"GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"}) {
      std::string lower(method);
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      if (item.as_object().contains(lower)) documented.push_back(method);
    }
    std::string allow;
    for (const auto& m : documented) allow += allow.empty() ? m : ", " + m;
    for (const char* method : {"GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"}) {
      rfs::net::HttpRequest request;
      request.method = method;
      request.target = target;
      request.headers = {{"Authorization", std::string("Bearer ") + kHostileAdminToken}};
      auto response = console.Client()->Send(request);
      REQUIRE(response.ok());
      INFO(method << " " << target << ": " << response->status << " " << response->body);
      if (std::find(documented.begin(), documented.end(), method) != documented.end()) {
        CHECK(response->status != 405);
      } else {
        CHECK(response->status == 405);
        CHECK(rfs::net::FindHeader(response->headers, "Allow").value_or("") == allow);
        ++checked;
      }
    }
  }
  CHECK(checked > 30);
  // The page is read with GET only.
  rfs::net::HttpRequest post_page;
  post_page.method = "POST";
  post_page.target = "/";
  auto page = client->Send(post_page);
  REQUIRE(page.ok());
  CHECK(page->status == 405);
  CHECK(rfs::net::FindHeader(page->headers, "Allow").value_or("") == "GET");
}

TEST_CASE("heads the console cannot take are answered 414, 431 or 400, not dropped",
          "[console][security]") {
  HostileConsole console;
  const int port = console.server->port();
  auto answer_to = [&](const std::string& request) {
    const int fd = Hold(port, request);
    std::string answer = ReadAnswer(fd, 3000ms);
    close(fd);
    return answer;
  };
  const std::string long_line =
      answer_to("GET /health?" + std::string(20'000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(StatusOf(long_line) == 414);
  CHECK(long_line.find("Connection: close") != std::string::npos);
  CHECK(StatusOf(answer_to("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20'000, 'b') +
                           "\r\n\r\n")) == 431);
  CHECK(StatusOf(answer_to("GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: " +
                           std::string(9000, 'b') + "\r\n\r\n")) == 431);
  CHECK(StatusOf(answer_to("GET /health HTTP/1.1\r\nHost: x\r\nX-A: a" + std::string(1, '\0') +
                           "b\r\n\r\n")) == 400);
  CHECK(StatusOf(answer_to("GET /health HTTP/1.1\r\nHo st: x\r\n\r\n")) == 400);
  CHECK(StatusOf(answer_to("G@T /health HTTP/1.1\r\nHost: x\r\n\r\n")) == 400);
  // A good request on a fresh connection is still served.
  CHECK(StatusOf(answer_to("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")) == 200);
}

TEST_CASE("the bearer scheme is case-insensitive", "[console]") {
  HostileConsole console;
  const std::string token = console.CreateSession("cases");
  const std::string status = "/sessions/cases/backfill/work-items/status";
  for (const std::string scheme : {"Bearer ", "bearer ", "BEARER ", "bEaReR   "}) {
    rfs::net::HttpRequest request;
    request.target = status;
    request.headers = {{"Authorization", scheme + token}};
    auto response = console.Client()->Send(request);
    REQUIRE(response.ok());
    INFO("'" << scheme << "'");
    CHECK(response->status == 200);
  }
  for (const std::string& bad :
       std::vector<std::string>{"Bearer", "Bearer ", "Bearertoken", "Basic " + token}) {
    rfs::net::HttpRequest request;
    request.target = status;
    request.headers = {{"Authorization", bad}};
    auto response = console.Client()->Send(request);
    REQUIRE(response.ok());
    INFO("'" << bad << "'");
    CHECK(response->status == 401);
  }
}

TEST_CASE("a transport told to skip TLS checks says so, once per endpoint", "[console][tls]") {
  std::vector<std::string> warnings;
  rfs::net::SetPlainHttpCredentialsPolicy(
      rfs::net::PlainHttpCredentials::kWarn,
      [&warnings](const std::string& warning) { warnings.push_back(warning); });
  auto open = [](const std::string& endpoint, bool insecure) {
    rfs::net::HttpTransportOptions options;
    options.endpoint = endpoint;
    options.tls.insecure = insecure;
    return rfs::net::BeastHttpTransport::Open(options).ok();
  };
  CHECK(open("https://127.0.0.1:9443", false));
  CHECK(warnings.empty());
  CHECK(open("https://127.0.0.1:9443", true));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("TLS certificate and host-name checks are off for "
                         "https://127.0.0.1:9443") != std::string::npos);
  CHECK(open("https://127.0.0.1:9443", true));
  CHECK(warnings.size() == 1);
  CHECK(open("https://127.0.0.1:9444", true));
  CHECK(warnings.size() == 2);
  rfs::net::SetPlainHttpCredentialsPolicy(rfs::net::PlainHttpCredentials::kWarn);
}
