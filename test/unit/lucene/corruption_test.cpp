// Corrupt and unsupported input: every flipped or truncated byte of
// segments_N, .si and .fdt is DataLoss naming the file and an offset (never a
// crash under ASan/UBSan); unknown codec versions are Unimplemented naming the
// codec, the version and the segment.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/crc32.hpp"
#include "rfs/lucene/shard_reader.hpp"

#include "lucene/codecs/stored_fields_internal.hpp"
#include "lucene/uid_internal.hpp"
#include "unit/lucene/test_util.hpp"
#include <sys/resource.h>

namespace {

using rfs::lucene::testing::MemoryDirectory;

std::shared_ptr<MemoryDirectory> CorruptionFixture(const std::string& name) {
  return MemoryDirectory::CopyOf(rfs::lucene::testing::CorpusDir() / "lucene-10.5-fixture-indexes" /
                                 name);
}

// Opens the shard and reads every document.
absl::Status ReadEverything(std::shared_ptr<MemoryDirectory> dir, bool verify = true) {
  rfs::lucene::ShardReaderOptions options;
  options.verify_checksums = verify;
  auto reader = rfs::lucene::ShardReader::Open(dir, options);
  if (!reader.ok()) return reader.status();
  // The plain-Lucene fixture has no _id: read raw stored fields instead.
  for (const auto& seg : (*reader)->segments()) {
    auto sf = rfs::lucene::StoredFieldsReader::Open(*dir, seg, verify);
    if (!sf.ok()) return sf.status();
    std::vector<rfs::lucene::StoredField> fields;
    for (int32_t d = 0; d < seg.max_doc(); ++d) {
      if (auto status = (*sf)->Document(d, fields); !status.ok()) return status;
    }
  }
  auto cursor = (*reader)->OpenAt(0);
  if (!cursor.ok()) return cursor.status();
  for (;;) {
    auto doc = (*cursor)->Next();
    if (!doc.ok()) return doc.status();
    if (!doc->has_value()) return absl::OkStatus();
  }
}

void ExpectDataLoss(const absl::Status& status, const std::string& file) {
  INFO(status.ToString());
  REQUIRE_FALSE(status.ok());
  CHECK(absl::IsDataLoss(status));
  const std::string message(status.message());
  CHECK(message.find(file) != std::string::npos);
  CHECK(message.find("offset") != std::string::npos);
}

// Rewrites the stored CRC so that only the structure check can catch edits.
void FixChecksum(std::vector<uint8_t>& bytes) {
  const uint32_t crc = rfs::core::Crc32(std::span<const uint8_t>(bytes).first(bytes.size() - 8));
  for (int i = 0; i < 4; ++i) bytes[bytes.size() - 1 - i] = static_cast<uint8_t>(crc >> (8 * i));
}

}  // namespace

TEST_CASE("Every flipped byte of segments_N, .si and .fdt is DataLoss", "[lucene][corrupt]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  REQUIRE(ReadEverything(CorruptionFixture("stored_fields_index")).ok());
  for (const std::string file : {"segments_1", "_0.si", "_0.fdt", "_0.fdm", "_0.fnm"}) {
    const auto pristine = CorruptionFixture("stored_fields_index");
    const size_t size = pristine->files.at(file).size();
    for (size_t at = 0; at < size; ++at) {
      auto dir = CorruptionFixture("stored_fields_index");
      dir->files.at(file)[at] ^= 0x5A;
      INFO(file << " byte " << at);
      const absl::Status status = ReadEverything(dir);
      REQUIRE_FALSE(status.ok());
      // A flip of the header version is an unknown version, not corruption.
      if (absl::IsUnimplemented(status)) continue;
      ExpectDataLoss(status, file);
    }
  }
}

TEST_CASE("Every truncation of segments_N, .si and .fdt is DataLoss", "[lucene][corrupt]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  for (const std::string file : {"segments_1", "_0.si", "_0.fdt"}) {
    const size_t size = CorruptionFixture("stored_fields_index")->files.at(file).size();
    for (size_t keep = 0; keep < size; ++keep) {
      auto dir = CorruptionFixture("stored_fields_index");
      dir->files.at(file).resize(keep);
      INFO(file << " truncated to " << keep);
      ExpectDataLoss(ReadEverything(dir), file);
    }
  }
}

