// IHttpTransport: the seam between rfs and an HTTP server (the target cluster, a coordination
// cluster, a source cluster for CreateSnapshot).
//
// It lives in core so that every layer that talks HTTP (coordination's OpenSearch backend,
// reindex's bulk writer, the apps) depends on this interface only; the Boost.Beast/OpenSSL
// implementation stays in the reindex layer, and tests substitute fakes.
//
// A transport sends one request and returns the response whatever its status code: a 404 or
// 429 is a response, not an error. Errors are for requests that got no response: connection
// failures (Unavailable), timeouts (DeadlineExceeded), TLS failures (Unavailable naming the
// verification problem), bad arguments (InvalidArgument). Transports never retry; retry
// policies sit above them. Thread safety: Send may be called concurrently.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace rfs::net {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

/// Case-insensitive header lookup (first match).
std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name);

struct HttpRequest {
  std::string method = "GET";
  /// Path and query, e.g. "/_bulk?refresh=false". Must start with '/'.
  std::string target = "/";
  HttpHeaders headers;
  std::string body;
  /// With `body` empty: the body is these pieces, in order, sent from where they lie (a
  /// scatter-gather write: a large body in many buffers is never copied into one). They must
  /// outlive the call.
  std::vector<std::string_view> body_pieces;
  /// Zero means the transport's default.
  std::chrono::milliseconds timeout{0};

  /// The body's length as sent (Content-Length), whichever way it is held.
  size_t body_size() const {
    size_t size = body.size();
    for (std::string_view piece : body_pieces) size += piece.size();
    return size;
  }
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;
  std::optional<std::string> Header(std::string_view name) const {
    return FindHeader(headers, name);
  }
};

/// True for "localhost", 127.0.0.0/8 and ::1 (the host alone, without brackets or port): traffic
/// that never leaves the machine.
bool IsLoopbackHost(std::string_view host);

class IHttpTransport {
 public:
  virtual ~IHttpTransport() = default;
  /// Sends `request` and waits for the whole response.
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
  /// "https://host:9200" for messages; never contains credentials.
  virtual std::string endpoint() const = 0;
};

}  // namespace rfs::net
