#include "rfs/reindex/failed_document_sink.hpp"

#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/net/encoding.hpp"
#include "rfs/net/gzip.hpp"

#include "reindex_test_util.hpp"

namespace rfs::reindex {
using namespace rfs::net;  // NOLINT: the layers this test drives
namespace {

namespace json = boost::json;

FailedDocument Failed(std::string id, std::string source) {
  FailedDocument doc;
  doc.index = "logs";
  doc.id = std::move(id);
  doc.cursor = 42;
  doc.status = 400;
  doc.error_type = "mapper_parsing_exception";
  doc.reason = "failed to parse field [n] of type [long]";
  doc.action = R"({"index":{"_index":"logs","_id":")" + doc.id + R"("}})";
  doc.source = std::move(source);
  return doc;
}

TEST_CASE("failed-document sink appends durable gzip NDJSON records", "[reindex][failed]") {
  testutil::TempDir dir;
  auto sink = GzipFailedDocumentSink::Open(dir.str() + "/failed");
  REQUIRE(sink.ok());
  std::vector<FailedDocument> first{Failed("a", R"({"n":"x"})"), Failed("b", "{not json")};
  REQUIRE((*sink)->Record(first).ok());
  std::vector<FailedDocument> second{Failed("c", R"({"n":[1]})")};
  REQUIRE((*sink)->Record(second).ok());
  CHECK((*sink)->recorded() == 3);

  std::ifstream in((*sink)->path(), std::ios::binary);
  std::stringstream raw;
  raw << in.rdbuf();
  auto text = net::GzipDecompress(raw.str());
  REQUIRE(text.ok());
  std::istringstream lines(*text);
  std::vector<json::object> records;
  std::string line;
  while (std::getline(lines, line)) records.push_back(json::parse(line).as_object());
  REQUIRE(records.size() == 3);
  CHECK(records[0].at("index") == "logs");
  CHECK(records[0].at("id") == "a");
  CHECK(records[0].at("cursor") == 42);
  CHECK(records[0].at("status") == 400);
  CHECK(records[0].at("error_type") == "mapper_parsing_exception");
  CHECK(records[0].at("reason") == "failed to parse field [n] of type [long]");
  CHECK(json::serialize(records[0].at("action")) == R"({"index":{"_index":"logs","_id":"a"}})");
  CHECK(json::serialize(records[0].at("source")) == R"({"n":"x"})");
  // A source that is not JSON is kept verbatim as a string.
  CHECK(records[1].at("source") == "{not json");
  CHECK(records[2].at("id") == "c");
}

TEST_CASE("failed-document sinks in one folder use distinct files", "[reindex][failed]") {
  testutil::TempDir dir;
  auto a = GzipFailedDocumentSink::Open(dir.str());
  auto b = GzipFailedDocumentSink::Open(dir.str());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*a)->path() != (*b)->path());
  CHECK((*a)->path().ends_with(".ndjson.gz"));
}

TEST_CASE("a failed-document sink may make its folder with its first record", "[reindex][failed]") {
  testutil::TempDir dir;
  namespace fs = std::filesystem;
  const fs::path eager = fs::path(dir.str()) / "eager";
  const fs::path lazy = fs::path(dir.str()) / "lazy" / "round-1";
  auto at_open = GzipFailedDocumentSink::Open(eager.string());
  auto with_record =
      GzipFailedDocumentSink::Open(lazy.string(), "round", FolderCreation::kWithFirstRecord);
  REQUIRE(at_open.ok());
  REQUIRE(with_record.ok());
  CHECK(fs::is_directory(eager));
  CHECK_FALSE(fs::exists(lazy.parent_path()));  // nothing recorded: no folder

  std::vector<FailedDocument> docs{Failed("a", R"({"n":"x"})")};
  REQUIRE((*with_record)->Record(docs).ok());
  CHECK(fs::is_regular_file((*with_record)->path()));
  CHECK(fs::path((*with_record)->path()).parent_path() == lazy);
  // A sink opened while the folder was there makes it again if it is gone by its first record.
  auto again =
      GzipFailedDocumentSink::Open(lazy.string(), "round", FolderCreation::kWithFirstRecord);
  REQUIRE(again.ok());
  fs::remove_all(lazy.parent_path());
  REQUIRE((*again)->Record(docs).ok());
  CHECK((*again)->recorded() == 1);
  CHECK(fs::is_regular_file((*again)->path()));
}

