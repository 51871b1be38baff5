// RetryTransient: the one retry loop of rfs. Every caller that sends a request again after a
// transient failure (the HTTP transport, the work-coordination stores, the metadata migration,
// RfsWorker's phases) goes through it, so that what counts as transient (core::IsRetryable), how
// long to wait (ExponentialBackoff: doubling, equal jitter) and when to give up are decided once.
//
// Waits go through an IClock, so tests on a FakeClock retry without sleeping.
//
// Thread safety: RetryTransient may be called concurrently with different `call`s; the
// ExponentialBackoff passed in is thread-safe.
#pragma once

#include <functional>
#include <type_traits>
#include <utility>

#include "rfs/core/backoff.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/core/errors.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::core {

/// When to stop retrying. Both limits are optional (0: none); without either, retries go on while
/// the result stays transient.
struct RetryLimits {
  /// Calls in all, the first included.
  int max_attempts = 0;
  /// No retry starts once this long has passed since the first call began.
  IClock::Duration within{0};
};

/// Hooks around each wait; both may be empty.
struct RetryHooks {
  /// Called before each wait with the transient result's status (StatusOfResult) and the number
  /// of the retry to come (1 for the first); returning false ends the retries with that result
  /// (e.g. a stop was requested).
  std::function<bool(const absl::Status& status, int retry)> before_wait;
  /// Sleeps `wait` (default: clock.SleepFor). A caller that must wake early on a stop passes its
  /// own interruptible sleep.
  std::function<void(IClock::Duration wait)> sleep;
};

/// The status of a call's result: itself for absl::Status, .status() for absl::StatusOr<T>, OK
/// for any other result (a transient answer that is not an error, e.g. a value a custom
/// `is_transient` rejects).
template <typename Result>
absl::Status StatusOfResult(const Result& result) {
  if constexpr (std::is_same_v<Result, absl::Status>) {
    return result;
  } else if constexpr (requires { result.status(); }) {
    return result.status();
  } else {
    return absl::OkStatus();
  }
}

/// Calls `call` until its result is not transient (`is_transient(result)` false), a limit is
/// reached or a hook says stop, waiting backoff.WaitBefore(retry) on `clock` between calls.
/// Returns the last result.
template <typename Call, typename IsTransient>
requires std::is_invocable_r_v < bool, IsTransient&, const std::invoke_result_t<Call&>
& > auto RetryTransient(IClock& clock, ExponentialBackoff& backoff, const RetryLimits& limits,
                        Call&& call, IsTransient&& is_transient, const RetryHooks& hooks = {})
        -> std::invoke_result_t<Call&> {
  const IClock::TimePoint start = clock.Now();
  for (int attempt = 1;; ++attempt) {
    auto result = call();
    if (!is_transient(result)) return result;
    if (limits.max_attempts > 0 && attempt >= limits.max_attempts) return result;
    if (limits.within > IClock::Duration::zero() && clock.Now() - start >= limits.within) {
      return result;
    }
    if (hooks.before_wait && !hooks.before_wait(StatusOfResult(result), attempt)) return result;
    const IClock::Duration wait = backoff.WaitBefore(attempt);
    if (hooks.sleep) {
      hooks.sleep(wait);
    } else {
      clock.SleepFor(wait);
    }
  }
}

/// RetryTransient for calls returning absl::Status or absl::StatusOr<T>: transient means
/// core::IsRetryable.
template <typename Call>
auto RetryTransient(IClock& clock, ExponentialBackoff& backoff, const RetryLimits& limits,
                    Call&& call, const RetryHooks& hooks = {}) -> std::invoke_result_t<Call&> {
  return RetryTransient(
      clock, backoff, limits, std::forward<Call>(call),
      [](const auto& result) { return IsRetryable(StatusOfResult(result)); }, hooks);
}

}  // namespace rfs::core
