// VerifySigV4: the server side of AWS Signature Version 4, written apart from the signer in
// rfs::net so that a test double can check what a client actually put on the wire (path and
// query encoding, the headers it signed, the payload hash) the way AWS checks it: the canonical
// request is rebuilt from the decoded path and query, strictly re-encoded (twice for services
// other than S3), and the signature recomputed with the secret of the access key.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "rfs/core/clock.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/status.h"

namespace rfs::test {

struct SigV4Expectation {
  std::string region = "us-east-1";
  /// "s3", "es" or "aoss".
  std::string service = "es";
  /// Access key id -> secret access key.
  std::map<std::string, std::string> secrets;
  /// Access key id -> when it stops working (temporary credentials); absent keys never expire.
  std::map<std::string, core::IClock::TimePoint> expirations;
  /// How far X-Amz-Date may be from the server's clock (AWS allows 15 minutes).
  std::chrono::minutes max_skew{15};
};

/// The code AWS answers with when a request fails verification, e.g. "SignatureDoesNotMatch".
struct SigV4Rejection {
  std::string code;
  std::string message;
};

/// nullopt when `request` (as received: raw target, headers, body bytes) carries a valid
/// signature for `expect` at `now`; otherwise why not.
std::optional<SigV4Rejection> VerifySigV4(const net::HttpRequest& request,
                                          const SigV4Expectation& expect,
                                          core::IClock::TimePoint now);

}  // namespace rfs::test
