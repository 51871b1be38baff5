// Jolt's modify-overwrite-beta, modify-default-beta and modify-define-beta (Modifier in
// bazaarvoice/jolt 0.1.8, with modifier/spec, modifier/DataType, modifier/OpMode and the functions
// of modifier/function): the spec's leaves set values in place, literals or what a function makes
// of the input or of values found with @(n,path).
//
// Java's values carry a class that the functions test (Integer, Long, Double, String, ...). Here an
// integer is an Integer when it fits in 32 bits and a Long otherwise, as Jackson reads JSON; a Long
// a function makes (toLong(5)) reads back as an Integer in a later function of the same operation.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/str_cat.hpp"

#include "boost/json/serialize.hpp"
#include "jolt_internal.hpp"
#include "jolt_paths.hpp"
#include "user_regex_internal.hpp"
#include <locale.h>

namespace rfs::transform::internal::jolt {

namespace json = boost::json;
using core::StrCat;

namespace {

// --- Java's view of a value ---

enum class JType { kNull, kBoolean, kInteger, kLong, kBigInteger, kDouble, kString, kList, kMap };

JType TypeOf(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return JType::kNull;
    case json::kind::bool_:
      return JType::kBoolean;
    case json::kind::int64: {
      const int64_t i = v.get_int64();
      return i >= INT32_MIN && i <= INT32_MAX ? JType::kInteger : JType::kLong;
    }
    case json::kind::uint64:
      return v.get_uint64() <= static_cast<uint64_t>(INT32_MAX)   ? JType::kInteger
             : v.get_uint64() <= static_cast<uint64_t>(INT64_MAX) ? JType::kLong
                                                                  : JType::kBigInteger;
    case json::kind::double_:
      return JType::kDouble;
    case json::kind::string:
      return JType::kString;
    case json::kind::array:
      return JType::kList;
    case json::kind::object:
      return JType::kMap;
  }
  return JType::kNull;
}

bool IsNumber(const json::value& v) {
  const JType t = TypeOf(v);
  return t == JType::kInteger || t == JType::kLong || t == JType::kBigInteger ||
         t == JType::kDouble;
}

// Java's String.valueOf for the values Jackson makes (AbstractCollection/AbstractMap.toString).
std::string JavaText(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::string:
      return std::string(v.get_string());
    case json::kind::array: {
      std::string out = "[";
      bool first = true;
      for (const auto& e : v.get_array()) {
        out += (first ? "" : ", ") + JavaText(e);
        first = false;
      }
      return out + "]";
    }
    case json::kind::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.get_object()) {
        out += StrCat(first ? "" : ", ", std::string_view(k), "=", JavaText(e));
        first = false;
      }
      return out + "}";
    }
    default:
      return *ScalarKeyText(v);
  }
}

// Java's String.trim: every char <= ' ' off both ends.
std::string_view JavaTrim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && static_cast<unsigned char>(s[b]) <= ' ') ++b;
  while (e > b && static_cast<unsigned char>(s[e - 1]) <= ' ') --e;
  return s.substr(b, e - b);
}

// Double.parseDouble: trimmed, an optional sign, decimal digits with an optional exponent and an
// optional f/F/d/D suffix, or NaN / Infinity.
std::optional<double> JavaParseDouble(std::string_view text) {
  std::string s(JavaTrim(text));
  if (s.empty()) return std::nullopt;
  std::string body = s;
  std::string sign;
  if (body[0] == '+' || body[0] == '-') {
    sign = body.substr(0, 1);
    body.erase(0, 1);
  }
  if (body == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (body == "Infinity") {
    return sign == "-" ? -std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::infinity();
  }
  if (!body.empty() && std::string("fFdD").find(body.back()) != std::string::npos) body.pop_back();
  // Digits, at most one '.', an optional exponent: nothing else (no hex, no spaces inside).
  size_t i = 0;
  size_t digits = 0;
  while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++digits;
  if (i < body.size() && body[i] == '.') {
    ++i;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  double value = 0;
  const std::string number = sign + body;
  auto [end, ec] =
      std::from_chars(number.data() + (sign == "+" ? 1 : 0), number.data() + number.size(), value);
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves the value alone on overflow; Java gives infinity or zero.
    value = std::strtod(number.c_str(), nullptr);
  }
  return value;
}

// Objects.toNumber: a number as it is; a string as an Integer, else a Long, else a Double.
std::optional<json::value> ToNumber(const json::value& v) {
  if (IsNumber(v)) return v;
  if (!v.is_string()) return std::nullopt;
  const std::string_view s = v.get_string();
  if (auto i = JavaParseInt(s)) return json::value(static_cast<int64_t>(*i));
  if (auto l = JavaParseLong(s)) return json::value(*l);
  if (auto d = JavaParseDouble(s)) return json::value(*d);
  return std::nullopt;
}

double DoubleValue(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return v.get_double();
}

int64_t LongValue(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) return static_cast<int64_t>(v.get_uint64());
  const double d = v.get_double();
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(d);
}

json::value Int(int32_t i) { return json::value(static_cast<int64_t>(i)); }

std::optional<json::value> ToInteger(const json::value& v) {
  if (IsNumber(v)) return Int(JavaIntValue(v));
  if (v.is_string()) {
    if (auto n = ToNumber(v)) return Int(JavaIntValue(*n));
  }
  return std::nullopt;
}
std::optional<json::value> ToLong(const json::value& v) {
  if (IsNumber(v)) return json::value(LongValue(v));
  if (v.is_string()) {
    if (auto n = ToNumber(v)) return json::value(LongValue(*n));
  }
  return std::nullopt;
}
std::optional<json::value> ToDouble(const json::value& v) {
  if (IsNumber(v)) return json::value(DoubleValue(v));
  if (v.is_string()) {
    if (auto n = ToNumber(v)) return json::value(DoubleValue(*n));
  }
  return std::nullopt;
}

