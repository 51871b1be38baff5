// Runs once per document field on the hot path, so it copies runs of plain bytes at once and
// allocates nothing beyond growing `out`.
#include "rfs/core/json_string.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

namespace {

// The value of four hex digits at text[at], or -1.
int32_t HexQuad(std::string_view text, size_t at) {
  if (at + 4 > text.size()) return -1;
  int32_t value = 0;
  for (size_t i = at; i < at + 4; ++i) {
    const char c = text[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

}  // namespace

bool ReadJsonString(std::string_view text, size_t& pos, std::string& out) {
  if (pos >= text.size() || text[pos] != '"') return false;
  std::string value;
  size_t i = pos + 1;
  while (true) {
    const size_t special = text.find_first_of("\\\"", i);
    if (special == std::string_view::npos) return false;
    value.append(text.data() + i, special - i);
    i = special;
    if (text[i] == '"') break;
    if (i + 1 >= text.size()) return false;
    const char escaped = text[i + 1];
    i += 2;
    switch (escaped) {
      case '"':
      case '\\':
      case '/':
        value.push_back(escaped);
        break;
      case 'b':
        value.push_back('\b');
        break;
      case 'f':
        value.push_back('\f');
        break;
      case 'n':
        value.push_back('\n');
        break;
      case 'r':
        value.push_back('\r');
        break;
      case 't':
        value.push_back('\t');
        break;
      case 'u': {
        const int32_t unit = HexQuad(text, i);
        if (unit < 0) return false;
        i += 4;
        uint32_t code_point = static_cast<uint32_t>(unit);
        const int32_t low = unit >= 0xD800 && unit < 0xDC00 && i + 1 < text.size() &&
                                    text[i] == '\\' && text[i + 1] == 'u'
                                ? HexQuad(text, i + 2)
                                : -1;
        if (low >= 0xDC00 && low < 0xE000) {
          code_point =
              0x10000 + ((code_point - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
          i += 6;
        }
        AppendUtf8(code_point, value);
        break;
      }
      default:
        return false;
    }
  }
  out = std::move(value);
  pos = i + 1;
  return true;
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

void AppendUtf8(uint32_t code_point, std::string& out) {
  const uint32_t cp = code_point;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

size_t FindLineBreakScalar(const char* p, size_t i, size_t n) {
  for (; i < n; ++i) {
    if (p[i] == '\n' || p[i] == '\r') return i;
  }
  return n;
}

#if defined(__x86_64__)
// 64 bytes per step with CR and LF compared together: one pass over the text, where two memchr
// calls made two. AVX2 is on every x86-64 server of the last decade; the check is made once.
__attribute__((target("avx2"))) size_t FindLineBreakAvx2(const char* p, size_t n) {
  const __m256i lf = _mm256_set1_epi8('\n');
  const __m256i cr = _mm256_set1_epi8('\r');
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32));
    const __m256i hits =
        _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(a, lf), _mm256_cmpeq_epi8(a, cr)),
                        _mm256_or_si256(_mm256_cmpeq_epi8(b, lf), _mm256_cmpeq_epi8(b, cr)));
    if (!_mm256_testz_si256(hits, hits)) break;
  }
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    const unsigned mask = static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(v, lf), _mm256_cmpeq_epi8(v, cr))));
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(mask));
  }
  return FindLineBreakScalar(p, i, n);
}

// Writes [from, from + n) to p with every CR and LF replaced by a space, 32 bytes per step.
// `from` may be `p`. Reading the original rather than a copy just written avoids waiting for
// those stores.
__attribute__((target("avx2"))) void ReplaceLineBreaksAvx2(const char* from, char* p, size_t n) {
  const __m256i lf = _mm256_set1_epi8('\n');
  const __m256i cr = _mm256_set1_epi8('\r');
  const __m256i space = _mm256_set1_epi8(' ');
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + i));
    const __m256i hits = _mm256_or_si256(_mm256_cmpeq_epi8(v, lf), _mm256_cmpeq_epi8(v, cr));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + i), _mm256_blendv_epi8(v, space, hits));
  }
  for (; i < n; ++i) {
    p[i] = from[i] == '\n' || from[i] == '\r' ? ' ' : from[i];
  }
}

const bool kHasAvx2 = __builtin_cpu_supports("avx2");
#endif

}  // namespace

size_t FindLineBreak(std::string_view text) {
#if defined(__x86_64__)
  if (kHasAvx2) return FindLineBreakAvx2(text.data(), text.size());
#endif
  // Elsewhere memchr is vectorized by the C library: two passes.
  const void* lf = std::memchr(text.data(), '\n', text.size());
  const size_t end =
      lf ? static_cast<size_t>(static_cast<const char*>(lf) - text.data()) : text.size();
  const void* cr = std::memchr(text.data(), '\r', end);
  return cr ? static_cast<size_t>(static_cast<const char*>(cr) - text.data()) : end;
}

namespace {

void ReplaceLineBreaks(const char* from, char* p, size_t n) {
#if defined(__x86_64__)
  if (kHasAvx2) return ReplaceLineBreaksAvx2(from, p, n);
#endif
  for (size_t i = 0; i < n; ++i) {
    p[i] = from[i] == '\n' || from[i] == '\r' ? ' ' : from[i];
  }
}

}  // namespace

void AppendJsonOneLine(std::string_view json, std::string& out) {
  // The scan reads the input, which was usually just decoded and is still in cache. Most
  // sources are one line already; a pretty-printed one has a break every few bytes from the
  // first on, so the rest is rewritten in one pass rather than searched break by break.
  const size_t at = FindLineBreak(json);
  const size_t start = out.size();
  out.append(json);
  if (at < json.size())
    ReplaceLineBreaks(json.data() + at, out.data() + start + at, json.size() - at);
}

void MakeJsonOneLine(std::string& json) {
  const size_t at = FindLineBreak(json);
  if (at < json.size()) ReplaceLineBreaks(json.data() + at, json.data() + at, json.size() - at);
}

}  // namespace rfs::core
