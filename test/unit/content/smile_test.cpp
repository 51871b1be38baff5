#include "rfs/content/smile.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/base64.hpp"

namespace {

using rfs::content::DecodeSmile;

constexpr uint8_t kSharedNames = 0x01;
constexpr uint8_t kSharedValues = 0x02;
constexpr uint8_t kRawBinary = 0x04;

// Builds SMILE documents token by token (smile-format-specification).
class Smile {
 public:
  explicit Smile(uint8_t flags = kSharedNames | kSharedValues | kRawBinary)
      : bytes_{0x3A, 0x29, 0x0A, flags} {}

  Smile& Raw(std::initializer_list<int> values) {
    for (int v : values) bytes_.push_back(static_cast<uint8_t>(v));
    return *this;
  }
  Smile& Bytes(std::string_view text) {
    bytes_.insert(bytes_.end(), text.begin(), text.end());
    return *this;
  }
  // B.3: 7-bit groups, most significant first; the last byte has the high
  // bit set and carries 6 bits.
  Smile& VInt(uint64_t value) {
    std::vector<uint8_t> groups{static_cast<uint8_t>(0x80 | (value & 0x3F))};
    for (value >>= 6; value != 0; value >>= 7) {
      groups.push_back(static_cast<uint8_t>(value & 0x7F));
    }
    bytes_.insert(bytes_.end(), groups.rbegin(), groups.rend());
    return *this;
  }
  Smile& Int32(int32_t v) {
    bytes_.push_back(0x24);
    return VInt(ZigZag(v));
  }
  Smile& Int64(int64_t v) {
    bytes_.push_back(0x25);
    return VInt(ZigZag(v));
  }
  // A value string in the shortest token that fits (B.2).
  Smile& Str(std::string_view text) { return Text(text, {0x40, 0x80, 65, 0xE0, 0xE4}); }
  // A key in the shortest non-reference token that fits (B.4).
  Smile& Key(std::string_view name) { return Text(name, {0x80, 0xC0, 57, 0x34, 0x34}); }
  // B.5: 7 bytes in 8 groups of 7 bits; a tail of r bytes in r + 1 groups,
  // the last holding r bits.
  Smile& SevenBit(std::vector<uint8_t> raw) {
    VInt(raw.size());
    size_t i = 0;
    for (; i + 7 <= raw.size(); i += 7) {
      uint64_t bits = 0;
      for (int k = 0; k < 7; ++k) bits = (bits << 8) | raw[i + k];
      for (int k = 7; k >= 0; --k) bytes_.push_back((bits >> (7 * k)) & 0x7F);
    }
    const size_t tail = raw.size() - i;
    if (tail > 0) {
      uint64_t bits = 0;
      for (size_t k = 0; k < tail; ++k) bits = (bits << 8) | raw[i + k];
      for (size_t k = 1; k <= tail; ++k) {
        bytes_.push_back((bits >> (8 * tail - 7 * k)) & 0x7F);
      }
      bytes_.push_back(bits & ((1u << tail) - 1));
    }
    return *this;
  }
  // 0x28 / 0x29: 5 or 10 bytes of 7 bits, most significant first.
  Smile& Float(float f) { return Packed(0x28, std::bit_cast<uint32_t>(f), 5); }
  Smile& Double(double d) { return Packed(0x29, std::bit_cast<uint64_t>(d), 10); }

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  // Value and key tokens differ only in these bases and limits: tiny/short
  // ASCII of 1..64 bytes, tiny/short Unicode of 2..unicode_max bytes, else a
  // long form ended by 0xFC.
  struct TextTokens {
    uint8_t ascii_base;
    uint8_t unicode_base;
    size_t unicode_max;
    uint8_t long_ascii;
    uint8_t long_unicode;
  };
  Smile& Text(std::string_view text, const TextTokens& tokens) {
    const bool ascii = std::all_of(text.begin(), text.end(),
                                   [](char c) { return static_cast<uint8_t>(c) < 0x80; });
    if (text.empty()) return Raw({0x20});
    if (ascii && text.size() <= 64) {
      bytes_.push_back(static_cast<uint8_t>(tokens.ascii_base + text.size() - 1));
    } else if (!ascii && text.size() >= 2 && text.size() <= tokens.unicode_max) {
      bytes_.push_back(static_cast<uint8_t>(tokens.unicode_base + text.size() - 2));
    } else {
      bytes_.push_back(ascii ? tokens.long_ascii : tokens.long_unicode);
      return Bytes(text).Raw({0xFC});
    }
    return Bytes(text);
  }
  Smile& Packed(uint8_t token, uint64_t bits, int groups) {
    bytes_.push_back(token);
    for (int k = groups - 1; k >= 0; --k) bytes_.push_back((bits >> (7 * k)) & 0x7F);
    return *this;
  }
  static uint64_t ZigZag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  }
  std::vector<uint8_t> bytes_;
};

