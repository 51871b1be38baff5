#include "rfs/snapshot/blob_envelope.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <zlib.h>

#include "rfs/core/base64.hpp"
#include "rfs/core/crc32.hpp"

#include "snapshot/compression_internal.hpp"
#include "support/corpus.hpp"
#include <zstd.h>

namespace {

namespace fs = std::filesystem;
using rfs::snapshot::DecodeMetadataBlob;
using rfs::snapshot::DecodeXContent;

std::vector<uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

void Append(std::vector<uint8_t>& out, std::span<const uint8_t> bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}

void Push(std::vector<uint8_t>& out, std::initializer_list<int> values) {
  for (int v : values) out.push_back(static_cast<uint8_t>(v));
}

void AppendBe32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(v >> shift);
}

// ChecksumBlobStoreFormat: codec header, body, footer with the CRC-32 of
// everything before the checksum (docs/formats.md A.3).
std::vector<uint8_t> Envelope(std::string_view codec, std::span<const uint8_t> body,
                              uint32_t version = 1) {
  std::vector<uint8_t> out;
  AppendBe32(out, 0x3FD76C17);
  out.push_back(static_cast<uint8_t>(codec.size()));
  Append(out, Bytes(codec));
  AppendBe32(out, version);
  Append(out, body);
  AppendBe32(out, 0xC02893E8);
  AppendBe32(out, 0);  // CRC-32 algorithm
  const uint32_t crc = rfs::core::Crc32(out);
  AppendBe32(out, 0);  // BE i64 checksum: high word, then the CRC
  AppendBe32(out, crc);
  return out;
}

// "DFL\0" + a raw DEFLATE stream, as ES DeflateCompressor writes it.
std::vector<uint8_t> Deflated(std::span<const uint8_t> content) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::vector<uint8_t> out(deflateBound(&zs, content.size()) + 4);
  std::memcpy(out.data(), "DFL\0", 4);
  zs.next_in = const_cast<Bytef*>(content.data());
  zs.avail_in = static_cast<uInt>(content.size());
  zs.next_out = out.data() + 4;
  zs.avail_out = static_cast<uInt>(out.size() - 4);
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(4 + zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A SMILE document {"snapshot":{"name":"rfs","version_id":7100299}}.
std::vector<uint8_t> SmileSnapshot() {
  std::vector<uint8_t> out = {0x3A, 0x29, 0x0A, 0x05, 0xFA, 0x87};
  Append(out, Bytes("snapshot"));
  out.push_back(0xFA);
  out.push_back(0x83);
  Append(out, Bytes("name"));
  out.push_back(0x42);
  Append(out, Bytes("rfs"));
  out.push_back(0x89);
  Append(out, Bytes("version_id"));
  // int32 7100299: zig-zag 14200598 as a SMILE VInt.
  Push(out, {0x24, 0x0D, 0x45, 0x3C, 0x96, 0xFB, 0xFB});
  return out;
}

const boost::json::value& ExpectedSnapshot() {
  static const boost::json::value value =
      boost::json::parse(R"({"snapshot":{"name":"rfs","version_id":7100299}})");
  return value;
}

// Hand-made LZF chunks (ning compress-lzf framing over liblzf blocks) for
// [{"k":"abcabcabcabc"},"xy","xy"].
std::vector<uint8_t> LzfJson() {
  std::vector<uint8_t> out;
  // Chunk 1, stored: "[".
  Push(out, {'Z', 'V', 0, 0, 1, '['});
  // Chunk 2, compressed to 20 bytes: literal run of 9, a back-reference of
  // 7 + 0 + 2 = 9 bytes at distance 3 (overlapping), literal run of 2.
  std::vector<uint8_t> block = {8};
  Append(block, Bytes(R"({"k":"abc)"));
  Push(block, {0xE0, 0x00, 0x02, 0x01, '"', '}'});
  Push(out, {'Z', 'V', 1, 0, 0, 0, 20});
  out[out.size() - 3] = static_cast<uint8_t>(block.size());
  Append(out, block);
  // Chunk 3, compressed to 11 bytes: literal 5, back-reference of 3 + 2 = 5
  // at distance 5, literal 1.
  block = {4};
  Append(block, Bytes(R"(,"xy")"));
  Push(block, {0x60, 0x04, 0x00, ']'});
  Push(out, {'Z', 'V', 1, 0, 0, 0, 11});
  out[out.size() - 3] = static_cast<uint8_t>(block.size());
  Append(out, block);
  return out;
}

void ExpectDataLoss(const absl::StatusOr<boost::json::value>& result,
                    std::initializer_list<std::string_view> fragments) {
  REQUIRE_FALSE(result.ok());
  const std::string message(result.status().message());
  INFO(message);
  CHECK(absl::IsDataLoss(result.status()));
  for (std::string_view fragment : fragments) {
    CHECK(message.find(fragment) != std::string::npos);
  }
}

std::vector<uint8_t> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The codec ChecksumBlobStoreFormat uses for a blob at `path` (docs/formats.md
// A.1), "" for ES 1.x and JSON blobs, or std::nullopt for other files.
std::optional<std::string> CodecFor(const fs::path& path) {
  const std::string name = path.filename().string();
  const std::string parent = path.parent_path().filename().string();
  const std::string grandparent = path.parent_path().parent_path().filename().string();
  const std::string great_grandparent =
      path.parent_path().parent_path().parent_path().filename().string();
  const bool dat = name.ends_with(".dat");
  if (name.starts_with("snap-") && dat) return "snapshot";
  if (name.starts_with("meta-") && dat) {
    return grandparent == "indices" ? "index-metadata" : "metadata";
  }
  if (name.starts_with("index-") && great_grandparent == "indices") {
    return "snapshots";
  }
  // ES 1.x: snapshot-<name>, metadata-<name> at every level.
  if (name.starts_with("snapshot-") || name.starts_with("metadata-")) return "";
  // Root RepositoryData: index-N (or ES 1.x/2.x "index") beside indices/.
  const bool root_index =
      name == "index" ||
      (name.starts_with("index-") && name.find_first_not_of("0123456789", 6) == std::string::npos);
  if (root_index && fs::is_directory(path.parent_path() / "indices")) return "";
  return std::nullopt;
}

fs::path FirstMatch(const fs::path& dir, std::string_view prefix) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with(prefix)) {
      return entry.path();
    }
  }
  FAIL("no " << prefix << "* in " << dir);
  return {};
}

}  // namespace

