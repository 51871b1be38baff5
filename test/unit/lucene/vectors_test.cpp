// Vectors as Lucene 9.12 wrote them (WriteVectorIndex.java: dense, sparse and mostly-dense float
// fields, a byte field, and vectors kept in binary doc values the engines' way), and as Lucene 9.0,
// 9.1, 9.3, 9.4 and 9.8 wrote them in their own formats, read by
// SegmentVectors and rebuilt into sources; the Lucene 10.5 corpus index's vector field; damaged
// files.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/lucene/segment_infos.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/lucene/source_rebuild.hpp"

#include "lucene/codecs/doc_values_internal.hpp"
#include "lucene/codecs/field_infos_internal.hpp"
#include "lucene/codecs/vectors_internal.hpp"
#include "lucene/rebuild/rebuilder_internal.hpp"
#include "unit/lucene/test_util.hpp"

namespace {

namespace fs = std::filesystem;
using rfs::lucene::JavaFloatString;
using rfs::lucene::testing::CorpusDir;
using rfs::lucene::testing::HaveCorpus;
using rfs::lucene::testing::Lucene9VectorIndex;

using Segment = rfs::lucene::testing::OneSegment;

// field -> doc -> "e1,e2,..." as Java printed them.
std::map<std::string, std::map<int32_t, std::string>> ExpectedVectors(const fs::path& dir) {
  std::map<std::string, std::map<int32_t, std::string>> out;
  std::ifstream in(dir / "expected.tsv");
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream parts(line);
    std::string doc, field, values;
    std::getline(parts, doc, '\t');
    std::getline(parts, field, '\t');
    std::getline(parts, values, '\t');
    out[field][std::stoi(doc)] = values;
  }
  return out;
}

std::string Join(const std::vector<float>& values, bool bytes) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += bytes ? std::to_string(static_cast<int>(values[i])) : JavaFloatString(values[i]);
  }
  return out;
}

// Every vector of the index in `dir` read back as expected.tsv lists it, and the files named after
// `format` (the vectors format Lucene wrote) are the ones read.
void CheckEveryVector(const fs::path& dir, const std::string& format, const std::string& meta) {
  Segment segment(dir / "index");
  CHECK(fs::exists(dir / "index" / ("_0_" + format + "_0." + meta)));
  const auto expected = ExpectedVectors(dir);
  // dense, sparse, most; bytes from Lucene 9.4.
  REQUIRE(expected.size() >= 3);
  std::vector<float> vector;
  for (const auto& [name, by_doc] : expected) {
    INFO(name);
    auto field = segment.vectors->Field(name);
    INFO(field.status().ToString());
    REQUIRE(field.ok());
    REQUIRE(*field != nullptr);
    size_t found = 0;
    for (int32_t doc = 0; doc < segment.max_doc(); ++doc) {
      auto has = (*field)->Vector(doc, vector);
      REQUIRE(has.ok());
      auto it = by_doc.find(doc);
      REQUIRE(*has == (it != by_doc.end()));
      if (!*has) continue;
      ++found;
      REQUIRE(Join(vector, name == "bytes") == it->second);
    }
    CHECK(found == by_doc.size());
  }
  // Fields without vectors (stored, doc values only) have no reader.
  auto none = segment.vectors->Field("knn_binary");
  REQUIRE(none.ok());
  CHECK(*none == nullptr);
}

TEST_CASE("Lucene 9 vector files read back every vector as Lucene wrote it") {
  const fs::path dir = Lucene9VectorIndex();
  REQUIRE(ExpectedVectors(dir).size() == 4);
  CheckEveryVector(dir, "Lucene99HnswVectorsFormat", "vemf");
}

