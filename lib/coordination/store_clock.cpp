#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>

#include "coordination/store_clock_internal.hpp"

namespace rfs::coordination::internal {
namespace {

bool ParseFixed(std::string_view text, size_t pos, size_t len, int& out) {
  if (pos + len > text.size()) return false;
  for (size_t i = pos; i < pos + len; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  std::from_chars(text.data() + pos, text.data() + pos + len, out);
  return true;
}

}  // namespace

std::optional<TimePoint> ParseHttpDate(std::string_view text) {
  // "Sun, 06 Nov 1994 08:49:37 GMT": fixed width, 29 characters (RFC 9110 section 5.6.7).
  static constexpr std::array<std::string_view, 7> kDays = {"Mon", "Tue", "Wed", "Thu",
                                                            "Fri", "Sat", "Sun"};
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.size() != 29 || text.substr(3, 2) != ", " || text[7] != ' ' || text[11] != ' ' ||
      text[16] != ' ' || text[19] != ':' || text[22] != ':' || text.substr(25) != " GMT") {
    return std::nullopt;
  }
  if (std::find(kDays.begin(), kDays.end(), text.substr(0, 3)) == kDays.end()) return std::nullopt;
  const auto month_it = std::find(kMonths.begin(), kMonths.end(), text.substr(8, 3));
  if (month_it == kMonths.end()) return std::nullopt;
  int day, year, hour, minute, second;
  if (!ParseFixed(text, 5, 2, day) || !ParseFixed(text, 12, 4, year) ||
      !ParseFixed(text, 17, 2, hour) || !ParseFixed(text, 20, 2, minute) ||
      !ParseFixed(text, 23, 2, second)) {
    return std::nullopt;
  }
  // Leap second 60 is allowed by the grammar; clamping it keeps the instant monotonic enough.
  if (hour > 23 || minute > 59 || second > 60) return std::nullopt;
  const std::chrono::year_month_day date{
      std::chrono::year(year),
      std::chrono::month(static_cast<unsigned>(month_it - kMonths.begin() + 1)),
      std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return std::nullopt;
  return TimePoint{std::chrono::sys_days(date).time_since_epoch() + std::chrono::hours(hour) +
                   std::chrono::minutes(minute) + std::chrono::seconds(std::min(second, 59))};
}

void StoreClockEstimator::Observe(TimePoint sent, TimePoint received, TimePoint store_low,
                                  TimePoint store_high) {
  if (received < sent) std::swap(sent, received);
  const Duration low = store_low - received;
  const Duration high = store_high - sent;
  std::lock_guard lock(mu_);
  const bool restart =
      !valid_ || received - window_start_ > max_age_ || low > offset_high_ || high < offset_low_;
  if (restart) {
    valid_ = true;
    window_start_ = sent;
    offset_low_ = low;
    offset_high_ = high;
    return;
  }
  offset_low_ = std::max(offset_low_, low);
  offset_high_ = std::min(offset_high_, high);
}

std::optional<StoreTime> StoreClockEstimator::Estimate(TimePoint local) const {
  std::lock_guard lock(mu_);
  if (!valid_ || local - window_start_ > max_age_ || local < window_start_) return std::nullopt;
  return StoreTime{local + std::chrono::duration_cast<TimePoint::duration>(offset_low_),
                   local + std::chrono::duration_cast<TimePoint::duration>(offset_high_), local};
}

}  // namespace rfs::coordination::internal
