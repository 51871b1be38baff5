// Printing values as the engines print them in a rebuilt source (docs/sourceless.md): numbers
// as Java's Double/Float.toString, dates in the mapping's format, addresses, vectors, stored
// values and `_ignored_source` entries. Value encodings: OpenSearch's and Elasticsearch's
// NumberFieldMapper (NumericUtils sortable bits, HalfFloatPoint), ScaledFloatFieldMapper,
// BooleanFieldMapper, DateFieldMapper, IpFieldMapper (InetAddressPoint), GeoPointFieldMapper
// (LatLonDocValuesField, GeoEncodingUtils), BinaryFieldMapper (CustomBinaryDocValuesField),
// IgnoredSourceFieldMapper (XContentDataHelper).
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "rfs/content/source_json.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/source_rebuild.hpp"

#include "lucene/rebuild/rebuilder_internal.hpp"
#include "lucene/rebuild/value_printing_internal.hpp"

namespace rfs::lucene {

using core::StrCat;

namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Days since the epoch to a civil date (Howard Hinnant's algorithm).
void CivilFromDays(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

std::string Pad(int64_t v, int width) {
  std::string s = std::to_string(v < 0 ? -v : v);
  if (static_cast<int>(s.size()) < width) s.insert(0, width - s.size(), '0');
  return v < 0 ? "-" + s : s;
}

double SortableLongToDouble(int64_t v) {
  const uint64_t bits = static_cast<uint64_t>(v ^ ((v >> 63) & 0x7fffffffffffffffLL));
  return std::bit_cast<double>(bits);
}

float SortableIntToFloat(int32_t v) {
  const auto bits = static_cast<uint32_t>(v ^ ((v >> 31) & 0x7fffffff));
  return std::bit_cast<float>(bits);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

// HalfFloatPoint.sortableShortToHalfFloat.
float SortableShortToHalfFloat(int16_t v) {
  const auto bits = static_cast<uint16_t>(v ^ ((v >> 15) & 0x7fff));
  return HalfToFloat(bits);
}

// A point in time split into its civil fields (UTC).
struct DateParts {
  int64_t year = 0;
  unsigned month = 0;
  unsigned day = 0;
  int64_t hour = 0;
  int64_t minute = 0;
  int64_t second = 0;
  int64_t milli = 0;
  int64_t sub_milli = 0;  // nanos within the milli
};

// A java.time pattern of the usual letters; quoted text kept, other letters as they are.
std::string PrintDatePattern(const std::string& pattern, const DateParts& t) {
  std::string out;
  for (size_t i = 0; i < pattern.size();) {
    const char c = pattern[i];
    size_t run = 1;
    while (i + run < pattern.size() && pattern[i + run] == c) ++run;
    if (c == '\'') {
      const size_t close = pattern.find('\'', i + 1);
      out += pattern.substr(i + 1, (close == std::string::npos ? pattern.size() : close) - i - 1);
      i = close == std::string::npos ? pattern.size() : close + 1;
      continue;
    }
    switch (c) {
      case 'y':
      case 'u':
        out += run == 2 ? Pad(t.year % 100, 2)
                        : Pad(t.year, static_cast<int>(std::max<size_t>(run, 4)));
        break;
      case 'M':
        out += Pad(t.month, static_cast<int>(run));
        break;
      case 'd':
        out += Pad(t.day, static_cast<int>(run));
        break;
      case 'H':
        out += Pad(t.hour, static_cast<int>(run));
        break;
      case 'm':
        out += Pad(t.minute, static_cast<int>(run));
        break;
      case 's':
        out += Pad(t.second, static_cast<int>(run));
        break;
      case 'S':
        out += Pad(t.milli * 1000000 + t.sub_milli, 9).substr(0, std::min<size_t>(run, 9));
        break;
      case 'X':
      case 'Z':
        out += run >= 2 && c == 'Z' ? "+0000" : "Z";
        break;
      default:
        out.append(run, c);
    }
    i += run;
  }
  return out;
}

}  // namespace

std::string FormatDate(int64_t value, bool nanos, std::string_view format) {
  const int64_t per_milli = nanos ? 1000000 : 1;
  const int64_t millis = FloorDiv(value, per_milli);
  DateParts t;
  t.sub_milli = value - millis * per_milli;
  if (format == "epoch_millis") {
    if (nanos && t.sub_milli != 0) {
      return StrCat(millis, ".", Pad(t.sub_milli, 6));
    }
    return std::to_string(millis);
  }
  if (format == "epoch_second") return std::to_string(FloorDiv(millis, 1000));
  const int64_t days = FloorDiv(millis, 86400000);
  const int64_t ms_of_day = millis - days * 86400000;
  CivilFromDays(days, t.year, t.month, t.day);
  t.hour = ms_of_day / 3600000;
  t.minute = ms_of_day / 60000 % 60;
  t.second = ms_of_day / 1000 % 60;
  t.milli = ms_of_day % 1000;
  const std::string date = StrCat(Pad(t.year, 4), "-", Pad(t.month, 2), "-", Pad(t.day, 2));
  if (format == "strict_date" || format == "date" || format == "yyyy-MM-dd") return date;
  std::string pattern(format);
  const bool iso = pattern.find("date_optional_time") != std::string::npos ||
                   pattern.find("date_time") != std::string::npos ||
                   pattern.find("strict_date_hour_minute_second") != std::string::npos ||
                   pattern.find('y') == std::string::npos;
  if (!iso) return PrintDatePattern(pattern, t);
  if (pattern == "iso_instant") {
    // DateTimeFormatter.ISO_INSTANT: no fraction when it is zero, else 3, 6 or 9 digits.
    std::string out =
        StrCat(date, "T", Pad(t.hour, 2), ":", Pad(t.minute, 2), ":", Pad(t.second, 2));
    if (t.milli != 0 || t.sub_milli != 0) {
      std::string fraction = Pad(t.milli * 1000000 + t.sub_milli, 9);
      while (fraction.size() > 3 && fraction.ends_with("000")) fraction.resize(fraction.size() - 3);
      out += "." + fraction;
    }
    return out + "Z";
  }
  std::string out =
      StrCat(date, "T", Pad(t.hour, 2), ":", Pad(t.minute, 2), ":", Pad(t.second, 2), ".");
  if (pattern.find("nanos") != std::string::npos) {
    // Nanosecond printers show the fraction without trailing zeros, at least 3 digits.
    std::string fraction = Pad(t.milli * 1000000 + t.sub_milli, 9);
    while (fraction.size() > 3 && fraction.back() == '0') fraction.pop_back();
    out += fraction;
  } else {
    out += Pad(t.milli, 3);
  }
  return out + "Z";
}

namespace internal {

std::string JsonString(std::string_view text) {
  std::string out;
  core::AppendJsonString(text, out);
  return out;
}

// Lucene's InetAddressPoint bytes (16) as InetAddresses.toAddrString prints them.
std::string IpString(std::string_view bytes) {
  if (bytes.size() != 16) return std::string();
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  static const unsigned char kV4Prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b, kV4Prefix, 12) == 0) {
    return StrCat(int{b[12]}, ".", int{b[13]}, ".", int{b[14]}, ".", int{b[15]});
  }
  uint16_t groups[8];
  for (int i = 0; i < 8; ++i) groups[i] = static_cast<uint16_t>(b[2 * i] << 8 | b[2 * i + 1]);
  // The longest run of two or more zero groups (the first one when tied) becomes "::".
  int best = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    if (groups[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && groups[j] == 0) ++j;
    if (j - i > best_len && j - i >= 2) {
      best = i;
      best_len = j - i;
    }
    i = j;
  }
  std::string out;
  char hex[8];
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ":";
    std::snprintf(hex, sizeof(hex), "%x", groups[i]);
    out += hex;
  }
  return out;
}

// A value a field keeps as a number (in doc values, or stored as a long), as the engine prints
// it in a rebuilt source.
std::string PrintNumber(const RebuildField& field, int64_t v) {
  switch (field.kind) {
    case RebuildKind::kUnsignedLong:
      return std::to_string(static_cast<uint64_t>(v));
    case RebuildKind::kDouble:
      if (field.raw_float_bits && !field.multi_valued) {
        return JavaDoubleString(std::bit_cast<double>(v));
      }
      return JavaDoubleString(SortableLongToDouble(v));
    case RebuildKind::kFloat:
      if (field.raw_float_bits && !field.multi_valued) {
        return JavaFloatString(
            std::bit_cast<float>(static_cast<uint32_t>(static_cast<uint64_t>(v))));
      }
      return JavaFloatString(SortableIntToFloat(static_cast<int32_t>(v)));
    case RebuildKind::kHalfFloat:
      return JavaFloatString(SortableShortToHalfFloat(static_cast<int16_t>(v)));
    case RebuildKind::kScaledFloat:
      return JavaDoubleString(static_cast<double>(v) / field.scaling_factor);
    case RebuildKind::kBoolean:
      return v == 1 ? "true" : "false";
    case RebuildKind::kDate:
    case RebuildKind::kDateNanos:
      return JsonString(FormatDate(v, field.kind == RebuildKind::kDateNanos, field.date_format));
    case RebuildKind::kGeoPoint: {
      // LatLonDocValuesField: latitude in the high 32 bits, longitude in the low 32.
      const auto lat_bits = static_cast<int32_t>(static_cast<uint64_t>(v) >> 32);
      const auto lon_bits = static_cast<int32_t>(static_cast<uint64_t>(v) & 0xFFFFFFFFu);
      const double lat = lat_bits * (180.0 / 4294967296.0);
      const double lon = lon_bits * (360.0 / 4294967296.0);
      return StrCat("{\"lat\":", JavaDoubleString(lat), ",\"lon\":", JavaDoubleString(lon), "}");
    }
    default:
      return std::to_string(v);
  }
}

// A JSON array of a vector's elements, as the engines print them (floats as Java's
// Float.toString, bytes as integers).
std::string PrintVector(const RebuildField& field, const std::vector<float>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += field.byte_elements ? std::to_string(static_cast<int>(values[i]))
                               : JavaFloatString(values[i]);
  }
  out += ']';
  return out;
}