TEST_CASE("The vector formats of Lucene 9.0 to 9.8 read back every vector as Lucene wrote it") {
  // Each release's default codec writes its own format (Elasticsearch 8.0-8.11 and OpenSearch
  // 2.0-2.11 ran these releases).
  const std::pair<std::string, std::string> releases[] = {{"9.0.0", "Lucene90HnswVectorsFormat"},
                                                          {"9.1.0", "Lucene91HnswVectorsFormat"},
                                                          {"9.3.0", "lucene92HnswVectorsFormat"},
                                                          {"9.4.2", "Lucene94HnswVectorsFormat"},
                                                          {"9.8.0", "Lucene95HnswVectorsFormat"}};
  for (const auto& [version, format] : releases) {
    INFO("Lucene " << version);
    const fs::path dir = Lucene9VectorIndex(version);
    // Byte vectors from Lucene 9.4 on.
    CHECK(ExpectedVectors(dir).size() == (version >= "9.4" ? 4u : 3u));
    CheckEveryVector(dir, format, "vem");
  }
}

TEST_CASE("Vector fields rebuild from vector files and from binary doc values") {
  const fs::path dir = Lucene9VectorIndex();
  Segment segment(dir / "index");
  const auto expected = ExpectedVectors(dir);
  const auto mapping = boost::json::parse(R"({"properties":{
      "dense":{"type":"knn_vector","dimension":3},
      "sparse":{"type":"knn_vector","dimension":2},
      "bytes":{"type":"knn_vector","dimension":5,"data_type":"byte"},
      "knn_binary":{"type":"knn_vector","dimension":3},
      "es_binary":{"type":"dense_vector","dims":3}}})")
                           .as_object();
  auto plan = rfs::lucene::SourceRebuildPlan::FromMapping(mapping);
  REQUIRE(plan.ok());
  CHECK(plan->unrebuildable.empty());
  REQUIRE(plan->fields.size() == 5);
  rfs::lucene::internal::SourceRebuilder rebuilder(
      std::make_shared<const rfs::lucene::SourceRebuildPlan>(*plan));
  rebuilder.StartSegment(*segment.doc_values, *segment.vectors);
  std::string out;
  for (int32_t doc = 0; doc < segment.max_doc(); doc += 7) {
    INFO("doc " << doc);
    REQUIRE(rebuilder.Rebuild(doc, {}, out).ok());
    const std::string dense = "[" + expected.at("dense").at(doc) + "]";
    // Fields in name order; the binary doc values hold the dense vector again.
    std::string want = "{";
    if (expected.at("bytes").contains(doc)) {
      want += "\"bytes\":[" + expected.at("bytes").at(doc) + "],";
    }
    want += "\"dense\":" + dense + ",\"es_binary\":" + dense + ",\"knn_binary\":" + dense;
    if (expected.at("sparse").contains(doc)) {
      want += ",\"sparse\":[" + expected.at("sparse").at(doc) + "]";
    }
    want += "}";
    REQUIRE(out == want);
  }
}

TEST_CASE("Elasticsearch 8.9+ dense_vector in binary doc values is read little-endian") {
  const fs::path dir = Lucene9VectorIndex();
  Segment segment(dir / "index");
  const auto mapping =
      boost::json::parse(R"({"properties":{"es_binary":{"type":"dense_vector","dims":3}}})")
          .as_object();
  auto plan = rfs::lucene::SourceRebuildPlan::FromMapping(
      mapping, rfs::lucene::RebuildPlanOptions{.little_endian_binary_vectors = true});
  REQUIRE(plan.ok());
  rfs::lucene::internal::SourceRebuilder rebuilder(
      std::make_shared<const rfs::lucene::SourceRebuildPlan>(*plan));
  rebuilder.StartSegment(*segment.doc_values, *segment.vectors);
  std::string big_endian_read, little_endian_read;
  REQUIRE(rebuilder.Rebuild(3, {}, little_endian_read).ok());
  // The fixture wrote big-endian floats: read as little-endian they differ.
  const std::string expected = "{\"es_binary\":[" + ExpectedVectors(dir).at("dense").at(3) + "]}";
  CHECK(little_endian_read != expected);
}

