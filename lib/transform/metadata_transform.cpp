#include "rfs/transform/metadata_transform.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include <boost/json/serialize.hpp>

#include "rfs/core/index_settings.hpp"
#include "rfs/core/str_cat.hpp"

#include "es_mapping_rules_internal.hpp"

namespace rfs::transform {
namespace {

namespace json = boost::json;
using core::StrCat;

std::string Str(json::string_view s) { return std::string(s.data(), s.size()); }
json::string_view Key(std::string_view s) { return json::string_view(s.data(), s.size()); }

bool StartsWithAny(std::string_view key, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return key.starts_with(p); });
}

bool IsDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::string ValueText(const json::value& v) {
  if (v.is_string()) return Str(v.as_string());
  return json::serialize(v);
}

// Objects whose keys are exactly "0".."n-1" are ES <= 5 settings lists ("x.0", "x.1").
void ListsFromNumberedKeys(json::object& node) {
  for (auto& [key, value] : node) {
    if (!value.is_object()) continue;
    json::object& child = value.as_object();
    ListsFromNumberedKeys(child);
    if (child.empty()) continue;
    bool numbered = true;
    for (const auto& [k, v] : child) numbered = numbered && IsDigits(std::string_view(k));
    if (!numbered) continue;
    json::array list(child.size());
    bool dense = true;
    for (const auto& [k, v] : child) {
      size_t i = 0;
      std::from_chars(k.data(), k.data() + k.size(), i);
      if (i >= list.size()) {
        dense = false;
        break;
      }
      list[i] = v;
    }
    if (dense) value = std::move(list);
  }
}

// Nests flat keys; a key that collides with a leaf stays dotted inside the deepest object.
json::object Nest(const std::vector<std::pair<std::string, json::value>>& flat) {
  json::object out;
  for (const auto& [key, value] : flat) {
    json::object* node = &out;
    std::string_view rest = key;
    size_t dot;
    while ((dot = rest.find('.')) != std::string_view::npos) {
      json::value& child = (*node)[Key(rest.substr(0, dot))];
      if (child.is_null()) child = json::object();
      if (!child.is_object()) break;  // collision: keep the remainder dotted one level up
      node = &child.as_object();
      rest.remove_prefix(dot + 1);
    }
    // After a collision `rest` is the whole remaining path, kept as one dotted key.
    (*node)[Key(rest)] = value;
  }
  ListsFromNumberedKeys(out);
  return out;
}

bool TargetRejectsSoftDeletesOff(const core::ClusterVersion& target) {
  return target.opensearch() ? target.major >= 2 : target.major >= 8;
}

// --- mappings --------------------------------------------------------------------------------

// Root-level mapping parameters: an object holding one of these is a typeless mapping.
constexpr std::array<std::string_view, 31> kRootMappingKeys = {"properties",
                                                               "dynamic",
                                                               "dynamic_templates",
                                                               "_source",
                                                               "_meta",
                                                               "_routing",
                                                               "_all",
                                                               "_field_names",
                                                               "date_detection",
                                                               "numeric_detection",
                                                               "dynamic_date_formats",
                                                               "enabled",
                                                               "include_in_all",
                                                               "runtime",
                                                               "_data_stream_timestamp",
                                                               "subobjects",
                                                               "_size",
                                                               "_timestamp",
                                                               "_ttl",
                                                               "_parent",
                                                               "_id",
                                                               "_index",
                                                               "_type",
                                                               "_uid",
                                                               "_boost",
                                                               "_analyzer",
                                                               "index_analyzer",
                                                               "search_analyzer",
                                                               "analyzer",
                                                               "search_quote_analyzer",
                                                               "_doc_count"};

bool IsRootMappingKey(std::string_view key) {
  return std::find(kRootMappingKeys.begin(), kRootMappingKeys.end(), key) != kRootMappingKeys.end();
}

