// The target side against the engine users run: real OpenSearch 2.x and 3.x nodes, started by
// the ctest fixture real_nodes from the engine's own jars (scripts/local-cluster).
//   - Every corpus repository, generated datasets and the demo sample migrated with
//     DocumentsFromSnapshotMigration --target-host, read back: every _source the snapshot's own
//     JSON text (whitespace aside), routing kept, _count equal to the live documents.
//   - Documents a real node refuses (a mapping conflict, the total-fields limit): each in the
//     failed-documents folder with the node's own error, exit 6, the rest migrated.
//   - Snapshots the real node writes (several segments, updates and deletes, nested documents,
//     custom routing, best_compression, _source excludes) read by rfs exactly as the node
//     returns the documents; CreateSnapshot and RfsWorker with one node as the source and the
//     other as the target.
//   - RfsWorker --verify-all: every document compared, what the target lost, changed or gained
//     counted exactly, and a redrive of the round's records closing the gap.
#include "support/real_node.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <absl/strings/match.h>
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/coordination/opensearch_work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/opensearch/client.hpp"

#include "conformance/work_coordinator_conformance.hpp"
#include "support/corpus.hpp"
#include "support/generated_repo.hpp"
#include "support/opensearch_double.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/s3_server.hpp"
#include "support/scripted_http_server.hpp"
#include "support/snapshot_delta.hpp"
#include "support/temp_dir.hpp"
#include "support/tool_runner.hpp"
#include <signal.h>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::test::RealNode;
using rfs::test::SnapshotDocuments;

constexpr int kNoWorkLeft = 3;
constexpr int kDocumentsFailed = 6;

// Runs the tools; a migration of the demo sample may take minutes under the sanitizers.
struct Runner : rfs::test::ToolRunner {
  Runner() : ToolRunner("rfs-real") {}
  int Run(const std::vector<std::string>& argv,
          std::chrono::seconds limit = std::chrono::seconds(600)) {
    return ToolRunner::Run(argv, "", limit);
  }
};

std::vector<std::string> Names(const SnapshotDocuments& docs) {
  std::vector<std::string> names;
  for (const auto& [index, _] : docs) names.push_back(index);
  return names;
}

// Migrates the repository's documents into the node (indices deleted first) and checks them.
void MigrateAndCheck(RealNode& node, const fs::path& repo, const std::string& snapshot = "") {
  const SnapshotDocuments expected = rfs::test::ReadSnapshotDocuments(repo, snapshot);
  REQUIRE(!expected.empty());
  node.DeleteIndices(Names(expected));
  Runner runner;
  std::vector<std::string> argv = {RFS_DOCUMENTS_TOOL,
                                   "--snapshot-local-dir",
                                   repo.string(),
                                   "--target-host",
                                   node.url(),
                                   "--coordinator-db",
                                   runner.dir.File("coordination.sqlite"),
                                   "--failed-documents-dir",
                                   runner.dir.File("failed")};
  if (!snapshot.empty()) argv.insert(argv.end(), {"--snapshot-name", snapshot});
  const int code = runner.Run(argv);
  INFO(runner.out << runner.err);
  REQUIRE(code == kNoWorkLeft);
  const size_t compared = rfs::test::CheckNodeHolds(node, expected);
  CHECK(compared > 0);
  node.DeleteIndices(Names(expected));
}

std::vector<fs::path> CorpusRepositories() {
  std::vector<fs::path> out;
  for (const char* name : {
           "es-snapshots/ES_6_8_Single",
           "es-snapshots/ES_6_8_Updates_Deletes_Native",
           "es-snapshots/ES_7_10_Double",
           "es-snapshots/ES_7_10_Single",
           "es-snapshots/ES_7_10_Updates_Deletes_w_Soft",
           "snapshot-matrix-es1-es9-os1-os3/es1_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/es2_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/es5_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/es6_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/es7_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/es8_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/es9_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/os1_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/os2_nocomp",
           "snapshot-matrix-es1-es9-os1-os3/os3_nocomp",
           "opensearch-2.11-soft-deletes-multiseg/OS_2_11_Deletes_w_Soft_Multi_Seg",
       }) {
    auto path = rfs::test::CorpusPath(name);
    if (path) out.push_back(*path);
  }
  return out;
}

// Registers an fs repository below the node's path.repo and takes a snapshot of `indices`.
fs::path SnapshotOnNode(RealNode& node, const std::string& repository, const std::string& snapshot,
                        const std::string& indices) {
  const fs::path location = node.repo_path() / repository;
  node.RegisterFsRepository(repository, location);
  // A snapshot of that name left by an earlier run of the suite on this node goes first.
  node.Send("DELETE", "/_snapshot/" + repository + "/" + snapshot);
  node.Ok("PUT", "/_snapshot/" + repository + "/" + snapshot + "?wait_for_completion=true",
          json::serialize(json::object{{"indices", indices}, {"include_global_state", false}}));
  // The engines stamp a snapshot's start with their cached clock (ThreadPool's
  // estimated_time_interval, 200 ms by default): a snapshot taken right after this one on a busy
  // machine could carry the same start time, which a delta between the two refuses. Past that
  // interval the next snapshot's start is later.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  return location;
}

}  // namespace

TEST_CASE("every corpus repository migrates into real OpenSearch 2 and 3 exactly",
          "[real][corpus]") {
  const auto repositories = CorpusRepositories();
  REQUIRE(!repositories.empty());
  for (const char* name : {"os2", "os3"}) {
    SECTION(name) {
      RealNode node(name);
      for (const auto& repo : repositories) {
        INFO(repo.string() << " into " << node.url());
        MigrateAndCheck(node, repo);
      }
    }
  }
}

TEST_CASE("generated datasets and the demo sample migrate into real OpenSearch exactly",
          "[real][generated]") {
  const std::vector<std::string> datasets = {
      // Several segments, updates, deletes, custom routing, nested documents, two shards.
      "--docs 400 --shards 2 --updates 60 --deletes 40 --segments 3 --routing-fraction 0.3 "
      "--nested 2 --seed 1701",
      // Best-compression stored fields, hard deletes in compound files, unicode ids.
      "--docs 300 --updates 20 --deletes 25 --segments 2 --soft-deletes false --compound true "
      "--codec best_compression --id-style utf8 --seed 1702",
      // A 20 MB document: its bulk body is gzipped as it is laid out (net::GzipStream).
      "--docs 60 --huge-doc-bytes 20000000 --seed 1704",
      // The demo's sample (scripts/demo), into the newest target only: 102,000 documents cost
      // the node about a minute, and the smaller datasets cover OpenSearch 2 the same way.
      "--indices 3 --shards 2 --docs 34000 --doc-size 300 --updates 500 --deletes 300 "
      "--segments 3 --routing-fraction 0.05 --templates true --seed 2026",
  };
  for (const char* name : {"os2", "os3"}) {
    SECTION(name) {
      RealNode node(name);
      for (const auto& args : datasets) {
        if (std::string_view(name) == "os2" && args.find("--seed 2026") != std::string::npos) {
          continue;
        }
        INFO(args);
        auto generated = rfs::test::Generate(args);
        REQUIRE(generated.has_value());
        MigrateAndCheck(node, generated->repo());
      }
    }
  }
}

TEST_CASE("documents a real node refuses are kept with its own error and the rest migrate",
          "[real]") {
  RealNode source("os2");
  RealNode target("os3");
  const std::string index = "rn-refused";
  source.DeleteIndices({index});
  target.DeleteIndices({index});
  // "n" is a keyword on the source (numbers and text alike), an integer on the target.
  source.Ok("PUT", "/" + index,
            R"({"settings":{"number_of_shards":1,"number_of_replicas":0},)"
            R"("mappings":{"properties":{"n":{"type":"keyword"}}}})");
  // Fine on the target: "ok-1", "ok-2". Refused: "conflict" (a string for an integer field) and
  // "wide" (more fields than the target's total_fields limit allows).
  source.Ok("POST", "/_bulk?refresh=true",
            "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"ok-1\"}}\n{\"n\":1}\n" +
                "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"ok-2\"}}\n{\"n\":2}\n" +
                "{\"index\":{\"_index\":\"" + index +
                "\",\"_id\":\"conflict\"}}\n{\"n\":\"not a number\"}\n" +
                "{\"index\":{\"_index\":\"" + index +
                "\",\"_id\":\"wide\"}}\n{\"n\":3,\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5}\n");
  const fs::path repo = SnapshotOnNode(source, "rn-refused-repo", "s1", index);
  target.Ok("PUT", "/" + index,
            R"({"settings":{"number_of_shards":1,"number_of_replicas":0,)"
            R"("index.mapping.total_fields.limit":3},)"
            R"("mappings":{"properties":{"n":{"type":"integer"}}}})");
  Runner runner;
  const std::string failed = runner.dir.File("failed");
  const int code =
      runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo.string(), "--target-host",
                  target.url(), "--coordinator-db", runner.dir.File("coordination.sqlite"),
                  "--failed-documents-dir", failed});
  INFO(runner.out << runner.err);
  CHECK(code == kDocumentsFailed);
  target.Ok("POST", "/" + index + "/_refresh");
  CHECK(target.Ok("GET", "/" + index + "/_count").at("count") == 2);
  // The failed-documents folder: each refused document with the node's own error type.
  std::map<std::string, std::string> errors;
  for (const auto& entry : fs::recursive_directory_iterator(failed)) {
    if (!entry.is_regular_file()) continue;
    auto text = rfs::net::GzipDecompress(rfs::test::ReadTextFile(entry.path().string()));
    REQUIRE(text.ok());
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      const auto record = json::parse(line).as_object();
      errors[std::string(record.at("id").as_string())] =
          std::string(record.at("error_type").as_string()) + ": " +
          std::string(record.at("reason").as_string());
    }
  }
  INFO(runner.out);
  REQUIRE(errors.size() == 2);
  CHECK(errors["conflict"].starts_with("mapper_parsing_exception"));
  CHECK(errors["wide"].find("Limit of total fields [3]") != std::string::npos);
  source.DeleteIndices({index});
  target.DeleteIndices({index});
}

TEST_CASE("an _id over 512 bytes (older sources had no limit) fails alone with the node's error",
          "[real][generated]") {
  auto generated = rfs::test::Generate("--docs 30 --long-id-bytes 600 --seed 1703");
  REQUIRE(generated.has_value());
  const SnapshotDocuments expected = rfs::test::ReadSnapshotDocuments(generated->repo());
  for (const char* name : {"os2", "os3"}) {
    SECTION(name) {
      RealNode node(name);
      node.DeleteIndices(Names(expected));
      Runner runner;
      const std::string failed = runner.dir.File("failed");
      const int code =
          runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(),
                      "--target-host", node.url(), "--coordinator-db",
                      runner.dir.File("coordination.sqlite"), "--failed-documents-dir", failed});
      INFO(runner.out << runner.err);
      CHECK(code == kDocumentsFailed);
      size_t total = 0;
      std::string long_id;
      for (const auto& [index, docs] : expected) {
        total += docs.size();
        for (const auto& [id, doc] : docs) {
          if (id.size() > 512) long_id = id;
        }
      }
      REQUIRE(long_id.size() == 600);
      node.Ok("POST", "/_refresh");
      uint64_t on_node = 0;
      for (const auto& [index, docs] : expected) {
        on_node += node.Ok("GET", "/" + index + "/_count").at("count").to_number<uint64_t>();
      }
      CHECK(on_node == total - 1);
      std::string reason;
      for (const auto& entry : fs::recursive_directory_iterator(failed)) {
        if (!entry.is_regular_file()) continue;
        auto text = rfs::net::GzipDecompress(rfs::test::ReadTextFile(entry.path().string()));
        REQUIRE(text.ok());
        std::istringstream lines(*text);
        for (std::string line; std::getline(lines, line);) {
          if (line.empty()) continue;
          const auto record = json::parse(line).as_object();
          CHECK(std::string(record.at("id").as_string()) == long_id);
          reason = std::string(record.at("reason").as_string());
        }
      }
      INFO(reason);
      CHECK(reason.find("512") != std::string::npos);
      node.DeleteIndices(Names(expected));
    }
  }
}

TEST_CASE("snapshots a real node writes are read exactly as the node returns the documents",
          "[real]") {
  // OpenSearch 2 and 3, Elasticsearch 7.10 (the source most migrations start from) and
  // Elasticsearch 8.19, whose best_compression stores fields with zstd (Zstd814StoredFieldsFormat).
  for (const char* name : {"os2", "os3", "es7", "es8"}) {
    SECTION(name) {
      RealNode node(name);
      const std::string index = "rn-written";
      node.DeleteIndices({index});
      node.Ok("PUT", "/" + index,
              R"({"settings":{"number_of_shards":2,"number_of_replicas":0,)"
              R"("index.codec":"best_compression","index.merge.policy.max_merged_segment":"1kb"},)"
              R"("mappings":{"_source":{"excludes":["secret"]},"properties":{)"
              R"("comments":{"type":"nested"},"n":{"type":"long"}}}})");
      // Three batches, each refreshed into a segment of its own; then updates and deletes.
      for (int batch = 0; batch < 3; ++batch) {
        std::string body;
        for (int i = 0; i < 40; ++i) {
          const int n = batch * 40 + i;
          const std::string id = "d" + std::to_string(n);
          std::string action = "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"" + id + "\"";
          if (n % 5 == 0) action += ",\"routing\":\"r" + std::to_string(n % 3) + "\"";
          action += "}}\n";
          body += action;
          body += "{\"n\":" + std::to_string(n) + ",\"price\":" + std::to_string(n) +
                  ".10,\"rating\":-6.1499999999999996E-6,\"text\":\"caf\\u00e9 " +
                  std::to_string(n) + "\",\"secret\":\"s" + std::to_string(n) +
                  "\",\"comments\":[{\"by\":\"a\"},{\"by\":\"b\"}]}\n";
        }
        node.Ok("POST", "/_bulk?refresh=true", body);
      }
      for (int n = 0; n < 120; n += 7) {
        const std::string routing = n % 5 == 0 ? "?routing=r" + std::to_string(n % 3) : "";
        if (n % 2 == 0) {
          node.Ok("PUT", "/" + index + "/_doc/d" + std::to_string(n) + routing,
                  "{\"n\":" + std::to_string(n) + ",\"updated\":true}");
        } else {
          node.Ok("DELETE", "/" + index + "/_doc/d" + std::to_string(n) + routing);
        }
      }
      node.Ok("POST", "/" + index + "/_refresh");
      if (std::string_view(name) == "es8") {
        // The node's own account of each segment's stored-fields format: zstd, so the reader's
        // zstd path is proven on files the engine wrote, not only on the generator's.
        const auto segments = node.Ok("GET", "/" + index + "/_segments");
        int segments_seen = 0;
        int zstd_segments = 0;
        for (const auto& [shard, copies] :
             segments.at("indices").at(index).at("shards").as_object()) {
          for (const auto& copy : copies.as_array()) {
            for (const auto& [segment, info] : copy.at("segments").as_object()) {
              ++segments_seen;
              const auto* attributes = info.as_object().if_contains("attributes");
              if (attributes == nullptr) continue;
              const auto* mode =
                  attributes->as_object().if_contains("Zstd814StoredFieldsFormat.mode");
              if (mode != nullptr && *mode == "BEST_COMPRESSION") ++zstd_segments;
            }
          }
        }
        INFO(json::serialize(segments));
        CHECK(segments_seen >= 2);
        CHECK(zstd_segments == segments_seen);
      }
      const fs::path repo = SnapshotOnNode(node, "rn-written-repo", "s1", index);
      const SnapshotDocuments read = rfs::test::ReadSnapshotDocuments(repo, "s1");
      REQUIRE(read.count(index) == 1);
      // What the node returns for every document it holds.
      const auto count = node.Ok("GET", "/" + index + "/_count");
      CHECK(read.at(index).size() == count.at("count").to_number<uint64_t>());
      CHECK(read.at(index).size() > 100);
      rfs::test::CheckNodeHolds(node, read);
      // The excluded field is in no source.
      for (const auto& [id, doc] : read.at(index))
        CHECK(doc.source.find("secret") == std::string::npos);
      node.DeleteIndices({index});
    }
  }
}

TEST_CASE("CreateSnapshot and RfsWorker with a real source and a real target", "[real]") {
  // From OpenSearch 2 to 3, and from Elasticsearch 7.10 to OpenSearch 3.
  const char* source_name = GENERATE("os2", "es7");
  INFO("source " << source_name);
  RealNode source(source_name);
  RealNode target("os3");
  const std::string index = "rn-worker";
  source.DeleteIndices({index});
  target.DeleteIndices({index});
  source.Ok("PUT", "/" + index, R"({"settings":{"number_of_shards":3,"number_of_replicas":0}})");
  std::string body;
  for (int n = 0; n < 500; ++n) {
    body += "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"w" + std::to_string(n) + "\"" +
            (n % 4 == 0 ? ",\"routing\":\"k" + std::to_string(n % 7) + "\"" : std::string()) +
            "}}\n{\"n\":" + std::to_string(n) + ",\"v\":" + std::to_string(n) + ".50}\n";
  }
  source.Ok("POST", "/_bulk?refresh=true", body);
  Runner runner;

  SECTION("CreateSnapshot") {
    const fs::path location = source.repo_path() / "rn-create-snapshot";
    const int code = runner.Run({RFS_CREATE_SNAPSHOT_TOOL, "--source-host", source.url(),
                                 "--snapshot-name", "cs1", "--file-system-repo-path",
                                 location.string(), "--index-allowlist", index});
    INFO(runner.out << runner.err);
    REQUIRE(code == 0);
    const SnapshotDocuments read = rfs::test::ReadSnapshotDocuments(location, "cs1");
    CHECK(read.at(index).size() == 500);
    rfs::test::CheckNodeHolds(source, read);

    // A gs:// repository on a node without the repository-gcs plugin: the node's refusal, and
    // what to install.
    const int gcs =
        runner.Run({RFS_CREATE_SNAPSHOT_TOOL, "--source-host", source.url(), "--snapshot-name",
                    "cs-gcs", "--repo-uri", "gs://rfs-bucket/x", "--snapshot-repo-name", "rn_gcs"});
    INFO(runner.out << runner.err);
    CHECK(gcs != 0);
    CHECK(runner.err.find("repository type [gcs] does not exist") != std::string::npos);
    CHECK(runner.err.find("needs the repository-gcs plugin") != std::string::npos);
  }
  SECTION("RfsWorker: snapshot on the source, metadata, documents and verify on the target") {
    const fs::path location = source.repo_path() / "rn-rfs-worker";
    const int code = runner.Run({RFS_WORKER_TOOL, "--source-host", source.url(),
                                 "--snapshot-local-dir", location.string(), "--snapshot-name", "w1",
                                 "--target-host", target.url(), "--coordinator-db",
                                 runner.dir.File("records.sqlite"), "--index-allowlist", index});
    INFO(runner.out << runner.err);
    REQUIRE(code == 0);
    CHECK(runner.out.find("every phase COMPLETED") != std::string::npos);
    const SnapshotDocuments read = rfs::test::ReadSnapshotDocuments(location, "w1");
    CHECK(rfs::test::CheckNodeHolds(target, read) == 500);
    // The index was created by the metadata phase with the source's shard count.
    const auto settings = target.Ok("GET", "/" + index + "/_settings");
    CHECK(settings.at(index).at("settings").at("index").at("number_of_shards") == "3");

    // The source changes; a second RfsWorker takes snapshot w2 and catches the target up with
    // the delta from w1, in a store of its own.
    std::string changes;
    for (int n = 0; n < 20; ++n) {
      // The documents' own routing (w<m> has k<m % 7> when m % 4 == 0).
      const int m = n * 7;
      const std::string routing =
          m % 4 == 0 ? ",\"routing\":\"k" + std::to_string(m % 7) + "\"" : std::string();
      const std::string action = n < 10 ? "index" : "delete";
      changes += "{\"" + action + "\":{\"_index\":\"" + index + "\",\"_id\":\"w" +
                 std::to_string(m) + "\"" + routing + "}}\n";
      if (n < 10) changes += "{\"n\":" + std::to_string(n) + ",\"changed\":true}\n";
    }
    changes += "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"new\"}}\n{\"n\":-1}\n";
    source.Ok("POST", "/_bulk?refresh=true", changes);
    const int delta = runner.Run(
        {RFS_WORKER_TOOL, "--source-host", source.url(), "--snapshot-local-dir", location.string(),
         "--snapshot-name", "w2", "--previous-snapshot-name", "w1", "--target-host", target.url(),
         "--coordinator-db", runner.dir.File("records-delta.sqlite"), "--index-allowlist", index});
    INFO(runner.out << runner.err);
    REQUIRE(delta == 0);
    CHECK(rfs::test::CheckNodeHolds(target, rfs::test::ReadSnapshotDocuments(location, "w2")) ==
          500 - 10 + 1);
  }
  source.DeleteIndices({index});
  target.DeleteIndices({index});
}

