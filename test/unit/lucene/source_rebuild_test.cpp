// Source rebuild plans and the engines' printing of rebuilt values (source_rebuild.hpp).
#include "rfs/lucene/source_rebuild.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

namespace {

boost::json::object Parse(const char* text) { return boost::json::parse(text).as_object(); }

}  // namespace

TEST_CASE("numbers print as Java's Double.toString and Float.toString", "[lucene][rebuild]") {
  using rfs::lucene::JavaDoubleString;
  using rfs::lucene::JavaFloatString;
  CHECK(JavaDoubleString(1.0) == "1.0");
  CHECK(JavaDoubleString(-2.25) == "-2.25");
  CHECK(JavaDoubleString(0.001) == "0.001");
  CHECK(JavaDoubleString(0.0001) == "1.0E-4");
  CHECK(JavaDoubleString(1234567.0) == "1234567.0");
  CHECK(JavaDoubleString(12345678.0) == "1.2345678E7");
  CHECK(JavaDoubleString(-6.15E-6) == "-6.15E-6");
  CHECK(JavaDoubleString(-6.1499999999999996E-6) == "-6.1499999999999996E-6");
  CHECK(JavaDoubleString(0.1 + 0.2) == "0.30000000000000004");
  CHECK(JavaDoubleString(1e300) == "1.0E300");
  CHECK(JavaDoubleString(0.0) == "0.0");
  CHECK(JavaFloatString(0.1f) == "0.1");
  CHECK(JavaFloatString(3.4028235e38f) == "3.4028235E38");
  CHECK(JavaFloatString(2.5f) == "2.5");
}

TEST_CASE("dates print in the mapping's first format", "[lucene][rebuild]") {
  using rfs::lucene::FormatDate;
  const int64_t millis = 1704190272345;  // 2024-01-02T10:11:12.345Z
  CHECK(FormatDate(millis, false, "strict_date_optional_time") == "2024-01-02T10:11:12.345Z");
  CHECK(FormatDate(millis, false, "epoch_millis") == "1704190272345");
  CHECK(FormatDate(millis, false, "epoch_second") == "1704190272");
  CHECK(FormatDate(millis, false, "yyyy/MM/dd HH:mm:ss") == "2024/01/02 10:11:12");
  CHECK(FormatDate(millis, false, "strict_date") == "2024-01-02");
  CHECK(FormatDate(-1, false, "strict_date_optional_time") == "1969-12-31T23:59:59.999Z");
  const int64_t nanos = millis * 1000000 + 678;
  CHECK(FormatDate(nanos, true, "strict_date_optional_time_nanos") ==
        "2024-01-02T10:11:12.345000678Z");
  CHECK(FormatDate(millis * 1000000, true, "strict_date_optional_time_nanos") ==
        "2024-01-02T10:11:12.345Z");
}

TEST_CASE("how an index keeps _source, from its mapping and settings", "[lucene][rebuild]") {
  using Mode = rfs::lucene::SourceStorage::Mode;
  const boost::json::object none;
  CHECK(rfs::lucene::DescribeSourceStorage(Parse(R"({"properties":{}})"), none).mode ==
        Mode::kStored);
  CHECK(rfs::lucene::DescribeSourceStorage(Parse(R"({"_source":{"enabled":false}})"), none).mode ==
        Mode::kDisabled);
  CHECK(
      rfs::lucene::DescribeSourceStorage(Parse(R"({"_source":{"mode":"synthetic"}})"), none).mode ==
      Mode::kSynthetic);
  CHECK(rfs::lucene::DescribeSourceStorage(Parse("{}"), Parse(R"({"index.mode":"logsdb"})")).mode ==
        Mode::kSynthetic);
  CHECK(rfs::lucene::DescribeSourceStorage(
            Parse("{}"), Parse(R"({"index":{"derived_source":{"enabled":"true"}}})"))
            .mode == Mode::kDerived);
  const auto partial =
      rfs::lucene::DescribeSourceStorage(Parse(R"({"_source":{"excludes":["secret"]}})"), none);
  CHECK(partial.mode == Mode::kStored);
  CHECK(partial.incomplete());
  CHECK(partial.Describe() == "stored, _source.excludes");
}

TEST_CASE("a rebuild plan says where each field's value lives and what cannot be rebuilt",
          "[lucene][rebuild]") {
  auto plan = rfs::lucene::SourceRebuildPlan::FromMapping(Parse(R"({"properties":{
    "title":{"type":"text","fields":{"raw":{"type":"keyword"}}},
    "body":{"type":"text"},
    "stored":{"type":"text","store":true},
    "n":{"type":"long","doc_values":false},
    "o":{"type":"long","doc_values":false,"index":false},
    "m":{"type":"long","doc_values":false,"store":true},
    "when":{"type":"date","format":"yyyy-MM-dd||epoch_millis"},
    "comments":{"type":"nested","properties":{"by":{"type":"keyword"}}},
    "user":{"properties":{"name":{"type":"keyword"}}}}})"));
  REQUIRE(plan.ok());
  std::vector<std::string> paths;
  for (const auto& field : plan->fields) paths.push_back(field.path);
  CHECK(paths ==
        std::vector<std::string>{"comments.by", "m", "n", "stored", "title", "user.name", "when"});
  CHECK(plan->fields[0].nested_path == "comments");
  CHECK(plan->fields[1].nested_path.empty());
  CHECK(plan->nested_paths == std::vector<std::string>{"comments"});
  CHECK(plan->fields[4].value_field == "title.raw");
  CHECK(plan->fields[6].date_format == "yyyy-MM-dd");
  // A long with neither doc values nor store, but indexed: from its points.
  CHECK(plan->fields[2].points);
  CHECK_FALSE(plan->fields[1].points);
  // What may differ from the value indexed, field by field (counted per rebuilt document).
  using rfs::lucene::RebuildExactness;
  CHECK(plan->fields[0].exactness == RebuildExactness::kArraysReordered);  // keyword doc values
  CHECK(plan->fields[1].exactness == RebuildExactness::kExact);            // stored long
  CHECK(plan->fields[2].exactness == RebuildExactness::kArraysReordered);  // points
  CHECK(plan->fields[3].exactness == RebuildExactness::kExact);            // stored text
  CHECK(plan->fields[4].exactness == RebuildExactness::kArraysReordered);  // keyword sub-field
  auto approximate = rfs::lucene::SourceRebuildPlan::FromMapping(Parse(R"({"properties":{
    "h":{"type":"half_float"},"s":{"type":"scaled_float","scaling_factor":10},
    "g":{"type":"geo_point"},"k":{"type":"keyword","normalizer":"lowercase"}}})"));
  REQUIRE(approximate.ok());
  for (const auto& field : approximate->fields) {
    INFO(field.path);
    CHECK(field.exactness == RebuildExactness::kApproximate);
  }
  const std::string unrebuildable = [&] {
    std::string out;
    for (const auto& line : plan->unrebuildable) out += line + "\n";
    return out;
  }();
  CHECK(unrebuildable.find("body: text with neither") != std::string::npos);
  CHECK(unrebuildable.find("o: long with neither doc values nor store") != std::string::npos);
  CHECK(unrebuildable.find("n: ") == std::string::npos);
  CHECK(unrebuildable.find("comments") == std::string::npos);
  CHECK(!rfs::lucene::SourceRebuildPlan::FromMapping(Parse(R"({"properties":[]})")).ok());
}
