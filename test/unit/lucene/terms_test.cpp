// Terms dictionaries and postings as Lucene 7.7 to 10.5 wrote them (WriteTermsIndex.java: every
// block and postings layout those releases write), walked by SegmentTerms: every term with every
// document, equal to what Lucene's own TermsEnum and PostingsEnum read back; damaged files fail
// naming them.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "rfs/lucene/source_rebuild.hpp"

#include "lucene/codecs/terms_internal.hpp"
#include "lucene/rebuild/rebuilder_internal.hpp"
#include "unit/lucene/test_util.hpp"

namespace {

namespace fs = std::filesystem;
using rfs::lucene::internal::PostingsFormat;
using rfs::lucene::internal::PostingsFormatByName;
using rfs::lucene::internal::UnpackForBlock;
using rfs::lucene::testing::LuceneTermsIndex;
using Segment = rfs::lucene::testing::OneSegment;

struct TermLine {
  std::string field, hex;
  int64_t count = 0;
  int64_t hash = 0;
  bool operator==(const TermLine&) const = default;
};

std::vector<TermLine> ExpectedTerms(const fs::path& dir) {
  std::vector<TermLine> out;
  std::ifstream in(dir / "expected.tsv");
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream parts(line);
    TermLine t;
    std::string count, hash;
    std::getline(parts, t.field, '\t');
    std::getline(parts, t.hex, '\t');
    std::getline(parts, count, '\t');
    std::getline(parts, hash, '\t');
    t.count = std::stoll(count);
    t.hash = std::stoll(hash);
    out.push_back(t);
  }
  return out;
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::vector<TermLine> Walked(Segment& segment) {
  std::vector<TermLine> out;
  for (const std::string field : {"kw", "flag", "id"}) {
    auto walked = segment.terms->ForEachTerm(
        field, [&](std::string_view term, std::span<const int32_t> docs) {
          uint64_t hash = 0;
          for (int32_t doc : docs) hash = hash * 1000003u + static_cast<uint64_t>(doc);
          out.push_back(
              {field, Hex(term), static_cast<int64_t>(docs.size()), static_cast<int64_t>(hash)});
        });
    INFO(walked.status().ToString());
    REQUIRE(walked.ok());
    CHECK(*walked);
  }
  return out;
}

std::string PostingsFormatOf(const Segment& segment) {
  const auto* info = segment.fields.ByName("kw");
  REQUIRE(info != nullptr);
  return info->attributes.at("PerFieldPostingsFormat.format");
}

}  // namespace

TEST_CASE("Terms and postings of Lucene 7.7 to 10.5 read back as Lucene's own enums read them",
          "[lucene][terms]") {
  // Each release's default postings format: Lucene50 (7.7), Lucene84 (8.7), Lucene90 (9.0),
  // Lucene99 (9.11), Lucene912 (9.12), Lucene101 (10.2), Lucene103 (10.3), Lucene104 (10.5).
  const std::pair<std::string, std::string> kReleases[] = {
      {"7.7.3", "Lucene50"},   {"8", "Lucene84"},   {"9.0.0", "Lucene90"},
      {"9.11.1", "Lucene99"},  {"9", "Lucene912"},  {"10.2.2", "Lucene101"},
      {"10.3.2", "Lucene103"}, {"10", "Lucene104"},
  };
  for (const auto& [release, format] : kReleases) {
    DYNAMIC_SECTION("Lucene " << release) {
      const fs::path dir = LuceneTermsIndex(release);
      Segment segment(dir / "index");
      CHECK(PostingsFormatOf(segment) == format);
      const std::vector<TermLine> expected = ExpectedTerms(dir);
      REQUIRE(expected.size() > 70000);
      const std::vector<TermLine> walked = Walked(segment);
      REQUIRE(walked.size() == expected.size());
      size_t differing = 0;
      for (size_t i = 0; i < walked.size(); ++i) {
        if (!(walked[i] == expected[i]) && differing++ < 5) {
          INFO(release << " term " << i << ": walked " << walked[i].field << " " << walked[i].hex
                       << " " << walked[i].count << " " << walked[i].hash << ", Lucene "
                       << expected[i].field << " " << expected[i].hex << " " << expected[i].count
                       << " " << expected[i].hash);
          CHECK(false);
        }
      }
      CHECK(differing == 0);

      // By document: the values of a few documents, in term order, each once.
      std::vector<std::string> values;
      auto has = segment.terms->Values("kw", 12346, values);
      REQUIRE(has.ok());
      REQUIRE(*has);
      REQUIRE(values.size() >= 4);
      CHECK(std::is_sorted(values.begin(), values.end()));
      CHECK(std::find(values.begin(), values.end(), "rare12346") != values.end());
      CHECK(std::find(values.begin(), values.end(), "even") != values.end());
      CHECK(std::find(values.begin(), values.end(), "mod7-" + std::to_string(12346 % 7)) !=
            values.end());
      values.clear();
      has = segment.terms->Values("flag", 4, values);
      REQUIRE(has.ok());
      CHECK(values == std::vector<std::string>{"T"});
      values.clear();
      has = segment.terms->Values("no-such-field", 4, values);
      REQUIRE(has.ok());
      CHECK_FALSE(*has);
    }
  }
}

