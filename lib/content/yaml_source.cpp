// YAML `_source` -> JSON (rules in source_json.hpp). libyaml's event parser
// (yaml_parser_parse) does the YAML: a full YAML 1.1 scanner is thousands of
// lines that Debian already ships, fuzzed and maintained. This file decides
// what each event means as JSON the way Elasticsearch's Jackson YAMLParser
// does over SnakeYAML's events and YAML 1.1 Resolver, which libyaml matches
// event for event (same implicit-tag rules, "!" included).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/content/source_json.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "content/yaml_source_internal.hpp"
#include <yaml.h>

namespace rfs::content {

using core::StrCat;

namespace {

constexpr std::string_view kCoreTagPrefix = "tag:yaml.org,2002:";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// True when `s` is non-empty, every character is '_' or a digit below
// `base`, and at least one is a digit: `_*[digit]+[digit_]*`.
bool IsDigitsWithUnderscores(std::string_view s, int base) {
  bool digit = false;
  for (char c : s) {
    if (c == '_') continue;
    if (DigitValue(c) >= base) return false;
    digit = true;
  }
  return digit;
}

// `(?::[0-5]?[0-9])+` at the end of `s`, starting at `i`.
bool IsSexagesimalTail(std::string_view s, size_t i) {
  if (i >= s.size()) return false;
  while (i < s.size()) {
    if (s[i] != ':') return false;
    ++i;
    if (i + 1 < s.size() && s[i] >= '0' && s[i] <= '5' && IsDigit(s[i + 1])) {
      i += 2;
    } else if (i < s.size() && IsDigit(s[i])) {
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

size_t SkipSign(std::string_view s) { return !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0; }

// SnakeYAML's Resolver.BOOL.
bool IsYamlBoolWord(std::string_view s) {
  for (std::string_view w : {"yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false",
                             "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"}) {
    if (s == w) return true;
  }
  return false;
}

// SnakeYAML's Resolver.NULL (EMPTY handled by the caller).
bool IsYamlNullWord(std::string_view s) {
  return s == "~" || s == "null" || s == "Null" || s == "NULL" || s == " ";
}

// SnakeYAML's Resolver.INT: [-+]? then 0b binary, 0 octal, decimal, 0x hex
// (all with '_') or sexagesimal [1-9][0-9_]*(:[0-5]?[0-9])+.
bool IsYamlInt(std::string_view s) {
  const std::string_view v = s.substr(SkipSign(s));
  if (v.empty()) return false;
  if (v == "0") return true;
  if (v[0] == '0') {
    if (v.size() >= 2 && v[1] == 'b') return IsDigitsWithUnderscores(v.substr(2), 2);
    if (v.size() >= 2 && v[1] == 'x') return IsDigitsWithUnderscores(v.substr(2), 16);
    return IsDigitsWithUnderscores(v.substr(1), 8);
  }
  if (v[0] < '1' || v[0] > '9') return false;
  size_t i = 1;
  while (i < v.size() && (IsDigit(v[i]) || v[i] == '_')) ++i;
  return i == v.size() || IsSexagesimalTail(v, i);
}

// `[0-9][0-9_]*` from `i`; returns the end (== i when there is none).
size_t ScanDigitsUnderscores(std::string_view s, size_t i) {
  if (i >= s.size() || !IsDigit(s[i])) return i;
  ++i;
  while (i < s.size() && (IsDigit(s[i]) || s[i] == '_')) ++i;
  return i;
}

// `[eE][-+]?[0-9]+` exactly from `i` to the end.
bool IsExponent(std::string_view s, size_t i) {
  if (i >= s.size() || (s[i] != 'e' && s[i] != 'E')) return false;
  ++i;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return false;
  }
  return true;
}

// SnakeYAML's Resolver.FLOAT (1.18 and later, what Elasticsearch 7-9 ship):
//   [-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+]?[0-9]+)?
//   [-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
//   [-+]?\.[0-9_]+([eE][-+]?[0-9]+)?
//   [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*
//   [-+]?\.(inf|Inf|INF)  and  \.(nan|NaN|NAN)
bool IsYamlFloat(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  const size_t start = SkipSign(s);
  const std::string_view v = s.substr(start);
  if (v == ".inf" || v == ".Inf" || v == ".INF") return true;
  auto fraction_then_exponent = [&](size_t i) {  // after the '.'
    while (i < v.size() && (IsDigit(v[i]) || v[i] == '_')) ++i;
    return i == v.size() || IsExponent(v, i);
  };
  if (!v.empty() && v[0] == '.') {
    size_t i = 1;
    while (i < v.size() && (IsDigit(v[i]) || v[i] == '_')) ++i;
    return i > 1 && (i == v.size() || IsExponent(v, i));
  }
  const size_t int_end = ScanDigitsUnderscores(v, 0);
  if (int_end == 0) return false;
  if (int_end < v.size() && v[int_end] == '.') return fraction_then_exponent(int_end + 1);
  if (IsExponent(v, int_end)) return true;
  // Sexagesimal float: the tail up to a '.' must be (:[0-5]?[0-9])+.
  const size_t dot = v.find('.', int_end);
  if (dot == std::string_view::npos) return false;
  if (!IsSexagesimalTail(v.substr(0, dot), int_end)) return false;
  for (size_t i = dot + 1; i < v.size(); ++i) {
    if (!IsDigit(v[i]) && v[i] != '_') return false;
  }
  return true;
}

// Jackson's _matchYAMLBoolean (for !!bool): case-insensitive, y/n too.
std::optional<bool> MatchYamlBoolean(std::string_view s) {
  auto eq = [&](std::string_view w) {
    if (s.size() != w.size()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != w[i]) return false;
    }
    return true;
  };
  if (eq("y") || eq("yes") || eq("on") || eq("true")) return true;
  if (eq("n") || eq("no") || eq("off") || eq("false")) return false;
  return std::nullopt;
}

// `digits` (base 2, 8 or 16, already free of '_') in decimal.
std::string RadixToDecimal(std::string_view digits, int base) {
  // Little-endian limbs of 10^9.
  std::vector<uint32_t> limbs;
  for (char c : digits) {
    uint64_t carry = static_cast<uint64_t>(DigitValue(c));
    for (uint32_t& limb : limbs) {
      const uint64_t v = uint64_t{limb} * static_cast<uint64_t>(base) + carry;
      limb = static_cast<uint32_t>(v % 1000000000);
      carry = v / 1000000000;
    }
    if (carry != 0) limbs.push_back(static_cast<uint32_t>(carry));
  }
  if (limbs.empty()) return "0";
  std::string text = StrCat(limbs.back());
  for (size_t i = limbs.size() - 1; i-- > 0;) {
    const std::string part = StrCat(limbs[i]);
    text.append(9 - part.size(), '0');
    text += part;
  }
  return text;
}

std::string WithoutUnderscores(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c != '_') out.push_back(c);
  }
  return out;
}

// Decimal orders of magnitude of a decimal-float literal (sign stripped,
// no '_'): > 0 when it is at least 1. Used only when from_chars reports the
// value out of range, to tell overflow from underflow.
int64_t DecimalMagnitude(std::string_view v) {
  int64_t exponent = 0;
  const size_t e = v.find_first_of("eE");
  if (e != std::string_view::npos) {
    size_t i = e + 1;
    bool negative = false;
    if (i < v.size() && (v[i] == '-' || v[i] == '+')) negative = v[i++] == '-';
    for (; i < v.size(); ++i) exponent = std::min<int64_t>(exponent * 10 + (v[i] - '0'), 1 << 30);
    if (negative) exponent = -exponent;
    v = v.substr(0, e);
  }
  const size_t dot = std::min(v.find('.'), v.size());
  const size_t first = v.find_first_of("123456789");
  if (first == std::string_view::npos) return INT64_MIN / 2;  // zero
  if (first < dot) return static_cast<int64_t>(dot - first) + exponent;
  return exponent - static_cast<int64_t>(first - dot - 1);
}

class YamlToJson {
 public:
  YamlToJson(std::span<const uint8_t> in, std::string_view source, std::string& out)
      : in_(in), source_(source), out_(out) {}

