#include "rfs/core/crc32.hpp"

#include <string_view>

#include <catch2/catch.hpp>

namespace {
std::span<const uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

TEST_CASE("CRC-32 matches the standard check value", "[core]") {
  // The CRC-32/ISO-HDLC check value of "123456789" is 0xCBF43926.
  CHECK(rfs::core::Crc32(AsBytes("123456789")) == 0xCBF43926u);
  CHECK(rfs::core::Crc32(AsBytes("")) == 0u);
}

TEST_CASE("CRC-32 accumulates across pieces", "[core]") {
  rfs::core::Crc32Accumulator crc;
  crc.Update(AsBytes("1234"));
  crc.Update(AsBytes("56789"));
  CHECK(crc.value() == 0xCBF43926u);
  CHECK(rfs::core::Crc32(AsBytes("56789"), rfs::core::Crc32(AsBytes("1234"))) == 0xCBF43926u);
}
