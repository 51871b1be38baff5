// Source rebuild plans and printing (docs/sourceless.md). Value encodings: OpenSearch's and
// Elasticsearch's NumberFieldMapper (NumericUtils sortable bits, HalfFloatPoint),
// ScaledFloatFieldMapper, BooleanFieldMapper, DateFieldMapper, IpFieldMapper (InetAddressPoint),
// GeoPointFieldMapper (LatLonDocValuesField, GeoEncodingUtils), BinaryFieldMapper
// (CustomBinaryDocValuesField).
#include "rfs/lucene/source_rebuild.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>

#include <boost/json.hpp>

#include "rfs/content/source_json.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/doc_values_internal.hpp"
#include "lucene/points_internal.hpp"
#include "lucene/source_rebuild_internal.hpp"
#include "lucene/terms_internal.hpp"
#include "lucene/vectors_internal.hpp"

namespace rfs::lucene {

namespace json = boost::json;
using core::StrCat;

namespace {

std::string_view S(json::string_view s) { return {s.data(), s.size()}; }

const json::value* Find(const json::object& object, std::string_view key) {
  return object.if_contains(json::string_view(key.data(), key.size()));
}

std::vector<std::string> StringList(const json::value* v) {
  std::vector<std::string> out;
  if (v == nullptr) return out;
  if (v->is_string()) out.emplace_back(S(v->get_string()));
  if (v->is_array()) {
    for (const auto& item : v->get_array()) {
      if (item.is_string()) out.emplace_back(S(item.get_string()));
    }
  }
  return out;
}

// The kinds Lucene indexes as one-dimensional points (LongPoint, IntPoint, DoublePoint,
// FloatPoint, HalfFloatPoint, InetAddressPoint): the same sortable bytes their doc values hold.
bool HasPoints(RebuildKind kind) {
  switch (kind) {
    case RebuildKind::kLong:
    case RebuildKind::kUnsignedLong:
    case RebuildKind::kDouble:
    case RebuildKind::kFloat:
    case RebuildKind::kHalfFloat:
    case RebuildKind::kScaledFloat:
    case RebuildKind::kDate:
    case RebuildKind::kDateNanos:
    case RebuildKind::kIp:
      return true;
    default:
      return false;
  }
}

bool Flag(const json::object& object, std::string_view key, bool fallback) {
  const json::value* v = Find(object, key);
  if (v == nullptr) return fallback;
  if (v->is_bool()) return v->get_bool();
  if (v->is_string()) return S(v->get_string()) == "true";
  return fallback;
}

std::string FirstFormat(const json::object& field, bool nanos_default) {
  // OpenSearch's derived source prints a date_nanos without a format of its own to the
  // millisecond, as a date; Elasticsearch prints it to the nanosecond (docs/sourceless.md).
  std::string format =
      nanos_default ? "strict_date_optional_time_nanos" : "strict_date_optional_time";
  if (const json::value* v = Find(field, "format"); v != nullptr && v->is_string()) {
    format = std::string(S(v->get_string()));
  }
  if (const json::value* v = Find(field, "print_format"); v != nullptr && v->is_string()) {
    return std::string(S(v->get_string()));
  }
  const size_t bar = format.find("||");
  return bar == std::string::npos ? format : format.substr(0, bar);
}

struct PlanBuilder {
  SourceRebuildPlan plan;
  RebuildPlanOptions options;

  // The innermost nested path above the fields being read.
  std::string nested_scope;

  void Properties(const json::object& properties, const std::string& prefix) {
    for (const auto& [key, value] : properties) {
      if (!value.is_object()) continue;
      const std::string path = prefix.empty() ? std::string(S(key)) : StrCat(prefix, ".", S(key));
      Field(value.get_object(), path);
    }
  }

  void Field(const json::object& field, const std::string& path) {
    const size_t before = plan.fields.size();
    FieldOrObject(field, path);
    for (size_t i = before; i < plan.fields.size(); ++i) {
      RebuildField& added = plan.fields[i];
      if (!added.nested_path.empty() || nested_scope.empty()) continue;
      added.nested_path = nested_scope;
    }
  }

