#include "rfs/transform/metadata_transform.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

namespace {

namespace json = boost::json;
using rfs::core::ClusterVersion;
using rfs::transform::MetadataTransformOptions;
using rfs::transform::MultiTypePolicy;
using rfs::transform::SourceIndex;

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

MetadataTransformOptions From(int es_major, int es_minor = 0) {
  MetadataTransformOptions o;
  o.source = {ClusterVersion::Product::kElasticsearch, es_major, es_minor};
  o.target = {ClusterVersion::Product::kOpenSearch, 2, 19};
  return o;
}

bool Dropped(const rfs::transform::TransformNotes& notes, std::string_view key) {
  return std::any_of(notes.dropped_settings.begin(), notes.dropped_settings.end(),
                     [&](const auto& d) { return d.key == key && !d.reason.empty(); });
}

bool HasTransformNote(const rfs::transform::TransformNotes& notes, std::string_view fragment) {
  return std::any_of(notes.notes.begin(), notes.notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

SourceIndex Es6Index() {
  SourceIndex index;
  index.name = "blog";
  index.settings = Obj(R"j({"index.creation_date":"1711112352243","index.number_of_replicas":"1",
      "index.number_of_shards":"3","index.provided_name":"blog","index.uuid":"6qGXAbDmTym",
      "index.version.created":"6082499","index.mapper.dynamic":"false",
      "index.mapping.single_type":"true","index.refresh_interval":"5s",
      "index.routing.allocation.initial_recovery._id":"abc",
      "index.analysis.filter.email.patterns.0":"([^@]+)",
      "index.analysis.filter.email.patterns.1":"@(.+)",
      "index.analysis.filter.email.type":"pattern_capture"})j");
  index.mappings = Obj(R"({"doc":{"_all":{"enabled":false},"properties":{
      "title":{"type":"text","include_in_all":false},"author":{"type":"keyword"}}}})");
  index.aliases = Obj(R"({"current":{"filter":{"term":{"author":"a"}},"index_routing":"r"}})");
  return index;
}

TEST_CASE(
    "settings are nested, and internal, private and removed settings are dropped and reported",
    "[transform][metadata]") {
  auto result = rfs::transform::TransformIndex(Es6Index(), From(6, 8));
  REQUIRE(result.ok());
  REQUIRE(result->size() == 1);
  const auto& t = (*result)[0];
  CHECK(t.name == "blog");
  const auto& index = t.body.at("settings").at("index").as_object();
  CHECK(index.at("number_of_shards") == "3");
  CHECK(index.at("number_of_replicas") == "1");
  CHECK(index.at("refresh_interval") == "5s");
  CHECK(!index.contains("uuid"));
  CHECK(!index.contains("version"));
  CHECK(!index.contains("creation_date"));
  CHECK(!index.contains("provided_name"));
  CHECK(!index.contains("mapper"));
  CHECK(!index.contains("mapping"));
  CHECK(!index.contains("routing"));  // its only entry was initial_recovery
  // ES 5 numbered list keys become an array.
  CHECK(json::serialize(index.at("analysis").at("filter").at("email").at("patterns")) ==
        R"j(["([^@]+)","@(.+)"])j");
  for (const char* key :
       {"index.uuid", "index.version.created", "index.creation_date", "index.provided_name",
        "index.mapper.dynamic", "index.mapping.single_type",
        "index.routing.allocation.initial_recovery._id"}) {
    INFO(key);
    CHECK(Dropped(t.notes, key));
  }
  CHECK(t.notes.dropped_settings.size() == 7);
}

TEST_CASE("single mapping type is removed with _all and include_in_all", "[transform][metadata]") {
  auto result = rfs::transform::TransformIndex(Es6Index(), From(6, 8));
  REQUIRE(result.ok());
  const auto& t = (*result)[0];
  CHECK(json::serialize(t.body.at("mappings")) ==
        R"({"properties":{"title":{"type":"text"},"author":{"type":"keyword"}}})");
  CHECK(HasTransformNote(t.notes, "mapping type [doc] removed"));
  CHECK(HasTransformNote(t.notes, "`_all` dropped"));
  CHECK(HasTransformNote(t.notes, "`include_in_all` removed"));
  CHECK(json::serialize(t.body.at("aliases")) ==
        R"({"current":{"filter":{"term":{"author":"a"}},"index_routing":"r"}})");
}

