// JsonJoltTransformerProvider: rfs's Jolt operations give what Java's Jolt 0.1.8 (the library the
// Java tool runs) gives on the same specs and inputs; what rfs refuses; its bounds.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/transform/json_transformer.hpp"

#include "absl/strings/string_view.h"
#include "support/java_fixture.hpp"
namespace rfs::transform::jolt_test {

namespace json = boost::json;

json::value ReadJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// Java Jolt's answer for every case of the case file, computed once per machine and kept until the
// runner, the cases, the jars or the JDK change (keyed by the JDK the link resolves to: another
// prints some doubles otherwise). A missing Java or jar is an install bug: it throws, never skips.
json::array JavaResults() {
  const std::string java = RFS_JAVA_DEFAULT;
  if (!std::filesystem::exists(java)) {
    throw std::runtime_error("no Java at '" + java + "' (scripts/install-deps installs it)");
  }
  const std::filesystem::path dir = test::JavaWrittenFixture(
      "jolt-results", std::filesystem::canonical(java).string(), RFS_JOLT_CLASSPATH,
      RFS_JOLT_RUNNER_SOURCE, {RFS_JOLT_CASES}, "results.json", {RFS_JOLT_CASES});
  return ReadJson(dir / "results.json").as_array();
}

std::string JoltConfig(const json::array& chain) {
  json::array scripts;
  for (const auto& op : chain) scripts.push_back(json::object{{"script", op}});
  return json::serialize(json::array{json::object{{"JsonJoltTransformerProvider", scripts}}});
}

// Runs a chain through rfs: the output, or the error (from loading or from the run).
absl::StatusOr<json::value> RunRfs(const json::array& chain, const json::value& input,
                                   TransformerContext context = {}) {
  auto loaded = LoadTransformers(JoltConfig(chain), context);
  if (!loaded.ok()) return loaded.status();
  return (*loaded)->Transform(input);
}

bool Contains(absl::string_view text, absl::string_view part) {
  return text.find(part) != absl::string_view::npos;
}

TEST_CASE("Jolt: each case gives what Java's Jolt 0.1.8 gives", "[transform][jolt]") {
  const json::array cases = ReadJson(RFS_JOLT_CASES).as_array();
  const json::array java = JavaResults();
  REQUIRE(cases.size() >= 60);
  REQUIRE(java.size() == cases.size());
  int outputs = 0;
  int errors = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i].as_object();
    const auto& expected = java[i].as_object();
    INFO("case: " << json::serialize(c.at("name")));
    REQUIRE(expected.at("name") == c.at("name"));
    if (expected.contains("error")) {
      // Where Java fails, rfs fails at the same point: building the chain, or running it.
      ++errors;
      INFO("Java: " << json::serialize(expected.at("error")) << " while "
                    << (expected.at("phase") == "spec" ? "building the chain" : "running it"));
      auto loaded = LoadTransformers(JoltConfig(c.at("chain").as_array()), {});
      if (expected.at("phase") == "spec") {
        CHECK_FALSE(loaded.ok());
        continue;
      }
      REQUIRE(loaded.ok());
      const auto ran = (*loaded)->Transform(c.at("input"));
      CHECK_FALSE(ran.ok());
      continue;
    }
    const auto got = RunRfs(c.at("chain").as_array(), c.at("input"));
    const json::value& want = expected.at("output");
    if (want.is_null()) {
      // Java hands back null; rfs fails the batch, saying why.
      REQUIRE_FALSE(got.ok());
      CHECK(Contains(got.status().message(), "gave null"));
      continue;
    }
    ++outputs;
    INFO("rfs: " << (got.ok() ? json::serialize(*got) : std::string(got.status().message())));
    INFO("Java: " << json::serialize(want));
    REQUIRE(got.ok());
    CHECK(*got == want);  // objects compare by their members, whatever the order
    // Where Java's order is defined (a sort, a shift's writes, what a remove leaves), the keys
    // come in the same order.
    const auto& chain = c.at("chain").as_array();
    const auto& last = chain.back().as_object().at("operation");
    if (last == "sort" || last == "shift" || last == "remove") {
      CHECK(json::serialize(*got) == json::serialize(want));
    }
  }
  CHECK(outputs >= 45);
  CHECK(errors >= 12);
}

TEST_CASE("Jolt: what rfs does not run is refused with the reason", "[transform][jolt]") {
  const json::value input = json::parse(R"({"a": 1})");
  struct Refused {
    std::string config;
    std::string says;
  };
  for (const Refused& r : std::vector<Refused>{
           {R"([{"JsonJoltTransformerProvider": {"script": {"operation": "modify-default-beta",
                "spec": {"a": "=toUpperCase"}}}}])",
            "unknown modify function =toUpperCase"},
           {R"([{"JsonJoltTransformerProvider": {"script": {"operation": "modify-overwrite-beta",
                "spec": {"$": "x"}}}}])",
            "modify takes literal, * and [n] keys"},
           {R"([{"JsonJoltTransformerProvider": {"script": {"operation": "com.example.Custom"}}}])",
            "unknown Jolt operation"},
           {R"([{"JsonJoltTransformerProvider": {"canned": "ADD_GZIP"}}])", "HTTP messages"},
           {R"([{"JsonJoltTransformerProvider": [{"script": {"operation": "shift",
                "spec": {"a": "b"}}, "canned": "PASS_THRU"}]}])",
            "one key"},
           {R"([{"JsonJoltTransformerProvider": "shift"}])", "expects"},
           {R"([{"JsonJoltTransformerProvider": {"script": {"operation": "shift"}}}])",
            "requires a spec"},
           {R"([{"JsonJoltTransformerProvider": {"script": {"operation": "shift",
                "spec": {"[0]": "b"}}}}])",
            "array index"},
       }) {
    INFO(r.config);
    auto loaded = LoadTransformers(r.config, {});
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(Contains(loaded.status().message(), "JsonJoltTransformerProvider"));
    CHECK(Contains(loaded.status().message(), r.says));
  }
}

