// The Lucene 10.5 fixture indexes (shared corpus): segments_N, .si, .cfs,
// .fnm, stored fields and live docs must match each manifest.properties.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "rfs/codec/codec_util.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "lucene/codecs/compound_internal.hpp"
#include "lucene/codecs/dispatch_internal.hpp"
#include "lucene/codecs/stored_fields_reader_internal.hpp"
#include "unit/lucene/test_util.hpp"

namespace {

using rfs::lucene::testing::CorpusDir;
using rfs::lucene::testing::FormatField;
using rfs::lucene::testing::ReadProperties;

std::shared_ptr<const rfs::core::IDirectory> OpenFixture(const std::string& name) {
  auto dir = rfs::core::LocalDirectory::Open(
      (CorpusDir() / "lucene-10.5-fixture-indexes" / name).string());
  REQUIRE(dir.ok());
  return std::shared_ptr<const rfs::core::IDirectory>(std::move(dir).value());
}

std::string HexOf(const std::array<uint8_t, 16>& id) {
  std::string out;
  static const char* kHex = "0123456789abcdef";
  for (uint8_t b : id) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

// Stored fields of every doc of the single segment, in manifest notation.
void CheckStoredFields(const std::string& fixture) {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  auto dir = OpenFixture(fixture);
  auto props =
      ReadProperties(CorpusDir() / "lucene-10.5-fixture-indexes" / fixture / "manifest.properties");
  auto infos = rfs::lucene::ReadSegmentInfos(*dir);
  REQUIRE(infos.ok());
  REQUIRE(infos->segments.size() == 1);
  const auto& seg = infos->segments[0];
  CHECK(seg.name == props["segment_name"]);
  CHECK(HexOf(seg.id) == props["id_hex"]);
  CHECK(seg.max_doc() == std::stoi(props["max_doc"]));
  auto fields = rfs::lucene::ReadFieldInfos(*dir, *dir, seg);
  REQUIRE(fields.ok());
  auto reader = rfs::lucene::StoredFieldsReader::Open(*dir, seg);
  REQUIRE(reader.ok());
  std::vector<rfs::lucene::StoredField> values;
  for (int32_t d = 0; d < seg.max_doc(); ++d) {
    auto status = (*reader)->Document(d, values);
    REQUIRE(status.ok());
    std::string got;
    for (const auto& v : values) {
      if (!got.empty()) got += ";";
      got += FormatField(fields->ByNumber(v.number)->name, v);
    }
    CHECK(got == props["doc." + std::to_string(d) + ".fields"]);
  }
}

}  // namespace

TEST_CASE("Lucene 10.5 stored fields, BEST_SPEED", "[lucene][fixture]") {
  CheckStoredFields("stored_fields_index");
}

TEST_CASE("Lucene 10.5 stored fields, BEST_COMPRESSION", "[lucene][fixture]") {
  CheckStoredFields("stored_fields_best_compression_index");
}

TEST_CASE("Lucene 10.5 segments_N with two segments and user data", "[lucene][fixture]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  auto dir = OpenFixture("segments_index");
  auto props = ReadProperties(CorpusDir() / "lucene-10.5-fixture-indexes" / "segments_index" /
                              "manifest.properties");
  auto latest = rfs::lucene::FindLatestSegmentsFile(*dir);
  REQUIRE(latest.ok());
  CHECK(*latest == props["segments_file_name"]);
  auto infos = rfs::lucene::ReadSegmentInfos(*dir);
  REQUIRE(infos.ok());
  CHECK(infos->generation == std::stoi(props["generation"]));
  CHECK(infos->counter == std::stoi(props["counter"]));
  CHECK(infos->format == 10);
  CHECK(infos->written_by == rfs::lucene::LuceneVersion{10, 5, 0});
  REQUIRE(infos->segments.size() == 2);
  CHECK(infos->segments[0].name == "_0");
  CHECK(infos->segments[1].name == "_1");
  CHECK(infos->segments[0].max_doc() == 2);
  CHECK(infos->segments[1].max_doc() == 1);
  CHECK(infos->segments[0].del_count == 0);
  CHECK(infos->segments[0].codec == "Lucene104");
  CHECK(infos->segments[0].info.has_blocks.has_value());
  CHECK(infos->user_data.at("lucene-rust-test") == "true");
  CHECK(infos->total_max_doc() == 3);
}

TEST_CASE("Lucene 10.5 compound file entries", "[lucene][fixture]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  auto dir = OpenFixture("compound_index");
  auto props = ReadProperties(CorpusDir() / "lucene-10.5-fixture-indexes" / "compound_index" /
                              "manifest.properties");
  auto infos = rfs::lucene::ReadSegmentInfos(*dir);
  REQUIRE(infos.ok());
  const auto& seg = infos->segments.at(0);
  CHECK(seg.info.is_compound);
  auto cfs = rfs::lucene::CompoundDirectory::Open(dir, seg.name, seg.id);
  REQUIRE(cfs.ok());
  std::stringstream expected(props["sub_files"]);
  std::string item;
  size_t count = 0;
  while (std::getline(expected, item, ',')) {
    const auto colon = item.rfind(':');
    const std::string name = seg.name + item.substr(0, colon);
    auto file = (*cfs)->OpenFile(name);
    REQUIRE(file.ok());
    CHECK((*file)->size() == std::stoull(item.substr(colon + 1)));
    // Every sub-file is a whole Lucene file with its own footer.
    auto view = (*file)->ContiguousView();
    REQUIRE(view.has_value());
    CHECK(rfs::codec::VerifyFooter(*view, name).ok());
    ++count;
  }
  CHECK((*cfs)->ListFiles().size() == count);
  auto fields = rfs::lucene::ReadFieldInfos(*dir, **cfs, seg);
  REQUIRE(fields.ok());
  auto reader = rfs::lucene::StoredFieldsReader::Open(**cfs, seg);
  REQUIRE(reader.ok());
  std::vector<rfs::lucene::StoredField> values;
  for (int32_t d = 0; d < seg.max_doc(); ++d) {
    REQUIRE((*reader)->Document(d, values).ok());
  }
}

TEST_CASE("Lucene 10.5 live docs", "[lucene][fixture]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  auto dir = OpenFixture("live_docs_index");
  auto props = ReadProperties(CorpusDir() / "lucene-10.5-fixture-indexes" / "live_docs_index" /
                              "manifest.properties");
  auto infos = rfs::lucene::ReadSegmentInfos(*dir);
  REQUIRE(infos.ok());
  const auto& seg = infos->segments.at(0);
  CHECK(seg.del_gen == std::stoi(props["del_gen"]));
  CHECK(seg.del_count == std::stoi(props["del_count"]));
  auto fields = rfs::lucene::ReadFieldInfos(*dir, *dir, seg);
  REQUIRE(fields.ok());
  auto live = rfs::lucene::ReadLiveDocs(*dir, *dir, seg, *fields);
  REQUIRE(live.ok());
  std::string live_ids, deleted_ids;
  for (int32_t d = 0; d < seg.max_doc(); ++d) {
    std::string& list = live->IsLive(d) ? live_ids : deleted_ids;
    if (!list.empty()) list += ",";
    list += std::to_string(d);
  }
  CHECK(live_ids == props["live_doc_ids"]);
  CHECK(deleted_ids == props["deleted_doc_ids"]);
}

TEST_CASE("Lucene 10.5 field infos with a generation file and soft deletes", "[lucene][fixture]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  auto dir = OpenFixture("field_infos_index");
  auto props = ReadProperties(CorpusDir() / "lucene-10.5-fixture-indexes" / "field_infos_index" /
                              "manifest.properties");
  auto infos = rfs::lucene::ReadSegmentInfos(*dir);
  REQUIRE(infos.ok());
  const auto& seg = infos->segments.at(0);
  CHECK(seg.field_infos_gen == std::stoi(props["segment_suffix"]));
  auto fields = rfs::lucene::ReadFieldInfos(*dir, *dir, seg);
  REQUIRE(fields.ok());
  CHECK(fields->codec() == "Lucene94FieldInfos");
  REQUIRE(fields->fields().size() == std::stoul(props["field_count"]));
  std::string order;
  static const char* kOptions[] = {"NONE", "DOCS", "DOCS_AND_FREQS", "DOCS_AND_FREQS_AND_POSITIONS",
                                   "DOCS_AND_FREQS_AND_POSITIONS_AND_OFFSETS"};
  static const char* kDvTypes[] = {"NONE",   "NUMERIC",    "BINARY",
                                   "SORTED", "SORTED_SET", "SORTED_NUMERIC"};
  for (const auto& f : fields->fields()) {
    if (!order.empty()) order += ",";
    order += f.name;
    const std::string p = "field." + f.name + ".";
    CHECK(f.number == std::stoi(props[p + "number"]));
    CHECK(kOptions[f.index_options] == props[p + "index_options"]);
    CHECK(kDvTypes[static_cast<int>(f.doc_values_type)] == props[p + "doc_values_type"]);
    CHECK((f.store_term_vectors ? "true" : "false") == props[p + "has_term_vectors"]);
    CHECK((f.soft_deletes ? "true" : "false") == props[p + "is_soft_deletes"]);
    CHECK(f.point_dimension_count == std::stoi(props[p + "point_dimension_count"]));
    CHECK(f.point_num_bytes == std::stoi(props[p + "point_num_bytes"]));
    CHECK(f.vector_dimension == std::stoi(props[p + "vector_dimension"]));
  }
  CHECK(order == props["field_order"]);
  // The soft-deletes field came with a doc-values update (gen 1 files).
  const auto* soft = fields->SoftDeletesField();
  REQUIRE(soft != nullptr);
  CHECK(soft->name == "__soft_deletes");
  CHECK(soft->doc_values_gen == 1);
  auto live = rfs::lucene::ReadLiveDocs(*dir, *dir, seg, *fields);
  REQUIRE(live.ok());
  CHECK(live->max_doc() == seg.max_doc());
  CHECK(live->max_doc() - live->CountLive() == seg.del_count + seg.soft_del_count);
}
