#include "rfs/core/json_string.hpp"

#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using rfs::core::AppendJsonString;
using rfs::core::AppendJsonStringIfUtf8;
using rfs::core::IsValidUtf8;

namespace {

std::string Quoted(std::string_view value) {
  std::string out;
  AppendJsonString(value, out);
  return out;
}

}  // namespace

TEST_CASE("JSON strings escape quotes, backslashes and control characters only") {
  CHECK(Quoted("") == "\"\"");
  CHECK(Quoted("plain") == "\"plain\"");
  CHECK(Quoted("a\"b\\c") == R"("a\"b\\c")");
  CHECK(Quoted("\n\r\t\b\f") == R"("\n\r\t\b\f")");
  CHECK(Quoted(std::string_view("\x00\x01\x1f", 3)) == R"("\u0000\u0001\u001f")");
  CHECK(Quoted("\x7f") == "\"\x7f\"");
  CHECK(Quoted("caf\xc3\xa9 \xf0\x9f\x98\x80") == "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
}

TEST_CASE("every byte string reads back as itself through a JSON parser") {
  std::string all;
  for (int c = 1; c < 0x80; ++c) all.push_back(static_cast<char>(c));
  all += "\xe2\x82\xac";
  const auto parsed = boost::json::parse(Quoted(all));
  CHECK(std::string(parsed.as_string()) == all);
}

TEST_CASE("UTF-8 validation rejects overlongs, surrogates, truncation and out-of-range points") {
  CHECK(IsValidUtf8("ascii"));
  CHECK(IsValidUtf8("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"));
  CHECK_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong, 3 bytes
  CHECK_FALSE(IsValidUtf8("\xed\xa0\x80"));      // U+D800, a surrogate
  CHECK_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(IsValidUtf8("\xe2\x82"));          // truncated
  CHECK_FALSE(IsValidUtf8("\x80"));              // lone continuation
  CHECK_FALSE(IsValidUtf8("\xc3\x28"));          // bad continuation

  std::string out = "prefix";
  CHECK_FALSE(AppendJsonStringIfUtf8("\xff", out));
  CHECK(out == "prefix");
  CHECK(AppendJsonStringIfUtf8("\xc3\xa9", out));
  CHECK(out == "prefix\"\xc3\xa9\"");
}

TEST_CASE("one-line JSON: every raw CR and LF becomes a space, at any position and length",
          "[core][json]") {
  // Lengths and positions around the 32- and 64-byte steps of the vectorized scan.
  for (size_t length : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{63},
                        size_t{64}, size_t{65}, size_t{100}, size_t{130}}) {
    for (size_t at = 0; at <= length; ++at) {
      std::string json(length, 'a');
      std::string expected = json;
      if (at < length) {
        json[at] = at % 2 == 0 ? '\n' : '\r';
        expected[at] = ' ';
        // A pretty-printed tail: a break every 7 bytes after the first.
        for (size_t i = at + 7; i < length; i += 7) {
          json[i] = '\n';
          expected[i] = ' ';
        }
      }
      CAPTURE(length, at);
      CHECK(rfs::core::FindLineBreak(json) == (at < length ? at : length));
      std::string out = "prefix\n";
      rfs::core::AppendJsonOneLine(json, out);
      CHECK(out == "prefix\n" + expected);
      rfs::core::MakeJsonOneLine(json);
      CHECK(json == expected);
    }
  }
}

TEST_CASE("a code point appends as UTF-8 in one to four bytes", "[core][json]") {
  auto encoded = [](uint32_t code_point) {
    std::string out = "x";
    rfs::core::AppendUtf8(code_point, out);
    return out;
  };
  CHECK(encoded(0) == std::string("x\0", 2));
  CHECK(encoded('A') == "xA");
  CHECK(encoded(0x7F) == "x\x7f");
  CHECK(encoded(0x80) == "x\xc2\x80");
  CHECK(encoded(0xE9) == "x\xc3\xa9");
  CHECK(encoded(0x7FF) == "x\xdf\xbf");
  CHECK(encoded(0x800) == "x\xe0\xa0\x80");
  CHECK(encoded(0x20AC) == "x\xe2\x82\xac");
  CHECK(encoded(0xD800) == "x\xed\xa0\x80");  // a surrogate, as any other
  CHECK(encoded(0xFFFF) == "x\xef\xbf\xbf");
  CHECK(encoded(0x10000) == "x\xf0\x90\x80\x80");
  CHECK(encoded(0x1F600) == "x\xf0\x9f\x98\x80");
  CHECK(encoded(0x10FFFF) == "x\xf4\x8f\xbf\xbf");
  // What it writes for a valid code point is valid UTF-8.
  for (uint32_t cp : {0x41u, 0x3A9u, 0xFFFDu, 0x1F600u, 0x10FFFFu}) {
    CHECK(IsValidUtf8(encoded(cp)));
  }
}

TEST_CASE("ReadJsonString reads back what AppendJsonString wrote, whatever the bytes") {
  using rfs::core::ReadJsonString;
  // Every byte value, quotes, backslashes, controls, UTF-8 and bytes that are not UTF-8.
  std::string every;
  for (int c = 0; c < 256; ++c) every.push_back(static_cast<char>(c));
  for (const std::string& value :
       {std::string(), std::string("plain"), every, std::string("\xff\xfe not UTF-8 \"q\" \\")}) {
    std::string text = "x";
    AppendJsonString(value, text);
    text += ",rest";
    size_t pos = 1;
    std::string read;
    REQUIRE(ReadJsonString(text, pos, read));
    CHECK(read == value);
    CHECK(text.substr(pos) == ",rest");
  }
  // Escapes AppendJsonString never writes: \/, \u of any code point, a surrogate pair as one.
  size_t pos = 0;
  std::string read;
  REQUIRE(ReadJsonString(R"("a\/b\u00e9\uD83D\uDE00\u0041")", pos, read));
  CHECK(read ==
        "a/b\xc3\xa9\xf0\x9f\x98\x80"
        "A");
  // Not a whole literal: false, position unchanged.
  for (const char* bad : {"", "x\"", "\"open", "\"bad \\q escape\"", "\"\\u12\"", "\"ends \\"}) {
    size_t at = 0;
    std::string out = "kept";
    CHECK_FALSE(ReadJsonString(bad, at, out));
    CHECK(at == 0);
    CHECK(out == "kept");
  }
}
