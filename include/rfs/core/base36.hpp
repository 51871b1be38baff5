// Base 36 (digits 0-9a-z, lower case), as Java's Long.toString(x, 36) writes it: Lucene file
// generations (segments_a, _0_1.liv) and Elasticsearch file checksums use it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rfs::core {

inline std::string ToBase36(uint64_t value) {
  if (value == 0) return "0";
  std::string out;
  while (value > 0) {
    const int digit = static_cast<int>(value % 36);
    out.push_back(static_cast<char>(digit < 10 ? '0' + digit : 'a' + digit - 10));
    value /= 36;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

/// Parses a non-negative base-36 number; nullopt for an empty string, a character outside
/// 0-9a-z, or a value that does not fit 63 bits.
inline std::optional<uint64_t> ParseBase36(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'z') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    if (value > (static_cast<uint64_t>(INT64_MAX) - digit) / 36) return std::nullopt;
    value = value * 36 + static_cast<uint64_t>(digit);
  }
  return value;
}

}  // namespace rfs::core
