#include "rfs/transform/json_transformer.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

namespace json = boost::json;
using rfs::transform::DocumentOperation;
using rfs::transform::LoadTransformers;
using rfs::transform::MakeDocumentMap;
using rfs::transform::ReadDocumentOperation;
using rfs::transform::ResolveTransformerConfig;
using rfs::transform::SerializeJson;

namespace {

json::value Doc(const std::string& index, const std::string& id, std::optional<std::string> type,
                json::value source) {
  return MakeDocumentMap(DocumentOperation{index, id, std::move(type), std::nullopt},
                         std::move(source));
}

// Runs `config` on `input`, requiring both to work.
json::value Run(const std::string& config, json::value input) {
  auto transformer = LoadTransformers(config);
  INFO(config);
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(std::move(input));
  if (!out.ok()) INFO(std::string(out.status().message()));
  REQUIRE(out.ok());
  return std::move(*out);
}

std::string LoadError(const std::string& config) {
  auto transformer = LoadTransformers(config);
  REQUIRE_FALSE(transformer.ok());
  CHECK(transformer.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(transformer.status().message());
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("document maps have the Java tool's shape", "[transform][json]") {
  json::value doc = MakeDocumentMap(DocumentOperation{"books", "7", "novel", "r1"},
                                    json::parse(R"({"title":"Dune"})"));
  const json::object& o = doc.as_object();
  CHECK(o.at("schema") == "rfs-opensearch-bulk-v1");
  CHECK(o.at("operation_type") == "index");
  CHECK(o.at("include_document") == true);
  CHECK(o.at("operation").at("_index") == "books");
  CHECK(o.at("operation").at("_id") == "7");
  CHECK(o.at("operation").at("_type") == "novel");
  CHECK(o.at("operation").at("routing") == "r1");
  CHECK(o.at("document").at("title") == "Dune");

  auto op = ReadDocumentOperation(doc);
  REQUIRE(op.ok());
  CHECK(op->index == "books");
  CHECK(op->id == "7");
  CHECK(op->type == std::optional<std::string>("novel"));
  CHECK(op->routing == std::optional<std::string>("r1"));

  CHECK_FALSE(ReadDocumentOperation(json::parse(R"({"operation":{"_id":"1"}})")).ok());
  // An integer _id (easily made by a jq program) is taken as its decimal text.
  auto numeric = ReadDocumentOperation(json::parse(R"({"operation":{"_index":"a","_id":3}})"));
  REQUIRE(numeric.ok());
  CHECK(numeric->id == "3");
  CHECK_FALSE(ReadDocumentOperation(json::parse(R"({"operation":{"_index":"a","_id":{}}})")).ok());
  CHECK_FALSE(ReadDocumentOperation(json::parse(R"([1])")).ok());
}

TEST_CASE("numbers are written as people write them", "[transform][json]") {
  CHECK(SerializeJson(json::parse(R"({"a":873.4,"b":1e300,"c":-0.5,"d":12,"e":"x\"y"})")) ==
        R"({"a":873.4,"b":1e+300,"c":-0.5,"d":12,"e":"x\"y"})");
  CHECK(SerializeJson(json::parse("[18446744073709551615,-9223372036854775808,0.1]")) ==
        "[18446744073709551615,-9223372036854775808,0.1]");
  CHECK(SerializeJson(json::parse(R"({"nested":{"k":[true,null,"\u00e9"]}})")) ==
        "{\"nested\":{\"k\":[true,null,\"\xC3\xA9\"]}}");
}

TEST_CASE("configuration comes inline, as base64 or from a file, one form at a time",
          "[transform][config]") {
  auto none = ResolveTransformerConfig("doc-transformer-config", "", "", "");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  auto inline_text = ResolveTransformerConfig("doc-transformer-config", "[]", "", "");
  REQUIRE(inline_text.ok());
  CHECK(**inline_text == "[]");

  // "[{\"NoopTransformerProvider\":{}}]" in base64.
  auto decoded = ResolveTransformerConfig("doc-transformer-config", "",
                                          "W3siTm9vcFRyYW5zZm9ybWVyUHJvdmlkZXIiOnt9fV0=", "");
  REQUIRE(decoded.ok());
  CHECK(**decoded == R"([{"NoopTransformerProvider":{}}])");

  const std::string path =
      (std::filesystem::temp_directory_path() / "rfs_transformer_config_test.json").string();
  std::ofstream(path) << R"([{"JqTransformerProvider":{"script":"."}}])";
  auto from_file = ResolveTransformerConfig("doc-transformer-config", "", "", path);
  std::remove(path.c_str());
  REQUIRE(from_file.ok());
  CHECK(Contains(**from_file, "JqTransformerProvider"));

  auto both = ResolveTransformerConfig("doc-transformer-config", "[]", "W10=", "");
  REQUIRE_FALSE(both.ok());
  CHECK(Contains(std::string(both.status().message()), "--doc-transformer-config"));
  CHECK_FALSE(ResolveTransformerConfig("x", "", "not base64!", "").ok());
  auto missing = ResolveTransformerConfig("x", "", "", "no/such/config.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(Contains(std::string(missing.status().message()), "no/such/config.json"));
}

TEST_CASE("broken configurations fail at load naming the problem", "[transform][config]") {
  CHECK(Contains(LoadError("[{"), "JSON"));
  CHECK(Contains(LoadError(R"([{"NoSuchProvider":{}}])"), "NoSuchProvider"));
  CHECK(Contains(LoadError(R"([{"NoopTransformerProvider":{},"Other":{}}])"), "one"));
  CHECK(Contains(LoadError("42"), "unknown provider"));
  // A single entry without the list around it is taken as a list of one.
  CHECK(LoadTransformers(R"({"NoopTransformerProvider":{}})").ok());
  CHECK(Contains(LoadError(R"([{"JqTransformerProvider":{"script":".a |||"}}])"),
                 "JqTransformerProvider"));
  CHECK(Contains(LoadError(R"([{"JqTransformerProvider":{}}])"), "script"));
  CHECK(Contains(
      LoadError(R"([{"JsonJSTransformerProvider":{"initializationScript":"(function("}}])"),
      "JsonJSTransformerProvider"));
  CHECK(Contains(
      LoadError(R"([{"TypeMappingSanitizationTransformerProvider":{"staticMappings":{"a":1}}}])"),
      "staticMappings.a"));
  CHECK(Contains(
      LoadError(
          R"([{"TypeMappingSanitizationTransformerProvider":{"regexMappings":[{"sourceIndexPattern":"("}]}}])"),
      "regexMappings"));
  CHECK(Contains(LoadError(R"([{"TypeMappingSanitizationTransformerProvider":{"typo":1}}])"),
                 "typo"));
  CHECK(Contains(
      LoadError(
          R"([{"JsonConditionalTransformerProvider":[{"JsonJMESPathPredicateProvider":{"script":"a[?"}},[]]}])"),
      "JsonJMESPathPredicateProvider"));
  CHECK(Contains(LoadError(R"([{"JsonConditionalTransformerProvider":{}}])"), "predicate"));
}

TEST_CASE("the no-op and the type-removal providers", "[transform][providers]") {
  json::array batch{Doc("a", "1", "t", json::parse(R"({"x":1})"))};
  CHECK(Run("NoopTransformerProvider", batch) == batch);
  CHECK(Run(R"([{"NoopTransformerProvider":{}}])", batch) == batch);
  auto noop = LoadTransformers("[{\"NoopTransformerProvider\":null}]");
  REQUIRE(noop.ok());
  CHECK_FALSE((*noop)->ReadsDocumentSource());

  json::value removed = Run(R"([{"JsonTransformerForDocumentTypeRemovalProvider":{}}])", batch);
  CHECK_FALSE(removed.at(0).at("operation").as_object().contains("_type"));
  CHECK(removed.at(0).at("document").at("x") == 1);
}

TEST_CASE("jq programs rewrite, drop and split documents", "[transform][jq]") {
  json::array batch{Doc("logs", "1", std::nullopt, json::parse(R"({"msg":"a","n":1})")),
                    Doc("logs", "2", std::nullopt, json::parse(R"({"msg":"b","n":2})")),
                    Doc("logs", "3", std::nullopt, json::parse(R"({"msg":"c","n":3})"))};
  // Rename a field and the index.
  json::value renamed = Run(
      R"([{"JqTransformerProvider":{"script":".document |= (.message = .msg | del(.msg)) | .operation._index = \"logs-v2\""}}])",
      batch);
  REQUIRE(renamed.as_array().size() == 3);
  CHECK(renamed.at(1).at("document") == json::parse(R"({"n":2,"message":"b"})"));
  CHECK(renamed.at(1).at("operation").at("_index") == "logs-v2");

  // select() drops; two outputs split.
  json::value dropped =
      Run(R"J([{"JqTransformerProvider":{"script":"select(.document.n != 2)"}}])J", batch);
  REQUIRE(dropped.as_array().size() == 2);
  CHECK(dropped.at(1).at("operation").at("_id") == "3");
  json::value split =
      Run(R"J([{"JqTransformerProvider":{"script":"., (.operation._index = \"copy\")"}}])J", batch);
  REQUIRE(split.as_array().size() == 6);
  CHECK(split.at(0).at("operation").at("_index") == "logs");
  CHECK(split.at(1).at("operation").at("_index") == "copy");
  CHECK(split.at(1).at("operation").at("_id") == "1");

  // A runtime error is the provider's error, for the caller to attribute.
  auto failing =
      LoadTransformers(R"([{"JqTransformerProvider":{"script":".document.n + \"x\""}}])");
  REQUIRE(failing.ok());
  auto error = (*failing)->Transform(json::array{batch[0]});
  REQUIRE_FALSE(error.ok());
  CHECK(Contains(std::string(error.status().message()), "JqTransformerProvider"));
}

