// Solr backups read as snapshots, and the plan that rebuilds their documents
// (rfs/solr/documents.hpp). How Solr keeps each value (solr/core/src/java/org/apache/solr/
// schema/...): point fields store the number itself (StoredField) and keep single values in
// NUMERIC doc values as they are (floats and doubles as Float.floatToIntBits /
// Double.doubleToLongBits, FloatPointField.toObject) and several in SORTED_NUMERIC in sortable
// form; dates as epoch milliseconds; BoolField stores and indexes "T" / "F"; StrField and the
// text fields store their text; DenseVectorField stores one float per element.
#include "rfs/solr/documents.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include <boost/json.hpp>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/shard_reader.hpp"

namespace rfs::solr {

namespace json = boost::json;
using core::StrCat;

absl::StatusOr<LoadedBackup> LoadBackup(const SolrBackupLocation& location, std::string_view name,
                                        const ReadBackupOptions& options,
                                        const std::string& schema_file) {
  LoadedBackup out;
  RFS_ASSIGN_OR_RETURN(out.backup, location.ReadBackup(name, options));
  if (!schema_file.empty()) {
    std::ifstream in(schema_file, std::ios::binary);
    if (!in) return absl::InvalidArgumentError(StrCat("cannot read the schema file ", schema_file));
    out.schema_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    out.schema_path = schema_file;
  } else {
    auto found = location.ReadSchema(out.backup);
    if (absl::IsNotFound(found.status())) {
      return absl::InvalidArgumentError(
          StrCat("backup ", out.backup.name, " of ", location.repo().description(),
                 " holds no schema (a standalone core backup keeps only the index): give the "
                 "core's schema with --solr-schema FILE"));
    }
    if (!found.ok()) return found.status();
    out.schema_path =
        StrCat(out.backup.zk_folder, "/configs/", out.backup.config_name, "/", found->file);
    out.schema_text = std::move(found->text);
  }
  RFS_ASSIGN_OR_RETURN(out.schema, ParseSchema(out.schema_text, out.schema_path));
  std::set<std::string> names;
  for (const BackupShard& shard : out.backup.shards) {
    RFS_ASSIGN_OR_RETURN(auto directory, location.OpenShardFiles(out.backup, shard.name));
    RFS_ASSIGN_OR_RETURN(auto reader, lucene::ShardReader::Open(std::move(directory)));
    for (size_t s = 0; s < reader->segments().size(); ++s) {
      RFS_ASSIGN_OR_RETURN(auto segment_names, reader->FieldNamesOf(s));
      names.insert(segment_names.begin(), segment_names.end());
    }
  }
  out.index_fields.assign(names.begin(), names.end());
  return out;
}

namespace {

bool IsOneOf(std::string_view c, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), c) != names.end();
}

