// SMILE decoder (docs/formats.md B; Jackson's smile-format-specification and
// SmileParser). One pass over the input with an explicit container stack (no
// recursion), building the result with boost::json::value_stack. Strings are
// validated in place and back-reference tables hold views into the input, so
// the only allocations are the ones the resulting JSON value needs.
#include "rfs/content/smile.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include <boost/json/value_stack.hpp>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::content {
namespace {

using rfs::core::StrCat;

// B.1: ":)\n" then a flags byte.
constexpr uint8_t kHeader[3] = {0x3A, 0x29, 0x0A};
constexpr uint8_t kFlagSharedNames = 0x01;
constexpr uint8_t kFlagSharedValues = 0x02;
constexpr uint8_t kFlagRawBinary = 0x04;

// B.5: a back-reference table holds at most 1024 entries; adding one more
// clears it first (Jackson's _expandSeenNames / _expandSeenStringValues).
constexpr size_t kMaxSharedEntries = 1024;

constexpr uint8_t kStartArray = 0xF8;
constexpr uint8_t kEndArray = 0xF9;
constexpr uint8_t kStartObject = 0xFA;
constexpr uint8_t kEndObject = 0xFB;
constexpr uint8_t kEndOfString = 0xFC;
constexpr uint8_t kEndOfContent = 0xFF;

// Lengths (binary, BigInteger) are Jackson ints: at most 5 VInt bytes.
constexpr int kMaxLengthVIntBytes = 5;
// 64 bits need 9 groups of 7 plus one of 6 (B.3).
constexpr int kMaxLongVIntBytes = 10;

// BigInteger / BigDecimal magnitudes beyond this many bytes (~2,466 decimal
// digits) are refused: the decimal rendering is quadratic, and Jackson itself
// caps number length far lower (StreamReadConstraints).
constexpr uint64_t kMaxBigNumberBytes = 1024;

std::string Hex(uint8_t b) {
  constexpr char kDigits[] = "0123456789ABCDEF";
  return std::string{'0', 'x', kDigits[b >> 4], kDigits[b & 0xF]};
}

boost::json::string_view JsonView(std::string_view s) { return {s.data(), s.size()}; }

// Index of the first byte >= 0x80, or n.
size_t FindNonAscii(const uint8_t* s, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, s + i, 8);
    if ((word & 0x8080808080808080ull) != 0) break;
  }
  for (; i < n; ++i) {
    if (s[i] >= 0x80) return i;
  }
  return n;
}

// Index of the first byte that does not start a well-formed UTF-8 sequence
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or n.
size_t FindInvalidUtf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    i += FindNonAscii(s + i, n - i);
    if (i == n) break;
    const uint8_t c = s[i];
    size_t length;
    uint8_t low = 0x80;
    uint8_t high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // overlong
      if (c == 0xED) high = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;   // overlong
      if (c == 0xF4) high = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (length > n - i || s[i + 1] < low || s[i + 1] > high) return i;
    for (size_t k = 2; k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
    }
    i += length;
  }
  return n;
}

// Decimal digits of an unsigned big-endian magnitude (schoolbook division by
// 10^9 over 32-bit limbs).
std::string MagnitudeToDecimal(std::span<const uint8_t> magnitude) {
  std::vector<uint32_t> limbs;  // most significant first
  limbs.reserve(magnitude.size() / 4 + 1);
  const size_t head = magnitude.size() % 4;
  size_t i = 0;
  if (head != 0) {
    uint32_t limb = 0;
    for (; i < head; ++i) limb = (limb << 8) | magnitude[i];
    limbs.push_back(limb);
  }
  for (; i < magnitude.size(); i += 4) {
    limbs.push_back((uint32_t{magnitude[i]} << 24) | (uint32_t{magnitude[i + 1]} << 16) |
                    (uint32_t{magnitude[i + 2]} << 8) | magnitude[i + 3]);
  }
  std::vector<uint32_t> chunks;  // base 10^9, least significant first
  size_t first = 0;
  while (first < limbs.size() && limbs[first] == 0) ++first;
  while (first < limbs.size()) {
    uint64_t remainder = 0;
    for (size_t k = first; k < limbs.size(); ++k) {
      const uint64_t current = (remainder << 32) | limbs[k];
      limbs[k] = static_cast<uint32_t>(current / 1000000000u);
      remainder = current % 1000000000u;
    }
    chunks.push_back(static_cast<uint32_t>(remainder));
    while (first < limbs.size() && limbs[first] == 0) ++first;
  }
  if (chunks.empty()) return "0";
  std::string out = std::to_string(chunks.back());
  for (size_t k = chunks.size() - 1; k-- > 0;) {
    const std::string part = std::to_string(chunks[k]);
    out.append(9 - part.size(), '0');
    out.append(part);
  }
  return out;
}