TEST_CASE("The Lucene 10.5 corpus index's vector field reads as 3 finite floats per document") {
  if (!HaveCorpus()) return;
  Segment segment(CorpusDir() / "lucene-10.5-fixture-indexes" / "field_infos_index");
  auto field = segment.vectors->Field("vector_field");
  INFO(field.status().ToString());
  REQUIRE(field.ok());
  REQUIRE(*field != nullptr);
  CHECK((*field)->entry().dimension == 3);
  std::vector<float> vector;
  int with_vector = 0;
  for (int32_t doc = 0; doc < segment.max_doc(); ++doc) {
    auto has = (*field)->Vector(doc, vector);
    REQUIRE(has.ok());
    if (!*has) continue;
    ++with_vector;
    REQUIRE(vector.size() == 3);
    for (float v : vector) CHECK(std::isfinite(v));
  }
  CHECK(with_vector == (*field)->entry().size);
  CHECK(with_vector > 0);
}

TEST_CASE("A damaged vectors file fails naming it") {
  const fs::path work = fs::temp_directory_path() / ("rfs-vectors-" + std::to_string(::getpid()));
  const struct {
    fs::path source;
    std::string format;
    std::string meta;
  } cases[] = {{Lucene9VectorIndex() / "index", "Lucene99HnswVectorsFormat", "vemf"},
               {Lucene9VectorIndex("9.8.0") / "index", "Lucene95HnswVectorsFormat", "vem"}};
  for (const auto& [source, format, meta] : cases) {
    for (const std::string& ext : {meta, std::string("vec")}) {
      INFO(format << " ." << ext);
      fs::remove_all(work);
      fs::copy(source, work);
      const fs::path damaged = work / ("_0_" + format + "_0." + ext);
      REQUIRE(fs::exists(damaged));
      rfs::lucene::testing::FlipMiddleByte(damaged);
      Segment segment(work);
      auto field = segment.vectors->Field("dense");
      REQUIRE_FALSE(field.ok());
      CHECK(std::string(field.status().message()).find("." + ext) != std::string::npos);
    }
  }
  fs::remove_all(work);
}

TEST_CASE("OpenSearch k-NN derived vector source marks knn_vector fields as left out") {
  rfs::snapshot::IndexMetadata index;
  index.mappings = boost::json::parse(R"({"_doc":{"properties":{
      "title":{"type":"text"},
      "emb":{"type":"knn_vector","dimension":4},
      "doc":{"properties":{"inner":{"type":"knn_vector","dimension":2}}}}}})")
                       .as_object();
  constexpr int64_t kOpenSearch = 0x08000000;
  SECTION("default on for k-NN indices created by OpenSearch 3") {
    index.version_created = 3000099 ^ kOpenSearch;
    index.settings["index.knn"] = "true";
    const auto source = rfs::lucene::DescribeIndexSource(index);
    CHECK(source.storage.excludes == std::vector<std::string>{"emb", "doc.inner"});
    auto plan = rfs::lucene::RebuildPlanForIndex(index);
    REQUIRE(plan.ok());
    REQUIRE(*plan != nullptr);
    CHECK((*plan)->completes_partial_sources);
    REQUIRE((*plan)->fields.size() == 2);
    CHECK((*plan)->fields[0].kind == rfs::lucene::RebuildKind::kVector);
  }
  SECTION("off when the setting says so") {
    index.version_created = 3000099 ^ kOpenSearch;
    index.settings["index.knn"] = "true";
    index.settings["index.knn.derived_source.enabled"] = "false";
    CHECK(rfs::lucene::DescribeIndexSource(index).storage.excludes.empty());
  }
  SECTION("off by default before OpenSearch 3 and for indices without index.knn") {
    index.version_created = 2190099 ^ kOpenSearch;
    index.settings["index.knn"] = "true";
    CHECK(rfs::lucene::DescribeIndexSource(index).storage.excludes.empty());
    index.version_created = 3000099 ^ kOpenSearch;
    index.settings.erase("index.knn");
    CHECK(rfs::lucene::DescribeIndexSource(index).storage.excludes.empty());
  }
  SECTION("on where OpenSearch 2.x asked for it") {
    index.version_created = 2190099 ^ kOpenSearch;
    index.settings["index.knn"] = "true";
    index.settings["index.knn.derived_source.enabled"] = "true";
    CHECK(rfs::lucene::DescribeIndexSource(index).storage.excludes.size() == 2);
  }
}
}  // namespace
