// StoreClockEstimator: what a worker knows of a remote store's clock, from timestamps the store
// sends back (an HTTP `Date` header, or a time a server-side script read).
//
// Each sample says: between the worker-clock instants `sent` and `received`, the store's clock
// read a time in [store_low, store_high). So at worker time t the store's clock reads within
// [t + (store_low - received), t + (store_high - sent)]. Samples are intersected, which narrows
// the interval as samples land at different fractions of a second; an empty intersection (a clock
// step on either side) or a window older than `max_age` restarts from the newest sample.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <mutex>
#include <optional>
#include <string_view>

#include "coordination/coordinator_base_internal.hpp"

namespace rfs::coordination::internal {

/// Parses an HTTP date (RFC 9110 IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT"); nullopt for
/// anything else. The obsolete RFC 850 and asctime forms are not accepted.
std::optional<TimePoint> ParseHttpDate(std::string_view text);

class StoreClockEstimator {
 public:
  explicit StoreClockEstimator(Duration max_age) : max_age_(max_age) {}

  void Observe(TimePoint sent, TimePoint received, TimePoint store_low, TimePoint store_high);

  /// The store-time interval at worker time `local`, or nullopt without a sample younger than
  /// max_age.
  std::optional<StoreTime> Estimate(TimePoint local) const;

 private:
  const Duration max_age_;
  mutable std::mutex mu_;
  bool valid_ = false;
  TimePoint window_start_;  // Worker time of the oldest sample in the intersection.
  Duration offset_low_{0};  // store - worker, bounds.
  Duration offset_high_{0};
};

}  // namespace rfs::coordination::internal