// Collects what cleaning removed or changed, reported once per kind with a count.
struct MappingChanges {
  std::map<std::string, int> counts;
  // The Elasticsearch-only rules (es_mapping_rules.hpp) run for OpenSearch targets only.
  const MetadataTransformOptions* options = nullptr;
  internal::EsTranslation es;
  void Add(const std::string& what) { ++counts[what]; }
  void Report(TransformNotes& notes) const {
    for (const auto& [what, count] : counts) {
      notes.notes.push_back(count > 1 ? StrCat(what, " (", count, " places)") : what);
    }
    notes.notes.insert(notes.notes.end(), es.notes.begin(), es.notes.end());
    notes.refused.insert(notes.refused.end(), es.refusals.begin(), es.refusals.end());
    notes.needs_knn = notes.needs_knn || es.knn;
  }
};

void CleanField(json::object& field, const std::string& path, MappingChanges& changes);

void CleanProperties(json::object& properties, const std::string& prefix, MappingChanges& changes) {
  for (auto& [name, value] : properties) {
    if (!value.is_object()) continue;
    CleanField(value.as_object(), prefix.empty() ? Str(name) : StrCat(prefix, ".", Str(name)),
               changes);
  }
}

// Field parameters that later versions reject.
constexpr std::array<std::string_view, 9> kRemovedFieldParameters = {
    "include_in_all", "precision_step",     "lat_lon",
    "geohash",        "geohash_prefix",     "geohash_precision",
    "compress",       "compress_threshold", "index_name"};

void CleanField(json::object& field, const std::string& path, MappingChanges& changes) {
  if (changes.options != nullptr && changes.options->target.opensearch()) {
    internal::TranslateEsField(field, path, *changes.options, changes.es);
  }
  for (std::string_view removed : kRemovedFieldParameters) {
    if (field.erase(Key(removed)) > 0) changes.Add(StrCat("`", removed, "` removed"));
  }
  const json::value* type_value = field.if_contains("type");
  std::string type = type_value && type_value->is_string() ? Str(type_value->as_string()) : "";
  if (type != "alias" && field.contains("path")) {
    field.erase("path");  // ES 1.x object "path": "just_name"
    changes.Add("ES 1.x `path` removed");
  }
  // ES 1.x/2.x `index`: "analyzed" / "not_analyzed" / "no".
  std::string index_mode;
  if (const json::value* index = field.if_contains("index"); index && index->is_string()) {
    index_mode = Str(index->as_string());
  }
  if (type == "string") {
    if (index_mode == "not_analyzed" || index_mode == "no") {
      field["type"] = "keyword";
      for (std::string_view p :
           {"analyzer", "search_analyzer", "search_quote_analyzer", "position_increment_gap",
            "position_offset_gap", "term_vector", "fielddata", "index_options"}) {
        field.erase(Key(p));
      }
      changes.Add("`string` field converted to `keyword`");
    } else {
      field["type"] = "text";
      for (std::string_view p : {"doc_values", "ignore_above", "null_value"}) field.erase(Key(p));
      changes.Add("`string` field converted to `text`");
    }
    type = Str(field["type"].as_string());
  }
  if (!index_mode.empty()) {
    if (index_mode == "no") {
      field["index"] = false;
    } else if (index_mode == "analyzed" || index_mode == "not_analyzed") {
      field.erase("index");  // indexed is the default
    }
  }
  if (json::value* gap = field.if_contains("position_offset_gap")) {
    field["position_increment_gap"] = *gap;
    field.erase("position_offset_gap");
    changes.Add("`position_offset_gap` renamed `position_increment_gap`");
  }
  if (json::value* norms = field.if_contains("norms"); norms && norms->is_object()) {
    const json::value* enabled = norms->as_object().if_contains("enabled");
    const bool on =
        enabled == nullptr ||
        (enabled->is_bool() ? enabled->as_bool()
                            : !(enabled->is_string() && enabled->as_string() == "false"));
    *norms = on;
    changes.Add("`norms` object converted to a boolean");
  }
  if (json::value* fielddata = field.if_contains("fielddata");
      fielddata && fielddata->is_object()) {
    field.erase("fielddata");
    changes.Add("ES 2.x `fielddata` settings removed");
  }
  if (json::value* properties = field.if_contains("properties");
      properties && properties->is_object()) {
    CleanProperties(properties->as_object(), path, changes);
  }
  if (json::value* fields = field.if_contains("fields"); fields && fields->is_object()) {
    CleanProperties(fields->as_object(), path, changes);
  }
}

