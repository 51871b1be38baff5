#include "rfs/net/http_server.hpp"

#include <array>
#include <atomic>
#include <exception>
#include <limits>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "rfs/core/str_cat.hpp"

#include "net/net_beast_internal.hpp"

namespace rfs::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using core::StrCat;

constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

HttpRequest ToRequest(const http::request<http::string_body>& message, bool with_body = true) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  if (with_body) request.body = message.body();
  return request;
}

http::response<http::string_body> ToMessage(const HttpResponse& response, unsigned version,
                                            bool keep_alive) {
  http::response<http::string_body> message{static_cast<http::status>(response.status), version};
  for (const auto& [name, value] : response.headers) message.set(name, value);
  message.body() = response.body;
  message.keep_alive(keep_alive);
  message.prepare_payload();
  return message;
}

HttpResponse PlainError(int status, std::string_view text) {
  return HttpResponse{status, {{"Content-Type", "text/plain"}}, std::string(text)};
}

// A head Beast's parser refused for its form (not because the peer went away or timed out).
bool IsMalformedHead(const beast::error_code& error) {
  if (error.category() != http::make_error_code(http::error::bad_method).category()) return false;
  return error != http::error::end_of_stream && error != http::error::partial_message &&
         error != http::error::need_more && error != http::error::need_buffer &&
         error != http::error::body_limit && error != http::error::header_limit;
}

}  // namespace

// One open connection, as the accept loop sees it. Every field is guarded by Impl::conn_mu; the
// socket is touched only on the connection's strand.
struct OpenConnection {
  enum class Phase {
    kWaiting,  // for a request: idle, or reading its head
    kBusy,     // deciding on a head, reading a body, writing an answer, closing
    kHandler,  // in the handler: never closed to make room
  };
  asio::any_io_executor strand;
  beast::tcp_stream* stream = nullptr;  // null once the connection's coroutine has ended
  Phase phase = Phase::kWaiting;
  // Its last request carried credentials on_head knew (always, without on_head).
  bool authenticated = false;
  bool evicting = false;  // chosen to make room: its close is on the way
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point since = opened;  // of its phase
};
using Phase = OpenConnection::Phase;

struct HttpServer::Impl {
  // Before the context: its pending coroutines, destroyed with it, unregister themselves here.
  std::mutex conn_mu;
  std::list<std::shared_ptr<OpenConnection>> connections;
  std::atomic<uint64_t> evicted{0};
  std::atomic<uint64_t> refused{0};

  HttpServerOptions options;
  HttpHandler handler;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::optional<ssl::context> tls;
  std::vector<std::thread> threads;
  std::once_flag stopped;
  uint16_t port = 0;

  void SetPhase(OpenConnection& conn, Phase phase) {
    std::lock_guard lock(conn_mu);
    conn.phase = phase;
    conn.since = std::chrono::steady_clock::now();
  }

  void Dropped(ConnectionDrop why) {
    if (options.on_connection_dropped) options.on_connection_dropped(why);
  }

  // Closes, to make room, the oldest unauthenticated connection not in the handler; failing
  // that (unless `unauthenticated_only`), the authenticated one that has waited longest for a
  // request. False when there is none.
  bool Evict(bool unauthenticated_only) {
    std::shared_ptr<OpenConnection> oldest;
    ConnectionDrop why = ConnectionDrop::kEvictedUnauthenticated;
    {
      std::lock_guard lock(conn_mu);
      for (const auto& conn : connections) {
        if (conn->stream != nullptr && !conn->evicting && !conn->authenticated &&
            conn->phase != Phase::kHandler && (!oldest || conn->opened < oldest->opened)) {
          oldest = conn;
        }
      }
      if (!oldest && !unauthenticated_only) {
        why = ConnectionDrop::kEvictedIdle;
        for (const auto& conn : connections) {
          if (conn->stream != nullptr && !conn->evicting && conn->phase == Phase::kWaiting &&
              (!oldest || conn->since < oldest->since)) {
            oldest = conn;
          }
        }
      }
      if (!oldest) return false;
      oldest->evicting = true;  // not chosen twice
    }
    evicted.fetch_add(1);
    Dropped(why);
    asio::post(oldest->strand, [this, oldest] {
      std::lock_guard lock(conn_mu);
      if (oldest->stream != nullptr) {
        beast::error_code ignored;
        oldest->stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
        oldest->stream->socket().close(ignored);
      }
    });
    return true;
  }

