#include "rfs/coordination/work_coordinator.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rfs::coordination::CheckClockSkew;
using rfs::coordination::EarlyCheckpointDelay;
using rfs::coordination::kMaxLeaseDuration;
using rfs::coordination::kMaxLeaseExponent;
using rfs::coordination::LeaseDurationFor;
using rfs::coordination::SuccessorLeaseExponent;
using rfs::coordination::ValidateWorkItemId;
using rfs::coordination::WorkItemId;

TEST_CASE("WorkItemId formats as base64url(index)__shard__cursor", "[coordination]") {
  CHECK(WorkItemId{"logs", 3, 0}.ToString() == "bG9ncw__3__0");
  CHECK(WorkItemId{"a", 0, 18446744073709551615u}.ToString() == "YQ__0__18446744073709551615");
  // Unpadded URL-safe alphabet: '-' and '_' instead of '+' and '/'.
  CHECK(WorkItemId{"\xfb\xff", 1, 2}.ToString() == "-_8__1__2");
}

TEST_CASE("WorkItemId parses what it formats, whatever the index name holds", "[coordination]") {
  for (const std::string& name :
       std::vector<std::string>{"logs-2024.01", "a__b", "_", "__", "x_", "index with spaces",
                                "\xff\xfe", "Ünïcødé", std::string(255, 'z'), "1", "12__34__56"}) {
    for (uint64_t cursor : {uint64_t{0}, uint64_t{1}, uint64_t{1234567890123}}) {
      const WorkItemId id{name, 42, cursor};
      INFO(id.ToString());
      auto parsed = WorkItemId::Parse(id.ToString());
      REQUIRE(parsed.ok());
      CHECK(*parsed == id);
    }
  }
  // Names whose encoding ends in '_' or digits stay unambiguous (parsing goes right to left).
  const WorkItemId tricky{"\xff\xff\xff", 7, 9};
  CHECK(tricky.ToString() == "______7__9");
  CHECK(*WorkItemId::Parse("______7__9") == tricky);
}

TEST_CASE("WorkItemId rejects anything but the canonical form", "[coordination]") {
  for (const char* bad :
       {"", "shard_setup", "bG9ncw", "bG9ncw__3", "bG9ncw__3__", "__3__0", "bG9ncw__x__0",
        "bG9ncw__3__0x", "bG9ncw__03__0", "bG9ncw__3__00", "bG9ncw=__3__0", "bG9n+w__3__0",
        "bG9ncx__3__0", "b__3__0", "bG9ncw__4294967296__0", "bG9ncw__3__18446744073709551616"}) {
    INFO(bad);
    CHECK(absl::IsInvalidArgument(WorkItemId::Parse(bad).status()));
  }
}

TEST_CASE("WorkItemId::ParseForJson gives only names JSON can quote", "[coordination]") {
  auto named = WorkItemId::ParseForJson(WorkItemId{"Ünïcødé", 2, 3}.ToString());
  REQUIRE(named.has_value());
  CHECK(named->index_name == "Ünïcødé");
  // Canonical ids whose names decode to bytes that are not UTF-8 ("logs" decodes so).
  CHECK(WorkItemId::Parse("logs__5__0").ok());
  CHECK_FALSE(WorkItemId::ParseForJson("logs__5__0").has_value());
  CHECK_FALSE(WorkItemId::ParseForJson(WorkItemId{"\xff\xfe", 1, 0}.ToString()).has_value());
  CHECK_FALSE(WorkItemId::ParseForJson("shard_setup").has_value());
}

TEST_CASE("WithCursor keeps the shard", "[coordination]") {
  const WorkItemId id{"idx", 5, 10};
  CHECK(id.WithCursor(99) == WorkItemId{"idx", 5, 99});
}