TEST_CASE("a codec-wrapped SMILE blob decodes", "[snapshot][envelope]") {
  const auto blob = Envelope("snapshot", SmileSnapshot());
  auto value = DecodeMetadataBlob(blob, "snap-x.dat", "snapshot");
  REQUIRE(value.ok());
  CHECK(*value == ExpectedSnapshot());
  // An empty expected codec accepts any name.
  CHECK(DecodeMetadataBlob(blob, "snap-x.dat", "").ok());

  SECTION("the codec name must match") {
    ExpectDataLoss(DecodeMetadataBlob(blob, "snap-x.dat", "index-metadata"),
                   {"snap-x.dat", "codec mismatch", "offset 4"});
  }
  SECTION("only version 1 is known") {
    const auto v2 = Envelope("snapshot", SmileSnapshot(), 2);
    auto result = DecodeMetadataBlob(v2, "snap-x.dat", "snapshot");
    CHECK(absl::IsUnimplemented(result.status()));
  }
  SECTION("a wrong checksum is DataLoss unless verification is off") {
    auto bad = blob;
    bad.back() ^= 0x01;
    ExpectDataLoss(DecodeMetadataBlob(bad, "snap-x.dat", "snapshot"),
                   {"snap-x.dat", "checksum mismatch", "offset " + std::to_string(bad.size() - 8)});
    auto unchecked = DecodeMetadataBlob(bad, "snap-x.dat", "snapshot",
                                        /*verify_checksum=*/false);
    REQUIRE(unchecked.ok());
    CHECK(*unchecked == ExpectedSnapshot());
  }
  SECTION("errors in the body carry blob offsets") {
    auto body = SmileSnapshot();
    const size_t int_token = body.size() - 7;
    REQUIRE(body[int_token] == 0x24);
    body[int_token] = 0xFE;  // a reserved token in value position
    const auto corrupt = Envelope("snapshot", body);
    // 17 = 4 magic + 1 + 8 name + 4 version.
    ExpectDataLoss(DecodeMetadataBlob(corrupt, "snap-x.dat", "snapshot"),
                   {"snap-x.dat", "0xFE", "offset " + std::to_string(17 + int_token)});
  }
  SECTION("a header that runs into the footer is DataLoss") {
    std::vector<uint8_t> tiny;
    AppendBe32(tiny, 0x3FD76C17);
    tiny.push_back(40);
    Append(tiny, Bytes("snapshot"));
    AppendBe32(tiny, 0xC02893E8);
    AppendBe32(tiny, 0);
    const uint32_t crc = rfs::core::Crc32(tiny);
    AppendBe32(tiny, 0);
    AppendBe32(tiny, crc);
    ExpectDataLoss(DecodeMetadataBlob(tiny, "t.dat", ""), {"t.dat", "past the end", "offset 4"});
  }
}