TEST_CASE("gzip round-trips and rejects corrupt input", "[reindex][failed]") {
  const std::string text(100000, 'a');
  auto packed = net::GzipCompress(text);
  REQUIRE(packed.ok());
  CHECK(packed->size() < 1000);
  auto unpacked = net::GzipDecompress(*packed);
  REQUIRE(unpacked.ok());
  CHECK(*unpacked == text);
  CHECK(absl::IsDataLoss(net::GzipDecompress(packed->substr(0, packed->size() / 2)).status()));
}

TEST_CASE("a failed-document record keeps the source's text as written", "[reindex][failed]") {
  // Parsed and printed again, 959.3 would read 9.593E2 and -6.1499999999999996E-6 another double.
  const std::string source = R"({"price":959.3,"rating":-6.1499999999999996E-6,"big":1.0e2})";
  const std::string record = FailedDocumentToJson(Failed("n", source));
  CHECK(record.find(source) != std::string::npos);
  CHECK(record.ends_with("\"source\":" + source + "}"));
  CHECK(json::parse(record).as_object().at("id") == "n");
  // A source on several lines (a pretty-printed one) still makes one line.
  const std::string pretty = "{\n  \"a\": 1.50\n}";
  const std::string one = FailedDocumentToJson(Failed("p", pretty));
  CHECK(one.find('\n') == std::string::npos);
  CHECK(json::parse(one).as_object().at("source").as_object().at("a") == 1.5);
}

TEST_CASE("a failed-document record keeps a source nested deeper than 32 levels as JSON",
          "[reindex][failed]") {
  // Boost.JSON's default depth is 32; real documents go deeper (the engines allow 1000).
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += R"({"a":)";
  deep += "1";
  deep.append(100, '}');
  const std::string record = FailedDocumentToJson(Failed("d", deep));
  CHECK(record.ends_with("\"source\":" + deep + "}"));
}

TEST_CASE("a large failed document is written from where it is, in the same record",
          "[reindex][failed]") {
  testutil::TempDir dir;
  auto sink = GzipFailedDocumentSink::Open(dir.str());
  REQUIRE(sink.ok());
  // Over the streamed-record threshold (16 MiB): a JSON source kept as written, borrowed from the
  // buffer it lies in, and a second one that is not JSON, re-encoded as a string. The big one is
  // base64-like text that gzip cannot shrink much, so its member is written in several pieces.
  auto lines = std::make_shared<std::string>("{\"index\":{}}\n");
  const size_t source_at = lines->size();
  *lines += R"({"blob":")";
  uint64_t state = 7;
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < (size_t{20} << 20); ++i) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    lines->push_back(kAlphabet[state >> 58]);
  }
  *lines += R"("})";
  const std::string_view big = std::string_view(*lines).substr(source_at);
  *lines += "\n";
  FailedDocument borrowed = Failed("big", "");
  borrowed.borrowed_source = big;
  borrowed.source_owner = lines;
  const std::string not_json = "{" + std::string(1000, 'y');
  const std::vector<FailedDocument> before{Failed("small-1", R"({"n":1})")};
  const std::vector<FailedDocument> docs{borrowed, Failed("bad", not_json)};
  const std::vector<FailedDocument> after{Failed("small-2", R"({"n":2})")};
  REQUIRE((*sink)->Record(before).ok());
  REQUIRE((*sink)->Record(docs).ok());
  REQUIRE((*sink)->Record(after).ok());
  CHECK((*sink)->recorded() == 4);
  std::ifstream in((*sink)->path(), std::ios::binary);
  std::stringstream raw;
  raw << in.rdbuf();
  CHECK(raw.str().size() > (size_t{12} << 20));  // the big source did not compress away
  auto text = net::GzipDecompress(raw.str());
  REQUIRE(text.ok());
  CHECK(*text == FailedDocumentToJson(before[0]) + "\n" + FailedDocumentToJson(docs[0]) + "\n" +
                     FailedDocumentToJson(docs[1]) + "\n" + FailedDocumentToJson(after[0]) + "\n");
  CHECK(text->find("\"source\":" + std::string(big) + "}\n") != std::string::npos);
  CHECK(docs[0].source.empty());
}

TEST_CASE("IsJson checks the grammar without building the value", "[reindex][failed]") {
  CHECK(net::IsJson(R"({"a":[1,2.5,"x",null,true]})"));
  CHECK(net::IsJson(" 12 "));
  CHECK_FALSE(net::IsJson(R"({"a":1} x)"));
  CHECK_FALSE(net::IsJson(R"({"a":1)"));
  CHECK_FALSE(net::IsJson(""));
  CHECK_FALSE(net::IsJson("{'a':1}"));
  std::string deep(50, '[');
  deep.append(50, ']');
  CHECK(net::IsJson(deep));
  CHECK_FALSE(net::IsJson(deep, 40));
}

}  // namespace
}  // namespace rfs::reindex