// Back from UTF-16 (ToUtf16), for what Java slices or pads by code units.
std::string FromUtf16(std::u16string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    uint32_t cp = s[i];
    if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < s.size() && s[i + 1] >= 0xDC00 &&
        s[i + 1] < 0xE000) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (s[i + 1] - 0xDC00);
      ++i;
    } else if (cp >= 0xD800 && cp < 0xE000) {
      cp = 0xFFFD;  // half a pair (a cut through it) is not UTF-8: the replacement character
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

// Case mapping a code point at a time (Unicode's simple mapping, through the C.UTF-8 locale), with
// the full mappings Java applies most often: ß -> SS, İ -> i̇, and a final Σ -> ς.
std::string MapCase(std::string_view s, bool upper) {
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  std::vector<uint32_t> points;
  for (size_t i = 0; i < s.size();) {
    const size_t next = NextUtf8(s, i);
    const std::u16string units = ToUtf16(s.substr(i, next - i));
    uint32_t cp = units[0];
    if (units.size() == 2) cp = 0x10000 + ((units[0] - 0xD800) << 10) + (units[1] - 0xDC00);
    points.push_back(cp);
    i = next;
  }
  auto is_letter = [](uint32_t cp) {
    return utf8 != static_cast<locale_t>(0) ? iswalpha_l(static_cast<wint_t>(cp), utf8) != 0
                                            : std::isalpha(static_cast<int>(cp & 0x7F)) != 0;
  };
  std::u32string out;
  for (size_t i = 0; i < points.size(); ++i) {
    const uint32_t cp = points[i];
    if (upper && cp == 0xDF) {
      out += U"SS";
      continue;
    }
    if (!upper && cp == 0x130) {
      out += U"i\u0307";
      continue;
    }
    if (!upper && cp == 0x3A3) {
      const bool after_letter = i > 0 && is_letter(points[i - 1]);
      const bool before_letter = i + 1 < points.size() && is_letter(points[i + 1]);
      out += after_letter && !before_letter ? U'\u03C2' : U'\u03C3';
      continue;
    }
    if (utf8 != static_cast<locale_t>(0)) {
      out += static_cast<char32_t>(upper ? towupper_l(static_cast<wint_t>(cp), utf8)
                                         : towlower_l(static_cast<wint_t>(cp), utf8));
    } else {
      out += static_cast<char32_t>(cp < 0x80 ? (upper ? std::toupper(static_cast<int>(cp))
                                                      : std::tolower(static_cast<int>(cp)))
                                             : cp);
    }
  }
  std::string text;
  for (char32_t cp : out) {
    std::u16string units;
    if (cp >= 0x10000) {
      units.push_back(static_cast<char16_t>(0xD800 + ((cp - 0x10000) >> 10)));
      units.push_back(static_cast<char16_t>(0xDC00 + ((cp - 0x10000) & 0x3FF)));
    } else {
      units.push_back(static_cast<char16_t>(cp));
    }
    text += FromUtf16(units);
  }
  return text;
}

// --- The functions (modifier/function), on Java's varargs ---

using Args = std::vector<json::value>;
using Result = std::optional<json::value>;
using Fn = std::function<Result(const Args&)>;

// Function.BaseFunction: no argument -> nothing; one list -> applyList (nothing if empty); one
// null -> nothing; one value -> applySingle; several -> applyList of them.
Fn Base(std::function<Result(const json::array&)> list,
        std::function<Result(const json::value&)> single) {
  return [list, single](const Args& args) -> Result {
    if (args.empty()) return std::nullopt;
    if (args.size() == 1) {
      if (args[0].is_array()) {
        if (args[0].get_array().empty()) return std::nullopt;
        return list(args[0].get_array());
      }
      if (args[0].is_null()) return std::nullopt;
      return single(args[0]);
    }
    return list(json::array(args.begin(), args.end()));
  };
}

// SingleFunction: applySingle to each element of a list, keeping those it gives nothing for.
Fn Single(std::function<Result(const json::value&)> single) {
  return Base(
      [single](const json::array& input) -> Result {
        json::array out;
        for (const auto& o : input) {
          auto r = single(o);
          out.push_back(r ? *std::move(r) : o);
        }
        return json::value(std::move(out));
      },
      single);
}

// ListFunction: a single value gives nothing.
Fn List(std::function<Result(const json::array&)> list) {
  return Base(list, [](const json::value&) -> Result { return std::nullopt; });
}

// ArgDrivenFunction: the first argument, of the given type, drives the function over the rest.
Fn ArgDriven(JType special_type, std::function<Result(const json::value&, const json::array&)> list,
             std::function<Result(const json::value&, const json::value&)> single) {
  return [=](const Args& given) -> Result {
    Args args = given;
    if (args.size() == 1 && args[0].is_array()) {
      const json::array list_arg = args[0].get_array();
      args.assign(list_arg.begin(), list_arg.end());
    }
    if (args.size() < 2 || TypeOf(args[0]) != special_type) return std::nullopt;
    if (args.size() == 2) {
      if (args[1].is_array()) return list(args[0], args[1].get_array());
      return single(args[0], args[1]);
    }
    return list(args[0], json::array(args.begin() + 1, args.end()));
  };
}
Fn ArgDrivenList(JType special_type,
                 std::function<Result(const json::value&, const json::array&)> list) {
  return ArgDriven(special_type, list,
                   [](const json::value&, const json::value&) -> Result { return std::nullopt; });
}
Fn ArgDrivenSingle(JType special_type,
                   std::function<Result(const json::value&, const json::value&)> single) {
  return ArgDriven(
      special_type,
      [single](const json::value& special, const json::array& input) -> Result {
        json::array out;
        for (const auto& o : input) {
          auto r = single(special, o);
          out.push_back(r ? *std::move(r) : o);
        }
        return json::value(std::move(out));
      },
      single);
}

// SquashFunction: like BaseFunction, but a list goes to applySingle whole.
Fn Squash(std::function<Result(json::value)> single) {
  return [single](const Args& args) -> Result {
    if (args.empty()) return std::nullopt;
    if (args.size() == 1) {
      if (args[0].is_array() && args[0].get_array().empty()) return std::nullopt;
      if (args[0].is_null()) return std::nullopt;
      return single(args[0]);
    }
    return single(json::value(json::array(args.begin(), args.end())));
  };
}

void SquashNulls(json::value& v) {
  if (v.is_array()) {
    auto& a = v.get_array();
    a.erase(std::remove_if(a.begin(), a.end(), [](const json::value& e) { return e.is_null(); }),
            a.end());
  } else if (v.is_object()) {
    auto& o = v.get_object();
    std::vector<std::string> nulls;
    for (const auto& [k, e] : o) {
      if (e.is_null()) nulls.emplace_back(k);
    }
    for (const auto& k : nulls) o.stable_erase(k);
  }
}
void SquashNullsDeep(json::value& v) {
  SquashNulls(v);
  if (v.is_array()) {
    for (auto& e : v.get_array()) SquashNullsDeep(e);
  } else if (v.is_object()) {
    for (auto& [k, e] : v.get_object()) SquashNullsDeep(e);
  }
}

// Java's equals between the values Jackson makes: an Integer never equals a Long or a Double.
bool JavaEquals(const json::value& a, const json::value& b) {
  if (TypeOf(a) != TypeOf(b)) return false;
  if (a.is_array()) {
    const auto& x = a.get_array();
    const auto& y = b.get_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!JavaEquals(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    const auto& x = a.get_object();
    const auto& y = b.get_object();
    if (x.size() != y.size()) return false;
    for (const auto& [k, e] : x) {
      const json::value* other = y.if_contains(k);
      if (other == nullptr || !JavaEquals(e, *other)) return false;
    }
    return true;
  }
  if (a.is_double()) {
    // Double.equals compares bits: NaN equals NaN, 0.0 differs from -0.0.
    const double x = a.get_double();
    const double y = b.get_double();
    return (std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y));
  }
  return a == b;
}

// Math.max / Math.min over Integers, Longs, Doubles and numeric strings, and which one wins.
Result Extreme(const json::array& args, bool max) {
  if (args.empty()) return std::nullopt;
  int32_t best_int = max ? INT32_MIN : INT32_MAX;
  double best_double =
      max ? -std::numeric_limits<double>::max() : std::numeric_limits<double>::max();
  int64_t best_long = max ? INT64_MIN : INT64_MAX;
  bool found = false;
  for (const auto& given : args) {
    std::optional<json::value> arg(given);
    if (given.is_string()) arg = ToNumber(given);
    if (!arg) continue;
    switch (TypeOf(*arg)) {
      case JType::kInteger: {
        const auto i = static_cast<int32_t>(
            arg->is_int64() ? arg->get_int64() : static_cast<int64_t>(arg->get_uint64()));
        best_int = max ? std::max(best_int, i) : std::min(best_int, i);
        found = true;
        break;
      }
      case JType::kDouble: {
        const double d = arg->get_double();
        // java.lang.Math.max/min: NaN wins.
        if (std::isnan(d) || std::isnan(best_double)) {
          best_double = std::numeric_limits<double>::quiet_NaN();
        } else if (d == 0 && best_double == 0) {
          // Math.max(-0.0, 0.0) is 0.0, Math.min is -0.0.
          best_double = (max ? !std::signbit(d) || !std::signbit(best_double)
                             : !std::signbit(d) && !std::signbit(best_double))
                            ? 0.0
                            : -0.0;
        } else {
          best_double = max ? std::max(best_double, d) : std::min(best_double, d);
        }
        found = true;
        break;
      }
      case JType::kLong: {
        const int64_t l = LongValue(*arg);
        best_long = max ? std::max(best_long, l) : std::min(best_long, l);
        found = true;
        break;
      }
      default:
        break;
    }
  }
  if (!found) return std::nullopt;
  const int64_t double_as_long = LongValue(json::value(best_double));
  if (max) {
    if (best_int >= double_as_long && best_int >= best_long) return Int(best_int);
    if (best_long >= double_as_long) return json::value(best_long);
  } else {
    if (best_int <= double_as_long && best_int <= best_long) return Int(best_int);
    if (best_long <= double_as_long) return json::value(best_long);
  }
  return json::value(best_double);
}

Result Divide(const json::array& args) {
  if (args.size() != 2) return std::nullopt;
  const auto n = ToNumber(args[0]);
  const auto d = ToNumber(args[1]);
  if (!n || !d) return std::nullopt;
  const double denominator = DoubleValue(*d);
  if (denominator == 0) return std::nullopt;
  return json::value(DoubleValue(*n) / denominator);
}

// new BigDecimal(x).setScale(digits, HALF_UP).doubleValue(): rounded on x's exact decimal value.
std::optional<double> RoundHalfUp(double x, int digits) {
  // new BigDecimal(Infinity or NaN) throws: nothing.
  if (!std::isfinite(x)) return std::nullopt;
  // A double's exact decimal value has at most 1074 digits after the point and 309 before it.
  if (digits >= 1075) return x;
  if (digits <= -400) return 0.0;
  char buffer[1500];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, std::fabs(x), std::chars_format::fixed, 1100);
  if (ec != std::errc()) return std::nullopt;
  const std::string text(buffer, end);
  const size_t point = text.find('.');
  const std::string all = text.substr(0, point) + text.substr(point + 1);
  const long keep = static_cast<long>(point) + digits;  // digits kept from the left
  if (keep < 0) return 0.0;
  std::string kept = all.substr(0, static_cast<size_t>(std::min<long>(keep, all.size())));
  const bool round_up =
      static_cast<size_t>(keep) < all.size() && all[static_cast<size_t>(keep)] >= '5';
  if (round_up) {
    int i = static_cast<int>(kept.size()) - 1;
    while (i >= 0 && kept[static_cast<size_t>(i)] == '9') kept[static_cast<size_t>(i--)] = '0';
    if (i >= 0) {
      ++kept[static_cast<size_t>(i)];
    } else {
      kept.insert(kept.begin(), '1');
    }
  }
  // kept holds the integer digits (point of them, one more after a carry) then `digits` more.
  const size_t int_digits = kept.size() >= static_cast<size_t>(std::max(digits, 0))
                                ? kept.size() - static_cast<size_t>(std::max(digits, 0))
                                : 0;
  std::string number = kept.substr(0, int_digits);
  if (digits < 0) number += std::string(static_cast<size_t>(-digits), '0');
  if (number.empty()) number = "0";
  if (digits > 0) number += "." + kept.substr(int_digits);
  double value = 0;
  std::from_chars(number.data(), number.data() + number.size(), value);
  // BigDecimal has no negative zero.
  if (value == 0) return 0.0;
  return std::signbit(x) ? -value : value;
}