// A decoded BigInteger: sign and magnitude (big-endian, no leading zeros).
struct BigInteger {
  bool negative = false;
  std::vector<uint8_t> magnitude;
};

// Two's complement big-endian bytes (java.math.BigInteger.toByteArray) to
// sign and magnitude.
BigInteger FromTwosComplement(std::span<const uint8_t> bytes) {
  BigInteger out;
  out.negative = !bytes.empty() && (bytes[0] & 0x80) != 0;
  out.magnitude.assign(bytes.begin(), bytes.end());
  if (out.negative) {
    // Negate: invert and add one.
    for (uint8_t& b : out.magnitude) b = static_cast<uint8_t>(~b);
    for (size_t k = out.magnitude.size(); k-- > 0;) {
      if (++out.magnitude[k] != 0) break;
    }
  }
  const auto nonzero =
      std::find_if(out.magnitude.begin(), out.magnitude.end(), [](uint8_t b) { return b != 0; });
  out.magnitude.erase(out.magnitude.begin(), nonzero);
  return out;
}

// Java BigDecimal.toString() of unscaled * 10^-scale.
std::string BigDecimalToString(bool negative, const std::string& digits, int64_t scale) {
  std::string out = negative ? "-" : "";
  const auto length = static_cast<int64_t>(digits.size());
  const int64_t adjusted = -scale + (length - 1);
  if (scale >= 0 && adjusted >= -6) {
    if (scale == 0) {
      out += digits;
    } else if (length > scale) {
      out.append(digits, 0, static_cast<size_t>(length - scale));
      out += '.';
      out.append(digits, static_cast<size_t>(length - scale));
    } else {
      out += "0.";
      out.append(static_cast<size_t>(scale - length), '0');
      out += digits;
    }
    return out;
  }
  out += digits[0];
  if (length > 1) {
    out += '.';
    out.append(digits, 1);
  }
  out += 'E';
  if (adjusted >= 0) out += '+';
  out += std::to_string(adjusted);
  return out;
}

class SmileDecoder {
 public:
  SmileDecoder(std::span<const uint8_t> bytes, std::string_view source, uint64_t base_offset)
      : in_(bytes),
        source_(source),
        base_offset_(base_offset),
        // Back-references are the only way output can outgrow input by more
        // than a constant factor (a long shared name referenced many times).
        expansion_budget_((uint64_t{64} << 20) + uint64_t{128} * bytes.size()) {}

