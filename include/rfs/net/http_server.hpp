// HttpServer: a small HTTP/1.1 server (Boost.Beast, optional TLS) for the services rfs runs
// itself, such as the migration console.
//
// Connections are served by C++20 coroutines on a fixed pool of threads; each request is handed
// to one synchronous handler on one of those threads, so a handler may block (a database call)
// for as long as the pool has other threads. Keep-alive, a request-size cap (413 above it), an
// idle timeout per connection, and a 500 for a handler that throws. The handler sees the whole
// request and returns the whole response: fine for the small JSON bodies of a control API.
//
// Against peers that hold connections open: a request's head (line and headers) must arrive
// within `request_head_timeout` of its first byte; `on_head` sees the head before any body is
// read (to authenticate, and to admit a body only to a caller it knows). At most
// `max_connections` are open at once. A new connection past that closes, first, the oldest
// connection whose last request was not authenticated (whatever it is doing but running the
// handler: idle, reading a head or a body, writing), then the authenticated one that has waited
// longest for a request; none in a handler is ever closed. With `on_head`, unauthenticated
// connections (new ones count as such) hold at most max_connections minus
// `authenticated_share_percent`: past that a new one closes the oldest of them, so peers
// without a token never fill the cap. An accept that fails (too many open files) backs off
// instead of spinning.
//
// A head the server cannot take is answered, then the connection closed: 414 for a request line
// over the head limit, 431 for a head over it, 400 for a malformed one (a NUL in a header, a bad
// line ending); RFC 9110 15.5 and RFC 6585 5.
//
// Thread safety: the handler is called concurrently from the pool's threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rfs/net/http_transport.hpp"

#include "absl/status/statusor.h"

namespace rfs::net {

struct HttpServerTls {
  /// PEM certificate chain and private key files.
  std::string certificate_chain_file;
  std::string private_key_file;
};

/// What HttpServerOptions::on_head decides for one request.
struct HeadDecision {
  std::optional<HttpResponse> reject;
  size_t max_body_bytes = 0;
  /// The head carried credentials the service knows: the connection counts as an authenticated
  /// client's until its next request (see above).
  bool authenticated = false;
};

/// Why the server dropped a connection (HttpServerOptions::on_connection_dropped).
enum class ConnectionDrop {
  kRefused,                 // accepted and closed at once: every connection was busy
  kEvictedUnauthenticated,  // closed to make room: its last request had no known credentials
  kEvictedIdle,             // closed to make room: an authenticated one waiting for a request
};

struct HttpServerOptions {
  /// The address to listen on: "127.0.0.1" (default), "0.0.0.0" for every interface, or "::".
  std::string bind_address = "127.0.0.1";
  /// 0 picks a free port (see HttpServer::port()).
  uint16_t port = 0;
  /// Threads serving connections and running the handler.
  int threads = 8;
  size_t max_request_body_bytes = size_t{8} << 20;
  /// A connection idle between requests (or stalled in a body) this long is closed.
  std::chrono::seconds idle_timeout{120};
  /// A request's line and headers must all arrive this soon after its first byte.
  std::chrono::milliseconds request_head_timeout{10'000};
  /// Open connections at most (see above).
  size_t max_connections = 256;
  /// With `on_head`: the share of `max_connections` unauthenticated connections may not take.
  size_t authenticated_share_percent = 25;
  /// A request head (line and headers) larger than this gets 414 or 431.
  size_t max_head_bytes = 8 << 10;
  /// Called (on a server thread) for each connection refused or closed to make room.
  std::function<void(ConnectionDrop)> on_connection_dropped;
  std::optional<HttpServerTls> tls;
  /// Called with each request's head (its body empty, not yet read): a response to send instead
  /// of reading the body (the connection then closes), or the largest body to admit. Unset:
  /// every request may send `max_request_body_bytes`.
  std::function<HeadDecision(const HttpRequest& head)> on_head;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  /// Binds, listens and starts serving. InvalidArgument for bad options or unreadable TLS files,
  /// Unavailable when the address cannot be bound (e.g. the port is taken).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// The port listened on.
  uint16_t port() const;
  /// "http://127.0.0.1:PORT" or "https://..."; the address as bound.
  std::string url() const;
  /// Stops accepting, closes every connection and joins the threads. Idempotent.
  void Stop();

  /// Connections open now, closed so far to make room for new ones, and refused at accept (for
  /// tests and metrics).
  size_t open_connections() const;
  uint64_t connections_evicted() const;
  uint64_t connections_refused() const;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rfs::net