  void FieldOrObject(const json::object& field, const std::string& path) {
    const json::value* type_value = Find(field, "type");
    const std::string type = type_value != nullptr && type_value->is_string()
                                 ? std::string(S(type_value->get_string()))
                                 : std::string();
    if (type.empty() || type == "object") {
      if (!Flag(field, "enabled", true)) {
        plan.unrebuildable.push_back(StrCat(path, ": object with enabled false (never indexed)"));
        return;
      }
      if (const json::value* props = Find(field, "properties"); props && props->is_object()) {
        Properties(props->get_object(), path);
      }
      return;
    }
    if (type == "nested") {
      plan.nested_paths.push_back(path);
      plan.inexact.push_back(StrCat(path,
                                    ": nested objects come back in document order; one without "
                                    "any rebuildable value is left out, and a single one is "
                                    "printed as an object"));
      if (const json::value* props = Find(field, "properties"); props && props->is_object()) {
        const std::string outer = nested_scope;
        nested_scope = path;
        Properties(props->get_object(), path);
        nested_scope = outer;
      }
      return;
    }
    RebuildField out;
    out.path = path;
    out.type = type;
    out.doc_values = Flag(field, "doc_values", options.doc_values_by_default);
    out.stored = Flag(field, "store", false);
    if (type == "keyword" || type == "wildcard" || type == "constant_keyword" ||
        type == "version") {
      out.kind = RebuildKind::kKeyword;
      if (type == "wildcard") out.doc_values = Flag(field, "doc_values", false);
      if (type == "version" || type == "constant_keyword") {
        plan.unrebuildable.push_back(StrCat(path, ": ", type, " fields are not rebuilt yet"));
        return;
      }
      if (Find(field, "normalizer") != nullptr) {
        plan.inexact.push_back(StrCat(path, ": normalized keyword (the normalized form)"));
        out.exactness = RebuildExactness::kApproximate;
      }
      if (Find(field, "ignore_above") != nullptr) {
        out.original_values_field = StrCat(path, "._original");
        plan.inexact.push_back(
            StrCat(path,
                   ": values over ignore_above have no doc values (Elasticsearch "
                   "8's synthetic source keeps them: read from ",
                   out.original_values_field, ")"));
      }
      if (out.doc_values && !out.stored) {
        plan.inexact.push_back(StrCat(path, ": arrays come back sorted without duplicates"));
      }
    } else if (type == "text" || type == "match_only_text" || type == "annotated_text") {
      out.kind = RebuildKind::kText;
      out.doc_values = false;
      if (!out.stored) {
        // A keyword sub-field without normalizer or ignore_above holds the whole value.
        if (const json::value* fields = Find(field, "fields"); fields && fields->is_object()) {
          for (const auto& [name, sub] : fields->get_object()) {
            if (!sub.is_object()) continue;
            const auto& s = sub.get_object();
            const json::value* st = Find(s, "type");
            if (st && st->is_string() && S(st->get_string()) == "keyword" &&
                Flag(s, "doc_values", options.doc_values_by_default) &&
                Find(s, "normalizer") == nullptr) {
              out.value_field = StrCat(path, ".", S(name));
              if (Find(s, "ignore_above") != nullptr) {
                out.original_values_field = StrCat(out.value_field, "._original");
              }
              out.doc_values = true;
              plan.inexact.push_back(StrCat(path, ": from keyword sub-field ", out.value_field,
                                            " (sorted, without duplicates; values over its "
                                            "ignore_above are lost)"));
              break;
            }
          }
        }
        if (out.value_field.empty() && options.text_stored_by_default) {
          out.stored = true;
        } else if (out.value_field.empty()) {
          plan.unrebuildable.push_back(
              StrCat(path, ": text with neither a stored value nor a keyword sub-field"));
          return;
        }
      }
    } else if (type == "long" || type == "integer" || type == "short" || type == "byte") {
      out.kind = RebuildKind::kLong;
    } else if (type == "unsigned_long") {
      out.kind = RebuildKind::kUnsignedLong;
    } else if (type == "double") {
      out.kind = RebuildKind::kDouble;
    } else if (type == "float") {
      out.kind = RebuildKind::kFloat;
    } else if (type == "half_float") {
      out.kind = RebuildKind::kHalfFloat;
      plan.inexact.push_back(StrCat(path, ": half_float keeps 11 significant bits"));
      out.exactness = RebuildExactness::kApproximate;
    } else if (type == "scaled_float") {
      out.kind = RebuildKind::kScaledFloat;
      if (const json::value* f = Find(field, "scaling_factor"); f && f->is_number()) {
        out.scaling_factor = f->to_number<double>();
      } else if (f && f->is_string()) {
        out.scaling_factor = std::strtod(std::string(S(f->get_string())).c_str(), nullptr);
      }
      plan.inexact.push_back(StrCat(path, ": scaled_float rounded to its scaling factor"));
      out.exactness = RebuildExactness::kApproximate;
    } else if (type == "boolean") {
      out.kind = RebuildKind::kBoolean;
    } else if (type == "date" || type == "date_nanos") {
      out.kind = type == "date" ? RebuildKind::kDate : RebuildKind::kDateNanos;
      out.date_format = FirstFormat(field, type == "date_nanos" && options.date_nanos_prints_nanos);
      if (type == "date_nanos" && out.date_format.find("nanos") == std::string::npos &&
          out.date_format.find('S') == std::string::npos) {
        plan.inexact.push_back(StrCat(
            path, ": date_nanos printed to the millisecond by its format ", out.date_format));
        out.exactness = RebuildExactness::kApproximate;
      }
    } else if (type == "ip") {
      out.kind = RebuildKind::kIp;
    } else if (type == "binary") {
      out.kind = RebuildKind::kBinary;
      out.doc_values = Flag(field, "doc_values", false);
    } else if (type == "dense_vector" || type == "knn_vector") {
      out.kind = RebuildKind::kVector;
      const json::value* dims = Find(field, type == "dense_vector" ? "dims" : "dimension");
      if (dims != nullptr && dims->is_number()) out.dims = dims->to_number<int32_t>();
      if (dims != nullptr && dims->is_string()) {
        out.dims = std::atoi(std::string(S(dims->get_string())).c_str());
      }
      const json::value* element =
          Find(field, type == "dense_vector" ? "element_type" : "data_type");
      const std::string element_type =
          element != nullptr && element->is_string() ? std::string(S(element->get_string())) : "";
      out.byte_elements = element_type == "byte";
      out.little_endian_binary_vectors = options.little_endian_binary_vectors;
      if (out.dims <= 0 || (element_type != "" && element_type != "float" && !out.byte_elements)) {
        plan.unrebuildable.push_back(StrCat(path, ": ", type, " of element type ",
                                            element_type.empty() ? "float" : element_type,
                                            " and dimension ", out.dims, " is not rebuilt"));
        return;
      }
      // The values live in the vector files or in binary doc values, whatever the mapping says
      // of doc_values.
      out.doc_values = true;
      out.stored = false;
      if (const json::value* sim = Find(field, "similarity");
          type == "dense_vector" && sim != nullptr && sim->is_string() &&
          S(sim->get_string()) == "cosine" && !out.byte_elements) {
        // Normalized vectors get their magnitude back, in the engine's own float arithmetic:
        // the same values it prints (a segment without the field kept them as sent).
        out.magnitude_field = StrCat(path, "._magnitude");
      }
    } else if (type == "geo_point") {
      out.kind = RebuildKind::kGeoPoint;
      plan.inexact.push_back(StrCat(path, ": geo_point to Lucene's 1e-7 degree precision"));
      out.exactness = RebuildExactness::kApproximate;
    } else {
      plan.unrebuildable.push_back(StrCat(path, ": type ", type, " is not rebuilt"));
      return;
    }
    if (!out.doc_values && !out.stored && HasPoints(out.kind) && Flag(field, "index", true)) {
      // Indexed numbers, dates and addresses keep their values as points.
      out.points = true;
      if (out.exactness == RebuildExactness::kExact) {
        plan.inexact.push_back(StrCat(path, ": from points (arrays come back sorted)"));
        out.exactness = RebuildExactness::kArraysReordered;
      }
    }
    if (!out.doc_values && !out.stored && !out.points && (type == "keyword" || type == "boolean") &&
        Flag(field, "index", true)) {
      // Indexed keywords and booleans keep each distinct value of a document as a term.
      out.terms = true;
      if (out.exactness == RebuildExactness::kExact) {
        plan.inexact.push_back(
            StrCat(path, ": from the terms index (arrays come back sorted, without duplicates)"));
        out.exactness = RebuildExactness::kArraysReordered;
      }
    }
    if (!out.doc_values && !out.stored && !out.points && !out.terms) {
      plan.unrebuildable.push_back(StrCat(path, ": ", type, " with neither doc values nor store"));
      return;
    }
    if (!out.doc_values && !out.points && !out.terms && !nested_scope.empty()) {
      plan.unrebuildable.push_back(
          StrCat(path, ": stored ", type, " inside nested objects (read from doc values only)"));
      return;
    }
    if (Find(field, "copy_to") != nullptr) {
      // Targets of copy_to are filled at index time: rebuilding them would add values the
      // document never had.
    }
    // Doc values keep several values sorted (sorted sets: without duplicates); a stored field
    // keeps them in order, and vectors are one value.
    if (out.exactness == RebuildExactness::kExact && out.doc_values && !out.stored &&
        out.kind != RebuildKind::kVector) {
      out.exactness = RebuildExactness::kArraysReordered;
    }
    if (options.array_offsets && out.doc_values && !out.stored && out.value_field.empty() &&
        nested_scope.empty() && out.kind != RebuildKind::kVector &&
        out.kind != RebuildKind::kBinary && out.kind != RebuildKind::kGeoPoint &&
        out.kind != RebuildKind::kText) {
      out.array_offsets_field = StrCat(path, ".offsets");
    }
    // Values over ignore_above complete doc values only; stored values of nested child
    // documents are not read.
    if (out.stored || !out.doc_values || out.points || out.terms || !nested_scope.empty()) {
      out.original_values_field.clear();
    }
    plan.fields.push_back(std::move(out));
  }
};

// Java's Double.toString / Float.toString from the shortest round-trip digits.
template <typename T>
std::string JavaNumber(T value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, end);  // d[.ddd]e±xx
  const size_t e = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  bool negative = false;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] == '-') negative = true;
    if (sci[i] >= '0' && sci[i] <= '9') digits.push_back(sci[i]);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = negative ? "-" : "";
  const T magnitude = std::fabs(value);
  if (magnitude >= T(1e-3) && magnitude < T(1e7)) {
    if (exponent >= 0) {
      const size_t int_digits = static_cast<size_t>(exponent) + 1;
      std::string whole = digits.substr(0, std::min(int_digits, digits.size()));
      whole.append(int_digits > digits.size() ? int_digits - digits.size() : 0, '0');
      std::string fraction = int_digits < digits.size() ? digits.substr(int_digits) : "0";
      out += whole + "." + fraction;
    } else {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1) + "." + (digits.size() > 1 ? digits.substr(1) : "0") + "E" +
         std::to_string(exponent);
  return out;
}

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