TEST_CASE("ES 7 _doc mapping is unwrapped without a type note", "[transform][metadata]") {
  SourceIndex index;
  index.name = "posts";
  index.settings = Obj(R"({"index.number_of_shards":"1","index.number_of_replicas":"0",
      "index.routing.allocation.include._tier_preference":"data_content",
      "index.lifecycle.name":"logs"})");
  index.mappings = Obj(R"({"_doc":{"properties":{"a":{"type":"long"}}}})");
  auto result = rfs::transform::TransformIndex(index, From(7, 10));
  REQUIRE(result.ok());
  const auto& t = (*result)[0];
  CHECK(json::serialize(t.body.at("mappings")) == R"({"properties":{"a":{"type":"long"}}})");
  CHECK(!HasTransformNote(t.notes, "removed"));
  CHECK(Dropped(t.notes, "index.routing.allocation.include._tier_preference"));
  CHECK(Dropped(t.notes, "index.lifecycle.name"));
  CHECK(!t.body.at("settings").at("index").as_object().contains("routing"));
}

TEST_CASE("min replicas raises the replica count", "[transform][metadata]") {
  auto options = From(6, 8);
  options.min_replicas = 2;
  auto result = rfs::transform::TransformIndex(Es6Index(), options);
  REQUIRE(result.ok());
  CHECK((*result)[0].body.at("settings").at("index").at("number_of_replicas") == "2");
  options.min_replicas = 0;
  result = rfs::transform::TransformIndex(Es6Index(), options);
  REQUIRE(result.ok());
  CHECK((*result)[0].body.at("settings").at("index").at("number_of_replicas") == "1");
}

TEST_CASE("awareness attributes raise replicas to a multiple of the zones in copies",
          "[transform][metadata]") {
  // Es6Index() sets one replica: two copies.
  auto replicas = [](int zones, std::optional<int> min_replicas = std::nullopt) {
    auto options = From(6, 8);
    options.replica_copies_multiple = zones;
    options.min_replicas = min_replicas;
    auto result = rfs::transform::TransformIndex(Es6Index(), options);
    REQUIRE(result.ok());
    return std::string(
        (*result)[0].body.at("settings").at("index").at("number_of_replicas").as_string());
  };
  CHECK(replicas(1) == "1");  // unchanged
  CHECK(replicas(2) == "1");  // two copies already
  CHECK(replicas(3) == "2");
  CHECK(replicas(4) == "3");
  CHECK(replicas(3, 3) == "5");  // after --min-replicas: four copies, raised to six
}

SourceIndex MultiType(std::string_view second_title_type) {
  SourceIndex index;
  index.name = "library";
  index.settings = Obj(R"({"index.number_of_shards":"1","index.number_of_replicas":"0"})");
  index.mappings =
      Obj(std::string(R"({"_default_":{"properties":{"x":{"type":"long"}}},
      "book":{"properties":{"title":{"type":"text"},"isbn":{"type":"keyword"},
                            "meta":{"properties":{"a":{"type":"long"}}}}},
      "author":{"properties":{"title":{"type":")") +
          std::string(second_title_type) +
          R"("},"born":{"type":"date"},"meta":{"properties":{"b":{"type":"long"}}}}}})");
  return index;
}

TEST_CASE("union merges the properties of several types and drops _default_",
          "[transform][metadata]") {
  auto result = rfs::transform::TransformIndex(MultiType("text"), From(5, 6));
  REQUIRE(result.ok());
  REQUIRE(result->size() == 1);
  const auto& t = (*result)[0];
  CHECK(t.name == "library");
  const auto& props = t.body.at("mappings").at("properties").as_object();
  CHECK(props.size() == 4);
  CHECK(props.contains("isbn"));
  CHECK(props.contains("born"));
  CHECK(!props.contains("x"));
  CHECK(props.at("meta").at("properties").as_object().size() == 2);
  CHECK(HasTransformNote(t.notes, "`_default_` dropped"));
  CHECK(HasTransformNote(t.notes, "merged"));
}

TEST_CASE("union fails the index on a field mapped differently by two types",
          "[transform][metadata]") {
  auto result = rfs::transform::TransformIndex(MultiType("keyword"), From(5, 6));
  REQUIRE(!result.ok());
  CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
  const std::string message(result.status().message());
  CHECK(message.find("index [library]") != std::string::npos);
  CHECK(message.find("field [title]") != std::string::npos);
  CHECK(message.find("split") != std::string::npos);
}