// How a field of Solr type class `c` is read and printed; false for one whose values cannot be
// given back (`why` says so).
bool Describe(const SolrField& field, const SolrFieldType& type, lucene::RebuildField& out,
              std::string& why) {
  using lucene::RebuildKind;
  const std::string& c = type.class_name;
  if (!field.returned()) {
    why = field.indexed ? "indexed only: Solr does not return its values"
                        : "neither stored nor in doc values";
    return false;
  }
  out.type = c;
  out.multi_valued = field.multi_valued;
  out.stored = field.stored;
  // /select returns stored values when the field is stored, else its doc values.
  out.doc_values = !field.stored && field.doc_values && field.use_doc_values_as_stored;
  const bool trie = c.starts_with("Trie");
  if (IsOneOf(c, {"IntPointField", "LongPointField", "TrieIntField", "TrieLongField"})) {
    out.kind = RebuildKind::kLong;
  } else if (IsOneOf(c, {"FloatPointField", "TrieFloatField"})) {
    out.kind = RebuildKind::kFloat;
    out.raw_float_bits = true;
  } else if (IsOneOf(c, {"DoublePointField", "TrieDoubleField"})) {
    out.kind = RebuildKind::kDouble;
    out.raw_float_bits = true;
  } else if (IsOneOf(c, {"DatePointField", "TrieDateField"})) {
    out.kind = RebuildKind::kDate;
    out.date_format = "iso_instant";
  } else if (c == "BoolField") {
    out.kind = RebuildKind::kBoolean;
  } else if (c == "BinaryField") {
    out.kind = RebuildKind::kBinary;
  } else if (c == "DenseVectorField") {
    // Stored: one float per element. Not stored: the vector files.
    out.kind = field.stored ? RebuildKind::kFloat : RebuildKind::kVector;
    out.multi_valued = true;
    out.doc_values = !field.stored;
    try {
      out.dims =
          std::stoi(type.attributes.count("vectorDimension") ? type.attributes.at("vectorDimension")
                                                             : std::string("0"));
    } catch (const std::exception&) {
      out.dims = 0;
    }
  } else if (IsOneOf(c, {"StrField", "UUIDField", "EnumFieldType", "EnumField"})) {
    out.kind = RebuildKind::kKeyword;
  } else {
    // Text, points as "lat,lon", shapes, currencies and ranges: their stored text.
    out.kind = RebuildKind::kText;
    if (!field.stored) {
      why = StrCat(c, " gives back only stored values, and ", field.name, " is not stored");
      return false;
    }
  }
  if (trie && out.doc_values && field.multi_valued) {
    // Several Trie values live in SORTED_SET doc values as prefix-coded terms.
    why = StrCat(c, " keeps several values only as prefix-coded terms, and ", field.name,
                 " is not stored");
    return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<lucene::SourceRebuildPlan> RebuildPlanFromSchema(
    const SolrSchema& schema, const std::vector<std::string>& index_fields) {
  if (schema.unique_key.empty()) {
    return absl::FailedPreconditionError(StrCat(
        "schema ", schema.name, " declares no uniqueKey: its documents have no id to migrate by"));
  }
  lucene::SourceRebuildPlan plan;
  plan.id_field = schema.unique_key;
  if (schema.FindField("_nest_path_") != nullptr) plan.child_path_field = "_nest_path_";
  std::set<std::string> names;
  for (const SolrField& field : schema.fields) names.insert(field.name);
  for (const std::string& name : index_fields) {
    if (schema.FieldFor(name) != nullptr) names.insert(name);
  }
  for (const std::string& name : names) {
    if (IsInternalField(name)) continue;
    const SolrField* field = schema.FieldFor(name);
    const SolrFieldType* type = field == nullptr ? nullptr : schema.TypeOf(*field);
    if (type == nullptr) continue;
    lucene::RebuildField out;
    out.path = name;
    std::string why;
    if (!Describe(*field, *type, out, why)) {
      plan.unrebuildable.push_back(StrCat(name, ": ", why));
      continue;
    }
    plan.fields.push_back(std::move(out));
  }
  return plan;
}

namespace {

constexpr std::string_view kSolrKey = "solr";

}  // namespace

absl::StatusOr<std::unique_ptr<snapshot::SnapshotRepository>> OpenBackupAsSnapshotRepository(
    std::shared_ptr<const snapshot::ISourceRepo> repo, std::string_view name,
    const ReadBackupOptions& options, const std::string& schema_file) {
  SolrBackupLocation location(repo);
  RFS_ASSIGN_OR_RETURN(LoadedBackup loaded, LoadBackup(location, name, options, schema_file));
  RFS_RETURN_IF_ERROR(RebuildPlanFromSchema(loaded.schema, loaded.index_fields).status());
  const SolrBackup& backup = loaded.backup;

  snapshot::IndexMetadata index;
  index.name = backup.collection;
  index.number_of_shards = static_cast<int>(backup.shards.size());
  index.state = "open";
  index.settings["index.number_of_shards"] = std::to_string(backup.shards.size());
  SchemaMapping mapping = MappingFromSchema(loaded.schema, loaded.index_fields);
  index.mappings = std::move(mapping.mappings);
  // The settings the mapping needs (its analyzers, index.knn for vectors), as a snapshot's
  // index metadata keeps them: under "index.".
  for (const auto& [key, value] : mapping.settings) {
    if (key == "index" && value.is_object()) {
      for (const auto& [name, setting] : value.get_object()) {
        index.settings[StrCat("index.", std::string_view(name))] = setting;
      }
    } else {
      index.settings[StrCat("index.", std::string_view(key))] = value;
    }
  }
  json::array fields;
  for (const std::string& field : loaded.index_fields) fields.emplace_back(field);
  index.raw[kSolrKey] = json::object{{"backup", backup.name},
                                     {"schema_path", loaded.schema_path},
                                     {"schema", loaded.schema_text},
                                     {"index_fields", std::move(fields)}};

  snapshot::SnapshotCatalog catalog;
  catalog.info.name = std::string(name);
  catalog.info.uuid =
      StrCat("solr-backup:", backup.name, "/", backup.collection, "/", backup.backup_id);
  catalog.info.state = "SUCCESS";
  catalog.info.indices = {index.name};
  catalog.info.total_shards = index.number_of_shards;
  catalog.info.successful_shards = index.number_of_shards;
  std::vector<snapshot::ShardSnapshot> shards;
  for (const BackupShard& shard : backup.shards) {
    snapshot::ShardSnapshot& out = shards.emplace_back();
    out.snapshot_name = std::string(name);
    for (const BackupFile& file : shard.files) {
      snapshot::FileInfo& info = out.files.emplace_back();
      info.name = file.blob;
      info.physical_name = file.lucene_name;
      info.length = file.size;
    }
  }
  catalog.shards[index.name] = std::move(shards);
  catalog.indices.push_back(std::move(index));
  catalog.open_shard = [location, backup](std::string_view, int shard,
                                          const snapshot::ShardFilesOptions& files) {
    return location.OpenShardFiles(backup, backup.shards[static_cast<size_t>(shard)].name,
                                   files.verify_checksums);
  };
  return snapshot::SnapshotRepository::FromCatalog(std::move(repo), std::move(catalog));
}

absl::StatusOr<std::shared_ptr<const lucene::SourceRebuildPlan>> RebuildPlanForBackupIndex(
    const snapshot::IndexMetadata& index) {
  const auto* solr = index.raw.if_contains(kSolrKey);
  if (solr == nullptr || !solr->is_object()) return nullptr;
  const json::object& facts = solr->get_object();
  const auto* schema_text = facts.if_contains("schema");
  const auto* schema_path = facts.if_contains("schema_path");
  const auto* index_fields = facts.if_contains("index_fields");
  if (schema_text == nullptr || !schema_text->is_string() || schema_path == nullptr ||
      !schema_path->is_string() || index_fields == nullptr || !index_fields->is_array()) {
    return absl::InvalidArgumentError(
        StrCat("index ", index.name, " names a Solr backup without its schema"));
  }
  RFS_ASSIGN_OR_RETURN(SolrSchema schema,
                       ParseSchema(schema_text->get_string(), schema_path->get_string()));
  std::vector<std::string> names;
  for (const auto& name : index_fields->get_array()) {
    if (name.is_string()) names.emplace_back(name.get_string());
  }
  RFS_ASSIGN_OR_RETURN(lucene::SourceRebuildPlan plan, RebuildPlanFromSchema(schema, names));
  return std::make_shared<const lucene::SourceRebuildPlan>(std::move(plan));
}

}  // namespace rfs::solr