namespace {

// Settings as flat "index.x.y" -> string, from a nested or flat object.
void Flatten(const json::value& value, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.as_object()) {
      Flatten(child, prefix.empty() ? std::string(key) : prefix + "." + std::string(key), out);
    }
  } else if (value.is_string()) {
    out[prefix] = std::string(value.as_string());
  } else {
    out[prefix] = json::serialize(value);
  }
}

void DeleteMetadata(RealNode& node, const json::array& items) {
  // Index templates before the component templates they are composed of.
  for (const char* kind : {"index", "index_template", "legacy_template", "component_template"}) {
    for (const auto& item : items) {
      if (item.at("kind") != kind) continue;
      const std::string name(item.at("name").as_string());
      const std::string path = std::string(kind) == "index"             ? "/"
                               : std::string(kind) == "index_template"  ? "/_index_template/"
                               : std::string(kind) == "legacy_template" ? "/_template/"
                                                                        : "/_component_template/";
      node.Send("DELETE", path + rfs::test::Encode(name));
    }
  }
}

}  // namespace

TEST_CASE("MetadataMigration migrate of every corpus repository into real OpenSearch",
          "[real][corpus]") {
  const auto repositories = CorpusRepositories();
  REQUIRE(!repositories.empty());
  for (const char* name : {"os2", "os3"}) {
    SECTION(name) {
      RealNode node(name);
      for (const auto& repo : repositories) {
        INFO(repo.string() << " into " << node.url());
        Runner runner;
        int code = runner.Run({RFS_METADATA_TOOL, "evaluate", "--snapshot-local-dir", repo.string(),
                               "--target-host", node.url(), "--output", "json"});
        INFO(runner.out << runner.err);
        REQUIRE(code == 0);
        const json::value evaluated = json::parse(runner.out);
        const json::array& planned = evaluated.at("items").as_array();
        DeleteMetadata(node, planned);
        code = runner.Run({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", repo.string(),
                           "--target-host", node.url(), "--output", "json"});
        INFO(runner.out << runner.err);
        REQUIRE((code == 0 || code == 1));
        const json::value migrated = json::parse(runner.out);
        std::map<std::string, const json::object*> plan;
        for (const auto& item : planned) {
          plan[std::string(item.at("kind").as_string()) + "/" +
               std::string(item.at("name").as_string())] = &item.as_object();
        }
        size_t created = 0;
        for (const auto& item : migrated.at("items").as_array()) {
          const std::string kind(item.at("kind").as_string());
          const std::string item_name(item.at("name").as_string());
          const std::string outcome(item.at("outcome").as_string());
          INFO(kind << " " << item_name << ": " << outcome);
          if (outcome == "failed") {
            // The node's own reason, never an empty one.
            CHECK(!std::string(item.at("error").as_string()).empty());
            continue;
          }
          if (outcome != "created") continue;
          ++created;
          const auto it = plan.find(kind + "/" + item_name);
          REQUIRE(it != plan.end());
          CHECK(it->second->at("outcome") == "would_create");
          if (kind != "index") continue;
          const json::object& body = it->second->at("body").as_object();
          const auto read = node.Ok("GET", "/" + rfs::test::Encode(item_name));
          const json::object& on_node = read.at(item_name).as_object();
          if (const auto* mappings = body.if_contains("mappings")) {
            CHECK(json::serialize(on_node.at("mappings")) == json::serialize(*mappings));
          }
          if (const auto* settings = body.if_contains("settings")) {
            std::map<std::string, std::string> wanted, actual;
            Flatten(*settings, "", wanted);
            Flatten(on_node.at("settings"), "", actual);
            for (const auto& [key, value] : wanted) {
              const std::string full = key.starts_with("index.") ? key : "index." + key;
              INFO("setting " << full);
              CHECK(actual[full] == value);
            }
          }
        }
        CHECK(created > 0);
        DeleteMetadata(node, planned);
      }
    }
  }
}

TEST_CASE("the OpenSearch work coordinator on a real node: leases and progress and successors",
          "[real][coordination]") {
  RealNode node("os2");
  const std::string session = "rn-coordination";
  node.DeleteIndices({".migrations_working_state_" + session});
  auto open = [&](const std::string& worker) {
    rfs::coordination::OpenSearchWorkCoordinatorOptions options;
    options.worker_id = worker;
    auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = node.url()});
    REQUIRE(transport.ok());
    options.transport = std::shared_ptr<rfs::net::IHttpTransport>(*std::move(transport));
    options.session_name = session;
    auto opened = rfs::coordination::OpenSearchWorkCoordinator::Open(std::move(options));
    INFO(opened.status().ToString());
    REQUIRE(opened.ok());
    return *std::move(opened);
  };
  auto w1 = open("w1");
  auto w2 = open("w2");
  REQUIRE(w1->Setup().ok());
  REQUIRE(w2->Setup().ok());
  using rfs::coordination::Acquired;
  using rfs::coordination::AllLeasedElsewhere;
  using rfs::coordination::NoAvailableWork;
  for (const char* id : {"a__0__0", "b__0__0"}) {
    auto created = w1->CreateUnassignedWorkItem(id, 0);
    REQUIRE(created.ok());
    CHECK(*created);
    CHECK(!*w2->CreateUnassignedWorkItem(id, 0));  // idempotent, from any worker
  }
  CHECK(*w1->CountIncompleteWorkItems() == 2);
  const auto lease = std::chrono::seconds(3);
  auto first = w1->AcquireNextWorkItem(lease);
  auto second = w2->AcquireNextWorkItem(lease);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  REQUIRE(std::holds_alternative<Acquired>(*first));
  REQUIRE(std::holds_alternative<Acquired>(*second));
  const auto l1 = std::get<Acquired>(*first).lease;
  const auto l2 = std::get<Acquired>(*second).lease;
  CHECK(l1.work_item_id != l2.work_item_id);  // never the same item twice
  auto busy = w1->AcquireNextWorkItem(lease);
  REQUIRE(busy.ok());
  CHECK(std::holds_alternative<AllLeasedElsewhere>(*busy));
  // The heartbeat records progress; a release hands it to the next holder.
  auto renewed = w2->RenewLease(l2, rfs::coordination::ItemProgress(17, 17, 1700));
  INFO(renewed.status().ToString());
  REQUIRE(renewed.ok());
  REQUIRE(w2->ReleaseWorkItem(*renewed, rfs::coordination::ItemProgress{20, 20, 2000}).ok());
  auto again = w1->AcquireWorkItem(l2.work_item_id, lease);
  REQUIRE(again.ok());
  REQUIRE(std::holds_alternative<Acquired>(*again));
  const auto l3 = std::get<Acquired>(*again).lease;
  REQUIRE(l3.recorded_progress.has_value());
  CHECK(l3.recorded_progress->next_cursor == 20);
  // The lost lease of w2 can no longer complete the item.
  CHECK(rfs::coordination::IsLeaseLost(w2->CompleteWorkItem(l2)));
  // Successors: recorded, created, the parent completed.
  const std::vector<std::string> successors = {"b__0__20"};
  REQUIRE(w1->CreateSuccessorsAndComplete(l3, successors, 0).ok());
  REQUIRE(w1->CompleteWorkItem(l1).ok());
  auto state = w1->GetWorkItem(l3.work_item_id);
  REQUIRE(state.ok());
  REQUIRE(state->has_value());
  CHECK((*state)->completed());
  CHECK((*state)->successor_ids == successors);
  // A lease that runs out is taken over (real time: the node's clock).
  auto successor = w2->AcquireNextWorkItem(lease);
  REQUIRE(successor.ok());
  REQUIRE(std::holds_alternative<Acquired>(*successor));
  CHECK(std::get<Acquired>(*successor).lease.work_item_id == "b__0__20");
  std::this_thread::sleep_for(lease + std::chrono::seconds(3));
  auto taken_over = w1->AcquireNextWorkItem(lease);
  REQUIRE(taken_over.ok());
  REQUIRE(std::holds_alternative<Acquired>(*taken_over));
  const auto l4 = std::get<Acquired>(*taken_over).lease;
  CHECK(l4.work_item_id == "b__0__20");
  CHECK(l4.exponent == 1);  // the expired grant doubled the next lease
  REQUIRE(w1->CompleteWorkItem(l4).ok());
  auto none = w2->AcquireNextWorkItem(lease);
  REQUIRE(none.ok());
  CHECK(std::holds_alternative<NoAvailableWork>(*none));
  CHECK(*w2->CountIncompleteWorkItems() == 0);
  node.DeleteIndices({".migrations_working_state_" + session});
}

namespace {

// Passes every request on to a real node and answers with the node's response, stamped with a
// store clock the test controls: a `Date` header (when asked; plain OpenSearch sends none), and the
// epoch of `_cat/health` (the two ways the coordinator reads the store's clock). The coordinator
// computes every lease time from that clock and keeps no time on the node (its writes are
// conditional on _seq_no), so the node, with its real indexing, search, refresh and version
// conflicts, runs the conformance suite on a fake clock. The server takes one connection at a time,
// so concurrent workers interleave request by request.
class StoreClockProxy {
 public:
  StoreClockProxy(const std::string& upstream, rfs::core::IClock& clock, bool date_header)
      : clock_(clock),
        date_header_(date_header),
        upstream_([&] {
          auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = upstream});
          REQUIRE(transport.ok());
          return *std::move(transport);
        }()),
        server_([this](const rfs::net::HttpRequest& request) { return Forward(request); }) {}

  std::string endpoint() const { return server_.endpoint(); }
  uint64_t forwarded() const { return forwarded_; }

 private:
  rfs::net::HttpResponse Forward(rfs::net::HttpRequest request) {
    std::erase_if(request.headers, [](const auto& header) {
      return absl::EqualsIgnoreCase(header.first, "host") ||
             absl::EqualsIgnoreCase(header.first, "content-length") ||
             absl::EqualsIgnoreCase(header.first, "connection");
    });
    auto answered = upstream_->Send(request);
    if (!answered.ok()) return {502, {}, answered.status().ToString()};
    ++forwarded_;
    rfs::net::HttpResponse response = *std::move(answered);
    std::erase_if(response.headers, [](const auto& header) {
      return absl::EqualsIgnoreCase(header.first, "content-length") ||
             absl::EqualsIgnoreCase(header.first, "connection") ||
             absl::EqualsIgnoreCase(header.first, "transfer-encoding") ||
             absl::EqualsIgnoreCase(header.first, "date");
    });
    const auto now = clock_.Now();
    if (date_header_) response.headers.emplace_back("Date", rfs::testing::HttpDate(now));
    if (request.target.starts_with("/_cat/health") && response.status == 200) {
      json::value health = json::parse(response.body);
      const auto seconds =
          std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
      for (auto& row : health.as_array()) row.as_object()["epoch"] = std::to_string(seconds);
      response.body = json::serialize(health);
    }
    return response;
  }

  rfs::core::IClock& clock_;
  bool date_header_;
  std::unique_ptr<rfs::net::BeastHttpTransport> upstream_;
  std::atomic<uint64_t> forwarded_{0};
  rfs::test::ScriptedHttpServer server_;
};

// Catch2 enters a test case's body once per leaf section: each entry gets a fresh working-state
// index of its own session on the node, removed afterwards.
void RunConformanceOnRealNode(bool date_header) {
  static int entry = 0;
  RealNode node("os2");
  const std::string session = "conformance-" + std::to_string(++entry);
  const std::string index = ".migrations_working_state_" + session;
  node.DeleteIndices({index});
  rfs::core::FakeClock clock;
  clock.Set(std::chrono::system_clock::now());
  StoreClockProxy proxy(node.url(), clock, date_header);
  rfs::coordination::conformance::ConformanceEnv env;
  env.clock = &clock;
  env.make_worker = [&](const rfs::coordination::conformance::WorkerSpec& spec) {
    rfs::coordination::OpenSearchWorkCoordinatorOptions options;
    rfs::coordination::conformance::ApplySpec(spec, &clock, options);
    auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = proxy.endpoint()});
    REQUIRE(transport.ok());
    options.transport = std::shared_ptr<rfs::net::IHttpTransport>(*std::move(transport));
    options.session_name = session;
    return rfs::coordination::conformance::RequireOpened(
        rfs::coordination::OpenSearchWorkCoordinator::Open(std::move(options)));
  };
  env.expiry_slack = std::chrono::seconds(3);  // Date headers and _cat/health: whole seconds
  env.check_store = [&] {
    // Everything went through the node, which kept the items in the session's own index.
    CHECK(proxy.forwarded() > 0);
    const json::value count = node.Ok("GET", "/" + index + "/_count");
    CHECK(count.at("count").as_int64() >= 0);
  };
  rfs::coordination::conformance::RunWorkCoordinatorConformance(env);
  node.DeleteIndices({index});
}

}  // namespace

TEST_CASE("the OpenSearch work coordinator passes the conformance suite on a real node",
          "[real][coordination]") {
  RunConformanceOnRealNode(/*date_header=*/true);
}

TEST_CASE("the conformance suite on a real node that sends no Date header (the _cat/health probe)",
          "[real][coordination]") {
  RunConformanceOnRealNode(/*date_header=*/false);
}

namespace {

// (status, error type or "") of each request of a fixed suite, and of each bulk item.
std::vector<std::string> RunRequestSuite(
    const std::function<rfs::net::HttpResponse(const std::string&, const std::string&,
                                               const std::string&, const std::string&)>& send) {
  std::vector<std::string> out;
  auto record = [&](const std::string& label, const rfs::net::HttpResponse& r) {
    std::string type;
    if (!r.body.empty()) {
      boost::system::error_code ec;
      const json::value body = json::parse(r.body, ec);
      if (!ec && body.is_object()) {
        if (const auto* error = body.as_object().if_contains("error");
            error && error->is_object()) {
          type = std::string(error->at("type").as_string());
        }
        if (const auto* items = body.as_object().if_contains("items"); items) {
          for (const auto& item : items->as_array()) {
            const auto& result = item.as_object().begin()->value().as_object();
            std::string item_type;
            if (const auto* e = result.if_contains("error")) {
              item_type = std::string(e->at("type").as_string());
            }
            out.push_back(label + " item: " + std::to_string(result.at("status").to_number<int>()) +
                          " " + item_type);
          }
        }
      }
    }
    out.push_back(label + ": " + std::to_string(r.status) + " " + type);
  };
  const std::string json_type = "application/json";
  auto req = [&](const std::string& method, const std::string& target, const std::string& body = "",
                 const std::string& type = "application/json") {
    record(method + " " + target, send(method, target, body, type));
  };
  req("PUT", "/rn-suite", R"({"settings":{"number_of_shards":1,"number_of_replicas":0}})");
  req("PUT", "/rn-suite", R"({"settings":{"number_of_shards":1}})");
  req("HEAD", "/rn-suite");
  req("HEAD", "/rn-suite-missing");
  req("PUT", "/rn-suite/_doc/1", R"({"a":1})");
  req("PUT", "/rn-suite/_doc/1", R"({"a":2})");
  req("PUT", "/rn-suite/_doc/1?op_type=create", R"({"a":3})");
  req("GET", "/rn-suite/_doc/1");
  req("GET", "/rn-suite/_doc/2");
  req("GET", "/rn-suite-missing/_doc/1");
  req("PUT", "/rn-suite/_doc/3", R"({"a":1})", "text/plain");
  req("POST", "/rn-suite/_search?sizee=1", "{}");
  req("POST", "/_bulk",
      "{\"index\":{\"_index\":\"rn-suite\",\"_id\":\"b1\"}}\n{\"a\":5}\n"
      "{\"create\":{\"_index\":\"rn-suite\",\"_id\":\"1\"}}\n{\"a\":6}\n"
      "{\"delete\":{\"_index\":\"rn-suite\",\"_id\":\"nope\"}}\n",
      "application/x-ndjson");
  req("POST", "/_bulk",
      "{\"index\":{\"_index\":\"rn-suite\",\"_id\":\"ok\"}}\n{\"a\":7}\n"
      "{\"index\":{\"_index\":\"rn-suite\",\"_id\":\"" +
          std::string(600, 'x') + "\"}}\n{\"a\":8}\n",
      "application/x-ndjson");
  req("PUT", "/rn-suite-strict",
      R"({"settings":{"number_of_shards":1,"number_of_replicas":0},)"
      R"("mappings":{"dynamic":"strict","properties":{"a":{"type":"long"}}}})");
  req("PUT", "/rn-suite-strict/_doc/1", R"({"b":1})");
  req("PUT", "/rn-suite-strict/_doc/2", R"({"a":"not a number"})");
  req("POST", "/rn-suite/_refresh");
  req("GET", "/rn-suite/_count");
  req("DELETE", "/rn-suite");
  req("DELETE", "/rn-suite-strict");
  req("DELETE", "/rn-suite-missing");
  return out;
}

}  // namespace

TEST_CASE("the OpenSearch double answers a request suite as a real node does", "[real][double]") {
  RealNode node("os2");
  node.DeleteIndices({"rn-suite", "rn-suite-strict"});
  auto send_to = [](rfs::net::IHttpTransport& transport) {
    return [&transport](const std::string& method, const std::string& target,
                        const std::string& body, const std::string& type) {
      rfs::net::HttpRequest request;
      request.method = method;
      request.target = target;
      if (!body.empty()) request.headers.emplace_back("Content-Type", type);
      request.body = body;
      auto response = transport.Send(request);
      REQUIRE(response.ok());
      return *std::move(response);
    };
  };
  auto real_transport = rfs::net::BeastHttpTransport::Open({.endpoint = node.url()});
  REQUIRE(real_transport.ok());
  const auto real = RunRequestSuite(send_to(**real_transport));
  auto double_node = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(double_node.ok());
  (*double_node)->AllowProtocolErrors();  // the suite sends malformed requests on purpose
  auto double_transport =
      rfs::net::BeastHttpTransport::Open({.endpoint = (*double_node)->endpoint()});
  REQUIRE(double_transport.ok());
  const auto doubled = RunRequestSuite(send_to(**double_transport));
  REQUIRE(real.size() == doubled.size());
  for (size_t i = 0; i < real.size(); ++i) {
    INFO("real node: " << real[i] << "\ndouble:    " << doubled[i]);
    CHECK(real[i] == doubled[i]);
  }
}