boost::json::value Decoded(const Smile& smile) {
  auto result = DecodeSmile(smile.bytes(), "test.smile");
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *result;
}

boost::json::value Json(std::string_view text) {
  return boost::json::parse(boost::json::string_view(text.data(), text.size()));
}

// The decode fails with DataLoss and a message containing every fragment.
void ExpectDataLoss(const std::vector<uint8_t>& bytes,
                    std::initializer_list<std::string_view> fragments, uint64_t base_offset = 0) {
  auto result = DecodeSmile(bytes, "blob.dat", base_offset);
  REQUIRE_FALSE(result.ok());
  const std::string message(result.status().message());
  INFO(message);
  CHECK(absl::IsDataLoss(result.status()));
  CHECK(message.find("blob.dat") != std::string::npos);
  for (std::string_view fragment : fragments) {
    CHECK(message.find(fragment) != std::string::npos);
  }
}

std::string Repeat(std::string_view text, size_t times) {
  std::string out;
  for (size_t i = 0; i < times; ++i) out += text;
  return out;
}

}  // namespace

TEST_CASE("SMILE header is required and its version must be 0", "[snapshot][smile]") {
  CHECK(Decoded(Smile().Raw({0x21})).is_null());
  ExpectDataLoss({}, {"missing SMILE header", "offset 0"});
  ExpectDataLoss({'{', '}'}, {"missing SMILE header"});
  ExpectDataLoss({0x3A, 0x29, 0x0A}, {"truncated SMILE header", "offset 3"});
  ExpectDataLoss({0x3A, 0x29, 0x0A, 0x00}, {"has no value", "offset 4"});
  const std::vector<uint8_t> version1 = {0x3A, 0x29, 0x0A, 0x10, 0x21};
  auto result = DecodeSmile(version1, "v1.smile");
  CHECK(absl::IsUnimplemented(result.status()));
  CHECK(rfs::content::LooksLikeSmile(version1));
  CHECK_FALSE(rfs::content::LooksLikeSmile(std::vector<uint8_t>{0x3A, 0x29}));
}

TEST_CASE("SMILE literals and small ints", "[snapshot][smile]") {
  CHECK(Decoded(Smile().Raw({0xF8, 0x20, 0x21, 0x22, 0x23, 0xF9})) ==
        Json(R"(["", null, false, true])"));
  Smile ints;
  ints.Raw({0xF8});
  for (int b = 0xC0; b <= 0xDF; ++b) ints.Raw({b});
  ints.Raw({0xF9});
  const auto value = Decoded(ints);
  // Zig-zag: 0, -1, 1, -2, ... 15, -16.
  CHECK(value.as_array().size() == 32);
  CHECK(value.as_array()[0] == 0);
  CHECK(value.as_array()[1] == -1);
  CHECK(value.as_array()[2] == 1);
  CHECK(value.as_array()[30] == 15);
  CHECK(value.as_array()[31] == -16);
}