TEST_CASE("split creates one index per type named by TargetIndexForType", "[transform][metadata]") {
  auto options = From(5, 6);
  options.multi_type_policy = MultiTypePolicy::kSplit;
  auto result = rfs::transform::TransformIndex(MultiType("keyword"), options);
  REQUIRE(result.ok());
  REQUIRE(result->size() == 2);
  for (const auto& t : *result) {
    CHECK(t.name ==
          rfs::transform::TargetIndexForType("library", t.source_type, 3, MultiTypePolicy::kSplit));
    CHECK(t.body.at("settings").at("index").at("number_of_shards") == "1");
  }
  CHECK((*result)[0].name == "library_book");
  CHECK((*result)[1].name == "library_author");
  CHECK((*result)[1].body.at("mappings").at("properties").at("title").at("type") == "keyword");
  CHECK(!(*result)[0].body.at("mappings").at("properties").as_object().contains("born"));
}

TEST_CASE("ES 2 string fields become text or keyword", "[transform][metadata]") {
  SourceIndex index;
  index.name = "old";
  index.settings = Obj(R"({"index.number_of_shards":"1"})");
  index.mappings = Obj(R"({"t":{"_timestamp":{"enabled":true},"properties":{
      "body":{"type":"string","analyzer":"english"},
      "tag":{"type":"string","index":"not_analyzed","doc_values":true},
      "n":{"type":"long","index":"no","precision_step":8},
      "name":{"type":"string","fields":{"raw":{"type":"string","index":"not_analyzed"}}}}}})");
  auto result = rfs::transform::TransformIndex(index, From(2, 4));
  REQUIRE(result.ok());
  const auto& mappings = (*result)[0].body.at("mappings").as_object();
  CHECK(!mappings.contains("_timestamp"));
  CHECK(json::serialize(mappings.at("properties").at("body")) ==
        R"({"type":"text","analyzer":"english"})");
  CHECK(json::serialize(mappings.at("properties").at("tag")) ==
        R"({"type":"keyword","doc_values":true})");
  CHECK(json::serialize(mappings.at("properties").at("n")) == R"({"type":"long","index":false})");
  CHECK(mappings.at("properties").at("name").at("fields").at("raw").at("type") == "keyword");
}

TEST_CASE("ES 5 legacy template: template pattern, typed mappings, settings",
          "[transform][metadata]") {
  auto source = Obj(R"({"order":1,"template":"logs-*","settings":{"index":{
      "number_of_shards":"2","mapping":{"single_type":"false"},"format":"5"}},
      "mappings":[{"event":{"_all":{"enabled":true},"properties":{"msg":{"type":"text"}}}}],
      "aliases":{"all-logs":{}}})");
  auto result = rfs::transform::TransformLegacyTemplate("logs", source, From(5, 6));
  REQUIRE(result.ok());
  const auto& body = result->body;
  CHECK(json::serialize(body.at("index_patterns")) == R"(["logs-*"])");
  CHECK(!body.contains("template"));
  CHECK(body.at("order") == 1);
  CHECK(json::serialize(body.at("settings")) == R"({"index":{"number_of_shards":"2"}})");
  CHECK(json::serialize(body.at("mappings")) == R"({"properties":{"msg":{"type":"text"}}})");
  CHECK(json::serialize(body.at("aliases")) == R"({"all-logs":{}})");
  CHECK(Dropped(result->notes, "index.mapping.single_type"));
  CHECK(Dropped(result->notes, "index.format"));
  CHECK(HasTransformNote(result->notes, "`template` pattern converted"));
  CHECK(HasTransformNote(result->notes, "mapping type [event] removed"));
}

TEST_CASE("legacy template with object mappings and index_patterns (ES 7/8)",
          "[transform][metadata]") {
  auto source = Obj(R"({"order":0,"index_patterns":["posts_*"],"settings":{"index":{
      "number_of_shards":"1"}},"mappings":{"_doc":{"properties":{"a":{"type":"keyword"}}}},
      "aliases":{}})");
  auto result = rfs::transform::TransformLegacyTemplate("posts", source, From(7, 10));
  REQUIRE(result.ok());
  CHECK(json::serialize(result->body.at("mappings")) ==
        R"({"properties":{"a":{"type":"keyword"}}})");
  CHECK(json::serialize(result->body.at("index_patterns")) == R"(["posts_*"])");
  CHECK(result->notes.notes.empty());
}