std::string JsonString(std::string_view text) {
  std::string out;
  core::AppendJsonString(text, out);
  return out;
}

}  // namespace

std::string JavaDoubleString(double value) { return JavaNumber(value); }
std::string JavaFloatString(float value) { return JavaNumber(value); }

namespace {

// A value a field keeps as a number (in doc values, or stored as a long), as the engine prints
// it in a rebuilt source.
std::string PrintNumber(const RebuildField& field, int64_t v) {
  switch (field.kind) {
    case RebuildKind::kUnsignedLong:
      return std::to_string(static_cast<uint64_t>(v));
    case RebuildKind::kDouble:
      return JavaDoubleString(SortableLongToDouble(v));
    case RebuildKind::kFloat:
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

}  // namespace

std::string FormatDate(int64_t value, bool nanos, std::string_view format) {
  const int64_t per_milli = nanos ? 1000000 : 1;
  const int64_t millis = FloorDiv(value, per_milli);
  const int64_t sub_milli = value - millis * per_milli;  // nanos within the milli
  if (format == "epoch_millis") {
    if (nanos && sub_milli != 0) {
      return StrCat(millis, ".", Pad(sub_milli, 6));
    }
    return std::to_string(millis);
  }
  if (format == "epoch_second") return std::to_string(FloorDiv(millis, 1000));
  const int64_t days = FloorDiv(millis, 86400000);
  const int64_t ms_of_day = millis - days * 86400000;
  int64_t year;
  unsigned month, day;
  CivilFromDays(days, year, month, day);
  const int64_t hour = ms_of_day / 3600000, minute = ms_of_day / 60000 % 60,
                second = ms_of_day / 1000 % 60, milli = ms_of_day % 1000;
  const std::string date = StrCat(Pad(year, 4), "-", Pad(month, 2), "-", Pad(day, 2));
  if (format == "strict_date" || format == "date" || format == "yyyy-MM-dd") return date;
  std::string pattern(format);
  const bool iso = pattern.find("date_optional_time") != std::string::npos ||
                   pattern.find("date_time") != std::string::npos ||
                   pattern.find("strict_date_hour_minute_second") != std::string::npos ||
                   pattern.find('y') == std::string::npos;
  if (iso) {
    std::string out =
        StrCat(date, "T", Pad(hour, 2), ":", Pad(minute, 2), ":", Pad(second, 2), ".");
    if (pattern.find("nanos") != std::string::npos) {
      // Nanosecond printers show the fraction without trailing zeros, at least 3 digits.
      std::string fraction = Pad(milli * 1000000 + sub_milli, 9);
      while (fraction.size() > 3 && fraction.back() == '0') fraction.pop_back();
      out += fraction;
    } else {
      out += Pad(milli, 3);
    }
    return out + "Z";
  }
  // A java.time pattern of the usual letters; quoted text kept, other letters as they are.
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
        out +=
            run == 2 ? Pad(year % 100, 2) : Pad(year, static_cast<int>(std::max<size_t>(run, 4)));
        break;
      case 'M':
        out += Pad(month, static_cast<int>(run));
        break;
      case 'd':
        out += Pad(day, static_cast<int>(run));
        break;
      case 'H':
        out += Pad(hour, static_cast<int>(run));
        break;
      case 'm':
        out += Pad(minute, static_cast<int>(run));
        break;
      case 's':
        out += Pad(second, static_cast<int>(run));
        break;
      case 'S':
        out += Pad(milli * 1000000 + sub_milli, 9).substr(0, std::min<size_t>(run, 9));
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

std::string SourceStorage::Describe() const {
  std::string out;
  switch (mode) {
    case Mode::kStored:
      out = "stored";
      break;
    case Mode::kDisabled:
      out = "_source disabled";
      break;
    case Mode::kSynthetic:
      out = "synthetic _source";
      break;
    case Mode::kDerived:
      out = "derived _source";
      break;
  }
  if (!includes.empty()) out += ", _source.includes";
  if (!excludes.empty()) out += ", _source.excludes";
  return out;
}

SourceStorage DescribeSourceStorage(const json::object& mapping, const json::object& settings) {
  SourceStorage out;
  if (const json::value* source = Find(mapping, "_source"); source && source->is_object()) {
    const auto& s = source->get_object();
    if (!Flag(s, "enabled", true)) out.mode = SourceStorage::Mode::kDisabled;
    if (const json::value* mode = Find(s, "mode"); mode && mode->is_string()) {
      if (S(mode->get_string()) == "synthetic") out.mode = SourceStorage::Mode::kSynthetic;
      if (S(mode->get_string()) == "disabled") out.mode = SourceStorage::Mode::kDisabled;
    }
    out.includes = StringList(Find(s, "includes"));
    out.excludes = StringList(Find(s, "excludes"));
  }
  const std::string setting_mode = internal::IndexSetting(settings, "index.mapping.source.mode");
  if (setting_mode == "synthetic") out.mode = SourceStorage::Mode::kSynthetic;
  if (setting_mode == "disabled") out.mode = SourceStorage::Mode::kDisabled;
  const std::string index_mode = internal::IndexSetting(settings, "index.mode");
  if ((index_mode == "time_series" || index_mode == "logsdb") && setting_mode.empty() &&
      out.mode == SourceStorage::Mode::kStored) {
    out.mode = SourceStorage::Mode::kSynthetic;
  }
  if (internal::IndexSetting(settings, "index.derived_source.enabled") == "true") {
    out.mode = SourceStorage::Mode::kDerived;
  }
  return out;
}

absl::StatusOr<SourceRebuildPlan> SourceRebuildPlan::FromMapping(
    const json::object& mapping, const RebuildPlanOptions& options) {
  PlanBuilder builder;
  builder.options = options;
  builder.plan.reads_ignored_source = options.array_offsets;
  const json::value* properties = Find(mapping, "properties");
  if (properties != nullptr && !properties->is_object()) {
    return absl::InvalidArgumentError("mapping properties is not an object");
  }
  if (properties != nullptr) builder.Properties(properties->get_object(), "");
  std::sort(builder.plan.fields.begin(), builder.plan.fields.end(),
            [](const RebuildField& a, const RebuildField& b) { return a.path < b.path; });
  std::sort(builder.plan.nested_paths.begin(), builder.plan.nested_paths.end());
  return std::move(builder.plan);
}

namespace {

// Regex.simpleMatch: '*' matches any run of characters.
bool SimpleMatch(std::string_view pattern, std::string_view text) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == text;
  if (text.substr(0, star) != pattern.substr(0, star)) return false;
  const std::string_view rest = pattern.substr(star + 1);
  for (size_t i = star; i <= text.size(); ++i) {
    if (SimpleMatch(rest, text.substr(i))) return true;
  }
  return false;
}

// Whether a pattern names `path` or an object above it.
bool MatchesPathOrParent(const std::vector<std::string>& patterns, std::string_view path) {
  for (const auto& pattern : patterns) {
    for (size_t end = path.find('.');; end = path.find('.', end + 1)) {
      if (SimpleMatch(pattern, path.substr(0, end))) return true;
      if (end == std::string_view::npos) break;
    }
  }
  return false;
}

void MergeInto(json::object& target, const json::object& rebuilt) {
  for (const auto& [key, value] : rebuilt) {
    json::value* existing = target.if_contains(key);
    if (existing == nullptr) {
      target[key] = value;
    } else if (existing->is_object() && value.is_object()) {
      MergeInto(existing->get_object(), value.get_object());
    }
  }
}

}  // namespace

void RestrictToLeftOutFields(const SourceStorage& storage, SourceRebuildPlan& plan) {
  std::erase_if(plan.fields, [&](const RebuildField& field) {
    const bool included =
        storage.includes.empty() || MatchesPathOrParent(storage.includes, field.path);
    const bool excluded = MatchesPathOrParent(storage.excludes, field.path);
    return included && !excluded;  // kept in the stored source: nothing to rebuild
  });
  plan.completes_partial_sources = true;
}

absl::Status MergeRebuiltFields(std::string_view rebuilt, std::string& source) {
  boost::system::error_code ec;
  json::value stored = json::parse(json::string_view(source.data(), source.size()), ec);
  if (ec || !stored.is_object()) {
    return absl::InvalidArgumentError("the stored _source is not a JSON object");
  }
  json::value made = json::parse(json::string_view(rebuilt.data(), rebuilt.size()), ec);
  if (ec || !made.is_object()) return absl::InvalidArgumentError("rebuilt fields not an object");
  if (made.get_object().empty()) return absl::OkStatus();
  MergeInto(stored.get_object(), made.get_object());
  source = json::serialize(stored);
  return absl::OkStatus();
}

namespace internal {

std::string IndexSetting(const json::object& settings, std::string_view flat) {
  if (const json::value* v = Find(settings, flat)) {
    if (v->is_string()) return std::string(S(v->get_string()));
    return json::serialize(*v);
  }
  // Nested form: {"index": {"mapping": {...}}}.
  const json::object* at = &settings;
  std::string_view rest = flat;
  while (!rest.empty()) {
    const size_t dot = rest.find('.');
    const std::string_view part = rest.substr(0, dot);
    const json::value* v = Find(*at, part);
    if (v == nullptr) return "";
    if (dot == std::string_view::npos) {
      return v->is_string() ? std::string(S(v->get_string())) : json::serialize(*v);
    }
    if (!v->is_object()) return "";
    at = &v->get_object();
    rest = rest.substr(dot + 1);
  }
  return "";
}

SourceRebuilder::SourceRebuilder(std::shared_ptr<const SourceRebuildPlan> plan)
    : plan_(std::move(plan)) {
  // The object tree of the plan's paths, children in name order.
  nodes_.emplace_back();
  for (size_t k = 0; k < plan_->nested_paths.size(); ++k) {
    const size_t node = NodeFor(plan_->nested_paths[k]);
    nodes_[node].nested = static_cast<int>(k);
    nested_nodes_.push_back(node);
  }
  field_scope_.assign(plan_->fields.size(), -1);
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    const RebuildField& field = plan_->fields[f];
    nodes_[NodeFor(field.path)].field = static_cast<int>(f);
    if (!field.nested_path.empty()) {
      const auto& paths = plan_->nested_paths;
      field_scope_[f] = static_cast<int>(
          std::lower_bound(paths.begin(), paths.end(), field.nested_path) - paths.begin());
    }
  }
  values_.resize(plan_->fields.size());
  pending_.resize(plan_->nested_paths.size());
}

size_t SourceRebuilder::NodeFor(const std::string& path) {
  size_t node = 0;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    auto it = nodes_[node].children.find(part);
    size_t child;
    if (it == nodes_[node].children.end()) {
      child = nodes_.size();
      nodes_[node].children.emplace(part, child);
      nodes_.emplace_back();
    } else {
      child = it->second;
    }
    node = child;
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

void SourceRebuilder::StartSegment(SegmentDocValues& doc_values, SegmentVectors& vectors,
                                   SegmentPoints* points, SegmentTerms* terms) {
  doc_values_ = &doc_values;
  vectors_ = &vectors;
  points_ = points;
  terms_index_ = terms;
  readers_.assign(plan_->fields.size(), nullptr);
  resolved_.assign(plan_->fields.size(), false);
  offsets_readers_.assign(plan_->fields.size(), nullptr);
  offsets_resolved_.assign(plan_->fields.size(), false);
}

absl::StatusOr<FieldDocValues*> SourceRebuilder::Reader(size_t f) {
  if (!resolved_[f]) {
    const RebuildField& field = plan_->fields[f];
    RFS_ASSIGN_OR_RETURN(
        readers_[f],
        doc_values_->Field(field.value_field.empty() ? field.path : field.value_field));
    resolved_[f] = true;
  }
  return readers_[f];
}

absl::Status SourceRebuilder::KeywordWithOriginalValues(size_t f, int32_t doc,
                                                        const std::vector<StoredValue>& stored,
                                                        std::vector<std::string>& out) {
  RFS_ASSIGN_OR_RETURN(FieldDocValues * values, Reader(f));
  if (values != nullptr) {
    RFS_RETURN_IF_ERROR(values->Terms(doc, terms_));
    for (const auto& term : terms_) out.push_back(JsonString(term));
  }
  for (const auto& value : stored) {
    if (value.field == f && value.original) out.push_back(JsonString(value.text));
  }
  return absl::OkStatus();
}

absl::Status SourceRebuilder::FieldValues(size_t f, int32_t doc,
                                          const std::vector<StoredValue>& stored,
                                          std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  out.clear();
  // Stored values keep the document's order and duplicates: prefer them.
  if (field.stored) {
    for (const auto& value : stored) {
      if (value.field != f || value.original || value.ignored_source) continue;
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
    if (!out.empty() || !field.doc_values) return absl::OkStatus();
  }
  if (field.points) return PointValues(f, doc, out);
  if (field.terms) return TermValues(f, doc, out);
  if (!field.original_values_field.empty()) return KeywordWithOriginalValues(f, doc, stored, out);
  if (!field.doc_values) return absl::OkStatus();
  if (field.kind == RebuildKind::kVector) return VectorValue(f, doc, out);
  RFS_ASSIGN_OR_RETURN(FieldDocValues * values, Reader(f));
  if (values == nullptr) return absl::OkStatus();  // no document of the segment has a value
  switch (field.kind) {
    case RebuildKind::kKeyword:
    case RebuildKind::kText:
    case RebuildKind::kIp: {
      RFS_RETURN_IF_ERROR(values->Terms(doc, terms_));
      for (const auto& term : terms_) {
        out.push_back(JsonString(field.kind == RebuildKind::kIp ? IpString(term) : term));
      }
      return absl::OkStatus();
    }
    case RebuildKind::kBinary: {
      RFS_ASSIGN_OR_RETURN(bool has, values->Binary(doc, binary_));
      if (!has) return absl::OkStatus();
      // CustomBinaryDocValuesField: VInt count, then VInt length + bytes per value.
      core::ByteReader in(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(binary_.data()),
                                                   binary_.size()),
                          field.path);
      RFS_ASSIGN_OR_RETURN(uint32_t count, in.ReadVInt());
      for (uint32_t i = 0; i < count; ++i) {
        RFS_ASSIGN_OR_RETURN(uint32_t length, in.ReadVInt());
        RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(length));
        out.push_back(JsonString(core::Base64Encode(bytes)));
      }
      return absl::OkStatus();
    }
    default:
      break;
  }
  RFS_RETURN_IF_ERROR(values->Numbers(doc, numbers_));
  if (field.kind == RebuildKind::kUnsignedLong) {
    std::sort(numbers_.begin(), numbers_.end(), [](int64_t a, int64_t b) {
      return static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
    });
  }
  for (int64_t v : numbers_) out.push_back(PrintNumber(field, v));
  return absl::OkStatus();
}

namespace {

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

float FloatAt(std::string_view bytes, size_t i, bool little_endian) {
  uint32_t bits = 0;
  for (size_t b = 0; b < 4; ++b) {
    const auto byte = static_cast<uint8_t>(bytes[4 * i + b]);
    bits |= little_endian ? uint32_t{byte} << (8 * b) : uint32_t{byte} << (8 * (3 - b));
  }
  return std::bit_cast<float>(bits);
}

}  // namespace

absl::Status SourceRebuilder::PointValues(size_t f, int32_t doc, std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  if (points_ == nullptr) return absl::OkStatus();
  point_values_.clear();
  RFS_ASSIGN_OR_RETURN(bool has, points_->Values(field.path, doc, point_values_));
  if (!has) return absl::OkStatus();
  for (const auto& bytes : point_values_) {
    if (field.kind == RebuildKind::kIp) {
      out.push_back(JsonString(
          IpString(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()))));
      continue;
    }
    // NumericUtils' sortable bytes: big-endian with the sign bit flipped, 2, 4 or 8 of them; the
    // number is what the field's doc values would hold.
    if (bytes.empty() || bytes.size() > 8) {
      return absl::DataLossError(
          StrCat("field ", field.path, ": a point of ", bytes.size(), " bytes is not a number"));
    }
    uint64_t raw = 0;
    for (uint8_t b : bytes) raw = raw << 8 | b;
    const int bits = static_cast<int>(bytes.size()) * 8;
    raw ^= uint64_t{1} << (bits - 1);
    const int64_t value =
        bits == 64 ? static_cast<int64_t>(raw)
                   : static_cast<int64_t>(raw << (64 - bits)) >> (64 - bits);  // sign-extend
    out.push_back(PrintNumber(field, value));
  }
  return absl::OkStatus();
}

absl::Status SourceRebuilder::TermValues(size_t f, int32_t doc, std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  if (terms_index_ == nullptr) return absl::OkStatus();
  term_values_.clear();
  RFS_ASSIGN_OR_RETURN(bool has, terms_index_->Values(field.path, doc, term_values_));
  if (!has) return absl::OkStatus();
  for (const std::string& term : term_values_) {
    if (field.kind == RebuildKind::kBoolean) {
      // BooleanFieldMapper indexes "T" and "F".
      out.push_back(term == "T" ? "true" : "false");
    } else {
      out.push_back(JsonString(term));
    }
  }
  return absl::OkStatus();
}

absl::Status SourceRebuilder::VectorValue(size_t f, int32_t doc, std::vector<std::string>& out) {
  const RebuildField& field = plan_->fields[f];
  RFS_ASSIGN_OR_RETURN(FieldVectors * vectors, vectors_->Field(field.path));
  if (vectors != nullptr) {
    RFS_ASSIGN_OR_RETURN(bool has, vectors->Vector(doc, vector_));
    if (!has) return absl::OkStatus();
    if (!field.magnitude_field.empty()) {
      RFS_ASSIGN_OR_RETURN(FieldDocValues * magnitudes, doc_values_->Field(field.magnitude_field));
      if (magnitudes != nullptr) {
        RFS_RETURN_IF_ERROR(magnitudes->Numbers(doc, numbers_));
        if (!numbers_.empty()) {
          // Float.floatToIntBits of the magnitude, in the low 32 bits.
          const float magnitude =
              std::bit_cast<float>(static_cast<uint32_t>(static_cast<uint64_t>(numbers_[0])));
          for (float& element : vector_) element *= magnitude;
        }
      }
    }
    out.push_back(PrintVector(field, vector_));
    return absl::OkStatus();
  }
  RFS_ASSIGN_OR_RETURN(FieldDocValues * values, Reader(f));
  if (values == nullptr || values->type() != DvmType::kBinary) return absl::OkStatus();
  RFS_ASSIGN_OR_RETURN(bool has, values->Binary(doc, binary_));
  if (!has) return absl::OkStatus();
  const auto dims = static_cast<size_t>(field.dims);
  std::string_view bytes = binary_;
  vector_.clear();
  if (field.byte_elements) {
    // One signed byte per element (Elasticsearch adds a 4-byte magnitude after them).
    if (bytes.size() != dims && bytes.size() != dims + 4) {
      return absl::DataLossError(
          StrCat("byte vector of ", bytes.size(), " bytes for ", dims, " dimensions in doc ", doc));
    }
    for (size_t i = 0; i < dims; ++i) vector_.push_back(static_cast<int8_t>(bytes[i]));
  } else {
    bool little_endian = field.little_endian_binary_vectors;
    if (field.type == "knn_vector") {
      // OpenSearch k-NN: big-endian floats, or (older indices) a Java-serialized float[] whose
      // elements end the bytes, preceded by their count.
      little_endian = false;
      if (bytes.size() > dims * 4 + 4 && static_cast<uint8_t>(bytes[0]) == 0xAC &&
          static_cast<uint8_t>(bytes[1]) == 0xED) {
        bytes = bytes.substr(bytes.size() - dims * 4);
      }
    }
    // Elasticsearch's dense_vector adds the vector's magnitude as a fifth float after them
    // (indices created by 7.5+).
    if (bytes.size() != dims * 4 &&
        !(field.type == "dense_vector" && bytes.size() == dims * 4 + 4)) {
      return absl::DataLossError(StrCat("vector of ", bytes.size(), " bytes for ", dims,
                                        " float dimensions in doc ", doc));
    }
    for (size_t i = 0; i < dims; ++i) vector_.push_back(FloatAt(bytes, i, little_endian));
  }
  out.push_back(PrintVector(field, vector_));
  return absl::OkStatus();
}

void SourceRebuilder::NoteExactness(size_t f) {
  switch (plan_->fields[f].exactness) {
    case RebuildExactness::kExact:
      return;
    case RebuildExactness::kArraysReordered:
      if (values_[f].size() > 1) last_inexact_ = true;
      return;
    case RebuildExactness::kApproximate:
      if (!values_[f].empty()) last_inexact_ = true;
      return;
  }
}

absl::Status SourceRebuilder::RebuildChild(int32_t doc) {
  // A child's values say which nested path it belongs to: it has values only for the fields
  // of its own path (deeper ones live in its own children).
  static const std::vector<StoredValue> kNoStored;
  int scope = -1;
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    values_[f].clear();
    if (field_scope_[f] < 0 || (scope >= 0 && field_scope_[f] != scope)) continue;
    auto status = FieldValues(f, doc, kNoStored, values_[f]);
    if (!status.ok()) {
      return core::WithContext(
          status, StrCat("rebuilding field '", plan_->fields[f].path, "' of nested doc ", doc));
    }
    if (scope < 0 && !values_[f].empty()) scope = field_scope_[f];
  }
  if (scope < 0) return absl::OkStatus();
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    if (field_scope_[f] != scope) values_[f].clear();
    NoteExactness(f);
  }
  child_text_.clear();
  if (!Write(nested_nodes_[static_cast<size_t>(scope)], child_text_)) child_text_ = "{}";
  pending_[static_cast<size_t>(scope)].push_back(child_text_);
  return absl::OkStatus();
}