// Arrays.sort of Comparable values of one class; anything else throws in Java (nothing here).
Result SortList(const json::array& input) {
  json::array out = input;
  if (out.size() < 2) return json::value(std::move(out));
  const JType t = TypeOf(out[0]);
  for (const auto& e : out) {
    if (TypeOf(e) != t) return std::nullopt;
  }
  switch (t) {
    case JType::kInteger:
    case JType::kLong:
      std::stable_sort(out.begin(), out.end(), [](const json::value& a, const json::value& b) {
        return LongValue(a) < LongValue(b);
      });
      break;
    case JType::kBigInteger:
      std::stable_sort(out.begin(), out.end(), [](const json::value& a, const json::value& b) {
        return a.get_uint64() < b.get_uint64();
      });
      break;
    case JType::kDouble:
      // Double.compareTo: -0.0 < 0.0, NaN last.
      std::stable_sort(out.begin(), out.end(), [](const json::value& a, const json::value& b) {
        const double x = a.get_double();
        const double y = b.get_double();
        if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
        if (x == y) return std::signbit(x) && !std::signbit(y);
        return x < y;
      });
      break;
    case JType::kString:
      std::stable_sort(out.begin(), out.end(), [](const json::value& a, const json::value& b) {
        return ToUtf16(a.get_string()) < ToUtf16(b.get_string());
      });
      break;
    case JType::kBoolean:
      std::stable_sort(out.begin(), out.end(), [](const json::value& a, const json::value& b) {
        return !a.get_bool() && b.get_bool();
      });
      break;
    default:
      return std::nullopt;  // maps, lists and nulls are not Comparable
  }
  return json::value(std::move(out));
}

// Java's String.split(regex) (limit 0), on RE2.
Result Split(const std::string& separator, const std::string& source) {
  auto regex = CompileUserRegex(separator, "the split separator");
  if (!regex.ok()) throw RunError(std::string(regex.status().message()));
  const re2::RE2& re = **regex;
  json::array parts;
  re2::StringPiece input(source);
  size_t start = 0;
  size_t search = 0;
  re2::StringPiece match;
  while (search <= source.size() &&
         re.Match(input, search, source.size(), re2::RE2::UNANCHORED, &match, 1)) {
    const size_t at = static_cast<size_t>(match.data() - source.data());
    const size_t end = at + match.size();
    if (match.empty()) {
      // A zero-width match at the start gives no empty first part (Java 8 and later).
      if (at != 0 && at < source.size()) {
        parts.emplace_back(source.substr(start, at - start));
        start = at;
      }
      search = at < source.size() ? NextUtf8(source, at) : source.size() + 1;
      continue;
    }
    parts.emplace_back(source.substr(start, at - start));
    start = end;
    search = end;
  }
  parts.emplace_back(source.substr(start));
  if (parts.size() > 1 || !source.empty()) {
    while (!parts.empty() && parts.back().get_string().empty()) parts.pop_back();
  }
  return json::value(std::move(parts));
}

std::string PadTo(const std::string& source, int width, char16_t filler, bool left) {
  std::u16string units = ToUtf16(source);
  if (static_cast<size_t>(width) <= units.size()) return source;
  const std::u16string pad(static_cast<size_t>(width) - units.size(), filler);
  return FromUtf16(left ? pad + units : units + pad);
}