TEST_CASE("blobs without a codec header decode as plain XContent", "[snapshot][envelope]") {
  const auto json = Bytes(R"({"snapshots":["snapshot_v1","snapshot_v2"]})");
  auto value = DecodeMetadataBlob(json, "index", "");
  REQUIRE(value.ok());
  CHECK(value->at("snapshots").as_array().size() == 2);
  // SMILE with no envelope (the ES 1.x shape).
  auto smile = DecodeMetadataBlob(SmileSnapshot(), "snapshot-s", "snapshot");
  REQUIRE(smile.ok());
  CHECK(*smile == ExpectedSnapshot());
  ExpectDataLoss(DecodeMetadataBlob({}, "empty", ""), {"empty", "empty XContent body", "offset 0"});
  ExpectDataLoss(DecodeMetadataBlob(Bytes("\x3F\xD7\x6C"), "short", ""),
                 {"short", "unrecognised", "3f d7 6c", "offset 0"});
}

TEST_CASE("JSON bodies", "[snapshot][envelope]") {
  auto pretty = DecodeXContent(Bytes("\n  {\n  \"name\" : \"s\" }\n"), "j");
  REQUIRE(pretty.ok());
  CHECK(*pretty == boost::json::parse(R"({"name":"s"})"));
  CHECK(DecodeXContent(Bytes("[1,2]"), "j").ok());
  ExpectDataLoss(DecodeXContent(Bytes(R"({"a": [1,2,})"), "j.json", 100),
                 {"j.json", "invalid JSON", "offset 111"});
  ExpectDataLoss(DecodeXContent(Bytes(R"({"a":1} x)"), "j.json"),
                 {"unexpected bytes after the JSON value", "offset 8"});
  ExpectDataLoss(DecodeXContent(Bytes(R"({"a":)"), "j.json"), {"invalid JSON", "offset 5"});
  ExpectDataLoss(DecodeXContent(Bytes("{\"a\":\"\xFF\"}"), "j.json"), {"invalid JSON"});
  // Mappings nest deeper than boost's default limit of 32.
  std::string deep(100, '[');
  deep += std::string(100, ']');
  CHECK(DecodeXContent(Bytes(deep), "deep").ok());
  std::string too_deep(600, '[');
  too_deep += std::string(600, ']');
  ExpectDataLoss(DecodeXContent(Bytes(too_deep), "deep"), {"deep"});
}

