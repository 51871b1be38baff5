#include "rfs/net/http_server.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
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

HttpRequest ToRequest(const http::request<http::string_body>& message) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  request.body = message.body();
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

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  HttpHandler handler;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::optional<ssl::context> tls;
  std::vector<std::thread> threads;
  std::once_flag stopped;
  uint16_t port = 0;

  // One request after another on one connection, until the peer closes, an error, or a request
  // without keep-alive.
  template <typename Stream>
  asio::awaitable<void> Serve(Stream& stream) {
    beast::flat_buffer buffer;
    while (true) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(options.max_request_body_bytes);
      beast::get_lowest_layer(stream).expires_after(options.idle_timeout);
      auto [read_error, read_bytes] = co_await http::async_read(stream, buffer, parser, kAwait);
      (void)read_bytes;
      HttpResponse response;
      unsigned version = 11;
      bool keep_alive = true;
      if (read_error == http::error::body_limit) {
        response = PlainError(413, StrCat("request bodies are limited to ",
                                          options.max_request_body_bytes, " bytes\n"));
        keep_alive = false;
      } else if (read_error) {
        co_return;  // closed, timed out or garbled: nothing to answer
      } else {
        const auto& message = parser.get();
        version = message.version();
        keep_alive = message.keep_alive();
        try {
          response = handler(ToRequest(message));
        } catch (const std::exception& e) {
          response = PlainError(500, StrCat("internal error: ", e.what(), "\n"));
        }
      }
      auto reply = ToMessage(response, version, keep_alive);
      auto [write_error, written] = co_await http::async_write(stream, reply, kAwait);
      (void)written;
      if (write_error || !keep_alive) co_return;
    }
  }

  asio::awaitable<void> Connection(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    if (!tls) {
      co_await Serve(stream);
      beast::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      co_return;
    }
    beast::ssl_stream<beast::tcp_stream> secure(std::move(stream), *tls);
    beast::get_lowest_layer(secure).expires_after(options.idle_timeout);
    auto [handshake_error] = co_await secure.async_handshake(ssl::stream_base::server, kAwait);
    if (handshake_error) co_return;
    co_await Serve(secure);
    beast::get_lowest_layer(secure).expires_after(std::chrono::seconds(5));
    co_await secure.async_shutdown(kAwait);
  }

  asio::awaitable<void> Accept() {
    while (true) {
      auto [error, socket] = co_await acceptor.async_accept(kAwait);
      if (error == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (error) continue;  // e.g. too many open files: keep serving the others
      asio::co_spawn(ioc, Connection(std::move(socket)), asio::detached);
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

}  // namespace rfs::net