TEST_CASE(
    "three workers in the default mode on a real node survive SIGKILL and SIGSTOP and SIGTERM",
    "[real][generated][chaos]") {
  auto generated = rfs::test::Generate(
      "--docs 3000 --shards 3 --updates 200 --deletes 100 --segments 2 --routing-fraction 0.2 "
      "--seed 1704");
  REQUIRE(generated.has_value());
  const SnapshotDocuments expected = rfs::test::ReadSnapshotDocuments(generated->repo());
  RealNode node("os3");
  const std::string session = "rn-chaos";
  node.DeleteIndices(Names(expected));
  node.DeleteIndices({".migrations_working_state_" + session});
  Runner runner;
  auto start = [&](int n) {
    const std::string name = "w" + std::to_string(n);
    // Coordination in the node's own .migrations_working_state_<session> index (the default).
    return std::make_unique<rfs::test::ChildProcess>(
        std::vector<std::string>{
            RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
            node.url(), "--session-name", session, "--worker-id", name, "--failed-documents-dir",
            runner.dir.File("failed"), "--initial-lease-duration", "PT5S",
            "--lease-renewal-interval", "PT1S", "--documents-per-bulk-request", "50",
            "--max-connections", "2"},
        runner.dir.File(name + ".out"), runner.dir.File(name + ".err"));
  };
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
  int started = 0;
  for (int i = 0; i < 3; ++i) workers.push_back(start(started++));
  // One of each signal, a few seconds apart, each to a worker still running; a stopped worker
  // stays stopped past its lease (5 s) and is continued later.
  const auto began = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ::kill(workers[0]->pid(), SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ::kill(workers[1]->pid(), SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ::kill(workers[2]->pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::seconds(8));
  ::kill(workers[1]->pid(), SIGCONT);
  // Workers are restarted (as a Deployment restarts pods) until one finds no work left.
  bool done = false;
  while (!done && std::chrono::steady_clock::now() - began < std::chrono::minutes(8)) {
    for (auto& worker : workers) {
      if (!worker->Exited()) continue;
      const int code = worker->Wait();
      INFO("a worker exited with " << code);
      CHECK((code == 0 || code == 2 || code == kNoWorkLeft || code == 4 || code == 137));
      if (code == kNoWorkLeft) {
        done = true;
        break;
      }
      worker = start(started++);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE(done);
  for (auto& worker : workers) {
    if (worker->Exited()) continue;
    ::kill(worker->pid(), SIGTERM);
    worker->Wait();
  }
  // Exactly the snapshot's documents: none lost, none doubled, sources and routing as written.
  size_t live = 0;
  for (const auto& [index, docs] : expected) live += docs.size();
  CHECK(rfs::test::CheckNodeHolds(node, expected) == live);
  CHECK((!fs::exists(runner.dir.File("failed")) || fs::is_empty(runner.dir.File("failed"))));
  node.DeleteIndices(Names(expected));
  node.DeleteIndices({".migrations_working_state_" + session});
}

TEST_CASE("OpenSearch 3 snapshots into S3 (s3rver): rfs reads them exactly and catches a target up",
          "[real][s3]") {
  rfs::test::S3Server s3("rn-snapshots");
  // A node of its own: its S3 client points at this s3rver (node settings, keys in its keystore).
  rfs::test::TempDir dir("rfs-real-s3");
  const std::string node_dir = dir.File("node");
  const std::string cluster = std::string(RFS_SOURCE_DIR) + "/scripts/local-cluster";
  const std::string settings = "s3.client.default.endpoint=" + s3.endpoint() +
                               " s3.client.default.protocol=http"
                               " s3.client.default.path_style_access=true"
                               " s3.client.default.region=us-east-1";
  const std::string keys = std::string("s3.client.default.access_key=") +
                           rfs::test::S3Server::kAccessKey +
                           " s3.client.default.secret_key=" + rfs::test::S3Server::kSecretKey;
  Runner runner;
  const int started = runner.Run({"/usr/bin/env", "LOCAL_CLUSTER_SETTINGS=" + settings,
                                  "LOCAL_CLUSTER_SECURE_SETTINGS=" + keys, cluster, "start",
                                  "--dir", node_dir, "--version", "3"});
  INFO(runner.err);
  REQUIRE(started == 0);
  std::string url = runner.out;
  while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
  struct Stop {
    std::string command;
    ~Stop() { std::system(command.c_str()); }
  } stop{cluster + " stop --dir '" + node_dir + "' >/dev/null 2>&1"};
  auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = url});
  REQUIRE(transport.ok());
  auto send = [&](const std::string& method, const std::string& target, const std::string& body) {
    rfs::net::HttpRequest request;
    request.method = method;
    request.target = target;
    request.headers.emplace_back("Content-Type", target.find("_bulk") != std::string::npos
                                                     ? "application/x-ndjson"
                                                     : "application/json");
    request.body = body;
    auto response = (*transport)->Send(request);
    REQUIRE(response.ok());
    INFO(method << " " << target << " -> " << response->status << " " << response->body);
    REQUIRE(response->status / 100 == 2);
    return response->body;
  };
  send("PUT", "/rn-s3", R"({"settings":{"number_of_shards":2,"number_of_replicas":0}})");
  std::string bulk;
  for (int n = 0; n < 200; ++n) {
    bulk += "{\"index\":{\"_index\":\"rn-s3\",\"_id\":\"s" + std::to_string(n) + "\"" +
            (n % 3 == 0 ? ",\"routing\":\"r" + std::to_string(n % 5) + "\"" : std::string()) +
            "}}\n{\"n\":" + std::to_string(n) + ",\"price\":" + std::to_string(n) +
            ".50,\"rating\":-6.1499999999999996E-6}\n";
  }
  send("POST", "/_bulk?refresh=true", bulk);
  // CreateSnapshot has the node write the snapshot into the bucket.
  const int created =
      runner.Run({RFS_CREATE_SNAPSHOT_TOOL, "--source-host", url, "--snapshot-name", "s1",
                  "--s3-repo-uri", "s3://rn-snapshots/os3", "--s3-region", "us-east-1",
                  "--s3-endpoint", s3.endpoint(), "--s3-disable-chunked-encoding"});
  INFO(runner.out << runner.err);
  REQUIRE(created == 0);
  // rfs reads it from S3 (ranged GETs, nothing downloaded): every document as the node has it.
  ::setenv("AWS_ACCESS_KEY_ID", rfs::test::S3Server::kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", rfs::test::S3Server::kSecretKey, 1);
  struct UnsetKeys {
    ~UnsetKeys() {
      ::unsetenv("AWS_ACCESS_KEY_ID");
      ::unsetenv("AWS_SECRET_ACCESS_KEY");
    }
  } unset_keys;
  const std::vector<std::string> s3_repo = {"--s3-repo-uri", "s3://rn-snapshots/os3",
                                            "--s3-region",   "us-east-1",
                                            "--s3-endpoint", s3.endpoint()};
  auto read_docs = [&](const std::string& snapshot) {
    std::vector<std::string> argv = {RFS_INSPECTOR_TOOL, "docs", "--snapshot-name", snapshot};
    argv.insert(argv.end(), s3_repo.begin(), s3_repo.end());
    const int read = runner.Run(argv);
    INFO(runner.err);
    REQUIRE(read == 0);
    SnapshotDocuments docs;
    std::istringstream lines(runner.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      const auto parsed = json::parse(line).as_object();
      // The source as the line carries it: everything after "_source": but the closing brace.
      const auto at = line.find("\"_source\":");
      REQUIRE(at != std::string::npos);
      rfs::test::SnapshotDocument doc;
      doc.source = line.substr(at + 10, line.size() - at - 11);
      if (const auto* r = parsed.if_contains("_routing")) doc.routing = std::string(r->as_string());
      docs[std::string(parsed.at("_index").as_string())]
          [std::string(parsed.at("_id").as_string())] = std::move(doc);
    }
    return docs;
  };
  SnapshotDocuments docs = read_docs("s1");
  REQUIRE(docs["rn-s3"].size() == 200);
  // The node as a RealNode-like view: the same checks as for the fixture's nodes.
  for (const auto& [id, doc] : docs["rn-s3"]) {
    INFO(id);
    const std::string routing = doc.routing ? "?routing=" + *doc.routing : "";
    CHECK(rfs::test::WithoutJsonWhitespace(send("GET", "/rn-s3/_source/" + id + routing, "")) ==
          rfs::test::WithoutJsonWhitespace(doc.source));
  }

  // A delta from S3, coordinated in the target's own index (the default mode): the full s1 into
  // the OpenSearch 3 fixture node, then s1 -> s2 catches it up to s2 exactly.
  RealNode target("os3");
  target.DeleteIndices({"rn-s3"});
  // Stores of an earlier run of the suite were set up for other snapshots of the same names.
  for (const char* session : {"s3-full", "s3-delta"}) {
    target.Send("DELETE", std::string("/.migrations_working_state_") + session);
  }
  std::string changes;
  for (int n = 0; n < 30; n += 3) {
    changes += "{\"index\":{\"_index\":\"rn-s3\",\"_id\":\"s" + std::to_string(n) +
               "\",\"routing\":\"r" + std::to_string(n % 5) + "\"}}\n{\"n\":" + std::to_string(n) +
               ",\"changed\":true}\n";
  }
  for (int n = 100; n < 110; ++n) {
    changes += "{\"delete\":{\"_index\":\"rn-s3\",\"_id\":\"s" + std::to_string(n) + "\"" +
               (n % 3 == 0 ? ",\"routing\":\"r" + std::to_string(n % 5) + "\"" : std::string()) +
               "}}\n";
  }
  changes += "{\"index\":{\"_index\":\"rn-s3\",\"_id\":\"new\"}}\n{\"n\":-1}\n";
  send("POST", "/_bulk?refresh=true", changes);
  REQUIRE(runner.Run({RFS_CREATE_SNAPSHOT_TOOL, "--source-host", url, "--snapshot-name", "s2",
                      "--s3-repo-uri", "s3://rn-snapshots/os3", "--s3-region", "us-east-1",
                      "--s3-endpoint", s3.endpoint(), "--s3-disable-chunked-encoding"}) == 0);
  auto migrate = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {RFS_DOCUMENTS_TOOL, "--target-host", target.url()};
    argv.insert(argv.end(), s3_repo.begin(), s3_repo.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    return runner.Run(argv);
  };
  REQUIRE(migrate({"--snapshot-name", "s1", "--session-name", "s3-full"}) == kNoWorkLeft);
  const int caught_up = migrate(
      {"--snapshot-name", "s2", "--previous-snapshot-name", "s1", "--session-name", "s3-delta"});
  INFO(runner.out << runner.err);
  REQUIRE(caught_up == kNoWorkLeft);
  CHECK(runner.out.find("of those, 10 deletes") != std::string::npos);
  CHECK(rfs::test::CheckNodeHolds(target, read_docs("s2")) == 200 - 10 + 1);
  target.DeleteIndices({"rn-s3"});
}

namespace {

// One index per node with a field of every type rfs rebuilds, and documents whose values are
// each type's canonical printing (sorted arrays without duplicates, dates in the first format),
// so a document rebuilt from doc values and stored fields must equal the one indexed.
constexpr const char* kRebuildProperties = R"({
  "kw":{"type":"keyword"},"l":{"type":"long"},"i":{"type":"integer"},"s":{"type":"short"},
  "b":{"type":"byte"},"d":{"type":"double"},"f":{"type":"float"},"hf":{"type":"half_float"},
  "sf":{"type":"scaled_float","scaling_factor":100},"ul":{"type":"unsigned_long"},
  "flag":{"type":"boolean"},"dt":{"type":"date"},
  "dt2":{"type":"date","format":"yyyy/MM/dd HH:mm:ss||epoch_millis"},
  "dn":{"type":"date_nanos"},"ip":{"type":"ip"},"geo":{"type":"geo_point"},
  "txt":{"type":"text","store":true},
  "obj":{"properties":{"inner":{"properties":{"kw":{"type":"keyword"},"n":{"type":"long"}}}}}})";

// Fields with neither doc values nor store, which only points keep (the source-disabled case).
constexpr const char* kPointsProperties = R"({
  "pl":{"type":"long","doc_values":false},"pi":{"type":"integer","doc_values":false},
  "pd":{"type":"double","doc_values":false},"phf":{"type":"half_float","doc_values":false},
  "pip":{"type":"ip","doc_values":false},"pdt":{"type":"date","doc_values":false},
  "tkw":{"type":"keyword","doc_values":false},"tb":{"type":"boolean","doc_values":false}})";

// kRebuildProperties, with kPointsProperties when `points`.
std::string RebuildProperties(bool points) {
  json::object properties = json::parse(kRebuildProperties).as_object();
  if (points) {
    const json::value extra = json::parse(kPointsProperties);
    for (const auto& [name, field] : extra.as_object()) properties[name] = field;
  }
  return json::serialize(properties);
}

json::object RebuildDocument(int n, bool points = false) {
  json::object doc;
  if (points) {
    // Several values as points give them back: ascending, duplicates kept.
    if (n % 4 == 0) {
      doc["pl"] = json::array{-7, 3 * n, 3 * n};
    } else {
      doc["pl"] = 1000000007LL * n + 5;
    }
    doc["pi"] = -11 * n;
    doc["pd"] = n * 1.5 - 0.25;
    doc["phf"] = n + 0.5;
    doc["pip"] = "192.168.1." + std::to_string(n);
    doc["pdt"] = "2023-05-" + std::string(n % 28 + 1 < 10 ? "0" : "") + std::to_string(n % 28 + 1) +
                 "T01:02:03.456Z";
    // Keywords and booleans kept only as terms come back sorted, each once.
    if (n % 4 == 0) {
      doc["tkw"] = json::array{"a" + std::to_string(n), "z" + std::to_string(n)};
    } else {
      doc["tkw"] = "t" + std::to_string(n);
    }
    doc["tb"] = n % 3 == 0;
  }
  if (n % 4 == 0) {
    doc["kw"] = json::array{"a" + std::to_string(n), "b" + std::to_string(n)};
    doc["l"] = json::array{-5, n, 1000000007LL * n + 1};
  } else {
    doc["kw"] = "k" + std::to_string(n);
    doc["l"] = 1000000007LL * n;
  }
  doc["i"] = -n;
  doc["s"] = n * 3;
  doc["b"] = n % 100;
  doc["d"] = n + 0.25;
  doc["f"] = n + 0.5;
  doc["hf"] = n + 0.5;
  doc["sf"] = n + 0.07;
  doc["ul"] = UINT64_MAX - static_cast<uint64_t>(n);
  doc["flag"] = n % 2 == 0;
  doc["dt"] = "2024-01-" + std::string(n % 28 + 1 < 10 ? "0" : "") + std::to_string(n % 28 + 1) +
              "T10:11:12.345Z";
  doc["dt2"] = "2024/03/04 05:06:" + std::string(n < 10 ? "0" : "") + std::to_string(n % 60);
  doc["dn"] = "2024-01-02T10:11:12.123456789Z";
  doc["ip"] = n % 3 == 0 ? "2001:db8::" + std::to_string(n + 1) : "10.0.0." + std::to_string(n);
  if (n % 5 != 0) doc["geo"] = json::object{{"lat", 41.12}, {"lon", -71.34 + n}};
  doc["txt"] = "some text " + std::to_string(n);
  doc["obj"] = json::object{{"inner", json::object{{"kw", "o" + std::to_string(n)}, {"n", n}}}};
  return doc;
}

// Equal JSON, numbers compared as numbers and the geo point within Lucene's encoding precision.
void CheckSameDocument(const json::value& rebuilt, const json::value& expected,
                       const std::string& path = "") {
  INFO(path << ": rebuilt " << json::serialize(rebuilt) << " expected "
            << json::serialize(expected));
  if (expected.is_number() && rebuilt.is_number()) {
    if (path.starts_with("geo.")) {
      CHECK(std::abs(rebuilt.to_number<double>() - expected.to_number<double>()) < 1e-6);
    } else if (expected.is_double() || rebuilt.is_double()) {
      CHECK(rebuilt.to_number<double>() == expected.to_number<double>());
    } else {
      CHECK(rebuilt == expected);
    }
    return;
  }
  if (expected.is_object() && rebuilt.is_object()) {
    std::set<std::string> keys;
    for (const auto& [key, value] : expected.get_object()) keys.emplace(key);
    for (const auto& [key, value] : rebuilt.get_object()) keys.emplace(key);
    for (const auto& key : keys) {
      const json::value* a = rebuilt.get_object().if_contains(key);
      const json::value* b = expected.get_object().if_contains(key);
      INFO("field " << path << key);
      REQUIRE(a != nullptr);
      REQUIRE(b != nullptr);
      CheckSameDocument(*a, *b, path + key + ".");
    }
    return;
  }
  if (expected.is_array() && rebuilt.is_array() &&
      expected.get_array().size() == rebuilt.get_array().size()) {
    for (size_t i = 0; i < expected.get_array().size(); ++i) {
      CheckSameDocument(rebuilt.get_array()[i], expected.get_array()[i], path);
    }
    return;
  }
  CHECK(rebuilt == expected);
}

// Creates `index` on `node` (with `settings` and `source` mapping parts and `properties`),
// indexes 30 documents made by `make` in three refreshed segments, updates one and deletes one,
// and snapshots it. The documents the index then holds, by _id.
std::map<std::string, json::object> IndexForRebuild(RealNode& node, const std::string& index,
                                                    const std::string& settings,
                                                    const std::string& source_mapping,
                                                    fs::path& repo, const std::string& properties,
                                                    const std::function<json::object(int)>& make) {
  node.DeleteIndices({index});
  node.Ok("PUT", "/" + index,
          R"({"settings":{"number_of_shards":1,"number_of_replicas":0)" + settings +
              R"(},"mappings":{)" + source_mapping + R"("properties":)" + properties + "}}");
  std::map<std::string, json::object> held;
  for (int batch = 0; batch < 3; ++batch) {
    std::string body;
    for (int n = batch * 10; n < batch * 10 + 10; ++n) {
      const std::string id = "r" + std::to_string(n);
      body += "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"" + id + "\"}}\n";
      held[id] = make(n);
      body += json::serialize(held[id]) + "\n";
    }
    node.Ok("POST", "/_bulk?refresh=true", body);
  }
  held["r3"] = make(33);
  node.Ok("PUT", "/" + index + "/_doc/r3?refresh=true", json::serialize(held["r3"]));
  node.Ok("DELETE", "/" + index + "/_doc/r7?refresh=true");
  held.erase("r7");
  repo = SnapshotOnNode(node, "rn-rebuild-repo", "s-" + index, index);
  return held;
}

// The same with kRebuildProperties (and kPointsProperties when `points`) and RebuildDocument.
std::map<std::string, json::object> IndexForRebuild(RealNode& node, const std::string& index,
                                                    const std::string& settings,
                                                    const std::string& source_mapping,
                                                    fs::path& repo, bool points = false) {
  return IndexForRebuild(node, index, settings, source_mapping, repo, RebuildProperties(points),
                         [points](int n) { return RebuildDocument(n, points); });
}

// Reads the snapshot of `index` in `repo` with its documents rebuilt: all `count` of them are
// rebuilt, and each equals the node's own GET _doc answer (its derived or synthetic source,
// printed by its own mappers). The documents read.
SnapshotDocuments RebuiltAsTheNodeReturnsThem(RealNode& node, const fs::path& repo,
                                              const std::string& index, size_t count) {
  uint64_t rebuilt = 0;
  SnapshotDocuments read =
      rfs::test::ReadSnapshotDocuments(repo, "s-" + index, /*rebuild=*/true, &rebuilt);
  REQUIRE(read.count(index) == 1);
  CHECK(read.at(index).size() == count);
  CHECK(rebuilt == count);
  for (const auto& [id, doc] : read.at(index)) {
    INFO("_id " << id << " rebuilt " << doc.source);
    const json::value answer = node.Ok("GET", "/" + index + "/_doc/" + id);
    CheckSameDocument(json::parse(doc.source), answer.at("_source"));
  }
  return read;
}

}  // namespace

