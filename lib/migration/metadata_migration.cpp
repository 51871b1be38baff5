#include "rfs/migration/metadata_migration.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/file_util.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/retry.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/blob_envelope.hpp"
#include "rfs/transform/json_transformer.hpp"

namespace rfs::migration {

using opensearch::EncodePathSegment;
using opensearch::OpenSearchClient;
using opensearch::TemplateKind;
namespace {

namespace json = boost::json;

// How many live documents of an index without a stored `_source` keep `_recovery_source`
// (the copy OpenSearch and Elasticsearch 7 keep for replica recovery, within the soft-deletes
// retention), which the worker sends exactly as it would a stored `_source`.
struct RecoverySources {
  uint64_t live = 0;
  uint64_t kept = 0;
};

absl::StatusOr<RecoverySources> CountRecoverySources(const snapshot::SnapshotRepository& repository,
                                                     const snapshot::SnapshotEntry& snapshot,
                                                     const snapshot::IndexMetadata& metadata) {
  RecoverySources out;
  lucene::ShardReaderOptions options;
  options.pass_through_non_json_source = true;
  for (int shard = 0; shard < metadata.number_of_shards; ++shard) {
    RFS_ASSIGN_OR_RETURN(auto reader, lucene::OpenSnapshotShard(repository, snapshot, metadata.name,
                                                                shard, options));
    RFS_ASSIGN_OR_RETURN(auto cursor, reader->OpenAt(0));
    lucene::Document doc;
    for (;;) {
      RFS_ASSIGN_OR_RETURN(bool more, cursor->Next(doc));
      if (!more) break;
      ++out.live;
      if (doc.from_recovery_source) ++out.kept;
    }
  }
  return out;
}

// What evaluate says of an index that keeps no complete `_source`: how its documents migrate
// (docs/sourceless.md), and which fields can and cannot be rebuilt. `recovery`: what the shards
// keep of `_recovery_source` (read only for an index without a stored `_source`).
std::vector<std::string> SourcelessNotes(const snapshot::IndexMetadata& metadata,
                                         const std::optional<RecoverySources>& recovery) {
  using core::StrCat;
  const lucene::IndexSource source = lucene::DescribeIndexSource(metadata);
  if (!source.storage.incomplete()) return {};
  const bool partial = source.storage.mode == lucene::SourceStorage::Mode::kStored;
  const std::string what = StrCat(partial ? "documents keep only part of their _source ("
                                          : "documents have no stored _source (",
                                  source.storage.Describe(), ")");
  std::vector<std::string> notes;
  // The worker sends a document's _recovery_source as it would its _source: exact. Only the
  // documents without one are rebuilt.
  const uint64_t kept = !partial && recovery ? recovery->kept : 0;
  const uint64_t live = recovery ? recovery->live : 0;
  if (kept > 0 && kept == live) {
    notes.push_back(
        StrCat(what, ": they migrate only with --enable-sourceless-migrations; with it, all ", live,
               " live documents are sent exactly from their _recovery_source (the copy "
               "kept for replica recovery), and none is rebuilt"));
    return notes;
  }
  auto plan = lucene::RebuildPlanForIndex(metadata);
  if (!plan.ok() || *plan == nullptr) {
    notes.push_back(StrCat(what, " and the mapping gives no rebuild plan: ",
                           plan.ok() ? "none" : plan.status().message()));
    return notes;
  }
  std::string fields;
  for (const auto& field : (*plan)->fields) {
    fields += StrCat(fields.empty() ? "" : ", ", field.path);
  }
  const std::string rebuilds =
      kept > 0 ? StrCat("which sends ", kept, " of the ", live,
                        " live documents exactly from their _recovery_source (the copy kept for "
                        "replica recovery) and rebuilds the other ",
                        live - kept, " from doc values and stored fields: ")
               : std::string("which rebuilds from doc values and stored fields: ");
  notes.push_back(StrCat(what, ": they migrate only with --enable-sourceless-migrations, ",
                         rebuilds, fields.empty() ? std::string("no field") : fields));
  const std::string of_rebuilt =
      kept > 0 ? StrCat(" (in the ", live - kept, " rebuilt documents)") : std::string();
  for (const auto& line : (*plan)->unrebuildable) {
    if (!partial) notes.push_back(StrCat("cannot be rebuilt", of_rebuilt, ": ", line));
  }
  for (const auto& line : (*plan)->inexact) {
    notes.push_back(StrCat("rebuilt, not always exact", of_rebuilt, ": ", line));
  }
  return notes;
}

using core::StrCat;

std::string Str(json::string_view s) { return std::string(s.data(), s.size()); }

// A trial's aliases point at its own indices: prefixed like them.
void PrefixAliases(json::object& body, const std::string& prefix) {
  json::value* aliases = body.if_contains("aliases");
  if (aliases == nullptr || !aliases->is_object()) return;
  json::object renamed;
  for (const auto& [name, alias] : aliases->as_object()) {
    renamed[prefix + std::string(name)] = alias;
  }
  *aliases = std::move(renamed);
}

constexpr std::array<MetadataOutcome, 9> kOutcomes = {MetadataOutcome::kCreated,
                                                      MetadataOutcome::kWouldCreate,
                                                      MetadataOutcome::kAlreadyExists,
                                                      MetadataOutcome::kSkippedByAllowlist,
                                                      MetadataOutcome::kSkippedSystem,
                                                      MetadataOutcome::kSkippedUnsupported,
                                                      MetadataOutcome::kSkippedByTransform,
                                                      MetadataOutcome::kPartOfDataStream,
                                                      MetadataOutcome::kFailed};

// The "type" of a metadata item in the Java tool's transformer input: ToString's names, but
// "template" for a legacy template.
std::string_view JavaItemType(MetadataItemKind kind) {
  return kind == MetadataItemKind::kLegacyTemplate ? "template" : ToString(kind);
}
constexpr std::array<MetadataItemKind, 5> kKinds = {
    MetadataItemKind::kLegacyTemplate, MetadataItemKind::kComponentTemplate,
    MetadataItemKind::kIndexTemplate, MetadataItemKind::kDataStream, MetadataItemKind::kIndex};

TemplateKind TemplateKindOf(MetadataItemKind kind) {
  switch (kind) {
    case MetadataItemKind::kComponentTemplate:
      return TemplateKind::kComponent;
    case MetadataItemKind::kIndexTemplate:
      return TemplateKind::kIndex;
    default:
      return TemplateKind::kLegacy;
  }
}

// The types translated from Elasticsearch's (docs/es-mapping-compatibility.md) that live in
// OpenSearch plugins: a target without the plugin answers "No handler for type [knn_vector]".
std::string MissingPluginAdvice(std::string_view error) {
  for (const auto& [type, plugin] :
       std::initializer_list<std::pair<std::string_view, std::string_view>>{
           {"knn_vector", "the k-NN plugin (opensearch-knn)"},
           {"xy_shape", "the geospatial plugin (opensearch-geospatial)"},
           {"xy_point", "the geospatial plugin (opensearch-geospatial)"}}) {
    if (error.find(StrCat("No handler for type [", type, "]")) != std::string_view::npos) {
      return StrCat(" -- the target has no `", type, "` type: install ", plugin,
                    " on the target, or remap the field with --transformer-config "
                    "(docs/es-mapping-compatibility.md)");
    }
  }
  return "";
}

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

// The settings object of a body: {settings} for indices and legacy templates,
// {template: {settings}} for component and index templates.
json::object* SettingsOf(json::object& body, MetadataItemKind kind) {
  json::object* holder = &body;
  if (kind == MetadataItemKind::kComponentTemplate || kind == MetadataItemKind::kIndexTemplate) {
    json::value* tmpl = body.if_contains("template");
    if (tmpl == nullptr || !tmpl->is_object()) return nullptr;
    holder = &tmpl->as_object();
  }
  json::value* settings = holder->if_contains("settings");
  if (settings == nullptr || !settings->is_object()) return nullptr;
  return &settings->as_object();
}

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

// The work of one MetadataMigrator::Run().
class MigrationRun {
 public:
  MigrationRun(const snapshot::SnapshotRepository& repository,
               const snapshot::SnapshotEntry& snapshot, OpenSearchClient* client,
               const MetadataMigrationOptions& options, MetadataFailureSource& failure_source)
      : repository_(repository),
        snapshot_(snapshot),
        client_(client),
        options_(options),
        failure_source_(failure_source) {}

