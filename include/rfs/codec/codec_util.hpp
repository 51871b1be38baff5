// Lucene's codec header and footer (CodecUtil), shared by Lucene files and by
// Elasticsearch's checksummed blob envelope.
//
// Header: BE u32 magic 0x3FD76C17, String codec name, BE i32 version. An index
// header adds a 16-byte id and a one-byte-length suffix. Footer (last 16
// bytes): BE u32 0xC02893E8, BE i32 algorithm id 0, BE i64 CRC-32 of every byte
// before the checksum field. Header and footer are big-endian in every Lucene
// version (docs/formats.md C.1; Lucene CodecUtil.java).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rfs/core/byte_reader.hpp"
#include "rfs/core/random_access.hpp"

#include "absl/status/statusor.h"

namespace rfs::codec {

inline constexpr uint32_t kCodecMagic = 0x3FD76C17;
inline constexpr uint32_t kFooterMagic = ~kCodecMagic;  // 0xC02893E8
inline constexpr size_t kFooterLength = 16;

struct CodecHeader {
  std::string codec;
  int32_t version = 0;
};

struct IndexHeader {
  CodecHeader header;
  std::array<uint8_t, 16> id{};
  std::string suffix;
};

/// Reads a codec header at the cursor. When `expected_codec` is not empty the
/// name must match; the version must lie in [min_version, max_version]. A wrong
/// magic or name is DataLoss; a version out of range is Unimplemented naming
/// the codec and version.
absl::StatusOr<CodecHeader> ReadCodecHeader(core::ByteReader& in, std::string_view expected_codec,
                                            int32_t min_version, int32_t max_version);

/// Reads an index header (codec header, 16-byte id, suffix) at the cursor.
absl::StatusOr<IndexHeader> ReadIndexHeader(core::ByteReader& in, std::string_view expected_codec,
                                            int32_t min_version, int32_t max_version);

/// Checks the footer of a whole file: magic, algorithm id 0, zero high bits,
/// and that the stored CRC-32 equals the CRC of the bytes before it. Returns
/// the checksum. DataLoss names `source` and the offset of the bad field.
absl::StatusOr<uint32_t> VerifyFooter(std::span<const uint8_t> file, std::string_view source);

/// Reads the footer's stored checksum without recomputing the CRC (structure
/// still checked).
absl::StatusOr<uint32_t> ReadFooterChecksum(std::span<const uint8_t> file, std::string_view source);

/// VerifyFooter over a whole file, errors naming it: its bytes in place when it has them in
/// memory (ContiguousView), else read in full.
absl::StatusOr<uint32_t> VerifyFileFooter(const core::IRandomAccessFile& file);

}  // namespace rfs::codec