TEST_CASE("SMILE int32 and int64 are zig-zag VInts", "[snapshot][smile]") {
  Smile smile;
  smile.Raw({0xF8})
      .Int32(0)
      .Int32(100)
      .Int32(-100)
      .Int32(INT32_MAX)
      .Int32(INT32_MIN)
      .Int64(7100299)
      .Int64(INT64_MAX)
      .Int64(INT64_MIN)
      .Int64(-1)
      .Raw({0xF9});
  CHECK(Decoded(smile) == Json(R"([0, 100, -100, 2147483647, -2147483648, 7100299,
                 9223372036854775807, -9223372036854775808, -1])"));

  SECTION("an int32 wider than 32 bits is corrupt") {
    ExpectDataLoss(Smile().Raw({0x24}).VInt(uint64_t{1} << 32).bytes(),
                   {"int32 out of range", "offset 4"});
  }
  SECTION("an int64 wider than 64 bits is corrupt") {
    ExpectDataLoss(
        Smile().Raw({0x25, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0xBF}).bytes(),
        {"VInt", "offset 5"});
  }
  SECTION("a VInt may not run on forever") {
    ExpectDataLoss(Smile().Raw({0x24, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80}).bytes(),
                   {"VInt longer than 5 bytes", "offset 5"});
  }
  SECTION("a truncated VInt names its start") {
    ExpectDataLoss(Smile().Raw({0xF8, 0x25, 0x01, 0x02}).bytes(),
                   {"truncated SMILE VInt", "offset 6"});
  }
}

TEST_CASE("SMILE BigInteger renders as a number when it fits, else a string", "[snapshot][smile]") {
  auto big = [](std::vector<uint8_t> twos_complement) {
    Smile smile;
    smile.Raw({0x26}).SevenBit(std::move(twos_complement));
    return Decoded(smile);
  };
  CHECK(big({0x01, 0x00}) == 256);
  CHECK(big({0xFF}) == -1);
  CHECK(big({0x80, 0, 0, 0, 0, 0, 0, 0}) == INT64_MIN);
  // 2^64 - 1 needs a leading zero byte in two's complement.
  const auto max_u64 = big({0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF});
  CHECK(max_u64.is_uint64());
  CHECK(max_u64.as_uint64() == UINT64_MAX);
  CHECK(big({0x01, 0, 0, 0, 0, 0, 0, 0, 0}) == "18446744073709551616");
  // -(2^63) - 1 no longer fits int64.
  CHECK(big({0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}) == "-9223372036854775809");
  // 10^30 = 0x0C9F2C9CD04674EDEA40000000.
  CHECK(big({0x0C, 0x9F, 0x2C, 0x9C, 0xD0, 0x46, 0x74, 0xED, 0xEA, 0x40, 0x00, 0x00, 0x00}) ==
        "1000000000000000000000000000000");
  ExpectDataLoss(Smile().Raw({0x26, 0x80}).bytes(), {"zero bytes"});
}

TEST_CASE("SMILE BigDecimal renders as a double or a decimal string", "[snapshot][smile]") {
  auto decimal = [](int32_t scale, std::vector<uint8_t> unscaled) {
    Smile smile;
    const uint64_t zigzag = (static_cast<uint64_t>(static_cast<int64_t>(scale)) << 1) ^
                            static_cast<uint64_t>(scale >> 31);
    smile.Raw({0x2A}).VInt(zigzag & 0xFFFFFFFFu).SevenBit(std::move(unscaled));
    return Decoded(smile);
  };
  CHECK(decimal(2, {0x30, 0x39}) == 123.45);  // 12345 x 10^-2
  CHECK(decimal(-3, {0x07}) == 7000.0);       // 7 x 10^3
  CHECK(decimal(1, {0xF6}) == -1.0);          // -10 x 10^-1
  CHECK(decimal(-400, {0x01}) == "1E+400");   // beyond double range
  CHECK(decimal(400, {0xFD}) == "-3E-400");
  CHECK(decimal(9, {0x05}) == 5e-9);
}

