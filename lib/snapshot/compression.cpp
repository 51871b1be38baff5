// Raw DEFLATE (zlib), LZF and zstd decompression of metadata blob bodies; see
// compression_internal.hpp.
#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <new>

#include <zlib.h>

#include "rfs/core/byte_reader.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "snapshot/compression_internal.hpp"
#include <zstd.h>

namespace rfs::snapshot::internal {
namespace {

using rfs::core::DataLossAt;
using rfs::core::StrCat;

// zlib counts in uInt; feed and drain it in pieces no larger than this.
constexpr size_t kZlibStep = size_t{1} << 30;

absl::Status TooLarge(std::string_view source, uint64_t offset, std::string_view what,
                      size_t max_output) {
  return DataLossAt(source, offset, StrCat(what, " expands to more than ", max_output, " bytes"));
}

// Ends the zlib stream however InflateRaw returns.
struct InflateGuard {
  z_stream* stream;
  ~InflateGuard() { inflateEnd(stream); }
};

absl::StatusOr<std::vector<uint8_t>> InflateRawImpl(std::span<const uint8_t> compressed,
                                                    std::string_view source, uint64_t base_offset,
                                                    size_t max_output) {
  z_stream zs{};
  // Negative window bits: a raw stream without zlib header or trailer, as
  // Java's Deflater(level, nowrap=true) writes it (ES DeflateCompressor).
  if (inflateInit2(&zs, -15) != Z_OK) {
    return absl::ResourceExhaustedError(StrCat(source, ": cannot initialise zlib"));
  }
  InflateGuard guard{&zs};
  std::vector<uint8_t> out;
  size_t fed = 0;
  while (true) {
    if (zs.avail_in == 0 && fed < compressed.size()) {
      const size_t step = std::min(kZlibStep, compressed.size() - fed);
      zs.next_in = const_cast<Bytef*>(compressed.data() + fed);
      zs.avail_in = static_cast<uInt>(step);
      fed += step;
    }
    const size_t produced = zs.total_out;
    if (produced == out.size()) {
      // Grow geometrically, but never past max_output + 1: one byte more
      // than allowed is enough to know the stream is too large.
      const size_t limit = max_output == SIZE_MAX ? max_output : max_output + 1;
      const size_t wanted = std::max<size_t>({4096, out.size() * 2, compressed.size() * 4});
      out.resize(std::min(limit, wanted));
      if (out.size() == produced) {
        return TooLarge(source, base_offset + zs.total_in, "DEFLATE stream", max_output);
      }
    }
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(std::min(kZlibStep, out.size() - produced));
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (zs.total_out > max_output) {
      return TooLarge(source, base_offset + zs.total_in, "DEFLATE stream", max_output);
    }
    if (rc == Z_STREAM_END) break;
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_out == 0) continue;  // grow and retry
    if (rc == Z_BUF_ERROR) {
      return DataLossAt(source, base_offset + zs.total_in,
                        "truncated DEFLATE stream (no final block)");
    }
    if (rc == Z_MEM_ERROR) {
      return absl::ResourceExhaustedError(StrCat(source, ": out of memory inflating"));
    }
    return DataLossAt(
        source, base_offset + zs.total_in,
        StrCat("corrupt DEFLATE stream (", zs.msg != nullptr ? zs.msg : "zlib error", ")"));
  }
  if (zs.total_in != compressed.size()) {
    return DataLossAt(
        source, base_offset + zs.total_in,
        StrCat(compressed.size() - zs.total_in, " trailing bytes after the DEFLATE stream"));
  }
  out.resize(zs.total_out);
  return out;
}

// One LZF block (liblzf lzf_decompress format) into `out`, which has exactly
// the declared uncompressed size. `block_offset` is the block's absolute
// offset for errors.
absl::Status LzfDecodeBlock(std::span<const uint8_t> block, std::span<uint8_t> out,
                            std::string_view source, uint64_t block_offset) {
  size_t ip = 0;
  size_t op = 0;
  while (ip < block.size()) {
    const size_t at = ip;
    const uint8_t control = block[ip++];
    if (control < 32) {
      // Literal run of control + 1 bytes.
      const size_t run = size_t{control} + 1;
      if (run > block.size() - ip) {
        return DataLossAt(source, block_offset + at, "LZF literal run past the end of the block");
      }
      if (run > out.size() - op) {
        return DataLossAt(source, block_offset + at,
                          "LZF block expands beyond its declared length");
      }
      std::memcpy(out.data() + op, block.data() + ip, run);
      ip += run;
      op += run;
      continue;
    }
    // Back-reference: length in the top 3 bits (7 = one more length byte),
    // distance - 1 in the low 5 bits and the next byte; copies length + 2.
    size_t length = control >> 5;
    if (length == 7) {
      if (ip >= block.size()) {
        return DataLossAt(source, block_offset + at, "truncated LZF back-reference");
      }
      length += block[ip++];
    }
    if (ip >= block.size()) {
      return DataLossAt(source, block_offset + at, "truncated LZF back-reference");
    }
    const size_t distance = ((size_t{control} & 0x1F) << 8) + block[ip++] + 1;
    length += 2;
    if (distance > op) {
      return DataLossAt(source, block_offset + at,
                        "LZF back-reference before the start of the chunk");
    }
    if (length > out.size() - op) {
      return DataLossAt(source, block_offset + at, "LZF block expands beyond its declared length");
    }
    // Byte by byte: the source may overlap the bytes being written.
    for (size_t k = 0; k < length; ++k, ++op) out[op] = out[op - distance];
  }
  if (op != out.size()) {
    return DataLossAt(
        source, block_offset + block.size(),
        StrCat("LZF block expands to ", op, " bytes, its chunk header says ", out.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> InflateRaw(std::span<const uint8_t> compressed,
                                                std::string_view source, uint64_t base_offset,
                                                size_t max_output) {
  try {
    return InflateRawImpl(compressed, source, base_offset, max_output);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(StrCat(source, ": out of memory inflating"));
  }
}

absl::StatusOr<std::vector<uint8_t>> LzfDecompress(std::span<const uint8_t> compressed,
                                                   std::string_view source, uint64_t base_offset,
                                                   size_t max_output) {
  rfs::core::ByteReader in(compressed, source, base_offset);
  std::vector<uint8_t> out;
  if (in.at_end()) return in.Error("empty LZF stream");
  try {
    while (!in.at_end()) {
      const size_t chunk_at = in.position();
      RFS_ASSIGN_OR_RETURN(const auto signature, in.ReadBytes(2));
      if (signature[0] != 'Z' || signature[1] != 'V') {
        return in.ErrorAt(chunk_at, "bad LZF chunk signature (expected ZV)");
      }
      RFS_ASSIGN_OR_RETURN(const uint8_t type, in.ReadByte());
      if (type > 1) {
        return in.ErrorAt(chunk_at + 2, StrCat("unknown LZF chunk type ", int{type}));
      }
      RFS_ASSIGN_OR_RETURN(const uint16_t stored_length, in.ReadBeU16());
      uint16_t length = stored_length;
      if (type == 1) {
        RFS_ASSIGN_OR_RETURN(length, in.ReadBeU16());
      }
      if (length > max_output - out.size()) {
        return TooLarge(source, base_offset + chunk_at, "LZF stream", max_output);
      }
      const uint64_t block_offset = in.source_offset();
      RFS_ASSIGN_OR_RETURN(const auto block, in.ReadBytes(stored_length));
      const size_t start = out.size();
      if (type == 0) {
        out.insert(out.end(), block.begin(), block.end());
        continue;
      }
      out.resize(start + length);
      RFS_RETURN_IF_ERROR(
          LzfDecodeBlock(block, std::span<uint8_t>(out).subspan(start), source, block_offset));
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(StrCat(source, ": out of memory decompressing LZF"));
  }
  return out;
}

absl::StatusOr<std::vector<uint8_t>> ZstdDecompressStream(std::span<const uint8_t> compressed,
                                                          std::string_view source,
                                                          uint64_t base_offset, size_t max_output) {
  // OpenSearch ZstdCompressor writes through ZstdOutputStream: one or more
  // frames whose content size may be absent, so the output grows as it
  // comes, capped at max_output (+1 byte to tell "exactly max" from "more").
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> stream(ZSTD_createDStream(),
                                                                  ZSTD_freeDStream);
  if (stream == nullptr) {
    return absl::ResourceExhaustedError(StrCat(source, ": cannot allocate a zstd stream"));
  }
  if (compressed.empty()) {
    return DataLossAt(source, base_offset, "empty zstd stream");
  }
  std::vector<uint8_t> out;
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  size_t produced = 0;
  size_t hint = 1;  // 0 once the last frame is complete
  const size_t limit = max_output == SIZE_MAX ? max_output : max_output + 1;
  while (in.pos < in.size || hint != 0) {
    if (produced == out.size()) {
      const size_t wanted = std::max<size_t>({4096, out.size() * 2, compressed.size() * 4});
      out.resize(std::min(limit, wanted));
      if (out.size() == produced) {
        return TooLarge(source, base_offset + in.pos, "zstd stream", max_output);
      }
    }
    ZSTD_outBuffer dst{out.data(), out.size(), produced};
    const size_t before_in = in.pos;
    hint = ZSTD_decompressStream(stream.get(), &dst, &in);
    if (ZSTD_isError(hint)) {
      return DataLossAt(source, base_offset + before_in,
                        StrCat("corrupt zstd stream (", ZSTD_getErrorName(hint), ")"));
    }
    const bool progressed = dst.pos != produced || in.pos != before_in;
    produced = dst.pos;
    if (produced > max_output) {
      return TooLarge(source, base_offset + in.pos, "zstd stream", max_output);
    }
    if (in.pos == in.size && hint != 0 && produced < out.size() && !progressed) {
      return DataLossAt(source, base_offset + in.pos, "truncated zstd stream (frame not finished)");
    }
  }
  out.resize(produced);
  return out;
}

}  // namespace rfs::snapshot::internal