TEST_CASE("documents of an index with _source disabled are rebuilt as they were indexed",
          "[real][sourceless]") {
  RealNode node("os2");
  const std::string index = "rn-source-disabled";
  fs::path repo;
  // With fields only points keep (numbers, a date and an address without doc values), and
  // fields only terms keep (a keyword and a boolean without doc values).
  const auto held =
      IndexForRebuild(node, index, "", R"("_source":{"enabled":false},)", repo, /*points=*/true);
  uint64_t rebuilt = 0;
  const SnapshotDocuments read =
      rfs::test::ReadSnapshotDocuments(repo, "s-" + index, /*rebuild=*/true, &rebuilt);
  REQUIRE(read.count(index) == 1);
  CHECK(read.at(index).size() == held.size());
  // OpenSearch 2 keeps `_recovery_source` of recent operations (the exact document) and rfs
  // prefers it; the others are rebuilt. Either way each equals the document indexed, date_nanos
  // aside (printed to the millisecond by its default format, as the node's derived source does).
  INFO(rebuilt << " of " << held.size() << " rebuilt");
  for (auto [id, expected] : held) {
    if (read.at(index).count(id) == 1 &&
        read.at(index).at(id).source.find(".123456789Z") == std::string::npos) {
      expected["dn"] = "2024-01-02T10:11:12.123Z";
    }
    INFO("_id " << id);
    REQUIRE(read.at(index).count(id) == 1);
    CheckSameDocument(json::parse(read.at(index).at(id).source), expected);
  }
  // Every document rebuilt, none taken from `_recovery_source`: the fields only points keep come
  // back from the points (ascending, duplicates kept), those only terms keep from the terms
  // dictionary and postings (sorted, each once).
  uint64_t all_rebuilt = 0;
  const SnapshotDocuments rebuilt_all = rfs::test::ReadSnapshotDocuments(
      repo, "s-" + index, /*rebuild=*/true, &all_rebuilt, /*rebuild_all=*/true);
  REQUIRE(rebuilt_all.count(index) == 1);
  CHECK(all_rebuilt == held.size());
  for (auto [id, expected] : held) {
    expected["dn"] = "2024-01-02T10:11:12.123Z";
    INFO("_id " << id << " rebuilt");
    REQUIRE(rebuilt_all.at(index).count(id) == 1);
    const json::value doc = json::parse(rebuilt_all.at(index).at(id).source);
    REQUIRE(doc.as_object().contains("pl"));
    REQUIRE(doc.as_object().contains("tkw"));
    REQUIRE(doc.as_object().contains("tb"));
    CheckSameDocument(doc, expected);
  }

  // The tools. evaluate says how the index's documents migrate and what cannot be rebuilt.
  RealNode target("os3");
  target.DeleteIndices({index});
  Runner runner;
  REQUIRE(runner.Run({RFS_METADATA_TOOL, "evaluate", "--snapshot-local-dir", repo.string(),
                      "--snapshot-name", "s-" + index, "--output", "json"}) == 0);
  {
    INFO(runner.out << runner.err);
    CHECK(runner.out.find("_source disabled") != std::string::npos);
    CHECK(runner.out.find("--enable-sourceless-migrations") != std::string::npos);
    // What the run will do: the documents that keep _recovery_source are sent from it, only the
    // others are rebuilt (and only then do the rebuild's limits matter).
    if (rebuilt == 0) {
      CHECK(runner.out.find("all " + std::to_string(held.size()) +
                            " live documents are sent exactly from their _recovery_source") !=
            std::string::npos);
      CHECK(runner.out.find("geo_point to Lucene") == std::string::npos);
    } else {
      CHECK(runner.out.find(std::to_string(held.size() - rebuilt) + " of the " +
                            std::to_string(held.size()) + " live documents exactly") !=
            std::string::npos);
      CHECK(runner.out.find("geo_point to Lucene") != std::string::npos);
      CHECK(runner.out.find("tkw: from the terms index") != std::string::npos);
    }
  }
  // Without the flag the index stops the run before any work, naming the index and the flag;
  // with it every document arrives rebuilt.
  std::vector<std::string> args = {
      RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo.string(),
      "--snapshot-name",  "s-" + index,           "--target-host",
      target.url(),       "--coordinator-db",     runner.dir.File("coordination.sqlite")};
  const int refused = runner.Run(args);
  INFO(runner.out << runner.err);
  CHECK(refused == 64);
  CHECK(runner.err.find(index) != std::string::npos);
  CHECK(runner.err.find("--enable-sourceless-migrations") != std::string::npos);
  CHECK(target.Send("GET", "/" + index + "/_count").status == 404);
  // The target index as MetadataMigration creates it (dynamic mapping cannot hold unsigned_long).
  target.Ok(
      "PUT", "/" + index,
      R"({"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":)" +
          RebuildProperties(/*points=*/true) + "}}");
  args.push_back("--enable-sourceless-migrations");
  args[8] = runner.dir.File("coordination-2.sqlite");
  const int migrated = runner.Run(args);
  INFO(runner.out << runner.err);
  CHECK(migrated == kNoWorkLeft);  // every item done
  target.Ok("POST", "/" + index + "/_refresh");
  CHECK(target.Ok("GET", "/" + index + "/_count").at("count").to_number<uint64_t>() == held.size());
  const json::value r4 = target.Ok("GET", "/" + index + "/_doc/r4");
  CheckSameDocument(r4.at("_source"), json::parse(read.at(index).at("r4").source));
  target.DeleteIndices({index});
  node.DeleteIndices({index});
}

TEST_CASE("evaluate says documents kept in _recovery_source migrate exactly, as the run then does",
          "[real][sourceless]") {
  // OpenSearch 2.19 keeps `_recovery_source` for recent operations of a `_source`-disabled
  // index. Fields no rebuild can give back (text, flat_object, wildcard) then come back exactly
  // from it, so evaluate must not say they "cannot be rebuilt": it says what the run will do.
  RealNode node("os2");
  RealNode target("os3");
  const std::string index = "rn-recovery-source";
  node.DeleteIndices({index});
  target.DeleteIndices({index});
  const std::string properties =
      R"({"title":{"type":"text"},"attrs":{"type":"flat_object"},"path":{"type":"wildcard"}})";
  auto make = [](int n) {
    return json::object{{"title", "the title " + std::to_string(n)},
                        {"attrs", json::object{{"k", "v" + std::to_string(n)}}},
                        {"path", "/a/b/" + std::to_string(n)}};
  };
  fs::path repo;
  const auto held =
      IndexForRebuild(node, index, "", R"("_source":{"enabled":false},)", repo, properties, make);
  Runner runner;
  REQUIRE(runner.Run({RFS_METADATA_TOOL, "evaluate", "--snapshot-local-dir", repo.string(),
                      "--snapshot-name", "s-" + index, "--output", "json"}) == 0);
  {
    INFO(runner.out << runner.err);
    CHECK(runner.out.find("cannot be rebuilt") == std::string::npos);
    CHECK(runner.out.find("all " + std::to_string(held.size()) +
                          " live documents are sent exactly from their _recovery_source") !=
          std::string::npos);
  }
  target.Ok(
      "PUT", "/" + index,
      R"({"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":)" +
          properties + "}}");
  const int migrated =
      runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo.string(), "--snapshot-name",
                  "s-" + index, "--target-host", target.url(), "--coordinator-db",
                  runner.dir.File("coordination.sqlite"), "--enable-sourceless-migrations"});
  INFO(runner.out << runner.err);
  CHECK(migrated == kNoWorkLeft);
  target.Ok("POST", "/" + index + "/_refresh");
  CHECK(target.Ok("GET", "/" + index + "/_count").at("count").to_number<uint64_t>() == held.size());
  for (const auto& [id, expected] : held) {
    INFO("_id " << id);
    CheckSameDocument(target.Ok("GET", "/" + index + "/_doc/" + id).at("_source"), expected);
  }
  target.DeleteIndices({index});
  node.DeleteIndices({index});
}

TEST_CASE("nested objects of an index with _source disabled are rebuilt from their child documents",
          "[real][sourceless]") {
  // Two levels of nested objects (items, their parts) and a second nested path (tags), with
  // 0 to 3 objects each, in two refreshed segments, one document updated. Each rebuilt document
  // equals the indexed one as rfs prints nested objects: in document order, a single one as an
  // object, an empty array left out.
  RealNode node("os2");
  const std::string index = "rn-nested-rebuild";
  node.DeleteIndices({index});
  node.Ok("PUT", "/" + index, R"({"settings":{"number_of_shards":1,"number_of_replicas":0},
    "mappings":{"_source":{"enabled":false},"properties":{
      "name":{"type":"keyword"},
      "items":{"type":"nested","properties":{"sku":{"type":"keyword"},"qty":{"type":"integer"},
        "parts":{"type":"nested","properties":{"pn":{"type":"keyword"}}}}},
      "tags":{"type":"nested","properties":{"t":{"type":"keyword"}}}}}})");
  auto one_or_array = [](json::array objects) -> json::value {
    return objects.size() == 1 ? objects[0] : json::value(std::move(objects));
  };
  std::map<std::string, json::object> indexed, expected;
  auto make = [&](int n, const std::string& id) {
    json::object doc{{"name", "n" + std::to_string(n)}};
    json::object want = doc;
    json::array items, want_items;
    for (int i = 0; i < n % 4; ++i) {
      json::object item{{"sku", "s" + std::to_string(n) + "-" + std::to_string(i)}, {"qty", i}};
      json::object want_item = item;
      json::array parts;
      for (int p = 0; p < (n + i) % 3; ++p)
        parts.push_back(json::object{{"pn", "p" + std::to_string(p)}});
      if (!parts.empty()) {
        item["parts"] = parts;
        want_item["parts"] = one_or_array(parts);
      }
      items.push_back(item);
      want_items.push_back(want_item);
    }
    if (!items.empty()) {
      doc["items"] = items;
      want["items"] = one_or_array(want_items);
    }
    if (n % 2 == 1) {
      doc["tags"] = json::array{json::object{{"t", "odd"}}};
      want["tags"] = json::object{{"t", "odd"}};
    }
    indexed[id] = doc;
    expected[id] = want;
  };
  for (int batch = 0; batch < 2; ++batch) {
    std::string body;
    for (int n = batch * 12; n < batch * 12 + 12; ++n) {
      const std::string id = "n" + std::to_string(n);
      make(n, id);
      body += "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"" + id + "\"}}\n" +
              json::serialize(indexed[id]) + "\n";
    }
    node.Ok("POST", "/_bulk?refresh=true", body);
  }
  make(27, "n5");
  node.Ok("PUT", "/" + index + "/_doc/n5?refresh=true", json::serialize(indexed["n5"]));
  const fs::path repo = SnapshotOnNode(node, "rn-rebuild-repo", "s-" + index, index);
  uint64_t rebuilt = 0;
  const SnapshotDocuments read = rfs::test::ReadSnapshotDocuments(
      repo, "s-" + index, /*rebuild=*/true, &rebuilt, /*rebuild_all=*/true);
  REQUIRE(read.count(index) == 1);
  CHECK(read.at(index).size() == expected.size());
  CHECK(rebuilt == expected.size());
  for (const auto& [id, want] : expected) {
    INFO("_id " << id);
    REQUIRE(read.at(index).count(id) == 1);
    CHECK(json::parse(read.at(index).at(id).source) == json::value(want));
  }
  node.DeleteIndices({index});
}

TEST_CASE("documents of an OpenSearch 3 derived-source index are rebuilt as the node derives them",
          "[real][sourceless]") {
  RealNode node("os3");
  const std::string index = "rn-derived-source";
  fs::path repo;
  const auto held =
      IndexForRebuild(node, index, R"(,"index.derived_source.enabled":true)", "", repo);
  const SnapshotDocuments read = RebuiltAsTheNodeReturnsThem(node, repo, index, held.size());
  // DocumentsFromSnapshotMigration rebuilds them into OpenSearch 2 and says how many it rebuilt.
  RealNode target("os2");
  target.DeleteIndices({index});
  target.Ok(
      "PUT", "/" + index,
      R"({"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":)" +
          std::string(kRebuildProperties) + "}}");
  Runner runner;
  const int code =
      runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo.string(), "--snapshot-name",
                  "s-" + index, "--target-host", target.url(), "--coordinator-db",
                  runner.dir.File("coordination.sqlite"), "--enable-sourceless-migrations"});
  INFO(runner.out << runner.err);
  CHECK(code == kNoWorkLeft);
  CHECK(runner.out.find(std::to_string(held.size()) + " documents rebuilt") != std::string::npos);
  // Counted per index: the documents rebuilt, and those with a value that may differ from the
  // one indexed (these documents all hold a half_float, kept to 11 significant bits).
  CHECK(runner.out.find(index + ": " + std::to_string(held.size()) + " rebuilt, " +
                        std::to_string(held.size()) + " of them with a value that may differ") !=
        std::string::npos);
  target.Ok("POST", "/" + index + "/_refresh");
  CHECK(target.Ok("GET", "/" + index + "/_count").at("count").to_number<uint64_t>() == held.size());
  CheckSameDocument(target.Ok("GET", "/" + index + "/_doc/r5").at("_source"),
                    json::parse(read.at(index).at("r5").source));
  target.DeleteIndices({index});
  node.DeleteIndices({index});
}

TEST_CASE(
    "documents of an Elasticsearch 8 synthetic-source index are rebuilt as the node returns them",
    "[real][sourceless]") {
  // Elasticsearch 8.19's own synthetic source is the reference: every document rfs rebuilds
  // equals the node's GET _doc answer. The fields of kRebuildProperties this node can map (no
  // scaled_float or unsigned_long: their modules are not published), plus what Elasticsearch's
  // synthetic source keeps on the side: a text field without a keyword sub-field (stored by
  // the node whatever the mapping says), and keywords over ignore_above (kept in stored
  // `<field>._original`), directly and as a text's sub-field.
  RealNode node("es8");
  const std::string index = "rn-es8-synthetic";
  json::object properties = json::parse(kRebuildProperties).as_object();
  properties.erase("sf");
  properties.erase("ul");
  properties["plain"] = json::object{{"type", "text"}};
  properties["short_kw"] = json::object{{"type", "keyword"}, {"ignore_above", 4}};
  properties["titled"] =
      json::parse(R"({"type":"text","fields":{"raw":{"type":"keyword","ignore_above":6}}})");
  auto make = [](int n) {
    json::object doc = RebuildDocument(n);
    doc.erase("sf");
    doc.erase("ul");
    const std::string k = std::to_string(n);
    // Arrays in an order and with repeats that the rebuild must keep or sort as the node does.
    doc["plain"] = n % 3 == 0 ? json::value(json::array{"second " + k, "first " + k})
                              : json::value("plain " + k);
    doc["short_kw"] = json::array{"long-" + k, "s" + k, "s" + k, "aaaaaa" + k};
    doc["titled"] =
        n % 2 == 0 ? json::value(json::array{"a title " + k, "t" + k}) : json::value("t" + k);
    return doc;
  };
  fs::path repo;
  const auto held = IndexForRebuild(node, index, R"(,"index.mapping.source.mode":"synthetic")", "",
                                    repo, json::serialize(properties), make);
  const SnapshotDocuments read = RebuiltAsTheNodeReturnsThem(node, repo, index, held.size());
  // The date_nanos value keeps its nanoseconds, as Elasticsearch prints them.
  CHECK(read.at(index).at("r1").source.find("10:11:12.123456789Z") != std::string::npos);

  node.DeleteIndices({index});
}

TEST_CASE("cosine dense_vectors of an Elasticsearch 8 synthetic-source index keep their magnitude",
          "[real][sourceless]") {
  // Elasticsearch 8 normalizes a cosine vector to unit length before indexing it and keeps the
  // magnitude in `<field>._magnitude` doc values; its synthetic source multiplies it back. The
  // rebuild must return each vector as the node does, not normalized: vectors of many lengths,
  // some already of unit length (which keep no magnitude), in a nested-free mapping.
  RealNode node("es8");
  const std::string index = "rn-es8-cosine";
  const std::string properties =
      R"({"v":{"type":"dense_vector","dims":3,"index":true,"similarity":"cosine"},
          "n":{"type":"long"}})";
  auto make = [](int n) {
    json::array v;
    if (n % 5 == 0) {
      v = json::array{0.0, 1.0, 0.0};
    } else {
      v = json::array{n + 0.5, -1.25 * n, 3.75 + n % 7};
    }
    return json::object{{"v", v}, {"n", n}};
  };
  fs::path repo;
  const auto held = IndexForRebuild(node, index, R"(,"index.mapping.source.mode":"synthetic")", "",
                                    repo, properties, make);
  const SnapshotDocuments read = RebuiltAsTheNodeReturnsThem(node, repo, index, held.size());
  // Not of unit length: the magnitude was multiplied back.
  const json::value r1 = json::parse(read.at(index).at("r1").source);
  CHECK(r1.at("v").as_array().at(2).to_number<double>() > 4.0);
  node.DeleteIndices({index});
}

TEST_CASE("time_series and logsdb indices of Elasticsearch 8 are rebuilt as the node returns them",
          "[real][sourceless]") {
  // Both modes keep every field's doc values in Elasticsearch's TSDB format (ES87TSDB written by
  // 8.18, ES819TSDB by 8.19): numbers in blocks of 128 (delta, offset and gcd encoded, or
  // constant), ordinals in runs, cycles or packed. 8.19's logsdb also keeps arrays as sent
  // (order, repeats and nulls) in `<field>.offsets`. 1,500 documents in three segments: several
  // blocks per field, dense and sparse fields, a keyword with a single value in every document,
  // arrays in some documents.
  const std::string node_name = GENERATE(as<std::string>(), "es8", "es818");
  RealNode node(node_name);
  const std::string properties = R"({
    "@timestamp":{"type":"date"},"host":{"type":"keyword","time_series_dimension":true},
    "cpu":{"type":"double","time_series_metric":"gauge"},
    "reqs":{"type":"long","time_series_metric":"counter"},
    "env":{"type":"keyword"},"tags":{"type":"keyword"},"ip":{"type":"ip"},"flag":{"type":"boolean"},
    "f":{"type":"float"},"msg":{"type":"text"},"dn":{"type":"date_nanos"},"i":{"type":"integer"}})";
  auto make = [](int n, bool arrays_as_sent) {
    auto two = [](int v) { return v < 10 ? "0" + std::to_string(v) : std::to_string(v); };
    // A distinct instant per document: a time_series index refuses a second document with the
    // same dimensions and timestamp.
    const int t = n * 61;
    json::object doc{{"@timestamp", "2024-01-" + two(t / 86400 + 1) + "T" + two(t / 3600 % 24) +
                                        ":" + two(t / 60 % 60) + ":" + two(t % 60) + ".5Z"},
                     {"host", "h" + std::to_string(n % 7)},
                     {"reqs", int64_t{1000} * n + n * 37 % 1000},
                     {"env", "prod"},
                     {"ip", "10.1." + std::to_string(n % 256) + "." + std::to_string(n % 200)},
                     {"flag", n % 3 == 0},
                     {"f", n + 0.25},
                     {"msg", "message " + std::to_string(n)},
                     {"dn", "2024-01-02T10:11:12." + std::to_string(100000000 + n * 12345) + "Z"},
                     {"i", n % 13 == 0 ? 7 : -n}};
    if (n % 17 != 0) doc["cpu"] = n % 5 == 0 ? 1.5 : n * 0.125;
    if (n % 2 == 1) {
      doc["tags"] = json::array{"t" + std::to_string(n % 3), "a" + std::to_string(n % 11)};
    } else if (n % 4 == 0) {
      doc["tags"] = "solo";
    }
    if (arrays_as_sent && n % 19 == 0) {
      doc["reqs"] = json::array{5, n, 3, 5};
      doc["tags"] = json::array{"z", nullptr, "b", "z"};
    }
    return doc;
  };
  for (const std::string mode : {"time_series", "logsdb"}) {
    const std::string index = "rn-" + node_name + "-" + mode;
    const bool logsdb = mode == "logsdb";
    node.DeleteIndices({index});
    json::object mapping = json::parse(properties).as_object();
    std::string settings =
        R"({"number_of_shards":1,"number_of_replicas":0,"index.mode":")" + mode + "\"";
    if (logsdb) {
      mapping["host"].as_object().erase("time_series_dimension");
      mapping["cpu"].as_object().erase("time_series_metric");
      mapping["reqs"].as_object().erase("time_series_metric");
    } else {
      settings += R"(,"index.routing_path":["host"],"index.time_series.start_time":)"
                  R"("2020-01-01T00:00:00Z","index.time_series.end_time":"2030-01-01T00:00:00Z")";
    }
    node.Ok("PUT", "/" + index,
            settings.insert(0, R"({"settings":)") + R"(},"mappings":{"properties":)" +
                json::serialize(mapping) + "}}");
    for (int batch = 0; batch < 3; ++batch) {
      std::string body;
      for (int n = batch * 500; n < batch * 500 + 500; ++n) {
        body += "{\"create\":{\"_index\":\"" + index + "\"}}\n" + json::serialize(make(n, logsdb)) +
                "\n";
      }
      const json::value bulk = node.Ok("POST", "/_bulk?refresh=true", body);
      INFO(json::serialize(bulk).substr(0, 2000));
      REQUIRE(!bulk.at("errors").as_bool());
    }
    const fs::path repo = SnapshotOnNode(node, "rn-rebuild-repo", "s-" + index, index);
    // The node's own synthetic sources, by _id.
    std::map<std::string, json::value> synthetic;
    const json::value hits =
        node.Ok("POST", "/" + index + "/_search?size=2000", R"({"query":{"match_all":{}}})");
    for (const auto& hit : hits.at("hits").at("hits").as_array()) {
      synthetic[std::string(hit.at("_id").as_string())] = hit.at("_source");
    }
    REQUIRE(synthetic.size() == 1500);
    uint64_t rebuilt = 0;
    const SnapshotDocuments read =
        rfs::test::ReadSnapshotDocuments(repo, "s-" + index, /*rebuild=*/true, &rebuilt,
                                         /*rebuild_all=*/true);
    REQUIRE(read.count(index) == 1);
    CHECK(read.at(index).size() == synthetic.size());
    CHECK(rebuilt == synthetic.size());
    size_t arrays = 0;
    for (const auto& [id, doc] : read.at(index)) {
      INFO(mode << " _id " << id << " rebuilt " << doc.source);
      REQUIRE(synthetic.count(id) == 1);
      const json::value rebuilt_doc = json::parse(doc.source);
      CheckSameDocument(rebuilt_doc, synthetic.at(id));
      if (rebuilt_doc.at("reqs").is_array()) ++arrays;
    }
    // logsdb's arrays come back as sent, with their repeats: [5, n, 3, 5].
    CHECK(arrays == (logsdb ? 79u : 0u));
    node.DeleteIndices({index});
  }
}