  ~YamlToJson() {
    if (initialized_) yaml_parser_delete(&parser_);
  }

  absl::Status Run() {
    if (in_.size() > kMaxYamlBytes) {
      return core::DataLossAt(source_, kMaxYamlBytes,
                              StrCat("YAML of ", in_.size(), " bytes is longer than the ",
                                     kMaxYamlBytes, " converted"));
    }
    if (yaml_parser_initialize(&parser_) == 0) {
      return absl::ResourceExhaustedError(StrCat(source_, ": cannot allocate a YAML parser"));
    }
    initialized_ = true;
    static const unsigned char kEmpty[1] = {0};
    yaml_parser_set_input_string(&parser_, in_.empty() ? kEmpty : in_.data(), in_.size());
    yaml_parser_set_encoding(&parser_, YAML_UTF8_ENCODING);

    int documents = 0;
    for (;;) {
      Event event;
      if (yaml_parser_parse(&parser_, &event.e) == 0) return ParserError();
      event.live = true;
      const yaml_event_t& e = event.e;
      switch (e.type) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
          break;
        case YAML_DOCUMENT_START_EVENT:
          // Elasticsearch rejects content after the root value, so a second
          // document never was part of an indexed _source.
          if (++documents > 1) return At(e.start_mark, "a second YAML document");
          break;
        case YAML_STREAM_END_EVENT:
          if (documents == 0) return At(e.start_mark, "no YAML document");
          return absl::OkStatus();
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT: {
          const bool mapping = e.type == YAML_MAPPING_START_EVENT;
          RFS_RETURN_IF_ERROR(BeginValue(e, mapping ? "a mapping" : "a sequence"));
          if (stack_.size() >= static_cast<size_t>(kMaxYamlDepth)) {
            return At(e.start_mark, StrCat("nesting deeper than ", kMaxYamlDepth));
          }
          stack_.push_back(Frame{mapping, true, 0});
          out_.push_back(mapping ? '{' : '[');
          break;
        }
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
          // libyaml pairs starts and ends; an end without its start is a
          // parser error, not an event.
          if (stack_.empty()) return At(e.start_mark, "unbalanced end of a collection");
          out_.push_back(stack_.back().mapping ? '}' : ']');
          stack_.pop_back();
          break;
        case YAML_SCALAR_EVENT: {
          const std::string_view text(reinterpret_cast<const char*>(e.data.scalar.value),
                                      e.data.scalar.length);
          if (AtKey()) {
            RFS_RETURN_IF_ERROR(Key(e, text));
          } else {
            RFS_RETURN_IF_ERROR(BeginValue(e, "a scalar"));
            RFS_RETURN_IF_ERROR(Scalar(e, text));
          }
          break;
        }
        case YAML_ALIAS_EVENT: {
          // Jackson does not resolve aliases: the value is the anchor's name.
          RFS_RETURN_IF_ERROR(BeginValue(e, "an alias"));
          const char* anchor = reinterpret_cast<const char*>(e.data.alias.anchor);
          RFS_RETURN_IF_ERROR(String(e, anchor == nullptr ? "" : anchor));
          break;
        }
        case YAML_NO_EVENT:
          return At(e.start_mark, "unexpected end of the YAML events");
      }
    }
  }