TEST_CASE("DEFLATE bodies round-trip", "[snapshot][envelope]") {
  const auto compressed = Deflated(SmileSnapshot());
  auto direct = DecodeXContent(compressed, "snap.dat");
  REQUIRE(direct.ok());
  CHECK(*direct == ExpectedSnapshot());

  // ES 2.x+ with compress=true: codec header, then DFL\0.
  const auto blob = Envelope("snapshot", compressed);
  auto wrapped = DecodeMetadataBlob(blob, "snap.dat", "snapshot");
  REQUIRE(wrapped.ok());
  CHECK(*wrapped == ExpectedSnapshot());

  const auto json = Bytes(R"({"meta-data":{"version":4,"templates":{}}})");
  auto inflated_json = DecodeXContent(Deflated(json), "m.dat");
  REQUIRE(inflated_json.ok());
  CHECK(inflated_json->at("meta-data").at("version") == 4);

  SECTION("errors inside the inflated bytes say so") {
    auto body = SmileSnapshot();
    body[6] = 0xFF;  // inside the first key
    ExpectDataLoss(DecodeXContent(Deflated(body), "snap.dat", 17),
                   {"snap.dat (DEFLATE body at offset 17, inflated)", "offset 6"});
  }
  SECTION("a truncated stream is DataLoss at its end") {
    auto truncated = compressed;
    truncated.resize(truncated.size() - 3);
    ExpectDataLoss(DecodeXContent(truncated, "snap.dat", 17),
                   {"snap.dat", "truncated DEFLATE stream",
                    "offset " + std::to_string(17 + truncated.size())});
    ExpectDataLoss(DecodeXContent(Bytes(std::string_view("DFL\0", 4)), "e"),
                   {"truncated DEFLATE", "offset 4"});
  }
  SECTION("garbage is DataLoss") {
    auto garbage = Bytes(std::string_view("DFL\0\xFF\xFF\xFF\xFF", 8));
    ExpectDataLoss(DecodeXContent(garbage, "g.dat"), {"g.dat", "corrupt DEFLATE stream", "offset"});
  }
  SECTION("bytes after the stream are DataLoss") {
    auto trailing = compressed;
    trailing.push_back(0);
    ExpectDataLoss(DecodeXContent(trailing, "t.dat"),
                   {"1 trailing bytes after the DEFLATE stream",
                    "offset " + std::to_string(compressed.size())});
  }
  SECTION("inflated content must be SMILE or JSON") {
    ExpectDataLoss(DecodeXContent(Deflated(Bytes("hello")), "h.dat"),
                   {"neither SMILE nor JSON", "68 65 6c 6c 6f"});
    ExpectDataLoss(DecodeXContent(Deflated(Deflated(SmileSnapshot())), "h"),
                   {"neither SMILE nor JSON"});
  }
  SECTION("output is bounded") {
    const std::vector<uint8_t> zeros(100000, 0);
    const auto bomb = Deflated(zeros);
    const auto stream = std::span<const uint8_t>(bomb).subspan(4);
    auto ok = rfs::snapshot::internal::InflateRaw(stream, "z", 0, 100000);
    REQUIRE(ok.ok());
    CHECK(*ok == zeros);
    auto refused = rfs::snapshot::internal::InflateRaw(stream, "z", 0, 99999);
    REQUIRE_FALSE(refused.ok());
    CHECK(absl::IsDataLoss(refused.status()));
    CHECK(std::string(refused.status().message()).find("more than 99999") != std::string::npos);
  }
}

TEST_CASE("LZF bodies round-trip", "[snapshot][envelope]") {
  const auto lzf = LzfJson();
  auto raw = rfs::snapshot::internal::LzfDecompress(lzf, "l", 0, 1 << 20);
  REQUIRE(raw.ok());
  CHECK(std::string(raw->begin(), raw->end()) == R"([{"k":"abcabcabcabc"},"xy","xy"])");
  auto value = DecodeXContent(lzf, "snapshot-s");
  REQUIRE(value.ok());
  CHECK(*value == boost::json::parse(R"([{"k":"abcabcabcabc"},"xy","xy"])"));

  // A stored chunk holding SMILE.
  const auto smile = SmileSnapshot();
  std::vector<uint8_t> stored = {'Z', 'V', 0, 0, static_cast<uint8_t>(smile.size())};
  Append(stored, smile);
  auto from_smile = DecodeXContent(stored, "metadata-s");
  REQUIRE(from_smile.ok());
  CHECK(*from_smile == ExpectedSnapshot());

  SECTION("corrupt chunks are DataLoss at their offset") {
    auto bad_distance = lzf;
    bad_distance[6 + 7 + 10 + 2] = 0x10;  // distance 17 > 9 bytes written
    ExpectDataLoss(DecodeXContent(bad_distance, "l.dat"),
                   {"l.dat", "before the start of the chunk", "offset 23"});
    auto bad_length = lzf;
    bad_length[6 + 6] = 21;  // declared 21, block gives 20
    ExpectDataLoss(DecodeXContent(bad_length, "l.dat"),
                   {"expands to 20 bytes, its chunk header says 21", "offset 29"});
    auto bad_signature = lzf;
    bad_signature[6] = 'X';
    ExpectDataLoss(DecodeXContent(bad_signature, "l.dat"), {"bad LZF chunk signature", "offset 6"});
    auto bad_type = lzf;
    bad_type[2] = 2;
    ExpectDataLoss(DecodeXContent(bad_type, "l.dat"), {"unknown LZF chunk type 2", "offset 2"});
    for (size_t length = 2; length < lzf.size(); ++length) {
      const std::vector<uint8_t> cut(lzf.begin(), lzf.begin() + length);
      auto result = DecodeXContent(cut, "cut.dat");
      INFO("length " << length);
      REQUIRE_FALSE(result.ok());
      CHECK(absl::IsDataLoss(result.status()));
    }
    auto limited = rfs::snapshot::internal::LzfDecompress(lzf, "l", 0, 20);
    CHECK(absl::IsDataLoss(limited.status()));
  }
}

