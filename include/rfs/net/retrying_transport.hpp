// RetryingHttpTransport: resends a request that failed in transit or was turned away as busy
// (a reset or refused connection, a timeout, HTTP 429, 502, 503 or 504), a few times with short,
// jittered backoff, before handing the failure to the caller.
//
// Only for callers whose every request is safe to send twice: reads, and writes that are
// conditional (if_seq_no, op_type=create) or idempotent (PUT of a whole document). The work
// coordinator's requests are; bulk requests are not wrapped (the reindexer retries per item).
// Retrying single requests keeps a compound operation (read, decide, conditional write) from
// failing as a whole whenever one of its requests meets a transient fault.
//
// Thread safety: as the wrapped transport.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <random>

#include "rfs/core/backoff.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/net/http_transport.hpp"

namespace rfs::net {

struct TransportRetryPolicy {
  /// Sends per request, the first included.
  int max_attempts = 4;
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{1000};
  /// Also resends on 500 (S3 documents InternalError as retryable; for OpenSearch a 500 is
  /// usually a bug that a resend repeats).
  bool retry_internal_errors = false;
};

class RetryingHttpTransport final : public IHttpTransport {
 public:
  /// `clock` must outlive this object; backoff sleeps on it.
  RetryingHttpTransport(std::shared_ptr<IHttpTransport> inner, core::IClock& clock,
                        TransportRetryPolicy policy = {});

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override;
  std::string endpoint() const override { return inner_->endpoint(); }

 private:
  std::shared_ptr<IHttpTransport> inner_;
  core::IClock& clock_;
  const TransportRetryPolicy policy_;
  core::ExponentialBackoff backoff_;
};

}  // namespace rfs::net
