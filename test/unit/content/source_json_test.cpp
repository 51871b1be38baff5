// _source -> JSON: hand-built CBOR (RFC 8949 Appendix A examples and what
// Jackson's CBORGenerator writes), SMILE and JSON pass-through, corrupt
// CBOR (every truncation, bad lengths, depth) as DataLoss with an offset,
// and YAML read as Elasticsearch's Jackson YAMLParser reads it (scalar
// resolution, tags, aliases as anchor names, limits, errors with offsets).
#include "rfs/content/source_json.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

namespace {

using rfs::content::AppendCborAsJson;
using rfs::content::AppendSourceAsJson;
using rfs::content::AppendYamlAsJson;
using rfs::content::SourceFormat;

std::string Cbor(const std::vector<uint8_t>& bytes) {
  std::string out;
  const absl::Status status = AppendCborAsJson(bytes, "test", out);
  INFO(status.ToString());
  REQUIRE(status.ok());
  return out;
}

absl::Status CborError(const std::vector<uint8_t>& bytes) {
  std::string out = "keep";
  const absl::Status status = AppendCborAsJson(bytes, "_source of 7", out);
  CHECK(out == "keep");  // untouched on error
  return status;
}

std::vector<uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

std::string Yaml(std::string_view text) {
  std::string out;
  const absl::Status status = AppendYamlAsJson(Bytes(text), "test", out);
  INFO("YAML: " << text);
  INFO(status.ToString());
  REQUIRE(status.ok());
  return out;
}

// The JSON of a root scalar written after "--- ".
std::string YamlScalar(std::string_view scalar) {
  return Yaml(std::string("--- ") + std::string(scalar) + "\n");
}

absl::Status YamlError(std::string_view text) {
  std::string out = "keep";
  const absl::Status status = AppendYamlAsJson(Bytes(text), "_source of 7", out);
  CHECK(out == "keep");  // untouched on error
  return status;
}

// The byte offset an error names ("... at offset N").
long ErrorOffset(const absl::Status& status) {
  const std::string message(status.message());
  const size_t at = message.rfind("at offset ");
  if (at == std::string::npos) return -1;
  return std::stol(message.substr(at + 10));
}

void ExpectDataLoss(const absl::Status& status) {
  INFO(status.ToString());
  REQUIRE_FALSE(status.ok());
  CHECK(absl::IsDataLoss(status));
  CHECK(std::string(status.message()).find("_source of 7") != std::string::npos);
  CHECK(std::string(status.message()).find("offset") != std::string::npos);
}

}  // namespace

