// AWS Signature Version 4 request signing, for Amazon OpenSearch Service ("es") and OpenSearch
// Serverless ("aoss") targets.
//
// SignSigV4 follows the published algorithm (canonical request, string to sign, derived key;
// docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html) and is checked against
// the aws-sig-v4-test-suite vectors. It signs every header present on the request except
// hop-by-hop ones a proxy may rewrite, so callers add Host and any content headers first and the
// transport-level Content-Length afterwards. Secrets never appear in returned errors. Thread-safe
// (pure functions; the environment is read once per call).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rfs/core/clock.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::net {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  /// Empty for long-term keys; set for temporary (STS) credentials.
  std::string session_token;
  /// When temporary credentials stop working; nullopt for long-term keys.
  std::optional<std::chrono::system_clock::time_point> expiration;
};

class AwsCredentialsProvider;  // aws_credentials.hpp

/// Reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (optional).
/// FailedPrecondition naming the missing variable (never a value) when a key is absent.
absl::StatusOr<AwsCredentials> AwsCredentialsFromEnvironment();

struct SigV4Options {
  /// e.g. "us-east-1" (`--target-aws-region`).
  std::string region;
  /// "es" for Amazon OpenSearch Service, "aoss" for Serverless
  /// (`--target-aws-service-signing-name`).
  std::string service = "es";
  AwsCredentials credentials;
  /// When set, the transport asks it for credentials before each request (and `credentials` is
  /// ignored), so temporary credentials are refreshed before they expire.
  std::shared_ptr<AwsCredentialsProvider> credentials_provider;
  /// Adds `x-amz-content-sha256` (required by Serverless, harmless elsewhere). The test-suite
  /// vectors predate it, so they turn it off.
  bool add_content_sha256_header = true;
};

/// Signs a request for `now` by adding headers to `headers`: X-Amz-Date, X-Amz-Security-Token
/// (temporary credentials), x-amz-content-sha256 (when asked) and Authorization. `target` is the
/// path and query as sent on the wire; `headers` must already hold Host. InvalidArgument when it
/// does not or the options are incomplete. Takes the body by view so large bulk bodies are
/// hashed in place. For services other than "s3" the path is normalised (dot segments and
/// empty segments removed) and encoded once more, as AWS does. `canonical_request_out`, when
/// given, receives the canonical request (tests compare it with the test suite's).
absl::Status SignSigV4(std::string_view method, std::string_view target, std::string_view body,
                       net::HttpHeaders& headers, const SigV4Options& options,
                       core::IClock::TimePoint now, std::string* canonical_request_out = nullptr);

/// The same for a body in pieces (HttpRequest::body_pieces), hashed where they lie.
absl::Status SignSigV4(std::string_view method, std::string_view target,
                       std::span<const std::string_view> body_pieces, net::HttpHeaders& headers,
                       const SigV4Options& options, core::IClock::TimePoint now);

/// The same for a whole request, signed in place (over its body pieces when it has them).
inline absl::Status SignSigV4(net::HttpRequest& request, const SigV4Options& options,
                              core::IClock::TimePoint now) {
  if (!request.body_pieces.empty()) {
    return SignSigV4(request.method, request.target, request.body_pieces, request.headers, options,
                     now);
  }
  return SignSigV4(request.method, request.target, request.body, request.headers, options, now);
}

/// Lower-case hex SHA-256 of `data` (also the payload hash SigV4 signs).
std::string Sha256Hex(std::string_view data);
/// The same of pieces taken in order as one string.
std::string Sha256Hex(std::span<const std::string_view> pieces);

}  // namespace rfs::net
