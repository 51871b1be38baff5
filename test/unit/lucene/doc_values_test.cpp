// Doc values of the Lucene 10.5 fixture indexes (shared corpus), every type the writer produced,
// against each manifest.properties (values read back through Java Lucene by its generator).
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/lucene/segment_infos.hpp"

#include "lucene/codecs/doc_values_internal.hpp"
#include "lucene/codecs/field_infos_internal.hpp"
#include "unit/lucene/test_util.hpp"

namespace {

using rfs::lucene::testing::CorpusDir;
using rfs::lucene::testing::ReadProperties;

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) out.push_back(part);
  return out;
}

std::string Hex(const std::string& bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// One fixture's single segment, opened with its doc values, and its manifest.
struct Fixture : rfs::lucene::testing::OneSegment {
  explicit Fixture(const std::string& name)
      : OneSegment(CorpusDir() / "lucene-10.5-fixture-indexes" / name),
        props(ReadProperties(CorpusDir() / "lucene-10.5-fixture-indexes" / name /
                             "manifest.properties")) {}
  rfs::lucene::internal::FieldDocValues& Field(const std::string& name) {
    auto field = doc_values->Field(name);
    INFO(name << ": " << field.status().ToString());
    REQUIRE(field.ok());
    REQUIRE(*field != nullptr);
    return **field;
  }

  std::map<std::string, std::string> props;
};

// "v1,v2;NONE;..." per doc, from Numbers.
std::string NumbersOf(Fixture& fixture, const std::string& name, char doc_separator) {
  auto& field = fixture.Field(name);
  std::string out;
  std::vector<int64_t> numbers;
  for (int32_t d = 0; d < fixture.max_doc(); ++d) {
    REQUIRE(field.Numbers(d, numbers).ok());
    if (d > 0) out.push_back(doc_separator);
    if (numbers.empty()) out += "NONE";
    for (size_t i = 0; i < numbers.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += std::to_string(numbers[i]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("Lucene 10.5 numeric doc values: varying, gcd-compressed and sparse",
          "[lucene][fixture][doc_values]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  Fixture fixture("doc_values_index");
  for (const char* name : {"varying", "gcd", "sparse"}) {
    INFO(name);
    CHECK(NumbersOf(fixture, name, ',') == fixture.props["field." + std::string(name) + ".values"]);
  }
  // Asking for an earlier doc again restarts the walk and gives the same answer.
  std::vector<int64_t> numbers;
  auto& sparse = fixture.Field("sparse");
  REQUIRE(sparse.Numbers(4, numbers).ok());
  CHECK(numbers == std::vector<int64_t>{25});
  REQUIRE(sparse.Numbers(2, numbers).ok());
  CHECK(numbers == std::vector<int64_t>{15});
  REQUIRE(sparse.Numbers(3, numbers).ok());
  CHECK(numbers.empty());
}

TEST_CASE("Lucene 10.5 binary doc values: fixed, variable and sparse",
          "[lucene][fixture][doc_values]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  Fixture fixture("doc_values_index");
  for (const char* name : {"bin_fixed", "bin_var", "bin_sparse"}) {
    INFO(name);
    auto& field = fixture.Field(name);
    std::string got, value;
    for (int32_t d = 0; d < fixture.max_doc(); ++d) {
      auto has = field.Binary(d, value);
      REQUIRE(has.ok());
      if (d > 0) got += ",";
      got += *has ? Hex(value) : "NONE";
    }
    CHECK(got == fixture.props["field." + std::string(name) + ".values_hex"]);
  }
}

TEST_CASE("Lucene 10.5 sorted and sorted-set doc values give their terms",
          "[lucene][fixture][doc_values]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  {
    Fixture fixture("sorted_dv_index");
    const auto terms = Split(fixture.props["field.sorted.terms"], ',');
    const auto ords = Split(fixture.props["field.sorted.ords"], ',');
    auto& field = fixture.Field("sorted");
    std::vector<std::string> got;
    for (int32_t d = 0; d < fixture.max_doc(); ++d) {
      REQUIRE(field.Terms(d, got).ok());
      REQUIRE(got.size() == 1);
      CHECK(got[0] == terms.at(std::stoi(ords.at(d))));
    }
  }
  {
    Fixture fixture("multi_valued_dv_index");
    CHECK(NumbersOf(fixture, "nums", ';') == fixture.props["field.nums.values"]);
    const auto terms = Split(fixture.props["field.tags.terms"], ',');
    const auto docs = Split(fixture.props["field.tags.ords"], ';');
    auto& field = fixture.Field("tags");
    std::vector<std::string> got;
    for (int32_t d = 0; d < fixture.max_doc(); ++d) {
      REQUIRE(field.Terms(d, got).ok());
      std::vector<std::string> expected;
      if (docs.at(d) != "NONE") {
        for (const auto& ord : Split(docs.at(d), ',')) expected.push_back(terms.at(std::stoi(ord)));
      }
      CHECK(got == expected);
    }
  }
}

TEST_CASE(
    "Lucene 10.5 numeric doc values in blocks of varying bits per value and with a skip index",
    "[lucene][fixture][doc_values]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  {
    Fixture fixture("doc_values_varying_bpv");
    CHECK(NumbersOf(fixture, "varying_bpv", ',') == fixture.props["field.varying_bpv.values"]);
  }
  {
    Fixture fixture("doc_values_skip_index");
    const auto* info = fixture.fields.ByNumber(std::stoi(fixture.props["field_number"]));
    REQUIRE(info != nullptr);
    CHECK(info->doc_values_skip_index != 0);
    auto& field = fixture.Field(info->name);
    std::vector<int64_t> numbers;
    int64_t min = INT64_MAX, max = INT64_MIN, count = 0;
    for (int32_t d = 0; d < fixture.max_doc(); ++d) {
      REQUIRE(field.Numbers(d, numbers).ok());
      for (int64_t v : numbers) {
        min = std::min(min, v);
        max = std::max(max, v);
        ++count;
      }
    }
    CHECK(min == std::stoll(fixture.props["skip.min_value"]));
    CHECK(max == std::stoll(fixture.props["skip.max_value"]));
    CHECK(count == std::stoll(fixture.props["skip.doc_count"]));
  }
}
