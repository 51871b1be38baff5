// MetadataMigrator's templates, data streams and component templates (see
// metadata_migration_internal.hpp).
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

namespace rfs::migration::internal {

using core::StrCat;
using opensearch::EncodePathSegment;
using opensearch::TemplateKind;

// The "type" of a metadata item in the Java tool's transformer input: ToString's names, but
// "template" for a legacy template.
std::string_view JavaItemType(MetadataItemKind kind) {
  return kind == MetadataItemKind::kLegacyTemplate ? "template" : ToString(kind);
}

namespace {

// Compressed mappings (base64 of CompressedXContent) inside template mappings, decoded in place.
void DecodeCompressedMappings(json::value& mappings, std::string_view what) {
  auto decode = [&](json::value& entry) {
    if (!entry.is_string()) return;
    const auto& text = entry.as_string();
    auto raw = core::Base64Decode(std::string_view(text.data(), text.size()));
    if (!raw.ok()) return;
    auto decoded = snapshot::DecodeXContent(*raw, StrCat(what, " (mapping)"));
    if (decoded.ok() && decoded->is_object()) entry = *std::move(decoded);
  };
  if (mappings.is_array()) {
    for (auto& entry : mappings.as_array()) decode(entry);
  } else if (mappings.is_object()) {
    for (auto& [type, mapping] : mappings.as_object()) decode(mapping);
  }
}

std::vector<std::string> SortedKeys(const json::object& o) {
  std::vector<std::string> out;
  for (const auto& [k, v] : o) out.push_back(Str(k));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void MigrationRun::Templates(const json::object& templates, MetadataItemKind kind) {
  const transform::Allowlist& allowlist = kind == MetadataItemKind::kComponentTemplate
                                              ? options_.component_template_allowlist
                                              : options_.index_template_allowlist;
  for (const std::string& name : SortedKeys(templates)) {
    MetadataItemReport item;
    item.kind = kind;
    item.name = item.source_name = name;
    const json::value& value = templates.at(name);
    if (!transform::SelectTemplate(allowlist, name)) {
      item.outcome = allowlist.empty() ? MetadataOutcome::kSkippedSystem
                                       : MetadataOutcome::kSkippedByAllowlist;
      report_.items.push_back(std::move(item));
      continue;
    }
    if (!value.is_object()) {
      item.outcome = MetadataOutcome::kFailed;
      item.error = "the snapshot's template is not a JSON object";
      report_.items.push_back(std::move(item));
      continue;
    }
    json::object source = value.as_object();
    if (auto own = allowlist.empty()
                       ? transform::SourceEngineTemplate(name, source, transform_.source)
                       : std::nullopt) {
      item.outcome = MetadataOutcome::kSkippedSystem;
      item.notes.push_back(*own);
      report_.items.push_back(std::move(item));
      continue;
    }
    if (kind != MetadataItemKind::kLegacyTemplate &&
        !transform_.target.SupportsComposableTemplates()) {
      item.outcome = MetadataOutcome::kSkippedUnsupported;
      item.notes.push_back(StrCat(transform_.target.ToString(),
                                  " has no composable templates (Elasticsearch 7.8+, OpenSearch)"));
      report_.items.push_back(std::move(item));
      continue;
    }
    const std::string what = StrCat(ToString(kind), " ", name);
    if (kind == MetadataItemKind::kLegacyTemplate) {
      if (json::value* m = source.if_contains("mappings")) DecodeCompressedMappings(*m, what);
    } else if (json::value* t = source.if_contains("template"); t && t->is_object()) {
      if (json::value* m = t->as_object().if_contains("mappings"))
        DecodeCompressedMappings(*m, what);
    }
    if (!user_transformer_) {
      TemplateVariant(kind, std::move(item), name, source);
      continue;
    }
    json::object input{{"type", JavaItemType(kind)}, {"name", name}, {"body", source}};
    auto variants = UserTransform(kind, std::move(input));
    if (!variants.ok()) {
      item.outcome = MetadataOutcome::kFailed;
      item.error = std::string(variants.status().message());
      report_.items.push_back(std::move(item));
      continue;
    }
    if (variants->empty()) {
      item.outcome = MetadataOutcome::kSkippedByTransform;
      report_.items.push_back(std::move(item));
      continue;
    }
    for (auto& [variant_name, variant_body] : *variants) {
      MetadataItemReport variant = item;
      variant.name = variant_name;
      TemplateVariant(kind, std::move(variant), variant_name, variant_body);
    }
  }
}

namespace {

// Elasticsearch's Regex.simpleMatch, as index patterns are matched: '*' matches any run.
bool SimpleMatch(std::string_view pattern, std::string_view name) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == name;
  if (!name.starts_with(pattern.substr(0, star))) return false;
  const std::string_view rest = pattern.substr(star + 1);
  for (size_t from = star; from <= name.size(); ++from) {
    if (SimpleMatch(rest, name.substr(from))) return true;
  }
  return false;
}

// The snapshot's index template with `data_stream` that makes `stream` (highest priority), or "".
std::string DataStreamTemplate(const json::object& index_templates, std::string_view stream) {
  std::string best;
  int64_t best_priority = -1;
  for (const auto& [name, value] : index_templates) {
    const json::object* t = value.if_object();
    if (t == nullptr || t->if_contains("data_stream") == nullptr) continue;
    const json::value* patterns = t->if_contains("index_patterns");
    if (patterns == nullptr || !patterns->is_array()) continue;
    const bool matches = std::any_of(
        patterns->as_array().begin(), patterns->as_array().end(), [&](const json::value& p) {
          return p.is_string() && SimpleMatch(Str(p.as_string()), stream);
        });
    int64_t priority = 0;
    if (const json::value* p = t->if_contains("priority"); p && p->is_int64()) {
      priority = p->as_int64();
    }
    if (matches && priority > best_priority) {
      best = Str(name);
      best_priority = priority;
    }
  }
  return best;
}

}  // namespace

void MigrationRun::DataStreams(const std::vector<snapshot::DataStream>& streams,
                               const json::object& index_templates) {
  // Fields of an Elasticsearch data stream that OpenSearch has no equivalent for.
  constexpr std::array<std::string_view, 6> kKept = {"name",       "timestamp_field", "indices",
                                                     "generation", "status",          "template"};
  for (const snapshot::DataStream& stream : streams) {
    MetadataItemReport item;
    item.kind = MetadataItemKind::kDataStream;
    item.name = item.source_name = stream.name;
    const transform::Allowlist& allowlist = options_.index_allowlist;
    const bool selected =
        allowlist.empty()
            ? !transform::IsSystemIndex(stream.name)
            : allowlist.Matches(stream.name) ||
                  std::any_of(stream.backing_indices.begin(), stream.backing_indices.end(),
                              [&](const auto& b) { return allowlist.Matches(b); });
    if (!selected) {
      item.outcome = allowlist.empty() ? MetadataOutcome::kSkippedSystem
                                       : MetadataOutcome::kSkippedByAllowlist;
      report_.items.push_back(std::move(item));
      continue;
    }
    if (!transform_.target.SupportsDataStreams()) {
      item.outcome = MetadataOutcome::kSkippedUnsupported;
      item.notes.push_back(StrCat(transform_.target.ToString(),
                                  " has no data streams (Elasticsearch 7.9+, OpenSearch)"));
      report_.items.push_back(std::move(item));
      continue;
    }
    std::string backing;
    json::array backing_list;
    for (const std::string& b : stream.backing_indices) {
      backing += StrCat(backing.empty() ? "" : ", ", b);
      backing_list.emplace_back(b);
    }
    item.notes.push_back(StrCat(stream.backing_indices.size(), " backing indices (", backing,
                                "): their documents are written to the stream, as create"));
    for (const auto& [key, value] : stream.raw) {
      if (std::find(kKept.begin(), kKept.end(), std::string_view(key)) != kKept.end()) continue;
      if (key == "lifecycle") {
        item.notes.push_back(
            "lifecycle (Elasticsearch's data stream lifecycle) dropped: set retention with an "
            "ISM policy on the target");
      } else {
        item.notes.push_back(StrCat("`", std::string_view(key), "` dropped (Elasticsearch-only)"));
      }
    }
    const std::string template_name = DataStreamTemplate(index_templates, stream.name);
    const MetadataItemReport* template_item = nullptr;
    for (const auto& other : report_.items) {
      if (other.kind == MetadataItemKind::kIndexTemplate && other.source_name == template_name) {
        template_item = &other;
      }
    }
    std::string template_hint;
    if (template_name.empty()) {
      template_hint =
          "the snapshot holds no index template with data_stream that matches it: create one "
          "on the target first";
    } else if (template_item != nullptr && !IsFine(template_item->outcome)) {
      template_hint = StrCat("its index template [", template_name, "] failed to migrate");
    } else if (template_item != nullptr && template_item->outcome != MetadataOutcome::kCreated &&
               template_item->outcome != MetadataOutcome::kWouldCreate &&
               template_item->outcome != MetadataOutcome::kAlreadyExists) {
      template_hint =
          StrCat("its index template [", template_name, "] is ", ToString(template_item->outcome),
                 ": select it with --index-template-allowlist, or create a matching "
                 "template with data_stream on the target first");
    }
    item.body = json::object{{"timestamp_field", json::object{{"name", stream.timestamp_field}}},
                             {"backing_indices", std::move(backing_list)}};
    Apply(item);
    if (item.outcome == MetadataOutcome::kFailed && !template_hint.empty()) {
      item.error += StrCat(" (", template_hint, ")");
    } else if (!template_hint.empty() && item.outcome != MetadataOutcome::kAlreadyExists) {
      item.notes.push_back(template_hint);
    }
    report_.items.push_back(std::move(item));
  }
}

void MigrationRun::TemplateVariant(MetadataItemKind kind, MetadataItemReport item,
                                   const std::string& name, const json::object& source) {
  absl::StatusOr<transform::TransformedTemplate> transformed =
      kind == MetadataItemKind::kLegacyTemplate
          ? transform::TransformLegacyTemplate(name, source, transform_)
      : kind == MetadataItemKind::kComponentTemplate
          ? transform::TransformComponentTemplate(name, source, transform_)
          : transform::TransformIndexTemplate(name, source, transform_);
  if (!transformed.ok()) {
    item.outcome = MetadataOutcome::kFailed;
    item.error = std::string(transformed.status().message());
    if (kind == MetadataItemKind::kComponentTemplate) components_failed_[name] = item.error;
    report_.items.push_back(std::move(item));
    return;
  }
  item.body = std::move(transformed->body);
  item.dropped_settings = std::move(transformed->notes.dropped_settings);
  item.notes = std::move(transformed->notes.notes);
  if (kind == MetadataItemKind::kIndexTemplate && !ResolveComponents(source, item)) {
    report_.items.push_back(std::move(item));
    return;
  }
  Apply(item);
  if (kind == MetadataItemKind::kComponentTemplate && IsFine(item.outcome)) {
    components_on_target_.insert(name);
  } else if (kind == MetadataItemKind::kComponentTemplate) {
    components_failed_[name] = item.error;
    if (item.transient) components_failed_transiently_.insert(name);
  }
  report_.items.push_back(std::move(item));
}
bool MigrationRun::ResolveComponents(const json::object& source, MetadataItemReport& item) {
  // ES 8.7+ ignore_missing_component_templates: those may be absent; OpenSearch has no such
  // option, so they leave composed_of when they will not be on the target.
  std::set<std::string> may_be_missing;
  if (const json::value* ignore = source.if_contains("ignore_missing_component_templates");
      ignore && ignore->is_array()) {
    for (const auto& n : ignore->as_array()) {
      if (n.is_string()) may_be_missing.insert(Str(n.as_string()));
    }
  }
  std::string error;
  bool transient = false;
  std::vector<std::string> missing = MissingComponents(item.body, error, transient);
  if (!error.empty()) {
    item.outcome = MetadataOutcome::kFailed;
    item.error = error;
    item.transient = transient;
    return false;
  }
  std::vector<std::string> fatal;
  for (const std::string& m : missing) {
    if (may_be_missing.count(m)) {
      auto& composed = item.body["composed_of"].as_array();
      composed.erase(std::remove(composed.begin(), composed.end(), json::value(m)), composed.end());
      item.notes.push_back(StrCat("missing component template [", m,
                                  "] removed from composed_of (it was allowed to be missing)"));
    } else {
      fatal.push_back(m);
    }
  }
  if (!fatal.empty()) {
    // The advice depends on why each is missing: not selected, or selected and failed.
    std::string unselected, failed;
    // Missing only because their own migration met a passing fault: so is this one.
    item.transient = std::all_of(fatal.begin(), fatal.end(), [&](const std::string& f) {
      return components_failed_transiently_.contains(f);
    });
    for (const auto& f : fatal) {
      if (auto it = components_failed_.find(f); it != components_failed_.end()) {
        failed += StrCat(failed.empty() ? "" : "; ", f, ": ", it->second);
      } else {
        unselected += StrCat(unselected.empty() ? "" : ", ", f);
      }
    }
    item.outcome = MetadataOutcome::kFailed;
    item.error = "composed of component templates that are not on the target";
    if (!failed.empty()) {
      item.error += StrCat(" (failed to migrate: ", failed, ")");
    }
    if (!unselected.empty()) {
      item.error += StrCat(" ([", unselected,
                           "] neither migrated nor on the target: select them with "
                           "--component-template-allowlist)");
    }
    return false;
  }
  return true;
}

}  // namespace rfs::migration::internal
