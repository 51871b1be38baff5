// BeastHttpTransport (see http_transport.hpp).
//
// Each pooled connection owns a single-threaded io_context that only the thread holding the
// connection runs. Operations are started asynchronously and the context is run until they
// finish, because only Beast's asynchronous operations honour tcp_stream's deadline: that is how
// a synchronous Send gets connect and response timeouts without a watchdog thread.
#include "rfs/net/beast_http_transport.hpp"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <iostream>
#include <mutex>
#include <set>
#include <span>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/optional.hpp>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/aws_credentials.hpp"

#include "net/net_beast_internal.hpp"
#include <poll.h>
#include <sys/socket.h>

namespace rfs::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// A request body sent from pieces where they lie (HttpRequest::body_pieces): Beast's serializer
// asks for them a few dozen at a time, so a body in many buffers is never copied into one.
struct PiecesBody {
  using value_type = std::span<const std::string_view>;

  static std::uint64_t size(const value_type& body) {
    std::uint64_t total = 0;
    for (std::string_view piece : body) total += piece.size();
    return total;
  }

  class writer {
   public:
    // Several pieces at a time, so a body in many small pieces (the documents of a part sent
    // again) goes out in few writes.
    using const_buffers_type = std::vector<boost::asio::const_buffer>;

    template <bool isRequest, class Fields>
    writer(const http::header<isRequest, Fields>&, const value_type& body) : body_(body) {}

    void init(beast::error_code& ec) { ec = {}; }

    boost::optional<std::pair<const_buffers_type, bool>> get(beast::error_code& ec) {
      ec = {};
      constexpr size_t kPiecesAtOnce = 64;
      const_buffers_type buffers;
      for (; next_ < body_.size() && buffers.size() < kPiecesAtOnce; ++next_) {
        if (!body_[next_].empty()) buffers.emplace_back(body_[next_].data(), body_[next_].size());
      }
      if (buffers.empty()) return boost::none;
      size_t rest = next_;
      while (rest < body_.size() && body_[rest].empty()) ++rest;
      return std::make_pair(std::move(buffers), rest < body_.size());
    }

   private:
    value_type body_;
    size_t next_ = 0;
  };
};

namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;
using core::StrCat;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

struct Endpoint {
  bool tls = false;
  std::string host;  // without IPv6 brackets
  std::string port;
  std::string path_prefix;  // "" or "/prefix" without a trailing slash
  std::string host_header;  // host[:port] as sent in Host
  std::string display;      // scheme://host:port[/prefix]
};

absl::StatusOr<Endpoint> ParseEndpoint(std::string_view url) {
  Endpoint ep;
  std::string_view rest;
  if (url.starts_with("https://")) {
    ep.tls = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else {
    return absl::InvalidArgumentError(
        StrCat("target endpoint must start with http:// or https://: ", url));
  }
  if (rest.find('@') != std::string_view::npos) {
    // User info, or a password holding '/' that would otherwise pass for a path. Never echo the
    // URL here: it holds a password.
    return absl::InvalidArgumentError(
        "target endpoint must not contain user info; pass the username and password separately");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view prefix = rest.substr(slash);
    while (prefix.ends_with('/')) prefix.remove_suffix(1);
    ep.path_prefix = std::string(prefix);
  }
  std::string_view port;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("bad IPv6 address in endpoint ", url));
    }
    ep.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        return absl::InvalidArgumentError(StrCat("bad endpoint ", url));
      }
      port = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.rfind(':');
    ep.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (ep.host.empty()) return absl::InvalidArgumentError(StrCat("no host in endpoint ", url));
  if (!port.empty()) {
    int number = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (error != std::errc() || end != port.data() + port.size() || number < 1 || number > 65535) {
      return absl::InvalidArgumentError(
          StrCat("bad port '", port, "' in endpoint ", url, " (ports are 1-65535)"));
    }
  }
  ep.port = port.empty() ? (ep.tls ? "443" : "80") : std::string(port);
  const std::string bracketed =
      ep.host.find(':') != std::string::npos ? "[" + ep.host + "]" : ep.host;
  const bool default_port = ep.port == (ep.tls ? "443" : "80");
  ep.host_header = default_port ? bracketed : StrCat(bracketed, ":", ep.port);
  ep.display = StrCat(ep.tls ? "https://" : "http://", bracketed, ":", ep.port, ep.path_prefix);
  return ep;
}