Result Pad(const json::value& source, const json::array& args, bool left) {
  if (args.size() < 2) throw RunError("pad: too few arguments");  // Java's List.get fails
  if (TypeOf(args[0]) != JType::kInteger || !args[1].is_string()) return std::nullopt;
  const int64_t width =
      args[0].is_int64() ? args[0].get_int64() : static_cast<int64_t>(args[0].get_uint64());
  if (width <= 0 || width > 500) return std::nullopt;
  const std::u16string filler = ToUtf16(args[1].get_string());
  if (filler.size() != 1) return std::nullopt;
  return json::value(
      PadTo(std::string(source.get_string()), static_cast<int>(width), filler[0], left));
}

using FunctionMap = std::map<std::string, Fn, std::less<>>;

// Presence: noop, isPresent, notNull, isNull.
void AddPresenceFunctions(FunctionMap& m) {
  m.insert({
      {"noop", [](const Args&) -> Result { return std::nullopt; }},
      {"isPresent", [](const Args& a) -> Result { return a.empty() ? Result() : a[0]; }},
      {"notNull",
       [](const Args& a) -> Result { return a.empty() || a[0].is_null() ? Result() : a[0]; }},
      {"isNull",
       [](const Args& a) -> Result { return a.empty() || !a[0].is_null() ? Result() : a[0]; }},
  });
}

// Strings.java.
void AddStringFunctions(FunctionMap& m) {
  m.insert({
      {"toLower", Single([](const json::value& v) -> Result {
         if (!v.is_string()) return std::nullopt;
         return json::value(MapCase(v.get_string(), false));
       })},
      {"toUpper", Single([](const json::value& v) -> Result {
         if (!v.is_string()) return std::nullopt;
         return json::value(MapCase(v.get_string(), true));
       })},
      {"trim", Single([](const json::value& v) -> Result {
         if (!v.is_string()) return std::nullopt;
         return json::value(JavaTrim(v.get_string()));
       })},
      {"concat", List([](const json::array& a) -> Result {
         std::string out;
         for (const auto& e : a) {
           if (!e.is_null()) out += JavaText(e);
         }
         return json::value(out);
       })},
      {"join", ArgDrivenList(JType::kString,
                             [](const json::value& sep, const json::array& a) -> Result {
                               std::string out;
                               for (size_t i = 0; i < a.size(); ++i) {
                                 if (a[i].is_null()) continue;
                                 const std::string text = JavaText(a[i]);
                                 if (text.empty()) continue;
                                 out += text;
                                 if (i + 1 < a.size()) out += sep.get_string();
                               }
                               return json::value(out);
                             })},
      {"split", ArgDrivenSingle(JType::kString,
                                [](const json::value& sep, const json::value& source) -> Result {
                                  if (!source.is_string()) return std::nullopt;
                                  return Split(std::string(sep.get_string()),
                                               std::string(source.get_string()));
                                })},
      {"substring", List([](const json::array& a) -> Result {
         if (a.size() != 3 || !a[0].is_string() || TypeOf(a[1]) != JType::kInteger ||
             TypeOf(a[2]) != JType::kInteger) {
           return std::nullopt;
         }
         const std::u16string s = ToUtf16(a[0].get_string());
         const int64_t start = LongValue(a[1]);
         const int64_t end = LongValue(a[2]);
         if (start >= end || start < 0 || end < 1 || end > static_cast<int64_t>(s.size())) {
           return std::nullopt;
         }
         return json::value(FromUtf16(std::u16string_view(s).substr(
             static_cast<size_t>(start), static_cast<size_t>(end - start))));
       })},
      {"leftPad",
       ArgDrivenList(JType::kString,
                     [](const json::value& s, const json::array& a) { return Pad(s, a, true); })},
      {"rightPad",
       ArgDrivenList(JType::kString,
                     [](const json::value& s, const json::array& a) { return Pad(s, a, false); })},
  });
}

// Math.java.
void AddMathFunctions(FunctionMap& m) {
  m.insert({
      {"min",
       Base([](const json::array& a) { return Extreme(a, false); },
            [](const json::value& v) -> Result { return IsNumber(v) ? Result(v) : Result(); })},
      {"max",
       Base([](const json::array& a) { return Extreme(a, true); },
            [](const json::value& v) -> Result { return IsNumber(v) ? Result(v) : Result(); })},
      {"abs", Single([](const json::value& given) -> Result {
         std::optional<json::value> v(given);
         if (given.is_string()) v = ToNumber(given);
         if (!v) return std::nullopt;
         switch (TypeOf(*v)) {
           case JType::kInteger: {
             const int32_t i = JavaIntValue(*v);
             return Int(i == INT32_MIN ? i : std::abs(i));
           }
           case JType::kLong: {
             const int64_t l = LongValue(*v);
             return json::value(l == INT64_MIN ? l : std::llabs(l));
           }
           case JType::kDouble:
             return json::value(std::fabs(v->get_double()));
           default:
             return std::nullopt;
         }
       })},
      {"avg", List([](const json::array& a) -> Result {
         double sum = 0;
         int count = 0;
         for (const auto& e : a) {
           if (auto n = ToNumber(e)) {
             sum += DoubleValue(*n);
             ++count;
           }
         }
         if (count == 0) return std::nullopt;
         return json::value(sum / count);
       })},
      {"intSum", List([](const json::array& a) -> Result {
         uint32_t sum = 0;  // Java's int arithmetic wraps
         for (const auto& e : a) {
           if (auto i = ToInteger(e)) sum += static_cast<uint32_t>(i->get_int64());
         }
         return Int(static_cast<int32_t>(sum));
       })},
      {"doubleSum", List([](const json::array& a) -> Result {
         double sum = 0;
         for (const auto& e : a) {
           if (auto d = ToDouble(e)) sum += d->get_double();
         }
         return json::value(sum);
       })},
      {"longSum", List([](const json::array& a) -> Result {
         uint64_t sum = 0;
         for (const auto& e : a) {
           if (auto l = ToLong(e)) sum += static_cast<uint64_t>(l->get_int64());
         }
         return json::value(static_cast<int64_t>(sum));
       })},
      {"intSubtract", List([](const json::array& a) -> Result {
         if (a.size() != 2 || TypeOf(a[0]) != JType::kInteger || TypeOf(a[1]) != JType::kInteger) {
           return std::nullopt;
         }
         return Int(static_cast<int32_t>(static_cast<uint32_t>(JavaIntValue(a[0])) -
                                         static_cast<uint32_t>(JavaIntValue(a[1]))));
       })},
      {"doubleSubtract", List([](const json::array& a) -> Result {
         if (a.size() != 2 || !a[0].is_double() || !a[1].is_double()) return std::nullopt;
         return json::value(a[0].get_double() - a[1].get_double());
       })},
      {"longSubtract", List([](const json::array& a) -> Result {
         if (a.size() != 2 || TypeOf(a[0]) != JType::kLong || TypeOf(a[1]) != JType::kLong) {
           return std::nullopt;
         }
         return json::value(static_cast<int64_t>(static_cast<uint64_t>(LongValue(a[0])) -
                                                 static_cast<uint64_t>(LongValue(a[1]))));
       })},
      {"divide", List(Divide)},
      {"divideAndRound",
       ArgDrivenList(JType::kInteger,
                     [](const json::value& digits, const json::array& a) -> Result {
                       auto divided = Divide(a);
                       if (!divided) return std::nullopt;
                       auto rounded = RoundHalfUp(divided->get_double(), JavaIntValue(digits));
                       if (!rounded) return std::nullopt;
                       return json::value(*rounded);
                     })},
  });
}

