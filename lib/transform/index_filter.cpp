#include "rfs/transform/index_filter.hpp"

#include <algorithm>
#include <array>

#include "rfs/core/str_cat.hpp"

#include "user_regex_internal.hpp"

namespace rfs::transform {

namespace {

constexpr std::string_view kRegexPrefix = "regex:";

// Security plugins keep their state in ordinary-looking index names.
constexpr std::array<std::string_view, 4> kSystemIndexPrefixes = {
    ".", "searchguard", "sg7-auditlog-", "security-auditlog-"};

// Templates Elasticsearch (x-pack) installs for its own data streams and features; a target
// cluster installs its own equivalents, and copying them would shadow user templates.
constexpr std::array<std::string_view, 13> kSystemTemplatePrefixes = {".",
                                                                      "apm-",
                                                                      "apm@",
                                                                      "behavioral_analytics-",
                                                                      "elastic-connectors",
                                                                      "ilm-history",
                                                                      "logs-",
                                                                      "metrics-",
                                                                      "profiling-",
                                                                      "synthetics-",
                                                                      "traces-",
                                                                      "security-",
                                                                      "sg7-auditlog-"};

template <size_t N>
bool HasAnyPrefix(std::string_view name, const std::array<std::string_view, N>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

}  // namespace

absl::StatusOr<Allowlist> Allowlist::Parse(const std::vector<std::string>& entries) {
  Allowlist list;
  for (const std::string& argument : entries) {
    // Comma-separated lists in one argument, as the Java tool's --index-allowlist a,b,c. A regex
    // containing a comma must be given as its own argument.
    std::vector<std::string> parts;
    if (argument.starts_with(kRegexPrefix)) {
      parts.push_back(argument);
    } else {
      size_t start = 0;
      while (start <= argument.size()) {
        size_t comma = argument.find(',', start);
        if (comma == std::string::npos) comma = argument.size();
        parts.push_back(argument.substr(start, comma - start));
        start = comma + 1;
      }
    }
    for (std::string& part : parts) {
      if (part.empty()) {
        return absl::InvalidArgumentError(
            core::StrCat("empty allowlist entry in '", argument, "'"));
      }
      list.entries_.push_back(part);
      if (part.starts_with(kRegexPrefix)) {
        const std::string pattern = part.substr(kRegexPrefix.size());
        auto compiled =
            internal::CompileUserRegex(pattern, core::StrCat("allowlist entry '", part, "'"));
        if (!compiled.ok()) return compiled.status();
        list.patterns_.push_back(*std::move(compiled));
      } else {
        list.names_.push_back(std::move(part));
      }
    }
  }
  return list;
}

bool Allowlist::Matches(std::string_view name) const {
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) return true;
  return std::any_of(patterns_.begin(), patterns_.end(), [&](const auto& pattern) {
    return re2::RE2::FullMatch(re2::StringPiece(name.data(), name.size()), *pattern);
  });
}

bool IsSystemIndex(std::string_view name) { return HasAnyPrefix(name, kSystemIndexPrefixes); }

bool IsSystemTemplate(std::string_view name) { return HasAnyPrefix(name, kSystemTemplatePrefixes); }

}  // namespace rfs::transform
