#include "rfs/transform/es_mapping_rules.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"

#include "absl/status/statusor.h"
#include "es_mapping_rules_internal.hpp"

namespace rfs::transform {
namespace {

namespace json = boost::json;
using core::StrCat;

constexpr std::string_view kFieldTypeTest = "Elasticsearch-only field types are translated";
constexpr std::string_view kVersionedTest =
    "types OpenSearch gained in 2.x are kept from their version and translated before it";

// The versions below are where OpenSearch's own source added each type:
// FlatObjectFieldMapper.java (2.7), NumberFieldMapper.java's UNSIGNED_LONG (2.8),
// MatchOnlyTextFieldMapper.java (2.12), ConstantKeywordFieldMapper.java (2.14) and
// WildcardFieldMapper.java (2.15), all in server/src/main/java/org/opensearch/index/mapper/ of
// opensearch-project/OpenSearch; docs/es-mapping-compatibility.md cites the changelog entries.
constexpr std::array<MappingRule, 29> kRules = {{
    {RuleSubject::kType, "dense_vector", 2, 2, RuleAction::kTranslate, "knn_vector",
     "`dims` -> `dimension`; `similarity` -> `space_type` (l2_norm -> l2, cosine -> cosinesimil, "
     "dot_product and max_inner_product -> innerproduct); `index_options` hnsw `m` and "
     "`ef_construction` kept, int8/int4 quantization -> the engine's `sq` encoder where the target "
     "has it (Lucene 2.16+, Faiss fp16 2.13+), bbq and flat -> full-precision HNSW (said per "
     "field); `element_type` byte -> `data_type` byte (2.9+), bit -> `data_type` binary on Faiss "
     "(hamming); `index: false` -> no method; `index.knn: true` added. Engine `lucene` (the HNSW "
     "Elasticsearch uses), `--knn-engine faiss` for OpenSearch's default; the target needs the "
     "k-NN plugin. Without `dims` the index is refused.",
     RuleAction::kTranslate, "knn_vector",
     "as from 2.2, but on the `nmslib` engine unless `--knn-engine faiss`: k-NN has no Lucene "
     "engine before 2.2.",
     "dense_vector becomes knn_vector with its dimension, space type and HNSW parameters; "
     "Elasticsearch 8 dense_vector indices land on OpenSearch k-NN nodes and answer k-NN "
     "queries"},
    {RuleSubject::kType, "sparse_vector", 0, 0, RuleAction::kTranslate, "rank_features",
     "token -> weight maps index as they are; `index_options`, `store` dropped.", RuleAction::kKeep,
     "", "", kFieldTypeTest},
    {RuleSubject::kType, "flattened", 2, 7, RuleAction::kTranslate, "flat_object",
     "every leaf indexed as a keyword under its dotted path, as Elasticsearch did; the "
     "parameters (`depth_limit`, `ignore_above`, `null_value`, ...) dropped.",
     RuleAction::kTranslate, "object",
     "`object` with `enabled: false`: kept in `_source`, not searchable (no flat_object before "
     "2.7).",
     kVersionedTest},
    {RuleSubject::kType, "passthrough", 0, 0, RuleAction::kTranslate, "object",
     "its fields keep their full paths; `priority` and `time_series_dimension` dropped (the "
     "top-level aliases Elasticsearch resolved are not created).",
     RuleAction::kKeep, "", "", kFieldTypeTest},
    {RuleSubject::kType, "shape", 0, 0, RuleAction::kTranslate, "xy_shape",
     "needs OpenSearch's geospatial plugin (in the full distribution, not the minimal one).",
     RuleAction::kKeep, "", "", kFieldTypeTest},
    {RuleSubject::kType, "point", 0, 0, RuleAction::kTranslate, "xy_point",
     "needs OpenSearch's geospatial plugin (in the full distribution, not the minimal one).",
     RuleAction::kKeep, "", "", kFieldTypeTest},
    {RuleSubject::kType, "semantic_text", 0, 0, RuleAction::kTranslate, "text",
     "the text is searchable as text; its inference endpoint and embeddings are not migrated "
     "(`inference_id`, `search_inference_id`, `model_settings`, `chunking_settings` dropped).",
     RuleAction::kKeep, "", "", kFieldTypeTest},
    {RuleSubject::kType, "version", 0, 0, RuleAction::kTranslate, "keyword",
     "values kept as strings; they sort as strings, not by semantic version.", RuleAction::kKeep,
     "", "", kFieldTypeTest},
    {RuleSubject::kType, "wildcard", 2, 15, RuleAction::kKeep, "", "OpenSearch has `wildcard`.",
     RuleAction::kTranslate, "keyword",
     "`keyword` (wildcard and regexp queries still work, slower on long values).", kVersionedTest},
    {RuleSubject::kType, "unsigned_long", 2, 8, RuleAction::kKeep, "",
     "OpenSearch has `unsigned_long`.", RuleAction::kTranslate, "keyword",
     "`keyword`: every value up to 2^64-1 kept exactly; range queries and sorting become "
     "lexicographic.",
     kVersionedTest},
    {RuleSubject::kType, "constant_keyword", 2, 14, RuleAction::kKeep, "",
     "OpenSearch has `constant_keyword`.", RuleAction::kTranslate, "keyword",
     "`keyword` without `value`: documents that omit the field no longer match it.",
     kVersionedTest},
    {RuleSubject::kType, "match_only_text", 2, 12, RuleAction::kKeep, "",
     "OpenSearch has `match_only_text`.", RuleAction::kTranslate, "text",
     "`text` with `index_options: docs` and `norms: false`, what match_only_text indexes.",
     kVersionedTest},
    {RuleSubject::kType, "histogram", 0, 0, RuleAction::kRefuse, "",
     "no OpenSearch type holds pre-aggregated histograms.", RuleAction::kKeep, "", "",
     "types without an OpenSearch equivalent refuse their index with advice, the rest migrate"},
    {RuleSubject::kType, "aggregate_metric_double", 0, 0, RuleAction::kRefuse, "",
     "no OpenSearch type holds pre-aggregated metrics.", RuleAction::kKeep, "", "",
     "types without an OpenSearch equivalent refuse their index with advice, the rest migrate"},
    {RuleSubject::kType, "counted_keyword", 0, 0, RuleAction::kRefuse, "",
     "no OpenSearch type counts repeated keywords.", RuleAction::kKeep, "", "",
     "types without an OpenSearch equivalent refuse their index with advice, the rest migrate"},
    {RuleSubject::kType, "rank_vectors", 0, 0, RuleAction::kRefuse, "",
     "no OpenSearch type holds multi-vectors for late interaction.", RuleAction::kKeep, "", "",
     "types without an OpenSearch equivalent refuse their index with advice, the rest migrate"},
    {RuleSubject::kParameter, "time_series_dimension", 0, 0, RuleAction::kDrop, "",
     "OpenSearch has no time series indices; the field indexes as usual.", RuleAction::kKeep, "",
     "", "Elasticsearch-only field parameters are dropped and reported per field"},
    {RuleSubject::kParameter, "time_series_metric", 0, 0, RuleAction::kDrop, "",
     "OpenSearch has no time series indices; the field indexes as usual.", RuleAction::kKeep, "",
     "", "Elasticsearch-only field parameters are dropped and reported per field"},
    {RuleSubject::kParameter, "synthetic_source_keep", 0, 0, RuleAction::kDrop, "",
     "a synthetic source option; the target keeps `_source` as sent.", RuleAction::kKeep, "", "",
     "Elasticsearch-only field parameters are dropped and reported per field"},
    {RuleSubject::kParameter, "store_array_source", 0, 0, RuleAction::kDrop, "",
     "a synthetic source option; the target keeps `_source` as sent.", RuleAction::kKeep, "", "",
     "Elasticsearch-only field parameters are dropped and reported per field"},
    {RuleSubject::kParameter, "script", 0, 0, RuleAction::kDrop, "",
     "an indexed script field: its values were computed at index time and are not in "
     "`_source`, so the field stays empty on the target (`on_script_error` dropped with it).",
     RuleAction::kKeep, "", "",
     "Elasticsearch-only field parameters are dropped and reported per field"},
    {RuleSubject::kParameter, "subobjects", 2, 7, RuleAction::kTranslate, "",
     "`subobjects: false` (or `auto`) on an object or the root: dotted child names expanded into "
     "objects, which is how OpenSearch indexes a document's dotted keys; a child that is both a "
     "leaf and a parent (`a` and `a.b`) makes the object `flat_object` instead.",
     RuleAction::kTranslate, "",
     "dotted children expanded as from 2.7; a leaf-and-parent child refuses the index (no "
     "flat_object before 2.7).",
     "subobjects false objects are expanded, or flat_object on a conflict"},
    {RuleSubject::kParameter, "dynamic: runtime", 0, 0, RuleAction::kTranslate, "false",
     "`dynamic: false`: new fields kept in `_source` and not indexed, as Elasticsearch did "
     "(`true` would index what the source never indexed).",
     RuleAction::kKeep, "", "", "dynamic runtime becomes false and runtime fields are dropped"},
    {RuleSubject::kMapping, "runtime", 2, 15, RuleAction::kTranslate, "derived",
     "a runtime field with a Painless script that calls `emit(...)`, of a type derived fields "
     "take (`boolean`, `date`, `double`, `geo_point`, `ip`, `keyword`, `long`), becomes a derived "
     "field of the same name, type and script (`format` kept; `on_script_error`, `meta` "
     "dropped), searchable as on Elasticsearch. Dropped, each named with the reason: a runtime "
     "field without a script (Elasticsearch reads the document's own value of that name, but "
     "OpenSearch refuses every document holding a value under a derived field's name), a dotted "
     "name (a derived field `a.b` fails the index's shards), a name the mapping also maps, "
     "`composite` and `lookup` types, scripts in another language or using `grok`, `dissect` or "
     "the `field(...)` / `$(...)` accessors. A document holding a value under a translated "
     "field's name is refused by the target (recorded as a failed document). Dynamic templates "
     "that map to runtime fields are dropped.",
     RuleAction::kDrop, "",
     "runtime fields hold no data; each is named in the report (no derived fields before 2.15). "
     "Dynamic templates that map to runtime fields are dropped the same way.",
     "runtime fields become derived fields where the target has them, else are dropped"},
    {RuleSubject::kSetting, "index.mode", 0, 0, RuleAction::kDrop, "",
     "`logsdb` and `time_series` are Elasticsearch index modes; the index is a standard one.",
     RuleAction::kKeep, "", "", "Elasticsearch-only index settings are dropped"},
    {RuleSubject::kSetting, "index.time_series.start_time", 0, 0, RuleAction::kDrop, "",
     "with every `index.time_series.*` setting and `index.routing_path`.", RuleAction::kKeep, "",
     "", "Elasticsearch-only index settings are dropped"},
    {RuleSubject::kSetting, "index.mapping.source.mode", 0, 0, RuleAction::kDrop, "",
     "synthetic source is Elasticsearch's; the target stores `_source` as sent.", RuleAction::kKeep,
     "", "", "Elasticsearch-only index settings are dropped"},
    {RuleSubject::kSetting, "index.sort.field", 0, 0, RuleAction::kKeep, "",
     "index sorting (and `index.sort.order`, `mode`, `missing`) kept.", RuleAction::kKeep, "", "",
     "Elasticsearch-only index settings are dropped"},
    {RuleSubject::kSetting, "index.knn", 0, 0, RuleAction::kTranslate, "true",
     "added to an index (or template) that gets an indexed `knn_vector`.", RuleAction::kKeep, "",
     "",
     "dense_vector becomes knn_vector with its dimension, space type and HNSW parameters; "
     "Elasticsearch 8 dense_vector indices land on OpenSearch k-NN nodes and answer k-NN "
     "queries"},
}};

bool AtLeast(const core::ClusterVersion& v, int major, int minor) {
  return v.major > major || (v.major == major && v.minor >= minor);
}

std::string Str(json::string_view s) { return std::string(s.data(), s.size()); }
json::string_view Key(std::string_view s) { return json::string_view(s.data(), s.size()); }

std::string StringOf(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(Key(key));
  if (v == nullptr) return "";
  if (v->is_string()) return Str(v->as_string());
  if (v->is_bool()) return v->as_bool() ? "true" : "false";
  return json::serialize(*v);
}

std::string FieldLine(const std::string& path, std::string_view text) {
  return StrCat("field [", path, "]: ", text);
}

// Removes every key of `field` not in `kept`; returns the removed names, comma-separated.
std::string KeepOnly(json::object& field, std::initializer_list<std::string_view> kept) {
  std::string removed;
  for (auto it = field.begin(); it != field.end();) {
    const std::string_view key(it->key());
    if (std::find(kept.begin(), kept.end(), key) == kept.end()) {
      removed += StrCat(removed.empty() ? "" : ", ", "`", key, "`");
      it = field.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

std::string Dropped(const std::string& removed) {
  return removed.empty() ? std::string() : StrCat("; dropped ", removed);
}

// The HNSW method of an indexed `dense_vector` on `engine`: its space from the similarity, and
// the nearest the engine has to the field's index_options (scalar quantization where it can).
json::object KnnMethod(const json::object& field, const std::string& element,
                       const std::string& similarity, const std::string& engine,
                       const core::ClusterVersion& target, std::vector<std::string>& said) {
  std::string space;
  if (element == "bit") {
    space = "hamming";
  } else if (similarity == "l2_norm") {
    space = "l2";
  } else if (similarity == "cosine") {
    space = "cosinesimil";
  } else {
    space = "innerproduct";  // dot_product, max_inner_product
  }
  said.push_back(StrCat("similarity ", similarity, " -> space_type ", space));
  json::object method{{"name", "hnsw"}, {"engine", engine}, {"space_type", space}};
  json::object parameters;
  std::string index_type = "hnsw";
  if (const json::value* io = field.if_contains("index_options"); io && io->is_object()) {
    const json::object& opts = io->as_object();
    index_type = StringOf(opts, "type");
    for (std::string_view p : {"m", "ef_construction"}) {
      if (const json::value* v = opts.if_contains(Key(p))) parameters[Key(p)] = *v;
    }
    if (opts.contains("confidence_interval")) {
      said.push_back("index_options confidence_interval dropped");
    }
  }
  if (index_type == "int8_hnsw" || index_type == "int4_hnsw" || index_type == "int8_flat" ||
      index_type == "int4_flat") {
    if (engine == "lucene" && AtLeast(target, 2, 16)) {
      parameters["encoder"] = json::object{{"name", "sq"}};
      said.push_back(StrCat("index_options ", index_type,
                            " -> hnsw with the lucene `sq` encoder (7-bit scalar quantization, "
                            "the nearest the engine has)"));
    } else if (engine == "faiss" && AtLeast(target, 2, 13)) {
      parameters["encoder"] =
          json::object{{"name", "sq"}, {"parameters", json::object{{"type", "fp16"}}}};
      said.push_back(StrCat("index_options ", index_type,
                            " -> hnsw with the faiss `sq` fp16 encoder (the nearest the "
                            "engine has)"));
    } else {
      said.push_back(StrCat("index_options ", index_type, " -> full-precision hnsw (", engine,
                            " on ", target.ToString(), " has no scalar quantization)"));
    }
  } else if (index_type != "hnsw") {
    said.push_back(StrCat("index_options ", index_type,
                          " -> full-precision hnsw (no equivalent method is chosen for it)"));
  }
  if (!parameters.empty()) method["parameters"] = std::move(parameters);
  return method;
}

void DenseVector(json::object& field, const std::string& path,
                 const MetadataTransformOptions& options, internal::EsTranslation& out) {
  const core::ClusterVersion& target = options.target;
  const json::value* dims = field.if_contains("dims");
  if (dims == nullptr || !(dims->is_int64() || dims->is_uint64())) {
    out.refusals.push_back(
        FieldLine(path,
                  "`dense_vector` without `dims` (Elasticsearch sets it from the first document it "
                  "indexes; `knn_vector` needs a `dimension`)"));
    return;
  }
  const std::string element =
      field.contains("element_type") ? StringOf(field, "element_type") : std::string("float");
  // ES 8.0-8.10 left dense_vector unindexed unless `index: true`; 8.11 made indexing the default.
  // Elasticsearch 7 never indexed it.
  // An unknown minor of 8.x is an index version newer than rfs's table: 8.10 or later.
  const core::ClusterVersion& source = options.source;
  const bool source_default_indexed =
      source.elasticsearch() && (source.minor < 0 ? source.major >= 8 : AtLeast(source, 8, 11));
  bool indexed = source_default_indexed;
  if (const json::value* index = field.if_contains("index"); index && index->is_bool()) {
    indexed = index->as_bool();
  }
  std::string similarity = StringOf(field, "similarity");
  if (similarity.empty()) similarity = element == "bit" ? "l2_norm" : "cosine";
  json::object result{{"type", "knn_vector"}, {"dimension", *dims}};
  std::vector<std::string> said;
  said.push_back(StrCat("dims ", json::serialize(*dims), " -> dimension"));
  bool faiss = options.knn_engine == KnnEngine::kFaiss;
  if (element == "byte") {
    if (AtLeast(target, 2, 9)) {
      result["data_type"] = "byte";
      said.push_back("element_type byte -> data_type byte");
    } else {
      said.push_back("element_type byte -> float vectors (no byte vectors before k-NN 2.9)");
    }
  } else if (element == "bit") {
    result["data_type"] = "binary";
    faiss = true;
    said.push_back(
        "element_type bit -> data_type binary on the faiss engine (the only one with binary "
        "vectors, k-NN 2.16+); hex-string vectors in documents become byte arrays");
  }
  std::string engine = faiss ? "faiss" : "lucene";
  if (!faiss && !AtLeast(target, 2, 2)) {
    engine = "nmslib";
    said.push_back("engine nmslib (k-NN has no lucene engine before 2.2)");
  }
  if (indexed) {
    result["method"] = KnnMethod(field, element, similarity, engine, target, said);
    out.knn = true;
  } else {
    said.push_back("not indexed in the source: no method (exact search only)");
  }
  std::string summary;
  for (const auto& s : said) summary += StrCat(summary.empty() ? "" : ", ", s);
  out.notes.push_back(
      FieldLine(path, StrCat("`dense_vector` translated to `knn_vector`: ", summary)));
  field = std::move(result);
}

// Expands dotted child names of `properties` into objects; false on a leaf-and-parent conflict.
bool ExpandDotted(json::object& properties) {
  json::object expanded;
  for (const auto& [name, child] : properties) {
    const std::string_view full(name);
    json::object* node = &expanded;
    size_t start = 0;
    size_t dot;
    while ((dot = full.find('.', start)) != std::string_view::npos) {
      json::value& next = (*node)[Key(full.substr(start, dot - start))];
      if (next.is_null()) next = json::object{{"properties", json::object()}};
      if (!next.is_object()) return false;
      json::object& object = next.as_object();
      const json::value* type = object.if_contains("type");
      if (type != nullptr && !(type->is_string() && type->as_string() == "object")) return false;
      json::value& props = object["properties"];
      if (!props.is_object()) props = json::object();
      node = &props.as_object();
      start = dot + 1;
    }
    const std::string_view leaf = full.substr(start);
    if (json::value* existing = node->if_contains(Key(leaf))) {
      // A leaf where an object was made for dotted siblings (`a` beside `a.b`).
      const json::object* incoming = child.if_object();
      const bool incoming_object =
          incoming != nullptr && !incoming->contains("type") && incoming->contains("properties");
      if (!incoming_object || !existing->is_object()) return false;
      json::object& props = (*existing).as_object()["properties"].as_object();
      for (const auto& [k, v] : incoming->at("properties").as_object()) {
        if (props.contains(k)) return false;
        props[k] = v;
      }
      continue;
    }
    (*node)[Key(leaf)] = child;
  }
  properties = std::move(expanded);
  return true;
}

void Subobjects(json::object& holder, const std::string& path, bool root,
                const MetadataTransformOptions& options, internal::EsTranslation& out) {
  const json::value* sub = holder.if_contains("subobjects");
  if (sub == nullptr) return;
  const std::string value = StringOf(holder, "subobjects");
  holder.erase("subobjects");
  const std::string where = root ? std::string("mapping root") : StrCat("field [", path, "]");
  if (value == "true") {
    out.notes.push_back(StrCat(where, ": `subobjects: true` dropped (OpenSearch's behaviour)"));
    return;
  }
  json::value* properties = holder.if_contains("properties");
  if (properties == nullptr || !properties->is_object()) {
    out.notes.push_back(StrCat(where, ": `subobjects: ", value,
                               "` dropped; documents' dotted keys index as object paths"));
    return;
  }
  json::object copy = properties->as_object();
  if (ExpandDotted(copy)) {
    *properties = std::move(copy);
    out.notes.push_back(StrCat(where, ": `subobjects: ", value,
                               "` translated: dotted child names expanded into objects (documents' "
                               "dotted keys index as those paths)"));
    return;
  }
  if (!root && AtLeast(options.target, 2, 7)) {
    holder = json::object{{"type", "flat_object"}};
    out.notes.push_back(StrCat(where, ": `subobjects: ", value,
                               "` translated to `flat_object`: a child is both a leaf and a "
                               "parent, which OpenSearch objects cannot hold; every leaf is "
                               "indexed as a keyword under its dotted path"));
    return;
  }
  out.refusals.push_back(StrCat(where, ": `subobjects: ", value,
                                "` with a child that is both a leaf and a parent (OpenSearch "
                                "objects cannot hold both",
                                root ? ")" : "; flat_object needs OpenSearch 2.7)"));
}

// Runtime fields as OpenSearch derived fields (the `derived` section of a mapping, 2.15+). The
// mapping shape and parameters (type, script, format, properties, prefilter_field,
// ignore_malformed) are those of server/src/main/java/org/opensearch/index/mapper/
// DerivedFieldMapper.java, the types those of DerivedFieldSupportedTypes.java (boolean, date,
// geo_point, ip, keyword, text, long, double, float, object), and the script runs in the
// `derived_field` context, whose Painless allowlist
// (modules/lang-painless/src/main/resources/org/opensearch/painless/spi/org.opensearch.derived.txt)
// has emit(Object) and emit(double lat, double lon) -- the calls Elasticsearch's runtime scripts
// make -- with `doc` and `params._source` (server/src/main/java/org/opensearch/script/
// DerivedFieldScript.java), all in opensearch-project/OpenSearch. Checked on OpenSearch 2.19.6 and
// 3.8.0: every type below searchable with Elasticsearch-style scripts; a document holding a value
// under a derived field's name refused ("failed to parse field [x] of type [derived]"); a dotted
// derived name accepted at creation but failing the index's shards ("No type specified for field
// [a]").
constexpr std::array<std::string_view, 7> kDerivedTypes = {
    "boolean", "date", "double", "geo_point", "ip", "keyword", "long"};

// True when `text` calls `name(` as a function of its own (not a method or a longer name).
bool CallsFunction(std::string_view text, std::string_view name) {
  for (size_t at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
    if (at > 0) {
      const char before = text[at - 1];
      if (std::isalnum(static_cast<unsigned char>(before)) || before == '_' || before == '.') {
        continue;
      }
    }
    size_t after = at + name.size();
    while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
    if (after < text.size() && text[after] == '(') return true;
  }
  return false;
}

// The derived field of one runtime field, or the reason it cannot be one.
absl::StatusOr<json::object> DerivedField(const std::string& name, const json::value& def,
                                          const json::object& mapping) {
  auto why = [](const std::string& reason) { return absl::FailedPreconditionError(reason); };
  if (!def.is_object()) return why("not an object");
  const json::object& field = def.as_object();
  const std::string type = StringOf(field, "type");
  if (name.find('.') != std::string::npos) {
    return why(
        "a dotted name: a derived field named with a dot fails the index's shards on OpenSearch");
  }
  if (const json::value* props = mapping.if_contains("properties");
      props != nullptr && props->is_object() && props->as_object().contains(Key(name))) {
    return why(
        "the mapping also maps it: documents hold its values, and OpenSearch refuses a document "
        "holding a value under a derived field's name");
  }
  if (type == "composite" || type == "lookup") {
    return why(StrCat("type `", type, "`: derived fields have no ", type, " type"));
  }
  if (std::find(kDerivedTypes.begin(), kDerivedTypes.end(), type) == kDerivedTypes.end()) {
    return why(StrCat("type `", type, "` is not one derived fields take"));
  }
  const json::value* script = field.if_contains("script");
  if (script == nullptr) {
    return why(
        "no script: Elasticsearch read the document's own value of that name from _source, but "
        "OpenSearch refuses every document holding a value under a derived field's name; the "
        "value stays in _source (map it as a field with --transformer-config to search it)");
  }
  json::object out_script;
  std::string source;
  if (script->is_string()) {
    source = Str(script->as_string());
    out_script["source"] = script->as_string();
  } else if (script->is_object()) {
    const json::object& s = script->as_object();
    const std::string lang = s.contains("lang") ? StringOf(s, "lang") : std::string("painless");
    if (lang != "painless") return why(StrCat("a script in `", lang, "`, not Painless"));
    const json::value* src = s.if_contains("source");
    if (src == nullptr || !src->is_string()) return why("a stored script (no inline source)");
    source = Str(src->as_string());
    out_script["source"] = *src;
    if (const json::value* params = s.if_contains("params")) out_script["params"] = *params;
  } else {
    return why("a script that is neither a string nor an object");
  }
  out_script["lang"] = "painless";
  if (!CallsFunction(source, "emit")) return why("a script that never calls emit(...)");
  for (std::string_view call : {"grok", "dissect", "field", "$"}) {
    if (CallsFunction(source, call)) {
      return why(StrCat("a script calling `", call,
                        "(...)`, which OpenSearch's derived field scripts do not have"));
    }
  }
  json::object derived{{"type", Key(type)}, {"script", std::move(out_script)}};
  if (const json::value* format = field.if_contains("format"); format && type == "date") {
    derived["format"] = *format;
  }
  return derived;
}

void DynamicRuntime(json::object& holder, const std::string& where, internal::EsTranslation& out) {
  json::value* dynamic = holder.if_contains("dynamic");
  if (dynamic && dynamic->is_string() && dynamic->as_string() == "runtime") {
    *dynamic = false;
    out.notes.push_back(StrCat(where,
                               ": `dynamic: runtime` translated to `false` (new fields kept in "
                               "_source, not indexed, as Elasticsearch did)"));
  }
}

}  // namespace

absl::StatusOr<KnnEngine> ParseKnnEngine(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "lucene") return KnnEngine::kLucene;
  if (lower == "faiss") return KnnEngine::kFaiss;
  return absl::InvalidArgumentError(StrCat("knn engine '", text, "' is not one of: lucene, faiss"));
}

std::string_view ToString(KnnEngine engine) {
  return engine == KnnEngine::kFaiss ? "faiss" : "lucene";
}

std::string_view ToString(RuleAction action) {
  switch (action) {
    case RuleAction::kKeep:
      return "kept";
    case RuleAction::kTranslate:
      return "translated";
    case RuleAction::kDrop:
      return "dropped";
    case RuleAction::kRefuse:
      return "refused";
  }
  return "";
}

std::span<const MappingRule> EsMappingRules() { return kRules; }

const MappingRule* FindRule(RuleSubject subject, std::string_view name) {
  for (const MappingRule& rule : kRules) {
    if (rule.subject == subject && rule.name == name) return &rule;
  }
  return nullptr;
}

RuleOutcome OutcomeFor(const MappingRule& rule, const core::ClusterVersion& target) {
  if (AtLeast(target, rule.since_major, rule.since_minor)) {
    return {rule.action, rule.to, rule.how};
  }
  return {rule.before_action, rule.before_to, rule.before_how};
}

std::string RenderCompatibilityTable() {
  auto cell = [](RuleAction action, std::string_view to) {
    if (action == RuleAction::kTranslate && !to.empty()) return StrCat("`", to, "`");
    return std::string(ToString(action));
  };
  auto column = [&](const MappingRule& rule, int major) {
    const std::string now = cell(rule.action, rule.to);
    const std::string before = cell(rule.before_action, rule.before_to);
    if (rule.since_major < major || (rule.since_major == major && rule.since_minor == 0)) {
      return now;
    }
    if (rule.since_major > major) return before;
    if (now == before) return now;
    return StrCat(before, " before ", major, ".", rule.since_minor, ", ", now, " from ", major, ".",
                  rule.since_minor);
  };
  std::string out =
      "| Elasticsearch | OpenSearch 1.x | OpenSearch 2.x | OpenSearch 3.x | What rfs does | "
      "Proven by |\n|---|---|---|---|---|---|\n";
  for (const MappingRule& rule : kRules) {
    std::string subject;
    switch (rule.subject) {
      case RuleSubject::kType:
        subject = StrCat("type `", rule.name, "`");
        break;
      case RuleSubject::kParameter:
        subject = StrCat("parameter `", rule.name, "`");
        break;
      case RuleSubject::kMapping:
        subject = StrCat("mapping `", rule.name, "`");
        break;
      case RuleSubject::kSetting:
        subject = StrCat("setting `", rule.name, "`");
        break;
    }
    std::string how(rule.how);
    if (rule.since_major > 0 && !rule.before_how.empty()) {
      how += StrCat(" Before ", rule.since_major, ".", rule.since_minor, ": ", rule.before_how);
    }
    out += StrCat("| ", subject, " | ", column(rule, 1), " | ", column(rule, 2), " | ",
                  column(rule, 3), " | ", how, " | ", rule.test, " |\n");
  }
  return out;
}

namespace {

void CollectConversions(const json::object& properties, std::vector<std::string>& path,
                        std::vector<std::pair<std::vector<std::string>, bool>>& out) {
  for (const auto& [name, value] : properties) {
    if (!value.is_object()) continue;
    const json::object& field = value.as_object();
    path.push_back(Str(name));
    const std::string type = StringOf(field, "type");
    if (type == "dense_vector") {
      const std::string element = StringOf(field, "element_type");
      if (element == "byte" || element == "bit") out.emplace_back(path, true);
    } else if (type == "semantic_text") {
      out.emplace_back(path, false);
    }
    if (const json::value* children = field.if_contains("properties");
        children && children->is_object()) {
      CollectConversions(children->as_object(), path, out);
    }
    path.pop_back();
  }
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A hex string -> the array of its bytes as signed values, as Elasticsearch reads it; false when
// `value` is not a hex string.
bool HexToBytes(json::value& value) {
  if (!value.is_string()) return false;
  const json::string& text = value.as_string();
  if (text.empty() || text.size() % 2 != 0) return false;
  json::array bytes;
  bytes.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    const int high = HexDigit(text[i]);
    const int low = HexDigit(text[i + 1]);
    if (high < 0 || low < 0) return false;
    bytes.emplace_back(static_cast<int64_t>(static_cast<int8_t>(high * 16 + low)));
  }
  value = std::move(bytes);
  return true;
}

// Elasticsearch's legacy semantic_text source, {"text": ..., "inference": {...}} -> the text.
bool SemanticText(json::value& value) {
  json::object* object = value.if_object();
  if (object == nullptr || !object->contains("inference")) return false;
  const json::value* text = object->if_contains("text");
  if (text == nullptr) return false;
  json::value kept = *text;
  value = std::move(kept);
  return true;
}

// Converts every value at `path[at..]` under `node` (objects, arrays of objects, dotted keys).
bool ConvertAt(json::value& node, const std::vector<std::string>& path, size_t at,
               bool (*convert)(json::value&)) {
  if (json::array* array = node.if_array()) {
    bool changed = false;
    for (json::value& element : *array) changed = ConvertAt(element, path, at, convert) || changed;
    return changed;
  }
  json::object* object = node.if_object();
  if (object == nullptr) return false;
  bool changed = false;
  std::string key;
  for (size_t end = at; end < path.size(); ++end) {
    key += (end == at ? "" : ".") + path[end];
    json::value* child = object->if_contains(Key(key));
    if (child == nullptr) continue;
    if (end + 1 == path.size()) {
      if (json::array* values = child->if_array(); values != nullptr && convert == &SemanticText) {
        for (json::value& v : *values) changed = convert(v) || changed;
      } else if (values != nullptr && !values->empty() && values->front().is_string()) {
        for (json::value& v : *values) changed = convert(v) || changed;  // several hex vectors
      } else {
        changed = convert(*child) || changed;
      }
    } else {
      changed = ConvertAt(*child, path, end + 1, convert) || changed;
    }
  }
  return changed;
}

}  // namespace

DocumentValueConversions DocumentValueConversions::ForMappings(const json::object& mappings) {
  DocumentValueConversions out;
  std::vector<std::pair<std::vector<std::string>, bool>> found;
  std::vector<std::string> path;
  auto add = [&](const json::object& mapping) {
    if (const json::value* props = mapping.if_contains("properties"); props && props->is_object()) {
      CollectConversions(props->as_object(), path, found);
    }
  };
  if (mappings.contains("properties")) {
    add(mappings);
  } else {
    for (const auto& [type, mapping] : mappings) {
      if (mapping.is_object()) add(mapping.as_object());
    }
  }
  for (auto& [field_path, hex] : found) {
    out.fields_.push_back({std::move(field_path), hex ? Kind::kHexVector : Kind::kSemanticText});
  }
  return out;
}

bool DocumentValueConversions::Apply(json::object& source) const {
  if (fields_.empty()) return false;
  json::value root(std::move(source));
  bool changed = false;
  for (const Field& field : fields_) {
    changed = ConvertAt(root, field.path, 0,
                        field.kind == Kind::kHexVector ? &HexToBytes : &SemanticText) ||
              changed;
  }
  source = std::move(root.as_object());
  return changed;
}

namespace internal {

void TranslateEsField(json::object& field, const std::string& path,
                      const MetadataTransformOptions& options, EsTranslation& out) {
  const core::ClusterVersion& target = options.target;
  // Parameters OpenSearch does not know, on any field.
  for (const MappingRule& rule : kRules) {
    if (rule.subject != RuleSubject::kParameter || rule.action != RuleAction::kDrop) continue;
    if (field.erase(Key(rule.name)) > 0) {
      if (rule.name == "script") field.erase("on_script_error");
      out.notes.push_back(
          FieldLine(path, StrCat("parameter `", rule.name, "` dropped: ", rule.how)));
    }
  }
  DynamicRuntime(field, StrCat("field [", path, "]"), out);
  Subobjects(field, path, /*root=*/false, options, out);
  const json::value* type_value = field.if_contains("type");
  if (type_value == nullptr || !type_value->is_string()) return;
  const std::string type = Str(type_value->as_string());
  const MappingRule* rule = FindRule(RuleSubject::kType, type);
  if (rule == nullptr) return;
  const RuleOutcome outcome = OutcomeFor(*rule, target);
  if (outcome.action == RuleAction::kKeep) return;
  if (outcome.action == RuleAction::kRefuse) {
    out.refusals.push_back(FieldLine(path, StrCat("type `", type, "`: ", outcome.how)));
    return;
  }
  if (type == "dense_vector") {
    DenseVector(field, path, options, out);
    return;
  }
  std::string removed;
  if (type == "sparse_vector") {
    removed = KeepOnly(field, {"type", "meta"});
  } else if (type == "flattened") {
    removed = KeepOnly(field, {"type"});
    if (outcome.to == "object") field["enabled"] = false;
  } else if (type == "passthrough") {
    removed = KeepOnly(field, {"type", "properties", "dynamic", "enabled"});
  } else if (type == "semantic_text") {
    removed = KeepOnly(field, {"type", "meta"});
  } else if (type == "version") {
    removed = KeepOnly(field, {"type", "meta", "fields"});
  } else if (type == "wildcard") {
    removed = KeepOnly(field, {"type", "ignore_above", "null_value", "meta", "fields"});
  } else if (type == "unsigned_long") {
    removed = KeepOnly(field, {"type", "index", "store", "doc_values", "meta", "fields"});
  } else if (type == "constant_keyword") {
    removed = KeepOnly(field, {"type", "meta", "fields"});
  } else if (type == "match_only_text") {
    removed = KeepOnly(field, {"type", "meta", "fields", "analyzer", "search_analyzer"});
    field["index_options"] = "docs";
    field["norms"] = false;
  }
  field["type"] = json::string(outcome.to.data(), outcome.to.size());
  out.notes.push_back(FieldLine(path, StrCat("`", type, "` translated to `", outcome.to,
                                             "`: ", outcome.how, Dropped(removed))));
}

void TranslateEsRoot(json::object& mapping, const MetadataTransformOptions& options,
                     EsTranslation& out) {
  if (json::value* runtime = mapping.if_contains("runtime")) {
    const json::object fields = runtime->is_object() ? runtime->as_object() : json::object();
    mapping.erase("runtime");
    const RuleOutcome outcome =
        OutcomeFor(*FindRule(RuleSubject::kMapping, "runtime"), options.target);
    if (outcome.action != RuleAction::kTranslate) {
      std::string names;
      for (const auto& [name, def] : fields) names += StrCat(names.empty() ? "" : ", ", Str(name));
      out.notes.push_back(StrCat("runtime fields [", names, "] dropped: ", outcome.how));
    } else {
      json::object derived;
      if (const json::value* existing = mapping.if_contains("derived");
          existing && existing->is_object()) {
        derived = existing->as_object();
      }
      for (const auto& [key, def] : fields) {
        const std::string name = Str(key);
        auto field = DerivedField(name, def, mapping);
        if (field.ok() && derived.contains(key)) {
          field = absl::FailedPreconditionError("the mapping already has a derived field of it");
        }
        if (!field.ok()) {
          out.notes.push_back(
              StrCat("runtime field [", name, "] dropped: ", field.status().message()));
          continue;
        }
        std::string dropped;
        for (const auto& [param, value] : def.as_object()) {
          if (param != "type" && param != "script" &&
              !(param == "format" && field->contains("format"))) {
            dropped += StrCat(dropped.empty() ? "" : ", ", "`", std::string_view(param), "`");
          }
        }
        out.notes.push_back(StrCat("runtime field [", name, "] translated to a derived field (",
                                   StringOf(*field, "type"), ", the same Painless script",
                                   dropped.empty() ? std::string() : StrCat("; dropped ", dropped),
                                   "): documents holding a value under [", name,
                                   "] are refused by the target"));
        derived[key] = *std::move(field);
      }
      if (!derived.empty()) mapping["derived"] = std::move(derived);
    }
  }
  if (json::value* templates = mapping.if_contains("dynamic_templates");
      templates && templates->is_array()) {
    json::array kept;
    for (auto& entry : templates->as_array()) {
      bool runtime = false;
      std::string name;
      if (entry.is_object()) {
        for (const auto& [k, body] : entry.as_object()) {
          name = Str(k);
          runtime = runtime || (body.is_object() && body.as_object().contains("runtime"));
        }
      }
      if (runtime) {
        out.notes.push_back(StrCat("dynamic template [", name,
                                   "] dropped: it maps new fields to runtime fields, which "
                                   "OpenSearch does not have"));
      } else {
        kept.push_back(entry);
      }
    }
    *templates = std::move(kept);
  }
  DynamicRuntime(mapping, "mapping root", out);
  Subobjects(mapping, "", /*root=*/true, options, out);
}

}  // namespace internal
}  // namespace rfs::transform
