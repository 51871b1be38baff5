#include "rfs/lucene/snapshot_shard.hpp"

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/rebuild/rebuilder_internal.hpp"

namespace rfs::lucene {

namespace {
// OpenSearch version ids carry this bit (Elasticsearch ids never do).
constexpr int64_t kOpenSearchMask = 0x08000000;
}  // namespace

absl::StatusOr<std::unique_ptr<ShardReader>> OpenSnapshotShard(
    const snapshot::SnapshotRepository& repository, const snapshot::SnapshotEntry& snapshot,
    std::string_view index, int shard, ShardReaderOptions options) {
  const std::string context =
      core::StrCat("index ", index, " shard ", shard, " of snapshot ", snapshot.name);
  auto directory = repository.OpenShardFiles(snapshot, index, shard);
  if (!directory.ok()) return core::WithContext(directory.status(), context);
  // A snapshot lists exactly one commit; open that one rather than the newest by name (A.6).
  if (options.segments_file.empty()) {
    for (const auto& name : (*directory)->ListFiles()) {
      if (name.starts_with("segments_")) options.segments_file = name;
    }
  }
  auto reader = ShardReader::Open(*std::move(directory), std::move(options));
  if (!reader.ok()) return core::WithContext(reader.status(), context);
  return reader;
}

std::optional<std::string> IndexMappingType(const snapshot::IndexMetadata& index) {
  // Version ids below 7.0.0 (7000099) are typed indices; OpenSearch ids carry bit 0x08000000.
  const bool typed = index.version_created > 0 && (index.version_created & kOpenSearchMask) == 0 &&
                     index.version_created < 7000000;
  if (!typed || index.mappings.size() != 1) return std::nullopt;
  return std::string(index.mappings.begin()->key());
}

bool DocValuesByDefault(const snapshot::IndexMetadata& index) {
  // Elasticsearch 1.x kept doc values only where the mapping asked (version ids below 2.0.0);
  // OpenSearch ids carry bit 0x08000000.
  return index.version_created <= 0 || (index.version_created & kOpenSearchMask) != 0 ||
         index.version_created >= 2000000;
}

namespace {

// OpenSearch k-NN's derived vector source: on where `index.knn.derived_source.enabled` says so,
// and by default for k-NN indices created by OpenSearch 3.0 or later.
bool KnnDerivedSource(const snapshot::IndexMetadata& index) {
  if (internal::IndexSetting(index.settings, "index.knn") != "true") return false;
  const std::string derived =
      internal::IndexSetting(index.settings, "index.knn.derived_source.enabled");
  if (!derived.empty()) return derived == "true";
  const bool opensearch = (index.version_created & kOpenSearchMask) != 0;
  return opensearch && (index.version_created ^ kOpenSearchMask) >= 3000000;
}

void AddKnnVectorPaths(const boost::json::object& mapping, const std::string& prefix,
                       std::vector<std::string>& out) {
  const auto* properties = mapping.if_contains("properties");
  if (properties == nullptr || !properties->is_object()) return;
  for (const auto& [key, value] : properties->get_object()) {
    if (!value.is_object()) continue;
    const std::string path =
        prefix.empty() ? std::string(key) : core::StrCat(prefix, ".", std::string_view(key));
    const auto* type = value.get_object().if_contains("type");
    if (type != nullptr && type->is_string() && type->get_string() == "knn_vector") {
      out.push_back(path);
    } else {
      AddKnnVectorPaths(value.get_object(), path, out);
    }
  }
}

}  // namespace

IndexSource DescribeIndexSource(const snapshot::IndexMetadata& index) {
  IndexSource out;
  const std::string type = IndexMappingType(index).value_or("");
  if (const auto* typed = index.mappings.if_contains(type); typed && typed->is_object()) {
    out.mapping = typed->get_object();
  } else if (!index.mappings.empty() && index.mappings.begin()->value().is_object()) {
    // Typeless indices keep one entry ("_doc" or the mapping itself, by version).
    const auto& first = index.mappings.begin()->value().get_object();
    out.mapping =
        first.contains("properties") || first.contains("_source") ? first : index.mappings;
  }
  if (out.mapping.empty() ||
      (!out.mapping.contains("properties") && !out.mapping.contains("_source"))) {
    out.mapping = index.mappings;
  }
  out.storage = DescribeSourceStorage(out.mapping, index.settings);
  if (KnnDerivedSource(index)) {
    // The k-NN plugin keeps vectors out of the stored _source and puts them back when read.
    AddKnnVectorPaths(out.mapping, "", out.storage.excludes);
  }
  return out;
}

RebuildPlanOptions RebuildPlanOptionsForIndex(const snapshot::IndexMetadata& index,
                                              const SourceStorage& source) {
  const bool elasticsearch =
      index.version_created > 0 && (index.version_created & kOpenSearchMask) == 0;
  RebuildPlanOptions options;
  options.doc_values_by_default = DocValuesByDefault(index);
  // Elasticsearch writes dense_vector floats in binary doc values little-endian from 8.9.0
  // (version id 8090099).
  options.little_endian_binary_vectors = elasticsearch && index.version_created >= 8090099;
  // Elasticsearch 7.13 made strict_date_optional_time_nanos the default format of date_nanos,
  // for existing indices too (elastic/elasticsearch#70463); OpenSearch kept the millisecond one.
  options.date_nanos_prints_nanos = elasticsearch;
  // Elasticsearch 8's synthetic source stores a text field that has no keyword sub-field to
  // rebuild it from, whatever its mapping says of `store`.
  options.text_stored_by_default = elasticsearch && source.mode == SourceStorage::Mode::kSynthetic;
  // Elasticsearch 8.19's logsdb keeps arrays as sent, in `<field>.offsets` companions.
  options.array_offsets = options.text_stored_by_default;
  return options;
}

absl::StatusOr<std::shared_ptr<const SourceRebuildPlan>> RebuildPlanForIndex(
    const snapshot::IndexMetadata& index) {
  const IndexSource source = DescribeIndexSource(index);
  if (!source.storage.incomplete()) return nullptr;
  RFS_ASSIGN_OR_RETURN(SourceRebuildPlan plan,
                       SourceRebuildPlan::FromMapping(
                           source.mapping, RebuildPlanOptionsForIndex(index, source.storage)));
  // A stored but filtered _source is completed with the fields the filter left out.
  if (source.storage.mode == SourceStorage::Mode::kStored) {
    RestrictToLeftOutFields(source.storage, plan);
  }
  return std::make_shared<const SourceRebuildPlan>(std::move(plan));
}

}  // namespace rfs::lucene