TEST_CASE("CBOR scalars", "[lucene][cbor]") {
  CHECK(Cbor({0x00}) == "0");
  CHECK(Cbor({0x17}) == "23");
  CHECK(Cbor({0x18, 0x64}) == "100");
  CHECK(Cbor({0x19, 0x03, 0xe8}) == "1000");
  CHECK(Cbor({0x1a, 0x00, 0x0f, 0x42, 0x40}) == "1000000");
  CHECK(Cbor({0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) == "18446744073709551615");
  CHECK(Cbor({0x20}) == "-1");
  CHECK(Cbor({0x38, 0x63}) == "-100");
  CHECK(Cbor({0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) == "-18446744073709551616");
  CHECK(Cbor({0xf4}) == "false");
  CHECK(Cbor({0xf5}) == "true");
  CHECK(Cbor({0xf6}) == "null");
  CHECK(Cbor({0xf7}) == "null");
  // Half, single and double floats (RFC 8949 Appendix A).
  CHECK(Cbor({0xf9, 0x00, 0x00}) == "0.0");
  CHECK(Cbor({0xf9, 0x3c, 0x00}) == "1.0");
  CHECK(Cbor({0xf9, 0x3e, 0x00}) == "1.5");
  CHECK(Cbor({0xf9, 0xc4, 0x00}) == "-4.0");
  CHECK(Cbor({0xf9, 0x00, 0x01}) == "5.9604645e-08");
  CHECK(Cbor({0xf9, 0x7c, 0x00}) == "\"Infinity\"");
  CHECK(Cbor({0xf9, 0x7e, 0x00}) == "\"NaN\"");
  CHECK(Cbor({0xfa, 0x47, 0xc3, 0x50, 0x00}) == "100000.0");
  CHECK(Cbor({0xfa, 0x3d, 0xcc, 0xcc, 0xcd}) == "0.1");
  CHECK(Cbor({0xfb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}) == "1.1");
  CHECK(Cbor({0xfb, 0xff, 0xf0, 0, 0, 0, 0, 0, 0}) == "\"-Infinity\"");
}

TEST_CASE("CBOR strings", "[lucene][cbor]") {
  CHECK(Cbor({0x60}) == R"("")");
  CHECK(Cbor({0x64, 0x49, 0x45, 0x54, 0x46}) == R"("IETF")");
  CHECK(Cbor({0x62, 0x22, 0x5c}) == R"("\"\\")");
  CHECK(Cbor({0x63, 0x0a, 0x01, 0x7f}) == "\"\\n\\u0001\x7f\"");
  CHECK(Cbor({0x62, 0xc3, 0xbc}) == "\"\xc3\xbc\"");
  CHECK(Cbor({0x64, 0xf0, 0x90, 0x85, 0x91}) == "\"\xf0\x90\x85\x91\"");
  // Byte strings become padded standard base64, as Jackson renders binary.
  CHECK(Cbor({0x40}) == R"("")");
  CHECK(Cbor({0x44, 0x01, 0x02, 0x03, 0x04}) == R"("AQIDBA==")");
  CHECK(Cbor({0x43, 0xfb, 0xff, 0xbf}) == R"("+/+/")");
  // Indefinite-length strings are their chunks joined.
  CHECK(Cbor({0x5f, 0x42, 0x01, 0x02, 0x43, 0x03, 0x04, 0x05, 0xff}) == R"("AQIDBAU=")");
  CHECK(Cbor({0x7f, 0x65, 0x73, 0x74, 0x72, 0x65, 0x61, 0x64, 0x6d, 0x69, 0x6e, 0x67, 0xff}) ==
        R"("streaming")");
}

TEST_CASE("CBOR arrays and maps", "[lucene][cbor]") {
  CHECK(Cbor({0x80}) == "[]");
  CHECK(Cbor({0x83, 0x01, 0x02, 0x03}) == "[1,2,3]");
  CHECK(Cbor({0x83, 0x01, 0x82, 0x02, 0x03, 0x82, 0x04, 0x05}) == "[1,[2,3],[4,5]]");
  CHECK(Cbor({0xa0}) == "{}");
  CHECK(Cbor({0xa2, 0x61, 0x61, 0x01, 0x61, 0x62, 0x82, 0x02, 0x03}) == R"({"a":1,"b":[2,3]})");
  // Integer keys become their decimal text.
  CHECK(Cbor({0xa2, 0x01, 0x02, 0x20, 0x04}) == R"({"1":2,"-1":4})");
  // Indefinite-length containers, as Jackson's CBORGenerator writes objects.
  CHECK(Cbor({0xbf, 0x63, 0x46, 0x75, 0x6e, 0xf5, 0x63, 0x41, 0x6d, 0x74, 0x21, 0xff}) ==
        R"({"Fun":true,"Amt":-2})");
  CHECK(Cbor({0x9f, 0x01, 0x9f, 0x02, 0xff, 0xff}) == "[1,[2]]");
  // {"value":42} after the self-describe tag 55799 (D9 D9 F7).
  CHECK(Cbor({0xd9, 0xd9, 0xf7, 0xbf, 0x65, 'v', 'a', 'l', 'u', 'e', 0x18, 0x2a, 0xff}) ==
        R"({"value":42})");
}

TEST_CASE("Corrupt CBOR is DataLoss with an offset", "[lucene][cbor][corrupt]") {
  const std::vector<uint8_t> good = {0xbf, 0x61, 0x61, 0x82, 0xfb, 0x3f, 0xf1, 0x99,
                                     0x99, 0x99, 0x99, 0x99, 0x9a, 0x5f, 0x41, 0x01,
                                     0xff, 0x61, 0x62, 0x7f, 0x61, 0x78, 0xff, 0xff};
  CHECK(Cbor(good) == R"({"a":[1.1,"AQ=="],"b":"x"})");
  for (size_t keep = 0; keep < good.size(); ++keep) {
    INFO("truncated to " << keep);
    ExpectDataLoss(CborError(std::vector<uint8_t>(good.begin(), good.begin() + keep)));
  }
  ExpectDataLoss(CborError({0x01, 0x02}));  // trailing bytes
  ExpectDataLoss(CborError({0x1c}));        // reserved additional info
  ExpectDataLoss(CborError({0x3f}));        // indefinite negative int
  ExpectDataLoss(CborError({0x7b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));  // length
  ExpectDataLoss(CborError({0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));  // count
  ExpectDataLoss(CborError({0xbb, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));  // count
  ExpectDataLoss(CborError({0xff}));                                                  // stray break
  ExpectDataLoss(CborError({0xa1, 0x80, 0x01}));        // array as a key
  ExpectDataLoss(CborError({0x7f, 0x41, 0x00, 0xff}));  // bytes chunk in text
  ExpectDataLoss(CborError({0x5f, 0x5f, 0xff, 0xff}));  // nested indefinite chunk
  ExpectDataLoss(CborError({0x62, 0xc3, 0x28}));        // invalid UTF-8
  ExpectDataLoss(CborError({0x63, 0xed, 0xa0, 0x80}));  // surrogate
  ExpectDataLoss(CborError({0x62, 0xc0, 0x80}));        // overlong
  ExpectDataLoss(CborError({0xc2, 0x41, 0x01}));        // bignum tag
  ExpectDataLoss(CborError({0xf0}));                    // unassigned simple value
  // Nesting: 512 levels are fine, 513 are not.
  std::vector<uint8_t> deep(512, 0x81);
  deep.push_back(0x00);
  CHECK(Cbor(deep).size() == 512 * 2 + 1);
  deep.insert(deep.begin(), 0x81);
  ExpectDataLoss(CborError(deep));
  std::vector<uint8_t> deep_maps;
  for (int i = 0; i < 600; ++i) {
    deep_maps.push_back(0xa1);
    deep_maps.push_back(0x60);
  }
  deep_maps.push_back(0xf6);
  ExpectDataLoss(CborError(deep_maps));
}

TEST_CASE("AppendSourceAsJson dispatches on the source format", "[lucene][cbor]") {
  std::string out;
  const std::string json = R"({"a":1})";
  const std::vector<uint8_t> json_bytes(json.begin(), json.end());
  REQUIRE(AppendSourceAsJson(json_bytes, SourceFormat::kJson, out).ok());
  CHECK(out == json);
  out.clear();
  // SMILE: header ":)\n" + flags 0x03, start object, short ASCII key "a"
  // (0x80 + len - 1), small int 1 (0xC0 + zigzag 2), end object.
  const std::vector<uint8_t> smile = {0x3a, 0x29, 0x0a, 0x03, 0xfa, 0x80, 0x61, 0xc2, 0xfb};
  const absl::Status smile_status = AppendSourceAsJson(smile, SourceFormat::kSmile, out);
  INFO(smile_status.ToString());
  REQUIRE(smile_status.ok());
  CHECK(out == json);
  out.clear();
  const std::vector<uint8_t> cbor = {0xa1, 0x61, 0x61, 0x01};
  REQUIRE(AppendSourceAsJson(cbor, SourceFormat::kCbor, out, "_source of 1").ok());
  CHECK(out == json);
  out.clear();
  // YAML (Elasticsearch recognises it by the leading "---").
  const std::vector<uint8_t> yaml = {'-', '-', '-', '\n', 'a', ':', ' ', '1'};
  REQUIRE(AppendSourceAsJson(yaml, SourceFormat::kYaml, out, "doc 9").ok());
  CHECK(out == json);
  const std::vector<uint8_t> bad_yaml = {'-', '-', '-', '\n', 'a', ':', ' ', '[', '1'};
  const absl::Status yaml_status = AppendSourceAsJson(bad_yaml, SourceFormat::kYaml, out, "doc 9");
  CHECK(absl::IsDataLoss(yaml_status));
  CHECK(std::string(yaml_status.message()).find("doc 9") != std::string::npos);
  CHECK(out == json);
  CHECK(absl::IsInvalidArgument(AppendSourceAsJson({}, SourceFormat::kNone, out)));
}

TEST_CASE("YAML mappings and sequences, block and flow", "[lucene][yaml]") {
  const std::string doc = Yaml(
      "---\n"
      "name: Test User\n"
      "age: 30\n"
      "address:\n"
      "  city: Washington D.C.\n"
      "  zip: \"20000\"\n"
      "roles:\n"
      "  - User\n"
      "  - Editor\n"
      "nested:\n"
      "- [1, 2.5, [], {}]\n"
      "- {a: b, 'c d': [x]}\n"
      "-\n"
      "  - deep: true\n"
      "empty:\n");
  CHECK(doc == R"({"name":"Test User","age":30,"address":{"city":"Washington D.C.","zip":"20000"},)"
               R"("roles":["User","Editor"],"nested":[[1,2.5,[],{}],{"a":"b","c d":["x"]},)"
               R"([{"deep":true}]],"empty":null})");
  CHECK_NOTHROW(boost::json::parse(doc));
  CHECK(Yaml("--- {a: [1, {b: c}], \"d\": 'e', f: }") == R"({"a":[1,{"b":"c"}],"d":"e","f":null})");
  CHECK(Yaml("---\n- a\n- - b\n  - c\n-\n") == R"(["a",["b","c"],null])");
  // A document end marker and comments change nothing.
  CHECK(Yaml("--- # comment\na: 1 # trailing\n...\n") == R"({"a":1})");
  // Keys are their scalar's text, whatever it would resolve to as a value.
  CHECK(Yaml("---\n1: a\nnull: b\n~: c\ntrue: d\n0x10: e\n\"q\": f\n1.5: g\n? k\n: h\n") ==
        R"({"1":"a","null":"b","~":"c","true":"d","0x10":"e","q":"f","1.5":"g","k":"h"})");
  // Duplicate keys pass through as Jackson streams them.
  CHECK(Yaml("--- {a: 1, a: 2}") == R"({"a":1,"a":2})");
}

TEST_CASE("YAML plain scalars resolve as SnakeYAML's YAML 1.1 resolver", "[lucene][yaml]") {
  // Null.
  for (const char* s : {"", "~", "null", "Null", "NULL"}) {
    INFO(s);
    CHECK(YamlScalar(s) == "null");
  }
  CHECK(YamlScalar("nULL") == R"("nULL")");
  // Booleans: the resolver's 18 words, nothing else (not y/n, not tRUE).
  for (const char* s : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
    INFO(s);
    CHECK(YamlScalar(s) == "true");
  }
  for (const char* s : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
    INFO(s);
    CHECK(YamlScalar(s) == "false");
  }
  CHECK(YamlScalar("y") == R"("y")");
  CHECK(YamlScalar("n") == R"("n")");
  CHECK(YamlScalar("tRUE") == R"("tRUE")");
  // Integers: decimal, '_', signs, 0x hex, 0b binary, leading-0 octal, any size.
  CHECK(YamlScalar("0") == "0");
  CHECK(YamlScalar("-0") == "0");
  CHECK(YamlScalar("+12") == "12");
  CHECK(YamlScalar("-42") == "-42");
  CHECK(YamlScalar("1_000_000") == "1000000");
  CHECK(YamlScalar("0x1F") == "31");
  CHECK(YamlScalar("0x_ff") == "255");
  CHECK(YamlScalar("-0x10") == "-16");
  CHECK(YamlScalar("012") == "10");
  CHECK(YamlScalar("-0_17") == "-15");
  CHECK(YamlScalar("0b1010") == "10");
  CHECK(YamlScalar("-0b11") == "-3");
  CHECK(YamlScalar("123456789012345678901234567890") == "123456789012345678901234567890");
  CHECK(YamlScalar("0xFFFFFFFFFFFFFFFFFF") == "4722366482869645213695");
  CHECK(YamlScalar("0x8000000000000000") == "9223372036854775808");
  CHECK(YamlScalar("01777777777777777777777") == "18446744073709551615");
  // Not integers for YAML 1.1 (nor floats): strings.
  CHECK(YamlScalar("08") == R"("08")");
  CHECK(YamlScalar("0o12") == R"("0o12")");
  CHECK(YamlScalar("0x") == R"("0x")");
  CHECK(YamlScalar("1,000") == R"("1,000")");
  CHECK(YamlScalar("190:20:30") == R"("190:20:30")");  // sexagesimal: Jackson keeps the text
  CHECK(YamlScalar("12abc") == R"("12abc")");
  // Floats, written as Jackson writes a double.
  CHECK(YamlScalar("1.5") == "1.5");
  CHECK(YamlScalar("-2.25") == "-2.25");
  CHECK(YamlScalar("+1.5") == "1.5");
  CHECK(YamlScalar(".5") == "0.5");
  CHECK(YamlScalar("-.5") == "-0.5");
  CHECK(YamlScalar("1.") == "1.0");
  CHECK(YamlScalar("1e3") == "1000.0");
  CHECK(YamlScalar("1.5E-3") == "0.0015");
  CHECK(YamlScalar("1_000.25") == "1000.25");
  CHECK(YamlScalar("0.1") == "0.1");
  CHECK(YamlScalar("6.02e23") == "6.02e+23");
  CHECK(YamlScalar("-0.0") == "-0.0");
  // Beyond double range, as Java's parseDouble and Jackson's generator.
  CHECK(YamlScalar("1e400") == R"("Infinity")");
  CHECK(YamlScalar("-1e400") == R"("-Infinity")");
  CHECK(YamlScalar("1e-400") == "0.0");
  CHECK(YamlScalar(std::string(400, '9') + ".0") == R"("Infinity")");
  CHECK(YamlScalar("0." + std::string(400, '0') + "1") == "0.0");
  // Everything else is a string: timestamps, merge keys, words, URLs.
  CHECK(YamlScalar("2001-12-14") == R"("2001-12-14")");
  CHECK(YamlScalar("2001-12-14t21:59:43.10-05:00") == R"("2001-12-14t21:59:43.10-05:00")");
  CHECK(YamlScalar("<<") == R"("<<")");
  CHECK(YamlScalar("=") == R"("=")");
  CHECK(YamlScalar("hello world") == R"("hello world")");
  CHECK(YamlScalar("http://x/y?z=1#f") == R"("http://x/y?z=1#f")");
  CHECK(YamlScalar(".") == R"(".")");
  CHECK(YamlScalar("+") == R"("+")");
  CHECK(YamlScalar("-x") == R"("-x")");
}

TEST_CASE("YAML quoted and block scalars are strings", "[lucene][yaml]") {
  CHECK(YamlScalar("'123'") == R"("123")");
  CHECK(YamlScalar("\"true\"") == R"("true")");
  CHECK(YamlScalar("\"\"") == R"("")");
  CHECK(YamlScalar("''") == R"("")");
  CHECK(YamlScalar("'null'") == R"("null")");
  CHECK(YamlScalar("'it''s'") == R"("it's")");
  // Double-quoted escapes, re-escaped for JSON.
  CHECK(YamlScalar(R"("tab\there \"q\" back\\slash \x01 \u00e9 \0")") ==
        "\"tab\\there \\\"q\\\" back\\\\slash \\u0001 \xc3\xa9 \\u0000\"");
  CHECK(YamlScalar(R"("\U0001F600")") == "\"\xf0\x9f\x98\x80\"");
  // Literal and folded blocks.
  CHECK(Yaml("--- |\n  line one\n  line two\n") == R"("line one\nline two\n")");
  CHECK(Yaml("--- >-\n  folded\n  text\n") == R"("folded text")");
  CHECK(Yaml("---\nk: |2\n    indented\n") == R"({"k":"  indented\n"})");
  // UTF-8 in keys and values, plain and quoted.
  CHECK(Yaml("---\nnäme: \"h\xc3\xa9llo \xe2\x9c\x93\"\n\xf0\x9f\x98\x80: plain \xe2\x82\xac\n") ==
        "{\"n\xc3\xa4me\":\"h\xc3\xa9llo \xe2\x9c\x93\",\"\xf0\x9f\x98\x80\":\"plain "
        "\xe2\x82\xac\"}");
}

TEST_CASE("YAML explicit tags act as Jackson's", "[lucene][yaml]") {
  CHECK(YamlScalar("!!str 123") == R"("123")");
  CHECK(YamlScalar("!!str") == R"("")");
  CHECK(YamlScalar("!!int \"42\"") == "42");
  CHECK(YamlScalar("!!int 0x10") == "16");
  CHECK(YamlScalar("!!int abc") == R"("abc")");  // Jackson: not a number, so its text
  // Leading '_' then '0': decimal for Jackson (its '0' test sees only the first
  // character), and JSON allows no leading zero.
  CHECK(YamlScalar("!!int ____0000") == "0");
  CHECK(YamlScalar("!!int -__00") == "0");
  CHECK(YamlScalar("!!int _012") == "12");
  CHECK(YamlScalar("!!int -_0_12") == "-12");
  CHECK(YamlScalar("!!int ''") == R"("")");
  CHECK(YamlScalar("!!float 1") == "1.0");
  CHECK(YamlScalar("!!float '2.5'") == "2.5");
  CHECK(YamlScalar("!!bool y") == "true");
  CHECK(YamlScalar("!!bool \"No\"") == "false");
  CHECK(YamlScalar("!!bool oN") == "true");
  CHECK(YamlScalar("!!bool maybe") == R"("maybe")");
  CHECK(YamlScalar("!!null x") == "null");
  CHECK(YamlScalar("!!timestamp 2001-01-01") == R"("2001-01-01")");
  CHECK(YamlScalar("!custom 5") == R"("5")");
  CHECK(YamlScalar("!<tag:yaml.org,2002:int> 7") == "7");
  // The non-specific tag "!" resolves like a plain scalar (SnakeYAML's rule).
  CHECK(YamlScalar("! 123") == "123");
  CHECK(YamlScalar("! \"123\"") == "123");
  // !!binary: base64 in, standard padded base64 out, line breaks ignored.
  CHECK(YamlScalar("!!binary aGVsbG8=") == R"("aGVsbG8=")");
  CHECK(Yaml("--- !!binary |\n  aGVs\n  bG8h\n") == R"("aGVsbG8h")");
  CHECK(YamlScalar("!!binary \"\"") == R"("")");
  // Tags on collections are ignored.
  CHECK(Yaml("--- !!map {a: !!seq [1], b: !!set {x, y}}") ==
        R"({"a":[1],"b":{"x":null,"y":null}})");
}

TEST_CASE("YAML aliases are their anchor's name, as Jackson reads them", "[lucene][yaml]") {
  CHECK(Yaml("---\n"
             "base: &b {x: 1}\n"
             "copy: *b\n"
             "list: [&s str, *s, *undefined]\n"
             "&k key: v\n"
             "merged:\n"
             "  <<: *b\n"
             "  y: 2\n") ==
        R"({"base":{"x":1},"copy":"b","list":["str","s","undefined"],"key":"v",)"
        R"("merged":{"<<":"b","y":2}})");
  // "Billion laughs": nine levels of nine aliases would expand to 10^9
  // strings; read as Jackson does, the output stays the size of the input.
  std::string laughs = "---\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    const char prev = static_cast<char>(c - 1);
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 9; ++i) laughs += std::string(i > 0 ? ", *" : "*") + prev;
    laughs += "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string json = Yaml(laughs);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(json.size() < 2 * laughs.size());
  CHECK(json.find(R"("j":["i","i","i","i","i","i","i","i","i"])") != std::string::npos);
  CHECK_NOTHROW(boost::json::parse(json));
}

TEST_CASE("Empty YAML documents", "[lucene][yaml]") {
  CHECK(Yaml("---") == "null");
  CHECK(Yaml("---\n") == "null");
  CHECK(Yaml("--- # only a comment\n") == "null");
  CHECK(Yaml("---\n...\n") == "null");
  CHECK(Yaml("--- {}") == "{}");
  CHECK(Yaml("--- []") == "[]");
  // No document at all is not a _source.
  ExpectDataLoss(YamlError(""));
  ExpectDataLoss(YamlError("# comment only\n"));
}

TEST_CASE("Malformed YAML is DataLoss naming the byte offset", "[lucene][yaml][corrupt]") {
  // libyaml counts characters; offsets are bytes: the second ':' of
  // "é: é:" is character 8 but byte 10.
  absl::Status status = YamlError("---\n\xc3\xa9: \xc3\xa9: [");
  ExpectDataLoss(status);
  CHECK(ErrorOffset(status) == 10);
  CHECK(std::string(status.message()).find("line 2, column 5") != std::string::npos);
  // A second document starts at byte 9.
  status = YamlError("---\na: 1\n---\nb: 2\n");
  ExpectDataLoss(status);
  CHECK(ErrorOffset(status) == 9);
  CHECK(std::string(status.message()).find("second YAML document") != std::string::npos);
  // Invalid UTF-8 (libyaml's reader reports bytes).
  status = YamlError("---\nab\xff: 1\n");
  ExpectDataLoss(status);
  CHECK(ErrorOffset(status) == 6);
  // Unclosed flow collections, bad indentation, tabs, bad escapes, NUL.
  for (const char* bad : {"---\nkey: [1, 2\n", "--- {a: 1\n", "---\na:\n  b: 1\n c: 2\n",
                          "---\na:\n\t- b\n", "--- \"\\q\"\n", "--- \"\\ud800\"\n",
                          "--- 'unterminated\n", "---\n- a\nb: c\n", "--- &a\n*a\n"}) {
    INFO(bad);
    ExpectDataLoss(YamlError(bad));
  }
  ExpectDataLoss(YamlError(std::string("--- a\0b", 7)));
  // What Jackson rejects: non-scalar and alias keys, unparseable floats,
  // malformed !!int/!!binary.
  for (const char* bad :
       {"---\n? [a]\n: 1\n", "--- {{a: 1}: 2}", "---\nx: &x 1\n*x : 2\n", "--- .inf", "--- -.Inf",
        "--- .nan", "--- 1:30.5", "--- ._", "--- !!int 0xZZ", "--- !!int 09", "--- !!int -",
        "--- !!int _", "--- !!float abc", "--- !!float .inf", "--- !!binary '!!!'"}) {
    INFO(bad);
    status = YamlError(bad);
    ExpectDataLoss(status);
    CHECK(ErrorOffset(status) >= 3);
  }
  status = YamlError("---\nv: .inf\n");
  CHECK(ErrorOffset(status) == 7);
  CHECK(std::string(status.message()).find(".inf") != std::string::npos);
}

TEST_CASE("YAML depth, size and number-length limits", "[lucene][yaml][corrupt]") {
  const int max = rfs::content::kMaxYamlDepth;
  const std::string deep = "--- " + std::string(max, '[') + std::string(max, ']');
  CHECK(Yaml(deep).size() == 2 * static_cast<size_t>(max));
  const absl::Status too_deep =
      YamlError("--- " + std::string(max + 1, '[') + std::string(max + 1, ']'));
  ExpectDataLoss(too_deep);
  CHECK(ErrorOffset(too_deep) == 4 + max);  // the first '[' past the limit
  std::string deep_block = "---\n";
  for (int i = 0; i <= max; ++i) deep_block += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  ExpectDataLoss(YamlError(deep_block));
  // Longer than kMaxYamlBytes: refused before parsing.
  std::vector<uint8_t> huge(rfs::content::kMaxYamlBytes + 1, ' ');
  std::string out;
  const absl::Status too_big = AppendYamlAsJson(huge, "_source of 7", out);
  ExpectDataLoss(too_big);
  CHECK(out.empty());
  // Number literals up to kMaxYamlNumberLength characters.
  const size_t n = rfs::content::kMaxYamlNumberLength;
  CHECK(YamlScalar(std::string(n, '7')) == std::string(n, '7'));
  const std::string hex = YamlScalar("0x" + std::string(n - 2, 'f'));
  CHECK(hex.size() > 1000);  // 998 hex digits are about 1202 decimal ones
  CHECK(hex.find_first_not_of("0123456789") == std::string::npos);
  ExpectDataLoss(YamlError("--- " + std::string(n + 1, '7')));
  ExpectDataLoss(YamlError("--- 0x" + std::string(n, 'f')));
}
