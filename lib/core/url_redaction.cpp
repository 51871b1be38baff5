#include "rfs/core/url_redaction.hpp"

#include "rfs/core/str_cat.hpp"

namespace rfs::core {

std::string WithoutPassword(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t authority = scheme + 3;
  const size_t at = url.rfind('@');
  if (at == std::string_view::npos || at < authority) return std::string(url);
  std::string_view user = url.substr(authority, at - authority);
  user = user.substr(0, user.find(':'));
  // A user name never holds '/': one that seems to was part of a password.
  if (user.find('/') != std::string_view::npos) user = "<redacted>";
  return StrCat(url.substr(0, authority), user, url.substr(at));
}

}  // namespace rfs::core