TEST_CASE("SMILE float32 and float64 are 7-bit packed", "[snapshot][smile]") {
  Smile smile;
  smile.Raw({0xF8})
      .Float(0.1f)
      .Float(-2.5f)
      .Double(3.141592653589793)
      .Double(-0.0)
      .Double(1e300)
      .Float(std::nanf(""))
      .Double(-INFINITY)
      .Float(INFINITY)
      .Raw({0xF9});
  const auto value = Decoded(smile);
  // A float reads back as its shortest decimal form, as Jackson prints it.
  CHECK(value == Json(R"([0.1, -2.5, 3.141592653589793, -0.0, 1e300,
                          "NaN", "-Infinity", "Infinity"])"));
  CHECK(std::signbit(value.as_array()[3].as_double()));

  SECTION("bits beyond the packed width are corrupt") {
    ExpectDataLoss(Smile().Raw({0x28, 0x10, 0, 0, 0, 0}).bytes(), {"out of range", "offset 5"});
    ExpectDataLoss(Smile().Raw({0x29, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0}).bytes(),
                   {"out of range", "offset 5"});
    ExpectDataLoss(Smile().Raw({0x28, 0x00, 0x80, 0, 0, 0}).bytes(), {"offset 6"});
    ExpectDataLoss(Smile().Raw({0x29, 0, 0, 0}).bytes(), {"truncated", "offset 4"});
  }
}

TEST_CASE("SMILE strings: tiny, short and long, ASCII and Unicode", "[snapshot][smile]") {
  const std::string tiny_ascii = "snapshot";
  const std::string short_ascii = Repeat("abcdefgh", 8);  // 64 bytes
  const std::string long_ascii = Repeat("x", 65);
  const std::string tiny_unicode = "h\xC3\xA9";                    // "hé", 3 bytes
  const std::string short_unicode = Repeat("\xC3\xA9", 32) + "z";  // 65 bytes
  const std::string long_unicode = Repeat("\xE2\x82\xAC", 30);     // 90 bytes
  const std::string four_byte = "\xF0\x9F\x98\x80";                // U+1F600
  Smile smile;
  smile.Raw({0xF8})
      .Str(tiny_ascii)
      .Str(short_ascii)
      .Str(long_ascii)
      .Str(tiny_unicode)
      .Str(short_unicode)
      .Str(long_unicode)
      .Str(four_byte)
      .Raw({0xF9});
  const auto value = Decoded(smile);
  boost::json::array expected{tiny_ascii,    short_ascii,  long_ascii, tiny_unicode,
                              short_unicode, long_unicode, four_byte};
  CHECK(value == expected);
  // The tokens were the ones intended.
  CHECK(smile.bytes()[5] == 0x47);
  CHECK(smile.bytes()[5 + 9] == 0x7F);
  CHECK(smile.bytes()[5 + 9 + 65] == 0xE0);
}

TEST_CASE("SMILE strings must be well-formed", "[snapshot][smile]") {
  SECTION("invalid UTF-8 names the bad byte") {
    ExpectDataLoss(Smile().Raw({0xF8, 0x81, 'a', 0xFF, 0xF9}).bytes(),
                   {"invalid UTF-8", "offset 7"});
  }
  SECTION("overlong encodings and surrogates are invalid") {
    ExpectDataLoss(Smile().Raw({0x80, 0xC0, 0xAF}).bytes(), {"UTF-8"});
    ExpectDataLoss(Smile().Raw({0x81, 0xED, 0xA0, 0x80}).bytes(), {"UTF-8"});
    ExpectDataLoss(Smile().Raw({0x81, 0xF4, 0x90, 0x80, 0x80}).bytes(), {"UTF-8"});
    ExpectDataLoss(Smile().Raw({0x80, 'a', 0xC3}).bytes(), {"UTF-8"});
  }
  SECTION("an ASCII token holds only ASCII") {
    ExpectDataLoss(Smile().Raw({0x41, 'a', 0xC3}).bytes(), {"non-ASCII byte 0xC3", "offset 6"});
    ExpectDataLoss(Smile().Raw({0xE0, 'a', 0xE9, 0xFC}).bytes(), {"non-ASCII", "offset 6"});
  }
  SECTION("a long string needs its 0xFC end marker") {
    ExpectDataLoss(Smile().Raw({0xE4, 'a', 'b'}).bytes(), {"unterminated", "offset 4"});
  }
  SECTION("a string may not run past the end") {
    ExpectDataLoss(Smile().Raw({0x5F, 'a', 'b'}).bytes(),
                   {"string of 32 bytes runs past the end", "offset 5"});
  }
  SECTION("invalid UTF-8 in a key") {
    ExpectDataLoss(Smile().Raw({0xFA, 0xC0, 0xE2, 0x82, 0x21, 0xFB}).bytes(),
                   {"invalid UTF-8", "offset 6"});
  }
}

