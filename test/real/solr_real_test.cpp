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
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/shard_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/migration/solr_migration.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/solr/backup.hpp"
#include "rfs/solr/documents.hpp"
#include "rfs/solr/schema.hpp"

#include "support/real_node.hpp"
#include "support/repository_documents.hpp"
#include "support/s3_server.hpp"
#include "support/temp_dir.hpp"
#include "support/tool_runner.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::solr::BackupLayout;
using rfs::solr::SolrBackupLocation;

constexpr const char* kCollection = "rfs_books";

// Every document of backup `name` of `location` as rfs rebuilds it (its JSON text), by `_id`.
std::map<std::string, std::string> BackupDocuments(
    std::shared_ptr<const rfs::snapshot::ISourceRepo> location, const std::string& name) {
  auto repository = rfs::solr::OpenBackupAsSnapshotRepository(std::move(location), name);
  INFO(repository.status().ToString());
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->FindSnapshot(name);
  REQUIRE(snapshot.ok());
  std::map<std::string, std::string> out;
  for (const std::string& index : (*repository)->IndicesIn(**snapshot)) {
    auto metadata = (*repository)->ReadIndexMetadata(**snapshot, index);
    REQUIRE(metadata.ok());
    auto plan = rfs::solr::RebuildPlanForBackupIndex(*metadata);
    REQUIRE(plan.ok());
    rfs::lucene::ShardReaderOptions options;
    options.rebuild_plan = *plan;
    options.verify_checksums = true;
    for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
      auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, index, shard, options);
      INFO(reader.status().ToString());
      REQUIRE(reader.ok());
      rfs::test::ForEachDocument(**reader, [&](const rfs::lucene::Document& doc) {
        out[doc.id].assign(reinterpret_cast<const char*>(doc.source.data()), doc.source.size());
      });
    }
  }
  return out;
}

// Solr's documents and rfs's, and the OpenSearch copies of them, are compared by `_id`.
using DocumentsById = std::map<std::string, json::value>;

// Documents of every kind the rebuild reads: stored and doc-values-only values of each type,
// single- and multi-valued (repeats, unsorted), dates with and without a fraction, floats Java
// prints with an exponent, children under nest paths (an array, an object, a grandchild).
constexpr const char* kKindsBatch = R"([
  {"id": "k1", "s_s": "plain", "tags_ss": ["z", "a", "z"], "l_l": 12345678901234,
   "f_f": 1.0e10, "fs_fs": [3.5, 1.25, 3.5], "d_d": -0.001, "ds_ds": [2.5, -1.0e-7],
   "dt_dt": "2020-01-01T03:04:05Z", "dts_dts": ["2021-01-01T00:00:00Z", "2020-01-01T00:00:00.5Z"],
   "b_b": false, "bs_bs": [true, false, true], "t_t": "Hello World", "tx_txt": ["one", "two"],
   "loc_p": "45.5,-100.25", "vec_v4": [0.5, 2.0, 3.0, 4.25], "hidden_ti": "not returned",
   "one_s1dv": "dv", "n_ldv": -42, "x_fdv": 0.1, "xs_fsdv": [9.5, -2.25, 9.5], "y_ddv": 1.0e-5,
   "ys_dsdv": [7.0, 7.0, -3.5], "w_dtdv": "1999-12-31T23:59:59.999Z",
   "ws_dtsdv": ["2001-01-01T00:00:00Z", "1970-01-01T00:00:00Z"], "c_bdv": true,
   "cs_bsdv": [true, false, true], "codes_sdv": ["y", "x", "y"], "nums_idv": [3, 1, 3]},
  {"id": "k2", "s_s": "parent",
   "kids": [{"id": "k2-a", "s_s": "first", "n_i": 1,
             "grand": {"id": "k2-a-g", "s_s": "grandchild"}},
            {"id": "k2-b", "s_s": "second", "tags_ss": ["only"]}],
   "one": {"id": "k2-o", "s_s": "single", "flag_b": true}},
  {"id": "k3", "tags_ss": ["one value"], "nums_idv": [5]}
])";

// Drops Solr's own fields from a document as /select gives it, children included.
void DropInternalFields(json::value& doc) {
  if (doc.is_array()) {
    for (auto& element : doc.as_array()) DropInternalFields(element);
    return;
  }
  if (!doc.is_object()) return;
  doc.as_object().erase("_version_");
  doc.as_object().erase("_nest_path_");
  for (auto& [key, value] : doc.as_object()) DropInternalFields(value);
}

