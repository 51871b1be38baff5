#include "rfs/core/byte_reader.hpp"

#include <array>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace {

using rfs::core::ByteOrder;
using rfs::core::ByteReader;

std::vector<uint8_t> Bytes(std::initializer_list<int> values) {
  std::vector<uint8_t> out;
  for (int v : values) out.push_back(static_cast<uint8_t>(v));
  return out;
}

}  // namespace

TEST_CASE("fixed-width integers in both byte orders", "[core]") {
  const auto data = Bytes({0x3F, 0xD7, 0x6C, 0x17, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08});
  ByteReader reader(data, "test.bin");
  CHECK(reader.ReadBeU32().value() == 0x3FD76C17u);
  CHECK(reader.ReadLeU16().value() == 0x0201u);
  CHECK(reader.ReadBeU16().value() == 0x0304u);
  CHECK(reader.position() == 8);
  ByteReader again(data, "test.bin");
  REQUIRE(again.Skip(4).ok());
  CHECK(again.ReadU64(ByteOrder::kLittle).value() == 0x0807060504030201ull);
  CHECK(again.at_end());
}

TEST_CASE("a read past the end is DataLoss naming the source and offset", "[core]") {
  const auto data = Bytes({1, 2, 3, 4, 5, 6});
  ByteReader reader(data, "_0.fdt", /*base_offset=*/100);
  REQUIRE(reader.Skip(4).ok());
  auto value = reader.ReadBeU32();
  REQUIRE_FALSE(value.ok());
  CHECK(absl::IsDataLoss(value.status()));
  const std::string message(value.status().message());
  CHECK(message.find("_0.fdt") != std::string::npos);
  CHECK(message.find("offset 104") != std::string::npos);
  // A failed read does not move the cursor.
  CHECK(reader.position() == 4);
  CHECK_FALSE(reader.ReadBytes(3).ok());
  CHECK_FALSE(reader.Skip(3).ok());
  CHECK_FALSE(reader.Seek(7).ok());
  CHECK(reader.Seek(6).ok());
  CHECK_FALSE(reader.ReadByte().ok());
}

TEST_CASE("VInt and VLong decode Lucene's little-endian groups", "[core]") {
  // 0x7F -> 127; 0x80 0x01 -> 128; 0xFF 0xFF 0xFF 0xFF 0x0F -> 0xFFFFFFFF.
  const auto data = Bytes({0x7F, 0x80, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F});
  ByteReader reader(data, "v");
  CHECK(reader.ReadVInt().value() == 127u);
  CHECK(reader.ReadVInt().value() == 128u);
  CHECK(reader.ReadVInt().value() == 0xFFFFFFFFu);

  const auto big = Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F});
  ByteReader vlong(big, "v");
  CHECK(vlong.ReadVLong().value() == 0x7FFFFFFFFFFFFFFFull);
}

TEST_CASE("malformed variable-length integers are rejected", "[core]") {
  SECTION("VInt with bits beyond 32") {
    const auto data = Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0x1F});
    ByteReader reader(data, "bad");
    auto v = reader.ReadVInt();
    REQUIRE_FALSE(v.ok());
    CHECK(absl::IsDataLoss(v.status()));
    CHECK(std::string(v.status().message()).find("offset 0") != std::string::npos);
  }
  SECTION("truncated VInt names where it started") {
    const auto data = Bytes({0x01, 0x80, 0x80});
    ByteReader reader(data, "bad", 10);
    REQUIRE(reader.ReadByte().ok());
    auto v = reader.ReadVInt();
    REQUIRE_FALSE(v.ok());
    CHECK(std::string(v.status().message()).find("truncated VInt at offset 11") !=
          std::string::npos);
  }
  SECTION("VLong with a continuation bit on the ninth byte") {
    const auto data = Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0x01});
    ByteReader reader(data, "bad");
    CHECK_FALSE(reader.ReadVLong().ok());
  }
}

TEST_CASE("ZInt and ZLong undo zig-zag encoding", "[core]") {
  // zig-zag: 0->0, 1->-1, 2->1, 3->-2; 0xFFFFFFFF -> INT32_MIN.
  const auto data = Bytes({0x00, 0x01, 0x02, 0x03, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F});
  ByteReader reader(data, "z");
  CHECK(reader.ReadZInt().value() == 0);
  CHECK(reader.ReadZInt().value() == -1);
  CHECK(reader.ReadZInt().value() == 1);
  CHECK(reader.ReadZInt().value() == -2);
  CHECK(reader.ReadZInt().value() == INT32_MIN);

  // A ZLong of INT64_MIN needs all ten bytes (zig-zag value 2^64 - 1).
  const auto min = Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01});
  ByteReader zlong(min, "z");
  CHECK(zlong.ReadZLong().value() == INT64_MIN);
}

TEST_CASE("Lucene strings are a VInt length and UTF-8 bytes", "[core]") {
  const auto data = Bytes({0x05, 'h', 0xC3, 0xA9, 'l', 'o', 0x09, 'x'});
  ByteReader reader(data, "segments_3");
  CHECK(reader.ReadString().value() == "h\xC3\xA9lo");
  auto truncated = reader.ReadString();
  REQUIRE_FALSE(truncated.ok());
  CHECK(std::string(truncated.status().message()).find("segments_3") != std::string::npos);
  CHECK(std::string(truncated.status().message()).find("offset 6") != std::string::npos);
}