// Objects.java.
void AddObjectFunctions(FunctionMap& m) {
  m.insert({
      {"toInteger", Single(ToInteger)},
      {"toDouble", Single(ToDouble)},
      {"toLong", Single(ToLong)},
      {"toBoolean", Single([](const json::value& v) -> Result {
         if (v.is_bool()) return v;
         if (v.is_string()) {
           std::string lower(v.get_string());
           for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
           if (lower == "true") return json::value(true);
           if (lower == "false") return json::value(false);
         }
         return std::nullopt;
       })},
      {"toString", Single([](const json::value& v) -> Result { return json::value(JavaText(v)); })},
      {"size",
       [](const Args& a) -> Result {
         if (a.empty()) return std::nullopt;
         if (a.size() > 1) return Int(static_cast<int32_t>(a.size()));
         if (a[0].is_array()) return Int(static_cast<int32_t>(a[0].get_array().size()));
         if (a[0].is_string()) return Int(static_cast<int32_t>(ToUtf16(a[0].get_string()).size()));
         if (a[0].is_object()) return Int(static_cast<int32_t>(a[0].get_object().size()));
         return std::nullopt;
       }},
      {"squashNulls", Squash([](json::value v) -> Result {
         SquashNulls(v);
         return v;
       })},
      {"recursivelySquashNulls", Squash([](json::value v) -> Result {
         SquashNullsDeep(v);
         return v;
       })},
      {"squashDuplicates", Squash([](json::value v) -> Result {
         if (!v.is_array()) return v;
         json::array distinct;
         for (const auto& e : v.get_array()) {
           if (std::none_of(distinct.begin(), distinct.end(),
                            [&](const json::value& d) { return JavaEquals(d, e); })) {
             distinct.push_back(e);
           }
         }
         return json::value(std::move(distinct));
       })},
  });
}

// Lists.java.
void AddListFunctions(FunctionMap& m) {
  m.insert({
      {"firstElement", List([](const json::array& a) -> Result { return a.front(); })},
      {"lastElement", List([](const json::array& a) -> Result { return a.back(); })},
      {"elementAt", ArgDrivenList(JType::kInteger,
                                  [](const json::value& index, const json::array& a) -> Result {
                                    const int64_t i = LongValue(index);
                                    if (static_cast<int64_t>(a.size()) <= i) return std::nullopt;
                                    if (i < 0) throw RunError("elementAt: a negative index");
                                    return a[static_cast<size_t>(i)];
                                  })},
      {"toList", Base([](const json::array& a) -> Result { return json::value(a); },
                      [](const json::value& v) -> Result { return json::value(json::array{v}); })},
      {"sort", Base(SortList, [](const json::value& v) -> Result { return v; })},
  });
}

const FunctionMap& Functions() {
  static const FunctionMap* functions = [] {
    auto* m = new FunctionMap;
    AddPresenceFunctions(*m);
    AddStringFunctions(*m);
    AddMathFunctions(*m);
    AddObjectFunctions(*m);
    AddListFunctions(*m);
    return m;
  }();
  return *functions;
}

// --- Arguments and evaluators (FunctionArg, FunctionEvaluator) ---

// Fails the whole operation (not only the function, as Java's own errors there do).
struct AncestorSquash : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Arg {
  enum class Kind { kLiteral, kSelf, kContext } kind = Kind::kLiteral;
  json::value literal;
  std::shared_ptr<const Transpose> self;
  bool context_root = false;

  // The argument's value; nullopt when a lookup finds nothing (a context is never given here).
  std::optional<json::value> Evaluate(const Walk& walk) const {
    switch (kind) {
      case Kind::kLiteral:
        return literal;
      case Kind::kSelf: {
        auto found = self->Read(walk);
        if (!found) return std::nullopt;
        return **found;
      }
      case Kind::kContext:
        // Chainr runs without a context: "^" alone reads its null root, "^path" finds nothing.
        if (context_root) return json::value();
        return std::nullopt;
    }
    return std::nullopt;
  }
};

// FunctionArg.forLiteral(arg, true): '' quoted text, true/false, a number, or the text itself.
json::value ParseLiteralArg(const std::string& arg) {
  if (arg.empty()) return json::value();
  if (arg == "'") throw SpecError("a function argument that is a lone '");
  if (arg.size() >= 2 && arg.front() == '\'' && arg.back() == '\'') {
    return json::value(arg.substr(1, arg.size() - 2));
  }
  std::string lower = arg;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "false") return json::value(lower == "true");
  if (auto n = ToNumber(json::value(arg))) return *n;
  return json::value(arg);
}

// ModifierLeafSpec.constructSingleArg.
Arg MakeArg(const std::string& text, bool for_function) {
  Arg arg;
  if (!text.empty() && text[0] == '^') {
    arg.kind = Arg::Kind::kContext;
    arg.context_root = text.size() == 1;
  } else if (!text.empty() && text[0] == '@') {
    // TraversalBuilder prefixes "root."; the path's last key must be the @ lookup.
    auto keys = ParseDotPath("root." + text);
    if (keys.empty() || keys.back().kind != PathKey::Kind::kTranspose) {
      throw SpecError(StrCat("the argument ", text, " is not an @ lookup (write @(n,path))"));
    }
    arg.kind = Arg::Kind::kSelf;
    arg.self = keys.back().transpose;
  } else if (for_function) {
    arg.literal = ParseLiteralArg(text);
  } else {
    arg.literal = json::value(text);
  }
  return arg;
}

// SpecStringParser.parseFunctionArgs: "name(a, 'b,c', @(1,x))" -> name, then the arguments.
std::vector<std::string> ParseFunctionArgs(std::string_view text) {
  std::vector<std::string> out;
  const size_t open = text.find('(');
  if (open == std::string_view::npos || text.size() < open + 2) {
    throw SpecError(StrCat("invalid function call =", text));
  }
  out.emplace_back(text.substr(0, open));
  const std::string_view inside = text.substr(open + 1, text.size() - open - 2);
  std::string current;
  bool in_brackets = false;
  bool in_quotes = false;
  auto trimmed = [](const std::string& s) { return std::string(JavaTrim(s)); };
  for (char c : inside) {
    if (c == '(' && !in_quotes) in_brackets = true;
    if (c == ')' && !in_quotes) in_brackets = false;
    if (c == '\'') in_quotes = !in_quotes;
    if (c == ',' && !in_brackets && !in_quotes) {
      out.push_back(trimmed(current));
      current.clear();
      continue;
    }
    current += c;
  }
  out.push_back(trimmed(current));
  return out;
}

struct Evaluator {
  const Fn* function = nullptr;  // nullptr: the value of the first argument
  std::vector<Arg> args;
  // squashNulls and recursivelySquashNulls change the list or map they are given in place (Java
  // passes the object itself): where it came from, it is squashed too.
  enum class InPlace { kNo, kShallow, kDeep } in_place = InPlace::kNo;