// Every top-level document of `collection` as Solr's /select returns it, children under their
// parents ([child]), Solr's internal fields dropped.
DocumentsById SolrDocuments(rfs::test::RealNode& solr, const std::string& collection) {
  const json::value answer = solr.Ok(
      "GET", "/solr/" + collection +
                 "/select?q=*:*&rows=10000&wt=json&fl=*,_nest_path_,%5Bchild%20limit=-1%5D");
  DocumentsById out;
  for (const json::value& doc : answer.at("response").at("docs").as_array()) {
    // Nested children are matched by *:* too; they are returned inside their parents.
    if (doc.as_object().contains("_nest_path_")) continue;
    json::value copy = doc;
    DropInternalFields(copy);
    out[std::string(doc.at("id").as_string())] = std::move(copy);
  }
  return out;
}

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
  // Every document read in place from S3 as from the folder, byte for byte.
  const auto from_folder = BackupDocuments(*repo_handle, "inc");
  CHECK(static_cast<int64_t>(from_folder.size()) == shard1 + shard2);
  CHECK(BackupDocuments(*remote, "inc") == from_folder);
  CHECK(BackupDocuments(*remote, "full") == from_folder);
  // A core backup keeps no schema: its documents need the core's, given with --solr-schema.
  rfs::test::ToolRunner runner("rfs-solr-core");
  std::vector<std::string> core_docs = {
      RFS_INSPECTOR_TOOL, "docs",  "--snapshot-local-dir", repo.string(),
      "--snapshot-name",  "core1", "--source-version",     "SOLR 9"};
  CHECK(runner.Run(core_docs) == rfs::core::kExitUsage);
  CHECK(runner.err.find("--solr-schema FILE") != std::string::npos);
  core_docs.insert(core_docs.end(),
                   {"--solr-schema", std::string(RFS_SOURCE_DIR) +
                                         "/test/real-nodes/solr/configset/managed-schema.xml"});
  const int core_read = runner.Run(core_docs);
  INFO(runner.err);
  REQUIRE(core_read == 0);
  int64_t core_lines = 0;
  std::istringstream lines(runner.out);
  for (std::string line; std::getline(lines, line); ++core_lines) {
    const json::object parsed = json::parse(line).as_object();
    const std::string id(parsed.at("_id").as_string());
    INFO(id);
    REQUIRE(from_folder.count(id) == 1);
    CHECK(parsed.at("_source") == json::parse(from_folder.at(id)));
  }
  CHECK(core_lines == shard1);
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