  absl::StatusOr<MetadataReport> Execute();

 private:
  // The options checked, the user's transformers loaded, the source and target versions known.
  absl::Status Prepare();
  // Templates and data streams (or only which indices back data streams).
  absl::Status GlobalMetadata();
  // One index of the snapshot: selected, transformed (into one or more), applied.
  absl::Status Index(const std::string& name);
  // The index as the target is to get it: the snapshot's, or the user transformers' variants.
  // nullopt when the transformers skipped or failed it (`item` is then in the report).
  std::optional<std::vector<transform::SourceIndex>> IndexSources(
      const snapshot::IndexMetadata& metadata, MetadataItemReport& item);
  absl::Status Fail(MetadataFailureSource source, absl::Status status) {
    failure_source_ = source;
    return status;
  }
  template <typename Fn>
  auto WithRetries(Fn fn) -> decltype(fn()) {
    return core::RetryTransient(clock_, backoff_,
                                {.max_attempts = std::max(1, options_.max_transient_attempts)}, fn);
  }

  void Templates(const json::object& templates, MetadataItemKind kind);
  // Each data stream, after the templates (one of which must match it on the target).
  void DataStreams(const std::vector<snapshot::DataStream>& streams,
                   const json::object& index_templates);
  // One template (as the snapshot holds it, or as a user transform made it) to the target.
  void TemplateVariant(MetadataItemKind kind, MetadataItemReport item, const std::string& name,
                       const json::object& source);
  // The user transformers' outputs for one item: (name, body) pairs of the item's own type.
  absl::StatusOr<std::vector<std::pair<std::string, json::object>>> UserTransform(
      MetadataItemKind kind, json::object input);
  // Existence on the target or in the output directory.
  absl::StatusOr<bool> Exists(MetadataItemKind kind, const std::string& name);
  // Sets the outcome of a selected, transformed item: exists / would create / create.
  void Apply(MetadataItemReport& item);
  absl::Status Create(MetadataItemReport& item, bool& existed);
  // An index template's components that will not be on the target: removed from composed_of
  // when it allows them to be missing (ES 8.7+), else the item failed (false) with the reason.
  bool ResolveComponents(const json::object& source, MetadataItemReport& item);
  /// The components of an index template that are neither migrated nor on the target; on a
  /// failed lookup, `error` says why and `transient` whether it was a passing fault.
  std::vector<std::string> MissingComponents(const json::object& body, std::string& error,
                                             bool& transient);

