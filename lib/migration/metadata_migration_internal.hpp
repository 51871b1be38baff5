// MetadataMigrator inside: one run (MigrationRun), by part in metadata_migration.cpp (the
// run, its indices), metadata_templates.cpp (templates, data streams, component templates),
// metadata_apply.cpp (user transforms, existence, creation on the target or in the output
// directory) and metadata_report.cpp (the report).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "rfs/core/backoff.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/core/retry.hpp"
#include "rfs/migration/metadata_migration.hpp"
#include "rfs/transform/json_transformer.hpp"

namespace rfs::migration::internal {

namespace json = boost::json;
using opensearch::OpenSearchClient;

// The "type" of a metadata item in the Java tool's transformer input: ToString's names, but
// "template" for a legacy template.
std::string_view JavaItemType(MetadataItemKind kind);
// Compressed mappings (base64 of CompressedXContent) inside template mappings, decoded in place.
inline std::string Str(json::string_view s) { return std::string(s.data(), s.size()); }

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

}  // namespace rfs::migration::internal
