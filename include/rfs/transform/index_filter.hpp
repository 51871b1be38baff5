// Which indices and templates a migration moves: the `--index-allowlist`,
// `--index-template-allowlist` and `--component-template-allowlist` options of the tools.
//
// An allowlist entry is an exact name or `regex:<pattern>` matched against the whole name (as
// Java's Pattern.matches, so the Java tool's lists keep their meaning). Patterns run on RE2:
// Java's syntax without backreferences or lookaround, in time linear in the name. Entries may also
// be given comma-separated in one argument. With an empty allowlist everything except system
// items is selected; a system item is selected only when an entry names or matches it.
//
// A data stream's backing indices are selected with their stream (the stream's name, or their
// own, in the allowlist).
//
// System items: indices whose name starts with '.' (Kibana, security, tasks, ...) plus the
// security plugins' audit and configuration indices; templates whose name starts with '.', and
// the templates the source engine installed itself, known by their body and, for Elasticsearch,
// its built-in names (SourceEngineTemplate) -- never by a name prefix a user's template may share.
//
// Thread safety: a parsed Allowlist is immutable; Matches may be called concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/core/version.hpp"

#include "absl/status/statusor.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace rfs::transform {

class Allowlist {
 public:
  /// An empty allowlist (selects every non-system item).
  Allowlist() = default;
  /// InvalidArgument naming the entry for an empty entry or a regex that does not compile.
  static absl::StatusOr<Allowlist> Parse(const std::vector<std::string>& entries);

  bool empty() const { return names_.empty() && patterns_.empty(); }
  /// True when an entry names or matches `name`.
  bool Matches(std::string_view name) const;
  /// The entries as given, for reports.
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  std::vector<std::string> entries_;
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<const re2::RE2>> patterns_;
};

/// True for indices the tools skip unless an allowlist entry selects them.
bool IsSystemIndex(std::string_view name);
/// True for templates the tools skip by name unless an allowlist entry selects them: hidden ones
/// ('.' names, in both engines). Which others are the source engine's own is decided by their
/// body: SourceEngineTemplate.
bool IsSystemTemplate(std::string_view name);
/// Why a template is one the source engine installed and manages itself (skipped unless an
/// allowlist entry selects it), or nullopt for a user's template: `_meta.managed: true`,
/// `_meta.managed_by` (Fleet and the like), or -- for an Elasticsearch source -- one of the
/// stack templates Elasticsearch installs under a plain name. An OpenSearch source has none of
/// Elasticsearch's built-ins, so a user's `logs-app-tpl` there is migrated.
std::optional<std::string> SourceEngineTemplate(std::string_view name,
                                                const boost::json::object& body,
                                                const core::ClusterVersion& source);

/// The selection rule: allowlist empty -> not a system index; otherwise the allowlist matches.
inline bool SelectIndex(const Allowlist& allowlist, std::string_view name) {
  return allowlist.empty() ? !IsSystemIndex(name) : allowlist.Matches(name);
}
/// The rule for a backing index of the data stream `data_stream` (when not empty): it goes with
/// its stream. Allowlist empty -> the stream is not a system name (its `.ds-` backing indices
/// always are); otherwise the allowlist matches the stream or the backing index itself.
inline bool SelectIndex(const Allowlist& allowlist, std::string_view name,
                        std::string_view data_stream) {
  if (data_stream.empty()) return SelectIndex(allowlist, name);
  return allowlist.empty() ? !IsSystemIndex(data_stream)
                           : allowlist.Matches(data_stream) || allowlist.Matches(name);
}
inline bool SelectTemplate(const Allowlist& allowlist, std::string_view name) {
  return allowlist.empty() ? !IsSystemTemplate(name) : allowlist.Matches(name);
}

}  // namespace rfs::transform
