// ISO-8601 durations as the Java tools take them (java.time.Duration.parse): "PT10M", "PT1H30M",
// "P1DT2H", "PT0.5S", with an optional leading '-' on the whole or on a part. Used for
// `--initial-lease-duration` and similar options.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace rfs::core {

/// Parses "[-]P[nD][T[nH][nM][n[.fff]S]]" (case-insensitive, at least one part, fractions only on
/// seconds, up to nanoseconds). InvalidArgument naming the text otherwise, or on overflow.
absl::StatusOr<std::chrono::nanoseconds> ParseIsoDuration(std::string_view text);

/// The shortest ISO-8601 form of `duration`, e.g. "PT10M", "PT1H0.5S", "PT0S".
std::string FormatIsoDuration(std::chrono::nanoseconds duration);

}  // namespace rfs::core
