// MetadataMigrator: moves the templates and index definitions of one snapshot to a target
// cluster before the documents follow, as the Java tool MetadataMigration does.
//
// Order: legacy templates, component templates, index templates, data streams, then indices
// (settings, mappings, aliases), so that templates exist before any index or data stream that
// matches them, and component templates before the index templates composed of them. A data
// stream is created empty on the target (its index template makes its first backing index); the
// snapshot's backing indices are not created as indices: their documents go to the stream. Each
// item is transformed for the target (rfs/transform/metadata_transform.hpp) and then:
//   evaluate  only reads the target (GET /, HEAD per item) and reports what migrate would do;
//   migrate   creates what is missing. Existing templates and indices are never changed and are
//             reported "already exists". A 400 naming an unknown, private or archived setting
//             drops that setting, reports it and retries (bounded).
// Without a client the target is described by `assumed_target_version`: evaluate then reports
// every selected item as would_create (or already_exists when `output_dir` holds it), and
// migrate writes each body to <output_dir>/.rfs/metadata/<kind>/<name>.json (atomically), so the
// embedded default target (a directory) holds the metadata next to the documents.
//
// Items are selected by the allowlists (rfs/transform/index_filter.hpp); templates Elasticsearch
// installs itself (`_meta.managed: true`) count as system templates. Split-policy indices are
// named by transform::TargetIndexForType, as the document migration names them.
//
// Thread safety: one Run() at a time per migrator. The repository, snapshot entry and client
// must outlive the migrator.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "rfs/opensearch/client.hpp"
#include "rfs/snapshot/models.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/transform/index_filter.hpp"
#include "rfs/transform/metadata_transform.hpp"
#include "rfs/transform/type_policy.hpp"

#include "absl/status/statusor.h"

namespace rfs::migration {

enum class MetadataMode { kEvaluate, kMigrate };

enum class MetadataItemKind {
  kLegacyTemplate,
  kComponentTemplate,
  kIndexTemplate,
  kDataStream,
  kIndex
};
/// "legacy_template", "component_template", "index_template", "data_stream", "index".
std::string_view ToString(MetadataItemKind kind);

enum class MetadataOutcome {
  kCreated,             // migrate created it
  kWouldCreate,         // evaluate: migrate would create it
  kAlreadyExists,       // on the target already; left untouched
  kSkippedByAllowlist,  // not selected by the allowlist
  kSkippedSystem,       // a system index or template, not selected explicitly
  kSkippedUnsupported,  // the target cannot hold it (composable templates before ES 7.8)
  kSkippedByTransform,  // a user transform dropped it
  kPartOfDataStream,    // a data stream's backing index: made by the stream, not created itself
  kFailed,              // transform or target rejected it; see error
};
/// "created", "would_create", "already_exists", "skipped_by_allowlist", "skipped_system",
/// "skipped_unsupported", "skipped_by_transform", "part_of_data_stream", "failed".
std::string_view ToString(MetadataOutcome outcome);
/// Every outcome but kFailed.
inline bool IsFine(MetadataOutcome outcome) { return outcome != MetadataOutcome::kFailed; }

struct MetadataItemReport {
  MetadataItemKind kind = MetadataItemKind::kIndex;
  std::string name;         // the name on the target
  std::string source_name;  // the name in the snapshot (differs for split indices)
  MetadataOutcome outcome = MetadataOutcome::kWouldCreate;
  std::vector<transform::DroppedSetting> dropped_settings;
  std::vector<std::string> notes;
  std::string error;  // set when failed
  /// Failed for a fault of the target that outlasted the retries (429, 5xx, a reset): running
  /// again may succeed, unlike a refusal.
  bool transient = false;
  /// The body sent (or that would be sent) to the target; empty for skipped items.
  boost::json::object body;
};

struct MetadataReport {
  std::string snapshot;
  std::string source_version;  // e.g. "ES 6.8"
  std::string target;          // e.g. "OpenSearch 2.19.0", "OS 2.19 (assumed)", a directory
  MetadataMode mode = MetadataMode::kEvaluate;
  std::vector<MetadataItemReport> items;
  /// Run-level remarks, e.g. a snapshot taken without global state (so without templates).
  std::vector<std::string> warnings;