void CleanDynamicTemplates(json::value& templates, MappingChanges& changes) {
  if (!templates.is_array()) return;
  for (auto& entry : templates.as_array()) {
    if (!entry.is_object()) continue;
    for (auto& [name, body] : entry.as_object()) {
      if (!body.is_object()) continue;
      if (json::value* mapping = body.as_object().if_contains("mapping");
          mapping && mapping->is_object()) {
        CleanField(mapping->as_object(), StrCat("dynamic template ", Str(name)), changes);
      }
    }
  }
}

bool JsonEqual(const json::value& a, const json::value& b) { return a == b; }

// Merges `from` (type `from_type`) into `into`; a field mapped differently is an error naming it.
absl::Status MergeProperties(json::object& into, const json::object& from,
                             const std::string& prefix, std::string_view into_types,
                             std::string_view from_type, std::string_view what) {
  for (const auto& [name, value] : from) {
    const std::string path = prefix.empty() ? Str(name) : StrCat(prefix, ".", Str(name));
    json::value* existing = into.if_contains(name);
    if (existing == nullptr) {
      into[name] = value;
      continue;
    }
    if (JsonEqual(*existing, value)) continue;
    // Two object fields: merge their sub-fields when the rest of their definitions agree.
    if (existing->is_object() && value.is_object()) {
      json::object a = existing->as_object();
      json::object b = value.as_object();
      const json::value* ap = a.if_contains("properties");
      const json::value* bp = b.if_contains("properties");
      if (ap && bp && ap->is_object() && bp->is_object()) {
        json::object merged = ap->as_object();
        const json::object incoming = bp->as_object();
        a.erase("properties");
        b.erase("properties");
        if (JsonEqual(json::value(a), json::value(b))) {
          absl::Status s = MergeProperties(merged, incoming, path, into_types, from_type, what);
          if (!s.ok()) return s;
          existing->as_object()["properties"] = std::move(merged);
          continue;
        }
      }
    }
    return absl::InvalidArgumentError(StrCat(
        what, ": field [", path, "] is mapped differently by mapping types [", into_types,
        "] and [", from_type, "] (", json::serialize(*existing), " vs ", json::serialize(value),
        "); the union of the types cannot hold both: use --multi-type-behavior split"));
  }
  return absl::OkStatus();
}

// One typeless mapping from several types' mappings (each already cleaned).
absl::StatusOr<json::object> UnionMappings(
    const std::vector<std::pair<std::string, json::object>>& types, std::string_view what,
    TransformNotes& notes) {
  if (types.empty()) return json::object();
  json::object merged = types[0].second;
  std::string merged_types = types[0].first;
  for (size_t i = 1; i < types.size(); ++i) {
    const auto& [type, mapping] = types[i];
    for (const auto& [key, value] : mapping) {
      if (key == "properties") {
        if (!value.is_object()) continue;
        json::value& into = merged["properties"];
        if (!into.is_object()) into = json::object();
        absl::Status s =
            MergeProperties(into.as_object(), value.as_object(), "", merged_types, type, what);
        if (!s.ok()) return s;
      } else if (key == "dynamic_templates") {
        json::value& into = merged["dynamic_templates"];
        if (!into.is_array()) into = json::array();
        for (const auto& t : value.is_array() ? value.as_array() : json::array()) {
          auto& list = into.as_array();
          if (std::find(list.begin(), list.end(), t) == list.end()) list.push_back(t);
        }
      } else if (const json::value* existing = merged.if_contains(key)) {
        if (!JsonEqual(*existing, value)) {
          notes.notes.push_back(StrCat("mapping parameter `", Str(key), "` of type [", type,
                                       "] differs from type [", types[0].first,
                                       "]'s; kept the latter"));
        }
      } else {
        merged[key] = value;
      }
    }
    merged_types = StrCat(merged_types, ", ", type);
  }
  notes.notes.push_back(StrCat("mapping types [", merged_types, "] merged into one mapping"));
  return merged;
}