  // The head of the next request: waits up to the idle timeout for its first byte, then up to
  // the head timeout for the rest of its line and headers.
  template <typename Stream>
  asio::awaitable<beast::error_code> ReadHead(Stream& stream, beast::flat_buffer& buffer,
                                              http::request_parser<http::string_body>& parser) {
    if (buffer.size() == 0) {
      beast::get_lowest_layer(stream).expires_after(options.idle_timeout);
      auto [error, n] = co_await stream.async_read_some(buffer.prepare(4096), kAwait);
      if (error) co_return error;
      buffer.commit(n);
    }
    beast::get_lowest_layer(stream).expires_after(options.request_head_timeout);
    auto [error, n] = co_await http::async_read_header(stream, buffer, parser, kAwait);
    (void)n;
    co_return error;
  }

  // The answer to a head that was read but cannot be served: too long (414 or 431) or malformed
  // (400); nullopt for a head read whole, or a read that failed otherwise.
  std::optional<HttpResponse> RefusedHead(const beast::error_code& read_error,
                                          const http::request_parser<http::string_body>& parser) {
    if (read_error == http::error::header_limit) {
      // The parser hands over the request line as soon as that line is whole: none yet means
      // the line alone is over the limit (RFC 9110 15.5.15), else the header fields are (RFC
      // 6585 5).
      const bool line_parsed = !parser.get().target().empty();
      return line_parsed ? PlainError(431, StrCat("request heads are limited to ",
                                                  options.max_head_bytes, " bytes\n"))
                         : PlainError(414, StrCat("request lines are limited to ",
                                                  options.max_head_bytes, " bytes\n"));
    }
    if (IsMalformedHead(read_error)) {
      return PlainError(400, StrCat("malformed request: ", read_error.message(), "\n"));
    }
    return std::nullopt;
  }

  // One request after another on one connection, until the peer closes, an error, or a request
  // without keep-alive.
  template <typename Stream>
  asio::awaitable<void> Serve(Stream& stream, OpenConnection& conn) {
    beast::flat_buffer buffer;
    while (true) {
      SetPhase(conn, Phase::kWaiting);
      http::request_parser<http::string_body> parser;
      // The body's limit is set once the head is known (below): a peer on_head refuses hears
      // why (401, say) rather than that its body is too large.
      parser.body_limit(boost::none);
      parser.header_limit(static_cast<std::uint32_t>(
          std::min<size_t>(options.max_head_bytes, std::numeric_limits<std::uint32_t>::max())));
      beast::error_code read_error = co_await ReadHead(stream, buffer, parser);
      SetPhase(conn, Phase::kBusy);
      HttpResponse response;
      std::optional<HttpResponse> rejected;
      const auto too_large = [](size_t limit) {
        return PlainError(413, StrCat("request bodies are limited to ", limit, " bytes\n"));
      };
      rejected = RefusedHead(read_error, parser);
      // Its form: the version and keep-alive are not to be trusted.
      const bool head_refused = rejected.has_value();
      if (read_error && !head_refused) co_return;  // closed, timed out or evicted: no answer
      unsigned version = head_refused ? 11 : parser.get().version();
      bool keep_alive = !head_refused && parser.get().keep_alive();
      size_t body_limit = options.max_request_body_bytes;
      if (!rejected && options.on_head) {
        HeadDecision decision = options.on_head(ToRequest(parser.get(), /*with_body=*/false));
        {
          std::lock_guard lock(conn_mu);
          conn.authenticated = decision.authenticated;
        }
        body_limit = std::min(decision.max_body_bytes, options.max_request_body_bytes);
        if (decision.reject) rejected = std::move(decision.reject);
      }
      if (!rejected) {
        if (parser.content_length() && *parser.content_length() > body_limit) {
          rejected = too_large(body_limit);  // by its Content-Length
        } else {
          parser.body_limit(body_limit);  // for a chunked body
        }
      }
      if (rejected) {
        // The body stays unread: the connection cannot carry another request.
        response = *std::move(rejected);
        keep_alive = false;
      } else {
        beast::get_lowest_layer(stream).expires_after(options.idle_timeout);
        auto [body_error, body_bytes] = co_await http::async_read(stream, buffer, parser, kAwait);
        (void)body_bytes;
        if (body_error == http::error::body_limit) {
          response = too_large(body_limit);
          keep_alive = false;
        } else if (body_error) {
          co_return;
        } else {
          SetPhase(conn, Phase::kHandler);
          try {
            response = handler(ToRequest(parser.get()));
          } catch (const std::exception& e) {
            response = PlainError(500, StrCat("internal error: ", e.what(), "\n"));
          }
          SetPhase(conn, Phase::kBusy);
        }
      }
      auto reply = ToMessage(response, version, keep_alive);
      beast::get_lowest_layer(stream).expires_after(options.idle_timeout);
      auto [write_error, written] = co_await http::async_write(stream, reply, kAwait);
      (void)written;
      if (write_error || !keep_alive) co_return;
    }
  }

