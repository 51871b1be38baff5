// Decompressors for the compressed XContent bodies of snapshot metadata blobs
// (docs/formats.md A.3): raw DEFLATE after "DFL\0" (ES DeflateCompressor), LZF
// chunks ("ZV", ES 1.x LZFCompressor, the ning compress-lzf framing) and
// zstd after "ZSTD\0" (OpenSearch 2.10+ ZstdCompressor). Not part
// of the public API; used by blob_envelope.cpp and the tests.
//
// All treat their input as untrusted: output is capped at `max_output` bytes,
// and every error is DataLoss naming `source` and the absolute offset
// (base_offset + position in `compressed`). Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rfs::snapshot::internal {

/// Largest decompressed XContent body DecodeXContent accepts.
inline constexpr size_t kMaxDecompressedBody = size_t{1} << 30;  // 1 GiB

/// Inflates a raw DEFLATE stream (no zlib header; Java Deflater nowrap=true).
/// The stream must end (final block) exactly at the end of `compressed`; a
/// truncated stream, bad data, trailing bytes, or output beyond `max_output`
/// are DataLoss.
absl::StatusOr<std::vector<uint8_t>> InflateRaw(std::span<const uint8_t> compressed,
                                                std::string_view source, uint64_t base_offset,
                                                size_t max_output);

/// Decodes a sequence of LZF chunks filling all of `compressed`. Each chunk is
/// "ZV", a type byte, then either (type 0, stored) BE u16 length and the bytes,
/// or (type 1, compressed) BE u16 compressed length, BE u16 uncompressed
/// length and an LZF block (liblzf format) that must expand to exactly that
/// length.
absl::StatusOr<std::vector<uint8_t>> LzfDecompress(std::span<const uint8_t> compressed,
                                                   std::string_view source, uint64_t base_offset,
                                                   size_t max_output);

/// Decodes a zstd stream filling all of `compressed`: one or more frames, as
/// OpenSearch's ZstdCompressor writes them through zstd-jni's ZstdOutputStream
/// (libs/compress/src/main/java/org/opensearch/compress/ZstdCompressor.java: header
/// "ZSTD\0", level 3, frames without a content size). Truncation, corrupt
/// frames or output beyond `max_output` are DataLoss.
absl::StatusOr<std::vector<uint8_t>> ZstdDecompressStream(std::span<const uint8_t> compressed,
                                                          std::string_view source,
                                                          uint64_t base_offset, size_t max_output);

}  // namespace rfs::snapshot::internal