bool IsIpLiteral(const std::string& host) {
  ErrorCode ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// Runs the io_context until the operation started by `start` completes; the stream's deadline
// (expires_at) bounds it. Returns the operation's error code.
template <typename Start>
ErrorCode RunOperation(asio::io_context& ioc, Start&& start) {
  ErrorCode result = asio::error::would_block;
  start([&result](ErrorCode ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

struct Connection {
  asio::io_context ioc{1};
  std::variant<std::monostate, PlainStream, TlsStream> stream;
  beast::flat_buffer buffer;

  beast::tcp_stream& tcp() {
    if (auto* tls = std::get_if<TlsStream>(&stream)) return beast::get_lowest_layer(*tls);
    return std::get<PlainStream>(stream);
  }

  // A pooled connection the server has closed (EOF or error pending) must not be reused. Bytes
  // pending on a TLS connection are usually TLS 1.3 session tickets, so only EOF and errors
  // count.
  bool IsStale() {
    const int fd = tcp().socket().native_handle();
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 0);
    if (ready == 0) return false;
    if (ready < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return true;
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
    return std::holds_alternative<PlainStream>(stream);  // unsolicited HTTP bytes: unusable
  }
};

// The most of a response's head Beast's parser holds at once: a header line must fit. Beast's
// default, 8 KiB, is too little: OpenSearch answers a template that overlaps older ones with one
// Warning line naming every one of them (22 KB with 334 legacy templates), the request applied.
constexpr uint32_t kMaxResponseHeaderBytes = uint32_t{1} << 20;

// A TLS alert the server sends about certificates (a client certificate required, refused or
// from an unknown CA): the same on every attempt. TLS 1.3 lets the client's handshake end before
// the server checks the client's certificate, so the alert can come with the first response.
bool IsCertificateAlert(const ErrorCode& ec) {
  if (ec.category() != asio::error::get_ssl_category()) return false;
  const std::string reason = ec.message();
  return reason.find("alert") != std::string::npos &&
         (reason.find("certificate") != std::string::npos ||
          reason.find("unknown ca") != std::string::npos ||
          reason.find("handshake failure") != std::string::npos ||
          reason.find("access denied") != std::string::npos);
}

absl::Status CertificateRefused(std::string message) {
  // "handshake failure" is also a TLS 1.2 server's answer to a protocol or cipher it does not
  // take; the other alerts name a certificate.
  const bool about_certificate = message.find("certificate") != std::string::npos ||
                                 message.find("unknown ca") != std::string::npos;
  return core::NotRetryable(absl::UnavailableError(StrCat(
      message,
      about_certificate ? " (the server requires a client certificate it trusts: "
                        : " (the server refused the handshake: a protocol or cipher it "
                          "does not take, or a client certificate it requires: ",
      "--target-client-cert and --target-client-cert-key, or the --source- and --coordinator- "
      "options alike)")));
}

absl::Status TransportError(std::string_view what, const Endpoint& ep, const ErrorCode& ec) {
  if (IsCertificateAlert(ec)) {
    return CertificateRefused(StrCat(what, " ", ep.display, ": ", ec.message()));
  }
  if (ec == beast::error::timeout) {
    return absl::DeadlineExceededError(StrCat(what, " ", ep.display, ": timed out"));
  }
  if (ec == http::error::body_limit) {
    return absl::ResourceExhaustedError(
        StrCat(what, " ", ep.display, ": response larger than the configured limit"));
  }
  if (ec == http::error::header_limit) {
    // Sent again, the request would get the same answer.
    return core::NotRetryable(absl::ResourceExhaustedError(
        StrCat(what, " ", ep.display, ": a response header line longer than ",
               kMaxResponseHeaderBytes >> 20, " MiB")));
  }
  return absl::UnavailableError(StrCat(what, " ", ep.display, ": ", ec.message()));
}

}  // namespace

// Response bodies of at least this many bytes, with a Content-Length, are read without the parser.
constexpr uint64_t kDirectBodyBytes = 256 * 1024;

struct BeastHttpTransport::Impl {
  HttpTransportOptions options;
  Endpoint ep;
  std::optional<ssl::context> tls_context;
  std::string basic_auth_header;  // "Basic ..." or empty
  std::mutex mu;
  std::vector<std::unique_ptr<Connection>> idle;  // guarded by mu
  std::atomic<uint64_t> connections_opened{0};

  std::unique_ptr<Connection> TakeIdle() {
    std::lock_guard lock(mu);
    while (!idle.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle.back());
      idle.pop_back();
      if (!conn->IsStale()) return conn;
    }
    return nullptr;
  }

  void Release(std::unique_ptr<Connection> conn) {
    std::lock_guard lock(mu);
    if (idle.size() < options.max_idle_connections) idle.push_back(std::move(conn));
  }

  absl::StatusOr<std::unique_ptr<Connection>> Connect() {
    auto conn = std::make_unique<Connection>();
    const auto deadline = std::chrono::steady_clock::now() + options.connect_timeout;

    tcp::resolver resolver(conn->ioc);
    ErrorCode resolve_ec = asio::error::would_block;
    tcp::resolver::results_type endpoints;
    resolver.async_resolve(ep.host, ep.port, [&](ErrorCode ec, tcp::resolver::results_type r) {
      resolve_ec = ec;
      endpoints = std::move(r);
    });
    conn->ioc.restart();
    conn->ioc.run_until(deadline);
    if (resolve_ec == asio::error::would_block) {
      resolver.cancel();
      conn->ioc.restart();
      conn->ioc.run();
      return absl::DeadlineExceededError(StrCat("resolve ", ep.display, ": timed out"));
    }
    if (resolve_ec) return TransportError("resolve", ep, resolve_ec);

    if (ep.tls) {
      conn->stream.emplace<TlsStream>(conn->ioc, *tls_context);
    } else {
      conn->stream.emplace<PlainStream>(conn->ioc);
    }
    beast::tcp_stream& tcp = conn->tcp();
    tcp.expires_at(deadline);
    ErrorCode ec = RunOperation(conn->ioc, [&](auto handler) {
      tcp.async_connect(endpoints, [handler](ErrorCode e, const tcp::endpoint&) { handler(e); });
    });
    if (ec) return TransportError("connect to", ep, ec);
    tcp.socket().set_option(tcp::no_delay(true), ec);
    connections_opened.fetch_add(1, std::memory_order_relaxed);

    if (auto* tls = std::get_if<TlsStream>(&conn->stream)) {
      SSL* ssl_handle = tls->native_handle();
      if (!options.tls.insecure) {
        // OpenSSL checks the name (or IP) during the handshake, so a mismatch fails with
        // X509_V_ERR_HOSTNAME_MISMATCH / IP_ADDRESS_MISMATCH and a readable reason.
        if (IsIpLiteral(ep.host)) {
          X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_handle), ep.host.c_str());
        } else {
          SSL_set1_host(ssl_handle, ep.host.c_str());
        }
      }
      if (!IsIpLiteral(ep.host)) SSL_set_tlsext_host_name(ssl_handle, ep.host.c_str());
      ec = RunOperation(conn->ioc, [&](auto handler) {
        tls->async_handshake(ssl::stream_base::client, handler);
      });
      if (ec) {
        // With --insecure OpenSSL still records what it found wrong with the certificate, which
        // then has nothing to do with the failure.
        const long verify =
            options.tls.insecure ? long{X509_V_OK} : SSL_get_verify_result(ssl_handle);
        std::string reason = ec.message();
        if (verify != X509_V_OK) {
          reason =
              StrCat("certificate verification failed: ", X509_verify_cert_error_string(verify));
        }
        if (ec == beast::error::timeout) return TransportError("TLS handshake with", ep, ec);
        const std::string message = StrCat("TLS handshake with ", ep.display, ": ", reason);
        // A certificate refused on either side fails the same way on every attempt; a cut
        // connection (stream_truncated, a reset) may not.
        if (verify != X509_V_OK) return core::NotRetryable(absl::UnavailableError(message));
        if (IsCertificateAlert(ec)) return CertificateRefused(message);
        return absl::UnavailableError(message);
      }
    }
    return conn;
  }

  template <typename Stream, typename Request>
  absl::StatusOr<net::HttpResponse> Exchange(Connection& conn, Stream& stream, Request& req,
                                             bool head, std::chrono::milliseconds timeout,
                                             bool& reusable) {
    conn.tcp().expires_after(timeout);
    ErrorCode ec =
        RunOperation(conn.ioc, [&](auto handler) { http::async_write(stream, req, handler); });
    if (ec) return TransportError("send to", ep, ec);

    http::response_parser<http::string_body> parser;
    parser.body_limit(options.max_response_bytes);
    parser.header_limit(kMaxResponseHeaderBytes);
    if (head) parser.skip(true);  // a HEAD response announces a length but carries no body
    ec = RunOperation(conn.ioc, [&](auto handler) {
      http::async_read_header(stream, conn.buffer, parser, handler);
    });
    if (ec) return TransportError("read response from", ep, ec);
    std::string direct_body;
    const bool direct = !parser.is_done() && !parser.chunked() &&
                        parser.content_length().value_or(0) >= kDirectBodyBytes;
    if (direct) {
      // A large body of known length (an S3 block, a big search answer) is read straight into
      // its string: Beast's parser reads 64 KiB at a time into the connection's buffer, each read
      // re-arming the timeout, and copies every piece again into the body.
      const uint64_t length = *parser.content_length();
      if (length > options.max_response_bytes) {
        return TransportError("read response from", ep, http::error::body_limit);
      }
      direct_body.resize(length);
      const size_t buffered = std::min<size_t>(conn.buffer.size(), length);
      asio::buffer_copy(asio::buffer(direct_body.data(), buffered), conn.buffer.data());
      conn.buffer.consume(buffered);
      ec = RunOperation(conn.ioc, [&](auto handler) {
        asio::async_read(stream, asio::buffer(direct_body.data() + buffered, length - buffered),
                         handler);
      });
      if (ec) return TransportError("read response from", ep, ec);
    } else if (!parser.is_done()) {
      ec = RunOperation(
          conn.ioc, [&](auto handler) { http::async_read(stream, conn.buffer, parser, handler); });
      if (ec) return TransportError("read response from", ep, ec);
    }

    http::response<http::string_body> res = parser.release();
    if (direct) res.body() = std::move(direct_body);
    net::HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    out.headers.reserve(std::distance(res.begin(), res.end()));
    for (const auto& field : res) {
      out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    out.body = std::move(res.body());
    reusable = res.keep_alive();
    return out;
  }
};

std::string DebugString(const HttpTransportOptions& options) {
  std::string out = StrCat("endpoint=", options.endpoint);
  // The endpoint is validated to carry no user info, but redact defensively anyway.
  if (options.endpoint.find('@') != std::string::npos) out = "endpoint=<redacted>";
  if (options.basic_auth) {
    out += StrCat(" basic_auth=", options.basic_auth->username, ":<redacted>");
  }
  if (!options.tls.ca_cert_file.empty()) out += StrCat(" cacert=", options.tls.ca_cert_file);
  if (!options.tls.client_cert_file.empty()) {
    out += StrCat(" client_cert=", options.tls.client_cert_file, " client_key=<redacted>");
  }
  if (options.tls.insecure) out += " insecure=true";
  if (options.sigv4) {
    out += StrCat(" sigv4=", options.sigv4->service, "@", options.sigv4->region,
                  " access_key_id=<redacted>");
  }
  out += StrCat(" connect_timeout_ms=", options.connect_timeout.count(),
                " response_timeout_ms=", options.response_timeout.count());
  return out;
}

namespace {

struct PlainHttpPolicy {
  std::mutex mu;
  PlainHttpCredentials policy = PlainHttpCredentials::kWarn;
  std::function<void(const std::string&)> warn;
  std::set<std::string> warned;  // "what endpoint", once each
};

PlainHttpPolicy& PlainHttp() {
  static PlainHttpPolicy policy;
  return policy;
}

// Credentials must not cross a network in the clear without a word (or at all, when refused).
// TLS without its checks (--<side>-insecure) is not left unsaid either.
absl::Status CheckPlainHttpCredentials(const HttpTransportOptions& options, const Endpoint& ep) {
  if (ep.tls && options.tls.insecure) {
    PlainHttpPolicy& plain = PlainHttp();
    std::lock_guard lock(plain.mu);
    if (plain.warned.insert(StrCat("insecure ", ep.display)).second) {
      const std::string warning = StrCat(
          "TLS certificate and host-name checks are off for ", ep.display,
          " (--target-insecure / --source-insecure): anyone on the network path can pose as it "
          "and read what is sent to it; trust its CA with --target-cacert / "
          "--source-cacert instead");
      if (plain.warn) {
        plain.warn(warning);
      } else {
        std::cerr << "rfs: warning: " << warning << "\n";
      }
    }
  }
  if (ep.tls || IsLoopbackHost(ep.host)) return absl::OkStatus();
  const char* what = options.basic_auth           ? "a basic-auth password"
                     : options.sigv4              ? "AWS SigV4 signatures (and any session token)"
                     : options.sends_bearer_token ? "a bearer token"
                                                  : nullptr;
  if (what == nullptr) return absl::OkStatus();
  PlainHttpPolicy& plain = PlainHttp();
  std::lock_guard lock(plain.mu);
  if (plain.policy == PlainHttpCredentials::kRefuse) {
    return absl::InvalidArgumentError(StrCat("refusing to send ", what, " over plain http to ",
                                             ep.display,
                                             " (--refuse-plain-http-credentials): use https://"));
  }
  if (!plain.warned.insert(StrCat(what, " ", ep.display)).second) return absl::OkStatus();
  const std::string warning = StrCat(what, " goes over plain http to ", ep.display,
                                     ": anyone on the network path can read it; use https:// (or "
                                     "--refuse-plain-http-credentials to stop instead)");
  if (plain.warn) {
    plain.warn(warning);
  } else {
    std::cerr << "rfs: warning: " << warning << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

void SetPlainHttpCredentialsPolicy(PlainHttpCredentials policy,
                                   std::function<void(const std::string&)> warn) {
  PlainHttpPolicy& plain = PlainHttp();
  std::lock_guard lock(plain.mu);
  plain.policy = policy;
  plain.warn = std::move(warn);
}

absl::StatusOr<std::unique_ptr<BeastHttpTransport>> BeastHttpTransport::Open(
    HttpTransportOptions options) {
  auto impl = std::make_unique<Impl>();
  auto ep = ParseEndpoint(options.endpoint);
  if (!ep.ok()) return ep.status();
  impl->ep = *std::move(ep);
  if (absl::Status plain = CheckPlainHttpCredentials(options, impl->ep); !plain.ok()) return plain;
  if (options.basic_auth) {
    const std::string user_pass =
        StrCat(options.basic_auth->username, ":", options.basic_auth->password);
    impl->basic_auth_header = StrCat(
        "Basic ", core::Base64Encode(std::span<const uint8_t>(
                      reinterpret_cast<const uint8_t*>(user_pass.data()), user_pass.size())));
  }
  if (impl->ep.tls) {
    impl->tls_context.emplace(ssl::context::tls_client);
    ssl::context& ctx = *impl->tls_context;
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    ErrorCode ec;
    if (options.tls.insecure) {
      ctx.set_verify_mode(ssl::verify_none);
    } else {
      ctx.set_verify_mode(ssl::verify_peer);
      if (!options.tls.ca_cert_file.empty()) {
        ctx.load_verify_file(options.tls.ca_cert_file, ec);
        if (ec) {
          return absl::InvalidArgumentError(StrCat("cannot load CA certificates from ",
                                                   options.tls.ca_cert_file, ": ", ec.message()));
        }
      } else {
        ctx.set_default_verify_paths(ec);
        if (ec) {
          return absl::InvalidArgumentError(
              StrCat("cannot load the system CA certificates: ", ec.message()));
        }
      }
    }
    if (!options.tls.client_cert_file.empty() || !options.tls.client_key_file.empty()) {
      if (options.tls.client_cert_file.empty() || options.tls.client_key_file.empty()) {
        return absl::InvalidArgumentError("a client certificate needs both a cert and a key file");
      }
      ctx.use_certificate_chain_file(options.tls.client_cert_file, ec);
      if (ec) {
        return absl::InvalidArgumentError(StrCat("cannot load client certificate ",
                                                 options.tls.client_cert_file, ": ", ec.message()));
      }
      ctx.use_private_key_file(options.tls.client_key_file, ssl::context::pem, ec);
      if (ec) {
        return absl::InvalidArgumentError(
            StrCat("cannot load client key ", options.tls.client_key_file, ": ", ec.message()));
      }
    }
  }
  if (options.sigv4) {
    const SigV4Options& s = *options.sigv4;
    if (s.region.empty() || s.service.empty() ||
        (s.credentials_provider == nullptr &&
         (s.credentials.access_key_id.empty() || s.credentials.secret_access_key.empty()))) {
      return absl::InvalidArgumentError(
          "SigV4 signing needs a region, a service name and credentials");
    }
  }
  impl->options = std::move(options);
  return std::unique_ptr<BeastHttpTransport>(new BeastHttpTransport(std::move(impl)));
}

BeastHttpTransport::BeastHttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BeastHttpTransport::~BeastHttpTransport() = default;

std::string BeastHttpTransport::endpoint() const { return impl_->ep.display; }

uint64_t BeastHttpTransport::connections_opened() const {
  return impl_->connections_opened.load(std::memory_order_relaxed);
}

absl::StatusOr<net::HttpResponse> BeastHttpTransport::Send(const net::HttpRequest& request) {
  Impl& impl = *impl_;
  if (request.target.empty() || request.target[0] != '/') {
    return absl::InvalidArgumentError(
        StrCat("request target must start with '/': ", request.target));
  }
  const http::verb verb = http::string_to_verb(request.method);
  if (verb == http::verb::unknown) {
    return absl::InvalidArgumentError(StrCat("unknown HTTP method ", request.method));
  }
  const std::string target = impl.ep.path_prefix + request.target;

  for (const auto& [name, value] : request.headers) {
    // A CR or LF would end the header early and smuggle in another (header injection).
    if (name.find_first_of("\r\n:") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(StrCat("header '",
                                               name.substr(0, name.find_first_of("\r\n")),
                                               "' holds a line break; refusing to send it"));
    }
  }
  // Headers the caller did not set, added before signing so the signature covers them.
  net::HttpHeaders headers = request.headers;
  headers.emplace_back("Host", impl.ep.host_header);
  const bool pieces = request.body.empty() && !request.body_pieces.empty();
  if ((!request.body.empty() || pieces) && !net::FindHeader(headers, "content-type")) {
    headers.emplace_back("Content-Type", "application/json");
  }
  if (!impl.basic_auth_header.empty() && !net::FindHeader(headers, "authorization")) {
    headers.emplace_back("Authorization", impl.basic_auth_header);
  }
  if (impl.options.sigv4) {
    core::IClock& clock =
        impl.options.clock != nullptr ? *impl.options.clock : core::SystemClock::Instance();
    const SigV4Options* sigv4 = &*impl.options.sigv4;
    SigV4Options refreshed;
    if (sigv4->credentials_provider != nullptr) {
      auto credentials = sigv4->credentials_provider->Current();
      if (!credentials.ok()) return credentials.status();
      refreshed = *sigv4;
      refreshed.credentials = *std::move(credentials);
      sigv4 = &refreshed;
    }
    absl::Status signed_ok =
        pieces
            ? SignSigV4(request.method, target, request.body_pieces, headers, *sigv4, clock.Now())
            : SignSigV4(request.method, target, request.body, headers, *sigv4, clock.Now());
    if (!signed_ok.ok()) return signed_ok;
  }

  const bool head = verb == http::verb::head;
  bool reusable = false;
  std::unique_ptr<Connection> conn;
  // The body as one span, or in pieces where they lie.
  auto exchange = [&](auto& req) -> absl::StatusOr<net::HttpResponse> {
    for (const auto& [name, value] : headers) req.insert(name, value);
    if (!net::FindHeader(headers, "user-agent"))
      req.set(http::field::user_agent, impl.options.user_agent);
    if (!net::FindHeader(headers, "connection")) req.keep_alive(true);
    req.prepare_payload();
    conn = impl.TakeIdle();
    if (conn == nullptr) {
      auto fresh = impl.Connect();
      if (!fresh.ok()) return fresh.status();
      conn = *std::move(fresh);
    }
    const std::chrono::milliseconds timeout =
        request.timeout.count() > 0 ? request.timeout : impl.options.response_timeout;
    if (auto* tls = std::get_if<TlsStream>(&conn->stream)) {
      return impl.Exchange(*conn, *tls, req, head, timeout, reusable);
    }
    return impl.Exchange(*conn, std::get<PlainStream>(conn->stream), req, head, timeout, reusable);
  };
  absl::StatusOr<net::HttpResponse> response;
  if (pieces) {
    http::request<PiecesBody> req{verb, target, 11};
    req.body() = std::span<const std::string_view>(request.body_pieces);
    response = exchange(req);
  } else {
    http::request<http::span_body<const char>> req{verb, target, 11};
    req.body() = std::span<const char>(request.body.data(), request.body.size());
    response = exchange(req);
  }
  if (response.ok() && reusable) {
    conn->tcp().expires_never();
    impl.Release(std::move(conn));
  }
  return response;
}

}  // namespace rfs::net