  size_t Count(MetadataOutcome outcome) const;
  size_t Count(MetadataItemKind kind, MetadataOutcome outcome) const;
  /// True when no item failed.
  bool ok() const;
  /// {"mode","snapshot","source_version","target","warnings","items":[{kind,name,source_name,outcome,
  /// dropped_settings:[{key,reason}],notes,error}],"counts":{outcome:n},"ok"}; bodies are
  /// included when `with_bodies`.
  boost::json::object ToJson(bool with_bodies = false) const;
  /// Items grouped by kind, one line each with outcome, dropped settings and notes, then a
  /// summary line.
  std::string ToText() const;
};

struct MetadataMigrationOptions {
  MetadataMode mode = MetadataMode::kEvaluate;
  transform::Allowlist index_allowlist;
  transform::Allowlist index_template_allowlist;
  transform::Allowlist component_template_allowlist;
  transform::MultiTypePolicy multi_type_policy = transform::MultiTypePolicy::kUnion;
  std::optional<int> min_replicas;
  /// See transform::MetadataTransformOptions::replica_copies_multiple.
  int replica_copies_multiple = 1;
  /// An index already on the target fails (`--allow-existing-indexes false`, the Java tool's
  /// default) rather than being left untouched and reported (rfs's default, so that a run can be
  /// repeated). Every other item still goes.
  bool existing_index_fails = false;
  /// Nothing to migrate (no template, data stream or index but those an allowlist or the system
  /// rule left out) fails the run (`--succeed-on-empty false`): a wrong snapshot or allowlist.
  bool empty_fails = false;
  /// The engine of knn_vector fields translated from Elasticsearch's dense_vector.
  transform::KnnEngine knn_engine = transform::KnnEngine::kLucene;
  /// Overrides the version detected from the snapshot (e.g. "ES 6.8" parsed).
  std::optional<core::ClusterVersion> source_version;
  /// The target when there is no client (offline evaluate, directory target).
  core::ClusterVersion assumed_target_version{core::ClusterVersion::Product::kOpenSearch, 2, 19};
  /// Directory target: with no client, migrate writes here (and evaluate checks what exists).
  std::string output_dir;
  /// Create attempts per item that drop a rejected setting and retry.
  int max_setting_retries = 16;
  /// Attempts per request on transient target errors (429, 5xx, timeouts).
  int max_transient_attempts = 4;
  /// What Run covers (RfsWorker migrates the templates as one phase and each index as its own
  /// work item): the templates (and data streams), the indices, and with `only_index` that one
  /// index alone.
  bool include_templates = true;
  bool include_indices = true;
  std::optional<std::string> only_index;
  /// User transforms (the Java tool's --transformer-config format), applied to each selected
  /// template and index as the snapshot holds it, before the transforms for the target version:
  /// {"type": "index"|"template"|"index_template"|"component_template", "name", "body"}, where an
  /// index's body is {"settings" (flat), "mappings" (by type for ES <= 6), "aliases"}. A
  /// transform returns one item, several (one index per mapping type) or none (dropped).
  std::optional<std::string> transformer_config;
  /// A trial run's index prefix (DocumentMigrationOptions::target_index_prefix): indices and
  /// their aliases are created under prefixed names; templates and data streams, which would
  /// act on the target's own indices, are left out.
  std::string target_index_prefix;
};

/// Why Run() returned an error: the snapshot could not be read (exit 5 in the tool) or the
/// target could not be reached or described.
enum class MetadataFailureSource { kNone, kSnapshot, kTarget, kOptions };

class MetadataMigrator {
 public:
  /// `client` may be null (see the file comment).
  MetadataMigrator(const snapshot::SnapshotRepository& repository,
                   const snapshot::SnapshotEntry& snapshot, opensearch::OpenSearchClient* client,
                   MetadataMigrationOptions options);

  /// Migrates or evaluates everything. Per-item failures are items with outcome kFailed; an
  /// error Status means nothing trustworthy could be reported: the snapshot's global or index
  /// metadata is unreadable (failure_source() kSnapshot), the target did not answer GET /
  /// (kTarget), or migrate was asked with neither client nor output_dir (kOptions,
  /// InvalidArgument).
  absl::StatusOr<MetadataReport> Run();

  MetadataFailureSource failure_source() const { return failure_source_; }

 private:
  const snapshot::SnapshotRepository& repository_;
  const snapshot::SnapshotEntry& snapshot_;
  opensearch::OpenSearchClient* client_;
  MetadataMigrationOptions options_;
  MetadataFailureSource failure_source_ = MetadataFailureSource::kNone;
};

/// The file a directory target keeps an item in: <dir>/.rfs/metadata/<kind>/<name>.json (the name
/// percent-encoded as a path segment).
std::string MetadataItemPath(std::string_view output_dir, MetadataItemKind kind,
                             std::string_view name);

/// The transform description of a snapshot's source version and of a target cluster.

}  // namespace rfs::migration
