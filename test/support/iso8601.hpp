// UTC timestamps in the ISO-8601 form AWS services write, for test doubles.
#pragma once

#include <chrono>
#include <ctime>
#include <string>

namespace rfs::test {

/// "2030-01-01T00:00:00Z", as AWS credential endpoints write expirations.
inline std::string Iso8601Utc(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace rfs::test