TEST_CASE("jq and JavaScript refuse integers they would round", "[transform][jq][js]") {
  json::array batch{Doc("a", "1", std::nullopt, json::parse(R"({"big":9007199254740993})"))};
  for (
      const char* config :
      {R"([{"JqTransformerProvider":{"script":"."}}])",
       R"J([{"JsonJSTransformerProvider":{"initializationScript":"(function(b){return function(d){return d;};})"}}])J"}) {
    auto transformer = LoadTransformers(config);
    REQUIRE(transformer.ok());
    auto out = (*transformer)->Transform(batch);
    INFO(config);
    REQUIRE_FALSE(out.ok());
    CHECK(Contains(std::string(out.status().message()), "big"));
  }
  // 2^53 itself is exact in a double and passes.
  json::array exact{Doc("a", "1", std::nullopt, json::parse(R"({"big":9007199254740992})"))};
  CHECK(
      Run(R"([{"JqTransformerProvider":{"script":"."}}])", exact).at(0).at("document").at("big") ==
      9007199254740992LL);
}

TEST_CASE("JavaScript transforms get bindings and Java map methods", "[transform][js]") {
  const std::string config = R"J([{"JsonJSTransformerProvider":{
    "initializationScript": "(function (bindings) { return function (docs) { var out = []; for (var i = 0; i < docs.length; i++) { var d = docs[i]; if (d.get('document').skip) continue; d.get('operation').set('_index', bindings.prefix + d.operation._index); d.document.seen = true; out.push(d); } return out; }; })",
    "bindingsObject": "{\"prefix\": \"new-\"}"}}])J";
  json::array batch{Doc("a", "1", std::nullopt, json::parse(R"({"v":1.5})")),
                    Doc("a", "2", std::nullopt, json::parse(R"({"skip":true})"))};
  json::value out = Run(config, batch);
  REQUIRE(out.as_array().size() == 1);
  CHECK(out.at(0).at("operation").at("_index") == "new-a");
  CHECK(out.at(0).at("document") == json::parse(R"({"v":1.5,"seen":true})"));

  auto throwing = LoadTransformers(
      R"J([{"JsonJSTransformerProvider":{"initializationScript":"(function(){return function(d){throw new Error('no way');};})"}}])J");
  REQUIRE(throwing.ok());
  auto error = (*throwing)->Transform(batch);
  REQUIRE_FALSE(error.ok());
  CHECK(Contains(std::string(error.status().message()), "no way"));
}