// The mapping types of index metadata or a template, without `_default_` (reported), cleaned.
std::vector<std::pair<std::string, json::object>> CleanTypes(
    const json::value& mappings, const MetadataTransformOptions& options, TransformNotes& notes) {
  std::vector<std::pair<std::string, json::object>> out;
  for (auto& [type, mapping] : SplitMappingTypes(mappings)) {
    if (type == "_default_") {
      notes.notes.push_back("mapping type `_default_` dropped (removed in Elasticsearch 7)");
      continue;
    }
    out.emplace_back(type, CleanMapping(mapping, options, notes));
  }
  if (options.target.typeless()) {
    for (const auto& [type, mapping] : out) {
      if (!type.empty() && type != "_doc") {
        notes.notes.push_back(StrCat("mapping type [", type, "] removed"));
      }
    }
  }
  return out;
}

// The typeless mapping for `types` (union of several), or typed for ES <= 6 targets.
absl::StatusOr<json::object> MappingsForTarget(
    const std::vector<std::pair<std::string, json::object>>& types,
    const MetadataTransformOptions& options, std::string_view what, TransformNotes& notes) {
  if (!options.target.typeless()) {
    json::object typed;
    for (const auto& [type, mapping] : types) {
      typed[Key(type.empty() ? "_doc" : type)] = mapping;
    }
    return typed;
  }
  if (types.size() == 1) return types[0].second;
  return UnionMappings(types, what, notes);
}

json::object CleanAliases(const json::object& aliases, bool drop_write_index,
                          TransformNotes& notes) {
  json::object out;
  for (const auto& [name, value] : aliases) {
    json::object alias;
    if (value.is_object()) {
      for (const auto& [k, v] : value.as_object()) {
        if (k == "filter" || k == "index_routing" || k == "search_routing" || k == "routing" ||
            k == "is_hidden") {
          alias[k] = v;
        } else if (k == "is_write_index") {
          if (drop_write_index) {
            notes.notes.push_back(StrCat("alias [", Str(name),
                                         "]: is_write_index dropped (split into several indices)"));
          } else {
            alias[k] = v;
          }
        }
      }
    }
    out[name] = std::move(alias);
  }
  return out;
}

// An index or template whose mapping holds fields the target cannot hold: refused with the
// fields, their types and the way out, instead of the target's 400.
absl::Status Refusal(std::string_view what, const TransformNotes& notes) {
  std::string fields;
  for (const std::string& line : notes.refused) fields += StrCat(fields.empty() ? "" : "; ", line);
  return absl::InvalidArgumentError(
      StrCat(what, " refused: ", fields,
             ". Remove or remap the field with --transformer-config (see "
             "docs/es-mapping-compatibility.md); every other index and template still migrates"));
}

// `index.knn: true`, which OpenSearch's k-NN plugin needs to build the graphs of knn_vector fields.
void AddKnnSetting(json::object& settings, TransformNotes& notes) {
  json::value& index = settings["index"];
  if (!index.is_object()) index = json::object();
  if (index.as_object().contains("knn")) return;
  index.as_object()["knn"] = true;
  notes.notes.push_back(
      "setting index.knn: true added (knn_vector fields translated from dense_vector)");
}