TEST_CASE("the parts of a split shard carry their ending cursor", "[coordination]") {
  const WorkItemId part{"logs", 3, 1000, 2000};
  CHECK(part.ToString() == "bG9ncw__3__1000-2000");
  CHECK(*WorkItemId::Parse("bG9ncw__3__1000-2000") == part);
  CHECK(part.WithCursor(1500) == WorkItemId{"logs", 3, 1500, 2000});
  // Index names ending in '-' or digits stay unambiguous.
  for (const std::string& name : std::vector<std::string>{"a-", "x__1__2-3", "\xfb\xef", "9"}) {
    for (auto [start, end] : {std::pair<uint64_t, uint64_t>{0, 1}, {5, 18446744073709551615u}}) {
      const WorkItemId id{name, 1, start, end};
      INFO(id.ToString());
      auto parsed = WorkItemId::Parse(id.ToString());
      REQUIRE(parsed.ok());
      CHECK(*parsed == id);
      CHECK(*WorkItemId::Parse(WorkItemId{name, 1, start}.ToString()) ==
            WorkItemId{name, 1, start});
    }
  }
  for (const char* bad : {"bG9ncw__3__1000-1000", "bG9ncw__3__1000-999", "bG9ncw__3__-5",
                          "bG9ncw__3__1-", "bG9ncw__3__1-02", "bG9ncw__3__1--2"}) {
    INFO(bad);
    CHECK(absl::IsInvalidArgument(WorkItemId::Parse(bad).status()));
  }
}

TEST_CASE("work item ids must suit every store", "[coordination]") {
  CHECK(ValidateWorkItemId("shard_setup").ok());
  CHECK(ValidateWorkItemId(std::string(512, 'a')).ok());
  CHECK(absl::IsInvalidArgument(ValidateWorkItemId("")));
  CHECK(absl::IsInvalidArgument(ValidateWorkItemId(std::string(513, 'a'))));
  CHECK(absl::IsInvalidArgument(ValidateWorkItemId("a,b")));
  CHECK(absl::IsInvalidArgument(ValidateWorkItemId("a\nb")));
}

TEST_CASE("leases double per acquisition, within caps", "[coordination]") {
  CHECK(LeaseDurationFor(10min, 0) == 10min);
  CHECK(LeaseDurationFor(10min, 1) == 20min);
  CHECK(LeaseDurationFor(10min, 3) == 80min);
  CHECK(LeaseDurationFor(1s, kMaxLeaseExponent) == 1024s);
  CHECK(LeaseDurationFor(1s, kMaxLeaseExponent + 5) == 1024s);
  CHECK(LeaseDurationFor(1s, -3) == 1s);
  CHECK(LeaseDurationFor(1h, 10) == kMaxLeaseDuration);
  CHECK(LeaseDurationFor(std::chrono::hours(24 * 365 * 100), 10) == kMaxLeaseDuration);
  CHECK(LeaseDurationFor(0s, 3) == 0s);
}

TEST_CASE("the early checkpoint keeps a quarter of the lease, at most 4.5 minutes",
          "[coordination]") {
  CHECK(EarlyCheckpointDelay(4min) == 3min);          // 75% of a short lease.
  CHECK(EarlyCheckpointDelay(18min) == 13min + 30s);  // Both rules agree at 18 minutes.
  CHECK(EarlyCheckpointDelay(60min) == 55min + 30s);  // Long leases: lease - 4m30s.
  CHECK(EarlyCheckpointDelay(0s) == 0s);
}

TEST_CASE("successor exponents follow the share of the lease spent on setup", "[coordination]") {
  CHECK(SuccessorLeaseExponent(3, 1s, 100s) == 2);      // 1% < 2.5%: leases are too long.
  CHECK(SuccessorLeaseExponent(0, 1s, 100s) == 0);      // Never below zero.
  CHECK(SuccessorLeaseExponent(3, 2500ms, 100s) == 3);  // Exactly 2.5%: keep.
  CHECK(SuccessorLeaseExponent(3, 5s, 100s) == 3);
  CHECK(SuccessorLeaseExponent(3, 10s, 100s) == 3);  // Exactly 10%: keep.
  CHECK(SuccessorLeaseExponent(3, 11s, 100s) == 4);  // Setup eats the lease: longer.
  CHECK(SuccessorLeaseExponent(kMaxLeaseExponent, 50s, 100s) == kMaxLeaseExponent);
  CHECK(SuccessorLeaseExponent(2, 5s, 0s) == 2);
}

TEST_CASE("the clock guard allows 15 seconds either way", "[coordination]") {
  const auto now = std::chrono::system_clock::now();
  CHECK(CheckClockSkew(now, now).ok());
  CHECK(CheckClockSkew(now, now + 15s).ok());
  CHECK(CheckClockSkew(now, now - 15s).ok());
  CHECK(absl::IsFailedPrecondition(CheckClockSkew(now, now + 15s + 1ms)));
  CHECK(absl::IsFailedPrecondition(CheckClockSkew(now, now - 16s)));
  CHECK(CheckClockSkew(now, now + 30s, 60s).ok());
  CHECK(rfs::coordination::IsLeaseLost(CheckClockSkew(now, now + 1h)));
}
