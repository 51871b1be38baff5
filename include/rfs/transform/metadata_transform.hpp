// Version transforms of index metadata and templates: what a snapshot of Elasticsearch 1.x-8.x or
// OpenSearch 1.x-3.x holds, rewritten into bodies that an OpenSearch (or Elasticsearch 7+) target
// accepts on create. MetadataMigrator (rfs/reindex/metadata_migration.hpp) applies them; they are
// pure functions on boost::json values so each rule is testable on its own.
//
// Settings: the snapshot's flat keys ("index.number_of_shards") are nested ({"index":
// {"number_of_shards": ...}}), numbered keys of ES <= 5 lists ("x.0", "x.1") become arrays, and
// settings no target accepts on create are dropped and reported: internal/private ones the
// source cluster set itself (uuid, creation date, versions, resize/shrink sources, initial
// recovery), settings removed in later versions (index.mapper.dynamic, index.mapping.single_type),
// Elasticsearch-only features for OpenSearch targets (ILM, x-pack, data tiers, frozen and
// time-series indices) and write blocks that would stop the document migration.
//
// Mappings: Elasticsearch <= 6 indices keep one mapping per type ({"<type>": {...}}); targets
// are typeless, so the type level is removed. `_default_` is dropped; meta fields and parameters
// later versions removed (`_all`, `include_in_all`, `_field_names`, `_timestamp`, `_ttl`,
// `_parent`, `_uid`, ...) are dropped and reported; ES 1.x/2.x `string` fields become `text` or
// `keyword`. Several types are merged (union) or split into "<index>_<type>" indices
// (type_policy.hpp, the same naming the document migration uses).
//
// Elasticsearch-only mapping features (dense_vector, flattened, runtime fields, time series
// parameters, ...) are translated, dropped or refused for OpenSearch targets by the table of
// es_mapping_rules.hpp, wherever a mapping appears; a refused field fails its index or template
// (InvalidArgument naming the field, the type and --transformer-config).
//
// Templates: legacy templates get `index_patterns` for ES 5's `template`, typed mappings
// unwrapped and settings cleaned; component and index templates get the same mapping and
// settings cleaning and lose the Elasticsearch-only fields OpenSearch rejects.
//
// Thread safety: every function is pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "rfs/core/version.hpp"
#include "rfs/transform/es_mapping_rules.hpp"
#include "rfs/transform/type_policy.hpp"

#include "absl/status/statusor.h"

namespace rfs::transform {

/// A setting removed from a body, and why.
struct DroppedSetting {
  std::string key;  // flat, e.g. "index.version.created"
  std::string reason;
};

/// What a transform changed besides the plain reshaping.
struct TransformNotes {
  std::vector<DroppedSetting> dropped_settings;
  /// Mapping and template changes, e.g. "mapping type [doc] removed", "`_all` dropped".
  std::vector<std::string> notes;
  /// Fields the target cannot hold (es_mapping_rules.hpp), one line each: the index or template
  /// is refused with them.
  std::vector<std::string> refused;
  /// A dense_vector became an indexed knn_vector: `index.knn: true` is added to the settings.
  bool needs_knn = false;
};

struct MetadataTransformOptions {
  core::ClusterVersion source{core::ClusterVersion::Product::kElasticsearch, 7, 10};
  core::ClusterVersion target;
  MultiTypePolicy multi_type_policy = MultiTypePolicy::kUnion;
  /// Raise index.number_of_replicas to at least this (indices and templates that set it).
  std::optional<int> min_replicas;
  /// Raise index.number_of_replicas (where it is set, after min_replicas) so that the copies of
  /// each shard, replicas + 1, are a multiple of this: the number of zones a target with forced
  /// awareness spreads them over (`--cluster-awareness-attributes`, as the Java tool's).
  int replica_copies_multiple = 1;
  /// The engine of knn_vector fields translated from dense_vector (`--knn-engine`).
  KnnEngine knn_engine = KnnEngine::kLucene;
};

/// One index as the snapshot describes it (snapshot::IndexMetadata's JSON parts).
struct SourceIndex {
  std::string name;
  boost::json::object settings;  // flat keys
  boost::json::object mappings;  // type name -> mapping ("_doc" for ES 7+)
  boost::json::object aliases;
};

/// One index to create on the target.
struct TransformedIndex {
  std::string name;  // the target index name
  /// The source mapping type it holds with the split policy ("" otherwise).
  std::string source_type;
  boost::json::object body;  // {"settings", "mappings", "aliases"}
  TransformNotes notes;
};

/// A source index -> the target indices to create: one, or one per type with the split policy
/// (named by TargetIndexForType with the number of mapping entries, as the document migration
/// names them). InvalidArgument naming the field and types when union finds a field mapped
/// differently by two types.
absl::StatusOr<std::vector<TransformedIndex>> TransformIndex(
    const SourceIndex& index, const MetadataTransformOptions& options);

/// Flat or nested settings -> nested settings for the target, dropping (into `notes`) what the
/// target does not accept on create. Keys without the "index." prefix are given it.
boost::json::object TransformSettings(const boost::json::object& settings,
                                      const MetadataTransformOptions& options,
                                      TransformNotes& notes);

/// The reason a flat setting key is never sent to the target, or nullopt to keep it.
std::optional<std::string> DropReason(std::string_view key, std::string_view value,
                                      const MetadataTransformOptions& options);

/// One typeless mapping (the content of a type, or of an ES 7+ mapping) cleaned for the target:
/// removed meta fields and parameters dropped, `string` converted. Reports into `notes`.
boost::json::object CleanMapping(const boost::json::object& mapping,
                                 const MetadataTransformOptions& options, TransformNotes& notes);

/// Mappings as templates and index metadata carry them -- an array of {"<type>": mapping}, an
/// object {"<type>": mapping, ...}, or already typeless -- as (type, mapping) pairs; typeless
/// mappings come back as one pair with an empty type.
std::vector<std::pair<std::string, boost::json::object>> SplitMappingTypes(
    const boost::json::value& mappings);

/// A template body for the target.
struct TransformedTemplate {
  boost::json::object body;
  TransformNotes notes;
};

/// Legacy (`_template`) template: `template` -> `index_patterns`, mapping types unwrapped (several
/// types are merged; a conflicting field is InvalidArgument), settings cleaned.
absl::StatusOr<TransformedTemplate> TransformLegacyTemplate(
    std::string_view name, const boost::json::object& source,
    const MetadataTransformOptions& options);
/// Component template: {template: {settings, mappings, aliases}, version, _meta}.
absl::StatusOr<TransformedTemplate> TransformComponentTemplate(
    std::string_view name, const boost::json::object& source,
    const MetadataTransformOptions& options);
/// Composable index template: index_patterns, template, composed_of, priority, version, _meta,
/// data_stream; Elasticsearch-only fields (allow_auto_create, ignore_missing_component_templates,
/// deprecated, lifecycle) dropped and reported.
absl::StatusOr<TransformedTemplate> TransformIndexTemplate(std::string_view name,
                                                           const boost::json::object& source,
                                                           const MetadataTransformOptions& options);

/// The settings a target's 400 names as unacceptable: "unknown setting [x]", "private index
/// setting [x] can not be set explicitly", "archived setting [x]" (each distinct key once).
std::vector<std::string> RejectedSettingsIn(std::string_view error_message);

/// Removes flat `key` ("index.mapper.dynamic") from nested or flat `settings`, also when given
/// without the "index." prefix; prunes objects it empties. True when something was removed.
bool RemoveSetting(boost::json::object& settings, std::string_view key);

}  // namespace rfs::transform
