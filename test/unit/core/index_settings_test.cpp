#include "rfs/core/index_settings.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <catch2/catch.hpp>

namespace json = boost::json;

namespace {

std::string Flat(const json::object& settings) {
  std::string out;
  for (const auto& [name, value] : rfs::core::FlattenSettings(settings)) {
    out += name + "=" + json::serialize(*value) + ";";
  }
  return out;
}

}  // namespace

TEST_CASE("flat and nested settings give the same dotted names, in document order",
          "[core][settings]") {
  const json::object flat =
      json::parse(R"({"index.number_of_shards":"2","index.refresh_interval":"1s"})").as_object();
  const json::object nested =
      json::parse(R"({"index":{"number_of_shards":"2","refresh_interval":"1s"}})").as_object();
  CHECK(Flat(flat) == R"(index.number_of_shards="2";index.refresh_interval="1s";)");
  CHECK(Flat(nested) == Flat(flat));
}

TEST_CASE("arrays, numbers, booleans and nulls are leaves, and an empty object leaves nothing",
          "[core][settings]") {
  const json::object mixed = json::parse(R"({"index":{"analysis":{"filter":["a","b"]},
      "blocks":{"write":true},"priority":5,"gone":null,"empty":{}},"index.codec":"best_compression"})")
                                 .as_object();
  CHECK(Flat(mixed) == R"(index.analysis.filter=["a","b"];index.blocks.write=true;)"
                       R"(index.priority=5;index.gone=null;index.codec="best_compression";)");
}

TEST_CASE("the values point into the settings they were read from", "[core][settings]") {
  const json::object settings = json::parse(R"({"a":{"b":"c"}})").as_object();
  const auto leaves = rfs::core::FlattenSettings(settings);
  REQUIRE(leaves.size() == 1);
  CHECK(leaves[0].first == "a.b");
  CHECK(leaves[0].second == &settings.at("a").as_object().at("b"));
}
