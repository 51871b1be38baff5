// Lucene 4.x (Elasticsearch 1.x) indices: the ES 1.7.6 / Lucene 4.10.4 shard of
// the snapshot matrix read file by file, every flipped or truncated byte of its
// metadata files, and hand-built files for the older variants the corpus does
// not cover (segments_N before 4.8, .del bit vectors, fixed-width numeric
// stored fields).
#include <fstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/crc32.hpp"
#include "rfs/lucene/shard_reader.hpp"

#include "lucene/codecs/compound_internal.hpp"
#include "lucene/codecs/dispatch_internal.hpp"
#include "lucene/codecs/lucene4_internal.hpp"
#include "lucene/codecs/stored_fields_internal.hpp"
#include "lucene/codecs/stored_fields_reader_internal.hpp"
#include "support/skip.hpp"
#include "unit/lucene/test_util.hpp"

namespace {

using rfs::lucene::testing::MemoryDirectory;

const std::filesystem::path kEs1 = rfs::lucene::testing::CorpusDir() /
                                   "snapshot-matrix-es1-es9-os1-os3" / "es1_nocomp" / "indices" /
                                   "simple_index" / "0";

// The Lucene files of shard 0 as of `snapshot`, under their physical names
// (the snapshot's file list maps them to the __N blobs), in memory.
std::shared_ptr<MemoryDirectory> Es1Shard(const std::string& snapshot = "snapshot_v2") {
  std::ifstream in(kEs1 / ("snapshot-" + snapshot));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto meta = boost::json::parse(text).as_object();
  auto dir = std::make_shared<MemoryDirectory>();
  for (const auto& file : meta.at("files").as_array()) {
    const auto& f = file.as_object();
    std::ifstream blob(kEs1 / std::string(f.at("name").as_string()), std::ios::binary);
    dir->files[std::string(f.at("physical_name").as_string())] =
        std::vector<uint8_t>(std::istreambuf_iterator<char>(blob), {});
  }
  return dir;
}

bool HaveEs1() {
  if (std::filesystem::exists(kEs1)) return true;
  rfs::test::SkipTest(kEs1.string() + " not found");
}

struct Lucene4Doc {
  std::string id;
  std::optional<std::string> type;
  std::string source;
};

absl::StatusOr<std::vector<Lucene4Doc>> ReadDocs(std::shared_ptr<MemoryDirectory> dir) {
  auto reader = rfs::lucene::ShardReader::Open(dir);
  if (!reader.ok()) return reader.status();
  auto cursor = (*reader)->OpenAt(0);
  if (!cursor.ok()) return cursor.status();
  std::vector<Lucene4Doc> docs;
  rfs::lucene::Document doc;
  for (;;) {
    auto more = (*cursor)->Next(doc);
    if (!more.ok()) return more.status();
    if (!*more) return docs;
    docs.push_back({doc.id, doc.type, std::string(doc.source.begin(), doc.source.end())});
  }
}

void ExpectLucene4DataLoss(const absl::Status& status, const std::string& file) {
  INFO(status.ToString());
  REQUIRE_FALSE(status.ok());
  CHECK(absl::IsDataLoss(status));
  const std::string message(status.message());
  CHECK(message.find(file) != std::string::npos);
  CHECK(message.find("offset") != std::string::npos);
}

// ---- hand-built Lucene 4 files ----

struct Bytes {
  std::vector<uint8_t> b;
  Bytes& U8(uint8_t v) {
    b.push_back(v);
    return *this;
  }
  Bytes& Int(uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
    return *this;
  }
  Bytes& Long(uint64_t v) {
    for (int s = 56; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
    return *this;
  }
  Bytes& VInt(uint32_t v) {
    while (v >= 0x80) {
      b.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    b.push_back(static_cast<uint8_t>(v));
    return *this;
  }
  Bytes& Str(const std::string& s) {
    VInt(static_cast<uint32_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& Header(const std::string& codec, uint32_t version) {
    Int(0x3FD76C17);
    Str(codec);
    return Int(version);
  }
  // CodecUtil.writeFooter: magic, algorithm 0, CRC-32 as a long.
  Bytes& Footer() {
    Int(0xC02893E8).Int(0);
    return Long(rfs::core::Crc32(b));
  }
  // ChecksumIndexOutput.finishCommit before 4.8: the CRC-32 as a long.
  Bytes& CrcLong() { return Long(rfs::core::Crc32(b)); }
};

}  // namespace

TEST_CASE("ES 1.7 / Lucene 4.10 shard: segments, field infos, stored fields, documents",
          "[lucene][lucene4]") {
  if (!HaveEs1()) return;
  auto dir = Es1Shard();
  auto infos = rfs::lucene::ReadSegmentInfos(*dir);
  INFO(infos.status().ToString());
  REQUIRE(infos.ok());
  CHECK(infos->format == rfs::lucene::internal::kSegments49);
  CHECK(infos->file_name == "segments_5");
  CHECK(infos->written_by == rfs::lucene::LuceneVersion{4, 10, 4});
  CHECK(infos->user_data.count("translog_id") == 1);
  REQUIRE(infos->segments.size() == 2);
  for (const auto& seg : infos->segments) {
    CHECK(seg.codec == "Lucene410");
    CHECK(seg.info.codec_header == "Lucene46SegmentInfo");
    CHECK(seg.info.max_doc == 1);
    CHECK(seg.info.is_compound);
    CHECK(seg.del_gen == -1);
    CHECK(rfs::lucene::internal::IsLucene4Segment(seg));
    auto compound = rfs::lucene::CompoundDirectory::Open(dir, seg.name, seg.id);
    INFO(compound.status().ToString());
    REQUIRE(compound.ok());
    CHECK((*compound)->entries().count(seg.name + ".fdt") == 1);
    auto fields = rfs::lucene::ReadFieldInfos(*dir, **compound, seg);
    INFO(fields.status().ToString());
    REQUIRE(fields.ok());
    CHECK(fields->codec() == "Lucene46FieldInfos");
    REQUIRE(fields->ByName("_uid") != nullptr);
    CHECK(fields->ByName("_uid")->index_options == 1);  // DOCS_ONLY
    REQUIRE(fields->ByName("_version") != nullptr);
    CHECK(fields->ByName("_version")->doc_values_type == rfs::lucene::DocValuesType::kNumeric);
    auto stored = rfs::lucene::StoredFieldsReader::Open(**compound, seg);
    INFO(stored.status().ToString());
    REQUIRE(stored.ok());
    CHECK((*stored)->format_name() == "Lucene41StoredFieldsData");
    CHECK((*stored)->format_version() == 2);
    CHECK((*stored)->chunk_size() == 1 << 14);
    std::vector<rfs::lucene::StoredField> values;
    REQUIRE((*stored)->Document(0, values).ok());
    REQUIRE(values.size() == 2);
    CHECK(values[0].number == fields->ByName("_uid")->number);
    CHECK(values[0].string_value().substr(0, 4) == "doc#");
  }
  auto docs = ReadDocs(dir);
  INFO(docs.status().ToString());
  REQUIRE(docs.ok());
  REQUIRE(docs->size() == 2);
  CHECK((*docs)[0].id == "1");
  CHECK((*docs)[0].type == "doc");
  CHECK((*docs)[0].source == R"({"value":42})");
  CHECK((*docs)[1].id == "2");
  CHECK((*docs)[1].type == "doc");
  CHECK((*docs)[1].source == R"({"value":99})");

  auto v1 = ReadDocs(Es1Shard("snapshot_v1"));
  REQUIRE(v1.ok());
  REQUIRE(v1->size() == 1);
  CHECK((*v1)[0].id == "1");
}

TEST_CASE("Lucene 4.10 shard: every flipped byte of the metadata files is DataLoss",
          "[lucene][lucene4][corrupt]") {
  if (!HaveEs1()) return;
  for (const std::string file : {"segments_5", "_1.si", "_1.cfe"}) {
    const size_t size = Es1Shard()->files.at(file).size();
    for (size_t at = 0; at < size; ++at) {
      auto dir = Es1Shard();
      dir->files.at(file)[at] ^= 0x5A;
      INFO(file << " byte " << at);
      const absl::Status status = ReadDocs(dir).status();
      REQUIRE_FALSE(status.ok());
      // A flip of the header version is an unknown version, not corruption.
      if (absl::IsUnimplemented(status)) continue;
      ExpectLucene4DataLoss(status, file);
    }
  }
  // In the .cfs only the sub-files that are read (.fnm, .fdt) are checked;
  // other flips go unnoticed. Never a crash nor another error code.
  const size_t size = Es1Shard()->files.at("_1.cfs").size();
  for (size_t at = 0; at < size; ++at) {
    auto dir = Es1Shard();
    dir->files.at("_1.cfs")[at] ^= 0x5A;
    const absl::Status status = ReadDocs(dir).status();
    INFO("_1.cfs byte " << at << ": " << status.ToString());
    CHECK((status.ok() || absl::IsDataLoss(status) || absl::IsUnimplemented(status)));
    if (absl::IsDataLoss(status)) {
      CHECK(std::string(status.message()).find("offset") != std::string::npos);
    }
  }
}

TEST_CASE("Lucene 4.10 shard: every truncation is DataLoss naming the file and offset",
          "[lucene][lucene4][corrupt]") {
  if (!HaveEs1()) return;
  for (const std::string file : {"segments_5", "_1.si", "_1.cfe", "_1.cfs"}) {
    const size_t size = Es1Shard()->files.at(file).size();
    for (size_t keep = 0; keep < size; ++keep) {
      auto dir = Es1Shard();
      dir->files.at(file).resize(keep);
      INFO(file << " truncated to " << keep);
      // A truncated .cfs may be reported against its entry table.
      ExpectLucene4DataLoss(ReadDocs(dir).status(), file == "_1.cfs" ? "_1.cf" : file);
    }
  }
}

TEST_CASE("Lucene 4.6 segments_N (format 1) ends with a CRC long", "[lucene][lucene4]") {
  Bytes seg;
  seg.Header("segments", 1).Long(7).Int(3).Int(1);
  // One segment: name, codec, delGen, delCount, fieldInfosGen, then the
  // generation -> files map of 4.6-4.8 (one generation with one file).
  seg.Str("_2").Str("Lucene46").Long(1).Int(1).Long(1);
  seg.Int(1).Long(1).Int(1).Str("_2_1.fnm");
  seg.Int(1).Str("k").Str("v");
  seg.CrcLong();
  rfs::lucene::SegmentInfos infos;
  infos.format = 1;
  rfs::core::ByteReader in(seg.b, "segments_7");
  REQUIRE(in.Skip(4 + 1 + 8 + 4).ok());
  const absl::Status ok = rfs::lucene::internal::ParseLucene4SegmentsBody(in, infos);
  INFO(ok.ToString());
  REQUIRE(ok.ok());
  REQUIRE(infos.segments.size() == 1);
  const auto& s = infos.segments[0];
  CHECK(s.name == "_2");
  CHECK(s.del_gen == 1);
  CHECK(s.del_count == 1);
  CHECK(s.field_infos_gen == 1);
  CHECK(s.doc_values_gen == 1);
  CHECK(s.field_infos_files == std::vector<std::string>{"_2_1.fnm"});
  CHECK(infos.user_data.at("k") == "v");

  // Any flipped byte after the header is a checksum mismatch.
  for (size_t at = 17; at < seg.b.size(); ++at) {
    auto bad = seg.b;
    bad[at] ^= 0x01;
    rfs::lucene::SegmentInfos out;
    out.format = 1;
    rfs::core::ByteReader bin(bad, "segments_7");
    REQUIRE(bin.Skip(17).ok());
    ExpectLucene4DataLoss(rfs::lucene::internal::ParseLucene4SegmentsBody(bin, out), "segments_7");
  }
}

TEST_CASE("Lucene 4 .si and .fnm variants", "[lucene][lucene4]") {
  Bytes si40;
  si40.Header("Lucene40SegmentInfo", 0).Str("4.5.1").Int(12).U8(0xFF);
  si40.Int(1).Str("source").Str("flush").Int(0).Int(2).Str("_0.fdt").Str("_0.fdx");
  auto info = rfs::lucene::internal::ParseLucene4SegmentInfo(si40.b, "_0.si");
  INFO(info.status().ToString());
  REQUIRE(info.ok());
  CHECK(info->version == rfs::lucene::LuceneVersion{4, 5, 1});
  CHECK(info->max_doc == 12);
  CHECK_FALSE(info->is_compound);
  CHECK(info->files.size() == 2);
  si40.b.push_back(0);
  ExpectLucene4DataLoss(rfs::lucene::internal::ParseLucene4SegmentInfo(si40.b, "_0.si").status(),
                        "_0.si");

  Bytes fnm42;
  fnm42.Header("Lucene42FieldInfos", 0).VInt(2);
  // _uid: indexed, omit norms, docs only; no doc values.
  fnm42.Str("_uid").VInt(0).U8(0x51).U8(0).Int(0);
  // _source: stored only; SORTED_SET doc values with NUMERIC norms nibble.
  fnm42.Str("_source").VInt(1).U8(0x00).U8(0x14).Int(0);
  auto fields = rfs::lucene::internal::ParseLucene4FieldInfos(fnm42.b, "_0.fnm");
  INFO(fields.status().ToString());
  REQUIRE(fields.ok());
  CHECK(fields->ByName("_uid")->index_options == 1);
  CHECK(fields->ByName("_uid")->omit_norms);
  CHECK(fields->ByName("_source")->index_options == 0);
  CHECK(fields->ByName("_source")->doc_values_type == rfs::lucene::DocValuesType::kSortedSet);

  // Lucene46 v1: footer; a doc-values type 5 needs v2.
  Bytes fnm46;
  fnm46.Header("Lucene46FieldInfos", 1).VInt(1);
  fnm46.Str("n").VInt(0).U8(0x01).U8(0x05).Long(~uint64_t{0}).Int(0).Footer();
  ExpectLucene4DataLoss(rfs::lucene::internal::ParseLucene4FieldInfos(fnm46.b, "_0.fnm").status(),
                        "_0.fnm");
}

TEST_CASE("Lucene40 .del bit vectors", "[lucene][lucene4]") {
  using rfs::lucene::internal::ParseLucene4LiveDocs;
  // Version 2 (4.8+), plain bits: 10 docs, docs 3 and 9 deleted.
  Bytes bits;
  bits.Int(0xFFFFFFFE).Header("BitVector", 2).Int(10).Int(8).U8(0xF7).U8(0x01).Footer();
  auto live = ParseLucene4LiveDocs(bits.b, "_0_1.del", 10, 2);
  INFO(live.status().ToString());
  REQUIRE(live.ok());
  CHECK(live->CountLive() == 8);
  CHECK_FALSE(live->IsLive(3));
  CHECK_FALSE(live->IsLive(9));
  CHECK(live->IsLive(8));
  // The delete count must agree with segments_N.
  ExpectLucene4DataLoss(ParseLucene4LiveDocs(bits.b, "_0_1.del", 10, 1).status(), "_0_1.del");
  for (size_t keep = 0; keep < bits.b.size(); ++keep) {
    std::vector<uint8_t> cut(bits.b.begin(), bits.b.begin() + keep);
    ExpectLucene4DataLoss(ParseLucene4LiveDocs(cut, "_0_1.del", 10, 2).status(), "_0_1.del");
  }

  // Version 1, cleared d-gaps: 20 docs, doc 17 deleted (byte 2 = 0b11111101).
  Bytes dgaps;
  dgaps.Int(0xFFFFFFFE).Header("BitVector", 1).Int(0xFFFFFFFF).Int(20).Int(19).VInt(2).U8(0xFD);
  live = ParseLucene4LiveDocs(dgaps.b, "_0_2.del", 20, 1);
  INFO(live.status().ToString());
  REQUIRE(live.ok());
  CHECK(live->CountLive() == 19);
  CHECK_FALSE(live->IsLive(17));
  CHECK(live->IsLive(19));

  // Version 0, set d-gaps of deleted docs: 16 docs, doc 0 deleted.
  Bytes v0;
  v0.Int(0xFFFFFFFE).Header("BitVector", 0).Int(0xFFFFFFFF).Int(16).Int(1).VInt(0).U8(0x01);
  live = ParseLucene4LiveDocs(v0.b, "_0_3.del", 16, 1);
  INFO(live.status().ToString());
  REQUIRE(live.ok());
  CHECK(live->CountLive() == 15);
  CHECK_FALSE(live->IsLive(0));
  // A gap past the end is DataLoss.
  Bytes far;
  far.Int(0xFFFFFFFE).Header("BitVector", 0).Int(0xFFFFFFFF).Int(16).Int(1).VInt(9).U8(0x01);
  ExpectLucene4DataLoss(ParseLucene4LiveDocs(far.b, "_0_3.del", 16, 1).status(), "_0_3.del");
}

TEST_CASE("Lucene 4 stored numeric fields are fixed-width big-endian", "[lucene][lucene4]") {
  Bytes doc;
  doc.VInt(0 << 3 | 2).Int(0xFFFFFFFE);              // int -2
  doc.VInt(1 << 3 | 3).Int(0x3FC00000);              // float 1.5
  doc.VInt(2 << 3 | 4).Long(0x0000010000000000ULL);  // long 2^40
  doc.VInt(3 << 3 | 5).Long(0xC004000000000000ULL);  // double -2.5
  std::vector<rfs::lucene::StoredField> fields;
  REQUIRE(rfs::lucene::internal::ParseFields(
      doc.b, 4, rfs::core::ByteOrder::kBig,
      [&](const rfs::lucene::StoredField& f) {
        fields.push_back(f);
        return true;
      },
      /*fixed_numbers=*/true));
  REQUIRE(fields.size() == 4);
  CHECK(fields[0].long_value == -2);
  CHECK(fields[1].double_value == 1.5);
  CHECK(fields[2].long_value == (int64_t{1} << 40));
  CHECK(fields[3].double_value == -2.5);
  // Truncated values are malformed.
  for (size_t keep = 0; keep < doc.b.size(); ++keep) {
    std::vector<uint8_t> cut(doc.b.begin(), doc.b.begin() + keep);
    CHECK_FALSE(rfs::lucene::internal::ParseFields(
        cut, 4, rfs::core::ByteOrder::kBig, [](const rfs::lucene::StoredField&) { return true; },
        true));
  }
}

TEST_CASE("The Lucene 4 fuzz seed is a valid commit", "[lucene][lucene4]") {
  // test/fuzz/seeds/lucene_segment_infos/lucene4_index: BE u16 length, a
  // format-3 segments_N with one segment, then its Lucene46 .si (v1).
  std::ifstream in(
      std::filesystem::path(RFS_SOURCE_DIR) / "test/fuzz/seeds/lucene_segment_infos/lucene4_index",
      std::ios::binary);
  const std::vector<uint8_t> seed((std::istreambuf_iterator<char>(in)), {});
  REQUIRE(seed.size() > 2);
  const size_t split = size_t{seed[0]} << 8 | seed[1];
  REQUIRE(split + 2 < seed.size());
  auto dir = std::make_shared<MemoryDirectory>();
  dir->files["segments_1"] = std::vector<uint8_t>(seed.begin() + 2, seed.begin() + 2 + split);
  dir->files["_0.si"] = std::vector<uint8_t>(seed.begin() + 2 + split, seed.end());
  auto infos = rfs::lucene::ReadSegmentInfos(*dir);
  INFO(infos.status().ToString());
  REQUIRE(infos.ok());
  REQUIRE(infos->segments.size() == 1);
  CHECK(infos->segments[0].info.max_doc == 3);
  CHECK_FALSE(infos->segments[0].info.is_compound);
  CHECK(infos->segments[0].info.files == std::vector<std::string>{"_0.fdt"});
}
