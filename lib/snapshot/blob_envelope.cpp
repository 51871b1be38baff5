// Metadata blob envelope and XContent body detection (docs/formats.md A.3).
#include "rfs/snapshot/blob_envelope.hpp"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <boost/json/parser.hpp>

#include "rfs/codec/codec_util.hpp"
#include "rfs/content/smile.hpp"
#include "rfs/core/byte_reader.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "snapshot/compression_internal.hpp"

namespace rfs::snapshot {
namespace {

using rfs::core::DataLossAt;
using rfs::core::StrCat;

// Body markers: ES DeflateCompressor HEADER, OpenSearch ZstdCompressor header,
// and the LZF chunk signature of ES 1.x's LZFCompressor.
constexpr uint8_t kDeflateMarker[] = {'D', 'F', 'L', 0};
constexpr uint8_t kZstdMarker[] = {'Z', 'S', 'T', 'D', 0};
constexpr uint8_t kLzfMarker[] = {'Z', 'V'};

// ChecksumBlobStoreFormat writes version 1 in every ES/OS release since 2.x.
constexpr int32_t kEnvelopeVersion = 1;

template <size_t N>
bool StartsWith(std::span<const uint8_t> bytes, const uint8_t (&prefix)[N]) {
  return bytes.size() >= N && std::memcmp(bytes.data(), prefix, N) == 0;
}

bool IsJsonWhitespace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

std::string FirstBytesHex(std::span<const uint8_t> bytes) {
  constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
    if (i > 0) out += ' ';
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xF];
  }
  return out;
}

absl::StatusOr<boost::json::value> ParseJson(std::span<const uint8_t> body, std::string_view source,
                                             uint64_t base_offset) {
  boost::json::parse_options options;
  // Mappings nest deeper than boost's default of 32; match the SMILE limit.
  options.max_depth = content::kMaxSmileDepth;
  boost::json::parser parser({}, options);
  boost::system::error_code ec;
  const size_t consumed =
      parser.write_some(reinterpret_cast<const char*>(body.data()), body.size(), ec);
  if (ec) {
    return DataLossAt(source, base_offset + consumed, StrCat("invalid JSON (", ec.message(), ")"));
  }
  if (consumed != body.size()) {
    return DataLossAt(source, base_offset + consumed, "unexpected bytes after the JSON value");
  }
  return parser.release();
}

enum class BodyForm { kSmile, kJson, kDeflate, kLzf, kZstd, kUnknown };

BodyForm DetectForm(std::span<const uint8_t> body) {
  if (content::LooksLikeSmile(body)) return BodyForm::kSmile;
  if (StartsWith(body, kDeflateMarker)) return BodyForm::kDeflate;
  if (StartsWith(body, kZstdMarker)) return BodyForm::kZstd;
  if (StartsWith(body, kLzfMarker)) return BodyForm::kLzf;
  size_t i = 0;
  while (i < body.size() && IsJsonWhitespace(body[i])) ++i;
  if (i < body.size() && (body[i] == '{' || body[i] == '[')) {
    return BodyForm::kJson;
  }
  return BodyForm::kUnknown;
}

absl::StatusOr<boost::json::value> DecodeBody(std::span<const uint8_t> body,
                                              std::string_view source, uint64_t base_offset,
                                              bool decompressed) {
  const BodyForm form = DetectForm(body);
  if (decompressed && form != BodyForm::kSmile && form != BodyForm::kJson) {
    return DataLossAt(source, base_offset,
                      StrCat("decompressed body is neither SMILE nor JSON "
                             "(starts with ",
                             FirstBytesHex(body), ")"));
  }
  std::string inner_source;
  absl::StatusOr<std::vector<uint8_t>> inflated;
  switch (form) {
    case BodyForm::kSmile:
      return content::DecodeSmile(body, source, base_offset);
    case BodyForm::kJson:
      return ParseJson(body, source, base_offset);
    case BodyForm::kZstd:
      inflated = internal::ZstdDecompressStream(body.subspan(sizeof(kZstdMarker)), source,
                                                base_offset + sizeof(kZstdMarker),
                                                internal::kMaxDecompressedBody);
      inner_source = StrCat(source, " (zstd body at offset ", base_offset, ", decompressed)");
      break;
    case BodyForm::kDeflate:
      inflated = internal::InflateRaw(body.subspan(sizeof(kDeflateMarker)), source,
                                      base_offset + sizeof(kDeflateMarker),
                                      internal::kMaxDecompressedBody);
      inner_source = StrCat(source, " (DEFLATE body at offset ", base_offset, ", inflated)");
      break;
    case BodyForm::kLzf:
      inflated = internal::LzfDecompress(body, source, base_offset, internal::kMaxDecompressedBody);
      inner_source = StrCat(source, " (LZF body at offset ", base_offset, ", decompressed)");
      break;
    case BodyForm::kUnknown:
      return DataLossAt(source, base_offset,
                        body.empty() ? std::string("empty XContent body")
                                     : StrCat("unrecognised XContent body (starts with ",
                                              FirstBytesHex(body), ")"));
  }
  if (!inflated.ok()) return inflated.status();
  // Offsets inside the decompressed bytes are reported against inner_source.
  return DecodeBody(*inflated, inner_source, 0, /*decompressed=*/true);
}

}  // namespace

absl::StatusOr<boost::json::value> DecodeXContent(std::span<const uint8_t> body,
                                                  std::string_view source, uint64_t base_offset) {
  try {
    return DecodeBody(body, source, base_offset, /*decompressed=*/false);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(StrCat(source, ": out of memory decoding XContent"));
  }
}

absl::StatusOr<boost::json::value> DecodeMetadataBlob(std::span<const uint8_t> blob,
                                                      std::string_view blob_name,
                                                      std::string_view expected_codec,
                                                      bool verify_checksum) {
  rfs::core::ByteReader probe(blob, blob_name);
  const auto magic = probe.ReadBeU32();
  if (!magic.ok() || *magic != rfs::codec::kCodecMagic) {
    // No envelope: ES 1.x blobs and JSON index files.
    return DecodeXContent(blob, blob_name, 0);
  }
  // The checksum first, so that corruption anywhere is reported as such
  // rather than as whatever the damaged header or body happens to look like.
  if (verify_checksum) {
    RFS_RETURN_IF_ERROR(rfs::codec::VerifyFooter(blob, blob_name).status());
  } else {
    RFS_RETURN_IF_ERROR(rfs::codec::ReadFooterChecksum(blob, blob_name).status());
  }
  // The header may not run into the footer.
  rfs::core::ByteReader in(blob.first(blob.size() - rfs::codec::kFooterLength), blob_name);
  RFS_RETURN_IF_ERROR(
      rfs::codec::ReadCodecHeader(in, expected_codec, kEnvelopeVersion, kEnvelopeVersion).status());
  return DecodeXContent(in.data().subspan(in.position()), blob_name, in.position());
}

}  // namespace rfs::snapshot