absl::Status SourceRebuilder::ApplyArrayOffsets(size_t f, int32_t doc,
                                                std::vector<std::string>& values) {
  const RebuildField& field = plan_->fields[f];
  if (field.array_offsets_field.empty()) return absl::OkStatus();
  if (!offsets_resolved_[f]) {
    RFS_ASSIGN_OR_RETURN(offsets_readers_[f], doc_values_->Field(field.array_offsets_field));
    offsets_resolved_[f] = true;
  }
  if (offsets_readers_[f] == nullptr) return absl::OkStatus();
  RFS_RETURN_IF_ERROR(offsets_readers_[f]->Terms(doc, terms_));
  if (terms_.empty()) return absl::OkStatus();  // a single value or none: nothing to reorder
  // FieldArrayContext: ZigZag VInt count, then per position the ZigZag VInt index of its value
  // among the document's distinct values (-1: null).
  const std::string& encoded = terms_.front();
  core::ByteReader in(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size()),
      field.array_offsets_field);
  auto zigzag = [&]() -> absl::StatusOr<int64_t> {
    RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadVInt());
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  };
  RFS_ASSIGN_OR_RETURN(int64_t count, zigzag());
  std::vector<std::string> distinct = values;
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (count < 0 || static_cast<uint64_t>(count) > encoded.size()) {
    return in.Error(StrCat("invalid array length ", count, " of doc ", doc));
  }
  values.clear();
  for (int64_t i = 0; i < count; ++i) {
    RFS_ASSIGN_OR_RETURN(int64_t ord, zigzag());
    if (ord == -1) {
      values.push_back("null");
    } else if (ord < 0 || static_cast<uint64_t>(ord) >= distinct.size()) {
      return in.Error(StrCat("array position ", i, " of doc ", doc, " names value ", ord, " of ",
                             distinct.size()));
    } else {
      values.push_back(distinct[static_cast<size_t>(ord)]);
    }
  }
  return absl::OkStatus();
}