TEST_CASE("A damaged terms dictionary or postings file fails naming it", "[lucene][terms]") {
  const fs::path source = LuceneTermsIndex("10") / "index";
  for (const std::string extension : {"tim", "doc", "tmd"}) {
    DYNAMIC_SECTION("." << extension) {
      const fs::path copy = fs::temp_directory_path() /
                            ("rfs-terms-damaged-" + extension + "-" + std::to_string(::getpid()));
      fs::remove_all(copy);
      fs::copy(source, copy);
      fs::path damaged;
      for (const auto& entry : fs::directory_iterator(copy)) {
        if (entry.path().extension() == "." + extension) damaged = entry.path();
      }
      REQUIRE(!damaged.empty());
      rfs::lucene::testing::FlipMiddleByte(damaged);
      Segment segment(copy);
      auto walked =
          segment.terms->ForEachTerm("kw", [](std::string_view, std::span<const int32_t>) {});
      REQUIRE_FALSE(walked.ok());
      CHECK_THAT(std::string(walked.status().message()),
                 Catch::Contains(damaged.filename().string()));
      fs::remove_all(copy);
    }
  }
}

TEST_CASE("Packed blocks unpack every width in every lane layout", "[lucene][terms]") {
  // A block packed by hand the way ForUtil lays it out: for 64-bit words with 8-bit lanes and
  // 1 bit per value, word i's lane j (from the top) holds value j * 16 + i, each in the lane's
  // top bit, then the next values one bit lower.
  std::vector<uint8_t> bytes(16);
  // Values: only value 0 (word 0, lane 0, first pass) and value 127 (word 15, lane 7, second
  // pass: values 128.. do not exist, so this must come from the top bit of lane 7) are 1.
  // With 1 bit per value and 8-bit lanes all 128 values are in the first pass: 2 words per
  // shift, 8 shifts; value v = j * 16 + i with i = shift_pass * 2 + word.
  bytes[7] = 0x80;  // little-endian word 0, top bit: lane 0, shift 7 -> value 0
  rfs::core::ByteReader in(bytes, "test");
  std::vector<uint32_t> out(128);
  REQUIRE(UnpackForBlock(in, rfs::core::ByteOrder::kLittle, 64, 8, 1, out).ok());
  CHECK(out[0] == 1);
  CHECK(std::count(out.begin(), out.end(), 1u) == 1);
  CHECK(in.at_end());

  // Widths beyond the lane or the word are refused, not read.
  rfs::core::ByteReader again(bytes, "test");
  CHECK_FALSE(UnpackForBlock(again, rfs::core::ByteOrder::kLittle, 64, 8, 9, out).ok());
  CHECK(PostingsFormatByName("Lucene912") == PostingsFormat::kLucene912);
  CHECK_FALSE(PostingsFormatByName("ES812Postings").has_value());
}

TEST_CASE("Keywords and booleans with neither doc values nor store are rebuilt from their terms",
          "[lucene][terms]") {
  const auto mapping = boost::json::parse(R"({"properties":{
      "kw":{"type":"keyword","doc_values":false},
      "flag":{"type":"boolean","doc_values":false},
      "id":{"type":"keyword","doc_values":false,"index":false},
      "w":{"type":"wildcard","doc_values":false}}})")
                           .as_object();
  auto plan = rfs::lucene::SourceRebuildPlan::FromMapping(mapping);
  REQUIRE(plan.ok());
  REQUIRE(plan->fields.size() == 2);
  for (const auto& field : plan->fields) CHECK(field.terms);
  // Not indexed: no terms; a wildcard field indexes n-grams, not its values.
  REQUIRE(plan->unrebuildable.size() == 2);
  CHECK(plan->unrebuildable[0].starts_with("id:"));
  CHECK(plan->unrebuildable[1].starts_with("w:"));
  for (const std::string release : {"8", "10"}) {
    INFO("Lucene " << release);
    Segment segment(LuceneTermsIndex(release) / "index");
    rfs::lucene::internal::SourceRebuilder rebuilder(
        std::make_shared<const rfs::lucene::SourceRebuildPlan>(*plan));
    rebuilder.StartSegment(*segment.doc_values, *segment.vectors, segment.points.get(),
                           segment.terms.get());
    std::string out;
    REQUIRE(rebuilder.Rebuild(12346, {}, out).ok());
    // As WriteTermsIndex.java wrote them: the terms of the document, sorted, each once.
    const boost::json::value doc = boost::json::parse(out);
    CHECK(doc.at("flag") == boost::json::value(true));
    const auto& kw = doc.at("kw").as_array();
    REQUIRE(kw.size() == 5);
    CHECK(kw[0] == "all");
    CHECK(kw[1] == "even");
    CHECK(kw[2].as_string() == "mod7-" + std::to_string(12346 % 7));
    CHECK(kw[3].as_string().starts_with("r"));
    CHECK(kw[4] == "rare12346");
    CHECK(rebuilder.last_inexact());
    REQUIRE(rebuilder.Rebuild(0, {}, out).ok());
    CHECK(boost::json::parse(out).as_object().count("flag") == 0);  // doc % 3 == 0: no flag
    REQUIRE(rebuilder.Rebuild(2, {}, out).ok());
    CHECK(boost::json::parse(out).at("flag") == boost::json::value(false));
  }
}