// Cleans a {settings, mappings, aliases} object of a component or index template in place.
absl::Status CleanTemplateBody(json::object& body, std::string_view what,
                               const MetadataTransformOptions& options, TransformNotes& notes) {
  if (json::value* settings = body.if_contains("settings"); settings && settings->is_object()) {
    body["settings"] = TransformSettings(settings->as_object(), options, notes);
  }
  if (json::value* mappings = body.if_contains("mappings")) {
    auto types = CleanTypes(*mappings, options, notes);
    if (!notes.refused.empty()) return Refusal(what, notes);
    if (notes.needs_knn) {
      json::value& settings = body["settings"];
      if (!settings.is_object()) settings = json::object();
      AddKnnSetting(settings.as_object(), notes);
    }
    auto mapping = MappingsForTarget(types, options, what, notes);
    if (!mapping.ok()) return mapping.status();
    body["mappings"] = *std::move(mapping);
  }
  if (json::value* aliases = body.if_contains("aliases"); aliases && aliases->is_object()) {
    body["aliases"] = CleanAliases(aliases->as_object(), false, notes);
  }
  if (options.target.opensearch()) {
    for (std::string_view es_only : {"lifecycle", "data_stream_options"}) {
      if (body.erase(Key(es_only)) > 0) {
        notes.notes.push_back(
            StrCat("template `", es_only, "` dropped (Elasticsearch-only, not in OpenSearch)"));
      }
    }
  }
  return absl::OkStatus();
}

std::optional<int64_t> IntValue(const json::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64()) return static_cast<int64_t>(v.as_uint64());
  if (v.is_string()) {
    int64_t out = 0;
    const auto& s = v.as_string();
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && ptr == s.data() + s.size()) return out;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> DropReason(std::string_view key, std::string_view value,
                                      const MetadataTransformOptions& options) {
  const core::ClusterVersion& target = options.target;
  if (key.starts_with("archived.")) {
    return "archived by the source cluster (it no longer recognised the setting)";
  }
  if (key == "index.uuid" || key == "index.creation_date" || key == "index.provided_name" ||
      key == "index.history.uuid" || key == "index.verified_before_close" ||
      StartsWithAny(key, {"index.version.", "index.resize.", "index.shrink.",
                          "index.routing.allocation.initial_recovery.", "index.legacy."})) {
    return "internal setting of the source cluster (the target sets its own)";
  }
  if ((key == "index.blocks.write" || key == "index.blocks.read_only" ||
       key == "index.blocks.read_only_allow_delete") &&
      value == "true") {
    return "write block would stop the document migration (re-apply it afterwards)";
  }
  if (target.typeless() && (key == "index.mapper.dynamic" || key == "index.mapping.single_type")) {
    return "removed in Elasticsearch 7";
  }
  if (StartsWithAny(
          key, {"index.merge.policy.type", "index.merge.scheduler.type", "index.translog.fs.type",
                "index.store.throttle.", "index.cache.query.enable", "index.cache.filter."})) {
    return "removed in Elasticsearch 5/6";
  }
  if (key == "index.soft_deletes.enabled" && value == "false" &&
      TargetRejectsSoftDeletesOff(target)) {
    return StrCat(target.ToString(), " cannot disable soft deletes");
  }
  if (target.opensearch()) {
    if (StartsWithAny(key, {"index.lifecycle.", "index.xpack.", "index.ccr.", "index.time_series.",
                            "index.store.snapshot.", "index.indexing_pressure.",
                            "index.mapping.source.", "index.mapping.synthetic_source_keep",
                            "index.mapping.total_fields.ignore_dynamic_beyond_limit"}) ||
        key == "index.format" || key == "index.frozen" || key == "index.search.throttled" ||
        key == "index.mode" || key == "index.routing_path" || key == "index.look_ahead_time" ||
        key == "index.look_back_time" || key == "index.dense_vector.hnsw_filter_heuristic") {
      return "Elasticsearch-only feature, not in OpenSearch";
    }
    if (key.starts_with("index.routing.allocation.") &&
        (key.ends_with("._tier_preference") || key.ends_with("._tier"))) {
      return "Elasticsearch data tiers, not in OpenSearch (shards would stay unassigned)";
    }
  }
  return std::nullopt;
}

