#include "rfs/reindex/bulk_format.hpp"

#include <catch2/catch.hpp>

namespace rfs::reindex {
namespace {

SourceDocument Doc(std::string id, std::string source) {
  SourceDocument doc;
  doc.index = "logs";
  doc.id = std::move(id);
  doc.source = std::move(source);
  return doc;
}

TEST_CASE("AppendBulkAction writes index, id and routing", "[reindex]") {
  SourceDocument doc = Doc("1", "{}");
  std::string out;
  AppendBulkAction(doc, {}, out);
  CHECK(out == "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n");

  doc.routing = "r1";
  doc.type = "post";
  out.clear();
  AppendBulkAction(doc, {.include_type = true}, out);
  CHECK(out ==
        "{\"index\":{\"_index\":\"logs\",\"_type\":\"post\",\"_id\":\"1\",\"routing\":\"r1\"}}\n");
}

TEST_CASE("AppendBulkAction escapes ids", "[reindex]") {
  SourceDocument doc = Doc(std::string("a\"b\\c\n\x01", 7), "{}");
  std::string out;
  AppendBulkAction(doc, {}, out);
  CHECK(out == "{\"index\":{\"_index\":\"logs\",\"_id\":\"a\\\"b\\\\c\\n\\u0001\"}}\n");
}

TEST_CASE("AppendSourceLine makes pretty-printed JSON one line", "[reindex]") {
  std::string out;
  AppendSourceLine("{\r\n  \"a\": \"x\\ny\",\n  \"b\": [1,\n 2]\n}", out);
  CHECK(out == "{    \"a\": \"x\\ny\",   \"b\": [1,  2] }\n");
  out.clear();
  AppendSourceLine("{\"one\":\"line\"}", out);
  CHECK(out == "{\"one\":\"line\"}\n");
  out.clear();
  AppendSourceLine("", out);
  CHECK(out == "{}\n");
}

TEST_CASE("EstimateBulkBytes covers the serialized size", "[reindex]") {
  SourceDocument doc = Doc("id-1", "{\"a\":1}");
  doc.routing = "r";
  std::string out;
  AppendBulkAction(doc, {}, out);
  AppendSourceLine(doc.source, out);
  CHECK(EstimateBulkBytes(doc) >= out.size());
  CHECK(EstimateBulkBytes(doc) <= out.size() + 16);
}

}  // namespace
}  // namespace rfs::reindex
