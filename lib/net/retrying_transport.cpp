#include "rfs/net/retrying_transport.hpp"

#include <algorithm>

#include "rfs/core/errors.hpp"

namespace rfs::net {
namespace {

bool IsBusy(int status) { return status == 429 || status == 502 || status == 503 || status == 504; }

}  // namespace

RetryingHttpTransport::RetryingHttpTransport(std::shared_ptr<IHttpTransport> inner,
                                             core::IClock& clock, TransportRetryPolicy policy)
    : inner_(std::move(inner)), clock_(clock), policy_(policy), rng_(std::random_device{}()) {}

absl::StatusOr<HttpResponse> RetryingHttpTransport::Send(const HttpRequest& request) {
  std::chrono::milliseconds backoff = policy_.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<HttpResponse> response = inner_->Send(request);
    const bool transient =
        response.ok()
            ? IsBusy(response->status) || (policy_.retry_internal_errors && response->status == 500)
            : core::IsRetryable(response.status());
    if (!transient || attempt >= policy_.max_attempts) return response;
    std::chrono::milliseconds sleep;
    {
      std::lock_guard lock(rng_mu_);
      sleep = backoff / 2 + std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(
                                0, std::max<int64_t>(backoff.count() / 2, 0))(rng_));
    }
    clock_.SleepFor(sleep);
    backoff = std::min(backoff * 2, policy_.max_backoff);
  }
}

}  // namespace rfs::net