// OpenSearch's ZstdCompressor streams through ZstdOutputStream, so its frames carry no content
// size; the generated repositories cover zstd-jni's own output, these cover the edges.
std::vector<uint8_t> ZstdStream(std::string_view text, bool content_size) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  std::vector<uint8_t> out(ZSTD_compressBound(text.size()) + 64);
  ZSTD_inBuffer in{text.data(), text.size(), 0};
  ZSTD_outBuffer dst{out.data(), out.size(), 0};
  if (!content_size) {
    // Streaming with no pledged size: the frame header then has no content size.
    ZSTD_compressStream2(cctx, &dst, &in, ZSTD_e_continue);
  }
  size_t left;
  do {
    left = ZSTD_compressStream2(cctx, &dst, &in, ZSTD_e_end);
    REQUIRE_FALSE(ZSTD_isError(left));
  } while (left != 0);
  ZSTD_freeCCtx(cctx);
  out.resize(dst.pos);
  return out;
}

TEST_CASE("zstd bodies decode, with or without a content size", "[snapshot][envelope]") {
  std::string json = R"({"snapshot":{"name":"z","indices":[)";
  for (int i = 0; i < 2000; ++i) json += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
  json += "]}}";
  for (bool content_size : {false, true}) {
    INFO("content size " << content_size);
    std::vector<uint8_t> body = {'Z', 'S', 'T', 'D', 0};
    const auto frame = ZstdStream(json, content_size);
    body.insert(body.end(), frame.begin(), frame.end());
    auto value = DecodeXContent(body, "snap-z.dat", 17);
    REQUIRE(value.ok());
    CHECK(value->at("snapshot").at("name").as_string() == "z");
    CHECK(value->at("snapshot").at("indices").as_array().size() == 2000);

    // Two frames back to back decode as one body.
    std::vector<uint8_t> two = {'Z', 'S', 'T', 'D', 0};
    const auto a = ZstdStream(json.substr(0, 100), content_size);
    const auto b = ZstdStream(json.substr(100), content_size);
    two.insert(two.end(), a.begin(), a.end());
    two.insert(two.end(), b.begin(), b.end());
    auto joined = DecodeXContent(two, "snap-z2.dat");
    REQUIRE(joined.ok());
    CHECK(*joined == *value);

    for (size_t cut = 5; cut < body.size(); cut += std::max<size_t>(1, body.size() / 37)) {
      INFO("cut at " << cut);
      std::vector<uint8_t> truncated(body.begin(), body.begin() + cut);
      auto result = DecodeXContent(truncated, "snap-cut.dat", 17);
      REQUIRE_FALSE(result.ok());
      CHECK(absl::IsDataLoss(result.status()));
      CHECK(std::string(result.status().message()).find("snap-cut.dat") != std::string::npos);
    }
    std::vector<uint8_t> garbage = body;
    garbage.push_back(0x42);
    CHECK(absl::IsDataLoss(DecodeXContent(garbage, "g.dat").status()));
    auto limited = rfs::snapshot::internal::ZstdDecompressStream(frame, "l", 5, 100);
    REQUIRE_FALSE(limited.ok());
    CHECK(absl::IsDataLoss(limited.status()));
    CHECK(std::string(limited.status().message()).find("more than 100 bytes") != std::string::npos);
  }
  auto corrupt =
      DecodeXContent(Bytes(std::string_view("ZSTD\0\x28\xB5\x2F\xFD\xFF\xFF", 11)), "c.dat", 17);
  CHECK(absl::IsDataLoss(corrupt.status()));
  CHECK(std::string(corrupt.status().message()).find("c.dat") != std::string::npos);
}