TEST_CASE("SMILE binary becomes padded standard base64", "[snapshot][smile]") {
  std::vector<uint8_t> raw;
  for (int i = 0; i < 20; ++i) raw.push_back(static_cast<uint8_t>(i * 13 + 250));
  for (size_t length : {0, 1, 2, 6, 7, 8, 13, 14, 15, 20}) {
    const std::vector<uint8_t> piece(raw.begin(), raw.begin() + length);
    const std::string expected = rfs::core::Base64Encode(piece);
    Smile seven;
    seven.Raw({0xE8}).SevenBit(piece);
    CHECK(Decoded(seven) == boost::json::value(expected));
    Smile raw_binary;
    raw_binary.Raw({0xFD}).VInt(length);
    raw_binary.Bytes(std::string(piece.begin(), piece.end()));
    CHECK(Decoded(raw_binary) == boost::json::value(expected));
  }
  CHECK(Decoded(Smile().Raw({0xFD, 0x83, 0xFB, 0xFF, 0x00})) == "+/8A");

  SECTION("raw binary needs the header flag") {
    ExpectDataLoss(Smile(kSharedNames).Raw({0xFD, 0x81, 0x00}).bytes(), {"raw binary", "offset 4"});
  }
  SECTION("a length prefix beyond the input is refused before allocating") {
    // 2^34 - 1 bytes claimed by a 5-byte VInt.
    ExpectDataLoss(Smile().Raw({0xFD, 0x7F, 0x7F, 0x7F, 0x7F, 0xBF}).bytes(),
                   {"raw binary of 17179869183 bytes runs past the end", "offset 5"});
    ExpectDataLoss(Smile().Raw({0xE8, 0x7F, 0x7F, 0x7F, 0x7F, 0xBF}).bytes(),
                   {"runs past the end", "offset 5"});
  }
  SECTION("7-bit groups have their high bit clear and no stray padding") {
    ExpectDataLoss(Smile().Raw({0xE8, 0x81, 0x80, 0x00}).bytes(), {"high bit", "offset 6"});
    ExpectDataLoss(Smile().Raw({0xE8, 0x81, 0x00, 0x02}).bytes(), {"padding bits", "offset 7"});
  }
}

TEST_CASE("SMILE arrays and objects nest", "[snapshot][smile]") {
  Smile smile;
  smile.Raw({0xFA})
      .Key("snapshot")
      .Raw({0xFA})
      .Key("name")
      .Str("rfs")
      .Key("indices")
      .Raw({0xF8})
      .Str("a")
      .Raw({0xF8, 0xF9, 0xFA, 0xFB, 0xF9})
      .Key("")
      .Raw({0x21})
      .Key("caf\xC3\xA9")
      .Raw({0xC2})
      .Raw({0xFB, 0xFB});
  CHECK(Decoded(smile) == Json(R"({"snapshot": {"name": "rfs", "indices": ["a", [], {}],
                 "": null, "café": 1}})"));
  CHECK(Decoded(Smile().Raw({0xF8, 0xF9})) == Json("[]"));
  CHECK(Decoded(Smile().Raw({0xFA, 0xFB})) == Json("{}"));

  SECTION("the last of duplicate keys wins") {
    CHECK(Decoded(Smile().Raw({0xFA}).Key("a").Raw({0xC2}).Key("a").Raw({0xC4, 0xFB})) ==
          Json(R"({"a": 2})"));
  }
  SECTION("unbalanced containers are corrupt") {
    ExpectDataLoss(Smile().Raw({0xFA, 0xF9}).bytes(),
                   {"unknown SMILE token 0xF9 where a key", "offset 5"});
    ExpectDataLoss(Smile().Raw({0xFA, 0x80, 'a', 0xF9}).bytes(),
                   {"unexpected SMILE END_ARRAY", "offset 7"});
    ExpectDataLoss(Smile().Raw({0xF8, 0xFB}).bytes(),
                   {"unknown SMILE token 0xFB where a value", "offset 5"});
    ExpectDataLoss(Smile().Raw({0xF9}).bytes(), {"END_ARRAY", "offset 4"});
    ExpectDataLoss(Smile().Raw({0xFA, 0x80, 'a'}).bytes(), {"expected a value", "offset 7"});
    ExpectDataLoss(Smile().Raw({0xFA, 0x80, 'a', 0x21}).bytes(), {"no END_OBJECT", "offset 8"});
  }
}