TEST_CASE("conditional transforms apply to the documents that match", "[transform][conditional]") {
  json::array batch{Doc("keep", "1", std::nullopt, json::parse(R"({"v":1})")),
                    Doc("tag", "2", std::nullopt, json::parse(R"({"v":2})"))};
  for (
      const char* predicate :
      {R"({"JqPredicateProvider":{"script":".operation._index == \"tag\""}})",
       R"J({"JsonJSPredicateProvider":{"initializationScript":"(function(){return function(d){return d.operation._index === 'tag';};})"}})J"}) {
    const std::string config =
        std::string(R"([{"JsonConditionalTransformerProvider":[)") + predicate +
        R"(,[{"JqTransformerProvider":{"script":".document.tagged = true"}}]]}])";
    json::value out = Run(config, batch);
    REQUIRE(out.as_array().size() == 2);
    CHECK_FALSE(out.at(0).at("document").as_object().contains("tagged"));
    CHECK(out.at(1).at("document").at("tagged") == true);
  }
}

TEST_CASE("type-mapping sanitization routes typed documents", "[transform][types]") {
  json::array batch{Doc("library", "1", "book", json::parse(R"({"t":1})")),
                    Doc("library", "2", "author", json::parse(R"({"t":2})")),
                    Doc("library", "3", "magazine", json::parse(R"({"t":3})")),
                    Doc("other", "4", "x", json::parse(R"({"t":4})")),
                    Doc("typeless", "5", std::nullopt, json::parse(R"({"t":5})"))};
  // Default: every type into the index of the same name; _type removed.
  json::value merged = Run("TypeMappingSanitizationTransformerProvider", batch);
  REQUIRE(merged.as_array().size() == 5);
  for (const auto& d : merged.as_array()) {
    CHECK_FALSE(d.at("operation").as_object().contains("_type"));
  }
  CHECK(merged.at(1).at("operation").at("_index") == "library");
  CHECK(merged.at(4).at("operation").at("_index") == "typeless");

  // staticMappings split one index; a type it does not list is dropped. regexMappings do the rest.
  json::value split = Run(R"J([{"TypeMappingSanitizationTransformerProvider":{
      "staticMappings": {"library": {"book": "books", "author": "authors"}},
      "regexMappings": [{"sourceIndexPattern": "(.*)", "sourceTypePattern": "(.*)",
                         "targetIndexPattern": "$1_$2"}]}}])J",
                          batch);
  REQUIRE(split.as_array().size() == 4);
  CHECK(split.at(0).at("operation").at("_index") == "books");
  CHECK(split.at(1).at("operation").at("_index") == "authors");
  CHECK(split.at(2).at("operation").at("_index") == "other_x");
  CHECK(split.at(3).at("operation").at("_index") == "typeless__doc");
  CHECK(split.at(0).at("document") == json::parse(R"({"t":1})"));

  auto t = LoadTransformers("TypeMappingSanitizationTransformerProvider");
  REQUIRE(t.ok());
  CHECK_FALSE((*t)->ReadsDocumentSource());
}