TEST_CASE("Corrupt .fdt chunks without the CRC check never crash", "[lucene][corrupt]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  for (const std::string fixture :
       {"stored_fields_index", "stored_fields_best_compression_index"}) {
    const size_t size = CorruptionFixture(fixture)->files.at("_0.fdt").size();
    for (size_t at = 0; at < size - 16; ++at) {
      for (uint8_t mask : {0x01, 0x80, 0xFF}) {
        auto dir = CorruptionFixture(fixture);
        auto& fdt = dir->files.at("_0.fdt");
        fdt[at] ^= mask;
        FixChecksum(fdt);
        // Either decodes (to other bytes) or reports DataLoss: no crash, no
        // other error code.
        const absl::Status status = ReadEverything(dir, /*verify=*/false);
        INFO(fixture << " byte " << at << " mask " << int{mask} << ": " << status.ToString());
        CHECK((status.ok() || absl::IsDataLoss(status) || absl::IsUnimplemented(status)));
      }
    }
  }
}

TEST_CASE("Unknown codec versions are Unimplemented naming codec, version and segment",
          "[lucene][corrupt]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  struct Case {
    std::string file;
    std::string codec;
  };
  for (const Case& c :
       {Case{"_0.si", "Lucene90SegmentInfo"}, Case{"_0.fdt", "Lucene90StoredFieldsFastData"},
        Case{"_0.fnm", "Lucene94FieldInfos"}}) {
    auto dir = CorruptionFixture("stored_fields_index");
    auto& bytes = dir->files.at(c.file);
    // The BE version follows magic (4), name length (1) and the name.
    const size_t version_at = 4 + 1 + c.codec.size();
    bytes[version_at + 3] = 99;
    FixChecksum(bytes);
    const absl::Status status = ReadEverything(dir);
    INFO(status.ToString());
    CHECK(absl::IsUnimplemented(status));
    const std::string message(status.message());
    CHECK(message.find(c.codec) != std::string::npos);
    CHECK(message.find("99") != std::string::npos);
    CHECK(message.find("_0") != std::string::npos);
  }
  // segments_N format 11 (Lucene main, unreleased).
  auto dir = CorruptionFixture("stored_fields_index");
  dir->files.at("segments_1")[4 + 1 + 8 + 3] = 11;
  const absl::Status status = ReadEverything(dir);
  CHECK(absl::IsUnimplemented(status));
  CHECK(std::string(status.message()).find("segments") != std::string::npos);
}

TEST_CASE("Unknown stored-fields formats are Unimplemented naming the format and segment",
          "[lucene][corrupt]") {
  // Stored-fields formats are told apart by the .fdt codec name alone; a name rfs does not know
  // (here OpenSearch's QAT codec, or a renamed Lucene one) must never be decoded as another.
  for (const char* name : {"QatStoredFieldsLz4", "QatStoredFieldsDeflate", "ZstdStoredFields999"}) {
    auto format = rfs::lucene::internal::FormatForHeader(name, 1, "_3.fdt");
    CHECK(absl::IsUnimplemented(format.status()));
    CHECK(std::string(format.status().message()).find(name) != std::string::npos);
  }
  for (const char* name :
       {"ZstdStoredFields814", "CustomStoredFieldsZstd", "CustomStoredFieldsZstdNoDict"}) {
    CHECK(rfs::lucene::internal::FormatForHeader(name, 1, "_3.fdt").ok());
    CHECK(
        absl::IsUnimplemented(rfs::lucene::internal::FormatForHeader(name, 2, "_3.fdt").status()));
  }
  if (!rfs::lucene::testing::HaveCorpus()) return;
  auto dir = CorruptionFixture("stored_fields_index");
  auto& bytes = dir->files.at("_0.fdt");
  const std::string renamed = "Lucene99StoredFieldsFastData";  // same length as the real name
  std::copy(renamed.begin(), renamed.end(), bytes.begin() + 5);
  FixChecksum(bytes);
  const absl::Status status = ReadEverything(dir);
  INFO(status.ToString());
  CHECK(absl::IsUnimplemented(status));
  CHECK(std::string(status.message()).find(renamed) != std::string::npos);
  CHECK(std::string(status.message()).find("_0") != std::string::npos);
}