absl::Status SourceRebuilder::Rebuild(int32_t doc, const std::vector<StoredValue>& stored,
                                      std::string& out, std::span<const int32_t> children) {
  for (auto& objects : pending_) objects.clear();
  last_inexact_ = false;
  for (int32_t child : children) RFS_RETURN_IF_ERROR(RebuildChild(child));
  for (size_t f = 0; f < plan_->fields.size(); ++f) {
    values_[f].clear();
    if (field_scope_[f] >= 0) continue;
    auto status = FieldValues(f, doc, stored, values_[f]);
    if (status.ok()) status = ApplyArrayOffsets(f, doc, values_[f]);
    if (!status.ok()) {
      return core::WithContext(
          status, StrCat("rebuilding field '", plan_->fields[f].path, "' of doc ", doc));
    }
    NoteExactness(f);
  }
  if (plan_->reads_ignored_source) RFS_RETURN_IF_ERROR(ApplyIgnoredSource(stored));
  out.clear();
  Write(0, out);
  if (out.empty()) out = "{}";
  return absl::OkStatus();
}

absl::Status SourceRebuilder::ApplyIgnoredSource(const std::vector<StoredValue>& stored) {
  for (const auto& entry : stored) {
    if (!entry.ignored_source) continue;
    // IgnoredSourceFieldMapper: i32 LE (name length + 65536 × the parent's offset in the name),
    // the name, then the value: one type byte and its bytes (XContentDataHelper).
    const auto* bytes = reinterpret_cast<const uint8_t*>(entry.text.data());
    core::ByteReader in(std::span<const uint8_t>(bytes, entry.text.size()), "_ignored_source");
    RFS_ASSIGN_OR_RETURN(uint32_t packed, in.ReadLeU32());
    RFS_ASSIGN_OR_RETURN(std::span<const uint8_t> name_bytes, in.ReadBytes(packed & 0xFFFF));
    const std::string name(name_bytes.begin(), name_bytes.end());
    auto it = std::lower_bound(
        plan_->fields.begin(), plan_->fields.end(), name,
        [](const RebuildField& field, const std::string& path) { return field.path < path; });
    // Whole objects and fields the plan does not rebuild are left as they are.
    if (it == plan_->fields.end() || it->path != name) continue;
    const size_t f = static_cast<size_t>(it - plan_->fields.begin());
    if (field_scope_[f] >= 0) continue;
    const size_t type_at = in.position();
    RFS_ASSIGN_OR_RETURN(uint8_t type, in.ReadByte());
    const std::span<const uint8_t> rest =
        std::span<const uint8_t>(bytes, entry.text.size()).subspan(in.position());
    std::string json;
    switch (type) {
      case 'S':
        json =
            JsonString(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()));
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
        return in.ErrorAt(type_at, StrCat("value of type '", static_cast<char>(type), "' for ",
                                          name, " is not read"));
    }
    values_[f].clear();
    if (!json.empty()) values_[f].push_back(std::move(json));
  }
  return absl::OkStatus();
}

