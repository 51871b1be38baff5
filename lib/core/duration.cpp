#include "rfs/core/duration.hpp"

#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>

#include "rfs/core/str_cat.hpp"

namespace rfs::core {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

bool AddChecked(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }
bool MulChecked(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

// A unit of an ISO-8601 duration: its rank in the order units must appear (D, then after T: H,
// M, S) and its length in seconds.
struct DurationUnit {
  int rank;
  int64_t seconds;
};

std::optional<DurationUnit> FindUnit(char unit, bool in_time) {
  if (!in_time)
    return unit == 'D' ? std::optional<DurationUnit>(DurationUnit{0, 86'400}) : std::nullopt;
  switch (unit) {
    case 'H':
      return DurationUnit{1, 3'600};
    case 'M':
      return DurationUnit{2, 60};
    case 'S':
      return DurationUnit{3, 1};
    default:
      return std::nullopt;
  }
}

}  // namespace

absl::StatusOr<std::chrono::nanoseconds> ParseIsoDuration(std::string_view text) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        StrCat("'", text, "' is not an ISO-8601 duration such as PT10M or PT1H30M (", why, ")"));
  };
  size_t pos = 0;
  auto upper = [&](size_t i) { return static_cast<char>(std::toupper(text[i])); };
  bool negative = false;
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) negative = text[pos++] == '-';
  if (pos >= text.size() || upper(pos) != 'P') return invalid("must start with P");
  ++pos;
  bool in_time = false;
  bool any_part = false;
  // Units in the order they must appear: D before T, then H, M, S.
  int last_unit = -1;
  int64_t total = 0;
  while (pos < text.size()) {
    if (upper(pos) == 'T') {
      if (in_time) return invalid("T twice");
      in_time = true;
      ++pos;
      if (pos == text.size()) return invalid("nothing after T");
      continue;
    }
    bool part_negative = false;
    if (text[pos] == '-' || text[pos] == '+') part_negative = text[pos++] == '-';
    int64_t whole = 0;
    size_t digits = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      if (!MulChecked(whole, 10, whole) || !AddChecked(whole, text[pos] - '0', whole)) {
        return invalid("too large");
      }
      ++pos;
      ++digits;
    }
    int64_t fraction_nanos = 0;
    bool has_fraction = false;
    if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
      has_fraction = true;
      ++pos;
      int64_t scale = kNanosPerSecond / 10;
      size_t fraction_digits = 0;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (fraction_digits++ >= 9) return invalid("more than 9 fraction digits");
        fraction_nanos += (text[pos] - '0') * scale;
        scale /= 10;
        ++pos;
      }
      if (fraction_digits == 0) return invalid("no digits after the decimal point");
    }
    if (digits == 0 && !has_fraction) return invalid("a number must precede each unit");
    if (pos >= text.size()) return invalid("number without a unit");
    const char unit = upper(pos++);
    const std::optional<DurationUnit> found = FindUnit(unit, in_time);
    if (!found) return invalid(StrCat("unexpected unit '", std::string(1, unit), "'"));
    const auto [unit_rank, unit_seconds] = *found;
    if (unit_rank <= last_unit) return invalid("units out of order or repeated");
    if (has_fraction && unit != 'S') return invalid("only seconds may have a fraction");
    last_unit = unit_rank;
    any_part = true;
    int64_t part = 0;
    if (!MulChecked(whole, unit_seconds, part) || !MulChecked(part, kNanosPerSecond, part) ||
        !AddChecked(part, fraction_nanos, part)) {
      return invalid("too large");
    }
    if (part_negative) part = -part;
    if (!AddChecked(total, part, total)) return invalid("too large");
  }
  if (!any_part) return invalid("no parts");
  return std::chrono::nanoseconds(negative ? -total : total);
}

std::string FormatIsoDuration(std::chrono::nanoseconds duration) {
  int64_t nanos = duration.count();
  std::string out = nanos < 0 ? "-PT" : "PT";
  // Magnitude in unsigned arithmetic so that INT64_MIN formats too.
  uint64_t magnitude =
      nanos < 0 ? uint64_t{0} - static_cast<uint64_t>(nanos) : static_cast<uint64_t>(nanos);
  const uint64_t seconds_total = magnitude / kNanosPerSecond;
  const uint64_t fraction = magnitude % kNanosPerSecond;
  const uint64_t hours = seconds_total / 3600;
  const uint64_t minutes = seconds_total / 60 % 60;
  const uint64_t seconds = seconds_total % 60;
  if (hours > 0) out += std::to_string(hours) + "H";
  if (minutes > 0) out += std::to_string(minutes) + "M";
  if (seconds > 0 || fraction > 0 || (hours == 0 && minutes == 0)) {
    out += std::to_string(seconds);
    if (fraction > 0) {
      std::string digits = std::to_string(fraction);
      digits.insert(0, 9 - digits.size(), '0');
      while (digits.back() == '0') digits.pop_back();
      out += "." + digits;
    }
    out += "S";
  }
  return out;
}

}  // namespace rfs::core
