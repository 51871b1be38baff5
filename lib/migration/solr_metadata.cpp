#include <cctype>

#include <boost/json.hpp>

#include "rfs/core/exit_codes.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/migration/solr_migration.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/solr/backup.hpp"
#include "rfs/solr/documents.hpp"
#include "rfs/solr/schema.hpp"

#include "migration/documents_wiring_internal.hpp"

namespace rfs::migration {

using core::StrCat;
namespace json = boost::json;

absl::StatusOr<std::optional<int>> ParseSolrSourceVersion(std::string_view text) {
  std::string lower;
  for (char c : text)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (!lower.starts_with("solr")) return std::optional<int>();
  std::string_view rest = std::string_view(lower).substr(4);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '_' || rest.front() == '-')) {
    rest.remove_prefix(1);
  }
  int major = 0;
  size_t digits = 0;
  while (digits < rest.size() && digits < 3 &&
         std::isdigit(static_cast<unsigned char>(rest[digits]))) {
    major = major * 10 + (rest[digits] - '0');
    ++digits;
  }
  const std::string_view tail = rest.substr(digits);
  const bool tail_ok = tail.empty() || tail.front() == '.' || tail.front() == '_';
  if (digits == 0 || !tail_ok) {
    return absl::InvalidArgumentError(
        StrCat("'", text, "' is not a Solr version: write it as \"SOLR 9\" (or 6, 7, 8)"));
  }
  if (major < 6 || major > 9) {
    return absl::InvalidArgumentError(
        StrCat("Solr ", major, " backups are not read: Solr 6, 7, 8 and 9 are"));
  }
  return std::optional<int>(major);
}

namespace {

// Merges `from` into `into`, objects key by key.
void MergeObjects(json::object& into, const json::object& from) {
  for (const auto& [key, value] : from) {
    json::value& slot = into[key];
    if (slot.is_object() && value.is_object()) {
      MergeObjects(slot.as_object(), value.as_object());
    } else {
      slot = value;
    }
  }
}

}  // namespace

namespace {

// The backup location, in place: a folder or a cloud URI. The exit code of a failure in `code`.
absl::StatusOr<std::shared_ptr<const snapshot::ISourceRepo>> OpenLocation(
    const RepositoryLocation& location, int* code) {
  auto remote = OpenCloudRepo(location.uri, location);
  if (!remote.ok()) {
    *code = core::kExitUsage;
    return remote.status();
  }
  if (*remote != nullptr) return std::shared_ptr<const snapshot::ISourceRepo>(*std::move(remote));
  std::string folder = location.uri;
  if (folder.starts_with("file://")) folder = folder.substr(7);
  auto local = snapshot::FileSystemRepo::Open(folder);
  if (!local.ok()) {
    *code = core::kExitSnapshotUnreadable;
    return local.status();
  }
  return std::shared_ptr<const snapshot::ISourceRepo>(*std::move(local));
}

}  // namespace

absl::StatusOr<json::object> InspectSolrBackups(const RepositoryLocation& location,
                                                const std::string& backup_name,
                                                const SolrSourceOptions& solr) {
  int code = 0;
  auto repo = OpenLocation(location, &code);
  if (!repo.ok()) return repo.status();
  const solr::SolrBackupLocation backups(*repo);
  if (backup_name.empty()) {
    auto list = backups.ListBackups();
    if (!list.ok()) return list.status();
    json::array out;
    for (const solr::BackupSummary& b : *list) {
      json::array collections, ids;
      for (const std::string& c : b.collections) collections.push_back(json::string(c));
      for (int id : b.backup_ids) ids.push_back(id);
      out.push_back(json::object{{"name", b.name},
                                 {"layout", solr::BackupLayoutName(b.layout)},
                                 {"collections", std::move(collections)},
                                 {"backup_ids", std::move(ids)}});
    }
    return json::object{{"location", (*repo)->description()}, {"backups", std::move(out)}};
  }
  auto backup = backups.ReadBackup(backup_name, {solr.collection, solr.backup_id});
  if (!backup.ok()) return backup.status();
  json::array shards;
  for (const solr::BackupShard& shard : backup->shards) {
    shards.push_back(json::object{{"name", shard.name},
                                  {"range", shard.range},
                                  {"files", static_cast<int64_t>(shard.files.size())},
                                  {"bytes", shard.total_bytes()}});
  }
  auto schema = backups.ReadSchema(*backup);
  if (!schema.ok() && !absl::IsNotFound(schema.status())) return schema.status();
  return json::object{
      {"backup", json::object{{"name", backup->name},
                              {"layout", solr::BackupLayoutName(backup->layout)},
                              {"collection", backup->collection},
                              {"backup_id", backup->backup_id},
                              {"config_name", backup->config_name},
                              {"lucene_version", backup->lucene_version},
                              {"start_time", backup->start_time},
                              {"schema_file", schema.ok() ? schema->file : std::string()},
                              {"shards", std::move(shards)}}}};
}