TEST_CASE("rfs reads a real Solr 9 backup's documents as /select returns them and migrates them",
          "[solr]") {
  rfs::test::RealNode solr("solr");
  rfs::test::RealNode target("os2knn");  // the schema has a dense vector field
  const fs::path repo = solr.repo_path();
  fs::remove_all(repo / "docs");
  const std::string collection = "rfs_docs";
  solr.Send("GET", "/solr/admin/collections?action=DELETE&name=" + collection);
  Admin(solr, "action=CREATE&numShards=2&replicationFactor=1&name=" + collection);
  solr.Ok("POST", "/solr/" + collection + "/schema",
          R"({"add-copy-field":{"source":"title_t","dest":"all_txt"}})");
  const std::string update = "/solr/" + collection + "/update?commit=true&wt=json";
  solr.Ok("POST", update, Batch(1));
  solr.Ok("POST", update, kKindsBatch);
  solr.Ok("POST", update, Batch(2));
  solr.Ok("POST", update, R"({"delete":{"id":"b1-3"}})");
  Admin(solr, "action=BACKUP&name=docs&collection=" + collection + "&location=" + repo.string());
  const DocumentsById expected = SolrDocuments(solr, collection);
  // Batches of 6 with 2 anonymous children each (documents of their own), less one deleted, and
  // the 3 parents of the kinds batch (its 4 nested children inside them).
  REQUIRE(expected.size() == 2 * 8 - 1 + 3);
  REQUIRE(expected.at("k2").as_object().contains("kids"));

  rfs::test::ToolRunner runner("rfs-solr-docs");
  const std::vector<std::string> source = {"--snapshot-local-dir", repo.string(),
                                           "--snapshot-name",      "docs",
                                           "--source-version",     "SOLR 9"};
  std::vector<std::string> docs = {RFS_INSPECTOR_TOOL, "docs"};
  docs.insert(docs.end(), source.begin(), source.end());
  const int read = runner.Run(docs);
  INFO(runner.err);
  REQUIRE(read == 0);
  DocumentsById rebuilt;
  std::istringstream lines(runner.out);
  for (std::string line; std::getline(lines, line);) {
    const json::object parsed = json::parse(line).as_object();
    CHECK(parsed.at("_index").as_string() == collection);
    rebuilt[std::string(parsed.at("_id").as_string())] = parsed.at("_source");
  }
  REQUIRE(rebuilt.size() == expected.size());
  for (const auto& [id, doc] : expected) {
    INFO(id << ": Solr " << json::serialize(doc) << "\nrfs  "
            << (rebuilt.count(id) ? json::serialize(rebuilt.at(id)) : std::string("(none)")));
    CHECK(rebuilt.count(id) == 1);
    if (rebuilt.count(id) == 1) CHECK(rebuilt.at(id) == doc);
  }

  // Into OpenSearch: the index made of the schema, then every document, read back equal.
  const std::string& index = collection;
  target.Send("DELETE", "/" + index);
  rfs::migration::MetadataToolOptions metadata;
  metadata.repository.uri = repo.string();
  metadata.snapshot_name = "docs";
  metadata.migration.mode = rfs::migration::MetadataMode::kMigrate;
  metadata.target = rfs::net::HttpTransportOptions{.endpoint = target.url()};
  auto created = rfs::migration::RunSolrMetadataMigration(metadata, {.major = 9});
  INFO(created.status.ToString());
  REQUIRE(created.exit_code == 0);
  rfs::test::TempDir work("rfs-solr-migrate");
  std::vector<std::string> migrate = {RFS_DOCUMENTS_TOOL, "--target-host", target.url(),
                                      "--coordinator-db", work.File("coord.db")};
  migrate.insert(migrate.end(), source.begin(), source.end());
  const int migrated = runner.Run(migrate);
  INFO(runner.out << runner.err);
  REQUIRE(migrated == rfs::core::kExitNoWorkLeft);
  // The fields no document can carry are named in the summary.
  CHECK(runner.out.find("rfs_docs: not migrated, kept in no form that can be read back: "
                        "hidden_ti: indexed only") != std::string::npos);
  target.Ok("POST", "/" + index + "/_refresh");
  const json::value hits =
      target.Ok("GET", "/" + index + "/_search?size=1000").at("hits").at("hits");
  DocumentsById copies;
  for (const json::value& hit : hits.as_array()) {
    copies[std::string(hit.at("_id").as_string())] = hit.at("_source");
  }
  CHECK(copies.size() == expected.size());
  for (const auto& [id, doc] : expected) {
    INFO(id);
    REQUIRE(copies.count(id) == 1);
    CHECK(copies.at(id) == doc);
  }

  // RfsWorker runs every phase over the backup (the index made of the schema, the documents)
  // and proves each document on the target.
  target.Send("DELETE", "/" + index);
  std::vector<std::string> worker = {RFS_WORKER_TOOL,    "--target-host",        target.url(),
                                     "--coordinator-db", work.File("worker.db"), "--verify-all"};
  worker.insert(worker.end(), source.begin(), source.end());
  const int worked = runner.Run(worker);
  INFO(runner.out << runner.err);
  CHECK(worked == 0);
  CHECK(runner.out.find("every document is on the target as the migration sends it") !=
        std::string::npos);
  CHECK(runner.out.find("expected " + std::to_string(expected.size()) + ", equal " +
                        std::to_string(expected.size())) != std::string::npos);

  // Wrong choices are usage errors; a damaged backup names the file it misses.
  std::vector<std::string> no_point = {
      RFS_INSPECTOR_TOOL, "docs",   "--snapshot-local-dir", repo.string(),
      "--source-version", "SOLR 9", "--snapshot-name",      "docs",
      "--solr-backup-id", "7"};
  CHECK(runner.Run(no_point) == rfs::core::kExitUsage);
  CHECK(runner.err.find("7") != std::string::npos);
  rfs::test::TempDir damaged("rfs-solr-damaged");
  fs::copy(repo / "docs", fs::path(damaged.path()) / "docs", fs::copy_options::recursive);
  // The stored fields of one segment of shard1, by the unique name its metadata gives them.
  const fs::path copy = fs::path(damaged.path()) / "docs" / collection;
  const json::value files = json::parse(
      rfs::test::ReadTextFile((copy / "shard_backup_metadata" / "md_shard1_0.json").string()));
  std::string removed;
  for (const auto& [unique_name, file] : files.as_object()) {
    if (std::string_view(file.at("fileName").as_string()).ends_with(".fdt")) {
      removed = unique_name;
      break;
    }
  }
  REQUIRE(fs::remove(copy / "index" / removed));
  std::vector<std::string> broken = {
      RFS_INSPECTOR_TOOL, "docs", "--snapshot-local-dir", damaged.path().string(),
      "--snapshot-name",  "docs", "--source-version",     "SOLR 9"};
  CHECK(runner.Run(broken) == rfs::core::kExitSnapshotUnreadable);
  CHECK(runner.err.find(removed) != std::string::npos);
  target.Send("DELETE", "/" + index);
}

}  // namespace
