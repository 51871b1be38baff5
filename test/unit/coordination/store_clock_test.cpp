#include <catch2/catch.hpp>

#include "coordination/store_clock_internal.hpp"

using namespace std::chrono_literals;
using rfs::coordination::TimePoint;
using rfs::coordination::internal::ParseHttpDate;
using rfs::coordination::internal::StoreClockEstimator;

namespace {
TimePoint At(int64_t seconds) { return TimePoint{} + std::chrono::seconds(seconds); }
}  // namespace

TEST_CASE("HTTP dates parse as IMF-fixdate only", "[coordination]") {
  // RFC 9110 section 5.6.7's example.
  auto t = ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT");
  REQUIRE(t.has_value());
  CHECK(*t == At(784111777));
  CHECK(ParseHttpDate("  Thu, 01 Jan 1970 00:00:00 GMT ") == At(0));
  CHECK(ParseHttpDate("Tue, 29 Feb 2028 23:59:59 GMT") == At(1835481599));
  CHECK_FALSE(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT").has_value());  // RFC 850.
  CHECK_FALSE(ParseHttpDate("Sun Nov  6 08:49:37 1994").has_value());        // asctime.
  CHECK_FALSE(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 UTC").has_value());
  CHECK_FALSE(ParseHttpDate("Sun, 31 Feb 1994 08:49:37 GMT").has_value());
  CHECK_FALSE(ParseHttpDate("Sun, 06 Nov 1994 24:49:37 GMT").has_value());
  CHECK_FALSE(ParseHttpDate("Xyz, 06 Nov 1994 08:49:37 GMT").has_value());
  CHECK_FALSE(ParseHttpDate("").has_value());
}

TEST_CASE("the store clock estimate narrows with samples and ages out", "[coordination]") {
  StoreClockEstimator estimator(60s);
  CHECK_FALSE(estimator.Estimate(At(1000)).has_value());
  // The store is 5.3 s ahead. A Date of second D means [D, D + 1 s).
  const auto offset = 5300ms;
  auto sample = [&](TimePoint local, std::chrono::milliseconds rtt) {
    const TimePoint store = local + offset;
    const TimePoint date =
        TimePoint{} + std::chrono::floor<std::chrono::seconds>(store.time_since_epoch());
    estimator.Observe(local, local + rtt, date, date + 1s);
  };
  sample(At(1000), 0ms);
  auto first = estimator.Estimate(At(1000));
  REQUIRE(first.has_value());
  CHECK(first->earliest <= At(1000) + offset);
  CHECK(first->latest >= At(1000) + offset);
  CHECK(first->latest - first->earliest == 1s);
  // A sample at another fraction of a second narrows the interval; it always holds the truth.
  sample(At(1000) + 500ms, 0ms);
  auto second = estimator.Estimate(At(1001));
  REQUIRE(second.has_value());
  CHECK(second->earliest <= At(1001) + offset);
  CHECK(second->latest >= At(1001) + offset);
  CHECK(second->latest - second->earliest == 500ms);
  CHECK(second->local == At(1001));
  // Round trips widen a sample.
  StoreClockEstimator slow(60s);
  slow.Observe(At(0), At(0) + 200ms, At(10), At(10) + 1s);
  auto wide = slow.Estimate(At(1));
  REQUIRE(wide.has_value());
  CHECK(wide->latest - wide->earliest == 1200ms);
  // Old samples expire.
  CHECK_FALSE(estimator.Estimate(At(1000) + 61s).has_value());
  // A contradicting sample (a clock step) restarts the window.
  estimator.Observe(At(1010), At(1010), At(2000), At(2000) + 1s);
  auto stepped = estimator.Estimate(At(1010));
  REQUIRE(stepped.has_value());
  CHECK(stepped->earliest == At(2000));
}