  // FunctionEvaluator.evaluate: what the function makes, nullopt for nothing.
  std::optional<json::value> Evaluate(const json::value* input, const Walk& walk) const {
    if (function == nullptr) return args[0].Evaluate(walk);
    Args values;
    if (args.size() == 1) {
      if (auto v = args[0].Evaluate(walk)) values.push_back(*std::move(v));
    } else if (args.size() > 1) {
      for (const auto& a : args) {
        auto v = a.Evaluate(walk);
        values.push_back(v ? *std::move(v) : json::value());
      }
    } else if (input != nullptr) {
      values.push_back(*input);
    }
    auto result = (*function)(values);
    if (in_place != InPlace::kNo && result) SquashSource(input, walk);
    return result;
  }

  void SquashSource(const json::value* input, const Walk& walk) const {
    const json::value* source = nullptr;
    if (args.empty()) {
      source = input;
    } else if (args.size() == 1 && args[0].kind == Arg::Kind::kSelf) {
      if (auto found = args[0].self->Read(walk)) source = *found;
    }
    if (source == nullptr) return;
    // Squashing a map or list the walk stands inside (above the leaf's own) would move the
    // entries the walk points at: refused rather than followed.
    const auto& steps = walk.steps;
    for (size_t i = 0; i + 2 < steps.size(); ++i) {
      if (steps[i].tree == source && steps[i + 1].tree != source) {
        throw AncestorSquash(
            "squashNulls or recursivelySquashNulls on a map or list that holds the value being "
            "modified is not run");
      }
    }
    // The tree modify walks is its own copy of the input, writable.
    auto* target = const_cast<json::value*>(source);
    if (in_place == InPlace::kDeep) {
      SquashNullsDeep(*target);
    } else {
      SquashNulls(*target);
    }
  }
};

Evaluator MakeEvaluator(const std::string& rhs) {
  Evaluator e;
  if (rhs.empty() || rhs[0] != '=') {
    e.args.push_back(MakeArg(rhs, /*for_function=*/false));
    return e;
  }
  const std::string call = rhs.substr(1);
  std::vector<std::string> parts;
  if (call.find('(') == std::string::npos && (call.empty() || call.back() != ')')) {
    parts.push_back(call);
  } else {
    parts = ParseFunctionArgs(call);
  }
  const auto& functions = Functions();
  auto it = functions.find(parts[0]);
  if (it == functions.end()) {
    throw SpecError(StrCat("unknown modify function =", parts[0],
                           " (Jolt 0.1.8 has none of that "
                           "name)"));
  }
  e.function = &it->second;
  if (parts[0] == "squashNulls") e.in_place = Evaluator::InPlace::kShallow;
  if (parts[0] == "recursivelySquashNulls") e.in_place = Evaluator::InPlace::kDeep;
  for (size_t i = 1; i < parts.size(); ++i) e.args.push_back(MakeArg(parts[i], true));
  return e;
}

// --- The spec (ModifierSpec, ModifierCompositeSpec, ModifierLeafSpec, DataType, OpMode) ---

enum class Mode { kOverwrite, kDefault, kDefine };

enum class KeyKind { kLiteral, kStar, kIndex };
enum class Data { kRuntime, kMap, kList };
enum class Strategy { kAllLiterals, kComputed, kConflict, kAllLiteralsWithComputed };

// OpMode.isApplicable for a map's key.
bool Applies(Mode mode, const json::object& map, std::string_view key) {
  switch (mode) {
    case Mode::kOverwrite:
      return true;
    case Mode::kDefault: {
      const json::value* v = map.if_contains(key);
      return v == nullptr || v->is_null();
    }
    case Mode::kDefine:
      return !map.contains(key);
  }
  return false;
}
// OpMode.isApplicable for a list's index.
bool Applies(Mode mode, const json::array& list, int64_t index, int orig_size) {
  if (index < 0 || orig_size < 0) return false;
  if (mode == Mode::kOverwrite) return true;
  if (static_cast<size_t>(index) >= list.size()) throw RunError("an index past the list's end");
  const bool is_null = list[static_cast<size_t>(index)].is_null();
  if (mode == Mode::kDefault) return is_null;
  return index >= orig_size && is_null;
}

// The walk with writable trees beside it: modify changes the input in place.
struct ModifyWalk {
  Walk walk;
  std::vector<json::value*> trees;
  // What the operation has added (values set, lists padded) against Bounds::output_bytes.
  size_t bytes = 0;
  size_t max_bytes = 0;

  void Charge(size_t more) {
    bytes += more;
    if (bytes > max_bytes) {
      throw BoundError(StrCat("what modify adds is over its bound of ", max_bytes, " bytes"));
    }
  }

  void Push(json::value* tree, Matched* match) {
    walk.steps.push_back({tree, match});
    trees.push_back(tree);
  }
  void Pop() {
    walk.steps.pop_back();
    trees.pop_back();
  }
  json::value* LastTree() const { return trees.back(); }
  const Matched& LastMatch() const { return *walk.steps.back().match; }
};

class ModifySpec {
 public:
  // `root`: the spec's top, a map of keys even when empty (an empty map deeper is a value).
  ModifySpec(const std::string& raw_key, const json::value& rhs, Mode mode, bool root = false);

  // ModifierSpec.apply: `input` nullptr when the key is absent.
  bool Apply(const std::string& input_key, json::value* input, ModifyWalk& mw) const;

 private:
  std::optional<Matched> Match(const std::string& input_key, const ModifyWalk& mw) const;
  void ApplyComposite(const std::string& input_key, json::value* input, Matched match,
                      ModifyWalk& mw) const;
  void ApplyLeaf(json::value* input, Matched& match, ModifyWalk& mw) const;
  void Process(json::value* input, ModifyWalk& mw) const;
  void ApplyComputed(const std::string& key, json::value* input, ModifyWalk& mw) const {
    for (const auto& child : computed_) {
      if (child->Apply(key, input, mw)) break;
    }
  }
  const ModifySpec* Literal(const std::string& key) const {
    for (const auto& [k, child] : literals_) {
      if (k == key) return child.get();
    }
    return nullptr;
  }
  void SetData(json::value* parent, const Matched& match, json::value value) const;

  Mode mode_;
  bool check_value_ = false;  // "key?": only where the input has the key
  KeyKind kind_ = KeyKind::kLiteral;
  std::string raw_;  // the literal, or the index as written
  int index_ = -1;   // an index's value
  std::string canonical_;
  int order_ = 0;
  std::optional<StarPattern> star_;
  bool leaf_ = false;
  std::vector<Evaluator> evaluators_;
  std::vector<std::pair<std::string, std::unique_ptr<ModifySpec>>> literals_;
  std::vector<std::unique_ptr<ModifySpec>> computed_;
  Data data_ = Data::kRuntime;
  int max_index_ = -1;
  Strategy strategy_ = Strategy::kAllLiterals;
};

