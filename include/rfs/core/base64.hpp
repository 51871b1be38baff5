// Base64 in the two alphabets rfs meets: standard with padding (how Jackson
// renders SMILE binary values as JSON) and URL-safe without padding
// (Elasticsearch ids and UUIDs, work-item ids).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rfs::core {

/// Standard alphabet (+/), padded with '='.
std::string Base64Encode(std::span<const uint8_t> bytes);
/// URL-safe alphabet (-_), no padding.
std::string Base64UrlEncode(std::span<const uint8_t> bytes);
inline std::string Base64UrlEncode(std::string_view text) {
  return Base64UrlEncode(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}
/// Decodes either alphabet, with or without padding. InvalidArgument on any
/// other character or an impossible length.
absl::StatusOr<std::vector<uint8_t>> Base64Decode(std::string_view text);

}  // namespace rfs::core