  asio::awaitable<void> Connection(tcp::socket socket) {
    auto conn = std::make_shared<OpenConnection>();
    conn->strand = socket.get_executor();
    // Without on_head there are no credentials to tell peers apart: every connection is kept
    // alike (closed to make room only while it waits for a request).
    conn->authenticated = !options.on_head;
    beast::tcp_stream stream(std::move(socket));
    {
      std::lock_guard lock(conn_mu);
      conn->stream = &stream;
      connections.push_back(conn);
    }
    struct Forget {
      Impl* impl;
      std::shared_ptr<OpenConnection> conn;
      ~Forget() {
        std::lock_guard lock(impl->conn_mu);
        conn->stream = nullptr;
        impl->connections.remove(conn);
      }
    } forget{this, conn};
    if (!tls) {
      co_await Serve(stream, *conn);
      beast::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      // A lingering close: a body left unread (a refused request) would make the kernel reset
      // the connection, and the peer could lose the answer before reading it. Drain a little.
      stream.expires_after(std::chrono::seconds(1));
      std::array<char, 16 << 10> sink;
      for (size_t drained = 0; drained < (size_t{1} << 20);) {
        auto [error, n] = co_await stream.async_read_some(asio::buffer(sink), kAwait);
        if (error) break;
        drained += n;
      }
      co_return;
    }
    beast::ssl_stream<beast::tcp_stream&> secure(stream, *tls);
    stream.expires_after(options.request_head_timeout);
    auto [handshake_error] = co_await secure.async_handshake(ssl::stream_base::server, kAwait);
    if (handshake_error) co_return;
    co_await Serve(secure, *conn);
    stream.expires_after(std::chrono::seconds(5));
    co_await secure.async_shutdown(kAwait);
  }

  size_t OpenCount() {
    std::lock_guard lock(conn_mu);
    return connections.size();
  }

  // Connections not on their way out, and those of them not authenticated.
  std::pair<size_t, size_t> LiveCounts() {
    std::lock_guard lock(conn_mu);
    size_t live = 0, unauthenticated = 0;
    for (const auto& conn : connections) {
      if (conn->stream == nullptr || conn->evicting) continue;
      ++live;
      if (!conn->authenticated) ++unauthenticated;
    }
    return {live, unauthenticated};
  }