TEST_CASE("every metadata blob in the corpus decodes", "[snapshot][corpus]") {
  const auto root = rfs::test::CorpusRoot("every metadata blob in the corpus");
  if (!root) return;
  std::map<std::string, int> by_codec;
  int decoded = 0;
  for (const auto& entry : fs::recursive_directory_iterator(*root)) {
    if (!entry.is_regular_file()) continue;
    const auto codec = CodecFor(entry.path());
    if (!codec) continue;
    const auto bytes = ReadFile(entry.path());
    const std::string name = fs::relative(entry.path(), *root).string();
    auto value = DecodeMetadataBlob(bytes, name, *codec);
    INFO(name << ": " << value.status().ToString());
    REQUIRE(value.ok());
    REQUIRE(value->is_object());
    ++decoded;
    ++by_codec[codec->empty() ? "(none)" : *codec];
    const auto& object = value->as_object();
    const fs::path parent = entry.path().parent_path();
    const bool at_root = fs::is_directory(parent / "indices");
    const bool es1_index_metadata = codec->empty() &&
                                    entry.path().filename().string().starts_with("snapshot-") &&
                                    parent.parent_path().filename() == "indices";
    if (*codec == "index-metadata" || es1_index_metadata) {
      // One key, the index name; settings are flat (docs/formats.md A.5).
      REQUIRE(object.size() == 1);
      const auto& index = object.begin()->value().as_object();
      CHECK(index.at("settings").as_object().contains("index.number_of_shards"));
    } else if ((*codec == "snapshot" ||
                entry.path().filename().string().starts_with("snapshot-")) &&
               at_root) {
      const auto& snapshot = object.at("snapshot").as_object();
      CHECK(snapshot.at("state") == "SUCCESS");
      CHECK(snapshot.at("version_id").is_int64());
    } else if (*codec == "metadata") {
      CHECK(object.contains("meta-data"));
    }
  }
  std::cout << "decoded " << decoded << " corpus blobs:";
  for (const auto& [codec, count] : by_codec) {
    std::cout << " " << codec << "=" << count;
  }
  std::cout << std::endl;
  CHECK(decoded >= 100);
  CHECK(by_codec["snapshots"] > 0);
  CHECK(by_codec["(none)"] > 0);
}