void PrintStoredValue(const RebuildField& field, const StoredValue& value,
                      std::vector<std::string>& out) {
  switch (field.kind) {
    case RebuildKind::kKeyword:
    case RebuildKind::kText:
      out.push_back(JsonString(value.text));
      break;
    case RebuildKind::kBoolean:
      out.push_back(value.text == "T" ? "true" : "false");
      break;
    case RebuildKind::kDouble:
      if (value.is_number) out.push_back(JavaDoubleString(value.double_value));
      break;
    case RebuildKind::kScaledFloat:
      if (value.is_number) {
        out.push_back(
            JavaDoubleString(static_cast<double>(value.long_value) / field.scaling_factor));
      }
      break;
    case RebuildKind::kFloat:
    case RebuildKind::kHalfFloat:
      out.push_back(JavaFloatString(static_cast<float>(value.double_value)));
      break;
    case RebuildKind::kLong:
    case RebuildKind::kUnsignedLong:
    case RebuildKind::kDate:
    case RebuildKind::kDateNanos:
      out.push_back(PrintNumber(field, value.long_value));
      break;
    case RebuildKind::kIp:
      out.push_back(JsonString(IpString(value.text)));
      break;
    case RebuildKind::kBinary:
      out.push_back(JsonString(core::Base64Encode(std::span<const uint8_t>(
          reinterpret_cast<const uint8_t*>(value.text.data()), value.text.size()))));
      break;
    case RebuildKind::kGeoPoint:
    case RebuildKind::kVector:
      break;
  }
}