TEST_CASE("SMILE nesting is bounded", "[snapshot][smile]") {
  auto nested = [](int depth) {
    Smile smile;
    for (int i = 0; i < depth; ++i) smile.Raw({0xF8});
    for (int i = 0; i < depth; ++i) smile.Raw({0xF9});
    return smile;
  };
  const auto deepest = Decoded(nested(rfs::content::kMaxSmileDepth));
  CHECK(deepest.is_array());
  ExpectDataLoss(nested(rfs::content::kMaxSmileDepth + 1).bytes(),
                 {"nesting too deep", "offset 516"});
  // Far deeper input fails the same way, without recursion.
  Smile objects;
  for (int i = 0; i < 100000; ++i) objects.Raw({0xFA, 0x80, 'k'});
  ExpectDataLoss(objects.bytes(), {"nesting too deep"});
}

TEST_CASE("SMILE key tokens", "[snapshot][smile]") {
  const std::string long_name = Repeat("long_name_", 7);  // 70 bytes
  const std::string unicode_name = "na\xC3\xAFve";
  Smile smile;
  smile.Raw({0xFA})
      .Key("")
      .Raw({0xC2})
      .Key("short")
      .Raw({0xC4})
      .Key(unicode_name)
      .Raw({0xC6})
      .Key(long_name)
      .Raw({0xC8})
      .Raw({0xFB});
  CHECK(smile.bytes()[4 + 1 + 2] == 0x84);          // short ASCII
  CHECK(smile.bytes()[4 + 1 + 2 + 7] == 0xC4);      // short Unicode, 6 bytes
  CHECK(smile.bytes()[4 + 1 + 2 + 7 + 8] == 0x34);  // long name
  boost::json::object expected;
  expected[""] = 1;
  expected["short"] = 2;
  expected[unicode_name] = 3;
  expected[long_name] = 4;
  CHECK(Decoded(smile) == expected);

  SECTION("reserved key tokens are unknown") {
    for (int token : {0x00, 0x1F, 0x21, 0x2F, 0x35, 0x3A, 0x3F, 0xF8, 0xFC, 0xFF}) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", token);
      ExpectDataLoss(Smile().Raw({0xFA, token, 0x21, 0xFB}).bytes(),
                     {"unknown SMILE token", hex, "where a key", "offset 5"}, 0);
    }
  }
}

TEST_CASE("reserved value tokens are unknown", "[snapshot][smile]") {
  for (int token :
       {0x00, 0x27, 0x2B, 0x2F, 0x3F, 0xE1, 0xE3, 0xE5, 0xE9, 0xEB, 0xF0, 0xF7, 0xFC, 0xFE}) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02X", token);
    ExpectDataLoss(Smile().Raw({0xF8, token, 0xF9}).bytes(),
                   {"unknown SMILE token", hex, "offset 5"});
  }
  // base_offset shifts every reported offset.
  ExpectDataLoss(Smile().Raw({0x27}).bytes(), {"offset 121"},
                 /*base_offset=*/117);
}

