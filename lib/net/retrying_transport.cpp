#include "rfs/net/retrying_transport.hpp"

#include <algorithm>

#include "rfs/core/errors.hpp"
#include "rfs/core/retry.hpp"

namespace rfs::net {
namespace {

bool IsBusy(int status) { return status == 429 || status == 502 || status == 503 || status == 504; }

}  // namespace

RetryingHttpTransport::RetryingHttpTransport(std::shared_ptr<IHttpTransport> inner,
                                             core::IClock& clock, TransportRetryPolicy policy)
    : inner_(std::move(inner)),
      clock_(clock),
      policy_(policy),
      backoff_(policy.initial_backoff, policy.max_backoff) {}

absl::StatusOr<HttpResponse> RetryingHttpTransport::Send(const HttpRequest& request) {
  return core::RetryTransient(
      clock_, backoff_, {.max_attempts = std::max(1, policy_.max_attempts)},
      [&] { return inner_->Send(request); },
      [&](const absl::StatusOr<HttpResponse>& response) {
        return response.ok() ? IsBusy(response->status) ||
                                   (policy_.retry_internal_errors && response->status == 500)
                             : core::IsRetryable(response.status());
      });
}

}  // namespace rfs::net