 private:
  struct Event {
    yaml_event_t e{};
    bool live = false;
    Event() = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() {
      if (live) yaml_event_delete(&e);
    }
  };

  struct Frame {
    bool mapping;
    bool expect_key;  // mappings only
    size_t count;
  };

  // libyaml's marks count characters; offsets in rfs errors count bytes.
  // The input up to a mark was decoded as UTF-8, so counting the bytes that
  // start a character finds it.
  size_t ByteOffset(size_t char_index) const {
    size_t chars = 0;
    for (size_t i = 0; i < in_.size(); ++i) {
      if ((in_[i] & 0xC0) != 0x80) {
        if (chars == char_index) return i;
        ++chars;
      }
    }
    return in_.size();
  }

  absl::Status At(const yaml_mark_t& mark, std::string_view what) const {
    return core::DataLossAt(
        source_, ByteOffset(mark.index),
        StrCat(what, " (line ", mark.line + 1, ", column ", mark.column + 1, ")"));
  }

  absl::Status ParserError() const {
    const std::string problem = parser_.problem != nullptr ? parser_.problem : "parse error";
    if (parser_.error == YAML_MEMORY_ERROR) {
      return absl::ResourceExhaustedError(StrCat(source_, ": out of memory parsing YAML"));
    }
    if (parser_.error == YAML_READER_ERROR) {
      return core::DataLossAt(source_, parser_.problem_offset, StrCat("invalid YAML: ", problem));
    }
    std::string what = StrCat("invalid YAML: ", problem);
    if (parser_.context != nullptr) {
      what = StrCat(what, ", ", parser_.context, " from line ", parser_.context_mark.line + 1,
                    ", column ", parser_.context_mark.column + 1);
    }
    return At(parser_.problem_mark, what);
  }

  bool AtKey() const {
    return !stack_.empty() && stack_.back().mapping && stack_.back().expect_key;
  }

