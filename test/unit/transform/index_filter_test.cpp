#include "rfs/transform/index_filter.hpp"

#include <chrono>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/transform/type_policy.hpp"

using rfs::transform::Allowlist;

TEST_CASE("allowlists take names, comma lists and regex: entries", "[transform][allowlist]") {
  auto list = Allowlist::Parse({"logs-2024,metrics", "regex:posts_\\d{4}_.*"});
  REQUIRE(list.ok());
  CHECK(list->entries() ==
        std::vector<std::string>{"logs-2024", "metrics", "regex:posts_\\d{4}_.*"});
  CHECK(list->Matches("logs-2024"));
  CHECK(list->Matches("metrics"));
  CHECK(list->Matches("posts_2024_01"));
  CHECK_FALSE(list->Matches("posts_24_01"));
  CHECK_FALSE(list->Matches("xposts_2024_01"));  // whole-name match, as Pattern.matches
  CHECK_FALSE(list->Matches("logs"));
}

TEST_CASE("bad allowlist entries are rejected naming them", "[transform][allowlist]") {
  auto bad_regex = Allowlist::Parse({"regex:posts_("});
  REQUIRE_FALSE(bad_regex.ok());
  CHECK(bad_regex.status().message().find("regex:posts_(") != std::string::npos);
  CHECK_FALSE(Allowlist::Parse({"a,,b"}).ok());
}

TEST_CASE("system indices are excluded unless an allowlist selects them",
          "[transform][allowlist]") {
  Allowlist none;
  CHECK(rfs::transform::SelectIndex(none, "posts"));
  CHECK_FALSE(rfs::transform::SelectIndex(none, ".kibana_1"));
  CHECK_FALSE(rfs::transform::SelectIndex(none, "searchguard"));
  auto kibana = Allowlist::Parse({".kibana_1"});
  REQUIRE(kibana.ok());
  CHECK(rfs::transform::SelectIndex(*kibana, ".kibana_1"));
  CHECK_FALSE(rfs::transform::SelectIndex(*kibana, "posts"));
  CHECK_FALSE(rfs::transform::SelectTemplate(none, ".monitoring-es"));
  CHECK(rfs::transform::SelectTemplate(none, "posts_index_template"));
  // A user's template sharing a prefix with Elasticsearch's own is selected by name; whether a
  // template is the source engine's own is decided by its body and the source version.
  CHECK(rfs::transform::SelectTemplate(none, "logs-app-tpl"));
}

TEST_CASE("the source engine's own templates are known by their markers and built-in names",
          "[transform][allowlist]") {
  using rfs::core::ClusterVersion;
  using rfs::transform::SourceEngineTemplate;
  const ClusterVersion es8{ClusterVersion::Product::kElasticsearch, 8, 19};
  const ClusterVersion es76{ClusterVersion::Product::kElasticsearch, 7, 6};
  const ClusterVersion os2{ClusterVersion::Product::kOpenSearch, 2, 19};
  const boost::json::object plain;
  const auto managed = boost::json::parse(R"({"_meta":{"managed":true}})").as_object();
  const auto fleet = boost::json::parse(R"({"_meta":{"managed_by":"fleet"}})").as_object();
  CHECK(!SourceEngineTemplate("logs-app-tpl", plain, os2));
  CHECK(!SourceEngineTemplate("logs-app-tpl", plain, es8));
  CHECK(!SourceEngineTemplate("logs", plain, os2));
  CHECK(!SourceEngineTemplate("logs", plain, es76));  // before 7.9's stack templates
  CHECK(*SourceEngineTemplate("logs", plain, es8) ==
        "one of the templates ES 8.19 installs itself");
  CHECK(SourceEngineTemplate("metrics-settings", plain, es8));
  CHECK(*SourceEngineTemplate("my-template", managed, os2) ==
        "installed and managed by the source cluster (_meta.managed)");
  CHECK(*SourceEngineTemplate("logs-nginx.access", fleet, es8) ==
        "managed by fleet on the source cluster (_meta.managed_by)");
  // X-Pack's security templates, from Elasticsearch 5 on; not on OpenSearch, not a look-alike.
  const ClusterVersion es5{ClusterVersion::Product::kElasticsearch, 5, 6};
  CHECK(*SourceEngineTemplate("security_audit_log", plain, es5) ==
        "one of the templates X-Pack of ES 5.6 installs itself");
  CHECK(SourceEngineTemplate("security-index-template", plain, es76));
  CHECK(!SourceEngineTemplate("security_audit_log", plain, os2));
  CHECK(!SourceEngineTemplate("security-app-logs", plain, es8));
}

TEST_CASE("multi-type policy: union keeps the index, split names one index per type",
          "[transform][types]") {
  using rfs::transform::MultiTypePolicy;
  using rfs::transform::TargetIndexForType;
  CHECK(*rfs::transform::ParseMultiTypePolicy("SPLIT") == MultiTypePolicy::kSplit);
  CHECK_FALSE(rfs::transform::ParseMultiTypePolicy("none").ok());
  CHECK(TargetIndexForType("blog", "post", 2, MultiTypePolicy::kUnion) == "blog");
  CHECK(TargetIndexForType("blog", "post", 2, MultiTypePolicy::kSplit) == "blog_post");
  CHECK(TargetIndexForType("blog", "post", 1, MultiTypePolicy::kSplit) == "blog");
  // `_default_` holds no documents: an index with it and one type keeps its name.
  const auto mappings = boost::json::parse(R"({"_default_":{},"post":{}})").as_object();
  CHECK(rfs::transform::CountMappingTypes(mappings) == 1);
}

TEST_CASE("hostile allowlist patterns cannot hang or crash the tools",
          "[transform][allowlist][security]") {
  // Exponential backtracking for a backtracking engine: linear under RE2.
  auto nested = Allowlist::Parse({"regex:(a+)+$"});
  REQUIRE(nested.ok());
  const std::string long_name = std::string(5000, 'a') + "!";
  const auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(nested->Matches(long_name));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
  // std::regex recursed once per character: a 200,000-character name overflowed its stack.
  auto any = Allowlist::Parse({"regex:(a|b)*"});
  REQUIRE(any.ok());
  CHECK(any->Matches(std::string(200000, 'a')));
  // What RE2 does not do is refused at parse time, saying so.
  for (const char* pattern : {"regex:(a)\\1", "regex:logs(?=-2024)", "regex:a*+"}) {
    INFO(pattern);
    auto refused = Allowlist::Parse({pattern});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  }
  auto huge = Allowlist::Parse({"regex:" + std::string(20000, 'a')});
  REQUIRE_FALSE(huge.ok());
}