TEST_CASE("Jolt: what a spec makes of a value is bounded", "[transform][jolt]") {
  // One value copied to many places stops at the transform's memory bound.
  json::array targets;
  for (int i = 0; i < 64; ++i) targets.push_back(json::string("copy" + std::to_string(i)));
  const json::array chain{
      json::object{{"operation", "shift"}, {"spec", json::object{{"@", targets}}}}};
  TransformerContext small;
  small.limits.memory_bytes = 1 << 20;
  const json::value big = json::object{{"text", std::string(100'000, 'x')}};
  const auto bounded = RunRfs(chain, big, small);
  REQUIRE_FALSE(bounded.ok());
  CHECK(bounded.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(Contains(bounded.status().message(), "bound"));
  const auto fits = RunRfs(chain, json::object{{"text", "short"}}, small);
  REQUIRE(fits.ok());
  CHECK(fits->as_object().size() == 64);

  // An index taken from the input cannot make a list of millions.
  const json::array by_index{
      json::object{{"operation", "shift"}, {"spec", json::parse(R"({"*": "list[&0]"})")}}};
  const auto huge = RunRfs(by_index, json::parse(R"({"1048577": 1})"));
  REQUIRE_FALSE(huge.ok());
  CHECK(Contains(huge.status().message(), "1048577"));
  const auto at_cap = RunRfs(by_index, json::parse(R"({"1048576": 1})"));
  REQUIRE(at_cap.ok());
  CHECK(at_cap->at("list").as_array().size() == 1048577);
  // The padding counts against the memory bound like the values do.
  const auto padded = RunRfs(by_index, json::parse(R"({"1000000": 1})"), small);
  REQUIRE_FALSE(padded.ok());
  CHECK(padded.status().code() == absl::StatusCode::kResourceExhausted);
  // A default spec cannot pad a list past the same index.
  auto padding_default = LoadTransformers(
      R"([{"JsonJoltTransformerProvider": {"script": {"operation": "default",
          "spec": {"l[]": {"2000000": 1}}}}}])",
      {});
  REQUIRE_FALSE(padding_default.ok());
  CHECK(Contains(padding_default.status().message(), "1048576"));
  // A modify padding many lists stops at the memory bound, as shift's writes do.
  const json::array padding_modify{
      json::object{{"operation", "modify-overwrite-beta"},
                   {"spec", json::parse(R"({"*": {"[1048576]": "y"}})")}}};
  const auto padded_lists = RunRfs(padding_modify, json::parse("[null, null]"), small);
  REQUIRE_FALSE(padded_lists.ok());
  CHECK(padded_lists.status().code() == absl::StatusCode::kResourceExhausted);
  // Squashing a map the walk stands inside would move what it points at: refused, not run.
  const json::array squash_ancestor{
      json::object{{"operation", "modify-define-beta"},
                   {"spec", json::parse(R"J({"b": {"y": "=squashNulls(@(2,))", "z": "new"}})J")}}};
  const auto squashed = RunRfs(squash_ancestor, json::parse(R"({"a": null, "b": {"y": 1}})"));
  REQUIRE_FALSE(squashed.ok());
  CHECK(Contains(squashed.status().message(), "squashNulls"));
  const auto small_index = RunRfs(by_index, json::parse(R"({"2": 1})"));
  REQUIRE(small_index.ok());
  CHECK(*small_index == json::parse(R"({"list": [null, null, 1]})"));
}

TEST_CASE("Jolt: text and numbers Java prints its own way", "[transform][jolt]") {
  // A cut through a surrogate pair gives the replacement character, never invalid UTF-8.
  const json::array cut{
      json::object{{"operation", "modify-overwrite-beta"},
                   {"spec", json::parse(R"J({"s": "=substring(@(1,t), 0, 1)"})J")}}};
  const auto half = RunRfs(cut, json::parse(R"({"t": "\ud83d\ude00x"})"));
  REQUIRE(half.ok());
  CHECK(half->at("s") == "\xEF\xBF\xBD");
  // A value Boost.JSON reads as infinite is matched by Java's text for it, not thrown on.
  const json::array by_value{json::object{
      {"operation", "shift"}, {"spec", json::parse(R"({"v": {"Infinity": {"#inf": "x"}}})")}}};
  const auto infinite = RunRfs(by_value, json::parse(R"({"v": 1e400})"));
  REQUIRE(infinite.ok());
  CHECK(*infinite == json::parse(R"({"x": "inf"})"));
}

}  // namespace rfs::transform::jolt_test
