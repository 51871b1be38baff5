// ClusterVersion (see version.hpp).
#include "rfs/core/version.hpp"

#include <cctype>
#include <charconv>
#include <initializer_list>
#include <utility>

#include "rfs/core/str_cat.hpp"

namespace rfs::core {

std::string ClusterVersion::ToString() const {
  const char* prefix = elasticsearch() ? "ES" : opensearch() ? "OS" : nullptr;
  if (prefix == nullptr) return "unknown";
  if (minor < 0) return StrCat(prefix, " ", major, ".x");
  if (patch < 0) return StrCat(prefix, " ", major, ".", minor);
  return StrCat(prefix, " ", major, ".", minor, ".", patch);
}

std::string ClusterVersion::LongName() const {
  const char* name = elasticsearch() ? "Elasticsearch" : opensearch() ? "OpenSearch" : nullptr;
  if (name == nullptr) return "unknown";
  if (minor < 0) return StrCat(name, " ", major, ".x");
  return StrCat(name, " ", major, ".", minor, ".", patch < 0 ? 0 : patch);
}

absl::StatusOr<ClusterVersion> ClusterVersion::Parse(std::string_view text) {
  std::string lower;
  for (char c : text)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::string_view rest = lower;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  ClusterVersion out;
  bool found = false;
  for (auto [prefix, product] :
       std::initializer_list<std::pair<std::string_view, ClusterVersion::Product>>{
           {"elasticsearch", ClusterVersion::Product::kElasticsearch},
           {"opensearch", ClusterVersion::Product::kOpenSearch},
           {"es", ClusterVersion::Product::kElasticsearch},
           {"os", ClusterVersion::Product::kOpenSearch}}) {
    if (rest.starts_with(prefix)) {
      out.product = product;
      rest.remove_prefix(prefix.size());
      found = true;
      break;
    }
  }
  auto invalid = [&] {
    return absl::InvalidArgumentError(StrCat(
        "version '", text, "' is not a product and version such as \"ES 6.8\" or \"OS 2.19\""));
  };
  if (!found) return invalid();
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '_' || rest.front() == '-' ||
                           rest.front() == 'v')) {
    rest.remove_prefix(1);
  }
  auto number = [&](int& into) {
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), into);
    if (ec != std::errc() || into < 0 || into > 1000) return false;
    rest.remove_prefix(static_cast<size_t>(ptr - rest.data()));
    return true;
  };
  if (!number(out.major) || out.major == 0) return invalid();
  out.minor = 0;
  if (!rest.empty() && (rest.front() == '.' || rest.front() == '_')) {
    rest.remove_prefix(1);
    if (!number(out.minor)) return invalid();
    // A patch level (".2").
    if (!rest.empty() && (rest.front() == '.' || rest.front() == '_')) {
      rest.remove_prefix(1);
      if (!number(out.patch)) return invalid();
    }
  }
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (!rest.empty()) return invalid();
  return out;
}

absl::StatusOr<ClusterVersion> ClusterVersion::ParseKnown(std::string_view text) {
  auto parsed = Parse(text);
  if (!parsed.ok()) return parsed;
  if (!parsed->IsKnownMajor()) {
    return absl::InvalidArgumentError(StrCat(
        "version '", text, "' is not one rfs knows: ", "Elasticsearch 1 to 9, OpenSearch 1 to 3"));
  }
  return parsed;
}

}  // namespace rfs::core