TEST_CASE("type-mapping sanitization splits and merges multi-type mappings",
          "[transform][types][metadata]") {
  json::value index = json::parse(R"({"type":"index","name":"library","body":{
      "settings":{"number_of_shards":1},
      "mappings":{"book":{"properties":{"title":{"type":"text"}}},
                  "author":{"properties":{"name":{"type":"keyword"},"title":{"type":"keyword"}}}},
      "aliases":{}}})");
  json::value split = Run(R"([{"TypeMappingSanitizationTransformerProvider":{
      "staticMappings": {"library": {"book": "books", "author": "authors"}}}}])",
                          index);
  REQUIRE(split.as_array().size() == 2);
  CHECK(split.at(0).at("name") == "books");
  CHECK(split.at(0).at("body").at("mappings") ==
        json::parse(R"({"_doc":{"properties":{"title":{"type":"text"}}}})"));
  CHECK(split.at(0).at("body").at("settings").at("number_of_shards") == 1);
  CHECK(split.at(1).at("name") == "authors");

  // Default: the types' properties merge into one index (a later type wins a conflict).
  json::value merged = Run("TypeMappingSanitizationTransformerProvider", index);
  REQUIRE(merged.as_array().size() == 1);
  CHECK(merged.at(0).at("name") == "library");
  CHECK(merged.at(0).at("body").at("mappings") ==
        json::parse(
            R"({"_doc":{"properties":{"title":{"type":"keyword"},"name":{"type":"keyword"}}}})"));

  // Every type unmapped: the index is dropped.
  json::value none = Run(R"([{"TypeMappingSanitizationTransformerProvider":{
      "staticMappings": {"library": {"other": "x"}}}}])",
                         index);
  CHECK(none.as_array().empty());
}

TEST_CASE("a chain applies its transformers in order", "[transform][chain]") {
  json::array batch{Doc("a", "1", "t", json::parse(R"({"v":1})"))};
  json::value out = Run(R"J([
      {"TypeMappingSanitizationTransformerProvider": {"regexMappings": [["(a)", "(t)", "$1-$2"]]}},
      {"JqTransformerProvider": {"script": ".operation._index |= ascii_upcase"}}])J",
                        batch);
  REQUIRE(out.as_array().size() == 1);
  CHECK(out.at(0).at("operation").at("_index") == "A-T");
  CHECK(LoadTransformers("[]").ok());
}