std::string FormatSolrInspection(const json::object& inspection) {
  const auto text = [](const json::value& v) {
    return v.is_string() ? std::string(v.get_string()) : json::serialize(v);
  };
  std::string out;
  if (const auto* list = inspection.if_contains("backups")) {
    out += StrCat("Solr backups in ", text(inspection.at("location")), ":\n");
    if (list->as_array().empty()) out += "  (none)\n";
    for (const json::value& b : list->as_array()) {
      out += StrCat("  ", text(b.at("name")), "  ", text(b.at("layout")));
      std::string collections;
      for (const json::value& c : b.at("collections").as_array()) {
        collections += StrCat(collections.empty() ? "" : ", ", text(c));
      }
      if (!collections.empty()) out += StrCat("  collection ", collections);
      std::string ids;
      for (const json::value& id : b.at("backup_ids").as_array()) {
        ids += StrCat(ids.empty() ? "" : ", ", text(id));
      }
      if (!ids.empty()) out += StrCat("  backup ids ", ids);
      out += "\n";
    }
    return out;
  }
  const json::object& b = inspection.at("backup").as_object();
  out += StrCat("Solr backup ", text(b.at("name")), " (", text(b.at("layout")), ")\n");
  out += StrCat("  collection: ", text(b.at("collection")), "\n");
  if (b.at("backup_id").as_int64() >= 0)
    out += StrCat("  backup id: ", text(b.at("backup_id")), "\n");
  for (const char* key : {"config_name", "lucene_version", "start_time", "schema_file"}) {
    if (!b.at(key).as_string().empty()) out += StrCat("  ", key, ": ", text(b.at(key)), "\n");
  }
  out += "  shards:\n";
  for (const json::value& shard : b.at("shards").as_array()) {
    out += StrCat("    ", text(shard.at("name")), "  ", text(shard.at("files")), " files, ",
                  text(shard.at("bytes")), " bytes");
    if (!shard.at("range").as_string().empty()) out += StrCat("  range ", text(shard.at("range")));
    out += "\n";
  }
  return out;
}

namespace {

// The collection's index on the target: its settings and mappings, then created (migrate), or
// whether it would be (evaluate). A failed creation is the item's error; a failed lookup, the
// status returned.
absl::Status ApplySolrIndex(const MetadataMigrationOptions& run, const solr::SolrBackup& backup,
                            const solr::SchemaMapping& mapping,
                            opensearch::OpenSearchClient* client, MetadataItemReport& item) {
  json::object settings{
      {"index", json::object{{"number_of_shards", static_cast<int64_t>(backup.shards.size())}}}};
  if (run.min_replicas) {
    settings["index"].as_object()["number_of_replicas"] = static_cast<int64_t>(*run.min_replicas);
  }
  MergeObjects(settings, mapping.settings);
  item.body = json::object{{"settings", std::move(settings)}, {"mappings", mapping.mappings}};
  if (client == nullptr) {
    item.outcome = MetadataOutcome::kWouldCreate;
  } else if (run.mode == MetadataMode::kEvaluate) {
    auto exists = client->IndexExists(item.name);
    if (!exists.ok()) return exists.status();
    item.outcome = *exists ? MetadataOutcome::kAlreadyExists : MetadataOutcome::kWouldCreate;
  } else {
    auto created = client->CreateIndex(item.name, item.body);
    if (!created.ok()) {
      item.outcome = MetadataOutcome::kFailed;
      item.error = std::string(created.status().message());
    } else {
      item.outcome = *created ? MetadataOutcome::kCreated : MetadataOutcome::kAlreadyExists;
    }
  }
  return absl::OkStatus();
}

}  // namespace

