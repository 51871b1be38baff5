#include "rfs/codec/codec_util.hpp"

#include <cstdio>

#include "rfs/core/crc32.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::codec {

using core::ByteReader;
using core::Crc32;
using core::DataLossAt;
using core::StrCat;

namespace {

std::string Hex32(uint32_t value) {
  char buffer[9];
  std::snprintf(buffer, sizeof(buffer), "%08X", value);
  return buffer;
}

}  // namespace

absl::StatusOr<CodecHeader> ReadCodecHeader(core::ByteReader& in, std::string_view expected_codec,
                                            int32_t min_version, int32_t max_version) {
  const size_t start = in.position();
  auto magic = in.ReadBeU32();
  if (!magic.ok()) return magic.status();
  if (*magic != kCodecMagic) {
    return in.ErrorAt(start, StrCat("codec header magic mismatch (found 0x", Hex32(*magic),
                                    ", expected 0x3FD76C17)"));
  }
  const size_t name_at = in.position();
  auto name = in.ReadString();
  if (!name.ok()) return name.status();
  if (!expected_codec.empty() && *name != expected_codec) {
    return in.ErrorAt(
        name_at, StrCat("codec mismatch: expected '", expected_codec, "', found '", *name, "'"));
  }
  auto version = in.ReadBeU32();
  if (!version.ok()) return version.status();
  const auto signed_version = static_cast<int32_t>(*version);
  if (signed_version < min_version || signed_version > max_version) {
    return absl::UnimplementedError(StrCat(in.source(), ": unsupported version ", signed_version,
                                           " of codec '", *name, "' (supported ", min_version, "..",
                                           max_version, ")"));
  }
  return CodecHeader{std::string(*name), signed_version};
}

absl::StatusOr<IndexHeader> ReadIndexHeader(core::ByteReader& in, std::string_view expected_codec,
                                            int32_t min_version, int32_t max_version) {
  auto header = ReadCodecHeader(in, expected_codec, min_version, max_version);
  if (!header.ok()) return header.status();
  IndexHeader out;
  out.header = std::move(header).value();
  auto id = in.ReadBytes(16);
  if (!id.ok()) return id.status();
  std::copy(id->begin(), id->end(), out.id.begin());
  auto suffix_length = in.ReadByte();
  if (!suffix_length.ok()) return suffix_length.status();
  auto suffix = in.ReadBytes(*suffix_length);
  if (!suffix.ok()) return suffix.status();
  out.suffix.assign(suffix->begin(), suffix->end());
  return out;
}

absl::StatusOr<uint32_t> ReadFooterChecksum(std::span<const uint8_t> file,
                                            std::string_view source) {
  if (file.size() < kFooterLength) {
    return DataLossAt(source, 0,
                      StrCat("file of ", file.size(), " bytes is too short for a codec footer"));
  }
  const size_t footer_at = file.size() - kFooterLength;
  ByteReader in(file, source);
  (void)in.Seek(footer_at);
  const uint32_t magic = in.ReadBeU32().value();
  if (magic != kFooterMagic) return in.ErrorAt(footer_at, "codec footer magic mismatch");
  const uint32_t algorithm = in.ReadBeU32().value();
  if (algorithm != 0) {
    return in.ErrorAt(footer_at + 4, StrCat("unknown checksum algorithm ", algorithm));
  }
  const uint64_t checksum = in.ReadBeU64().value();
  if ((checksum >> 32) != 0) {
    return in.ErrorAt(footer_at + 8, "illegal checksum (high 32 bits set)");
  }
  return static_cast<uint32_t>(checksum);
}

absl::StatusOr<uint32_t> VerifyFooter(std::span<const uint8_t> file, std::string_view source) {
  auto stored = ReadFooterChecksum(file, source);
  if (!stored.ok()) return stored.status();
  const uint32_t actual = Crc32(file.first(file.size() - 8));
  if (actual != *stored) {
    return DataLossAt(source, file.size() - 8,
                      StrCat("checksum mismatch (stored ", *stored, ", computed ", actual, ")"));
  }
  return actual;
}

absl::StatusOr<uint32_t> VerifyFileFooter(const core::IRandomAccessFile& file) {
  std::vector<uint8_t> buffer;
  std::span<const uint8_t> bytes;
  if (auto view = file.ContiguousView()) {
    bytes = *view;
  } else {
    auto read = core::ReadRange(file, 0, file.size());
    if (!read.ok()) return read.status();
    buffer = *std::move(read);
    bytes = buffer;
  }
  return VerifyFooter(bytes, file.name());
}

}  // namespace rfs::codec