  absl::StatusOr<boost::json::value> Decode() {
    RFS_RETURN_IF_ERROR(ReadHeader());
    stack_.reset();
    bool root_done = false;
    while (!root_done) {
      if (!frames_.empty() && frames_.back().object) {
        if (pos_ >= in_.size()) {
          return Error(pos_, "truncated SMILE object (no END_OBJECT)");
        }
        if (in_[pos_] == kEndObject) {
          ++pos_;
          stack_.push_object(frames_.back().count);
          frames_.pop_back();
          root_done = ValueDone();
          continue;
        }
        RFS_RETURN_IF_ERROR(ReadKey());
      }
      if (pos_ >= in_.size()) {
        return Error(pos_, frames_.empty() ? "SMILE document has no value"
                                           : "truncated SMILE content (expected a value)");
      }
      const uint8_t token = in_[pos_];
      if (token == kStartArray || token == kStartObject) {
        if (frames_.size() >= static_cast<size_t>(kMaxSmileDepth)) {
          return Error(pos_,
                       StrCat("SMILE nesting too deep (more than ", kMaxSmileDepth, " levels)"));
        }
        ++pos_;
        frames_.push_back({token == kStartObject, 0});
        continue;
      }
      if (token == kEndArray) {
        if (frames_.empty() || frames_.back().object) {
          return Error(pos_, "unexpected SMILE END_ARRAY (0xF9)");
        }
        ++pos_;
        stack_.push_array(frames_.back().count);
        frames_.pop_back();
        root_done = ValueDone();
        continue;
      }
      RFS_RETURN_IF_ERROR(ReadScalar());
      root_done = ValueDone();
    }
    // B.1: an optional end-of-content marker; nothing else may follow.
    while (pos_ < in_.size() && in_[pos_] == kEndOfContent) ++pos_;
    if (pos_ != in_.size()) {
      return Error(pos_, StrCat("unexpected byte ", Hex(in_[pos_]), " after the SMILE root value"));
    }
    return stack_.release();
  }

 private:
  struct Frame {
    bool object;
    size_t count;  // values (array) or key/value pairs (object) so far
  };

  absl::Status Error(size_t at, std::string_view what) const {
    return rfs::core::DataLossAt(source_, base_offset_ + at, what);
  }

  // Counts a finished value in its container; true when it was the root.
  bool ValueDone() {
    if (frames_.empty()) return true;
    ++frames_.back().count;
    return false;
  }

  absl::Status ReadHeader() {
    if (!LooksLikeSmile(in_)) {
      return Error(0, "missing SMILE header (3A 29 0A)");
    }
    if (in_.size() < 4) return Error(3, "truncated SMILE header");
    const uint8_t flags = in_[3];
    if ((flags >> 4) != 0) {
      return absl::UnimplementedError(StrCat(source_, ": unsupported SMILE format version ",
                                             flags >> 4, " at offset ", base_offset_ + 3));
    }
    shared_names_ = (flags & kFlagSharedNames) != 0;
    shared_values_ = (flags & kFlagSharedValues) != 0;
    raw_binary_ = (flags & kFlagRawBinary) != 0;
    pos_ = 4;
    return absl::OkStatus();
  }

