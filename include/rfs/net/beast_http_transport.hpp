// BeastHttpTransport: the production IHttpTransport, HTTP/1.1 over Boost.Beast with TLS through
// OpenSSL.
//
// One transport talks to one endpoint through a pool of keep-alive connections: Send takes an
// idle connection (discarding any the server has closed meanwhile) or opens a new one, so
// concurrent callers each get their own connection and the pool grows to the number of
// concurrent requests. Certificate verification is on by default; basic auth and AWS SigV4 are
// added to every request. Timeouts: `connect_timeout` covers resolve, connect and the TLS
// handshake; the response timeout (per request, or `response_timeout`) covers sending the
// request and reading the whole response. A timed-out or failed connection is closed, never
// reused. Like every IHttpTransport it never retries.
//
// Credentials (password, AWS keys, client key) never appear in endpoint(), errors or
// DebugString(). Thread safety: Send may be called concurrently; the transport must outlive
// every call.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/statusor.h"

namespace rfs::net {

struct BasicAuth {
  std::string username;
  std::string password;
};

struct TlsOptions {
  /// PEM file of CA certificates to trust instead of the system store (`--target-cacert`).
  std::string ca_cert_file;
  /// PEM client certificate chain and private key for mutual TLS.
  std::string client_cert_file;
  std::string client_key_file;
  /// Skips certificate and host-name verification (`--target-insecure`). Off by default.
  bool insecure = false;
};

struct HttpTransportOptions {
  /// "http://host:port" or "https://host[:port]", optionally with a path prefix that is put in
  /// front of every request target. User info in the URL is rejected: use `basic_auth`.
  std::string endpoint;
  std::optional<BasicAuth> basic_auth;
  TlsOptions tls;
  /// Signs each request with AWS SigV4 when set.
  std::optional<SigV4Options> sigv4;
  std::chrono::milliseconds connect_timeout{10'000};
  /// Default when a request's timeout is zero.
  std::chrono::milliseconds response_timeout{120'000};
  /// Idle connections kept for reuse; more are closed after their response.
  size_t max_idle_connections = 64;
  /// Largest response body accepted (a larger one fails the request with ResourceExhausted).
  size_t max_response_bytes = size_t{1} << 30;
  std::string user_agent = "rfs/0.1";
  /// Clock for SigV4 timestamps; the system clock when null.
  core::IClock* clock = nullptr;
  /// Set by callers that put a bearer token on every request (the console's clients), so that
  /// the plain-http check below counts it as a credential.
  bool sends_bearer_token = false;
};

/// What Open does when credentials (basic auth, SigV4 signatures and session tokens, a bearer
/// token) would go over plain http:// to a host that is not loopback: warn (once per endpoint),
/// or refuse with InvalidArgument.
enum class PlainHttpCredentials { kWarn, kRefuse };

/// The process's choice (the tools' --refuse-plain-http-credentials) and where its warnings go
/// (stderr when `warn` is empty). Call before opening transports.
void SetPlainHttpCredentialsPolicy(PlainHttpCredentials policy,
                                   std::function<void(const std::string&)> warn = {});

/// The options with secrets replaced by "<redacted>", for logs.
std::string DebugString(const HttpTransportOptions& options);

class BeastHttpTransport final : public net::IHttpTransport {
 public:
  /// Validates the options and prepares TLS (reads CA, certificate and key files); connects
  /// lazily. InvalidArgument for a malformed endpoint or unreadable TLS files.
  static absl::StatusOr<std::unique_ptr<BeastHttpTransport>> Open(HttpTransportOptions options);
  ~BeastHttpTransport() override;
  BeastHttpTransport(const BeastHttpTransport&) = delete;
  BeastHttpTransport& operator=(const BeastHttpTransport&) = delete;

  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override;
  std::string endpoint() const override;

  /// Connections opened so far (tests check keep-alive reuse with it).
  uint64_t connections_opened() const;

 private:
  struct Impl;
  explicit BeastHttpTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rfs::net
