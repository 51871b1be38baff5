#include <algorithm>
#include <cmath>

#include "reindex/adaptive_concurrency_internal.hpp"

namespace rfs::reindex {

AdaptiveConcurrency::AdaptiveConcurrency(AdaptiveConcurrencyOptions options)
    : options_(options),
      limit_(static_cast<double>(std::max<size_t>(1, options.max_in_flight))),
      lowest_(std::max<size_t>(1, options.max_in_flight)) {}

uint64_t AdaptiveConcurrency::Acquire() {
  std::unique_lock lock(mu_);
  ++waiting_;
  slot_.wait(lock, [&] { return in_flight_ < static_cast<size_t>(std::floor(limit_)); });
  --waiting_;
  ++in_flight_;
  return epoch_;
}

size_t AdaptiveConcurrency::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

void AdaptiveConcurrency::Release(uint64_t epoch, bool pushed_back,
                                  std::chrono::nanoseconds latency) {
  {
    std::lock_guard lock(mu_);
    --in_flight_;
    const bool slow = options_.latency_factor > 0 &&
                      best_latency_ != std::chrono::nanoseconds::max() &&
                      latency > options_.latency_floor &&
                      static_cast<double>(latency.count()) >
                          options_.latency_factor * static_cast<double>(best_latency_.count());
    if (!pushed_back) best_latency_ = std::min(best_latency_, latency);
    const double max = static_cast<double>(std::max<size_t>(1, options_.max_in_flight));
    if (pushed_back || slow) {
      // Once per window: the requests already in flight when we cut saw the old load. Fewer
      // requests first; smaller ones only once a single request is still too much.
      if (epoch == epoch_) {
        if (limit_ >= 2.0) {
          limit_ = std::max(1.0, limit_ / 2);
        } else {
          const double floor =
              options_.max_batch_bytes == 0
                  ? 1.0
                  : std::min(1.0, static_cast<double>(options_.min_batch_bytes) /
                                      static_cast<double>(options_.max_batch_bytes));
          batch_share_ = std::max(floor, batch_share_ / 2);
        }
        ++epoch_;
        ++decreases_;
        lowest_ = std::min(lowest_, static_cast<size_t>(std::floor(limit_)));
      }
    } else if (batch_share_ < 1.0) {
      batch_share_ = std::min(1.0, batch_share_ * 1.25);  // full-size requests again first
    } else {
      limit_ = std::min(max, limit_ + 1.0 / limit_);
    }
  }
  slot_.notify_all();
}

size_t AdaptiveConcurrency::limit() const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(std::floor(limit_));
}

size_t AdaptiveConcurrency::batch_bytes() const {
  if (options_.max_batch_bytes == 0) return 0;
  std::lock_guard lock(mu_);
  const size_t scaled =
      static_cast<size_t>(static_cast<double>(options_.max_batch_bytes) * batch_share_);
  return std::clamp(scaled, std::min(options_.min_batch_bytes, options_.max_batch_bytes),
                    options_.max_batch_bytes);
}

uint64_t AdaptiveConcurrency::decreases() const {
  std::lock_guard lock(mu_);
  return decreases_;
}

size_t AdaptiveConcurrency::lowest_limit() const {
  std::lock_guard lock(mu_);
  return lowest_;
}

}  // namespace rfs::reindex
