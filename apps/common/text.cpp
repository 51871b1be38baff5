#include "text.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include <boost/json.hpp>

#include "rfs/core/json_text.hpp"

#include <unistd.h>

namespace rfs::apps {

std::string NowIso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03dZ", text, static_cast<int>(millis));
  return out;
}

int ReportFailure(const char* program, const absl::Status& status, int exit_code) {
  if (isatty(STDERR_FILENO) == 1) {
    std::cerr << program << ": " << status.message() << "\n";
  } else {
    boost::json::object line{{"ts", NowIso8601()},
                             {"event", "error"},
                             {"code", absl::StatusCodeToString(status.code())},
                             {"exit_code", exit_code},
                             {"message", std::string(status.message())}};
    std::cerr << rfs::core::JsonText(line) << "\n";
  }
  std::cerr << std::flush;
  return exit_code;
}

std::vector<std::string> CommaList(const std::vector<std::string>& entries) {
  std::vector<std::string> out;
  for (const auto& entry : entries) {
    size_t start = 0;
    while (start <= entry.size()) {
      size_t comma = entry.find(',', start);
      if (comma == std::string::npos) comma = entry.size();
      std::string item = entry.substr(start, comma - start);
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (!item.empty()) out.push_back(std::move(item));
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace rfs::apps
