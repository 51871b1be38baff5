// Backups written by a real Solr 9 (the ctest fixture real_solr: scripts/local-cluster's
// SolrCloud node, its backups in <RFS_REAL_NODES_DIR>/solr/repo) and read by rfs::solr: the
// incremental layout with two backup points, the full layout, and a standalone core backup of
// the replication handler, each shard's files checked against the checksums the backup records
// and opened as the Lucene commit Solr wrote, with as many live documents as Solr counts, from the
// folder and from S3 (s3rver); and MetadataMigration's index made of a backed-up schema on a real
// OpenSearch.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/shard_reader.hpp"
#include "rfs/migration/solr_migration.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/solr/backup.hpp"
#include "rfs/solr/schema.hpp"

#include "support/real_node.hpp"
#include "support/s3_server.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::solr::BackupLayout;
using rfs::solr::SolrBackupLocation;

constexpr const char* kCollection = "rfs_books";

// Documents of several kinds, in batches committed one by one (a segment each): multi-valued,
// dynamic and copied fields, doc-values-only fields, child documents, a dense vector. Written as
// text: Boost.JSON prints 1.5 as 1.5E0, which Solr's JSON parser refuses.
std::string Batch(int batch) {
  std::string docs = "[";
  for (int i = 0; i < 6; ++i) {
    const std::string id = "b" + std::to_string(batch) + "-" + std::to_string(i);
    if (i > 0) docs += ",";
    docs += "{\"id\":\"" + id + "\",\"title_t\":\"Title " + id +
            "\",\"tags_ss\":[\"z\",\"a\",\"z\"],\"n_i\":" + std::to_string(batch * 100 + i) +
            ",\"price_d\":" + std::to_string(i) + ".5,\"when_dt\":\"2020-01-0" +
            std::to_string(1 + i) +
            "T03:04:05.678Z\",\"flag_b\":" + (i % 2 == 0 ? "true" : "false") +
            ",\"codes_sdv\":[\"y\",\"x\",\"y\"],\"vec_v4\":[1.0,2.0,3.0," + std::to_string(i + 1) +
            ".5]";
    if (i == 0) {
      docs += ",\"_childDocuments_\":[{\"id\":\"" + id + "-c1\",\"n_i\":1},{\"id\":\"" + id +
              "-c2\",\"n_i\":2}]";
    }
    docs += "}";
  }
  return docs + "]";
}

json::value Admin(rfs::test::RealNode& solr, const std::string& query) {
  return solr.Ok("GET", "/solr/admin/collections?wt=json&" + query);
}

// Live documents Solr counts in one shard (children included: q=*:* matches them too).
int64_t SolrShardCount(rfs::test::RealNode& solr, const std::string& shard) {
  const json::value answer = solr.Ok(
      "GET", std::string("/solr/") + kCollection + "/select?q=*:*&rows=0&wt=json&shards=" + shard);
  return answer.at("response").at("numFound").to_number<int64_t>();
}

// Opens every file of `shard` with checksum verification, reads it whole, then opens the Lucene
// commit and returns its live documents, read through a cursor (Solr's documents have no `_id`,
// so the cursor passes over each, as over nested children).
int64_t ReadShard(const SolrBackupLocation& location, const rfs::solr::SolrBackup& backup,
                  const std::string& shard) {
  auto directory = location.OpenShardFiles(backup, shard, /*verify_checksums=*/true);
  INFO(backup.name << " " << shard << ": " << directory.status().ToString());
  REQUIRE(directory.ok());
  for (const std::string& name : (*directory)->ListFiles()) {
    auto file = (*directory)->OpenFile(name);
    INFO(name << ": " << file.status().ToString());
    REQUIRE(file.ok());
    REQUIRE(rfs::core::ReadRange(**file, 0, (*file)->size()).ok());
  }
  auto reader = rfs::lucene::ShardReader::Open(*directory);
  INFO(reader.status().ToString());
  REQUIRE(reader.ok());
  int64_t live = 0;
  for (size_t s = 0; s < (*reader)->segments().size(); ++s) {
    auto docs = (*reader)->LiveDocsOf(s);
    REQUIRE(docs.ok());
    for (bool l : *docs) live += l ? 1 : 0;
  }
  auto cursor = (*reader)->OpenAt(0);
  REQUIRE(cursor.ok());
  rfs::lucene::Document doc;
  for (;;) {
    auto more = (*cursor)->Next(doc);
    INFO(more.status().ToString());
    REQUIRE(more.ok());
    if (!*more) break;
  }
  CHECK(static_cast<int64_t>((*cursor)->stats().nested_skipped) == live);
  return live;
}

