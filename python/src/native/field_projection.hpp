// Mapped fields of an index projected out of each document's `_source` into typed columns.
//
// A requested name is a field of the index's mapping ("title", "user.age", a multi-field such as
// "title.raw", read from its parent's value); with "[]" appended ("tags[]") the column is a list of
// that type, so that arrays are kept. The column type follows the mapping:
//   keyword, text, match_only_text, wildcard, constant_keyword, ip, version -> utf8
//   long, integer, short, byte, unsigned_long                              -> int64
//   double, float, half_float, scaled_float                                -> float64
//   date, date_nanos                                                        -> timestamp[ms, UTC]
//   boolean                                                                 -> bool
//   any other (object, nested, geo_point, ...)                              -> utf8 (its JSON text)
// A value that does not fit the type is null: a fraction in an integer field, text that is no
// number, a date in a custom format, several values (an array) in a scalar column.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "absl/status/statusor.h"

namespace rfs::python {

enum class ColumnKind { kUtf8, kInt64, kFloat64, kBool, kTimestampMillis };

struct ProjectedField {
  /// The column name: the requested name without "[]".
  std::string name;
  /// Where the value is in `_source` (a multi-field reads its parent's).
  std::vector<std::string> source_path;
  std::string mapping_type;
  ColumnKind kind = ColumnKind::kUtf8;
  bool is_list = false;
  /// Mapping types without a column type of their own: the value as JSON text.
  bool as_json_text = false;
  /// Dates: whether bare numbers count as epoch seconds (format epoch_second without
  /// epoch_millis) rather than milliseconds, and whether ISO 8601 text is accepted.
  bool epoch_seconds = false;
  bool iso_dates = true;
};

/// The fields of `requested` in `mapping` (one type's mapping: {"properties": ...}).
/// InvalidArgument naming a field the mapping does not have, or a name given twice.
absl::StatusOr<std::vector<ProjectedField>> ResolveFields(
    const boost::json::object& mapping, const std::vector<std::string>& requested);

/// Every value at `field.source_path` in `source` (arrays flattened; a dotted key such as
/// {"user.age": 3} counts as the path it spells). Returns whether the path is there at all (an
/// empty array is there, with no value).
bool CollectValues(const boost::json::value& source, const ProjectedField& field,
                   std::vector<const boost::json::value*>& out);

std::optional<int64_t> ToInt64(const boost::json::value& value);
std::optional<double> ToFloat64(const boost::json::value& value);
std::optional<bool> ToBool(const boost::json::value& value);
/// Milliseconds since the epoch, UTC.
std::optional<int64_t> ToTimestampMillis(const boost::json::value& value,
                                         const ProjectedField& field);
/// Text for utf8 columns: strings as they are, numbers and booleans as their JSON text (as the
/// engines index them into keyword fields); with `as_json_text` any value's JSON text.
std::optional<std::string> ToText(const boost::json::value& value, const ProjectedField& field);

/// ISO 8601 date-time text (yyyy, yyyy-MM, yyyy-MM-dd, then optional THH:mm[:ss[.fraction]] and
/// Z or an offset) as milliseconds since the epoch, UTC.
std::optional<int64_t> ParseIsoDateTime(std::string_view text);

}  // namespace rfs::python
