#include "rfs/transform/index_filter.hpp"

#include <algorithm>
#include <array>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"

#include "user_regex_internal.hpp"

namespace rfs::transform {

namespace {

constexpr std::string_view kRegexPrefix = "regex:";

// Security plugins keep their state in ordinary-looking index names.
constexpr std::array<std::string_view, 4> kSystemIndexPrefixes = {
    ".", "searchguard", "sg7-auditlog-", "security-auditlog-"};

// The stack templates Elasticsearch 7.9+ installs under plain names
// (x-pack/plugin/core/src/main/resources/{logs,metrics,synthetics}-*.json, ilm-history.json in
// elastic/elasticsearch). Later versions also mark them `_meta.managed: true`; before that the
// name is the only sign. A user's own template of another name (`logs-app-tpl`) is not one.
constexpr std::array<std::string_view, 16> kElasticsearchBuiltinTemplates = {
    "logs",
    "logs-mappings",
    "logs-settings",
    "metrics",
    "metrics-mappings",
    "metrics-settings",
    "synthetics",
    "synthetics-mappings",
    "synthetics-settings",
    "data-streams-mappings",
    "ilm-history",
    "ilm-history-7",
    "logs@mappings",
    "logs@settings",
    "metrics@mappings",
    "metrics@settings"};

// The templates X-Pack (Elasticsearch 5.0 and later) installs under plain names for its security
// features: the security index's (SecurityIndexManager, `security-index-template` and its later
// names) and the index audit trail's (`IndexAuditTrail.INDEX_TEMPLATE_NAME`,
// x-pack/plugin/security/.../audit/index/IndexAuditTrail.java in elastic/elasticsearch).
constexpr std::array<std::string_view, 4> kXPackBuiltinTemplates = {
    "security-index-template", "security-index-template-v6", "security-index-template-7",
    "security_audit_log"};

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

bool IsSystemTemplate(std::string_view name) { return name.starts_with("."); }

std::optional<std::string> SourceEngineTemplate(std::string_view name,
                                                const boost::json::object& body,
                                                const core::ClusterVersion& source) {
  if (const boost::json::value* meta = body.if_contains("_meta"); meta && meta->is_object()) {
    const boost::json::object& m = meta->as_object();
    if (const auto* managed = m.if_contains("managed");
        managed && managed->is_bool() && managed->as_bool()) {
      return std::string("installed and managed by the source cluster (_meta.managed)");
    }
    if (const auto* by = m.if_contains("managed_by");
        by && by->is_string() && !by->as_string().empty()) {
      return core::StrCat("managed by ", std::string_view(by->as_string()),
                          " on the source cluster (_meta.managed_by)");
    }
  }
  if (source.elasticsearch() && source.major >= 5 &&
      std::find(kXPackBuiltinTemplates.begin(), kXPackBuiltinTemplates.end(), name) !=
          kXPackBuiltinTemplates.end()) {
    return core::StrCat("one of the templates X-Pack of ", source.ToString(), " installs itself");
  }
  // The stack templates arrived with Elasticsearch 7.9's data streams; before, a template of
  // that name is a user's.
  const bool has_stack_templates =
      source.elasticsearch() && (source.major > 7 || (source.major == 7 && source.minor >= 9));
  if (has_stack_templates &&
      std::find(kElasticsearchBuiltinTemplates.begin(), kElasticsearchBuiltinTemplates.end(),
                name) != kElasticsearchBuiltinTemplates.end()) {
    return core::StrCat("one of the templates ", source.ToString(), " installs itself");
  }
  return std::nullopt;
}

}  // namespace rfs::transform
