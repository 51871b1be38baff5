#include "rfs/codec/codec_util.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/crc32.hpp"

namespace {

void PutBe32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

// A minimal Lucene-style file: index header, payload, footer with a correct
// CRC.
std::vector<uint8_t> MakeFile(std::string_view codec, int32_t version, std::string_view payload) {
  std::vector<uint8_t> out;
  PutBe32(out, rfs::codec::kCodecMagic);
  out.push_back(static_cast<uint8_t>(codec.size()));
  out.insert(out.end(), codec.begin(), codec.end());
  PutBe32(out, static_cast<uint32_t>(version));
  for (int i = 0; i < 16; ++i) out.push_back(static_cast<uint8_t>(i));
  out.push_back(1);
  out.push_back('a');
  out.insert(out.end(), payload.begin(), payload.end());
  PutBe32(out, rfs::codec::kFooterMagic);
  PutBe32(out, 0);  // algorithm id
  const uint32_t crc = rfs::core::Crc32(out);
  PutBe32(out, 0);  // high half of the checksum
  PutBe32(out, crc);
  return out;
}

}  // namespace

TEST_CASE("index header and footer of a well-formed file", "[core]") {
  const auto file = MakeFile("Lucene90SegmentInfo", 0, "payload");
  rfs::core::ByteReader in(file, "_0.si");
  auto header = rfs::codec::ReadIndexHeader(in, "Lucene90SegmentInfo", 0, 0);
  REQUIRE(header.ok());
  CHECK(header->header.codec == "Lucene90SegmentInfo");
  CHECK(header->id[15] == 15);
  CHECK(header->suffix == "a");
  CHECK(rfs::codec::VerifyFooter(file, "_0.si").value() ==
        rfs::codec::ReadFooterChecksum(file, "_0.si").value());
}

TEST_CASE("codec mismatches and unsupported versions are told apart", "[core]") {
  const auto file = MakeFile("Lucene90SegmentInfo", 7, "x");
  rfs::core::ByteReader wrong_name(file, "_0.si");
  auto mismatch = rfs::codec::ReadCodecHeader(wrong_name, "Lucene86SegmentInfo", 0, 10);
  CHECK(absl::IsDataLoss(mismatch.status()));
  rfs::core::ByteReader newer(file, "_0.si");
  auto unsupported = rfs::codec::ReadCodecHeader(newer, "Lucene90SegmentInfo", 0, 1);
  CHECK(absl::IsUnimplemented(unsupported.status()));
  const std::string message(unsupported.status().message());
  CHECK(message.find("version 7") != std::string::npos);
  CHECK(message.find("Lucene90SegmentInfo") != std::string::npos);
}

TEST_CASE("a flipped byte fails the footer checksum with the offset", "[core]") {
  auto file = MakeFile("X", 1, "hello world");
  file[20] ^= 0x40;
  auto status = rfs::codec::VerifyFooter(file, "blob").status();
  CHECK(absl::IsDataLoss(status));
  CHECK(std::string(status.message()).find("checksum mismatch") != std::string::npos);
  CHECK(std::string(status.message()).find("offset " + std::to_string(file.size() - 8)) !=
        std::string::npos);
  CHECK(absl::IsDataLoss(rfs::codec::VerifyFooter(std::span(file).first(10), "blob").status()));
  file[file.size() - 16] ^= 1;  // footer magic
  CHECK(absl::IsDataLoss(rfs::codec::ReadFooterChecksum(file, "blob").status()));
}

namespace {

// `MemoryFile`'s bytes read only through ReadAt, as a remote file's are.
class ReadOnlyFile final : public rfs::core::IRandomAccessFile {
 public:
  explicit ReadOnlyFile(rfs::core::MemoryFile file) : file_(std::move(file)) {}
  const std::string& name() const override { return file_.name(); }
  uint64_t size() const override { return file_.size(); }
  absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    return file_.ReadAt(offset, out);
  }

 private:
  rfs::core::MemoryFile file_;
};

}  // namespace

TEST_CASE("a whole file's footer is verified in place or read", "[core]") {
  const auto bytes = MakeFile("X", 1, "hello world");
  const uint32_t stored = rfs::codec::ReadFooterChecksum(bytes, "blob").value();
  const rfs::core::MemoryFile in_memory("_0.fdt", bytes);
  CHECK(rfs::codec::VerifyFileFooter(in_memory).value() == stored);
  const ReadOnlyFile remote(rfs::core::MemoryFile("_0.fdt", bytes));
  CHECK(rfs::codec::VerifyFileFooter(remote).value() == stored);
  auto flipped = bytes;
  flipped[20] ^= 0x40;
  for (const auto& status :
       {rfs::codec::VerifyFileFooter(rfs::core::MemoryFile("_1.fdt", flipped)).status(),
        rfs::codec::VerifyFileFooter(ReadOnlyFile(rfs::core::MemoryFile("_1.fdt", flipped)))
            .status()}) {
    CHECK(absl::IsDataLoss(status));
    CHECK(std::string(status.message()).find("_1.fdt") != std::string::npos);
  }
}
