#include "rfs/core/base64.hpp"

#include <string>

#include <catch2/catch.hpp>

namespace {
std::span<const uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::string AsString(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }
}  // namespace

TEST_CASE("base64 follows RFC 4648 test vectors", "[core]") {
  using rfs::core::Base64Encode;
  CHECK(Base64Encode(AsBytes("")) == "");
  CHECK(Base64Encode(AsBytes("f")) == "Zg==");
  CHECK(Base64Encode(AsBytes("fo")) == "Zm8=");
  CHECK(Base64Encode(AsBytes("foo")) == "Zm9v");
  CHECK(Base64Encode(AsBytes("foob")) == "Zm9vYg==");
  CHECK(Base64Encode(AsBytes("fooba")) == "Zm9vYmE=");
  CHECK(Base64Encode(AsBytes("foobar")) == "Zm9vYmFy");
}

TEST_CASE("URL-safe base64 has no padding and -_ digits", "[core]") {
  const std::vector<uint8_t> bytes = {0xFB, 0xFF, 0xBF};
  CHECK(rfs::core::Base64Encode(bytes) == "+/+/");
  CHECK(rfs::core::Base64UrlEncode(bytes) == "-_-_");
  CHECK(rfs::core::Base64UrlEncode(std::string_view("posts")) == "cG9zdHM");
}

TEST_CASE("base64 decoding accepts both alphabets and rejects garbage", "[core]") {
  CHECK(AsString(rfs::core::Base64Decode("Zm9vYmE=").value()) == "fooba");
  CHECK(AsString(rfs::core::Base64Decode("Zm9vYmE").value()) == "fooba");
  CHECK(rfs::core::Base64Decode("-_-_").value() == std::vector<uint8_t>{0xFB, 0xFF, 0xBF});
  CHECK(absl::IsInvalidArgument(rfs::core::Base64Decode("Zm9v!").status()));
  CHECK(absl::IsInvalidArgument(rfs::core::Base64Decode("Zm9vY").status()));
}

#include "rfs/core/base36.hpp"

TEST_CASE("base 36 as Java's Long.toString(x, 36)", "[core]") {
  CHECK(rfs::core::ToBase36(0) == "0");
  CHECK(rfs::core::ToBase36(10) == "a");
  CHECK(rfs::core::ToBase36(36) == "10");
  CHECK(rfs::core::ParseBase36("1wb2pwg") == 4130302624ull);
  CHECK(rfs::core::ParseBase36(rfs::core::ToBase36(INT64_MAX)) == static_cast<uint64_t>(INT64_MAX));
  CHECK_FALSE(rfs::core::ParseBase36("").has_value());
  CHECK_FALSE(rfs::core::ParseBase36("A1").has_value());
  CHECK_FALSE(rfs::core::ParseBase36("zzzzzzzzzzzzzz").has_value());
}
