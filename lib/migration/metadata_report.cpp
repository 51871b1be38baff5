// MetadataReport and the names of its kinds and outcomes (see metadata_migration.hpp).
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/file_util.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/snapshot/blob_envelope.hpp"

#include "migration/metadata_migration_internal.hpp"

namespace rfs::migration {

using core::StrCat;
using opensearch::EncodePathSegment;
using opensearch::TemplateKind;

namespace {

namespace json = boost::json;

constexpr std::array<MetadataOutcome, 9> kOutcomes = {MetadataOutcome::kCreated,
                                                      MetadataOutcome::kWouldCreate,
                                                      MetadataOutcome::kAlreadyExists,
                                                      MetadataOutcome::kSkippedByAllowlist,
                                                      MetadataOutcome::kSkippedSystem,
                                                      MetadataOutcome::kSkippedUnsupported,
                                                      MetadataOutcome::kSkippedByTransform,
                                                      MetadataOutcome::kPartOfDataStream,
                                                      MetadataOutcome::kFailed};
constexpr std::array<MetadataItemKind, 5> kKinds = {
    MetadataItemKind::kLegacyTemplate, MetadataItemKind::kComponentTemplate,
    MetadataItemKind::kIndexTemplate, MetadataItemKind::kDataStream, MetadataItemKind::kIndex};
std::string_view KindHeading(MetadataItemKind kind) {
  switch (kind) {
    case MetadataItemKind::kLegacyTemplate:
      return "Legacy templates";
    case MetadataItemKind::kComponentTemplate:
      return "Component templates";
    case MetadataItemKind::kIndexTemplate:
      return "Index templates";
    case MetadataItemKind::kDataStream:
      return "Data streams";
    case MetadataItemKind::kIndex:
      return "Indices";
  }
  return "";
}

}  // namespace

std::string_view ToString(MetadataItemKind kind) {
  switch (kind) {
    case MetadataItemKind::kLegacyTemplate:
      return "legacy_template";
    case MetadataItemKind::kComponentTemplate:
      return "component_template";
    case MetadataItemKind::kIndexTemplate:
      return "index_template";
    case MetadataItemKind::kDataStream:
      return "data_stream";
    case MetadataItemKind::kIndex:
      return "index";
  }
  return "index";
}

std::string_view ToString(MetadataOutcome outcome) {
  switch (outcome) {
    case MetadataOutcome::kCreated:
      return "created";
    case MetadataOutcome::kWouldCreate:
      return "would_create";
    case MetadataOutcome::kAlreadyExists:
      return "already_exists";
    case MetadataOutcome::kSkippedByAllowlist:
      return "skipped_by_allowlist";
    case MetadataOutcome::kSkippedSystem:
      return "skipped_system";
    case MetadataOutcome::kSkippedUnsupported:
      return "skipped_unsupported";
    case MetadataOutcome::kSkippedByTransform:
      return "skipped_by_transform";
    case MetadataOutcome::kPartOfDataStream:
      return "part_of_data_stream";
    case MetadataOutcome::kFailed:
      return "failed";
  }
  return "failed";
}

size_t MetadataReport::Count(MetadataOutcome outcome) const {
  return static_cast<size_t>(std::count_if(items.begin(), items.end(),
                                           [&](const auto& i) { return i.outcome == outcome; }));
}

size_t MetadataReport::Count(MetadataItemKind kind, MetadataOutcome outcome) const {
  return static_cast<size_t>(std::count_if(items.begin(), items.end(), [&](const auto& i) {
    return i.kind == kind && i.outcome == outcome;
  }));
}

bool MetadataReport::ok() const { return Count(MetadataOutcome::kFailed) == 0; }

json::object MetadataReport::ToJson(bool with_bodies) const {
  json::array list;
  for (const auto& item : items) {
    json::array dropped;
    for (const auto& d : item.dropped_settings) {
      dropped.push_back(json::object{{"key", d.key}, {"reason", d.reason}});
    }
    json::array notes;
    for (const auto& n : item.notes) notes.push_back(json::string(n));
    json::object o{{"kind", ToString(item.kind)},
                   {"name", item.name},
                   {"source_name", item.source_name},
                   {"outcome", ToString(item.outcome)},
                   {"dropped_settings", std::move(dropped)},
                   {"notes", std::move(notes)}};
    if (!item.error.empty()) o["error"] = item.error;
    if (with_bodies && !item.body.empty()) o["body"] = item.body;
    list.push_back(std::move(o));
  }
  json::object counts;
  for (MetadataOutcome outcome : kOutcomes) counts[ToString(outcome)] = Count(outcome);
  json::array warning_list;
  for (const auto& w : warnings) warning_list.push_back(json::string(w));
  return json::object{{"mode", mode == MetadataMode::kMigrate ? "migrate" : "evaluate"},
                      {"snapshot", snapshot},
                      {"source_version", source_version},
                      {"target", target},
                      {"warnings", std::move(warning_list)},
                      {"items", std::move(list)},
                      {"counts", std::move(counts)},
                      {"ok", ok()}};
}

std::string MetadataReport::ToText() const {
  std::string out =
      StrCat("Metadata migration (", mode == MetadataMode::kMigrate ? "migrate" : "evaluate",
             ") of snapshot ", snapshot, " (", source_version, ") into ", target, "\n");
  for (const auto& w : warnings) out += StrCat("Warning: ", w, "\n");
  size_t width = 8;
  for (const auto& item : items) width = std::max(width, item.name.size());
  width = std::min<size_t>(width, 60);
  for (MetadataItemKind kind : kKinds) {
    out += StrCat("\n", KindHeading(kind), ":\n");
    bool any = false;
    for (const auto& item : items) {
      if (item.kind != kind) continue;
      any = true;
      std::string name = item.name;
      if (item.source_name != item.name) name += StrCat(" (from ", item.source_name, ")");
      out += StrCat("  ", name, std::string(name.size() < width ? width - name.size() : 0, ' '),
                    "  ", ToString(item.outcome), "\n");
      for (const auto& d : item.dropped_settings) {
        out += StrCat("      dropped setting ", d.key, ": ", d.reason, "\n");
      }
      for (const auto& n : item.notes) out += StrCat("      note: ", n, "\n");
      if (!item.error.empty()) out += StrCat("      error: ", item.error, "\n");
    }
    if (!any) out += "  (none)\n";
  }
  out += StrCat(
      "\nSummary: ", Count(MetadataOutcome::kCreated), " created, ",
      Count(MetadataOutcome::kWouldCreate), " would create, ",
      Count(MetadataOutcome::kAlreadyExists), " already exist, ",
      Count(MetadataOutcome::kSkippedByAllowlist) + Count(MetadataOutcome::kSkippedSystem) +
          Count(MetadataOutcome::kSkippedUnsupported) + Count(MetadataOutcome::kSkippedByTransform),
      " skipped, ", Count(MetadataOutcome::kPartOfDataStream), " backing indices of data streams, ",
      Count(MetadataOutcome::kFailed), " failed\n");
  return out;
}

}  // namespace rfs::migration
