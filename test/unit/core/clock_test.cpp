#include "rfs/core/clock.hpp"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;

TEST_CASE("FakeClock moves only when told to", "[core]") {
  rfs::core::FakeClock clock;
  const auto start = clock.Now();
  CHECK(clock.Now() == start);
  clock.Advance(5s);
  CHECK(clock.Now() - start == 5s);
  clock.SleepFor(10min);
  CHECK(clock.Now() - start == 10min + 5s);
  CHECK(clock.total_slept() == 10min);
  clock.SleepUntil(start + 1h);
  CHECK(clock.Now() == start + 1h);
  // Sleeping until a time already past does nothing.
  clock.SleepUntil(start);
  CHECK(clock.Now() == start + 1h);
}

TEST_CASE("SystemClock sleeps for real", "[core]") {
  auto& clock = rfs::core::SystemClock::Instance();
  const auto before = std::chrono::steady_clock::now();
  clock.SleepFor(20ms);
  CHECK(std::chrono::steady_clock::now() - before >= 20ms);
}