absl::Status PrintIgnoredSourceValue(core::ByteReader& in, std::span<const uint8_t> entry,
                                     std::string_view name, std::string& json) {
  const size_t type_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint8_t type, in.ReadByte());
  const std::span<const uint8_t> rest = entry.subspan(in.position());
  switch (type) {
    case 'S':
      json = JsonString(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()));
      break;
    case 'I': {
      RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadLeU32());
      json = std::to_string(static_cast<int32_t>(v));
      break;
    }
    case 'L': {
      RFS_ASSIGN_OR_RETURN(uint64_t v, in.ReadLeU64());
      json = std::to_string(static_cast<int64_t>(v));
      break;
    }
    case 'D': {
      RFS_ASSIGN_OR_RETURN(uint64_t v, in.ReadLeU64());
      json = JavaDoubleString(std::bit_cast<double>(v));
      break;
    }
    case 'F': {
      RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadLeU32());
      json = JavaFloatString(std::bit_cast<float>(v));
      break;
    }
    case 't':
    case 'f':
      json = type == 't' ? "true" : "false";
      break;
    case 'n':
      json = "null";
      break;
    case 'b':
      json = JsonString(core::Base64Encode(rest));
      break;
    case 'v':  // nothing to print
      break;
    case 'j':
    case 'c':
    case 's':
    case 'y': {  // a whole array or object in the document's own content type
      const content::SourceFormat format = type == 'j'   ? content::SourceFormat::kJson
                                           : type == 'c' ? content::SourceFormat::kCbor
                                           : type == 's' ? content::SourceFormat::kSmile
                                                         : content::SourceFormat::kYaml;
      RFS_RETURN_IF_ERROR(
          content::AppendSourceAsJson(rest, format, json, StrCat("_ignored_source of ", name)));
      break;
    }
    default:
      return in.ErrorAt(type_at, StrCat("value of type '", static_cast<char>(type), "' for ", name,
                                        " is not read"));
  }
  return absl::OkStatus();
}

}  // namespace internal

}  // namespace rfs::lucene