TEST_CASE("SMILE shared names: short and long references", "[snapshot][smile]") {
  Smile smile;
  smile.Raw({0xF8, 0xFA})
      .Key("name")  // names[0]
      .Raw({0xC2})
      .Key("physical_name")  // names[1]
      .Raw({0xC4})
      .Raw({0xFB, 0xFA})
      .Raw({0x41, 0xC6})        // short reference to names[1]
      .Raw({0x30, 0x00, 0xC8})  // long reference to names[0]
      .Raw({0xFB, 0xF9});
  CHECK(Decoded(smile) == Json(R"([{"name": 1, "physical_name": 2},
                                   {"physical_name": 3, "name": 4}])"));

  SECTION("long names (0x34) are shared too") {
    const std::string long_name = Repeat("z", 100);
    Smile with_long;
    with_long.Raw({0xF8, 0xFA}).Key(long_name).Raw({0x21, 0xFB});
    with_long.Raw({0xFA, 0x40, 0x21, 0xFB, 0xF9});
    const auto value = Decoded(with_long);
    CHECK(value.as_array()[1].as_object().contains(long_name));
  }
  SECTION("a reference beyond the table is corrupt") {
    ExpectDataLoss(Smile().Raw({0xFA, 0x80, 'a', 0x21, 0x41, 0x21, 0xFB}).bytes(),
                   {"shared name reference 1 beyond the 1 seen", "offset 8"});
    ExpectDataLoss(Smile().Raw({0xFA, 0x31, 0x00, 0x21, 0xFB}).bytes(),
                   {"reference 256", "offset 5"});
    ExpectDataLoss(Smile().Raw({0xFA, 0x30}).bytes(),
                   {"truncated SMILE key reference", "offset 5"});
  }
  SECTION("references need the header flag, and then nothing is recorded") {
    ExpectDataLoss(Smile(0).Raw({0xFA, 0x80, 'a', 0x21, 0x40, 0x21, 0xFB}).bytes(),
                   {"does not enable shared names", "offset 8"});
  }
}

TEST_CASE("SMILE shared values: short and long references", "[snapshot][smile]") {
  Smile smile;
  smile.Raw({0xF8})
      .Str("SUCCESS")        // values[0]
      .Str("h\xC3\xA9")      // values[1]
      .Str(Repeat("v", 70))  // long: never shared
      .Str("")               // empty: never shared
      .Raw({0x01, 0x02})     // short references 0 and 1
      .Raw({0xEC, 0x01})     // long reference to 1
      .Raw({0xF9});
  CHECK(Decoded(smile) == boost::json::array{"SUCCESS", "h\xC3\xA9", Repeat("v", 70), "", "SUCCESS",
                                             "h\xC3\xA9", "h\xC3\xA9"});
  ExpectDataLoss(Smile().Raw({0xF8, 0x41, 'a', 'b', 0x02, 0xF9}).bytes(),
                 {"shared value reference 1 beyond the 1 seen", "offset 8"});
  ExpectDataLoss(Smile(kSharedNames).Raw({0xF8, 0x40, 'a', 0x01, 0xF9}).bytes(),
                 {"does not enable shared values", "offset 7"});
  ExpectDataLoss(Smile().Raw({0xEF}).bytes(), {"truncated SMILE value reference", "offset 4"});
}

TEST_CASE("SMILE back-reference tables reset after 1024 entries", "[snapshot][smile]") {
  auto name = [](int i) {
    char buffer[8];
    std::snprintf(buffer, sizeof(buffer), "k%04d", i);
    return std::string(buffer);
  };
  SECTION("names") {
    // Object 1 defines 1024 names, filling the table; a reference to the last
    // still works. Object 2's first new name resets the table, so afterwards
    // index 0 is that name and index 1 does not exist.
    Smile smile;
    smile.Raw({0xF8, 0xFA});
    for (int i = 0; i < 1024; ++i) smile.Key(name(i)).Raw({0x21});
    smile.Raw({0xFB, 0xFA, 0x33, 0xFF, 0xC2, 0x40, 0xC4, 0xFB});  // 1023, 0
    smile.Raw({0xFA}).Key("fresh").Raw({0x21}).Raw({0xFB});
    smile.Raw({0xFA, 0x40, 0xC6, 0xFB, 0xF9});
    const auto value = Decoded(smile);
    const auto& array = value.as_array();
    REQUIRE(array.size() == 4);
    CHECK(array[0].as_object().size() == 1024);
    CHECK(array[1] == Json(R"({"k1023": 1, "k0000": 2})"));
    CHECK(array[3] == Json(R"({"fresh": 3})"));

    std::vector<uint8_t> bytes = smile.bytes();
    bytes.pop_back();  // drop END_ARRAY
    const size_t at = bytes.size() + 1;
    for (int b : {0xFA, 0x41, 0x21, 0xFB, 0xF9}) bytes.push_back(b);
    ExpectDataLoss(bytes,
                   {"shared name reference 1 beyond the 1 seen", "offset " + std::to_string(at)});
  }
  SECTION("values") {
    Smile smile;
    smile.Raw({0xF8});
    for (int i = 0; i < 1024; ++i) smile.Str(name(i));
    smile.Raw({0xEF, 0xFF, 0x01});         // 1023 and 0 before the reset
    smile.Str("fresh").Raw({0x01, 0xF9});  // reset: "fresh" is now 0
    const auto value = Decoded(smile);
    const auto& array = value.as_array();
    REQUIRE(array.size() == 1028);
    CHECK(array[1024] == "k1023");
    CHECK(array[1025] == "k0000");
    CHECK(array[1026] == "fresh");
    CHECK(array[1027] == "fresh");
  }
}