ModifySpec::ModifySpec(const std::string& raw_key, const json::value& rhs, Mode mode, bool root)
    : mode_(mode) {
  if (raw_key.empty()) throw SpecError("a modify key that is empty");  // Java fails on it
  std::string key = raw_key;
  const bool has_suffix = key.size() > 1;
  const char suffix = has_suffix ? key.back() : '\0';
  if (!key.empty() && (key[0] == '+' || key[0] == '~' || key[0] == '_')) {
    mode_ = key[0] == '+' ? Mode::kOverwrite : key[0] == '~' ? Mode::kDefault : Mode::kDefine;
    key.erase(0, 1);
  }
  if (has_suffix && suffix == '?' &&
      !(key.size() >= 2 && key.compare(key.size() - 2, 2, "\\?") == 0)) {
    check_value_ = true;
    key.pop_back();
  }
  // PathElementBuilder.parseSingleKeyLHS, of which modify takes stars, literals and indices.
  const bool has_escape = key.find('\\') != std::string::npos;
  const std::string inspect = has_escape ? RemoveEscapedValues(key) : key;
  const std::string element = has_escape ? RemoveEscapeChars(key) : key;
  auto refuse = [&](std::string_view what) {
    throw SpecError(
        StrCat("the modify key ", raw_key, " is ", what, ": modify takes literal, * and [n] keys"));
  };
  if (inspect == "@") refuse("an @");
  if (inspect == "*") {
    kind_ = KeyKind::kStar;
    star_.emplace("*", true);
    order_ = 5;
    canonical_ = "*";
  } else if (!inspect.empty() && inspect[0] == '[') {
    if (Count(inspect, '[') != 1 || Count(inspect, ']') != 1) refuse("an index with too many []");
    const std::string meat = element.substr(1, element.size() - 2);
    if (!NonNegativeInt(meat)) refuse("not an explicit index");
    kind_ = KeyKind::kIndex;
    // Matched as written ("[01]" never matches the key "1"), padded by its value.
    raw_ = meat;
    index_ = static_cast<int>(*NonNegativeInt(meat));
    canonical_ = "[" + raw_ + "]";
  } else if (IsTransposeKey(inspect, key)) {
    refuse("a transpose");
  } else if (inspect.find('$') != std::string::npos) {
    refuse("a $ key");
  } else if (inspect.find('[') != std::string::npos) {
    refuse("an index inside a key");
  } else if (inspect.find('&') != std::string::npos) {
    refuse("an & key");
  } else if (inspect.find('*') != std::string::npos) {
    kind_ = KeyKind::kStar;
    const size_t stars = Count(inspect, '*');
    order_ = stars == 1 ? 4 : stars == 2 ? 3 : 2;
    star_.emplace(element, true);
    canonical_ = element;
  } else if (inspect.find('#') != std::string::npos) {
    refuse("a # key");
  } else {
    raw_ = element;
    for (char c : element) canonical_ += c == '.' ? std::string("\\.") : std::string(1, c);
  }

  if (!rhs.is_object() || (rhs.get_object().empty() && !root)) {
    leaf_ = true;
    if (rhs.is_string()) {
      evaluators_.push_back(MakeEvaluator(std::string(rhs.get_string())));
    } else if (rhs.is_array() && !rhs.get_array().empty()) {
      for (const auto& item : rhs.get_array()) {
        if (item.is_string()) {
          evaluators_.push_back(MakeEvaluator(std::string(item.get_string())));
        } else {
          Evaluator literal;
          literal.args.push_back(Arg{Arg::Kind::kLiteral, item, nullptr, false});
          evaluators_.push_back(std::move(literal));
        }
      }
    } else {
      Evaluator literal;
      literal.args.push_back(Arg{Arg::Kind::kLiteral, rhs, nullptr, false});
      evaluators_.push_back(std::move(literal));
    }
    return;
  }
  std::vector<std::string> canonicals;
  bool has_map_key = false;
  bool has_index = false;
  for (const auto& [child_key, child_rhs] : rhs.get_object()) {
    for (const auto& alternative : SplitOr(child_key)) {
      // Children take the operation's mode (TemplatrSpecBuilder), not this key's prefix.
      auto child = std::make_unique<ModifySpec>(alternative, child_rhs, mode);
      if (std::find(canonicals.begin(), canonicals.end(), child->canonical_) != canonicals.end()) {
        throw SpecError(StrCat("duplicate canonical key found: ", child->canonical_));
      }
      canonicals.push_back(child->canonical_);
      if (child->kind_ == KeyKind::kLiteral) {
        has_map_key = true;
        literals_.emplace_back(child->raw_, std::move(child));
      } else if (child->kind_ == KeyKind::kIndex) {
        has_index = true;
        if (!child->check_value_) max_index_ = std::max(max_index_, child->index_);
        std::string index = std::to_string(child->index_);
        literals_.emplace_back(std::move(index), std::move(child));
      } else {
        if (!child->star_->lone()) has_map_key = true;
        computed_.push_back(std::move(child));
      }
      if (has_map_key && has_index) {
        throw SpecError(
            StrCat("the modify spec for \"", raw_key, "\" mixes list indices and map keys"));
      }
    }
  }
  if (max_index_ > kMaxArrayIndex) {
    throw SpecError(StrCat("the modify key [", max_index_, "] is an index over ", kMaxArrayIndex));
  }
  data_ = has_index ? Data::kList : has_map_key ? Data::kMap : Data::kRuntime;
  std::stable_sort(computed_.begin(), computed_.end(), [](const auto& a, const auto& b) {
    return ComputedKeyBefore(a->order_, a->canonical_, b->order_, b->canonical_);
  });
  if (computed_.empty()) {
    strategy_ = Strategy::kAllLiterals;
  } else if (literals_.empty()) {
    strategy_ = Strategy::kComputed;
  } else if (mode_ == Mode::kDefine && data_ == Data::kList) {
    strategy_ = Strategy::kConflict;
  } else {
    strategy_ = Strategy::kAllLiteralsWithComputed;
  }
}

std::optional<Matched> ModifySpec::Match(const std::string& input_key, const ModifyWalk& mw) const {
  const std::optional<int> parent_size = mw.LastMatch().orig_size;
  switch (kind_) {
    case KeyKind::kLiteral:
      if (input_key != raw_) return std::nullopt;
      return Matched{{raw_}, 0, std::nullopt};
    case KeyKind::kIndex:
      if (input_key != raw_ || !parent_size) return std::nullopt;
      return Matched{{raw_}, 0, parent_size};
    case KeyKind::kStar: {
      auto captures = star_->Match(input_key);
      if (!captures) return std::nullopt;
      Matched m{{input_key}, 0, std::nullopt};
      m.keys.insert(m.keys.end(), captures->begin(), captures->end());
      if (star_->lone()) m.orig_size = parent_size;  // StarAllPathElement's ArrayMatchedElement
      return m;
    }
  }
  return std::nullopt;
}

bool ModifySpec::Apply(const std::string& input_key, json::value* input, ModifyWalk& mw) const {
  auto match = Match(input_key, mw);
  if (!match) return false;
  if (check_value_ && input == nullptr) return true;
  if (leaf_) {
    ApplyLeaf(input, *match, mw);
  } else {
    ApplyComposite(input_key, input, *std::move(match), mw);
  }
  return true;
}

