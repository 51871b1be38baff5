#include "rfs/net/http_transport.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace rfs::net {

std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() &&
        std::equal(key.begin(), key.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return value;
    }
  }
  return std::nullopt;
}

bool IsLoopbackHost(std::string_view host) {
  std::string lower(host);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "localhost" || lower == "::1") return true;
  if (!lower.starts_with("127.")) return false;
  int dots = 0;
  for (char c : lower) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

}  // namespace rfs::net