  asio::awaitable<void> Accept() {
    asio::steady_timer pause(ioc);
    while (true) {
      // Each connection on a strand of its own, so that it can be closed from here safely.
      auto [error, socket] = co_await acceptor.async_accept(asio::make_strand(ioc), kAwait);
      if (error == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (error) {
        // Out of descriptors (or another transient failure): make room and wait a moment,
        // rather than retry at once and spin.
        Evict(/*unauthenticated_only=*/false);
        pause.expires_after(std::chrono::milliseconds(50));
        co_await pause.async_wait(kAwait);
        continue;
      }
      const auto [live, unauthenticated] = LiveCounts();
      if (live >= options.max_connections) {
        if (!Evict(/*unauthenticated_only=*/false)) {
          refused.fetch_add(1);
          Dropped(ConnectionDrop::kRefused);
          beast::error_code ignored;
          socket.close(ignored);  // every connection is busy in a handler: no room
          continue;
        }
      } else if (options.on_head) {
        // The new connection is unauthenticated too: keep the authenticated clients' share.
        const size_t reserved =
            std::min(options.max_connections * options.authenticated_share_percent / 100,
                     options.max_connections - 1);
        if (unauthenticated + 1 > options.max_connections - reserved) {
          Evict(/*unauthenticated_only=*/true);
        }
      }
      auto executor = socket.get_executor();
      asio::co_spawn(executor, Connection(std::move(socket)), asio::detached);
    }
  }

  void Stop() {
    std::call_once(stopped, [this] {
      ioc.stop();
      for (auto& thread : threads) {
        if (thread.joinable()) thread.join();
      }
      // Closed here, with no thread left running the context: a close posted to the context
      // could be dropped by stop(), leaving the port listening and new clients waiting forever.
      beast::error_code ignored;
      acceptor.close(ignored);
    });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              HttpHandler handler) {
  if (!handler) return absl::InvalidArgumentError("http server: a handler is required");
  if (options.max_connections < 1) {
    return absl::InvalidArgumentError("http server: max_connections must be at least 1");
  }
  if (options.authenticated_share_percent > 100) {
    return absl::InvalidArgumentError("http server: authenticated_share_percent is at most 100");
  }
  if (options.max_head_bytes < 256) {
    return absl::InvalidArgumentError("http server: max_head_bytes must be at least 256");
  }
  if (options.threads < 1 || options.threads > 1024) {
    return absl::InvalidArgumentError(
        StrCat("http server: threads must be 1 to 1024, not ", options.threads));
  }
  auto impl = std::make_unique<Impl>();
  if (options.tls) {
    impl->tls.emplace(ssl::context::tls_server);
    impl->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1);
    beast::error_code ec;
    impl->tls->use_certificate_chain_file(options.tls->certificate_chain_file, ec);
    if (ec) {
      return absl::InvalidArgumentError(StrCat("http server: cannot use certificate chain '",
                                               options.tls->certificate_chain_file,
                                               "': ", ec.message()));
    }
    impl->tls->use_private_key_file(options.tls->private_key_file, ssl::context::pem, ec);
    if (ec) {
      return absl::InvalidArgumentError(StrCat("http server: cannot use private key '",
                                               options.tls->private_key_file, "': ", ec.message()));
    }
  }
  beast::error_code ec;
  const auto address = asio::ip::make_address(options.bind_address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        StrCat("http server: '", options.bind_address, "' is not an IP address"));
  }
  const tcp::endpoint endpoint(address, options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(StrCat("http server: cannot listen on ", options.bind_address,
                                         ":", options.port, ": ", ec.message()));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->options = std::move(options);
  impl->handler = std::move(handler);
  Impl* raw = impl.get();
  asio::co_spawn(raw->ioc, raw->Accept(), asio::detached);
  for (int i = 0; i < raw->options.threads; ++i) {
    raw->threads.emplace_back([raw] { raw->ioc.run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const { return impl_->port; }

std::string HttpServer::url() const {
  const std::string host = impl_->options.bind_address.find(':') != std::string::npos
                               ? StrCat("[", impl_->options.bind_address, "]")
                               : impl_->options.bind_address;
  return StrCat(impl_->tls ? "https://" : "http://", host, ":", impl_->port);
}

void HttpServer::Stop() { impl_->Stop(); }

size_t HttpServer::open_connections() const { return impl_->OpenCount(); }
uint64_t HttpServer::connections_evicted() const { return impl_->evicted.load(); }
uint64_t HttpServer::connections_refused() const { return impl_->refused.load(); }

}  // namespace rfs::net