TEST_CASE("a _source cut by excludes is completed with the fields it left out",
          "[real][sourceless]") {
  RealNode node("os2");
  const std::string index = "rn-source-excludes";
  node.DeleteIndices({index});
  node.Ok("PUT", "/" + index,
          R"({"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{)"
          R"("_source":{"excludes":["secret","meta.*"]},"properties":{"title":{"type":"text"},)"
          R"("secret":{"type":"keyword"},"meta":{"properties":{"x":{"type":"long"},)"
          R"("y":{"type":"keyword"}}}}}})");
  std::map<std::string, json::object> held;
  std::string body;
  for (int n = 0; n < 20; ++n) {
    const std::string id = "x" + std::to_string(n);
    json::object doc{{"title", "title " + std::to_string(n)}};
    if (n % 3 != 0) doc["secret"] = "s" + std::to_string(n);
    doc["meta"] = json::object{{"x", n * 7}, {"y", "y" + std::to_string(n)}};
    held[id] = doc;
    body += "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"" + id + "\"}}\n" +
            json::serialize(doc) + "\n";
  }
  node.Ok("POST", "/_bulk?refresh=true", body);
  const fs::path repo = SnapshotOnNode(node, "rn-rebuild-repo", "s-" + index, index);
  // As stored: without the excluded fields.
  const SnapshotDocuments cut = rfs::test::ReadSnapshotDocuments(repo, "s-" + index);
  REQUIRE(cut.at(index).size() == held.size());
  CHECK(cut.at(index).at("x1").source.find("secret") == std::string::npos);
  // Completed: every document as it was indexed.
  uint64_t completed = 0;
  const SnapshotDocuments read =
      rfs::test::ReadSnapshotDocuments(repo, "s-" + index, /*rebuild=*/true, &completed);
  REQUIRE(read.at(index).size() == held.size());
  CHECK(completed == held.size());
  for (const auto& [id, expected] : held) {
    INFO("_id " << id);
    CheckSameDocument(json::parse(read.at(index).at(id).source), expected);
  }
  // Without the flag the tool stops, naming the index, what is cut and the flag.
  Runner runner;
  const int code = runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo.string(),
                               "--snapshot-name", "s-" + index, "--target-host", node.url(),
                               "--coordinator-db", runner.dir.File("coordination.sqlite")});
  INFO(runner.out << runner.err);
  CHECK(code == 64);
  CHECK(runner.err.find("keeps only part of each _source") != std::string::npos);
  CHECK(runner.err.find("--enable-sourceless-migrations") != std::string::npos);
  node.DeleteIndices({index});
}

TEST_CASE("Elasticsearch 7.10 best_compression doc values rebuild what the stored sources hold",
          "[real][sourceless]") {
  // The most common migration source: ES 7.10 (Lucene 8.7) with index.codec best_compression,
  // whose binary doc values and larger terms dictionaries are LZ4-compressed. Every document is
  // rebuilt (also those with a stored _source) and compared with the stored one.
  RealNode node("es7");
  const std::string index = "rn-es7-rebuild";
  node.DeleteIndices({index});
  node.Ok("PUT", "/" + index,
          R"({"settings":{"number_of_shards":1,"number_of_replicas":0,)"
          R"("index.codec":"best_compression"},"mappings":{"properties":{)"
          R"("kw":{"type":"keyword"},"n":{"type":"long"},"flag":{"type":"boolean"},)"
          R"("blob":{"type":"binary","doc_values":true},"ip":{"type":"ip"},)"
          R"("when":{"type":"date"}}}})");
  std::map<std::string, json::object> held;
  for (int batch = 0; batch < 2; ++batch) {
    std::string body;
    for (int n = batch * 60; n < batch * 60 + 60; ++n) {
      const std::string id = "e" + std::to_string(n);
      json::object doc{{"kw", "keyword-value-" + std::to_string(1000 + n)},
                       {"n", n * 1000003LL - 50},
                       {"flag", n % 2 == 0},
                       {"blob", n % 4 == 0 ? "AAECAwQ=" : "aGVsbG8gd29ybGQgIyIgKyBzdHJpbmcoTik="},
                       {"ip", "192.168.1." + std::to_string(n)},
                       {"when", "2023-05-0" + std::to_string(n % 9 + 1) + "T01:02:03.004Z"}};
      held[id] = doc;
      body += "{\"index\":{\"_index\":\"" + index + "\",\"_id\":\"" + id + "\"}}\n" +
              json::serialize(doc) + "\n";
    }
    node.Ok("POST", "/_bulk?refresh=true", body);
  }
  const fs::path repo = SnapshotOnNode(node, "rn-rebuild-repo", "s-" + index, index);
  auto base = rfs::snapshot::FileSystemRepo::Open(repo.string());
  REQUIRE(base.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*base);
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->FindSnapshot("s-" + index);
  REQUIRE(snapshot.ok());
  auto metadata = (*repository)->ReadIndexMetadata(**snapshot, index);
  REQUIRE(metadata.ok());
  auto plan = rfs::lucene::SourceRebuildPlan::FromMapping(
      rfs::lucene::DescribeIndexSource(*metadata).mapping);
  REQUIRE(plan.ok());
  rfs::lucene::ShardReaderOptions options;
  options.rebuild_plan = std::make_shared<const rfs::lucene::SourceRebuildPlan>(*plan);
  options.rebuild_stored_sources = true;
  auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, index, 0, options);
  INFO(reader.status().ToString());
  REQUIRE(reader.ok());
  auto cursor = (*reader)->OpenAt(0);
  REQUIRE(cursor.ok());
  rfs::lucene::Document doc;
  size_t compared = 0;
  while (true) {
    auto more = (*cursor)->Next(doc);
    INFO(more.status().ToString());
    REQUIRE(more.ok());
    if (!*more) break;
    INFO("_id " << doc.id);
    REQUIRE(doc.rebuilt);
    const json::value rebuilt = json::parse(
        std::string_view(reinterpret_cast<const char*>(doc.source.data()), doc.source.size()));
    CheckSameDocument(rebuilt, held.at(doc.id));
    ++compared;
  }
  CHECK(compared == held.size());
  node.DeleteIndices({index});
}

namespace {

// Snapshots A, B (after updates, deletes, new documents and a new index) and C (B force-merged to
// one segment) of `index` on `node`; the deltas A->B, A->C, B->C and C->A leave exactly the newer
// snapshot's documents, and A->B reads and sends only what changed.
void CheckDeltasOnNode(const std::string& node_name, const std::string& settings) {
  RealNode node(node_name);
  const std::string index = "rn-delta", added = "rn-delta-added", moved = "rn-delta-routing";
  node.DeleteIndices({index, added, moved});
  // One shard: a document whose routing changes stays in it (Lucene replaces it by _id).
  node.Ok("PUT", "/" + moved,
          R"({"settings":{"number_of_shards":1,"number_of_replicas":0)" + settings + "}}");
  node.Ok("PUT", "/" + moved + "/_doc/x?routing=a&refresh=true", R"({"where":"a"})");
  node.Ok("PUT", "/" + index,
          R"({"settings":{"number_of_shards":2,"number_of_replicas":0)" + settings +
              R"(},"mappings":{"properties":{"n":{"type":"long"},
              "items":{"type":"nested","properties":{"k":{"type":"keyword"}}}}}})");
  auto doc_line = [&](const std::string& target, int n, int version) {
    json::object action{{"_index", target}, {"_id", "d" + std::to_string(n)}};
    if (n % 5 == 0) action["routing"] = "r" + std::to_string(n % 3);
    json::object source{{"n", n}, {"v", version}};
    if (n % 4 == 0) {
      source["items"] =
          json::array{json::object{{"k", "a" + std::to_string(version)}}, json::object{{"k", "b"}}};
    }
    return json::serialize(json::object{{"index", action}}) + "\n" + json::serialize(source) + "\n";
  };
  for (int batch = 0; batch < 4; ++batch) {
    std::string body;
    for (int n = batch * 10; n < batch * 10 + 10; ++n) body += doc_line(index, n, 1);
    node.Ok("POST", "/_bulk?refresh=true", body);
  }
  const fs::path repo = SnapshotOnNode(node, "rn-delta-repo", "a", index + "," + moved);
  node.Ok("PUT", "/" + moved + "/_doc/x?routing=b&refresh=true", R"({"where":"b"})");
  std::string body;
  for (int n : {1, 4, 10, 22, 35}) body += doc_line(index, n, 2);  // updated
  for (int n = 40; n < 46; ++n) body += doc_line(index, n, 1);     // new
  for (int n = 0; n < 12; ++n) body += doc_line(added, n, 1);      // a new index
  for (int n : {3, 15, 20, 33}) {
    json::object action{{"_index", index}, {"_id", "d" + std::to_string(n)}};
    if (n % 5 == 0) action["routing"] = "r" + std::to_string(n % 3);
    body += json::serialize(json::object{{"delete", action}}) + "\n";  // deleted
  }
  node.Ok("POST", "/_bulk?refresh=true", body);
  SnapshotOnNode(node, "rn-delta-repo", "b", index + "," + added + "," + moved);
  node.Ok("POST", "/" + index + "/_forcemerge?max_num_segments=1");
  node.Ok("POST", "/" + index + "/_refresh");
  SnapshotOnNode(node, "rn-delta-repo", "c", index + "," + added + "," + moved);

  auto base = rfs::snapshot::FileSystemRepo::Open(repo.string());
  REQUIRE(base.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*base);
  REQUIRE(repository.ok());
  auto a = (*repository)->FindSnapshot("a");
  auto b = (*repository)->FindSnapshot("b");
  auto c = (*repository)->FindSnapshot("c");
  REQUIRE((a.ok() && b.ok() && c.ok()));

  const auto ab = rfs::test::CheckSnapshotDelta(**repository, **a, **b);
  // 5 updated and 6 new documents of the index, the 12 of the new index and x (new routing) are
  // sent; 4 deleted, and x's old copy before it. The segments of A are all in B and only the
  // documents deleted since are read.
  CHECK(ab.stats.docs_to_index == 5 + 6 + 12 + 1);
  CHECK(ab.stats.docs_to_delete == 4 + 1);
  CHECK(ab.stats.segments_shared > 0);
  CHECK(ab.stats.previous_docs_read == 5 + 4 + 1);
  // After a force merge no segment is shared: every document of A is read, the 31 unchanged
  // ones (moved by the merge) are not sent.
  const auto ac = rfs::test::CheckSnapshotDelta(**repository, **a, **c);
  CHECK(ac.stats.docs_to_index == 5 + 6 + 12 + 1);
  CHECK(ac.stats.docs_unchanged == 31);
  CHECK(ac.stats.docs_to_delete == 4 + 1);
  const auto bc = rfs::test::CheckSnapshotDelta(**repository, **b, **c);
  CHECK(bc.stats.docs_to_index == 0);
  CHECK(bc.stats.docs_to_delete == 0);
  // Backwards: the updates are undone, the deleted documents come back, the new ones go.
  const auto ca = rfs::test::CheckSnapshotDelta(**repository, **c, **a);
  CHECK(ca.stats.docs_to_index == 5 + 4 + 1);
  CHECK(ca.stats.docs_to_delete == 6 + 1);
  node.DeleteIndices({index, added, moved});
}

}  // namespace

TEST_CASE("deltas between snapshots of a real OpenSearch 2 node (soft deletes) are exact",
          "[real][delta]") {
  CheckDeltasOnNode("os2", "");
}

TEST_CASE("deltas between snapshots of a real Elasticsearch 7 node with hard deletes are exact",
          "[real][delta]") {
  CheckDeltasOnNode("es7", R"(,"index.soft_deletes.enabled":false)");
}

TEST_CASE("DocumentsFromSnapshotMigration catches a real target up from snapshot A to B",
          "[real][delta]") {
  // A full migration of snapshot A into OpenSearch 3, then the delta A -> B (updates, deletes,
  // new documents with routing and nested objects, a new index): the target then holds exactly
  // B's documents. The delta runs in a store of its own; the full run's store refuses it.
  RealNode source("os2");
  RealNode target("os3");
  const std::string index = "rn-delta-tool", added = "rn-delta-tool-added",
                    gone = "rn-delta-tool-gone";
  source.DeleteIndices({index, added, gone});
  target.DeleteIndices({index, added, gone});
  source.Ok("PUT", "/" + index,
            R"({"settings":{"number_of_shards":2,"number_of_replicas":0},"mappings":{"properties":{
            "items":{"type":"nested","properties":{"k":{"type":"keyword"}}}}}})");
  auto line = [](const std::string& in, int n, int version) {
    json::object action{{"_index", in}, {"_id", "t" + std::to_string(n)}};
    if (n % 3 == 0) action["routing"] = "r" + std::to_string(n % 2);
    json::object doc{{"n", n}, {"v", version}};
    if (n % 4 == 0) doc["items"] = json::array{json::object{{"k", "x" + std::to_string(version)}}};
    return json::serialize(json::object{{"index", action}}) + "\n" + json::serialize(doc) + "\n";
  };
  std::string body;
  for (int n = 0; n < 30; ++n) body += line(index, n, 1);
  for (int n = 0; n < 2; ++n) body += line(gone, n, 1);
  source.Ok("POST", "/_bulk?refresh=true", body);
  const fs::path repo = SnapshotOnNode(source, "rn-delta-tool-repo", "a", index + "," + gone);
  body.clear();
  for (int n : {2, 8, 9}) body += line(index, n, 2);
  for (int n = 30; n < 34; ++n) body += line(index, n, 1);
  for (int n = 0; n < 5; ++n) body += line(added, n, 1);
  for (int n : {5, 6, 12}) {
    json::object action{{"_index", index}, {"_id", "t" + std::to_string(n)}};
    if (n % 3 == 0) action["routing"] = "r" + std::to_string(n % 2);
    body += json::serialize(json::object{{"delete", action}}) + "\n";
  }
  source.Ok("POST", "/_bulk?refresh=true", body);
  SnapshotOnNode(source, "rn-delta-tool-repo", "b", index + "," + added);

  Runner runner;
  // The delta coordinates through PostgreSQL (a table of its session's own), the full run
  // through SQLite.
  rfs::test::PostgresServer postgres;
  auto run = [&](const std::vector<std::string>& extra, const std::string& store) {
    std::vector<std::string> args = {
        RFS_DOCUMENTS_TOOL,
        "--snapshot-local-dir",
        repo.string(),
        "--target-host",
        target.url(),
        "--coordinator-db",
        store.starts_with("postgresql://") ? store : runner.dir.File(store)};
    args.insert(args.end(), extra.begin(), extra.end());
    return runner.Run(args);
  };
  REQUIRE(run({"--snapshot-name", "a"}, "full.sqlite") == kNoWorkLeft);
  CheckNodeHolds(target, rfs::test::ReadSnapshotDocuments(repo, "a"));
  // The full run's store was set up for A alone.
  const int refused = run({"--snapshot-name", "b", "--previous-snapshot-name", "a"}, "full.sqlite");
  CHECK(refused != kNoWorkLeft);
  CHECK(refused != 0);
  // A bad mode is a usage error.
  CHECK(run({"--snapshot-name", "b", "--previous-snapshot-name", "a", "--delta-mode", "ALL"},
            "delta.sqlite") == 64);
  const int caught_up =
      run({"--snapshot-name", "b", "--experimental-previous-snapshot-name", "a",
           "--experimental-delta-mode", "UPDATES_AND_DELETES", "--session-name", "delta_b"},
          postgres.uri());
  INFO(runner.out << runner.err);
  CHECK(caught_up == kNoWorkLeft);
  CHECK(runner.out.find("of those, 3 deletes") != std::string::npos);
  // An index snapshot B no longer holds is reported and left on the target.
  CHECK(runner.out.find("1 indices of the previous snapshot are gone from this one and were left "
                        "as they are on the target (delete them there if they are meant to go): " +
                        gone) != std::string::npos);
  CHECK(target.Ok("GET", "/" + gone + "/_count").at("count") == 2);
  const auto b_docs = rfs::test::ReadSnapshotDocuments(repo, "b");
  CHECK(CheckNodeHolds(target, b_docs) == 31 + 5);
  source.DeleteIndices({index, added, gone});
  target.DeleteIndices({index, added, gone});
}

