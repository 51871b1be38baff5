#include "rfs/core/crc32.hpp"

#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

namespace {
std::span<const uint8_t> BytesOf(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

TEST_CASE("CRC-32 matches the standard check value", "[core]") {
  // The CRC-32/ISO-HDLC check value of "123456789" is 0xCBF43926.
  CHECK(rfs::core::Crc32(BytesOf("123456789")) == 0xCBF43926u);
  CHECK(rfs::core::Crc32(BytesOf("")) == 0u);
}

TEST_CASE("CRC-32 accumulates across pieces", "[core]") {
  rfs::core::Crc32Accumulator crc;
  crc.Update(BytesOf("1234"));
  crc.Update(BytesOf("56789"));
  CHECK(crc.value() == 0xCBF43926u);
  CHECK(rfs::core::Crc32(BytesOf("56789"), rfs::core::Crc32(BytesOf("1234"))) == 0xCBF43926u);
}

TEST_CASE("Crc32Combine joins the CRCs of pieces hashed apart", "[core][crc32]") {
  std::vector<uint8_t> bytes(100000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 7);
  const std::span<const uint8_t> all(bytes);
  const uint32_t whole = rfs::core::Crc32(all);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{4096}, size_t{65537}, bytes.size()}) {
    INFO("cut at " << cut);
    const uint32_t first = rfs::core::Crc32(all.first(cut));
    const uint32_t second = rfs::core::Crc32(all.subspan(cut));
    CHECK(rfs::core::Crc32Combine(first, second, bytes.size() - cut) == whole);
  }
}