  const snapshot::SnapshotRepository& repository_;
  const snapshot::SnapshotEntry& snapshot_;
  OpenSearchClient* client_;
  const MetadataMigrationOptions& options_;
  MetadataFailureSource& failure_source_;
  transform::MetadataTransformOptions transform_;
  MetadataReport report_;
  std::set<std::string> components_on_target_;  // migrated, would be migrated, or existing
  std::map<std::string, std::string> components_failed_;  // selected but failed: why
  std::set<std::string> components_failed_transiently_;
  std::unique_ptr<transform::IJsonTransformer> user_transformer_;
  std::vector<snapshot::DataStream> data_streams_;
  core::SystemClock clock_;
  // Waits between attempts of a transient failure: 200 ms doubling, at most 5 s.
  core::ExponentialBackoff backoff_{std::chrono::milliseconds(200), std::chrono::seconds(5)};
};

absl::StatusOr<MetadataReport> MigrationRun::Execute() {
  report_.mode = options_.mode;
  report_.snapshot = snapshot_.name;
  RFS_RETURN_IF_ERROR(Prepare());
  RFS_RETURN_IF_ERROR(GlobalMetadata());
  for (const std::string& name : repository_.IndicesIn(snapshot_)) {
    if (!options_.include_indices || (options_.only_index && name != *options_.only_index)) {
      continue;
    }
    RFS_RETURN_IF_ERROR(Index(name));
  }
  return std::move(report_);
}

absl::Status MigrationRun::Prepare() {
  if (options_.mode == MetadataMode::kMigrate && client_ == nullptr &&
      options_.output_dir.empty()) {
    return Fail(MetadataFailureSource::kOptions,
                absl::InvalidArgumentError(
                    "migrate needs a target: a cluster (--target-host) or a directory "
                    "(--output-dir)"));
  }
  if (options_.transformer_config) {
    auto loaded = transform::LoadTransformers(*options_.transformer_config);
    if (!loaded.ok()) {
      return Fail(
          MetadataFailureSource::kOptions,
          absl::InvalidArgumentError(StrCat("--transformer-config: ", loaded.status().message())));
    }
    user_transformer_ = *std::move(loaded);
  }
  transform_.multi_type_policy = options_.multi_type_policy;
  transform_.min_replicas = options_.min_replicas;
  transform_.knn_engine = options_.knn_engine;
  if (options_.source_version) {
    transform_.source = *options_.source_version;
  } else {
    auto detected = repository_.DetectSourceVersion(snapshot_);
    if (!detected.ok()) return Fail(MetadataFailureSource::kSnapshot, detected.status());
    transform_.source = *detected;
  }
  report_.source_version = transform_.source.ToString();
  if (client_ != nullptr) {
    auto version = client_->GetVersion();
    if (!version.ok()) return Fail(MetadataFailureSource::kTarget, version.status());
    transform_.target = *version;
    report_.target = version->LongName();
  } else {
    transform_.target = options_.assumed_target_version;
    report_.target =
        options_.output_dir.empty()
            ? StrCat(transform_.target.ToString(), " (assumed)")
            : StrCat("directory ", options_.output_dir, " (as ", transform_.target.ToString(), ")");
  }

  return absl::OkStatus();
}

absl::Status MigrationRun::GlobalMetadata() {
  auto global = options_.include_templates
                    ? repository_.ReadGlobalMetadata(snapshot_)
                    : absl::StatusOr<snapshot::GlobalMetadata>(absl::CancelledError("not asked"));
  if (absl::IsCancelled(global.status())) {
    // Indices only.
  } else if (absl::IsNotFound(global.status())) {
    report_.warnings.push_back(
        StrCat("snapshot ", snapshot_.name,
               " holds no global metadata (taken without include_global_state): no templates "
               "to migrate"));
  } else if (!global.ok()) {
    return Fail(MetadataFailureSource::kSnapshot, global.status());
  } else if (!options_.target_index_prefix.empty()) {
    report_.warnings.push_back(
        StrCat("a trial into indices prefixed '", options_.target_index_prefix,
               "': templates and data streams are not migrated (they would act on the target's own "
               "indices)"));
    data_streams_ = global->data_streams;
  } else {
    Templates(global->legacy_templates, MetadataItemKind::kLegacyTemplate);
    Templates(global->component_templates, MetadataItemKind::kComponentTemplate);
    Templates(global->index_templates, MetadataItemKind::kIndexTemplate);
    data_streams_ = global->data_streams;
    DataStreams(global->data_streams, global->index_templates);
  }
  if (!global.ok() && options_.include_indices) {
    // Which indices are backing indices, when the templates were not asked for.
    auto streams = repository_.ReadDataStreams(snapshot_);
    if (!streams.ok()) return Fail(MetadataFailureSource::kSnapshot, streams.status());
    data_streams_ = *std::move(streams);
  }
  return absl::OkStatus();
}

std::optional<std::vector<transform::SourceIndex>> MigrationRun::IndexSources(
    const snapshot::IndexMetadata& metadata, MetadataItemReport& item) {
  std::vector<transform::SourceIndex> sources;
  if (!user_transformer_) {
    sources.push_back(transform::SourceIndex{metadata.name, metadata.settings, metadata.mappings,
                                             metadata.aliases});
  } else {
    json::object input{{"type", "index"},
                       {"name", metadata.name},
                       {"body", json::object{{"settings", metadata.settings},
                                             {"mappings", metadata.mappings},
                                             {"aliases", metadata.aliases}}}};
    auto variants = UserTransform(MetadataItemKind::kIndex, std::move(input));
    if (!variants.ok() || variants->empty()) {
      item.outcome =
          variants.ok() ? MetadataOutcome::kSkippedByTransform : MetadataOutcome::kFailed;
      if (!variants.ok()) item.error = std::string(variants.status().message());
      report_.items.push_back(std::move(item));
      return std::nullopt;
    }
    for (auto& [variant_name, body] : *variants) {
      auto part = [&](const char* key) {
        const json::value* v = body.if_contains(key);
        return v && v->is_object() ? v->as_object() : json::object();
      };
      sources.push_back(transform::SourceIndex{variant_name, part("settings"), part("mappings"),
                                               part("aliases")});
    }
  }
  return sources;
}

absl::Status MigrationRun::Index(const std::string& name) {
  MetadataItemReport item;
  item.kind = MetadataItemKind::kIndex;
  item.name = item.source_name = name;
  const snapshot::DataStream* stream = snapshot::DataStreamOf(data_streams_, name);
  if (!transform::SelectIndex(options_.index_allowlist, name, stream ? stream->name : "")) {
    item.outcome = options_.index_allowlist.empty() ? MetadataOutcome::kSkippedSystem
                                                    : MetadataOutcome::kSkippedByAllowlist;
    report_.items.push_back(std::move(item));
    return absl::OkStatus();
  }
  if (stream != nullptr) {
    item.outcome = MetadataOutcome::kPartOfDataStream;
    item.notes.push_back(StrCat("backing index of data stream ", stream->name,
                                ": its documents are written to the stream"));
    report_.items.push_back(std::move(item));
    return absl::OkStatus();
  }
  auto metadata = repository_.ReadIndexMetadata(snapshot_, name);
  if (!metadata.ok()) return Fail(MetadataFailureSource::kSnapshot, metadata.status());
  std::optional<std::vector<transform::SourceIndex>> sources = IndexSources(*metadata, item);
  if (!sources) return absl::OkStatus();
  // An index without a stored _source: what its shards keep of _recovery_source decides what
  // the run will do with its documents, so evaluate reads them to say so.
  std::optional<RecoverySources> recovery;
  if (const auto storage = lucene::DescribeIndexSource(*metadata).storage;
      storage.incomplete() && storage.mode != lucene::SourceStorage::Mode::kStored) {
    auto counted = CountRecoverySources(repository_, snapshot_, *metadata);
    if (!counted.ok()) return Fail(MetadataFailureSource::kSnapshot, counted.status());
    recovery = *counted;
  }
  std::vector<transform::TransformedIndex> all;
  bool failed = false;
  for (const transform::SourceIndex& source : *sources) {
    auto transformed = transform::TransformIndex(source, transform_);
    if (!transformed.ok()) {
      MetadataItemReport failed_item = item;
      failed_item.name = source.name;
      failed_item.outcome = MetadataOutcome::kFailed;
      failed_item.error = std::string(transformed.status().message());
      report_.items.push_back(std::move(failed_item));
      failed = true;
      continue;
    }
    for (auto& t : *transformed) all.push_back(std::move(t));
  }
  if (failed && all.empty()) return absl::OkStatus();
  for (auto& t : all) {
    MetadataItemReport target_item;
    target_item.kind = MetadataItemKind::kIndex;
    target_item.name = options_.target_index_prefix + t.name;
    if (!options_.target_index_prefix.empty()) PrefixAliases(t.body, options_.target_index_prefix);
    target_item.source_name = name;
    target_item.dropped_settings = std::move(t.notes.dropped_settings);
    target_item.notes = std::move(t.notes.notes);
    if (metadata->state == "close") {
      target_item.notes.push_back("the index was closed in the snapshot; created open");
    }
    for (std::string& note : SourcelessNotes(*metadata, recovery)) {
      target_item.notes.push_back(std::move(note));
    }
    target_item.body = std::move(t.body);
    Apply(target_item);
    report_.items.push_back(std::move(target_item));
  }
  return absl::OkStatus();
}

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

absl::StatusOr<std::vector<std::pair<std::string, json::object>>> MigrationRun::UserTransform(
    MetadataItemKind kind, json::object input) {
  auto out = user_transformer_->Transform(json::value(std::move(input)));
  if (!out.ok()) {
    return absl::InvalidArgumentError(StrCat("user transform: ", out.status().message()));
  }
  std::vector<const json::value*> items;
  if (out->is_array()) {
    for (const json::value& v : out->as_array()) items.push_back(&v);
  } else if (!out->is_null()) {
    items.push_back(&*out);
  }
  std::vector<std::pair<std::string, json::object>> variants;
  for (const json::value* v : items) {
    const json::object* o = v->if_object();
    const json::value* name = o ? o->if_contains("name") : nullptr;
    const json::value* body = o ? o->if_contains("body") : nullptr;
    const json::value* type = o ? o->if_contains("type") : nullptr;
    if (name == nullptr || !name->is_string() || name->as_string().empty() || body == nullptr ||
        !body->is_object()) {
      return absl::InvalidArgumentError(
          StrCat("user transform: an output is not {\"type\", \"name\", \"body\"}: ",
                 core::JsonText(*v).substr(0, 200)));
    }
    if (type != nullptr && !(type->is_string() && type->as_string() == JavaItemType(kind))) {
      return absl::InvalidArgumentError(StrCat("user transform: a ", JavaItemType(kind), " became ",
                                               core::JsonText(*type), ", which is not supported"));
    }
    variants.emplace_back(Str(name->as_string()), body->as_object());
  }
  return variants;
}

std::vector<std::string> MigrationRun::MissingComponents(const json::object& body,
                                                         std::string& error, bool& transient) {
  std::vector<std::string> missing;
  const json::value* composed = body.if_contains("composed_of");
  if (composed == nullptr || !composed->is_array()) return missing;
  for (const auto& c : composed->as_array()) {
    if (!c.is_string()) continue;
    const std::string name = Str(c.as_string());
    if (components_on_target_.count(name)) continue;
    auto exists = Exists(MetadataItemKind::kComponentTemplate, name);
    if (!exists.ok()) {
      error = std::string(exists.status().message());
      transient = core::IsRetryable(exists.status());
      return {};
    }
    if (*exists) {
      components_on_target_.insert(name);
    } else {
      missing.push_back(name);
    }
  }
  return missing;
}

absl::StatusOr<bool> MigrationRun::Exists(MetadataItemKind kind, const std::string& name) {
  if (client_ != nullptr) {
    if (kind == MetadataItemKind::kIndex) {
      return WithRetries([&] { return client_->IndexExists(name); });
    }
    if (kind == MetadataItemKind::kDataStream) {
      return WithRetries([&] { return client_->DataStreamExists(name); });
    }
    return WithRetries([&] { return client_->TemplateExists(TemplateKindOf(kind), name); });
  }
  if (options_.output_dir.empty()) return false;
  std::error_code ec;
  return std::filesystem::exists(MetadataItemPath(options_.output_dir, kind, name), ec);
}

void MigrationRun::Apply(MetadataItemReport& item) {
  auto exists = Exists(item.kind, item.name);
  if (!exists.ok()) {
    item.outcome = MetadataOutcome::kFailed;
    item.error = std::string(exists.status().message());
    item.transient = core::IsRetryable(exists.status());
    return;
  }
  if (*exists) {
    item.outcome = MetadataOutcome::kAlreadyExists;
    return;
  }
  if (options_.mode == MetadataMode::kEvaluate) {
    item.outcome = MetadataOutcome::kWouldCreate;
    return;
  }
  bool existed = false;
  absl::Status created = Create(item, existed);
  if (!created.ok()) {
    item.outcome = MetadataOutcome::kFailed;
    item.error = std::string(created.message());
    item.error += MissingPluginAdvice(item.error);
    item.transient = core::IsRetryable(created);
    return;
  }
  item.outcome = existed ? MetadataOutcome::kAlreadyExists : MetadataOutcome::kCreated;
}

absl::Status MigrationRun::Create(MetadataItemReport& item, bool& existed) {
  if (client_ == nullptr) {
    const std::string path = MetadataItemPath(options_.output_dir, item.kind, item.name);
    RFS_RETURN_IF_ERROR(
        core::CreateDirectories(std::filesystem::path(path).parent_path().string(), /*sync=*/true));
    return core::WriteFileAtomically(path, core::JsonText(item.body), /*sync=*/true);
  }
  for (int attempt = 0;; ++attempt) {
    absl::Status status;
    if (item.kind == MetadataItemKind::kIndex) {
      auto created = WithRetries([&] { return client_->CreateIndex(item.name, item.body); });
      status = created.status();
      if (created.ok() && !*created) existed = true;
    } else if (item.kind == MetadataItemKind::kDataStream) {
      auto created = WithRetries([&] { return client_->CreateDataStream(item.name); });
      if (created.ok() && !*created) existed = true;
      return created.status();
    } else {
      status = WithRetries(
          [&] { return client_->PutTemplate(TemplateKindOf(item.kind), item.name, item.body); });
    }
    if (status.ok() || !absl::IsInvalidArgument(status)) return status;
    const std::string message(status.message());
    std::vector<std::string> rejected = transform::RejectedSettingsIn(message);
    json::object* settings = SettingsOf(item.body, item.kind);
    bool removed = false;
    if (settings != nullptr && attempt + 1 < options_.max_setting_retries) {
      for (const std::string& key : rejected) {
        if (transform::RemoveSetting(*settings, key)) {
          removed = true;
          const bool is_private =
              message.find(StrCat("private index setting [", key, "]")) != std::string::npos;
          item.dropped_settings.push_back(
              {key, is_private ? "rejected by the target: private setting"
                               : "rejected by the target: unknown or archived setting"});
        }
      }
    }
    if (!removed) return status;
  }
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

MetadataMigrator::MetadataMigrator(const snapshot::SnapshotRepository& repository,
                                   const snapshot::SnapshotEntry& snapshot,
                                   OpenSearchClient* client, MetadataMigrationOptions options)
    : repository_(repository), snapshot_(snapshot), client_(client), options_(std::move(options)) {}

absl::StatusOr<MetadataReport> MetadataMigrator::Run() {
  failure_source_ = MetadataFailureSource::kNone;
  MigrationRun run(repository_, snapshot_, client_, options_, failure_source_);
  return run.Execute();
}

std::string MetadataItemPath(std::string_view output_dir, MetadataItemKind kind,
                             std::string_view name) {
  return StrCat(output_dir, "/.rfs/metadata/", ToString(kind), "/", EncodePathSegment(name),
                ".json");
}

}  // namespace rfs::migration