TEST_CASE("a delta across indices re-created, split or shrunk under their name is exact",
          "[real][delta]") {
  // Each index is migrated from snapshot s2, then reshaped under the same name (deleted and
  // re-created with 3 shards; split from 1 shard to 3 and cloned back; shrunk from 3 shards to 1
  // and cloned back), changed (updates, a routing change, deletes, new documents) and snapshotted
  // as s3. The delta s2 -> s3 must leave exactly s3's documents, whatever order its items run in:
  // a shard's item no longer deletes the ids that moved to another shard, nor misses the ids gone
  // from shards that no longer exist.
  RealNode source("os2");
  RealNode target("os3");
  const std::string recreated = "rn-reshape-recreate", split = "rn-reshape-split",
                    shrunk = "rn-reshape-shrink", scratch = "rn-reshape-scratch";
  const std::vector<std::string> all = {recreated, split, shrunk, scratch};
  source.DeleteIndices(all);
  target.DeleteIndices(all);
  auto create = [&](const std::string& index, int shards) {
    source.Ok("PUT", "/" + index,
              R"({"settings":{"number_of_shards":)" + std::to_string(shards) +
                  R"(,"number_of_replicas":0}})");
  };
  auto line = [](const std::string& index, int n, int version, const char* routing = nullptr) {
    json::object action{{"_index", index}, {"_id", "k" + std::to_string(n)}};
    if (routing != nullptr) {
      action["routing"] = routing;
    } else if (n % 7 == 0) {
      action["routing"] = "r" + std::to_string(n % 2);
    }
    return json::serialize(json::object{{"index", action}}) + "\n" +
           json::serialize(json::object{{"n", n}, {"v", version}}) + "\n";
  };
  auto fill = [&](const std::string& index) {
    std::string body;
    for (int n = 0; n < 60; ++n) body += line(index, n, 1);
    source.Ok("POST", "/_bulk?refresh=true", body);
  };
  auto green = [&](const std::string& index) {
    source.Ok("GET", "/_cluster/health/" + index + "?wait_for_status=green&timeout=60s");
  };
  // `index` reshaped through `scratch` by `how` (_split or _shrink) to `shards`, and cloned back.
  auto reshape = [&](const std::string& index, const std::string& how, int shards) {
    source.Ok("PUT", "/" + index + "/_settings", R"({"index.blocks.write":true})");
    source.Ok("POST", "/" + index + "/" + how + "/" + scratch,
              R"({"settings":{"index.number_of_shards":)" + std::to_string(shards) +
                  R"(,"index.number_of_replicas":0}})");
    green(scratch);
    source.DeleteIndices({index});
    source.Ok("PUT", "/" + scratch + "/_settings", R"({"index.blocks.write":true})");
    source.Ok("POST", "/" + scratch + "/_clone/" + index,
              R"({"settings":{"index.number_of_replicas":0}})");
    green(index);
    source.Ok("PUT", "/" + index + "/_settings", R"({"index.blocks.write":null})");
    source.DeleteIndices({scratch});
  };
  create(recreated, 1);
  create(split, 1);
  create(shrunk, 3);
  for (const auto& index : {recreated, split, shrunk}) fill(index);
  const std::string indices = recreated + "," + split + "," + shrunk;
  const fs::path repo = SnapshotOnNode(source, "rn-reshape-repo", "s2", indices);

  source.DeleteIndices({recreated});
  create(recreated, 3);
  fill(recreated);
  reshape(split, "_split", 3);
  reshape(shrunk, "_shrink", 1);
  std::string body;
  for (const auto& index : {recreated, split, shrunk}) {
    for (int n : {1, 2, 3}) body += line(index, n, 2);  // updated
    // k14's routing r0 -> "moved": its old copy is deleted first (the bulk keeps the order of
    // one shard's operations, so this holds wherever the two routings lead).
    body += json::serialize(json::object{
                {"delete", json::object{{"_index", index}, {"_id", "k14"}, {"routing", "r0"}}}}) +
            "\n";
    body += line(index, 14, 1, "moved");
    for (int n = 60; n < 65; ++n) body += line(index, n, 1);  // new
    for (int n : {5, 21, 30}) {                               // deleted
      json::object action{{"_index", index}, {"_id", "k" + std::to_string(n)}};
      if (n % 7 == 0) action["routing"] = "r" + std::to_string(n % 2);
      body += json::serialize(json::object{{"delete", action}}) + "\n";
    }
  }
  source.Ok("POST", "/_bulk?refresh=true", body);
  SnapshotOnNode(source, "rn-reshape-repo", "s3", indices);
  const auto s3_docs = rfs::test::ReadSnapshotDocuments(repo, "s3");
  for (const auto& index : {recreated, split, shrunk}) {
    INFO(index);
    REQUIRE(s3_docs.contains(index));
    CHECK(s3_docs.at(index).size() == 60 - 3 + 5);
    CHECK(s3_docs.at(index).at("k14").routing == std::optional<std::string>("moved"));
  }

  Runner runner;
  auto run = [&](const std::vector<std::string>& extra, const std::string& store) {
    std::vector<std::string> args = {
        RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo.string(),         "--target-host",
        target.url(),       "--coordinator-db",     runner.dir.File(store)};
    args.insert(args.end(), extra.begin(), extra.end());
    return runner.Run(args);
  };
  REQUIRE(run({"--snapshot-name", "s2"}, "full.sqlite") == kNoWorkLeft);
  CheckNodeHolds(target, rfs::test::ReadSnapshotDocuments(repo, "s2"));
  const int code = run({"--snapshot-name", "s3", "--previous-snapshot-name", "s2"}, "delta.sqlite");
  INFO(runner.out << runner.err);
  CHECK(code == kNoWorkLeft);
  CHECK(CheckNodeHolds(target, s3_docs) == 3 * 62);
  source.DeleteIndices(all);
  target.DeleteIndices(all);
}

namespace {

// Data stream `name` on `node` (template `name`-tpl, 2 shards), with `per_generation` documents
// created in each of `generations` backing indices (a rollover between them).
void MakeDataStream(RealNode& node, const std::string& name, int generations, int per_generation) {
  node.Send("DELETE", "/_data_stream/" + name);
  node.Send("DELETE", "/_index_template/" + name + "-tpl");
  node.Ok("PUT", "/_index_template/" + name + "-tpl",
          R"({"index_patterns":[")" + name + R"(*"],"data_stream":{},"priority":500,
              "template":{"settings":{"number_of_shards":2,"number_of_replicas":0},
              "mappings":{"properties":{"@timestamp":{"type":"date"},"n":{"type":"long"}}}}})");
  node.Ok("PUT", "/_data_stream/" + name);
  int n = 0;
  for (int generation = 0; generation < generations; ++generation) {
    if (generation > 0) node.Ok("POST", "/" + name + "/_rollover");
    std::string body;
    for (int i = 0; i < per_generation; ++i, ++n) {
      body += R"({"create":{"_index":")" + name + R"(","_id":"e)" + std::to_string(n) + "\"}}\n" +
              R"({"@timestamp":"2024-03-0)" + std::to_string(1 + generation) +
              R"(T10:00:00Z","n":)" + std::to_string(n) + "}\n";
    }
    node.Ok("POST", "/_bulk?refresh=true", body);
  }
}

// Every record of a failed-documents folder, as text.
std::string FailedRecordsText(const std::string& dir) {
  std::string all;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    auto text = rfs::net::GzipDecompress(rfs::test::ReadTextFile(entry.path().string()));
    REQUIRE(text.ok());
    all += *text;
  }
  return all;
}

// The documents a snapshot's backing indices hold, by _id, as its data stream should serve them.
std::map<std::string, std::string> StreamDocuments(const SnapshotDocuments& docs,
                                                   const std::string& stream) {
  std::map<std::string, std::string> out;
  for (const auto& [index, by_id] : docs) {
    if (!index.starts_with(".ds-" + stream + "-")) continue;
    for (const auto& [id, doc] : by_id) out[id] = doc.source;
  }
  return out;
}

// Requires the data stream `name` on `node` to serve exactly `expected` (by _id).
void CheckStreamHolds(RealNode& node, const std::string& name,
                      const std::map<std::string, std::string>& expected) {
  node.Ok("POST", "/" + name + "/_refresh");
  const auto streams = node.Ok("GET", "/_data_stream/" + name);
  REQUIRE(streams.at("data_streams").as_array().size() == 1);
  const auto found =
      node.Ok("POST", "/" + name + "/_search", R"({"size":1000,"query":{"match_all":{}}})");
  const auto& hits = found.at("hits").at("hits").as_array();
  CHECK(hits.size() == expected.size());
  for (const auto& hit : hits) {
    const std::string id(hit.at("_id").as_string());
    INFO("document " << id);
    // Written through the stream: into the target's own backing index.
    CHECK(std::string(hit.at("_index").as_string()).starts_with(".ds-" + name + "-"));
    auto it = expected.find(id);
    REQUIRE(it != expected.end());
    CHECK(hit.at("_source") == json::parse(it->second));
  }
}

}  // namespace

TEST_CASE("a data stream of several backing indices lands in a fresh real node through the stream",
          "[real][data-stream]") {
  // OpenSearch 2 writes a data stream of three backing indices; MetadataMigration makes its
  // template and the stream on OpenSearch 3, the documents go to the stream as `create`, keeping
  // their _id; a second run (a redo) adds nothing. Then RfsWorker does it all again, verify
  // phase included.
  RealNode source("os2");
  RealNode target("os3");
  const std::string stream = "rn-ds-events";
  MakeDataStream(source, stream, 3, 20);
  target.Send("DELETE", "/_data_stream/" + stream);
  target.Send("DELETE", "/_index_template/" + stream + "-tpl");
  const fs::path location = source.repo_path() / "rn-ds-repo";
  source.RegisterFsRepository("rn-ds-repo", location);
  source.Send("DELETE", "/_snapshot/rn-ds-repo/a");
  source.Ok("PUT", "/_snapshot/rn-ds-repo/a?wait_for_completion=true",
            R"({"indices":")" + stream + R"(","include_global_state":true})");
  const auto expected = StreamDocuments(rfs::test::ReadSnapshotDocuments(location, "a"), stream);
  REQUIRE(expected.size() == 60);

  Runner runner;
  const std::vector<std::string> allowlists = {"--index-allowlist", stream,
                                               "--index-template-allowlist", stream + "-tpl"};
  std::vector<std::string> metadata = {RFS_METADATA_TOOL, "migrate",         "--snapshot-local-dir",
                                       location.string(), "--snapshot-name", "a",
                                       "--target-host",   target.url()};
  metadata.insert(metadata.end(), allowlists.begin(), allowlists.end());
  REQUIRE(runner.Run(metadata) == 0);
  INFO(runner.out << runner.err);
  CHECK(runner.out.find("3 backing indices") != std::string::npos);
  CHECK(runner.out.find("part_of_data_stream") != std::string::npos);
  // The stream exists, empty, with its own first backing index; no .ds- index of the source was
  // created as an index.
  CHECK(target.Ok("GET", "/_data_stream/" + stream).at("data_streams").as_array().size() == 1);

  auto documents = [&](const std::string& store) {
    return runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", location.string(),
                       "--snapshot-name", "a", "--target-host", target.url(), "--coordinator-db",
                       runner.dir.File(store), "--index-allowlist", stream});
  };
  REQUIRE(documents("first.sqlite") == kNoWorkLeft);
  CheckStreamHolds(target, stream, expected);
  // A redo (a store of its own) meets 409s from `create`: documents already there, not errors.
  REQUIRE(documents("redo.sqlite") == kNoWorkLeft);
  CheckStreamHolds(target, stream, expected);

  // The embedded target: bulk files of `create` actions under the stream's folder, one shard
  // folder per backing index's shard, every document once.
  const std::string out_dir = runner.dir.File("out");
  REQUIRE(
      runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", location.string(), "--snapshot-name",
                  "a", "--output-dir", out_dir, "--index-allowlist", stream}) == kNoWorkLeft);
  std::set<std::string> written, folders;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(out_dir) / stream)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".ndjson") continue;
    folders.insert(entry.path().parent_path().filename().string());
    std::istringstream lines(rfs::test::ReadTextFile(entry.path().string()));
    for (std::string action, source; std::getline(lines, action) && std::getline(lines, source);) {
      const auto parsed = json::parse(action).as_object();
      REQUIRE(parsed.contains("create"));
      CHECK(parsed.at("create").at("_index").as_string() == stream.c_str());
      const std::string id(parsed.at("create").at("_id").as_string());
      CHECK(written.insert(id).second);
      CHECK(json::parse(source) == json::parse(expected.at(id)));
    }
  }
  CHECK(written.size() == 60);
  CHECK(folders.size() == 6);  // 3 backing indices of 2 shards

  // A snapshot without global state still names the stream of its backing indices.
  source.Send("DELETE", "/_snapshot/rn-ds-repo/nostate");
  source.Ok("PUT", "/_snapshot/rn-ds-repo/nostate?wait_for_completion=true",
            R"({"indices":")" + stream + R"(","include_global_state":false})");
  REQUIRE(runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", location.string(),
                      "--snapshot-name", "nostate", "--target-host", target.url(),
                      "--coordinator-db", runner.dir.File("nostate.sqlite")}) == kNoWorkLeft);
  CHECK(runner.out.find(": no_work_left; 60 docs") != std::string::npos);
  CheckStreamHolds(target, stream, expected);

  // A delta: new documents arrive through the stream; a delete made through a backing index
  // cannot be sent to a data stream (it takes only create), so it is a failed document, kept.
  std::string more;
  for (int n = 60; n < 65; ++n) {
    more += R"({"create":{"_index":")" + stream + R"(","_id":"e)" + std::to_string(n) + "\"}}\n" +
            R"({"@timestamp":"2024-03-09T10:00:00Z","n":)" + std::to_string(n) + "}\n";
  }
  source.Ok("POST", "/_bulk?refresh=true", more);
  const std::string first_backing = source.Ok("GET", "/_data_stream/" + stream)
                                        .at("data_streams")
                                        .at(0)
                                        .at("indices")
                                        .at(0)
                                        .at("index_name")
                                        .as_string()
                                        .c_str();
  source.Ok("DELETE", "/" + first_backing + "/_doc/e0?refresh=true");
  source.Send("DELETE", "/_snapshot/rn-ds-repo/b");
  source.Ok("PUT", "/_snapshot/rn-ds-repo/b?wait_for_completion=true",
            R"({"indices":")" + stream + R"(","include_global_state":true})");
  const int delta =
      runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", location.string(), "--snapshot-name",
                  "b", "--previous-snapshot-name", "a", "--target-host", target.url(),
                  "--coordinator-db", runner.dir.File("delta.sqlite"), "--index-allowlist", stream,
                  "--failed-documents-dir", runner.dir.File("delta-failed")});
  CHECK(delta == kDocumentsFailed);
  CHECK(FailedRecordsText(runner.dir.File("delta-failed")).find("data_stream_delete_not_applied") !=
        std::string::npos);
  auto after = StreamDocuments(rfs::test::ReadSnapshotDocuments(location, "b"), stream);
  CHECK(after.size() == 64);
  after["e0"] = expected.at("e0");  // still on the target: the delete was not applied
  CheckStreamHolds(target, stream, after);

  SECTION("RfsWorker: snapshot, metadata, documents and verify through the stream") {
    target.Send("DELETE", "/_data_stream/" + stream);
    target.Send("DELETE", "/_index_template/" + stream + "-tpl");
    const fs::path worker_repo = source.repo_path() / "rn-ds-worker";
    std::vector<std::string> argv = {RFS_WORKER_TOOL,
                                     "--source-host",
                                     source.url(),
                                     "--snapshot-local-dir",
                                     worker_repo.string(),
                                     "--snapshot-name",
                                     "w1",
                                     "--target-host",
                                     target.url(),
                                     "--coordinator-db",
                                     runner.dir.File("worker.sqlite")};
    argv.insert(argv.end(), allowlists.begin(), allowlists.end());
    const int code = runner.Run(argv);
    INFO(runner.out << runner.err);
    REQUIRE(code == 0);
    CHECK(runner.out.find("every phase COMPLETED") != std::string::npos);
    // The source as it is now: the 64 documents of snapshot b.
    CHECK(runner.out.find(stream + ": expected 64, migrated 64") != std::string::npos);
    CheckStreamHolds(target, stream,
                     StreamDocuments(rfs::test::ReadSnapshotDocuments(worker_repo, "w1"), stream));
  }
  target.Send("DELETE", "/_data_stream/" + stream);
  source.Send("DELETE", "/_data_stream/" + stream);
}

namespace {

// The command line of `tool` (DocumentsFromSnapshotMigration or RfsWorker) moving snapshot
// `snapshot` of the repository in `location` to `target`, its work items in the SQLite file
// `store`; `extra` after them.
std::vector<std::string> MigrationArgs(const std::string& tool, const fs::path& location,
                                       const std::string& snapshot, const std::string& target,
                                       const std::string& store,
                                       const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {tool,
                                   "--snapshot-local-dir",
                                   location.string(),
                                   "--snapshot-name",
                                   snapshot,
                                   "--target-host",
                                   target,
                                   "--coordinator-db",
                                   store};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// `name` on `node`: one shard, no replica, `docs` documents (ids d0, d1, ...), refreshed.
void MakeIndex(RealNode& node, const std::string& name, int docs) {
  node.DeleteIndices({name});
  node.Ok("PUT", "/" + name, R"({"settings":{"number_of_shards":1,"number_of_replicas":0}})");
  for (int start = 0; start < docs; start += 1000) {
    std::string body;
    for (int n = start; n < std::min(docs, start + 1000); ++n) {
      body += R"({"index":{"_index":")" + name + R"(","_id":"d)" + std::to_string(n) + "\"}}\n" +
              R"({"n":)" + std::to_string(n) + R"(,"text":"document )" + std::to_string(n) +
              "\"}\n";
    }
    node.Ok("POST", "/_bulk", body);
  }
  node.Ok("POST", "/" + name + "/_refresh");
}

// The index's _count after a refresh; -1 when it is not there.
int64_t CountOf(RealNode& node, const std::string& name) {
  if (node.Send("POST", "/" + name + "/_refresh").status != 200) return -1;
  const auto response = node.Send("GET", "/" + name + "/_count");
  if (response.status != 200) return -1;
  return json::parse(response.body).at("count").to_number<int64_t>();
}