TEST_CASE("Missing files are NotFound naming the segment", "[lucene][corrupt]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  auto dir = CorruptionFixture("stored_fields_index");
  dir->files.erase("_0.fdt");
  const absl::Status status = ReadEverything(dir);
  CHECK(absl::IsNotFound(status));
  CHECK(std::string(status.message()).find("_0") != std::string::npos);
  auto none = std::make_shared<MemoryDirectory>();
  CHECK(absl::IsNotFound(rfs::lucene::ShardReader::Open(none).status()));
}

TEST_CASE("Uid decoding", "[lucene][uid]") {
  std::string id;
  auto decode = [&](std::vector<uint8_t> bytes) {
    REQUIRE(rfs::lucene::DecodeUid(bytes, id).ok());
    return id;
  };
  // docs/formats.md D.2 examples.
  CHECK(decode({0xff, 0x63, 0x6f, 0x6d, 0x70, 0x6c, 0x65, 0x78, 0x64, 0x6f, 0x63}) == "complexdoc");
  CHECK(decode({0xba, 0x77, 0x21, 0x6a, 0x78, 0x1e, 0x75, 0xda, 0x1c}) == "unchangeddoc");
  CHECK(decode({0xfe, 0x12, 0x34}) == "1234");
  CHECK(decode({0xfe, 0x12, 0x3f}) == "123");
  CHECK(decode({0xfe, 0x01}) == "01");
  CHECK(decode({0xfd, 0xfd, 0x00}) == "_QA");
  CHECK_FALSE(rfs::lucene::DecodeUid({}, id).ok());
  CHECK_FALSE(rfs::lucene::DecodeUid(std::vector<uint8_t>{0xfe, 0xa1}, id).ok());
  std::string type;
  REQUIRE(rfs::lucene::SplitUid("type1#a#b", type, id).ok());
  CHECK(type == "type1");
  CHECK(id == "a#b");
  CHECK_FALSE(rfs::lucene::SplitUid("nohash", type, id).ok());
}

namespace {

void AppendVInt(std::vector<uint8_t>& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

long PeakRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

}  // namespace

TEST_CASE("A chunk claiming 2 GB over 60 KB of bad zstd fails without taking the memory it claims",
          "[lucene][corrupt]") {
  // One document of 2,000,000,000 bytes, within the 1:32768 a zstd frame can expand to, then a
  // block whose frame is garbage after its magic number.
  std::vector<uint8_t> body;
  AppendVInt(body, 0);              // docBase
  AppendVInt(body, 1 << 2);         // one document, not sliced
  AppendVInt(body, 1);              // its number of fields
  AppendVInt(body, 2'000'000'000);  // its length
  AppendVInt(body, 61'500);         // the block's compressed length
  for (uint8_t b : {0x28, 0xB5, 0x2F, 0xFD}) body.push_back(b);
  body.resize(body.size() + 61'500, 0);
  rfs::lucene::internal::StoredFieldsFormat format;
  format.compression = rfs::lucene::internal::Compression::kZstd;
  format.lucene90_ints = true;
  format.order = rfs::core::ByteOrder::kLittle;
  format.token_dirty_bit = true;
  format.chunk_size = 14 * 1024;
  rfs::lucene::internal::ChunkDecoder decoder(format);
  rfs::lucene::internal::DecodedChunk chunk;
  rfs::core::ByteReader in(body, "_0.fdt");
  const long before = PeakRssKiB();
  const absl::Status status = decoder.Decode(in, 1, -1, chunk);
  ExpectDataLoss(status, "_0.fdt");
  // The buffer sized from the claim is never zero-filled, so the failed decode touches almost none
  // of it (a zero-filled one costs the whole 2 GB).
  CHECK(PeakRssKiB() - before < 256 * 1024);
}
