#include "rfs/reindex/bulk_format.hpp"

#include <cstdint>
#include <memory>
#include <utility>

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

TEST_CASE("AppendBulkAction writes create and delete actions", "[reindex]") {
  SourceDocument doc = Doc("7", R"({"@timestamp":"2024-01-01"})");
  doc.op = BulkOp::kCreate;
  std::string out;
  AppendBulkAction(doc, {}, out);
  AppendSourceLine(doc, out);
  CHECK(out ==
        "{\"create\":{\"_index\":\"logs\",\"_id\":\"7\"}}\n{\"@timestamp\":\"2024-01-01\"}\n");
  CHECK(EstimateBulkBytes(doc) >= out.size());

  doc.op = BulkOp::kDelete;
  doc.routing = "r";
  out.clear();
  AppendBulkAction(doc, {}, out);
  AppendSourceLine(doc, out);  // a delete has no source line
  CHECK(out == "{\"delete\":{\"_index\":\"logs\",\"_id\":\"7\",\"routing\":\"r\"}}\n");
}

TEST_CASE("AppendBulkAction writes a source version as an external version", "[reindex]") {
  SourceDocument doc = Doc("1", "{}");
  doc.routing = "r";
  doc.version = 4;
  std::string out;
  AppendBulkAction(doc, {}, out);
  CHECK(out ==
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\",\"routing\":\"r\","
        "\"version\":4,\"version_type\":\"external\"}}\n");
  AppendSourceLine(doc, out);
  CHECK(EstimateBulkBytes(doc) >= out.size());
  doc.version = INT64_MAX;  // the largest a version can be
  out.clear();
  AppendBulkAction(doc, {}, out);
  AppendSourceLine(doc, out);
  CHECK(out.find("\"version\":9223372036854775807,") != std::string::npos);
  CHECK(EstimateBulkBytes(doc) >= out.size());
  // Without a version the line is as it always was.
  doc.version.reset();
  out.clear();
  AppendBulkAction(doc, {}, out);
  CHECK(out == "{\"index\":{\"_index\":\"logs\",\"_id\":\"1\",\"routing\":\"r\"}}\n");
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

TEST_CASE("AppendRenderedLines lays documents out one after another", "[reindex]") {
  auto lines = std::make_shared<RenderedLines>();
  SourceDocument first = Doc("1", "");
  SourceDocument second = Doc("2", "");
  second.routing = "r";
  SourceDocument empty = Doc("3", "");
  auto append = [](std::string_view source) {
    return [source](std::string& out) {
      core::AppendJsonOneLine(source, out);
      return absl::OkStatus();
    };
  };
  REQUIRE(AppendRenderedLines(first, lines, append("{\n\"a\": 1}")).ok());
  REQUIRE(AppendRenderedLines(second, lines, append(R"({"b":2})")).ok());
  REQUIRE(AppendRenderedLines(empty, lines, append("")).ok());

  // The same bytes as a body made document by document.
  std::string expected;
  for (auto [doc, source] : {std::pair{&first, "{ \"a\": 1}"}, std::pair{&second, R"({"b":2})"},
                             std::pair{&empty, "{}"}}) {
    AppendBulkAction(*doc, {}, expected);
    expected.append(source).push_back('\n');
  }
  CHECK(lines->bytes == expected);
  CHECK(first.rendered_begin == 0);
  CHECK(second.rendered_begin == first.rendered_end);
  CHECK(empty.rendered_end == lines->bytes.size());
  CHECK(SourceBytes(first) == "{ \"a\": 1}");
  CHECK(SourceSize(first) == 9);
  CHECK(SourceBytes(second) == R"({"b":2})");
  CHECK(SourceBytes(empty) == "{}");
  CHECK(first.source.empty());
  CHECK(HasRenderedLines(first, {}));
  CHECK_FALSE(HasRenderedLines(first, {.include_type = true}));
  CHECK(EstimateBulkBytes(second) >= second.rendered_end - second.rendered_begin);
  std::string line;
  AppendSourceLine(second, line);
  CHECK(line == "{\"b\":2}\n");

  // A source that cannot be made leaves the lines and the document as they were.
  SourceDocument failing = Doc("4", "kept");
  const std::string before = lines->bytes;
  const absl::Status status = AppendRenderedLines(failing, lines, [](std::string& out) {
    out.append("half");
    return absl::InvalidArgumentError("bad source");
  });
  CHECK(absl::IsInvalidArgument(status));
  CHECK(lines->bytes == before);
  CHECK_FALSE(failing.rendered);
  CHECK(SourceBytes(failing) == "kept");
}

}  // namespace
}  // namespace rfs::reindex