MetadataToolResult RunSolrMetadataMigration(MetadataToolOptions options,
                                            const SolrSourceOptions& solr) {
  MetadataToolResult result;
  auto fail = [&](absl::Status status, int code) {
    result.status = std::move(status);
    result.exit_code = code;
    return std::move(result);
  };
  const MetadataMigrationOptions& run = options.migration;
  if (options.snapshot_name.empty()) {
    return fail(absl::InvalidArgumentError(
                    "a Solr source needs --snapshot-name: the name of the backup to read"),
                core::kExitUsage);
  }
  if (run.mode == MetadataMode::kMigrate && !options.target) {
    return fail(absl::InvalidArgumentError("migrating a Solr backup needs --target-host URL"),
                core::kExitUsage);
  }
  auto cluster = internal::OpenMetadataTarget(options.target);
  if (!cluster.ok()) return fail(cluster.status(), core::kExitUsage);
  opensearch::OpenSearchClient* const client = cluster->client.get();
  int open_code = 0;
  auto repo = OpenLocation(options.repository, &open_code);
  if (!repo.ok()) return fail(repo.status(), open_code);
  const solr::SolrBackupLocation location(*repo);
  auto loaded = solr::LoadBackup(location, options.snapshot_name, {solr.collection, solr.backup_id},
                                 solr.schema_file);
  if (!loaded.ok()) {
    return fail(loaded.status(), absl::IsInvalidArgument(loaded.status())
                                     ? core::kExitUsage
                                     : core::kExitSnapshotUnreadable);
  }
  const solr::SolrBackup* backup = &loaded->backup;
  const solr::SchemaMapping mapping = solr::MappingFromSchema(loaded->schema, loaded->index_fields);

  MetadataReport report;
  report.mode = run.mode;
  report.snapshot = backup->backup_id >= 0
                        ? StrCat(backup->name, " (backup id ", backup->backup_id, ")")
                        : backup->name;
  report.source_version = StrCat("SOLR ", solr.major);
  if (client != nullptr) {
    auto version = client->GetVersion();
    if (!version.ok()) return fail(version.status(), core::kExitFailure);
    report.target = version->LongName();
  } else {
    report.target = StrCat(run.assumed_target_version.ToString(), " (assumed)");
  }
  if (run.transformer_config) {
    report.warnings.push_back("--transformer-config is not applied to Solr sources");
  }

  MetadataItemReport item;
  item.kind = MetadataItemKind::kIndex;
  item.source_name = backup->collection;
  item.name = run.target_index_prefix + backup->collection;
  item.notes = mapping.decisions;
  for (const std::string& lost : mapping.unrebuildable)
    item.notes.push_back("not migrated: " + lost);
  if (!run.index_allowlist.empty() && !run.index_allowlist.Matches(backup->collection)) {
    item.outcome = MetadataOutcome::kSkippedByAllowlist;
    item.notes.clear();
    report.items.push_back(std::move(item));
  } else {
    if (absl::Status applied = ApplySolrIndex(run, *backup, mapping, client, item); !applied.ok()) {
      return fail(applied, core::kExitFailure);
    }
    report.items.push_back(std::move(item));
  }
  result.exit_code = report.ok() ? 0 : core::kExitFailure;
  result.report = std::move(report);
  return result;
}

}  // namespace rfs::migration
