// ExponentialBackoff: the waits between retries, the same for every client in rfs (HTTP
// transports, work coordinators, the reindexer, the worker's phases). Each wait doubles from
// `initial` up to `max`, and its upper half is random ("equal jitter"): a fleet of workers that
// meets the same busy target spreads its retries out, and no wait collapses to zero.
//
// Thread safety: WaitBefore may be called concurrently.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

#include "rfs/core/clock.hpp"

namespace rfs::core {

/// The wait before retry number `attempt` (1 for the first retry): initial * 2^(attempt - 1), at
/// most `max`, of which the upper half is drawn from `rng`.
inline IClock::Duration BackoffWait(IClock::Duration initial, IClock::Duration max, int attempt,
                                    std::mt19937_64& rng) {
  IClock::Duration step = initial;
  for (int i = 1; i < attempt && step < max; ++i) step *= 2;
  if (step > max) step = max;
  if (step <= IClock::Duration::zero()) return IClock::Duration::zero();
  const IClock::Duration::rep half = step.count() / 2;
  return IClock::Duration(step.count() - half +
                          std::uniform_int_distribution<IClock::Duration::rep>(0, half)(rng));
}

/// BackoffWait with a random source of its own, for callers on many threads.
class ExponentialBackoff {
 public:
  ExponentialBackoff(IClock::Duration initial, IClock::Duration max,
                     uint64_t seed = std::random_device{}())
      : initial_(initial), max_(max), rng_(seed) {}

  /// BackoffWait(initial, max, attempt).
  IClock::Duration WaitBefore(int attempt) {
    std::lock_guard lock(mu_);
    return BackoffWait(initial_, max_, attempt, rng_);
  }

  /// Sleeps WaitBefore(attempt) on `clock`.
  void Sleep(IClock& clock, int attempt) { clock.SleepFor(WaitBefore(attempt)); }

 private:
  const IClock::Duration initial_;
  const IClock::Duration max_;
  std::mutex mu_;
  std::mt19937_64 rng_;
};

}  // namespace rfs::core
