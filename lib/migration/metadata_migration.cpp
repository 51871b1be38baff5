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

#include "migration/metadata_migration_internal.hpp"

namespace rfs::migration {

using opensearch::EncodePathSegment;
using opensearch::OpenSearchClient;
using opensearch::TemplateKind;
namespace json = boost::json;

namespace internal {
namespace {

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

}  // namespace

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
  transform_.replica_copies_multiple = options_.replica_copies_multiple;
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
      storage.incomplete() && storage.mode != lucene::SourceStorage::Mode::kStored &&
      repository_.holds_shard_files()) {
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
      target_item.notes.push_back("the index was closed at the source; created open");
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

}  // namespace internal

using core::StrCat;

MetadataMigrator::MetadataMigrator(const snapshot::SnapshotRepository& repository,
                                   const snapshot::SnapshotEntry& snapshot,
                                   OpenSearchClient* client, MetadataMigrationOptions options)
    : repository_(repository), snapshot_(snapshot), client_(client), options_(std::move(options)) {}

absl::StatusOr<MetadataReport> MetadataMigrator::Run() {
  failure_source_ = MetadataFailureSource::kNone;
  internal::MigrationRun run(repository_, snapshot_, client_, options_, failure_source_);
  return run.Execute();
}

std::string MetadataItemPath(std::string_view output_dir, MetadataItemKind kind,
                             std::string_view name) {
  return StrCat(output_dir, "/.rfs/metadata/", ToString(kind), "/", EncodePathSegment(name),
                ".json");
}

}  // namespace rfs::migration