TEST_CASE("rfs reads the incremental, full and core backups a real Solr 9 writes", "[solr]") {
  rfs::test::RealNode solr("solr");
  const fs::path repo = solr.repo_path();
  // Only this case's backups: the location is listed whole below.
  for (const auto& old : fs::directory_iterator(repo)) fs::remove_all(old.path());
  solr.Send("GET", std::string("/solr/admin/collections?action=DELETE&name=") + kCollection);
  Admin(solr, std::string("action=CREATE&numShards=2&replicationFactor=1&name=") + kCollection);
  solr.Ok("POST", std::string("/solr/") + kCollection + "/schema",
          R"({"add-copy-field":{"source":"title_t","dest":"all_txt"}})");
  const std::string update = std::string("/solr/") + kCollection + "/update?commit=true&wt=json";
  solr.Ok("POST", update, Batch(1));
  solr.Ok("POST", update, Batch(2));
  solr.Ok("POST", update, R"({"delete":{"id":"b1-3"}})");
  const std::string location_param = "&location=" + repo.string();
  Admin(solr, std::string("action=BACKUP&name=inc&collection=") + kCollection + location_param);
  const int64_t first_shard1 = SolrShardCount(solr, "shard1");
  const int64_t first_shard2 = SolrShardCount(solr, "shard2");
  solr.Ok("POST", update, Batch(3));
  Admin(solr, std::string("action=BACKUP&name=inc&collection=") + kCollection + location_param);
  Admin(solr, std::string("action=BACKUP&name=full&incremental=false&collection=") + kCollection +
                  location_param);
  const int64_t shard1 = SolrShardCount(solr, "shard1");
  const int64_t shard2 = SolrShardCount(solr, "shard2");
  CHECK(shard1 + shard2 == 3 * 8 - 1);

  // A standalone core backup of shard1's core through the replication handler (asynchronous:
  // its details say when it is done).
  const json::value state = Admin(solr, "action=CLUSTERSTATUS");
  const json::object& replicas = state.at("cluster")
                                     .at("collections")
                                     .at(kCollection)
                                     .at("shards")
                                     .at("shard1")
                                     .at("replicas")
                                     .as_object();
  REQUIRE(replicas.size() == 1);
  const std::string core(replicas.begin()->value().at("core").as_string());
  solr.Ok("GET",
          "/solr/" + core + "/replication?command=backup&name=core1&wt=json" + location_param);
  bool done = false;
  for (int i = 0; i < 100 && !done; ++i) {
    const json::value details =
        solr.Ok("GET", "/solr/" + core + "/replication?command=details&wt=json");
    const auto* backup = details.at("details").as_object().if_contains("backup");
    done = backup != nullptr && backup->is_object() && backup->as_object().contains("status") &&
           backup->at("status").as_string() == "success";
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(done);

  auto repo_handle = rfs::snapshot::FileSystemRepo::Open(repo.string());
  REQUIRE(repo_handle.ok());
  const SolrBackupLocation location(*repo_handle);
  auto list = location.ListBackups();
  INFO(list.status().ToString());
  REQUIRE(list.ok());
  REQUIRE(list->size() == 3);
  CHECK((*list)[0].name == "full");
  CHECK((*list)[0].layout == BackupLayout::kFull);
  CHECK((*list)[1].name == "inc");
  CHECK((*list)[1].layout == BackupLayout::kIncremental);
  CHECK((*list)[1].collections == std::vector<std::string>{kCollection});
  CHECK((*list)[1].backup_ids == std::vector<int>{0, 1});
  CHECK((*list)[2].name == "snapshot.core1");
  CHECK((*list)[2].layout == BackupLayout::kCore);

  auto newest = location.ReadBackup("inc");
  INFO(newest.status().ToString());
  REQUIRE(newest.ok());
  CHECK(newest->backup_id == 1);
  CHECK(newest->collection == kCollection);
  CHECK(newest->lucene_version.starts_with("9."));
  REQUIRE(newest->shards.size() == 2);
  CHECK(newest->shards[0].range == "80000000-ffffffff");
  CHECK(ReadShard(location, *newest, "shard1") == shard1);
  CHECK(ReadShard(location, *newest, "shard2") == shard2);
  auto schema = location.ReadSchema(*newest);
  REQUIRE(schema.ok());
  CHECK(schema->file == "managed-schema.xml");
  // The copy field added through the Schema API is in the backed-up schema.
  CHECK(schema->text.find("all_txt") != std::string::npos);
  // Solr writes the schema back after a Schema API change; rfs reads it and maps every field.
  auto parsed = rfs::solr::ParseSchema(schema->text, schema->file);
  INFO(parsed.status().ToString());
  REQUIRE(parsed.ok());
  CHECK(parsed->unique_key == "id");
  REQUIRE(parsed->copy_fields.size() == 1);
  CHECK(parsed->copy_fields[0].dest == "all_txt");
  const rfs::solr::SchemaMapping mapping = rfs::solr::MappingFromSchema(*parsed);
  CHECK(mapping.mappings.at("properties").as_object().contains("id"));
  // Every dynamic field but the vector one (mapped by name instead), and the child documents'.
  CHECK(mapping.mappings.at("dynamic_templates").as_array().size() ==
        parsed->dynamic_fields.size());

  auto first = location.ReadBackup("inc", {.backup_id = 0});
  REQUIRE(first.ok());
  CHECK(ReadShard(location, *first, "shard1") == first_shard1);
  CHECK(ReadShard(location, *first, "shard2") == first_shard2);

  auto full = location.ReadBackup("full");
  INFO(full.status().ToString());
  REQUIRE(full.ok());
  CHECK(full->layout == BackupLayout::kFull);
  CHECK(full->collection == kCollection);
  REQUIRE(full->shards.size() == 2);
  CHECK(ReadShard(location, *full, "shard1") == shard1);
  CHECK(ReadShard(location, *full, "shard2") == shard2);
  CHECK(location.ReadSchema(*full).ok());

  auto core_backup = location.ReadBackup("core1");
  INFO(core_backup.status().ToString());
  REQUIRE(core_backup.ok());
  CHECK(core_backup->layout == BackupLayout::kCore);
  CHECK(ReadShard(location, *core_backup, "core1") == shard1);

  // The same backups read in place from S3 (s3rver), checksums and all.
  rfs::test::S3Server server("rfs-solr");
  REQUIRE(server.Upload(repo, "backups/") > 50);
  rfs::s3::S3Options s3;
  s3.endpoint = server.endpoint();
  s3.region = "us-east-1";
  s3.credentials = rfs::test::S3Server::Credentials();
  auto remote = rfs::s3::S3Repo::Open("s3://rfs-solr/backups", s3);
  INFO(remote.status().ToString());
  REQUIRE(remote.ok());
  const SolrBackupLocation in_s3(*remote);
  auto s3_list = in_s3.ListBackups();
  INFO(s3_list.status().ToString());
  REQUIRE(s3_list.ok());
  CHECK(s3_list->size() == 3);
  auto s3_newest = in_s3.ReadBackup("inc");
  INFO(s3_newest.status().ToString());
  REQUIRE(s3_newest.ok());
  CHECK(s3_newest->backup_id == 1);
  CHECK(ReadShard(in_s3, *s3_newest, "shard1") == shard1);
  CHECK(ReadShard(in_s3, *s3_newest, "shard2") == shard2);
  auto s3_full = in_s3.ReadBackup("full");
  REQUIRE(s3_full.ok());
  CHECK(ReadShard(in_s3, *s3_full, "shard2") == shard2);
  auto s3_core = in_s3.ReadBackup("core1");
  REQUIRE(s3_core.ok());
  CHECK(ReadShard(in_s3, *s3_core, "core1") == shard1);
}

TEST_CASE("MetadataMigration makes an OpenSearch index of a real Solr 9 collection backup",
          "[solr]") {
  rfs::test::RealNode solr("solr");
  // The k-NN target: the schema has a dense vector field.
  rfs::test::RealNode target("os2knn");
  const fs::path repo = solr.repo_path();
  fs::remove_all(repo / "meta");
  const std::string collection = "rfs_meta";
  solr.Send("GET", "/solr/admin/collections?action=DELETE&name=" + collection);
  Admin(solr, "action=CREATE&numShards=3&replicationFactor=1&name=" + collection);
  solr.Ok("POST", "/solr/" + collection + "/schema",
          R"({"add-copy-field":{"source":"title_t","dest":"body_ti"}})");
  solr.Ok("POST", "/solr/" + collection + "/update?commit=true&wt=json", Batch(1));
  Admin(solr, "action=BACKUP&name=meta&collection=" + collection + "&location=" + repo.string());
  const std::string index = "solr_meta_" + collection;
  target.Send("DELETE", "/" + index);

  rfs::migration::MetadataToolOptions options;
  options.repository.uri = repo.string();
  options.snapshot_name = "meta";
  options.migration.target_index_prefix = "solr_meta_";
  options.target = rfs::net::HttpTransportOptions{.endpoint = target.url()};
  options.migration.mode = rfs::migration::MetadataMode::kEvaluate;
  const rfs::migration::SolrSourceOptions source{.major = 9};
  auto evaluated = rfs::migration::RunSolrMetadataMigration(options, source);
  INFO(evaluated.status.ToString());
  REQUIRE(evaluated.exit_code == 0);
  REQUIRE(evaluated.report->items.size() == 1);
  const auto& planned = evaluated.report->items[0];
  CHECK(planned.outcome == rfs::migration::MetadataOutcome::kWouldCreate);
  CHECK(planned.name == index);
  const auto has_note = [&](std::string_view part) {
    return std::any_of(planned.notes.begin(), planned.notes.end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
  };
  CHECK(has_note("copyField title_t -> body_ti: copy_to"));
  CHECK(has_note("not migrated: _text_: indexed only"));

  options.migration.mode = rfs::migration::MetadataMode::kMigrate;
  auto migrated = rfs::migration::RunSolrMetadataMigration(options, source);
  INFO(migrated.status.ToString());
  REQUIRE(migrated.exit_code == 0);
  CHECK(migrated.report->items[0].outcome == rfs::migration::MetadataOutcome::kCreated);
  const json::value created = target.Ok("GET", "/" + index);
  const json::value& settings = created.at(index).at("settings").at("index");
  CHECK(settings.at("number_of_shards") == "3");
  const json::value& mappings = created.at(index).at("mappings");
  CHECK(mappings.at("properties").at("title_t") ==
        json::parse(R"({"type":"text","copy_to":["body_ti"]})"));
  // A document as Solr's /select returns it indexes under the mapping made of the schema.
  target.Ok("PUT", "/" + index + "/_doc/b1-0?refresh=true",
            R"({"id":"b1-0","title_t":"Title b1-0","tags_ss":["z","a","z"],"n_i":100,
                "when_dt":"2020-01-01T03:04:05.678Z","vec_v4":[1.0,2.0,3.0,1.5],
                "loc_p":"45.1,-93.2","codes_sdv":["x","y"]})");
  const json::value found =
      target.Ok("POST", "/" + index + "/_search", R"({"query":{"match":{"body_ti":"title"}}})");
  CHECK(found.at("hits").at("total").at("value") == 1);
  const json::value after = target.Ok("GET", "/" + index + "/_mapping");
  CHECK(after.at(index).at("mappings").at("properties").at("vec_v4").at("type") == "knn_vector");
  CHECK(after.at(index).at("mappings").at("properties").at("loc_p").at("type") == "geo_point");

  // Again: the index exists and is left as it is.
  auto again = rfs::migration::RunSolrMetadataMigration(options, source);
  REQUIRE(again.exit_code == 0);
  CHECK(again.report->items[0].outcome == rfs::migration::MetadataOutcome::kAlreadyExists);
  target.Send("DELETE", "/" + index);
}

}  // namespace
