// Runs once per document field on the hot path, so it copies runs of plain bytes at once and
// allocates nothing beyond growing `out`.
#include "rfs/core/json_string.hpp"

#include <cstdint>

namespace rfs::core {
namespace {

bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

}  // namespace

void AppendJsonString(std::string_view value, std::string& out) {
  out.push_back('"');
  size_t run_start = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (!NeedsEscape(c)) continue;
    out.append(value.data() + run_start, i - run_start);
    run_start = i + 1;
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(escaped, sizeof(escaped));
      }
    }
  }
  out.append(value.data() + run_start, value.size() - run_start);
  out.push_back('"');
}

bool IsValidUtf8(std::string_view value) {
  const auto* p = reinterpret_cast<const uint8_t*>(value.data());
  const auto* end = p + value.size();
  while (p < end) {
    const uint8_t c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    // Lead byte: continuation count and the smallest code point it may encode.
    int extra;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    for (int i = 1; i <= extra; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    p += extra + 1;
  }
  return true;
}

bool AppendJsonStringIfUtf8(std::string_view value, std::string& out) {
  if (!IsValidUtf8(value)) return false;
  AppendJsonString(value, out);
  return true;
}

}  // namespace rfs::core