  // B.3: big-endian 7-bit groups; the last byte has its MSB set and carries 6
  // bits. Refuses values above 64 bits.
  absl::StatusOr<uint64_t> ReadVInt(int max_bytes) {
    const size_t start = pos_;
    uint64_t value = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (pos_ >= in_.size()) return Error(start, "truncated SMILE VInt");
      const uint8_t b = in_[pos_++];
      const bool last = (b & 0x80) != 0;
      if ((value >> (last ? 58 : 57)) != 0) break;
      if (last) return (value << 6) | (b & 0x3F);
      value = (value << 7) | b;
    }
    return Error(start, StrCat("SMILE VInt longer than ", max_bytes, " bytes or above 64 bits"));
  }

  // A length prefix, checked against the bytes left so that no allocation is
  // ever larger than the input.
  absl::StatusOr<size_t> ReadLength(std::string_view what) {
    const size_t start = pos_;
    RFS_ASSIGN_OR_RETURN(const uint64_t length, ReadVInt(kMaxLengthVIntBytes));
    if (length > in_.size() - pos_) {
      return Error(start, StrCat(what, " of ", length, " bytes runs past the end (",
                                 in_.size() - pos_, " left)"));
    }
    return static_cast<size_t>(length);
  }

  // `length` bytes of text at the cursor, ASCII-only or UTF-8 validated.
  absl::StatusOr<std::string_view> ReadText(size_t length, bool ascii) {
    if (length > in_.size() - pos_) {
      return Error(pos_, StrCat("string of ", length, " bytes runs past the end (",
                                in_.size() - pos_, " left)"));
    }
    RFS_RETURN_IF_ERROR(CheckText(pos_, length, ascii));
    const std::string_view text(reinterpret_cast<const char*>(in_.data() + pos_), length);
    pos_ += length;
    return text;
  }

  // Text up to the 0xFC end marker (long strings and long names), which
  // cannot occur inside UTF-8, so the first one ends the string.
  absl::StatusOr<std::string_view> ReadTerminatedText(bool ascii) {
    const void* end = std::memchr(in_.data() + pos_, kEndOfString, in_.size() - pos_);
    if (end == nullptr) {
      return Error(pos_ - 1, "unterminated SMILE long string (no 0xFC)");
    }
    const size_t length = static_cast<const uint8_t*>(end) - (in_.data() + pos_);
    RFS_ASSIGN_OR_RETURN(const std::string_view text, ReadText(length, ascii));
    ++pos_;  // the end marker
    return text;
  }

  absl::Status CheckText(size_t at, size_t length, bool ascii) const {
    const uint8_t* text = in_.data() + at;
    if (ascii) {
      const size_t bad = FindNonAscii(text, length);
      if (bad != length) {
        return Error(at + bad,
                     StrCat("non-ASCII byte ", Hex(text[bad]), " in a SMILE ASCII string"));
      }
    } else {
      const size_t bad = FindInvalidUtf8(text, length);
      if (bad != length) return Error(at + bad, "invalid UTF-8 in SMILE string");
    }
    return absl::OkStatus();
  }

  static void AddShared(std::vector<std::string_view>& table, std::string_view text) {
    if (table.size() == kMaxSharedEntries) table.clear();
    table.push_back(text);
  }

  absl::StatusOr<std::string_view> LookupShared(const std::vector<std::string_view>& table,
                                                bool enabled, size_t index, size_t token_at,
                                                std::string_view kind) {
    if (!enabled) {
      return Error(token_at, StrCat("shared ", kind,
                                    " reference, but the SMILE header does not "
                                    "enable shared ",
                                    kind, "s"));
    }
    if (index >= table.size()) {
      return Error(token_at, StrCat("shared ", kind, " reference ", index, " beyond the ",
                                    table.size(), " seen"));
    }
    const std::string_view text = table[index];
    if (text.size() > expansion_budget_) {
      return Error(token_at, "SMILE back-references expand beyond the size limit");
    }
    expansion_budget_ -= text.size();
    return text;
  }

  // B.4: one key token (END_OBJECT was handled by the caller).
  absl::Status ReadKey() {
    const size_t at = pos_;
    const uint8_t token = in_[pos_++];
    std::string_view name;
    if (token == 0x20) {
      name = {};
    } else if (token >= 0x30 && token <= 0x33) {
      if (pos_ >= in_.size()) return Error(at, "truncated SMILE key reference");
      const size_t index = (size_t{token & 0x03u} << 8) | in_[pos_++];
      RFS_ASSIGN_OR_RETURN(name, LookupShared(names_, shared_names_, index, at, "name"));
    } else if (token == 0x34) {
      RFS_ASSIGN_OR_RETURN(name, ReadTerminatedText(/*ascii=*/false));
      if (shared_names_) AddShared(names_, name);
    } else if (token >= 0x40 && token <= 0x7F) {
      RFS_ASSIGN_OR_RETURN(name, LookupShared(names_, shared_names_, token & 0x3F, at, "name"));
    } else if (token >= 0x80 && token <= 0xF7) {
      const bool ascii = token <= 0xBF;
      const size_t length = (token & 0x3F) + (ascii ? 1 : 2);
      RFS_ASSIGN_OR_RETURN(name, ReadText(length, ascii));
      if (shared_names_) AddShared(names_, name);
    } else {
      return Error(at, StrCat("unknown SMILE token ", Hex(token), " where a key was expected"));
    }
    stack_.push_key(JsonView(name));
    return absl::OkStatus();
  }

  // B.2: one scalar value token (containers are handled by the caller).
  absl::Status ReadScalar() {
    const size_t at = pos_;
    const uint8_t token = in_[pos_++];
    if (token >= 0x40 && token <= 0xBF) {
      // Tiny/short ASCII (1..64 bytes) and Unicode (2..65 bytes).
      const bool ascii = token <= 0x7F;
      const size_t length = ascii ? token - 0x3F : token - 0x80 + 2;
      RFS_ASSIGN_OR_RETURN(const std::string_view text, ReadText(length, ascii));
      if (shared_values_) AddShared(values_, text);
      stack_.push_string(JsonView(text));
      return absl::OkStatus();
    }
    if (token >= 0xC0 && token <= 0xDF) {
      // Small int: zig-zag of 5 bits, -16..15.
      const int v = token & 0x1F;
      stack_.push_int64((v >> 1) ^ -(v & 1));
      return absl::OkStatus();
    }
    if (token >= 0x01 && token <= 0x1F) {
      return PushSharedValue(token - 1, at);
    }
    if (token >= 0xEC && token <= 0xEF) {
      if (pos_ >= in_.size()) {
        return Error(at, "truncated SMILE value reference");
      }
      return PushSharedValue((size_t{token & 0x03u} << 8) | in_[pos_++], at);
    }
    switch (token) {
      case 0x20:
        stack_.push_string("");
        return absl::OkStatus();
      case 0x21:
        stack_.push_null();
        return absl::OkStatus();
      case 0x22:
      case 0x23:
        stack_.push_bool(token == 0x23);
        return absl::OkStatus();
      case 0x24: {
        RFS_ASSIGN_OR_RETURN(const uint64_t raw, ReadVInt(kMaxLengthVIntBytes));
        if (raw > 0xFFFFFFFFu) return Error(at, "SMILE int32 out of range");
        stack_.push_int64(static_cast<int32_t>(ZigZag(raw)));
        return absl::OkStatus();
      }
      case 0x25: {
        RFS_ASSIGN_OR_RETURN(const uint64_t raw, ReadVInt(kMaxLongVIntBytes));
        stack_.push_int64(ZigZag(raw));
        return absl::OkStatus();
      }
      case 0x26:
        return ReadBigInteger(at);
      case 0x28:
        return ReadFloat(at);
      case 0x29:
        return ReadDouble(at);
      case 0x2A:
        return ReadBigDecimal(at);
      case 0xE0:
      case 0xE4: {
        // Long strings are never added to the shared-value table (B.5).
        RFS_ASSIGN_OR_RETURN(const std::string_view text,
                             ReadTerminatedText(/*ascii=*/token == 0xE0));
        stack_.push_string(JsonView(text));
        return absl::OkStatus();
      }
      case 0xE8: {
        RFS_ASSIGN_OR_RETURN(const std::span<const uint8_t> bytes,
                             Read7BitBinary("SMILE 7-bit binary"));
        PushBase64(bytes);
        return absl::OkStatus();
      }
      case 0xFD: {
        if (!raw_binary_) {
          return Error(at,
                       "SMILE raw binary (0xFD), but the header does not "
                       "enable raw binary");
        }
        RFS_ASSIGN_OR_RETURN(const size_t length, ReadLength("SMILE raw binary"));
        PushBase64(in_.subspan(pos_, length));
        pos_ += length;
        return absl::OkStatus();
      }
      default:
        return Error(at, StrCat("unknown SMILE token ", Hex(token), " where a value was expected"));
    }
  }

  static int64_t ZigZag(uint64_t n) { return static_cast<int64_t>((n >> 1) ^ (~(n & 1) + 1)); }

  absl::Status PushSharedValue(size_t index, size_t at) {
    RFS_ASSIGN_OR_RETURN(const std::string_view text,
                         LookupShared(values_, shared_values_, index, at, "value"));
    stack_.push_string(JsonView(text));
    return absl::OkStatus();
  }

  void PushBase64(std::span<const uint8_t> bytes) {
    const std::string encoded = rfs::core::Base64Encode(bytes);
    stack_.push_string(JsonView(encoded));
  }

  // B.5: an unsigned VInt raw length, then 7-bit groups (7 raw bytes in 8
  // encoded bytes, a final partial group of r bytes in r + 1). Decodes into
  // scratch_, which the returned span views.
  absl::StatusOr<std::span<const uint8_t>> Read7BitBinary(std::string_view what) {
    const size_t start = pos_;
    RFS_ASSIGN_OR_RETURN(const uint64_t raw_length, ReadVInt(kMaxLengthVIntBytes));
    const uint64_t tail = raw_length % 7;
    const uint64_t encoded_length = raw_length / 7 * 8 + (tail ? tail + 1 : 0);
    if (encoded_length > in_.size() - pos_) {
      return Error(start, StrCat(what, " of ", raw_length, " bytes runs past the end (",
                                 in_.size() - pos_, " left)"));
    }
    scratch_.resize(static_cast<size_t>(raw_length));
    const uint8_t* encoded = in_.data() + pos_;
    for (size_t k = 0; k < encoded_length; ++k) {
      if (encoded[k] >= 0x80) {
        return Error(pos_ + k,
                     StrCat("byte ", Hex(encoded[k]), " in ", what, " has its high bit set"));
      }
    }
    uint8_t* out = scratch_.data();
    for (uint64_t group = 0; group < raw_length / 7; ++group) {
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 7) | *encoded++;
      for (int k = 6; k >= 0; --k) *out++ = static_cast<uint8_t>(bits >> (8 * k));
    }
    if (tail != 0) {
      uint64_t bits = 0;
      for (uint64_t k = 0; k < tail; ++k) bits = (bits << 7) | *encoded++;
      // The last encoded byte holds the remaining `tail` bits, right-aligned.
      const uint8_t last = *encoded++;
      if ((last >> tail) != 0) {
        return Error(pos_ + encoded_length - 1,
                     StrCat("padding bits set in the last byte of ", what));
      }
      bits = (bits << tail) | last;
      for (uint64_t k = tail; k-- > 0;) {
        *out++ = static_cast<uint8_t>(bits >> (8 * k));
      }
    }
    pos_ += encoded_length;
    return std::span<const uint8_t>(scratch_);
  }

  // The two's complement bytes of a BigInteger (0x26) or the unscaled value of
  // a BigDecimal (0x2A).
  absl::StatusOr<BigInteger> ReadBigMagnitude(size_t at) {
    RFS_ASSIGN_OR_RETURN(const std::span<const uint8_t> bytes, Read7BitBinary("SMILE big number"));
    if (bytes.empty()) return Error(at, "SMILE big number of zero bytes");
    if (bytes.size() > kMaxBigNumberBytes) {
      return absl::UnimplementedError(StrCat(source_, ": unsupported SMILE big number of ",
                                             bytes.size(), " bytes (more than ", kMaxBigNumberBytes,
                                             ") at offset ", base_offset_ + at));
    }
    return FromTwosComplement(bytes);
  }

  absl::Status ReadBigInteger(size_t at) {
    RFS_ASSIGN_OR_RETURN(const BigInteger number, ReadBigMagnitude(at));
    if (number.magnitude.size() <= 8) {
      uint64_t magnitude = 0;
      for (uint8_t b : number.magnitude) magnitude = (magnitude << 8) | b;
      constexpr uint64_t kInt64Limit = uint64_t{1} << 63;
      if (!number.negative) {
        if (magnitude < kInt64Limit) {
          stack_.push_int64(static_cast<int64_t>(magnitude));
        } else {
          stack_.push_uint64(magnitude);
        }
        return absl::OkStatus();
      }
      if (magnitude <= kInt64Limit) {
        stack_.push_int64(static_cast<int64_t>(~magnitude + 1));
        return absl::OkStatus();
      }
    }
    std::string text = number.negative ? "-" : "";
    text += MagnitudeToDecimal(number.magnitude);
    stack_.push_string(JsonView(text));
    return absl::OkStatus();
  }

  absl::Status ReadBigDecimal(size_t at) {
    RFS_ASSIGN_OR_RETURN(const uint64_t raw_scale, ReadVInt(kMaxLengthVIntBytes));
    if (raw_scale > 0xFFFFFFFFu) {
      return Error(at, "SMILE BigDecimal scale out of range");
    }
    const int64_t scale = static_cast<int32_t>(ZigZag(raw_scale));
    RFS_ASSIGN_OR_RETURN(const BigInteger number, ReadBigMagnitude(at));
    const std::string text =
        BigDecimalToString(number.negative, MagnitudeToDecimal(number.magnitude), scale);
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc() && end == text.data() + text.size() && std::isfinite(value)) {
      stack_.push_double(value);
    } else {
      stack_.push_string(JsonView(text));
    }
    return absl::OkStatus();
  }

  // Float32 (0x28) is 5 bytes and float64 (0x29) 10 bytes of 7 bits each,
  // most significant first, right-aligned: the first byte carries only the
  // top 4 (float) or 1 (double) bits.
  absl::StatusOr<uint64_t> ReadPacked(size_t at, int bytes, int first_bits) {
    if (static_cast<size_t>(bytes) > in_.size() - pos_) {
      return Error(at, "truncated SMILE floating-point value");
    }
    uint64_t bits = 0;
    for (int k = 0; k < bytes; ++k) {
      const uint8_t b = in_[pos_ + k];
      if (b >= (k == 0 ? (1u << first_bits) : 0x80u)) {
        return Error(pos_ + k,
                     StrCat("byte ", Hex(b), " out of range in a SMILE floating-point value"));
      }
      bits = (bits << 7) | b;
    }
    pos_ += bytes;
    return bits;
  }

  absl::Status ReadFloat(size_t at) {
    RFS_ASSIGN_OR_RETURN(const uint64_t bits, ReadPacked(at, 5, 4));
    const auto value = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (!std::isfinite(value)) return PushNonFinite(value);
    // The shortest decimal form of the float, read back as a double: what
    // Jackson prints (Float.toString) and a JSON parser would read.
    char buffer[32];
    const auto written = std::to_chars(buffer, buffer + sizeof(buffer), value);
    double widened = value;
    std::from_chars(buffer, written.ptr, widened);
    stack_.push_double(widened);
    return absl::OkStatus();
  }

  absl::Status ReadDouble(size_t at) {
    RFS_ASSIGN_OR_RETURN(const uint64_t bits, ReadPacked(at, 10, 1));
    const auto value = std::bit_cast<double>(bits);
    if (!std::isfinite(value)) return PushNonFinite(value);
    stack_.push_double(value);
    return absl::OkStatus();
  }

  absl::Status PushNonFinite(double value) {
    stack_.push_string(std::isnan(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity");
    return absl::OkStatus();
  }

  std::span<const uint8_t> in_;
  std::string_view source_;
  uint64_t base_offset_;
  size_t pos_ = 0;
  bool shared_names_ = false;
  bool shared_values_ = false;
  bool raw_binary_ = false;
  uint64_t expansion_budget_;
  boost::json::value_stack stack_;
  std::vector<Frame> frames_;
  // Views into in_ (every shareable string lies contiguously in the input).
  std::vector<std::string_view> names_;
  std::vector<std::string_view> values_;
  std::vector<uint8_t> scratch_;
};

}  // namespace

bool LooksLikeSmile(std::span<const uint8_t> bytes) {
  return bytes.size() >= 3 && std::memcmp(bytes.data(), kHeader, 3) == 0;
}

absl::StatusOr<boost::json::value> DecodeSmile(std::span<const uint8_t> bytes,
                                               std::string_view source, uint64_t base_offset) {
  // boost::json allocates through operator new; nothing else here throws.
  try {
    return SmileDecoder(bytes, source, base_offset).Decode();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(StrCat(source, ": out of memory decoding SMILE"));
  } catch (const std::exception& e) {
    return absl::DataLossError(StrCat(source, ": SMILE value too large: ", e.what()));
  }
}

}  // namespace rfs::content