json::object TransformSettings(const json::object& settings,
                               const MetadataTransformOptions& options, TransformNotes& notes) {
  std::vector<std::pair<std::string, json::value>> kept;
  for (auto& [name, leaf] : core::FlattenSettings(settings)) {
    if (leaf->is_null()) continue;
    json::value value = *leaf;
    if (!name.starts_with("index.") && !name.starts_with("archived.")) name = "index." + name;
    if (auto reason = DropReason(name, ValueText(value), options)) {
      notes.dropped_settings.push_back({name, *reason});
      continue;
    }
    if (name == "index.number_of_replicas" && options.min_replicas) {
      auto replicas = IntValue(value);
      if (!replicas || *replicas < *options.min_replicas) {
        notes.notes.push_back(StrCat("index.number_of_replicas raised from ", ValueText(value),
                                     " to ", *options.min_replicas, " (--min-replicas)"));
        value = std::to_string(*options.min_replicas);
      }
    }
    if (name == "index.number_of_replicas" && options.replica_copies_multiple > 1) {
      // Past a million replicas the value is nonsense the target refuses as it stands.
      if (auto replicas = IntValue(value); replicas && *replicas >= 0 && *replicas < 1'000'000) {
        const int64_t multiple = options.replica_copies_multiple;
        const int64_t copies = (*replicas + 1 + multiple - 1) / multiple * multiple;
        if (copies - 1 != *replicas) {
          notes.notes.push_back(StrCat("index.number_of_replicas raised from ", *replicas, " to ",
                                       copies - 1, " (--cluster-awareness-attributes ", multiple,
                                       ")"));
          value = std::to_string(copies - 1);
        }
      }
    }
    kept.emplace_back(std::move(name), std::move(value));
  }
  return Nest(kept);
}

std::vector<std::pair<std::string, json::object>> SplitMappingTypes(const json::value& mappings) {
  std::vector<std::pair<std::string, json::object>> out;
  auto add_object = [&](const json::object& o) {
    if (o.empty()) return;
    bool typeless = false;
    bool all_objects = true;
    for (const auto& [k, v] : o) {
      typeless = typeless || IsRootMappingKey(std::string_view(k));
      all_objects = all_objects && v.is_object();
    }
    if (typeless || !all_objects) {
      out.emplace_back("", o);
      return;
    }
    for (const auto& [type, mapping] : o) out.emplace_back(Str(type), mapping.as_object());
  };
  if (mappings.is_object()) {
    add_object(mappings.as_object());
  } else if (mappings.is_array()) {
    for (const auto& entry : mappings.as_array()) {
      if (entry.is_object()) add_object(entry.as_object());
    }
  }
  return out;
}

json::object CleanMapping(const json::object& mapping, const MetadataTransformOptions& options,
                          TransformNotes& notes) {
  json::object out = mapping;
  MappingChanges changes;
  changes.options = &options;
  // Meta fields and root parameters removed in later versions.
  for (std::string_view removed :
       {"_all", "include_in_all", "_field_names", "_timestamp", "_ttl", "_uid", "_type", "_index",
        "_boost", "_analyzer", "index_analyzer", "_id", "_size", "_parent"}) {
    if (out.erase(Key(removed)) > 0) {
      changes.Add(removed == "_parent"
                      ? std::string("`_parent` dropped (parent/child needs a `join` field)")
                      : StrCat("`", removed, "` dropped (removed in later versions)"));
    }
  }
  if (options.target.opensearch()) internal::TranslateEsRoot(out, options, changes.es);
  if (json::value* routing = out.if_contains("_routing"); routing && routing->is_object()) {
    json::object kept;
    if (const auto* required = routing->as_object().if_contains("required")) {
      kept["required"] = *required;
    }
    if (kept.size() != routing->as_object().size()) changes.Add("`_routing.path` dropped");
    if (kept.empty()) {
      out.erase("_routing");
    } else {
      *routing = std::move(kept);
    }
  }
  if (json::value* source = out.if_contains("_source"); source && source->is_object()) {
    json::object kept;
    for (const auto& [k, v] : source->as_object()) {
      if (k == "enabled" || k == "includes" || k == "excludes") kept[k] = v;
    }
    if (kept.size() != source->as_object().size()) {
      changes.Add("`_source` options other than enabled/includes/excludes dropped");
    }
    *source = std::move(kept);
  }
  if (json::value* properties = out.if_contains("properties");
      properties && properties->is_object()) {
    CleanProperties(properties->as_object(), "", changes);
  }
  if (json::value* templates = out.if_contains("dynamic_templates")) {
    CleanDynamicTemplates(*templates, changes);
  }
  changes.Report(notes);
  return out;
}

