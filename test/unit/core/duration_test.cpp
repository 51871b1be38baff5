#include "rfs/core/duration.hpp"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rfs::core::FormatIsoDuration;
using rfs::core::ParseIsoDuration;

TEST_CASE("ISO-8601 durations parse as java.time.Duration does", "[core][duration]") {
  CHECK(*ParseIsoDuration("PT10M") == 10min);
  CHECK(*ParseIsoDuration("pt1h30m") == 90min);
  CHECK(*ParseIsoDuration("P1DT2H") == 26h);
  CHECK(*ParseIsoDuration("P2D") == 48h);
  CHECK(*ParseIsoDuration("PT0.5S") == 500ms);
  CHECK(*ParseIsoDuration("PT1.000000001S") == 1'000'000'001ns);
  CHECK(*ParseIsoDuration("-PT5S") == -5s);
  CHECK(*ParseIsoDuration("PT1H-10M") == 50min);
  CHECK(*ParseIsoDuration("PT0S") == 0s);
}

TEST_CASE("malformed ISO-8601 durations are rejected with the text", "[core][duration]") {
  for (const char* bad :
       {"", "10M", "P", "PT", "PT10", "PTM", "P1H", "PT1D", "PT1M1H", "PT1M1M", "PT0.5M", "PT1.S",
        "PT1.0000000001S", "PT99999999999999999999S", "P999999999999999D", "PT10M ", "PTT1S"}) {
    INFO(bad);
    auto parsed = ParseIsoDuration(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(absl::IsInvalidArgument(parsed.status()));
    CHECK(parsed.status().message().find(std::string("'") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("durations format in their shortest ISO-8601 form and parse back", "[core][duration]") {
  CHECK(FormatIsoDuration(10min) == "PT10M");
  CHECK(FormatIsoDuration(0s) == "PT0S");
  CHECK(FormatIsoDuration(90min + 500ms) == "PT1H30M0.5S");
  CHECK(FormatIsoDuration(-5s) == "-PT5S");
  CHECK(FormatIsoDuration(49h) == "PT49H");
  const std::chrono::nanoseconds round_trips[] = {1ns, 1s, 61s, 3601s, 7h + 3ms, -250ms};
  for (auto d : round_trips) {
    CHECK(*ParseIsoDuration(FormatIsoDuration(d)) == d);
  }
}