  // Separator before a value; an object field name must be a scalar (Jackson:
  // "Expected a field name (Scalar value in YAML)").
  absl::Status BeginValue(const yaml_event_t& e, std::string_view what) {
    if (stack_.empty()) return absl::OkStatus();
    Frame& top = stack_.back();
    if (top.mapping) {
      if (top.expect_key) return At(e.start_mark, StrCat(what, " as a mapping key"));
      top.expect_key = true;
      return absl::OkStatus();
    }
    if (top.count++ > 0) out_.push_back(',');
    return absl::OkStatus();
  }

  // A key is its scalar's text whatever its tag or look ("1", "null").
  absl::Status Key(const yaml_event_t& e, std::string_view text) {
    Frame& top = stack_.back();
    if (top.count++ > 0) out_.push_back(',');
    RFS_RETURN_IF_ERROR(String(e, text));
    out_.push_back(':');
    top.expect_key = false;
    return absl::OkStatus();
  }

  absl::Status String(const yaml_event_t& e, std::string_view text) {
    if (!core::AppendJsonStringIfUtf8(text, out_)) {
      return At(e.start_mark, "invalid UTF-8 in a scalar");
    }
    return absl::OkStatus();
  }

  // Jackson's YAMLParser._decodeScalar.
  absl::Status Scalar(const yaml_event_t& e, std::string_view text) {
    if (e.data.scalar.plain_implicit != 0) return Implicit(e, text);  // plain, or tag "!"
    if (e.data.scalar.tag == nullptr) return String(e, text);         // quoted or block
    std::string_view tag(reinterpret_cast<const char*>(e.data.scalar.tag));
    if (tag.starts_with(kCoreTagPrefix)) {
      tag.remove_prefix(kCoreTagPrefix.size());
      tag = tag.substr(0, tag.find(','));
    }
    if (tag == "binary") return Binary(e, text);
    if (tag == "bool") {
      if (auto b = MatchYamlBoolean(text)) {
        out_ += *b ? "true" : "false";
        return absl::OkStatus();
      }
    } else if (!text.empty()) {
      if (tag == "int") return Int(e, text);
      if (tag == "float") return Float(e, text);
      if (tag == "null") {
        out_ += "null";
        return absl::OkStatus();
      }
    }
    return String(e, text);
  }

  // SnakeYAML's Resolver on a plain scalar, in its order.
  absl::Status Implicit(const yaml_event_t& e, std::string_view text) {
    if (text.empty() || IsYamlNullWord(text)) {
      out_ += "null";
      return absl::OkStatus();
    }
    if (IsYamlBoolWord(text)) {
      out_ += MatchYamlBoolean(text).value_or(false) ? "true" : "false";
      return absl::OkStatus();
    }
    if (IsYamlInt(text)) return Int(e, text);
    if (IsYamlFloat(text)) return Float(e, text);
    return String(e, text);  // timestamps, "<<", "=" and all other text
  }

  absl::Status CheckNumberLength(const yaml_event_t& e, std::string_view text) {
    if (text.size() > kMaxYamlNumberLength) {
      return At(e.start_mark, StrCat("number of ", text.size(), " characters (at most ",
                                     kMaxYamlNumberLength, " converted)"));
    }
    return absl::OkStatus();
  }

  // Jackson's _decodeNumberScalar: sign, then 0 / 0b... / 0x... / 0...
  // (octal) / decimal, '_' dropped; anything else (sexagesimal 1:30, or
  // "!!int abc") is the string it was.
  absl::Status Int(const yaml_event_t& e, std::string_view text) {
    RFS_RETURN_IF_ERROR(CheckNumberLength(e, text));
    const bool negative = text[0] == '-';
    size_t i = SkipSign(text);
    if (i == text.size()) return At(e.start_mark, StrCat("invalid integer '", text, "'"));
    if (text[i] == '0') {
      if (++i == text.size()) {
        out_ += "0";
        return absl::OkStatus();
      }
      const char c = text[i];
      if (c == 'b' || c == 'B') return Radix(e, text, text.substr(i + 1), 2, negative);
      if (c == 'x' || c == 'X') return Radix(e, text, text.substr(i + 1), 16, negative);
      if (IsDigit(c) || c == '_') return Radix(e, text, text.substr(i), 8, negative);
      return String(e, text);
    }
    for (size_t j = i; j < text.size(); ++j) {
      if (!IsDigit(text[j]) && text[j] != '_') return String(e, text);
    }
    const std::string digits = WithoutUnderscores(text.substr(i));
    if (digits.empty()) return At(e.start_mark, StrCat("invalid integer '", text, "'"));
    // "_012" and "__00" reach here (the '0' test above sees only the first
    // character): Jackson parses them as decimal 12 and 0, and JSON allows
    // no leading zero.
    const size_t first_nonzero = digits.find_first_not_of('0');
    if (first_nonzero == std::string::npos) {
      out_ += "0";
      return absl::OkStatus();
    }
    if (negative) out_.push_back('-');
    out_.append(digits, first_nonzero);
    return absl::OkStatus();
  }

