// The one backoff of every retry loop (rfs/core/backoff.hpp).
#include "rfs/core/backoff.hpp"

#include <chrono>
#include <random>
#include <set>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rfs::core::BackoffWait;
using rfs::core::ExponentialBackoff;

TEST_CASE("Backoff waits double up to their cap, with the upper half random", "[core]") {
  std::mt19937_64 rng(7);
  for (int attempt = 1; attempt <= 12; ++attempt) {
    std::chrono::nanoseconds step = 100ms;
    for (int i = 1; i < attempt; ++i) step = std::min<std::chrono::nanoseconds>(step * 2, 5s);
    for (int draw = 0; draw < 50; ++draw) {
      const auto wait = BackoffWait(100ms, 5s, attempt, rng);
      INFO("attempt " << attempt << ": " << wait.count() << " ns");
      CHECK(wait >= step / 2);
      CHECK(wait <= step);
    }
  }
  // Waits of one attempt spread out (a fleet does not retry in step).
  std::set<int64_t> distinct;
  for (int draw = 0; draw < 20; ++draw) distinct.insert(BackoffWait(1s, 8s, 3, rng).count());
  CHECK(distinct.size() > 10);
  CHECK(BackoffWait(0ms, 1s, 3, rng) == 0ns);
  CHECK(BackoffWait(1s, 2s, 1000, rng) <= 2s);  // no overflow however many attempts

  rfs::core::FakeClock clock;
  ExponentialBackoff backoff(250ms, 8s, /*seed=*/1);
  const auto before = clock.Now();
  backoff.Sleep(clock, 4);  // a step of 2 s
  CHECK(clock.Now() - before >= 1s);
  CHECK(clock.Now() - before <= 2s);
}
