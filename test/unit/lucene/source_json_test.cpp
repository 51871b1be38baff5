// _source -> JSON: hand-built CBOR (RFC 8949 Appendix A examples and what
// Jackson's CBORGenerator writes), SMILE and JSON pass-through, and corrupt
// CBOR (every truncation, bad lengths, depth) as DataLoss with an offset.
#include "rfs/lucene/source_json.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace {

using rfs::lucene::AppendCborAsJson;
using rfs::lucene::AppendSourceAsJson;
using rfs::lucene::SourceFormat;

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
  const std::vector<uint8_t> yaml = {'-', '-', '-', '\n', 'a', ':', ' ', '1'};
  const absl::Status yaml_status = AppendSourceAsJson(yaml, SourceFormat::kYaml, out, "doc 9");
  CHECK(absl::IsUnimplemented(yaml_status));
  CHECK(std::string(yaml_status.message()).find("doc 9") != std::string::npos);
  CHECK(out == json);
  CHECK(absl::IsInvalidArgument(AppendSourceAsJson({}, SourceFormat::kNone, out)));
}
