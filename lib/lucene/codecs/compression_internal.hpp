// Block decompressors for stored fields (docs/formats.md C.8): Lucene's LZ4 block
// format, raw DEFLATE (zlib) and zstd frames (libzstd, for Elasticsearch's
// and OpenSearch's zstd stored fields), with the block layouts built on top
// of them in stored_fields.cpp.
//
// Why a hand-written LZ4 decoder instead of liblz4: Lucene50 BEST_SPEED
// stores no compressed length, so the decoder must stop after producing the
// expected bytes and report how much input it consumed (C.8.1), which the
// safe liblz4 API cannot do; and Lucene's compressor may start its last match
// closer to the end of the block than liblz4's full-block decoder accepts
// (liblz4 requires MFLIMIT = 12 bytes of trailing literals room; Lucene's
// LZ4.java only keeps LAST_LITERALS = 5). Every read and write here is bounds
// checked; matches never reach before the start of the allowed history.
//
// Internal to rfs::lucene. Inflater and ZstdDecoder are not thread-safe (one
// per reader).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "rfs/core/byte_reader.hpp"

#include "absl/status/status.h"

namespace rfs::lucene::internal {

/// Bytes of writable slack every LZ4 output buffer must have past the end of
/// the decoded data, so literal and match copies can run in 16-byte steps.
inline constexpr size_t kLz4Slack = 32;

/// Decodes one LZ4 block from `in` (advancing it past exactly the consumed
/// bytes) into `buf[out_pos, out_pos + out_len)`. Matches may reach back to
/// `buf[history_start]` (a preset dictionary sits in buf[history_start,
/// out_pos)). `buf` must extend at least kLz4Slack bytes past out_pos +
/// out_len. DataLoss (naming in's source and offset) on malformed input.
absl::Status Lz4Decompress(core::ByteReader& in, std::span<uint8_t> buf, size_t history_start,
                           size_t out_pos, size_t out_len);

/// Decodes two LZ4 blocks at once, each as Lz4Decompress would with history_start 0, their
/// sequences interleaved (a sequence waits on loads of the one before it; two blocks' waits
/// overlap: about a fifth faster on Lucene's blocks of JSON). Each reader must hold exactly its
/// block; each buffer, apart from the other and from the input, must extend kLz4Slack bytes
/// past its output. True with both decoded and both readers at their ends; false when either
/// block is malformed or longer than its output, the readers unmoved (decode each alone for the
/// error).
bool Lz4DecompressPair(core::ByteReader& in_a, std::span<uint8_t> buf_a, size_t out_pos_a,
                       size_t out_len_a, core::ByteReader& in_b, std::span<uint8_t> buf_b,
                       size_t out_pos_b, size_t out_len_b);

/// Raw DEFLATE (windowBits -15, as Java's Deflater(nowrap = true)).
class Inflater {
 public:
  Inflater();
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  /// Inflates all of `compressed` into exactly `out` (its size is the
  /// expected length), with `dictionary` preset when not empty. DataLoss
  /// naming `source` and `offset` (of the compressed bytes) otherwise.
  absl::Status Inflate(std::span<const uint8_t> compressed, std::span<uint8_t> out,
                       std::span<const uint8_t> dictionary, std::string_view source,
                       uint64_t offset);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// zstd frames, as zstd-jni writes them for Elasticsearch and OpenSearch.
/// The decompression context is created on first use, so readers of other
/// formats never pay for it.
class ZstdDecoder {
 public:
  ZstdDecoder();
  ~ZstdDecoder();
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;

  /// Decompresses all frames of `compressed` into exactly `out` (its size is
  /// the expected length). A non-empty `dictionary` is loaded the way
  /// zstd-jni's ZstdDictDecompress loads it (ZSTD_createDDict: a zstd
  /// dictionary when it starts with the dictionary magic, raw content
  /// otherwise). DataLoss naming `source` and `offset` on corrupt frames or
  /// any other length.
  absl::Status Decompress(std::span<const uint8_t> compressed, std::span<uint8_t> out,
                          std::span<const uint8_t> dictionary, std::string_view source,
                          uint64_t offset);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace rfs::lucene::internal