absl::StatusOr<std::vector<TransformedIndex>> TransformIndex(
    const SourceIndex& index, const MetadataTransformOptions& options) {
  TransformNotes common;
  json::object settings = TransformSettings(index.settings, options, common);
  if (options.min_replicas) {
    json::value& idx = settings["index"];
    if (!idx.is_object()) idx = json::object();
    if (!idx.as_object().contains("number_of_replicas")) {
      idx.as_object()["number_of_replicas"] = std::to_string(*options.min_replicas);
    }
  }
  const std::string what = StrCat("index [", index.name, "]");
  auto types = CleanTypes(json::value(index.mappings), options, common);
  if (!common.refused.empty()) return Refusal(what, common);
  if (common.needs_knn) AddKnnSetting(settings, common);
  const size_t type_count = CountMappingTypes(index.mappings);
  std::vector<TransformedIndex> out;
  if (options.multi_type_policy == MultiTypePolicy::kSplit && types.size() > 1 &&
      options.target.typeless()) {
    for (const auto& [type, mapping] : types) {
      TransformedIndex t;
      t.name = TargetIndexForType(index.name, type, type_count, options.multi_type_policy);
      t.source_type = type;
      t.notes = common;
      t.notes.notes.push_back(
          StrCat("mapping type [", type, "] of index [", index.name, "] split into its own index"));
      t.body = json::object{{"settings", settings},
                            {"mappings", mapping},
                            {"aliases", CleanAliases(index.aliases, true, t.notes)}};
      out.push_back(std::move(t));
    }
    return out;
  }
  TransformedIndex t;
  t.notes = std::move(common);
  auto mappings = MappingsForTarget(types, options, what, t.notes);
  if (!mappings.ok()) return mappings.status();
  const std::string type = types.size() == 1 ? types[0].first : "";
  t.name = TargetIndexForType(index.name, type, type_count, options.multi_type_policy);
  if (t.name != index.name) t.source_type = type;
  t.body = json::object{{"settings", std::move(settings)},
                        {"mappings", *std::move(mappings)},
                        {"aliases", CleanAliases(index.aliases, false, t.notes)}};
  out.push_back(std::move(t));
  return out;
}

absl::StatusOr<TransformedTemplate> TransformLegacyTemplate(
    std::string_view name, const json::object& source, const MetadataTransformOptions& options) {
  TransformedTemplate out;
  const std::string what = StrCat("legacy template [", name, "]");
  json::object& body = out.body;
  if (const json::value* patterns = source.if_contains("index_patterns")) {
    body["index_patterns"] =
        patterns->is_string() ? json::value(json::array{*patterns}) : *patterns;
  } else if (const json::value* pattern = source.if_contains("template");
             pattern && pattern->is_string()) {
    body["index_patterns"] = json::array{*pattern};
    out.notes.notes.push_back("`template` pattern converted to `index_patterns`");
  } else {
    return absl::InvalidArgumentError(StrCat(what, " has neither index_patterns nor template"));
  }
  if (const json::value* order = source.if_contains("order")) body["order"] = *order;
  if (const json::value* version = source.if_contains("version"); version && !version->is_null()) {
    body["version"] = *version;
  }
  if (const json::value* settings = source.if_contains("settings");
      settings && settings->is_object()) {
    body["settings"] = TransformSettings(settings->as_object(), options, out.notes);
  } else {
    body["settings"] = json::object();
  }
  json::value mappings = json::object();
  if (const json::value* m = source.if_contains("mappings")) mappings = *m;
  auto types = CleanTypes(mappings, options, out.notes);
  if (!out.notes.refused.empty()) return Refusal(what, out.notes);
  if (out.notes.needs_knn) AddKnnSetting(body["settings"].as_object(), out.notes);
  if (options.multi_type_policy == MultiTypePolicy::kSplit && types.size() > 1) {
    out.notes.notes.push_back("a template cannot be split: its mapping types are merged");
  }
  auto merged = MappingsForTarget(types, options, what, out.notes);
  if (!merged.ok()) return merged.status();
  body["mappings"] = *std::move(merged);
  json::object aliases;
  if (const json::value* a = source.if_contains("aliases"); a && a->is_object()) {
    aliases = CleanAliases(a->as_object(), false, out.notes);
  }
  body["aliases"] = std::move(aliases);
  return out;
}