TEST_CASE("composable templates lose Elasticsearch-only fields", "[transform][metadata]") {
  auto source = Obj(R"({"index_patterns":["m-*"],"composed_of":["c1"],"priority":5,
      "allow_auto_create":true,"ignore_missing_component_templates":["c2"],
      "data_stream":{"hidden":false,"allow_custom_routing":false},
      "template":{"settings":{"index":{"lifecycle":{"name":"p"},"number_of_shards":"1"}},
                  "mappings":{"runtime":{"r":{"type":"long"}},"properties":{"a":{"type":"long"}}},
                  "lifecycle":{"enabled":true}}})");
  auto result = rfs::transform::TransformIndexTemplate("m", source, From(8, 14));
  REQUIRE(result.ok());
  const auto& body = result->body;
  CHECK(!body.contains("allow_auto_create"));
  CHECK(!body.contains("ignore_missing_component_templates"));
  CHECK(json::serialize(body.at("data_stream")) == "{}");
  CHECK(
      json::serialize(body.at("template")) ==
      R"({"settings":{"index":{"number_of_shards":"1"}},"mappings":{"properties":{"a":{"type":"long"}}}})");
  CHECK(Dropped(result->notes, "index.lifecycle.name"));
  CHECK(body.at("priority") == 5);

  auto component = rfs::transform::TransformComponentTemplate(
      "c1", Obj(R"({"template":{"mappings":{"_doc":{"properties":{"b":{"type":"long"}}}}},
                   "version":3,"deprecated":false})"),
      From(7, 17));
  REQUIRE(component.ok());
  CHECK(json::serialize(component->body) ==
        R"({"template":{"mappings":{"properties":{"b":{"type":"long"}}}},"version":3})");
}

TEST_CASE("rejected settings are found in target error messages", "[transform][metadata]") {
  using rfs::transform::RejectedSettingsIn;
  CHECK(RejectedSettingsIn("PUT /x: HTTP 400 illegal_argument_exception: unknown setting "
                           "[index.mapper.dynamic] please check that any required plugins are "
                           "installed") == std::vector<std::string>{"index.mapper.dynamic"});
  CHECK(RejectedSettingsIn("validation_exception: Validation Failed: 1: private index setting "
                           "[index.version.created] can not be set explicitly;2: private index "
                           "setting [index.uuid] can not be set explicitly;") ==
        std::vector<std::string>{"index.version.created", "index.uuid"});
  CHECK(RejectedSettingsIn("mapper_parsing_exception: no such field").empty());

  auto settings = Obj(R"({"index":{"mapper":{"dynamic":"false"},"number_of_shards":"1",
                                   "knn.algo_param":"x"}})");
  CHECK(rfs::transform::RemoveSetting(settings, "index.mapper.dynamic"));
  CHECK(rfs::transform::RemoveSetting(settings, "index.knn.algo_param"));
  CHECK(!rfs::transform::RemoveSetting(settings, "index.refresh_interval"));
  CHECK(json::serialize(settings) == R"({"index":{"number_of_shards":"1"}})");
}

TEST_CASE("cluster descriptions parse", "[transform][metadata]") {
  auto es = rfs::core::ClusterVersion::ParseKnown("ES 6.8");
  REQUIRE(es.ok());
  CHECK(!es->opensearch());
  CHECK(es->major == 6);
  CHECK(es->minor == 8);
  CHECK(!es->typeless());
  auto os = rfs::core::ClusterVersion::ParseKnown("OpenSearch 2.19.2");
  REQUIRE(os.ok());
  CHECK(os->ToString() == "OS 2.19.2");
  CHECK(os->patch == 2);
  CHECK(rfs::core::ClusterVersion::ParseKnown("es_7_10")->minor == 10);
  CHECK(!rfs::core::ClusterVersion::ParseKnown("Solr 9").ok());
  CHECK(!rfs::core::ClusterVersion::ParseKnown("ES").ok());
  CHECK(!rfs::core::ClusterVersion::ParseKnown("ES 7.x").ok());
}

}  // namespace