TEST_CASE("known facts of corpus blobs", "[snapshot][corpus]") {
  const auto root = rfs::test::CorpusRoot("known facts of corpus blobs");
  if (!root) return;
  const fs::path es710 = *root / "es-snapshots" / "ES_7_10_Single";
  const auto snap = ReadFile(FirstMatch(es710, "snap-"));
  auto info = DecodeMetadataBlob(snap, "snap", "snapshot");
  REQUIRE(info.ok());
  CHECK(info->at("snapshot").at("version_id") == 7100299);
  CHECK(info->at("snapshot").at("state") == "SUCCESS");
  CHECK(info->at("snapshot").at("include_global_state") == true);

  // Shard snapshots carry meta_hash as raw binary; for segments_N it is the
  // whole file, so its base64 decodes to a Lucene codec header.
  const fs::path index_dir = FirstMatch(es710 / "indices", "");
  const auto shard = ReadFile(FirstMatch(index_dir / "0", "snap-"));
  auto files = DecodeMetadataBlob(shard, "shard-snap", "snapshot");
  REQUIRE(files.ok());
  int segments = 0;
  for (const auto& file : files->at("files").as_array()) {
    if (!file.at("physical_name").as_string().starts_with("segments_")) {
      continue;
    }
    ++segments;
    const auto& hash = file.at("meta_hash").as_string();
    auto content = rfs::core::Base64Decode(std::string_view(hash.data(), hash.size()));
    REQUIRE(content.ok());
    REQUIRE(content->size() == static_cast<size_t>(file.at("length").as_int64()));
    CHECK(std::vector<uint8_t>(content->begin(), content->begin() + 4) ==
          std::vector<uint8_t>{0x3F, 0xD7, 0x6C, 0x17});
  }
  CHECK(segments == 1);

  // ES 1.x: plain JSON, no envelope; ES 2.x: envelope around SMILE.
  const fs::path matrix = *root / "snapshot-matrix-es1-es9-os1-os3";
  const auto es1 = ReadFile(matrix / "es1_nocomp" / "snapshot-snapshot_v1");
  CHECK(es1.front() == '{');
  auto es1_info = DecodeMetadataBlob(es1, "es1", "snapshot");
  REQUIRE(es1_info.ok());
  CHECK(es1_info->at("snapshot").at("version_id") == 1070699);
  const auto es2 = ReadFile(matrix / "es2_nocomp" / "snap-snapshot_v1.dat");
  CHECK(es2.front() == 0x3F);
  auto es2_info = DecodeMetadataBlob(es2, "es2", "snapshot");
  REQUIRE(es2_info.ok());
  CHECK(es2_info->at("snapshot").at("version_id") == 2040699);
  // OpenSearch ids have bit 0x08000000 set (docs/formats.md A.4).
  const auto os2 = ReadFile(FirstMatch(matrix / "os2_nocomp", "snap-"));
  auto os2_info = DecodeMetadataBlob(os2, "os2", "snapshot");
  REQUIRE(os2_info.ok());
  CHECK(os2_info->at("snapshot").at("version_id") == (2190299 ^ 0x08000000));
}

TEST_CASE("corrupt corpus blobs are DataLoss, never a crash", "[snapshot][corpus]") {
  const auto root = rfs::test::CorpusRoot("corrupt corpus blobs");
  if (!root) return;
  const fs::path es710 = *root / "es-snapshots" / "ES_7_10_Single";
  const fs::path index_dir = FirstMatch(es710 / "indices", "");
  const std::vector<std::pair<fs::path, std::string>> blobs = {
      {FirstMatch(es710, "snap-"), "snapshot"},
      {FirstMatch(index_dir, "meta-"), "index-metadata"},
      {FirstMatch(index_dir / "0", "snap-"), "snapshot"},
  };
  for (const auto& [path, codec] : blobs) {
    const auto original = ReadFile(path);
    const std::string name = path.filename().string();
    REQUIRE(DecodeMetadataBlob(original, name, codec).ok());
    INFO(name);
    for (size_t length = 0; length < original.size(); ++length) {
      const std::vector<uint8_t> cut(original.begin(), original.begin() + length);
      auto checked = DecodeMetadataBlob(cut, name, codec);
      INFO("truncated to " << length << ": " << checked.status().ToString());
      REQUIRE(absl::IsDataLoss(checked.status()));
      const std::string message(checked.status().message());
      CHECK(message.find(name) != std::string::npos);
      CHECK(message.find(" at offset ") != std::string::npos);
      (void)DecodeMetadataBlob(cut, name, codec, /*verify_checksum=*/false);
    }
    int unchecked_ok = 0;
    for (size_t at = 0; at < original.size(); ++at) {
      for (uint8_t mask : {0x01, 0x80, 0xFF}) {
        auto flipped = original;
        flipped[at] ^= mask;
        auto checked = DecodeMetadataBlob(flipped, name, codec);
        INFO("byte " << at << " ^ " << int{mask} << ": " << checked.status().ToString());
        REQUIRE(absl::IsDataLoss(checked.status()));
        const std::string message(checked.status().message());
        CHECK(message.find(name) != std::string::npos);
        CHECK(message.find(" at offset ") != std::string::npos);
        // Without the checksum: a value or a clean error.
        auto unchecked = DecodeMetadataBlob(flipped, name, codec,
                                            /*verify_checksum=*/false);
        if (unchecked.ok()) ++unchecked_ok;
      }
    }
    std::cout << name << ": " << unchecked_ok << " of " << 3 * original.size()
              << " flips still decode without the checksum" << std::endl;
  }
}
