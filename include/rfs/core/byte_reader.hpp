// ByteReader: a bounds-checked cursor over untrusted bytes.
//
// Every multi-byte read checks the remaining length first and fails with
// absl::DataLossError naming the source (blob or file name) and the absolute
// offset, so corrupt or truncated input never reads out of bounds. Fixed-width
// integers come in both byte orders because Lucene <= 8 formats are big-endian
// and Lucene >= 9 formats little-endian (docs/formats.md C.1). Variable-length
// integers follow Lucene's DataInput (7 bits per byte, least significant group
// first).
//
// A ByteReader does not own its bytes: the viewed memory must outlive it. It is
// a small value type; copy it to fork a cursor. Not thread-safe (one reader per
// thread; copies are cheap).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::core {

enum class ByteOrder { kBig, kLittle };

// Fails the enclosing read when fewer than n bytes remain. Local to this
// header.
#define RFS_CORE_CHECK_AVAILABLE_(n)                                                          \
  if ((n) > remaining()) [[unlikely]] {                                                       \
    return ErrorAt(pos_,                                                                      \
                   StrCat("read of ", (n), " bytes past the end (size ", data_.size(), ")")); \
  }

class ByteReader {
 public:
  /// Views `data`, naming it `source` in errors. `base_offset` is the offset of
  /// data[0] within the named source, so a reader over a slice still reports
  /// file offsets.
  ByteReader(std::span<const uint8_t> data, std::string_view source, uint64_t base_offset = 0)
      : data_(data), source_(source), base_offset_(base_offset) {}

  size_t position() const { return pos_; }
  size_t size() const { return data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ == data_.size(); }
  std::string_view source() const { return source_; }
  /// Offset of the cursor within the named source.
  uint64_t source_offset() const { return base_offset_ + pos_; }
  std::span<const uint8_t> data() const { return data_; }

  /// A DataLoss error at the cursor (or at `position`), naming the source.
  absl::Status Error(std::string_view what) const { return ErrorAt(pos_, what); }
  absl::Status ErrorAt(size_t position, std::string_view what) const {
    return DataLossAt(source_, base_offset_ + position, what);
  }

  absl::Status Seek(size_t position) {
    if (position > data_.size()) {
      return ErrorAt(pos_,
                     StrCat("seek to ", position, " beyond the end (size ", data_.size(), ")"));
    }
    pos_ = position;
    return absl::OkStatus();
  }

  absl::Status Skip(size_t n) {
    RFS_CORE_CHECK_AVAILABLE_(n);
    pos_ += n;
    return absl::OkStatus();
  }

  absl::StatusOr<uint8_t> ReadByte() {
    RFS_CORE_CHECK_AVAILABLE_(1);
    return data_[pos_++];
  }

  absl::StatusOr<std::span<const uint8_t>> ReadBytes(size_t n) {
    RFS_CORE_CHECK_AVAILABLE_(n);
    auto out = data_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  absl::StatusOr<uint16_t> ReadU16(ByteOrder order) { return ReadFixed<uint16_t>(order); }
  absl::StatusOr<uint32_t> ReadU32(ByteOrder order) { return ReadFixed<uint32_t>(order); }
  absl::StatusOr<uint64_t> ReadU64(ByteOrder order) { return ReadFixed<uint64_t>(order); }
  absl::StatusOr<uint16_t> ReadBeU16() { return ReadFixed<uint16_t>(ByteOrder::kBig); }
  absl::StatusOr<uint32_t> ReadBeU32() { return ReadFixed<uint32_t>(ByteOrder::kBig); }
  absl::StatusOr<uint64_t> ReadBeU64() { return ReadFixed<uint64_t>(ByteOrder::kBig); }
  absl::StatusOr<uint16_t> ReadLeU16() { return ReadFixed<uint16_t>(ByteOrder::kLittle); }
  absl::StatusOr<uint32_t> ReadLeU32() { return ReadFixed<uint32_t>(ByteOrder::kLittle); }
  absl::StatusOr<uint64_t> ReadLeU64() { return ReadFixed<uint64_t>(ByteOrder::kLittle); }

  /// Lucene VInt: 1-5 bytes; the fifth byte may carry only the top 4 bits.
  absl::StatusOr<uint32_t> ReadVInt() {
    const size_t start = pos_;
    uint32_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (pos_ >= data_.size()) return ErrorAt(start, "truncated VInt");
      const uint8_t b = data_[pos_++];
      if (shift == 28 && (b & 0xF0) != 0) return ErrorAt(start, "invalid VInt (too many bits)");
      value |= static_cast<uint32_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return value;
    }
    return ErrorAt(start, "invalid VInt (too many bits)");
  }

  /// Lucene VLong: 1-9 bytes, never negative (readVLong(false)).
  absl::StatusOr<uint64_t> ReadVLong() { return ReadVLongImpl(/*allow_negative=*/false); }

  /// Lucene ZInt / ZLong: zig-zag encoded VInt / VLong (ZLong may use 10
  /// bytes).
  absl::StatusOr<int32_t> ReadZInt() {
    auto raw = ReadVInt();
    if (!raw.ok()) return raw.status();
    return static_cast<int32_t>((*raw >> 1) ^ (~(*raw & 1) + 1));
  }
  absl::StatusOr<int64_t> ReadZLong() {
    auto raw = ReadVLongImpl(/*allow_negative=*/true);
    if (!raw.ok()) return raw.status();
    return static_cast<int64_t>((*raw >> 1) ^ (~(*raw & 1) + 1));
  }

  /// Lucene String: VInt byte length, then that many UTF-8 bytes (not validated
  /// here).
  absl::StatusOr<std::string_view> ReadString() {
    const size_t start = pos_;
    auto length = ReadVInt();
    if (!length.ok()) return length.status();
    if (*length > remaining()) {
      return ErrorAt(start, StrCat("string of ", *length, " bytes runs past the end (", remaining(),
                                   " left)"));
    }
    std::string_view out(reinterpret_cast<const char*>(data_.data() + pos_), *length);
    pos_ += *length;
    return out;
  }

 private:
  template <typename T>
  absl::StatusOr<T> ReadFixed(ByteOrder order) {
    RFS_CORE_CHECK_AVAILABLE_(sizeof(T));
    T value;
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    const bool host_is_big = std::endian::native == std::endian::big;
    if ((order == ByteOrder::kBig) != host_is_big) value = ByteSwap(value);
    return value;
  }

  template <typename T>
  static T ByteSwap(T v) {
    if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(v));
    if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(v));
    if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(v));
  }

  absl::StatusOr<uint64_t> ReadVLongImpl(bool allow_negative) {
    const size_t start = pos_;
    uint64_t value = 0;
    const int max_bytes = allow_negative ? 10 : 9;
    for (int i = 0; i < max_bytes; ++i) {
      if (pos_ >= data_.size()) return ErrorAt(start, "truncated VLong");
      const uint8_t b = data_[pos_++];
      if (i == 9) {
        // Tenth byte of a negative ZLong: only bit 63 remains.
        if (b > 1) return ErrorAt(start, "invalid VLong (too many bits)");
        return value | (static_cast<uint64_t>(b) << 63);
      }
      value |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) return value;
      if (i == 8 && !allow_negative) break;
    }
    return ErrorAt(start, "invalid VLong (too many bits)");
  }

  std::span<const uint8_t> data_;
  std::string_view source_;
  uint64_t base_offset_ = 0;
  size_t pos_ = 0;
};

#undef RFS_CORE_CHECK_AVAILABLE_

}  // namespace rfs::core
