#include "rfs/core/retry.hpp"

#include <chrono>
#include <vector>

#include <catch2/catch.hpp>

using rfs::core::ExponentialBackoff;
using rfs::core::FakeClock;
using rfs::core::RetryHooks;
using rfs::core::RetryTransient;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("RetryTransient retries transient failures until one succeeds", "[retry]") {
  FakeClock clock;
  ExponentialBackoff backoff(milliseconds(100), seconds(1), /*seed=*/7);
  int calls = 0;
  absl::StatusOr<int> result = RetryTransient(clock, backoff, {.max_attempts = 5}, [&] {
    ++calls;
    return calls < 3 ? absl::StatusOr<int>(absl::UnavailableError("busy")) : 42;
  });
  REQUIRE(result.ok());
  CHECK(*result == 42);
  CHECK(calls == 3);
  // Two waits: 50-100 ms, then 100-200 ms (equal jitter on a doubling step).
  CHECK(clock.total_slept() >= milliseconds(150));
  CHECK(clock.total_slept() <= milliseconds(300));
}

TEST_CASE("RetryTransient returns a permanent failure at once", "[retry]") {
  FakeClock clock;
  ExponentialBackoff backoff(milliseconds(100), seconds(1));
  int calls = 0;
  absl::Status status = RetryTransient(clock, backoff, {.max_attempts = 5}, [&] {
    ++calls;
    return absl::InvalidArgumentError("bad request");
  });
  CHECK(absl::IsInvalidArgument(status));
  CHECK(calls == 1);
  CHECK(clock.total_slept() == milliseconds(0));
  // A transient code marked as one no retry can fix is not retried either.
  calls = 0;
  status = RetryTransient(clock, backoff, {.max_attempts = 5}, [&] {
    ++calls;
    return rfs::core::NotRetryable(absl::ResourceExhaustedError("disk full"));
  });
  CHECK(absl::IsResourceExhausted(status));
  CHECK(calls == 1);
}

TEST_CASE("RetryTransient stops at the attempt limit and at the time limit", "[retry]") {
  FakeClock clock;
  ExponentialBackoff backoff(milliseconds(100), seconds(1));
  int calls = 0;
  auto always_busy = [&] {
    ++calls;
    return absl::UnavailableError("busy");
  };
  CHECK(absl::IsUnavailable(RetryTransient(clock, backoff, {.max_attempts = 4}, always_busy)));
  CHECK(calls == 4);

  // Within 10 s of waits of at most 1 s: the retries end once 10 s have passed, not before.
  calls = 0;
  const auto start = clock.Now();
  CHECK(absl::IsUnavailable(RetryTransient(clock, backoff, {.within = seconds(10)}, always_busy)));
  CHECK(clock.Now() - start >= seconds(10));
  CHECK(clock.Now() - start < seconds(11));
  CHECK(calls > 10);
}

TEST_CASE("RetryTransient's hooks see each retry, can stop it and sleep for it", "[retry]") {
  FakeClock clock;
  ExponentialBackoff backoff(milliseconds(100), seconds(1));
  std::vector<int> retries;
  std::vector<rfs::core::IClock::Duration> waits;
  RetryHooks hooks;
  hooks.before_wait = [&](const absl::Status& status, int retry) {
    CHECK(absl::IsDeadlineExceeded(status));
    retries.push_back(retry);
    return retry < 3;  // a stop requested before the third retry
  };
  hooks.sleep = [&](rfs::core::IClock::Duration wait) { waits.push_back(wait); };
  int calls = 0;
  absl::Status status = RetryTransient(
      clock, backoff, {},
      [&] {
        ++calls;
        return absl::DeadlineExceededError("slow");
      },
      hooks);
  CHECK(absl::IsDeadlineExceeded(status));
  CHECK(calls == 3);
  CHECK(retries == std::vector<int>{1, 2, 3});
  REQUIRE(waits.size() == 2);
  CHECK(clock.total_slept() == milliseconds(0));  // the hook slept, not the clock

  // A custom test of what is transient: here an answer, not an error.
  calls = 0;
  int answer = RetryTransient(
      clock, backoff, {.max_attempts = 10}, [&] { return ++calls; },
      [](int value) { return value < 4; });
  CHECK(answer == 4);
}