TEST_CASE("SMILE end marker and trailing bytes", "[snapshot][smile]") {
  CHECK(Decoded(Smile().Raw({0xC2, 0xFF})) == 1);
  CHECK(Decoded(Smile().Raw({0xFA, 0xFB, 0xFF, 0xFF})) == Json("{}"));
  ExpectDataLoss(Smile().Raw({0xC2, 0xC2}).bytes(),
                 {"unexpected byte 0xC2 after the SMILE root value", "offset 5"});
  ExpectDataLoss(Smile().Raw({0xC2, 0xFF, 0x00}).bytes(), {"offset 6"});
  ExpectDataLoss(Smile().Raw({0xFF, 0xC2}).bytes(), {"unknown SMILE token 0xFF", "offset 4"});
  ExpectDataLoss(Smile().Raw({0xF8, 0xFF, 0xF9}).bytes(), {"unknown SMILE token 0xFF", "offset 5"});
}

TEST_CASE("every truncation of a SMILE document is DataLoss", "[snapshot][smile]") {
  Smile smile;
  smile.Raw({0xFA})
      .Key("files")
      .Raw({0xF8, 0xFA})
      .Key("name")
      .Str("__0")
      .Key("length")
      .Int64(1234567890123)
      .Key("meta_hash")
      .Raw({0xFD})
      .VInt(5)
      .Bytes("\x01\x02\x03\x04\x05")
      .Key("ratio")
      .Double(0.5)
      .Key("when")
      .Raw({0x26})
      .SevenBit({0x01, 0x02, 0x03})
      .Key("label")
      .Str("h\xC3\xA9llo")
      .Raw({0xFB, 0xF9})
      .Raw({0x40})  // shared name "files"
      .Raw({0x01})  // shared value "__0"
      .Raw({0xFB});
  REQUIRE(Decoded(smile).is_object());
  const auto& bytes = smile.bytes();
  for (size_t length = 0; length < bytes.size(); ++length) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + length);
    auto result = DecodeSmile(prefix, "cut.smile", 1000);
    INFO("length " << length);
    REQUIRE_FALSE(result.ok());
    CHECK(absl::IsDataLoss(result.status()));
    CHECK(std::string(result.status().message()).find("at offset 10") != std::string::npos);
  }
}

TEST_CASE("back-references cannot amplify the output without bound", "[snapshot][smile]") {
  // One 60,000-byte long name (0x34), then 2,000 one-byte references to it:
  // 120 MB of keys from 68 kB of input.
  Smile smile(kSharedNames);
  smile.Raw({0xF8, 0xFA}).Key(std::string(60000, 'n')).Raw({0x21, 0xFB});
  for (int i = 0; i < 2000; ++i) smile.Raw({0xFA, 0x40, 0x21, 0xFB});
  smile.Raw({0xF9});
  ExpectDataLoss(smile.bytes(), {"back-references expand beyond the size limit"});
}