void ModifySpec::SetData(json::value* parent, const Matched& match, json::value value) const {
  if (parent != nullptr && parent->is_object()) {
    auto& map = parent->get_object();
    if (Applies(mode_, map, match.keys[0])) map[match.keys[0]] = std::move(value);
    return;
  }
  if (parent != nullptr && parent->is_array() && match.orig_size) {
    auto& list = parent->get_array();
    const auto index = JavaParseInt(match.keys[0]);
    if (!index) throw RunError(StrCat("the key ", match.keys[0], " is not an index"));
    if (Applies(mode_, list, *index, *match.orig_size)) {
      if (static_cast<size_t>(*index) >= list.size()) {
        throw RunError("an index past the list's end");
      }
      list[static_cast<size_t>(*index)] = std::move(value);
    }
    return;
  }
  // Java's "Should not come here!": a value set where there is no map or list to hold it.
  throw RunError(
      StrCat("the key \"", match.keys[0], "\" matched a value that is inside no map or list"));
}

void ModifySpec::ApplyLeaf(json::value* input, Matched& match, ModifyWalk& mw) const {
  json::value* parent = mw.LastTree();
  json::value absent;  // the tree of a key the input does not have
  mw.Push(input != nullptr ? input : &absent, &match);
  std::optional<json::value> value;
  for (const auto& evaluator : evaluators_) {
    try {
      value = evaluator.Evaluate(input, mw.walk);
    } catch (const AncestorSquash&) {
      throw;
    } catch (const std::exception&) {
      value.reset();  // getFirstAvailable ignores what a function throws
    }
    if (value) break;
  }
  mw.Pop();
  if (!value) return;
  mw.Charge(ApproxBytes(*value));
  SetData(parent, match, *std::move(value));
}

void ModifySpec::ApplyComposite(const std::string& input_key, json::value* input, Matched match,
                                ModifyWalk& mw) const {
  const bool compatible = data_ == Data::kRuntime ? input != nullptr && !input->is_null()
                          : data_ == Data::kMap
                              ? input == nullptr || input->is_null() || input->is_object()
                              : input == nullptr || input->is_null() || input->is_array();
  if (!compatible) return;
  if (input == nullptr || input->is_null()) {
    // DataType.create: a new container in the parent, where the mode lets it be set.
    json::value* parent = mw.LastTree();
    input = nullptr;
    json::value fresh =
        data_ == Data::kList ? json::value(json::array()) : json::value(json::object());
    if (parent->is_object() && Applies(mode_, parent->get_object(), input_key)) {
      auto& map = parent->get_object();
      map[input_key] = std::move(fresh);
      input = &map[input_key];
    } else if (parent->is_array()) {
      const auto index = JavaParseInt(input_key);
      auto& list = parent->get_array();
      const int orig = mw.LastMatch().orig_size.value_or(-1);
      if (index && Applies(mode_, list, *index, orig)) {
        if (static_cast<size_t>(*index) >= list.size()) {
          throw RunError("an index past the list's end");
        }
        list[static_cast<size_t>(*index)] = std::move(fresh);
        input = &list[static_cast<size_t>(*index)];
      }
    }
    if (input == nullptr) return;
  }
  if (input->is_array()) {
    auto& list = input->get_array();
    int orig_size = static_cast<int>(list.size());
    if (data_ == Data::kList && max_index_ >= static_cast<int>(list.size())) {
      mw.Charge((static_cast<size_t>(max_index_) + 1 - list.size()) * sizeof(json::value));
      list.resize(static_cast<size_t>(max_index_) + 1);  // DataType.LIST.expand
    }
    match.orig_size = orig_size;
  }
  mw.Push(input, &match);
  Process(input, mw);
  mw.Pop();
}

// ExecutionStrategy.process, for modify's strategies.
void ModifySpec::Process(json::value* input, ModifyWalk& mw) const {
  const bool literals =
      strategy_ == Strategy::kAllLiterals || strategy_ == Strategy::kAllLiteralsWithComputed;
  const bool computed =
      strategy_ == Strategy::kComputed || strategy_ == Strategy::kAllLiteralsWithComputed;
  if (input->is_object()) {
    if (literals) {
      for (const auto& [key, child] : literals_) {
        child->Apply(key, input->get_object().if_contains(key), mw);
      }
    }
    if (computed || strategy_ == Strategy::kConflict) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : input->get_object()) keys.emplace_back(k);
      for (const auto& key : keys) {
        json::value* v = input->get_object().if_contains(key);
        if (v == nullptr) continue;
        if (strategy_ == Strategy::kConflict) {
          if (const ModifySpec* literal = Literal(key)) {
            literal->Apply(key, v, mw);
            continue;
          }
        }
        ApplyComputed(key, v, mw);
      }
    }
  } else if (input->is_array()) {
    const std::optional<int> orig = mw.LastMatch().orig_size;
    auto element = [&](size_t index) -> json::value* {
      auto& list = input->get_array();
      if (index >= list.size()) return nullptr;
      json::value* v = &list[index];
      // A padded null (past the list's size before padding) is absent, a real one present.
      if (v->is_null() && orig && static_cast<int64_t>(index) >= *orig) return nullptr;
      return v;
    };
    if (literals) {
      for (const auto& [key, child] : literals_) {
        const auto index = JavaParseInt(key);
        json::value* v = nullptr;
        if (index && *index >= 0) v = element(static_cast<size_t>(*index));
        child->Apply(key, v, mw);
      }
    }
    if (computed || strategy_ == Strategy::kConflict) {
      for (size_t i = 0; i < input->get_array().size(); ++i) {
        const std::string key = std::to_string(i);
        if (strategy_ == Strategy::kConflict) {
          if (const ModifySpec* literal = Literal(key)) {
            literal->Apply(key, element(i), mw);
            continue;
          }
        }
        ApplyComputed(key, element(i), mw);
      }
    }
  } else if (auto text = ScalarKeyText(*input)) {
    if (strategy_ == Strategy::kConflict) {
      if (const ModifySpec* literal = Literal(*text)) {
        literal->Apply(*text, nullptr, mw);
      } else {
        ApplyComputed(*text, nullptr, mw);
      }
      return;
    }
    if (const ModifySpec* literal = Literal(*text)) literal->Apply(*text, nullptr, mw);
    if (computed) ApplyComputed(*text, nullptr, mw);
  }
}

class Modify final : public Operation {
 public:
  Modify(const json::value& spec, Mode mode, const Bounds& bounds)
      : root_(std::make_unique<ModifySpec>("root", MapSpec("modify", spec), mode, /*root=*/true)),
        bounds_(bounds) {}

  absl::StatusOr<json::value> Apply(json::value input) override {
    ModifyWalk mw;
    mw.max_bytes = bounds_.output_bytes;
    Matched root{{"root"}, 0, std::nullopt};
    mw.Push(&input, &root);
    try {
      root_->Apply("root", &input, mw);
    } catch (const BoundError& e) {
      return absl::ResourceExhaustedError(e.what());
    } catch (const std::runtime_error& e) {  // RunError, AncestorSquash
      return absl::InvalidArgumentError(e.what());
    }
    return input;
  }

 private:
  std::unique_ptr<ModifySpec> root_;
  Bounds bounds_;
};

}  // namespace

std::unique_ptr<Operation> MakeModify(const json::value& spec, std::string_view operation,
                                      const Bounds& bounds) {
  const Mode mode = operation == "modify-overwrite-beta" ? Mode::kOverwrite
                    : operation == "modify-default-beta" ? Mode::kDefault
                                                         : Mode::kDefine;
  return std::make_unique<Modify>(spec, mode, bounds);
}

}  // namespace rfs::transform::internal::jolt
