// Points as Lucene 7.7 (Lucene60 format), 8.7 (Lucene86, big-endian), 9.12 and 10.5 (Lucene90,
// little-endian) wrote them (WritePointsIndex.java: every leaf layout and document-id encoding
// those releases write), read back by SegmentPoints equal to what Java packed; damaged files fail
// naming them.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/file_util.hpp"
#include "rfs/lucene/segment_infos.hpp"
#include "rfs/lucene/source_rebuild.hpp"

#include "lucene/codecs/doc_values_internal.hpp"
#include "lucene/codecs/field_infos_internal.hpp"
#include "lucene/codecs/points_internal.hpp"
#include "lucene/codecs/vectors_internal.hpp"
#include "lucene/rebuild/rebuilder_internal.hpp"
#include "unit/lucene/test_util.hpp"

namespace {

namespace fs = std::filesystem;
using rfs::lucene::testing::LucenePointsIndex;

using Segment = rfs::lucene::testing::OneSegment;

// field -> doc -> the doc's points in hex, sorted.
std::map<std::string, std::map<int32_t, std::vector<std::string>>> ExpectedPoints(
    const fs::path& dir) {
  std::map<std::string, std::map<int32_t, std::vector<std::string>>> out;
  std::ifstream in(dir / "expected.tsv");
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream parts(line);
    std::string doc, field, hex;
    std::getline(parts, doc, '\t');
    std::getline(parts, field, '\t');
    std::getline(parts, hex, '\t');
    out[field][std::stoi(doc)].push_back(hex);
  }
  for (auto& [field, docs] : out) {
    for (auto& [doc, values] : docs) std::sort(values.begin(), values.end());
  }
  return out;
}

std::string Hex(const std::vector<uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace

TEST_CASE("Points of Lucene 7.7, 8.7, 9.12 and 10.5 read back as Lucene packed them") {
  for (int major : {7, 8, 9, 10}) {
    INFO("Lucene " << major);
    const fs::path dir = LucenePointsIndex(major);
    Segment segment(dir / "index");
    const auto expected = ExpectedPoints(dir);
    REQUIRE(expected.size() == 5);
    std::vector<std::vector<uint8_t>> values;
    for (const auto& [name, by_doc] : expected) {
      INFO(name);
      size_t docs_with_points = 0;
      for (int32_t doc = 0; doc < segment.max_doc(); ++doc) {
        values.clear();
        auto has = segment.points->Values(name, doc, values);
        INFO(has.status().ToString());
        REQUIRE(has.ok());
        REQUIRE(*has);
        std::vector<std::string> got;
        for (const auto& v : values) got.push_back(Hex(v));
        std::sort(got.begin(), got.end());
        auto it = by_doc.find(doc);
        if (it == by_doc.end()) {
          REQUIRE(got.empty());
          continue;
        }
        ++docs_with_points;
        REQUIRE(got == it->second);
      }
      CHECK(docs_with_points == by_doc.size());
    }
    // A field without points has none.
    values.clear();
    auto none = segment.points->Values("n", 0, values);
    REQUIRE(none.ok());
    CHECK_FALSE(*none);
  }
}

TEST_CASE("A damaged points file fails naming it") {
  const fs::path work = fs::temp_directory_path() / ("rfs-points-" + std::to_string(::getpid()));
  for (const std::string ext : {"kdm", "kdd", "dii", "dim"}) {
    INFO(ext);
    const bool lucene60 = ext == "dii" || ext == "dim";
    fs::remove_all(work);
    fs::copy(LucenePointsIndex(lucene60 ? 7 : 10) / "index", work);
    const fs::path damaged = work / ("_0." + ext);
    rfs::lucene::testing::FlipMiddleByte(damaged);
    Segment segment(work);
    std::vector<std::vector<uint8_t>> values;
    auto has = segment.points->Values("long", 1, values);
    REQUIRE_FALSE(has.ok());
    CHECK(std::string(has.status().message()).find("." + ext) != std::string::npos);
  }
  fs::remove_all(work);
}

TEST_CASE("Numbers and addresses with neither doc values nor store are rebuilt from points") {
  const auto mapping = boost::json::parse(R"({"properties":{
      "int":{"type":"integer","doc_values":false},
      "long":{"type":"long","doc_values":false},
      "ip":{"type":"ip","doc_values":false},
      "same":{"type":"long","doc_values":false,"index":false}}})")
                           .as_object();
  auto plan = rfs::lucene::SourceRebuildPlan::FromMapping(mapping);
  REQUIRE(plan.ok());
  REQUIRE(plan->fields.size() == 3);
  for (const auto& field : plan->fields) CHECK(field.points);
  // Not indexed: no points to read.
  REQUIRE(plan->unrebuildable.size() == 1);
  CHECK(plan->unrebuildable[0].starts_with("same:"));
  for (int major : {7, 8, 9, 10}) {
    INFO("Lucene " << major);
    Segment segment(LucenePointsIndex(major) / "index");
    rfs::lucene::internal::SourceRebuilder rebuilder(
        std::make_shared<const rfs::lucene::SourceRebuildPlan>(*plan));
    rebuilder.StartSegment(*segment.doc_values, *segment.vectors, segment.points.get());
    std::string out;
    for (int32_t doc : {0, 1, 2, 7, 11, 21, 149999}) {
      INFO("doc " << doc);
      REQUIRE(rebuilder.Rebuild(doc, {}, out).ok());
      // As WritePointsIndex.java wrote them; several values come back ascending.
      std::string want = "{\"int\":" + std::to_string((doc * 7919) % 13 - 6);
      if (doc % 7 == 0) {
        want += ",\"ip\":\"10." + std::to_string((doc >> 16) & 255) + "." +
                std::to_string((doc >> 8) & 255) + "." + std::to_string(doc & 255) + "\"";
      }
      if (doc % 3 != 0) {
        const int64_t v = doc * int64_t{1000003} - (int64_t{1} << 40);
        want += ",\"long\":[" + std::to_string(v) + (doc % 10 == 1 ? "," + std::to_string(v) : "") +
                "," + std::to_string(-v / 7) + "]";
      }
      want += "}";
      CHECK(out == want);
      CHECK(rebuilder.last_inexact() == (doc % 3 != 0));
    }
  }
}