  absl::Status Radix(const yaml_event_t& e, std::string_view text, std::string_view rest, int base,
                     bool negative) {
    const std::string digits = WithoutUnderscores(rest);
    bool valid = !digits.empty();
    for (char c : digits) valid = valid && DigitValue(c) < base;
    if (!valid) {
      return At(e.start_mark, StrCat("invalid base-", base, " integer '", text, "'"));
    }
    const std::string decimal = RadixToDecimal(digits, base);
    if (negative && decimal != "0") out_.push_back('-');
    out_ += decimal;
    return absl::OkStatus();
  }

  // Jackson's _cleanYamlFloat then Double.parseDouble; written back as the
  // double's shortest text, as Jackson's generator writes a double.
  absl::Status Float(const yaml_event_t& e, std::string_view text) {
    RFS_RETURN_IF_ERROR(CheckNumberLength(e, text));
    std::string cleaned = WithoutUnderscores(text);
    if (!cleaned.empty() && cleaned[0] == '+') cleaned.erase(0, 1);
    const bool negative = !cleaned.empty() && cleaned[0] == '-';
    const std::string_view mantissa_etc = std::string_view(cleaned).substr(negative ? 1 : 0);
    // What Java's parseDouble takes among what the YAML float grammar
    // allows: digits with an optional '.', at least one digit, an optional
    // exponent. Not .inf/.nan (Java spells them Infinity/NaN) nor 1:30.5.
    size_t i = 0, digits = 0;
    while (i < mantissa_etc.size() && IsDigit(mantissa_etc[i])) ++i, ++digits;
    if (i < mantissa_etc.size() && mantissa_etc[i] == '.') {
      ++i;
      while (i < mantissa_etc.size() && IsDigit(mantissa_etc[i])) ++i, ++digits;
    }
    if (digits == 0 || (i < mantissa_etc.size() && !IsExponent(mantissa_etc, i))) {
      return At(e.start_mark,
                StrCat("YAML float '", text,
                       "' has no JSON number (Jackson fails on it, so Elasticsearch did too)"));
    }
    double value = 0;
    const char* first = cleaned.data();
    const char* last = cleaned.data() + cleaned.size();
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range) {
      // Java parses past the range to infinity and below it to zero.
      const bool overflow = DecimalMagnitude(mantissa_etc) > 0;
      value = overflow ? HUGE_VAL : 0.0;
      if (negative) value = -value;
    } else if (ec != std::errc() || ptr != last) {
      return At(e.start_mark, StrCat("YAML float '", text, "' does not parse"));
    }
    internal::AppendJsonDouble(value, /*single=*/false, out_);
    return absl::OkStatus();
  }

  // !!binary: base64 as Jackson's MIME variant reads it (line breaks and
  // spaces ignored), written back as standard padded base64, as Jackson
  // writes binary values.
  absl::Status Binary(const yaml_event_t& e, std::string_view text) {
    std::string compact;
    for (char c : text) {
      if (static_cast<unsigned char>(c) > ' ') compact.push_back(c);
    }
    auto bytes = core::Base64Decode(compact);
    if (!bytes.ok()) {
      return At(e.start_mark,
                StrCat("invalid base64 in a !!binary scalar: ", bytes.status().message()));
    }
    out_.push_back('"');
    out_ += core::Base64Encode(*bytes);
    out_.push_back('"');
    return absl::OkStatus();
  }

  std::span<const uint8_t> in_;
  std::string_view source_;
  std::string& out_;
  yaml_parser_t parser_{};
  bool initialized_ = false;
  std::vector<Frame> stack_;
};

}  // namespace

absl::Status AppendYamlAsJson(std::span<const uint8_t> yaml, std::string_view source,
                              std::string& out) {
  const size_t original = out.size();
  absl::Status status = YamlToJson(yaml, source, out).Run();
  if (!status.ok()) out.resize(original);
  return status;
}

}  // namespace rfs::content