size_t Occurrences(const std::string& text, const std::string& word) {
  size_t count = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE(
    "RfsWorker --verify-all compares every document and a redrive of its records closes the gap",
    "[real][verify-all]") {
  RealNode source("os2");
  RealNode target("os3");
  const std::string main_index = "rn-verify-all";
  const std::string small_index = "rn-verify-all-b";
  source.DeleteIndices({main_index, small_index});
  target.DeleteIndices({main_index, small_index});
  source.Ok("PUT", "/" + main_index,
            R"({"settings":{"number_of_shards":3,"number_of_replicas":0}})");
  source.Ok("PUT", "/" + small_index,
            R"({"settings":{"number_of_shards":1,"number_of_replicas":0}})");
  constexpr int kMain = 400;
  constexpr int kSmall = 120;
  std::string body;
  for (int n = 0; n < kMain; ++n) {
    // Custom routing on every fifth: fetched with it, or "not found".
    body += "{\"index\":{\"_index\":\"" + main_index + "\",\"_id\":\"m" + std::to_string(n) + "\"" +
            (n % 5 == 0 ? ",\"routing\":\"r" + std::to_string(n % 3) + "\"" : std::string()) +
            "}}\n{\"n\":" + std::to_string(n) + ",\"v\":" + std::to_string(n) +
            ".25,\"tags\":[\"a\",\"b" + std::to_string(n % 7) +
            "\"],\"o\":{\"k\":" + std::to_string(n % 11) + "}}\n";
  }
  for (int n = 0; n < kSmall; ++n) {
    body += "{\"index\":{\"_index\":\"" + small_index + "\",\"_id\":\"s" + std::to_string(n) +
            "\"}}\n{\"s\":" + std::to_string(n) + "}\n";
  }
  source.Ok("POST", "/_bulk?refresh=true", body);
  const fs::path location =
      SnapshotOnNode(source, "rn-verify-all-repo", "v1", main_index + "," + small_index);
  Runner runner;
  const std::string records = runner.dir.File("records.sqlite");
  const std::string failed = runner.dir.File("failed");
  const std::vector<std::string> worker =
      MigrationArgs(RFS_WORKER_TOOL, location, "v1", target.url(), records,
                    {"--failed-documents-dir", failed, "--index-allowlist", main_index, small_index,
                     "--verify-all"});
  auto verify_only = [&] {
    std::vector<std::string> argv = worker;
    argv.push_back("--verify-only");
    return runner.Run(argv);
  };
  auto row = [&](const std::string& index, int expected, int equal, int missing, int different,
                 int extra, int count) {
    return "  " + index + ": expected " + std::to_string(expected) + ", equal " +
           std::to_string(equal) + ", missing " + std::to_string(missing) + ", different " +
           std::to_string(different) + ", not comparable 0, already newer 0, extra " +
           std::to_string(extra) + ", target count " + std::to_string(count);
  };

  // The whole migration, phase 5 verifying every document (round 1).
  const int migrated = runner.Run(worker);
  INFO(runner.out << runner.err);
  REQUIRE(migrated == 0);
  CHECK(runner.out.find("Verification of every document (round 1)") != std::string::npos);
  CHECK(runner.out.find(row(main_index, kMain, kMain, 0, 0, 0, kMain) + "\n") != std::string::npos);
  CHECK(runner.out.find(row(small_index, kSmall, kSmall, 0, 0, 0, kSmall) + "\n") !=
        std::string::npos);

  // (a) Verified alone afterwards: a new round, every document equal.
  const int again = verify_only();
  INFO(runner.out << runner.err);
  CHECK(again == 0);
  CHECK(runner.out.find("Verification of every document (round 2)") != std::string::npos);
  CHECK(runner.out.find(row(main_index, kMain, kMain, 0, 0, 0, kMain) + "\n") != std::string::npos);
  CHECK(runner.out.find("Verification: every document is on the target as the migration sends "
                        "it") != std::string::npos);
  // Rounds that found every document equal leave no folder of records behind.
  CHECK(fs::is_directory(failed));
  CHECK_FALSE(fs::exists(fs::path(failed) / "verify-round-1"));
  CHECK_FALSE(fs::exists(fs::path(failed) / "verify-round-2"));

  // (b) The target loses documents (routed ones among them), one changes, one is added; (c) a
  // whole index is deleted (the probe's finding: an index gone after its documents were
  // counted as written).
  std::string damage;
  for (int n : {0, 1, 2, 10, 55}) {
    damage +=
        "{\"delete\":{\"_index\":\"" + main_index + "\",\"_id\":\"m" + std::to_string(n) + "\"" +
        (n % 5 == 0 ? ",\"routing\":\"r" + std::to_string(n % 3) + "\"" : std::string()) + "}}\n";
  }
  damage += "{\"index\":{\"_index\":\"" + main_index +
            "\",\"_id\":\"m7\"}}\n{\"n\":7,\"v\":7.25,\"tags\":[\"a\",\"b0\"],\"o\":{\"k\":8}}\n";
  damage += "{\"index\":{\"_index\":\"" + main_index + "\",\"_id\":\"extra\"}}\n{\"n\":-1}\n";
  target.Ok("POST", "/_bulk?refresh=true", damage);
  target.DeleteIndices({small_index});
  const int damaged = verify_only();
  INFO(runner.out << runner.err);
  CHECK(damaged == 7);
  CHECK(runner.out.find("Verification of every document (round 3)") != std::string::npos);
  CHECK(runner.out.find(row(main_index, kMain, kMain - 6, 5, 1, 1, kMain - 5 + 1) + "\n") !=
        std::string::npos);
  CHECK(runner.out.find(row(small_index, kSmall, 0, kSmall, 0, 0, 0) + " (not on the target)\n") !=
        std::string::npos);
  CHECK(runner.out.find("documents are MISSING or differ") != std::string::npos);
  const std::string round3 = (fs::path(failed) / "verify-round-3").string();
  CHECK(runner.out.find(round3) != std::string::npos);
  // The records hold the documents as the migration sends them, each with why.
  const std::string recorded = FailedRecordsText(round3);
  CHECK(Occurrences(recorded, "\"error_type\":\"verify_missing\"") == 5 + kSmall);
  CHECK(Occurrences(recorded, "\"error_type\":\"verify_different\"") == 1);
  CHECK(recorded.find("verify round 3: not on the target") != std::string::npos);
  CHECK(recorded.find("\"routing\":\"r1\"") != std::string::npos);  // m10's

  // (d) Verify, then redrive the difference: the records go again as they are, the extra
  // document (no source holds it) is deleted by hand, and a new round finds every document.
  const int redriven =
      runner.Run({RFS_DOCUMENTS_TOOL, "--redrive-failed-documents", round3, "--target-host",
                  target.url(), "--coordinator-db", runner.dir.File("redrive.sqlite"),
                  "--failed-documents-dir", runner.dir.File("failed-redrive")});
  INFO(runner.out << runner.err);
  REQUIRE(redriven == 0);
  target.Ok("DELETE", "/" + main_index + "/_doc/extra?refresh=true");
  const int closed = verify_only();
  INFO(runner.out << runner.err);
  CHECK(closed == 0);
  CHECK(runner.out.find("Verification of every document (round 4)") != std::string::npos);
  CHECK(runner.out.find(row(main_index, kMain, kMain, 0, 0, 0, kMain) + "\n") != std::string::npos);
  CHECK(runner.out.find(row(small_index, kSmall, kSmall, 0, 0, 0, kSmall) + "\n") !=
        std::string::npos);

  // (e) A round is shared: a copy begins round 5 and is killed holding an item; the next copy
  // joins round 5 (begun, not reported), takes the item over once its short lease runs out, and
  // reports every document.
  std::vector<std::string> copy = worker;
  copy.insert(copy.end(), {"--verify-only", "--initial-lease-duration", "PT3S"});
  const std::string first_err = runner.dir.File("first.err");
  {
    rfs::test::ChildProcess first(copy, runner.dir.File("first.out"), first_err);
    REQUIRE(first.pid() > 0);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (true) {
      const std::string events = rfs::test::ReadTextFile(first_err);
      const size_t begun = events.find("\"item\":\"verify round 5\"");
      if (begun != std::string::npos &&
          events.find("\"event\":\"acquired\"", begun) != std::string::npos) {
        break;
      }
      INFO(events);
      REQUIRE(std::chrono::steady_clock::now() < give_up);
      REQUIRE_FALSE(first.Exited());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    first.Kill();
    CHECK(first.Wait() == 128 + SIGKILL);
  }
  const int joined = runner.Run(copy);
  INFO(runner.out << runner.err);
  CHECK(joined == 0);
  CHECK(runner.out.find("Verification of every document (round 5)") != std::string::npos);
  CHECK(runner.out.find(row(main_index, kMain, kMain, 0, 0, 0, kMain) + "\n") != std::string::npos);
  CHECK(runner.out.find(row(small_index, kSmall, kSmall, 0, 0, 0, kSmall) + "\n") !=
        std::string::npos);

  // (f) Extra documents named on request (--verify-scan-extra): every _id of the target index
  // scanned against the source's; each extra one recorded as a delete, which a redrive sends.
  target.Ok("POST", "/_bulk?refresh=true",
            "{\"index\":{\"_index\":\"" + main_index +
                "\",\"_id\":\"stray-1\"}}\n{\"n\":-1}\n"
                "{\"index\":{\"_index\":\"" +
                main_index + "\",\"_id\":\"stray-2\",\"routing\":\"elsewhere\"}}\n{\"n\":-2}\n");
  std::vector<std::string> scan = worker;
  scan.insert(scan.end(), {"--verify-only", "--verify-scan-extra"});
  const int strays = runner.Run(scan);
  INFO(runner.out << runner.err);
  CHECK(strays == 7);
  CHECK(runner.out.find(row(main_index, kMain, kMain, 0, 0, 2, kMain + 2) + "\n") !=
        std::string::npos);
  CHECK(runner.out.find(row(small_index, kSmall, kSmall, 0, 0, 0, kSmall) + "\n") !=
        std::string::npos);
  const size_t named = runner.err.find("extra on the target, not in the source: ");
  REQUIRE(named != std::string::npos);
  const std::string named_line = runner.err.substr(named, runner.err.find('\n', named) - named);
  CHECK(named_line.find("stray-1") != std::string::npos);
  CHECK(named_line.find("stray-2") != std::string::npos);
  const std::string round6 = (fs::path(failed) / "verify-round-6").string();
  const std::string extra_records = FailedRecordsText(round6);
  CHECK(Occurrences(extra_records, "\"error_type\":\"verify_extra\"") == 2);
  CHECK(Occurrences(extra_records, "\"delete\"") == 2);
  CHECK(extra_records.find("\"routing\":\"elsewhere\"") != std::string::npos);
  const int swept =
      runner.Run({RFS_DOCUMENTS_TOOL, "--redrive-failed-documents", round6, "--target-host",
                  target.url(), "--coordinator-db", runner.dir.File("redrive-extra.sqlite"),
                  "--failed-documents-dir", runner.dir.File("failed-redrive-extra")});
  INFO(runner.out << runner.err);
  CHECK(swept == 0);
  target.Ok("POST", "/" + main_index + "/_refresh");
  const int clean = runner.Run(scan);
  INFO(runner.out << runner.err);
  CHECK(clean == 0);
  CHECK(runner.out.find(row(main_index, kMain, kMain, 0, 0, 0, kMain) + "\n") != std::string::npos);

  // (g) The records in the S3 failed-document stream instead of a folder: the round's report
  // reads them back from there, and a redrive from the stream closes the gap.
  {
    rfs::test::S3Server s3("rn-verify-stream");
    ::setenv("AWS_ACCESS_KEY_ID", rfs::test::S3Server::kAccessKey, 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", rfs::test::S3Server::kSecretKey, 1);
    std::string lost;
    for (int n : {3, 4, 5}) {
      lost +=
          "{\"delete\":{\"_index\":\"" + main_index + "\",\"_id\":\"m" + std::to_string(n) + "\"" +
          (n % 5 == 0 ? ",\"routing\":\"r" + std::to_string(n % 3) + "\"" : std::string()) + "}}\n";
    }
    target.Ok("POST", "/_bulk?refresh=true", lost);
    std::vector<std::string> streamed = worker;
    streamed.insert(streamed.end(), {"--verify-only", "--failed-document-stream-s3-bucket",
                                     "rn-verify-stream", "--failed-document-stream-s3-prefix",
                                     "dlq", "--failed-document-stream-s3-endpoint", s3.endpoint(),
                                     "--failed-document-stream-session-id", "vs"});
    const int gap = runner.Run(streamed);
    INFO(runner.out << runner.err);
    CHECK(gap == 7);
    CHECK(runner.out.find("Verification of every document (round 8)") != std::string::npos);
    CHECK(runner.out.find(row(main_index, kMain, kMain - 3, 3, 0, 0, kMain - 3) + "\n") !=
          std::string::npos);
    const std::string stream_uri = "s3://rn-verify-stream/dlq/session=vs-verify-round-8/";
    CHECK(runner.out.find(stream_uri) != std::string::npos);
    const int refilled =
        runner.Run({RFS_DOCUMENTS_TOOL, "--redrive-failed-documents", stream_uri, "--s3-endpoint",
                    s3.endpoint(), "--target-host", target.url(), "--coordinator-db",
                    runner.dir.File("redrive-stream.sqlite"), "--failed-documents-dir",
                    runner.dir.File("failed-redrive-stream")});
    INFO(runner.out << runner.err);
    CHECK(refilled == 0);
    CHECK(runner.out.find("3 records: 3 accepted, 0 failed again") != std::string::npos);
    const int whole = runner.Run(streamed);
    INFO(runner.out << runner.err);
    CHECK(whole == 0);
    CHECK(runner.out.find(row(main_index, kMain, kMain, 0, 0, 0, kMain) + "\n") !=
          std::string::npos);
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
  }

  // (h) Through a console: two copies share the session's round (space verify-1), and its status
  // shows the round per index.
  {
    const int port = rfs::test::FreeLoopbackPort();
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    const std::string admin = "rn-verify-console-admin";
    rfs::test::ChildProcess console(
        {RFS_CONSOLE_TOOL, "serve", "--port", std::to_string(port), "--bind", "127.0.0.1",
         "--store", "sqlite:" + runner.dir.File("console.db"), "--admin-token", admin,
         "--check-responses"},
        runner.dir.File("console.out"), runner.dir.File("console.err"));
    std::string token;
    for (int attempt = 0; attempt < 300 && token.empty(); ++attempt) {
      if (runner.Run({RFS_CONSOLE_TOOL, "create-session", "--url", url, "--name", "v",
                      "--admin-token", admin}) == 0) {
        token = runner.out;
        while (!token.empty() && token.back() == '\n') token.pop_back();
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    REQUIRE_FALSE(token.empty());
    std::vector<std::string> copy_args = {RFS_WORKER_TOOL,
                                          "--snapshot-local-dir",
                                          location.string(),
                                          "--snapshot-name",
                                          "v1",
                                          "--target-host",
                                          target.url(),
                                          "--console-url",
                                          url,
                                          "--session-name",
                                          "v",
                                          "--console-token",
                                          token,
                                          "--failed-documents-dir",
                                          runner.dir.File("failed-console"),
                                          "--index-allowlist",
                                          main_index,
                                          small_index,
                                          "--verify-only",
                                          "--verify-all"};
    std::vector<std::unique_ptr<rfs::test::ChildProcess>> copies;
    for (int n = 0; n < 2; ++n) {
      std::vector<std::string> args = copy_args;
      args.insert(args.end(), {"--worker-id", "console-copy-" + std::to_string(n)});
      copies.push_back(std::make_unique<rfs::test::ChildProcess>(
          args, runner.dir.File("copy" + std::to_string(n) + ".out"),
          runner.dir.File("copy" + std::to_string(n) + ".err")));
    }
    for (int n = 0; n < 2; ++n) {
      const int code = copies[n]->Wait();
      INFO(rfs::test::ReadTextFile(runner.dir.File("copy" + std::to_string(n) + ".out"))
           << rfs::test::ReadTextFile(runner.dir.File("copy" + std::to_string(n) + ".err")));
      CHECK(code == 0);
    }
    REQUIRE(runner.Run({RFS_CONSOLE_TOOL, "status", "--url", url, "--session", "v", "--token",
                        token, "--json"}) == 0);
    const auto status = boost::json::parse(runner.out).as_object();
    REQUIRE(status.contains("verification"));
    const auto& verification = status.at("verification").as_object();
    CHECK(verification.at("round").as_int64() == 1);
    CHECK(verification.at("state") == "reported");
    std::map<std::string, boost::json::object> by_index;
    for (const auto& entry : verification.at("indices").as_array()) {
      by_index[std::string(entry.at("index").as_string())] = entry.as_object();
    }
    REQUIRE(by_index.count(main_index) == 1);
    CHECK(by_index[main_index].at("state") == "verified");
    CHECK(by_index[main_index].at("expected").as_int64() == kMain);
    CHECK(by_index[main_index].at("equal").as_int64() == kMain);
    CHECK(by_index[small_index].at("equal").as_int64() == kSmall);
    REQUIRE(runner.Run({RFS_CONSOLE_TOOL, "status", "--url", url, "--session", "v", "--token",
                        token}) == 0);
    CHECK(runner.out.find("Verification round 1 (reported):") != std::string::npos);
    CHECK(runner.out.find("  " + main_index + ": verified, 400 expected, 400 equal, 0 missing") !=
          std::string::npos);
    CHECK(rfs::test::ReadTextFile(runner.dir.File("console.err")).find("departs from") ==
          std::string::npos);
  }

  // Usage: the embedded target has no cluster to fetch from.
  CHECK(runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir", location.string(), "--output-dir",
                    runner.dir.File("out"), "--verify-only", "--verify-all"}) == 64);
  CHECK(runner.err.find("--verify-all fetches every document from a target cluster") !=
        std::string::npos);
  source.DeleteIndices({main_index, small_index});
  target.DeleteIndices({main_index, small_index});
}

TEST_CASE("the client tells a real node's indices, aliases and data streams apart by uuid",
          "[real][data-stream][target-index]") {
  // What the workers' look at the target rests on, against the engine's own answers:
  // GET /<name> (an index, or an alias's indices) and GET /_data_stream/<name>, which OpenSearch
  // answers 200 with no stream for the name of a plain index.
  RealNode node("os3");
  auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = node.url()});
  REQUIRE(transport.ok());
  rfs::opensearch::OpenSearchClient client(**transport);
  const std::string stream = "rn-uuid-stream";
  MakeDataStream(node, stream, 2, 2);
  MakeIndex(node, "rn-uuid-a", 1);
  MakeIndex(node, "rn-uuid-b", 1);
  node.Ok("POST", "/_aliases",
          R"({"actions":[{"add":{"index":"rn-uuid-a","alias":"rn-uuid-alias"}},)"
          R"({"add":{"index":"rn-uuid-b","alias":"rn-uuid-alias"}}]})");
  auto uuid_of = [&](const std::string& index) {
    return std::string(node.Ok("GET", "/" + index + "/_settings")
                           .at(index)
                           .at("settings")
                           .at("index")
                           .at("uuid")
                           .as_string());
  };
  std::vector<std::string> both = {uuid_of("rn-uuid-a"), uuid_of("rn-uuid-b")};
  std::sort(both.begin(), both.end());

  auto a = client.IndexUuids("rn-uuid-a");
  REQUIRE(a.ok());
  CHECK(*a == std::vector<std::string>{uuid_of("rn-uuid-a")});
  auto alias = client.IndexUuids("rn-uuid-alias");
  REQUIRE(alias.ok());
  CHECK(*alias == both);
  auto none = client.IndexUuids("rn-uuid-none");
  REQUIRE(none.ok());
  CHECK(none->empty());

  std::vector<std::string> backing;
  const json::value streams = node.Ok("GET", "/_data_stream/" + stream);
  for (const auto& index : streams.at("data_streams").at(0).at("indices").as_array()) {
    backing.emplace_back(index.at("index_uuid").as_string());
  }
  std::sort(backing.begin(), backing.end());
  REQUIRE(backing.size() == 2);
  auto streamed = client.DataStreamIndexUuids(stream);
  REQUIRE(streamed.ok());
  REQUIRE(streamed->has_value());
  CHECK(**streamed == backing);
  auto stream_exists = client.DataStreamExists(stream);
  REQUIRE(stream_exists.ok());
  CHECK(*stream_exists);
  // A plain index's name, and a name nothing has, are no data stream.
  CHECK(node.Send("GET", "/_data_stream/rn-uuid-a").status == 200);
  for (const char* name : {"rn-uuid-a", "rn-uuid-none"}) {
    INFO(name);
    auto plain = client.DataStreamIndexUuids(name);
    REQUIRE(plain.ok());
    CHECK_FALSE(plain->has_value());
    auto exists = client.DataStreamExists(name);
    REQUIRE(exists.ok());
    CHECK_FALSE(*exists);
  }
  node.DeleteIndices({"rn-uuid-a", "rn-uuid-b"});
  node.Send("DELETE", "/_data_stream/" + stream);
  node.Send("DELETE", "/_index_template/" + stream + "-tpl");
}

TEST_CASE("a data stream that is not on the target gets no plain index of its name, and says so",
          "[real][data-stream][target-index]") {
  // The stream's template never reached the target (MetadataMigration not run): its documents
  // fail, each with what to do, and nothing of its name is made on the target (a `create` into
  // the name made a plain index with dynamic mappings, which kept the stream from ever being
  // created). Doing what the reason says then brings them into the stream.
  RealNode source("os2");
  RealNode target("os3");
  const std::string stream = "rn-ds-absent";
  MakeDataStream(source, stream, 2, 10);
  target.Send("DELETE", "/_data_stream/" + stream);
  target.Send("DELETE", "/_index_template/" + stream + "-tpl");
  target.DeleteIndices({stream});
  const fs::path location = source.repo_path() / "rn-ds-absent-repo";
  source.RegisterFsRepository("rn-ds-absent-repo", location);
  source.Send("DELETE", "/_snapshot/rn-ds-absent-repo/a");
  source.Ok("PUT", "/_snapshot/rn-ds-absent-repo/a?wait_for_completion=true",
            R"({"indices":")" + stream + R"(","include_global_state":true})");
  const auto expected = StreamDocuments(rfs::test::ReadSnapshotDocuments(location, "a"), stream);
  REQUIRE(expected.size() == 20);

  Runner runner;
  const std::string failed = runner.dir.File("failed");
  const int code = runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", location.string(),
                               "--snapshot-name", "a", "--target-host", target.url(),
                               "--coordinator-db", runner.dir.File("documents.sqlite"),
                               "--failed-documents-dir", failed, "--index-allowlist", stream});
  INFO(runner.out << runner.err);
  CHECK(code == kDocumentsFailed);
  CHECK(runner.out.find(": no_work_left; 0 docs") != std::string::npos);
  CHECK(target.Send("GET", "/" + stream).status == 404);
  CHECK(target.Send("GET", "/_data_stream/" + stream).status == 404);
  const std::string records = FailedRecordsText(failed);
  CHECK(Occurrences(records, "\"data_stream_not_on_target\"") == 20);
  CHECK(records.find("Run MetadataMigration migrate first") != std::string::npos);

  // As the reason says: MetadataMigration makes the template and the stream, a redrive sends them.
  REQUIRE(runner.Run({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", location.string(),
                      "--snapshot-name", "a", "--target-host", target.url(), "--index-allowlist",
                      stream, "--index-template-allowlist", stream + "-tpl"}) == 0);
  const int redriven =
      runner.Run({RFS_DOCUMENTS_TOOL, "--redrive-failed-documents", failed, "--target-host",
                  target.url(), "--coordinator-db", runner.dir.File("redrive.sqlite"),
                  "--failed-documents-dir", runner.dir.File("failed-again")});
  INFO(runner.out << runner.err);
  CHECK(redriven == 0);
  CheckStreamHolds(target, stream, expected);
  target.Send("DELETE", "/_data_stream/" + stream);
  target.Send("DELETE", "/_index_template/" + stream + "-tpl");
  source.Send("DELETE", "/_data_stream/" + stream);
}

