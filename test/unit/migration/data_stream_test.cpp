#include <catch2/catch.hpp>

#include "migration/data_stream_internal.hpp"

namespace rfs::migration::internal {
namespace {

TEST_CASE("a data stream's timestamp field is found as objects or dotted keys", "[migration]") {
  CHECK(HasTimestampField(R"({"@timestamp":"2024-01-01T00:00:00Z","n":1})", "@timestamp"));
  CHECK(HasTimestampField(R"({"@timestamp":1700000000000})", "@timestamp"));
  CHECK(HasTimestampField(R"({"@timestamp":["2024-01-01"]})", "@timestamp"));
  CHECK(HasTimestampField(R"({"event":{"created":"2024-01-01"}})", "event.created"));
  CHECK(HasTimestampField(R"({"event.created":"2024-01-01"})", "event.created"));
  CHECK(HasTimestampField(R"({"a":{"b.c":"2024-01-01"}})", "a.b.c"));
  CHECK(HasTimestampField(R"({"a.b":{"c":"2024-01-01"}})", "a.b.c"));
}

TEST_CASE("a data stream's document without one value in its timestamp field is told apart",
          "[migration]") {
  CHECK_FALSE(HasTimestampField(R"({"n":1})", "@timestamp"));
  CHECK_FALSE(HasTimestampField(R"({"@timestamp":null})", "@timestamp"));
  CHECK_FALSE(HasTimestampField(R"({"@timestamp":["2024-01-01","2024-01-02"]})", "@timestamp"));
  CHECK_FALSE(HasTimestampField(R"({"@timestamp":[]})", "@timestamp"));
  CHECK_FALSE(HasTimestampField(R"({"event":{"created":null}})", "event.created"));
  CHECK_FALSE(HasTimestampField(R"({"event":"2024"})", "event.created"));
  CHECK_FALSE(HasTimestampField(R"({"@timestamp": )", "@timestamp"));  // not JSON
  CHECK_FALSE(HasTimestampField("[]", "@timestamp"));
}

}  // namespace
}  // namespace rfs::migration::internal
