// Elasticsearch's TSDB doc-values blocks (server/.../index/codec/tsdb/TSDBDocValuesEncoder.java,
// DocValuesForUtil.java, ForUtil.java).
#include <bit>
#include <span>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/terms_internal.hpp"
#include "lucene/codecs/tsdb_doc_values_internal.hpp"

namespace rfs::lucene::internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

// DocValuesForUtil.decode: 128 values of `bits` bits. Up to 24 bits, Lucene's ForUtil lanes of
// 8, 16 or 32 bits; 25 to 32, 64 longs each holding two values (the first 64 values in their
// high halves); 40, 48 and 56, each value in its own 5, 6 or 7 bytes; anything else, a long per
// value. Every word is little-endian.
absl::Status UnpackValues(ByteReader& in, int bits, TsdbBlock& out) {
  if (bits < 1 || bits > 64) return in.Error(StrCat("invalid bits per value ", bits));
  if (bits <= 24) {
    std::array<uint32_t, kTsdbBlockSize> values{};
    const int lane = bits <= 8 ? 8 : bits <= 16 ? 16 : 32;
    RFS_RETURN_IF_ERROR(UnpackForBlock(in, ByteOrder::kLittle, 64, lane, bits, values));
    for (int i = 0; i < kTsdbBlockSize; ++i) out[i] = values[i];
    return absl::OkStatus();
  }
  if (bits <= 32) {
    for (int i = 0; i < kTsdbBlockSize / 2; ++i) {
      RFS_ASSIGN_OR_RETURN(uint64_t word, in.ReadU64(ByteOrder::kLittle));
      out[i] = static_cast<int64_t>(word >> 32);
      out[i + kTsdbBlockSize / 2] = static_cast<int64_t>(word & 0xFFFFFFFFu);
    }
    return absl::OkStatus();
  }
  if (bits == 40 || bits == 48 || bits == 56) {
    const size_t width = static_cast<size_t>(bits / 8);
    for (auto& v : out) {
      RFS_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, in.ReadBytes(width));
      uint64_t value = 0;
      for (size_t b = 0; b < width; ++b) value |= uint64_t{bytes[b]} << (8 * b);
      v = static_cast<int64_t>(value);
    }
    return absl::OkStatus();
  }
  for (auto& v : out) {
    RFS_ASSIGN_OR_RETURN(uint64_t word, in.ReadU64(ByteOrder::kLittle));
    v = static_cast<int64_t>(word);
  }
  return absl::OkStatus();
}

// Java's long arithmetic wraps; C++'s signed arithmetic must not overflow.
int64_t Wrap(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace

absl::Status DecodeTsdbNumbers(ByteReader& in, TsdbBlock& out) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t token, in.ReadVInt());
  const int bits = static_cast<int>(token >> 3);
  if (bits > 64) return in.ErrorAt(at, StrCat("invalid block token ", token));
  if (bits > 0) {
    RFS_RETURN_IF_ERROR(UnpackValues(in, bits, out));
  } else {
    out.fill(0);
  }
  if ((token & 1) != 0) {  // every value was divided by gcd (written less 2)
    RFS_ASSIGN_OR_RETURN(uint64_t gcd, in.ReadVLong());
    for (auto& v : out) v = Wrap(static_cast<uint64_t>(v) * (gcd + 2));
  }
  if ((token & 2) != 0) {  // the minimum was taken off
    RFS_ASSIGN_OR_RETURN(int64_t min, in.ReadZLong());
    for (auto& v : out) v = Wrap(static_cast<uint64_t>(v) + static_cast<uint64_t>(min));
  }
  if ((token & 4) != 0) {  // deltas: the first value, then each value's difference to the last
    RFS_ASSIGN_OR_RETURN(int64_t first, in.ReadZLong());
    out[0] = Wrap(static_cast<uint64_t>(out[0]) + static_cast<uint64_t>(first));
    for (int i = 1; i < kTsdbBlockSize; ++i) {
      out[i] = Wrap(static_cast<uint64_t>(out[i]) + static_cast<uint64_t>(out[i - 1]));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeTsdbOrdinals(ByteReader& in, int bits_per_ord, TsdbBlock& out) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint64_t header, in.ReadVLong());
  // The encoding is the number of low 1 bits; the rest of the header is its first number.
  const int encoding = std::countr_one(header);
  const uint64_t payload = encoding >= 63 ? 0 : header >> (encoding + 1);
  switch (encoding) {
    case 0:  // one run
      out.fill(static_cast<int64_t>(payload));
      return absl::OkStatus();
    case 1: {  // two runs: the first `length` values, then the rest
      RFS_ASSIGN_OR_RETURN(uint32_t length, in.ReadVInt());
      RFS_ASSIGN_OR_RETURN(int64_t delta, in.ReadZLong());
      if (length > static_cast<uint32_t>(kTsdbBlockSize)) {
        return in.ErrorAt(
            at, StrCat("ordinal run of ", length, " values in a block of ", kTsdbBlockSize));
      }
      for (int i = 0; i < kTsdbBlockSize; ++i) {
        out[i] = static_cast<uint32_t>(i) < length ? static_cast<int64_t>(payload)
                                                   : Wrap(payload + static_cast<uint64_t>(delta));
      }
      return absl::OkStatus();
    }
    case 2:  // packed, each ordinal in bits_per_ord bits
      return UnpackValues(in, bits_per_ord, out);
    case 3: {  // a cycle of `payload` ordinals, repeated
      if (payload < 1 || payload > static_cast<uint64_t>(kTsdbBlockSize)) {
        return in.ErrorAt(at, StrCat("ordinal cycle of ", payload, " values"));
      }
      const int cycle = static_cast<int>(payload);
      for (int i = 0; i < cycle; ++i) {
        RFS_ASSIGN_OR_RETURN(uint64_t v, in.ReadVLong());
        out[i] = static_cast<int64_t>(v);
      }
      for (int i = cycle; i < kTsdbBlockSize; ++i) out[i] = out[i - cycle];
      return absl::OkStatus();
    }
    default:
      return in.ErrorAt(at, StrCat("invalid ordinal block header ", header));
  }
}

}  // namespace rfs::lucene::internal