absl::StatusOr<TransformedTemplate> TransformComponentTemplate(
    std::string_view name, const json::object& source, const MetadataTransformOptions& options) {
  TransformedTemplate out;
  out.body = source;
  json::value& tmpl = out.body["template"];
  if (!tmpl.is_object()) tmpl = json::object();
  absl::Status cleaned = CleanTemplateBody(
      tmpl.as_object(), StrCat("component template [", name, "]"), options, out.notes);
  if (!cleaned.ok()) return cleaned;
  if (options.target.opensearch() && out.body.erase("deprecated") > 0) {
    out.notes.notes.push_back("`deprecated` dropped (Elasticsearch-only)");
  }
  return out;
}

absl::StatusOr<TransformedTemplate> TransformIndexTemplate(
    std::string_view name, const json::object& source, const MetadataTransformOptions& options) {
  TransformedTemplate out;
  out.body = source;
  json::object& body = out.body;
  if (!body.contains("index_patterns")) {
    return absl::InvalidArgumentError(StrCat("index template [", name, "] has no index_patterns"));
  }
  if (json::value* tmpl = body.if_contains("template"); tmpl && tmpl->is_object()) {
    absl::Status cleaned = CleanTemplateBody(
        tmpl->as_object(), StrCat("index template [", name, "]"), options, out.notes);
    if (!cleaned.ok()) return cleaned;
  }
  if (options.target.opensearch()) {
    for (std::string_view es_only :
         {"allow_auto_create", "ignore_missing_component_templates", "deprecated"}) {
      if (body.erase(Key(es_only)) > 0) {
        out.notes.notes.push_back(StrCat("`", es_only, "` dropped (Elasticsearch-only)"));
      }
    }
    if (json::value* ds = body.if_contains("data_stream"); ds && ds->is_object()) {
      json::object kept;
      if (const auto* ts = ds->as_object().if_contains("timestamp_field")) {
        kept["timestamp_field"] = *ts;
      }
      if (kept.size() != ds->as_object().size()) {
        out.notes.notes.push_back(
            "data_stream options other than timestamp_field dropped (not in OpenSearch)");
      }
      *ds = std::move(kept);
    }
  }
  return out;
}

std::vector<std::string> RejectedSettingsIn(std::string_view message) {
  std::vector<std::string> out;
  for (std::string_view marker :
       {"unknown setting [", "private index setting [", "archived setting ["}) {
    size_t at = 0;
    while ((at = message.find(marker, at)) != std::string_view::npos) {
      const size_t start = at + marker.size();
      const size_t end = message.find(']', start);
      if (end == std::string_view::npos) break;
      std::string key(message.substr(start, end - start));
      if (!key.empty() && std::find(out.begin(), out.end(), key) == out.end()) {
        out.push_back(std::move(key));
      }
      at = end;
    }
  }
  return out;
}

namespace {

bool RemovePath(json::object& node, std::string_view path) {
  bool removed = node.erase(Key(path)) > 0;
  for (size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.', dot + 1)) {
    json::value* child = node.if_contains(Key(path.substr(0, dot)));
    if (child == nullptr || !child->is_object()) continue;
    if (RemovePath(child->as_object(), path.substr(dot + 1))) {
      removed = true;
      if (child->as_object().empty()) node.erase(Key(path.substr(0, dot)));
    }
  }
  return removed;
}

}  // namespace

bool RemoveSetting(json::object& settings, std::string_view key) {
  bool removed = RemovePath(settings, key);
  if (key.starts_with("index.")) {
    removed = RemovePath(settings, key.substr(6)) || removed;
  } else {
    removed = RemovePath(settings, StrCat("index.", key)) || removed;
  }
  return removed;
}

}  // namespace rfs::transform