TEST_CASE("an index the target creates itself is reported, and --no-auto-create-indices refuses it",
          "[real][target-index]") {
  RealNode source("os2");
  RealNode target("os3");
  MakeIndex(source, "rn-auto-there", 5);
  MakeIndex(source, "rn-auto-missing", 7);
  const fs::path location = SnapshotOnNode(source, "rn-auto-repo", "a", "rn-auto-*");
  target.DeleteIndices({"rn-auto-there", "rn-auto-missing"});
  target.Ok("PUT", "/rn-auto-there", R"({"settings":{"number_of_shards":1}})");
  Runner runner;
  auto documents = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> argv = MigrationArgs(
        RFS_DOCUMENTS_TOOL, location, "a", target.url(), runner.dir.File(name + ".sqlite"),
        {"--failed-documents-dir", runner.dir.File(name + "-failed")});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return runner.Run(argv);
  };

  SECTION("--no-auto-create-indices (or RFS_NO_AUTO_CREATE_INDICES): documents fail, exit 6") {
    const int code = documents("refused", {"--no-auto-create-indices"});
    INFO(runner.out << runner.err);
    CHECK(code == kDocumentsFailed);
    CHECK(target.Send("GET", "/rn-auto-missing").status == 404);
    CHECK(CountOf(target, "rn-auto-there") == 5);
    const std::string records = FailedRecordsText(runner.dir.File("refused-failed"));
    CHECK(Occurrences(records, "\"index_not_on_target\"") == 7);
    CHECK(records.find("--no-auto-create-indices is set") != std::string::npos);
    ::setenv("RFS_NO_AUTO_CREATE_INDICES", "true", 1);
    const int from_environment = documents("refused-env", {});
    ::unsetenv("RFS_NO_AUTO_CREATE_INDICES");
    CHECK(from_environment == kDocumentsFailed);
    CHECK(target.Send("GET", "/rn-auto-missing").status == 404);
  }
  SECTION("by default: written, and the index the target made is warned about") {
    const int code = documents("allowed", {});
    INFO(runner.out << runner.err);
    CHECK(code == kNoWorkLeft);
    CHECK(CountOf(target, "rn-auto-missing") == 7);
    CHECK(CountOf(target, "rn-auto-there") == 5);
    CHECK(runner.out.find("WARNING: 1 indices were not on the target") != std::string::npos);
    CHECK(runner.out.find("source's (run MetadataMigration first, or --no-auto-create-indices to "
                          "refuse): rn-auto-missing\n") != std::string::npos);
    CHECK(runner.err.find(R"("indices_created_by_target":["rn-auto-missing"])") !=
          std::string::npos);
  }
  target.DeleteIndices({"rn-auto-there", "rn-auto-missing"});
  source.DeleteIndices({"rn-auto-there", "rn-auto-missing"});
}

TEST_CASE("an index deleted and created again on the target mid-run fails its item, never done",
          "[real][target-index]") {
  RealNode source("os2");
  RealNode target("os3");
  const std::string name = "rn-recreated";
  constexpr int kDocs = 5000;
  MakeIndex(source, name, kDocs);
  const fs::path location = SnapshotOnNode(source, "rn-recreated-repo", "a", name);
  target.DeleteIndices({name});
  const std::string settings = R"({"settings":{"number_of_shards":1,"number_of_replicas":0}})";
  target.Ok("PUT", "/" + name, settings);
  rfs::test::TempDir dir("rfs-recreated");
  // Two documents a bulk, one bulk at a time: the run lasts seconds.
  const std::vector<std::string> argv =
      MigrationArgs(RFS_DOCUMENTS_TOOL, location, "a", target.url(), dir.File("store.sqlite"),
                    {"--failed-documents-dir", dir.File("failed"), "--documents-per-bulk-request",
                     "2", "--max-connections", "1"});
  rfs::test::ChildProcess worker(argv, dir.File("out"), dir.File("err"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (!worker.Exited() && CountOf(target, name) < 20 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE_FALSE(worker.Exited());  // still sending when its index goes
  target.Ok("DELETE", "/" + name);
  // The worker's next bulk may have made it again first (400 resource_already_exists).
  const int recreated = target.Send("PUT", "/" + name, settings).status;
  CHECK((recreated == 200 || recreated == 400));
  while (!worker.Exited() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int code = worker.Wait();
  const std::string err = rfs::test::ReadTextFile(dir.File("err"));
  INFO(rfs::test::ReadTextFile(dir.File("out")) << err);
  CHECK(code == 1);
  CHECK(err.find("index " + name + " on the target was deleted") != std::string::npos);
  CHECK(CountOf(target, name) < kDocs);
  // The item went back to its start: the next run sends every document into the new index.
  Runner runner;
  CHECK(runner.Run(argv) == kNoWorkLeft);
  INFO(runner.out << runner.err);
  CHECK(CountOf(target, name) == kDocs);
  target.DeleteIndices({name});
  source.DeleteIndices({name});
}

namespace {

// An index's number_of_replicas and refresh_interval as set on it ("unset" when not set).
std::pair<std::string, std::string> TuningSettings(RealNode& node, const std::string& index) {
  const auto answer = node.Ok("GET", "/" + index + "/_settings?flat_settings=true");
  const json::object& settings = answer.at(index).at("settings").as_object();
  auto value = [&](const char* key) {
    const json::value* v = settings.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string("unset");
  };
  return {value("index.number_of_replicas"), value("index.refresh_interval")};
}

// Indices of `docs` documents on the source, each with its own settings.
void MakeTuningIndex(RealNode& node, const std::string& name, const std::string& settings,
                     int docs) {
  node.DeleteIndices({name});
  node.Ok("PUT", "/" + name, R"({"settings":{"number_of_shards":1)" + settings + "}}");
  std::string body;
  for (int n = 0; n < docs; ++n) {
    body += R"({"index":{"_index":")" + name + R"(","_id":"t)" + std::to_string(n) + "\"}}\n" +
            R"({"n":)" + std::to_string(n) + "}\n";
  }
  node.Ok("POST", "/_bulk?refresh=true", body);
}

}  // namespace

TEST_CASE("RfsWorker tunes the indices it creates for their load and puts their settings back",
          "[real][tuning]") {
  RealNode source("os2");
  RealNode target("os3");
  const std::string defaults = "rn-tune-defaults";  // replicas 1 (the default), refresh not set
  const std::string explicit_refresh = "rn-tune-5s";
  const std::string existing = "rn-tune-existing";  // on the target before the run
  const std::vector<std::string> all = {defaults, explicit_refresh, existing};
  MakeTuningIndex(source, defaults, "", 300);
  MakeTuningIndex(source, explicit_refresh, R"(,"number_of_replicas":2,"refresh_interval":"5s")",
                  300);
  MakeTuningIndex(source, existing, R"(,"number_of_replicas":0)", 300);
  // t0 for a delta to t1 (the same documents).
  SnapshotOnNode(source, "rn-tune-repo", "t0", "rn-tune-*");
  const fs::path location = SnapshotOnNode(source, "rn-tune-repo", "t1", "rn-tune-*");
  Runner runner;
  auto fresh_target = [&] {
    target.DeleteIndices(all);
    target.Ok("PUT", "/" + existing,
              R"({"settings":{"number_of_shards":1,"number_of_replicas":0,)"
              R"("refresh_interval":"7s"}})");
  };
  auto worker = [&](const std::string& store, std::vector<std::string> extra) {
    std::vector<std::string> argv = MigrationArgs(RFS_WORKER_TOOL, location, "t1", target.url(),
                                                  runner.dir.File(store), {"--index-allowlist"});
    argv.insert(argv.end(), all.begin(), all.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    return runner.Run(argv);
  };
  auto check_original = [&] {
    CHECK(TuningSettings(target, defaults) == std::pair<std::string, std::string>{"1", "unset"});
    CHECK(TuningSettings(target, explicit_refresh) ==
          std::pair<std::string, std::string>{"2", "5s"});
    CHECK(TuningSettings(target, existing) == std::pair<std::string, std::string>{"0", "7s"});
  };
  const std::pair<std::string, std::string> tuned{"0", "-1"};

  SECTION("by default: tuned during the load, the originals back after it") {
    fresh_target();
    const int code = worker("default.sqlite", {});
    INFO(runner.out << runner.err);
    REQUIRE(code == 0);
    check_original();
    for (const std::string& index : {defaults, explicit_refresh}) {
      CHECK(runner.err.find(R"("event":"tuned","item":"index )" + index + "\"") !=
            std::string::npos);
      CHECK(runner.err.find(R"("event":"restored","item":"index )" + index + "\"") !=
            std::string::npos);
      CHECK(CountOf(target, index) == 300);
    }
    CHECK(runner.err.find("\"index " + existing + "\",\"message\":\"number_of_replicas") ==
          std::string::npos);
    CHECK(runner.err.find("was 1), refresh_interval -1 (was not set)") != std::string::npos);
    CHECK(runner.err.find("was 2), refresh_interval -1 (was 5s)") != std::string::npos);
  }
  SECTION("--no-tune-target leaves every setting alone") {
    fresh_target();
    const int code = worker("untuned.sqlite", {"--no-tune-target"});
    INFO(runner.out << runner.err);
    REQUIRE(code == 0);
    check_original();
    CHECK(runner.err.find(R"("event":"tuned")") == std::string::npos);
  }
  SECTION("a delta never tunes, not even the indices it creates") {
    fresh_target();
    const int code = worker("delta.sqlite", {"--previous-snapshot-name", "t0", "--skip-verify"});
    INFO(runner.out << runner.err);
    REQUIRE(code == 0);
    check_original();
    CHECK(runner.err.find(R"("event":"tuned")") == std::string::npos);
  }
  SECTION(
      "a worker killed between its last bulk and the restore leaves the index tuned; "
      "--restore-target-settings puts it back") {
    fresh_target();
    ::setenv("RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE", "1", 1);
    const int killed = worker("killed.sqlite", {});
    ::unsetenv("RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE");
    INFO(runner.out << runner.err);
    REQUIRE(killed == 128 + SIGKILL);
    // The first index whose last item completed is fully loaded and still tuned.
    const bool defaults_tuned = TuningSettings(target, defaults) == tuned;
    const bool explicit_tuned = TuningSettings(target, explicit_refresh) == tuned;
    CHECK((defaults_tuned || explicit_tuned));
    CHECK(TuningSettings(target, existing) == std::pair<std::string, std::string>{"0", "7s"});
    const int restored = worker("killed.sqlite", {"--restore-target-settings"});
    INFO(runner.out << runner.err);
    CHECK(restored == 0);
    check_original();
    CHECK(runner.err.find(R"("event":"restored")") != std::string::npos);
    // The rest of the migration then goes on in the same store: nothing is tuned again.
    const int rest = worker("killed.sqlite", {});
    INFO(runner.out << runner.err);
    CHECK(rest == 0);
    check_original();
  }
  SECTION("a worker killed before the restore: the next worker of the session restores") {
    fresh_target();
    ::setenv("RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE", "1", 1);
    const int killed = worker("next.sqlite", {});
    ::unsetenv("RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE");
    INFO(runner.out << runner.err);
    REQUIRE(killed == 128 + SIGKILL);
    CHECK((TuningSettings(target, defaults) == tuned ||
           TuningSettings(target, explicit_refresh) == tuned));
    const int next = worker("next.sqlite", {});
    INFO(runner.out << runner.err);
    CHECK(next == 0);
    check_original();
    for (const std::string& index : {defaults, explicit_refresh}) {
      CHECK(CountOf(target, index) == 300);
    }
  }
  target.DeleteIndices(all);
  source.DeleteIndices(all);
}

TEST_CASE("DocumentsFromSnapshotMigration --tune-target tunes an empty index and puts it back",
          "[real][tuning]") {
  RealNode source("os2");
  RealNode target("os3");
  const std::string index = "rn-tune-documents";
  MakeTuningIndex(source, index, "", 200);
  const fs::path location = SnapshotOnNode(source, "rn-tune-documents-repo", "d1", index);
  target.DeleteIndices({index});
  target.Ok("PUT", "/" + index,
            R"({"settings":{"number_of_shards":1,"number_of_replicas":1,)"
            R"("refresh_interval":"3s"}})");
  Runner runner;
  auto documents = [&](const std::string& store, const std::string& option) {
    std::vector<std::string> argv =
        MigrationArgs(RFS_DOCUMENTS_TOOL, location, "d1", target.url(), runner.dir.File(store),
                      {"--index-allowlist", index});
    if (!option.empty()) argv.push_back(option);
    return runner.Run(argv);
  };
  // Off by default: its users load indices they manage themselves.
  const int untuned = documents("default.sqlite", "");
  INFO(runner.out << runner.err);
  CHECK(untuned == kNoWorkLeft);
  CHECK(runner.err.find(" tuned: ") == std::string::npos);
  CHECK(TuningSettings(target, index) == std::pair<std::string, std::string>{"1", "3s"});
  CHECK(CountOf(target, index) == 200);
  // The index now holds documents: never tuned again.
  const int nonempty = documents("nonempty.sqlite", "--tune-target");
  CHECK(nonempty == kNoWorkLeft);
  CHECK(runner.err.find(" tuned: ") == std::string::npos);
  // Empty when the shard setup runs: tuned, and put back.
  target.DeleteIndices({index});
  target.Ok("PUT", "/" + index,
            R"({"settings":{"number_of_shards":1,"number_of_replicas":1,)"
            R"("refresh_interval":"3s"}})");
  const int tuned = documents("tuned.sqlite", "--tune-target");
  INFO(runner.out << runner.err);
  CHECK(tuned == kNoWorkLeft);
  CHECK(runner.err.find("index " + index +
                        " tuned: number_of_replicas 0 (was 1), "
                        "refresh_interval -1 (was 3s)") != std::string::npos);
  CHECK(runner.err.find("index " + index +
                        " restored: number_of_replicas 1, refresh_interval "
                        "3s, refreshed") != std::string::npos);
  CHECK(TuningSettings(target, index) == std::pair<std::string, std::string>{"1", "3s"});
  CHECK(CountOf(target, index) == 200);
  target.DeleteIndices({index});
  source.DeleteIndices({index});
}

namespace {

// Waits until `file` holds `text` while `process` runs: false once it exited without, or after
// `limit`.
bool WaitForText(rfs::test::ChildProcess& process, const std::string& file, const std::string& text,
                 std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (rfs::test::ReadTextFile(file).find(text) != std::string::npos) return true;
    if (process.Exited()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The documents a failed-documents folder holds records of (none when it was never made).
size_t FailedRecords(const std::string& dir) {
  if (!fs::exists(dir)) return 0;
  return Occurrences(FailedRecordsText(dir), "\"error_type\"");
}

// The source of the block tests: `name` with `docs` documents on Elasticsearch 7.10, snapshot "a".
fs::path BlockSource(const std::string& name, int docs) {
  RealNode source("es7");
  MakeIndex(source, name, docs);
  const fs::path location = SnapshotOnNode(source, name + "-repo", "a", name);
  source.DeleteIndices({name});
  return location;
}

// `name` made afresh on `target` with the index setting `block` set.
void MakeBlockedIndex(RealNode& target, const std::string& name, const std::string& block) {
  target.DeleteIndices({name});
  target.Ok("PUT", "/" + name, R"({"settings":{"number_of_shards":1,"number_of_replicas":0}})");
  target.Ok("PUT", "/" + name + "/_settings", R"({")" + block + R"(":true})");
}

void LiftBlock(RealNode& target, const std::string& name, const std::string& block) {
  target.Ok("PUT", "/" + name + "/_settings", R"({")" + block + R"(":null})");
}

}  // namespace

TEST_CASE("a block on the target index lifted while the worker waits costs no document",
          "[real][block]") {
  // What the nodes answer each document of a blocked index: index.blocks.write 403
  // cluster_block_exception "blocked by: [FORBIDDEN/8/index write (api)]", and
  // read_only_allow_delete 429 cluster_block_exception. Both are lifted, so both are waited out:
  // nothing is recorded as failed and the run ends clean, whichever tool runs it.
  struct Case {
    const char* tool;
    const char* target;
    const char* block;
  };
  const Case c = GENERATE(Case{"documents", "os2", "index.blocks.write"},
                          Case{"documents", "os3", "index.blocks.read_only_allow_delete"},
                          Case{"rfs_worker", "os3", "index.blocks.write"},
                          Case{"rfs_worker", "os2", "index.blocks.read_only_allow_delete"});
  INFO(c.tool << " into " << c.target << " under " << c.block);
  constexpr int kDocs = 300;
  const std::string name = "rn-blocked";
  const fs::path location = BlockSource(name, kDocs);
  RealNode target(c.target);
  MakeBlockedIndex(target, name, c.block);
  rfs::test::TempDir dir("rfs-blocked");
  const bool documents = std::string(c.tool) == "documents";
  const std::vector<std::string> argv =
      MigrationArgs(documents ? RFS_DOCUMENTS_TOOL : RFS_WORKER_TOOL, location, "a", target.url(),
                    dir.File("store.sqlite"),
                    {"--failed-documents-dir", dir.File("failed"), "--index-allowlist", name});
  rfs::test::ChildProcess worker(argv, dir.File("out"), dir.File("err"));
  // Sending starts once the worker holds the shard (RfsWorker: once it is in its documents phase).
  const bool sending = WaitForText(worker, dir.File("err"),
                                   documents ? R"("event":"acquired")" : R"("phase":"documents")",
                                   std::chrono::seconds(120));
  INFO(rfs::test::ReadTextFile(dir.File("out")) << rfs::test::ReadTextFile(dir.File("err")));
  REQUIRE(sending);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  // Three seconds of refusals: still waiting, nothing written.
  REQUIRE_FALSE(worker.Exited());
  CHECK(target.Ok("GET", "/" + name + "/_count").at("count") == 0);
  LiftBlock(target, name, c.block);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (!worker.Exited() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(worker.Exited());  // went on once the block was lifted
  const int code = worker.Wait();
  INFO(rfs::test::ReadTextFile(dir.File("out")) << rfs::test::ReadTextFile(dir.File("err")));
  CHECK(code == (documents ? kNoWorkLeft : 0));
  CHECK(CountOf(target, name) == kDocs);
  CHECK(FailedRecords(dir.File("failed")) == 0);
  target.DeleteIndices({name});
}

TEST_CASE("a block never lifted ends the worker after --max-retries with its shard given back",
          "[real][block]") {
  constexpr int kDocs = 300;
  const std::string name = "rn-blocked-long";
  const fs::path location = BlockSource(name, kDocs);
  RealNode target("os3");
  MakeBlockedIndex(target, name, "index.blocks.write");
  Runner runner;
  // A five-minute lease: a shard left held would keep the next worker from it that long.
  const std::vector<std::string> argv = MigrationArgs(
      RFS_DOCUMENTS_TOOL, location, "a", target.url(), runner.dir.File("store.sqlite"),
      {"--failed-documents-dir", runner.dir.File("failed"), "--max-retries", "2",
       "--initial-lease-duration", "PT5M"});
  const int code = runner.Run(argv);
  INFO(runner.out << runner.err);
  CHECK(code == 1);
  CHECK(runner.err.find("cluster_block_exception") != std::string::npos);
  CHECK(runner.err.find("FORBIDDEN/8/index write (api)") != std::string::npos);
  CHECK(FailedRecords(runner.dir.File("failed")) == 0);
  CHECK(CountOf(target, name) == 0);

  // Lifted, the next worker on the store takes the shard at once: no lease to wait out.
  LiftBlock(target, name, "index.blocks.write");
  const auto started = std::chrono::steady_clock::now();
  const int next = runner.Run(argv);
  const auto took = std::chrono::steady_clock::now() - started;
  INFO(runner.out << runner.err);
  CHECK(next == kNoWorkLeft);
  CHECK(took < std::chrono::seconds(60));
  CHECK(CountOf(target, name) == kDocs);
  CHECK(FailedRecords(runner.dir.File("failed")) == 0);
  target.DeleteIndices({name});
}