// Writes node `node` as an object; false (nothing written) when no field below it has a value.
bool SourceRebuilder::Write(size_t node, std::string& out) {
  const size_t start = out.size();
  out += '{';
  bool any = false;
  for (const auto& [name, child] : nodes_[node].children) {
    const size_t before = out.size();
    if (any) out += ',';
    core::AppendJsonString(name, out);
    out += ':';
    const int field = nodes_[child].field;
    const int nested = nodes_[child].nested;
    bool wrote = false;
    if (nested >= 0) {
      // Objects of a nested path below: rendered from the children before this document.
      auto& objects = pending_[static_cast<size_t>(nested)];
      if (objects.size() == 1) {
        out += objects[0];
        wrote = true;
      } else if (!objects.empty()) {
        out += '[';
        for (size_t i = 0; i < objects.size(); ++i) {
          if (i > 0) out += ',';
          out += objects[i];
        }
        out += ']';
        wrote = true;
      }
      objects.clear();
    } else if (field >= 0 && !values_[field].empty()) {
      const auto& values = values_[field];
      if (values.size() == 1) {
        out += values[0];
      } else {
        out += '[';
        for (size_t i = 0; i < values.size(); ++i) {
          if (i > 0) out += ',';
          out += values[i];
        }
        out += ']';
      }
      wrote = true;
    } else if (!nodes_[child].children.empty()) {
      wrote = Write(child, out);
    }
    if (wrote) {
      any = true;
    } else {
      out.resize(before);
    }
  }
  if (!any) {
    out.resize(start);
    return false;
  }
  out += '}';
  return true;
}

}  // namespace internal

}  // namespace rfs::lucene
