#include "field_projection.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "rfs/core/json_text.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::python {
namespace {

using core::StrCat;

std::vector<std::string> SplitDots(std::string_view name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    parts.emplace_back(name.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

const boost::json::object* ObjectAt(const boost::json::object& parent, std::string_view key) {
  const auto* found = parent.if_contains(key);
  return found != nullptr && found->is_object() ? &found->as_object() : nullptr;
}

std::string TypeOf(const boost::json::object& field) {
  if (const auto* type = field.if_contains("type"); type != nullptr && type->is_string()) {
    return std::string(type->as_string());
  }
  // A field with sub-fields and no type is an object.
  return field.contains("properties") ? "object" : "";
}

void Classify(ProjectedField& field, const boost::json::object& definition) {
  static const std::set<std::string, std::less<>> kText = {
      "keyword", "text", "match_only_text", "wildcard", "constant_keyword", "ip", "version"};
  static const std::set<std::string, std::less<>> kInteger = {"long", "integer", "short", "byte",
                                                              "unsigned_long"};
  static const std::set<std::string, std::less<>> kFloat = {"double", "float", "half_float",
                                                            "scaled_float"};
  const std::string& type = field.mapping_type;
  if (kText.contains(type)) {
    field.kind = ColumnKind::kUtf8;
  } else if (kInteger.contains(type)) {
    field.kind = ColumnKind::kInt64;
  } else if (kFloat.contains(type)) {
    field.kind = ColumnKind::kFloat64;
  } else if (type == "boolean") {
    field.kind = ColumnKind::kBool;
  } else if (type == "date" || type == "date_nanos") {
    field.kind = ColumnKind::kTimestampMillis;
    // The engines' default: strict_date_optional_time||epoch_millis.
    std::string format = "strict_date_optional_time||epoch_millis";
    if (const auto* given = definition.if_contains("format");
        given != nullptr && given->is_string()) {
      format = std::string(given->as_string());
    }
    const bool millis = format.find("epoch_millis") != std::string::npos;
    field.epoch_seconds = !millis && format.find("epoch_second") != std::string::npos;
    field.iso_dates = format.find("date_optional_time") != std::string::npos ||
                      format.find("date_time") != std::string::npos ||
                      format.find("strict_date") != std::string::npos || format == "date" ||
                      format.find("||date") != std::string::npos;
  } else {
    field.kind = ColumnKind::kUtf8;
    field.as_json_text = true;
  }
}

absl::StatusOr<ProjectedField> Resolve(const boost::json::object& mapping, std::string requested) {
  ProjectedField field;
  if (requested.ends_with("[]")) {
    field.is_list = true;
    requested.resize(requested.size() - 2);
  }
  if (requested.empty()) return absl::InvalidArgumentError("a field name is empty");
  field.name = requested;
  const std::vector<std::string> parts = SplitDots(requested);
  const boost::json::object* properties = ObjectAt(mapping, "properties");
  const boost::json::object* definition = nullptr;
  for (size_t i = 0; i < parts.size(); ++i) {
    const boost::json::object* next =
        properties != nullptr ? ObjectAt(*properties, parts[i]) : nullptr;
    if (next == nullptr && definition != nullptr) {
      // A multi-field ("title.raw"): indexed from the parent's value.
      if (const auto* fields = ObjectAt(*definition, "fields")) {
        if (const auto* sub = ObjectAt(*fields, parts[i]);
            sub != nullptr && i + 1 == parts.size()) {
          definition = sub;
          break;
        }
      }
    }
    if (next == nullptr) {
      return absl::InvalidArgumentError(
          StrCat("field '", requested, "' is not in the index's mapping"));
    }
    definition = next;
    field.source_path.push_back(parts[i]);
    properties = ObjectAt(*definition, "properties");
  }
  field.mapping_type = TypeOf(*definition);
  Classify(field, *definition);
  return field;
}

void Collect(const boost::json::value& value, const std::vector<std::string>& path, size_t depth,
             std::vector<const boost::json::value*>& out, bool& present) {
  if (depth == path.size()) present = true;
  if (value.is_array()) {
    for (const auto& item : value.as_array()) Collect(item, path, depth, out, present);
    return;
  }
  if (depth == path.size()) {
    out.push_back(&value);
    return;
  }
  if (!value.is_object()) return;
  const auto& object = value.as_object();
  // {"a": {"b": 1}} and {"a.b": 1} (and {"a.b": {"c": 1}} for a.b.c) spell the same field.
  std::string key;
  for (size_t end = depth; end < path.size(); ++end) {
    if (end > depth) key += '.';
    key += path[end];
    if (const auto* child = object.if_contains(key)) Collect(*child, path, end + 1, out, present);
  }
}

// Whole-text integer parse; nullopt unless every character is part of the number.
std::optional<int64_t> ParseInt64(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<double> ParseDouble(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<int64_t> IntegralDouble(double value) {
  // 2^63 is exactly representable; every double below it in magnitude fits an int64.
  constexpr double kLimit = 9223372036854775808.0;
  if (!std::isfinite(value) || value != std::trunc(value) || value >= kLimit || value < -kLimit) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value);
}

// Days from 1970-01-01 to year-month-day of the proleptic Gregorian calendar.
int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

bool IsLeapYear(int64_t year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int DaysInMonth(int64_t year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && IsLeapYear(year) ? 29 : kDays[month - 1];
}

// Reads exactly `count` digits at `pos`.
bool Digits(std::string_view text, size_t& pos, size_t count, int64_t& value) {
  if (pos + count > text.size()) return false;
  value = 0;
  for (size_t i = 0; i < count; ++i) {
    const char c = text[pos + i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  pos += count;
  return true;
}

}  // namespace

absl::StatusOr<std::vector<ProjectedField>> ResolveFields(
    const boost::json::object& mapping, const std::vector<std::string>& requested) {
  std::vector<ProjectedField> fields;
  std::set<std::string, std::less<>> names = {"_index", "_id", "_routing", "_source"};
  for (const auto& name : requested) {
    auto field = Resolve(mapping, name);
    if (!field.ok()) return field.status();
    if (!names.insert(field->name).second) {
      return absl::InvalidArgumentError(
          StrCat("column '", field->name, "' is requested twice (or is a metadata column)"));
    }
    fields.push_back(*std::move(field));
  }
  return fields;
}

bool CollectValues(const boost::json::value& source, const ProjectedField& field,
                   std::vector<const boost::json::value*>& out) {
  bool present = false;
  Collect(source, field.source_path, 0, out, present);
  return present;
}

std::optional<int64_t> ToInt64(const boost::json::value& value) {
  if (value.is_int64()) return value.as_int64();
  if (value.is_uint64()) {
    const uint64_t v = value.as_uint64();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (value.is_double()) return IntegralDouble(value.as_double());
  if (value.is_string()) {
    const std::string_view text = value.as_string();
    if (auto parsed = ParseInt64(text)) return parsed;
    if (auto parsed = ParseDouble(text)) return IntegralDouble(*parsed);
  }
  return std::nullopt;
}

std::optional<double> ToFloat64(const boost::json::value& value) {
  if (value.is_int64()) return static_cast<double>(value.as_int64());
  if (value.is_uint64()) return static_cast<double>(value.as_uint64());
  if (value.is_double()) return value.as_double();
  if (value.is_string()) {
    auto parsed = ParseDouble(value.as_string());
    if (parsed && std::isfinite(*parsed)) return parsed;
  }
  return std::nullopt;
}

std::optional<bool> ToBool(const boost::json::value& value) {
  if (value.is_bool()) return value.as_bool();
  if (value.is_string()) {
    if (value.as_string() == "true") return true;
    if (value.as_string() == "false") return false;
  }
  return std::nullopt;
}

std::optional<int64_t> ToTimestampMillis(const boost::json::value& value,
                                         const ProjectedField& field) {
  std::optional<int64_t> number;
  if (value.is_string()) {
    const std::string_view text = value.as_string();
    if (auto parsed = ParseInt64(text)) {
      number = parsed;
    } else if (field.iso_dates) {
      return ParseIsoDateTime(text);
    } else {
      return std::nullopt;
    }
  } else if (value.is_number()) {
    number = ToInt64(value);
  }
  if (!number) return std::nullopt;
  if (!field.epoch_seconds) return number;
  constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1000;
  if (*number > kMaxSeconds || *number < -kMaxSeconds) return std::nullopt;
  return *number * 1000;
}

std::optional<std::string> ToText(const boost::json::value& value, const ProjectedField& field) {
  if (value.is_string()) return std::string(value.as_string());
  if (value.is_null()) return std::nullopt;
  if (field.as_json_text || value.is_number() || value.is_bool()) return core::JsonText(value);
  return std::nullopt;
}

std::optional<int64_t> ParseIsoDateTime(std::string_view text) {
  size_t pos = 0;
  int64_t year = 0;
  int64_t month = 1;
  int64_t day = 1;
  int64_t hour = 0;
  int64_t minute = 0;
  int64_t second = 0;
  int64_t millis = 0;
  if (!Digits(text, pos, 4, year)) return std::nullopt;
  if (pos < text.size() && text[pos] == '-') {
    ++pos;
    if (!Digits(text, pos, 2, month) || month < 1 || month > 12) return std::nullopt;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      if (!Digits(text, pos, 2, day) || day < 1 ||
          day > DaysInMonth(year, static_cast<int>(month))) {
        return std::nullopt;
      }
    }
  }
  int64_t offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'T' || text[pos] == 't' || text[pos] == ' ')) {
    ++pos;
    if (!Digits(text, pos, 2, hour) || hour > 23) return std::nullopt;
    if (pos >= text.size() || text[pos] != ':') return std::nullopt;
    ++pos;
    if (!Digits(text, pos, 2, minute) || minute > 59) return std::nullopt;
    if (pos < text.size() && text[pos] == ':') {
      ++pos;
      if (!Digits(text, pos, 2, second) || second > 59) return std::nullopt;
      if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
        ++pos;
        // Milliseconds from the first three digits; finer digits are dropped.
        size_t digits = 0;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
          if (digits < 3) millis = millis * 10 + (text[pos] - '0');
          ++digits;
          ++pos;
        }
        if (digits == 0 || digits > 9) return std::nullopt;
        for (size_t i = digits; i < 3; ++i) millis *= 10;
      }
    }
    if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
      ++pos;
    } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      const int64_t sign = text[pos] == '-' ? -1 : 1;
      ++pos;
      int64_t offset_hours = 0;
      int64_t offset_mins = 0;
      if (!Digits(text, pos, 2, offset_hours) || offset_hours > 18) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (pos < text.size() && !Digits(text, pos, 2, offset_mins)) return std::nullopt;
      if (offset_mins > 59) return std::nullopt;
      offset_minutes = sign * (offset_hours * 60 + offset_mins);
    }
  }
  if (pos != text.size()) return std::nullopt;
  const int64_t days = DaysFromCivil(year, month, day);
  const int64_t seconds = ((days * 24 + hour) * 60 + minute - offset_minutes) * 60 + second;
  return seconds * 1000 + millis;
}

}  // namespace rfs::python
