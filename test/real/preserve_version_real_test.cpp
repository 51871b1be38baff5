// --preserve-version against real nodes: documents updated several times on a source (OpenSearch 2
// and Elasticsearch 7.10, so `_version` > 1 in the shard's doc values), snapshotted, and migrated
// into OpenSearch 3 while a writer puts newer versions of some of them on the target, before and
// during the run. The writer's documents keep their content and version ("already newer", counted,
// exit as a clean run), every other document carries the source's `_version`; without the option
// the run overwrites them as it always did. Data streams take only `create` with internal versions:
// the run warns and writes them without versions.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/opensearch_double.hpp"
#include "support/real_node.hpp"
#include "support/tool_runner.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::test::RealNode;

constexpr int kNoWorkLeft = 3;
// Documents the writer on the target puts there in a newer version: before the run, and while it
// runs. Their external version is above any the source gives.
constexpr int kWrittenBefore = 20;  // d0 .. d19
constexpr int kWrittenDuring = 20;  // d20 .. d39
constexpr int kDocs = 300;
constexpr int64_t kWriterVersion = 1000;

struct Runner : rfs::test::ToolRunner {
  Runner() : ToolRunner("rfs-pv") {}
  int Run(const std::vector<std::string>& argv) {
    return ToolRunner::Run(argv, "", std::chrono::seconds(600));
  }
};

std::string Id(int n) { return "d" + std::to_string(n); }

// `name` on `node`, 2 shards: kDocs documents, d0..d149 updated twice more (version 3), d150..d224
// once more (version 2), the rest indexed once (version 1); then snapshot `snapshot` of it.
fs::path MakeVersionedSource(RealNode& node, const std::string& name, const std::string& snapshot) {
  node.DeleteIndices({name});
  node.Ok("PUT", "/" + name, R"({"settings":{"number_of_shards":2,"number_of_replicas":0}})");
  auto write_all = [&](int from, int to, int round) {
    std::string body;
    for (int n = from; n < to; ++n) {
      body += R"({"index":{"_index":")" + name + R"(","_id":")" + Id(n) + "\"}}\n" + R"({"n":)" +
              std::to_string(n) + R"(,"round":)" + std::to_string(round) + "}\n";
    }
    node.Ok("POST", "/_bulk?refresh=true", body);
  };
  write_all(0, kDocs, 1);
  write_all(0, 225, 2);
  write_all(0, 150, 3);
  const fs::path location = node.repo_path() / "rn-pv-repo";
  node.RegisterFsRepository("rn-pv-repo", location);
  node.Send("DELETE", "/_snapshot/rn-pv-repo/" + snapshot);
  node.Ok("PUT", "/_snapshot/rn-pv-repo/" + snapshot + "?wait_for_completion=true",
          R"({"indices":")" + name + R"(","include_global_state":false})");
  return location;
}

// GET of one document: its _version and _source.
std::pair<int64_t, json::value> Get(RealNode& node, const std::string& index,
                                    const std::string& id) {
  const json::value doc = node.Ok("GET", "/" + index + "/_doc/" + id);
  return {doc.at("_version").to_number<int64_t>(), doc.at("_source")};
}

// Writes `id` on the target with external version kWriterVersion and the writer's content;
// true when the node took it.
bool WriteNewer(RealNode& node, const std::string& index, const std::string& id) {
  const auto response =
      node.Send("PUT",
                "/" + index + "/_doc/" + id + "?version=" + std::to_string(kWriterVersion) +
                    "&version_type=external",
                R"({"writer":")" + id + R"("})");
  INFO("PUT " << id << " -> " << response.status << " " << response.body);
  return response.status == 200 || response.status == 201;
}

// The same write from a thread of its own: no test macros there (they are not thread-safe).
bool WriteNewerFromThread(rfs::net::IHttpTransport& transport, const std::string& index,
                          const std::string& id) {
  rfs::net::HttpRequest request;
  request.method = "PUT";
  request.target = "/" + index + "/_doc/" + id + "?version=" + std::to_string(kWriterVersion) +
                   "&version_type=external";
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = R"({"writer":")" + id + R"("})";
  auto response = transport.Send(request);
  return response.ok() && (response->status == 200 || response->status == 201);
}

uint64_t AlreadyNewer(const std::string& out) {
  std::smatch match;
  static const std::regex kLine(R"((\d+) documents already newer on the target)");
  if (!std::regex_search(out, match, kLine)) return 0;
  return std::stoull(match[1].str());
}

// External versions, request by request: each answer's status, error type and `_version` (items
// of a bulk too), for the same requests to a real node and to the double.
std::vector<std::string> RunVersionSuite(rfs::net::IHttpTransport& transport) {
  std::vector<std::string> out;
  auto req = [&](const std::string& method, const std::string& target, const std::string& body) {
    rfs::net::HttpRequest request;
    request.method = method;
    request.target = target;
    if (!body.empty()) {
      request.headers.emplace_back("Content-Type", target.find("_bulk") != std::string::npos
                                                       ? "application/x-ndjson"
                                                       : "application/json");
    }
    request.body = body;
    auto response = transport.Send(request);
    REQUIRE(response.ok());
    std::string line = method + " " + target + ": " + std::to_string(response->status);
    boost::system::error_code ec;
    const json::value parsed = json::parse(response->body, ec);
    auto describe = [](const json::object& o) {
      std::string text;
      if (const auto* error = o.if_contains("error"); error && error->is_object()) {
        text += " " + std::string(error->at("type").as_string());
      }
      if (const auto* version = o.if_contains("_version")) {
        text += " v" + std::to_string(version->to_number<int64_t>());
      }
      return text;
    };
    if (!ec && parsed.is_object()) {
      line += describe(parsed.as_object());
      if (const auto* items = parsed.as_object().if_contains("items")) {
        for (const auto& item : items->as_array()) {
          const auto& result = item.as_object().begin()->value().as_object();
          line +=
              " [" + std::to_string(result.at("status").to_number<int>()) + describe(result) + "]";
        }
      }
    }
    out.push_back(line);
  };
  const std::string doc = "/rn-pv-suite/_doc/";
  req("PUT", "/rn-pv-suite", R"({"settings":{"number_of_shards":1,"number_of_replicas":0}})");
  req("PUT", doc + "1?version=5&version_type=external", R"({"a":1})");
  req("PUT", doc + "1?version=5&version_type=external", R"({"a":2})");
  req("PUT", doc + "1?version=4&version_type=external", R"({"a":3})");
  req("PUT", doc + "1?version=6&version_type=external", R"({"a":4})");
  req("PUT", doc + "1?version=6&version_type=external_gte", R"({"a":5})");
  req("PUT", doc + "1?version=5&version_type=external_gte", R"({"a":6})");
  req("GET", doc + "1", "");
  req("PUT", doc + "2?op_type=create&version=3&version_type=external", R"({"a":7})");
  req("PUT", doc + "3?version_type=external", R"({"a":8})");
  req("PUT", doc + "4", R"({"a":9})");
  req("PUT", doc + "4?version=1&version_type=external", R"({"a":10})");
  req("POST", "/_bulk",
      "{\"index\":{\"_index\":\"rn-pv-suite\",\"_id\":\"1\",\"version\":7,"
      "\"version_type\":\"external\"}}\n{\"a\":11}\n"
      "{\"index\":{\"_index\":\"rn-pv-suite\",\"_id\":\"1\",\"version\":2,"
      "\"version_type\":\"external\"}}\n{\"a\":12}\n"
      "{\"index\":{\"_index\":\"rn-pv-suite\",\"_id\":\"b\",\"routing\":\"r\","
      "\"version\":3,\"version_type\":\"external\"}}\n{\"a\":13}\n");
  req("POST", "/_bulk",
      "{\"create\":{\"_index\":\"rn-pv-suite\",\"_id\":\"c\",\"version\":3,"
      "\"version_type\":\"external\"}}\n{\"a\":14}\n");
  req("GET", doc + "1", "");
  req("GET", doc + "b?routing=r", "");
  req("DELETE", "/rn-pv-suite", "");
  return out;
}

}  // namespace

TEST_CASE("the OpenSearch double answers external versions as a real node does",
          "[real][double][preserve-version]") {
  RealNode node("os3");
  node.DeleteIndices({"rn-pv-suite"});
  auto real_transport = rfs::net::BeastHttpTransport::Open({.endpoint = node.url()});
  REQUIRE(real_transport.ok());
  const auto real = RunVersionSuite(**real_transport);
  auto double_node = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(double_node.ok());
  (*double_node)->AllowProtocolErrors();  // the suite sends refused requests on purpose
  auto double_transport =
      rfs::net::BeastHttpTransport::Open({.endpoint = (*double_node)->endpoint()});
  REQUIRE(double_transport.ok());
  const auto doubled = RunVersionSuite(**double_transport);
  REQUIRE(real.size() == doubled.size());
  for (size_t i = 0; i < real.size(); ++i) {
    INFO("real node: " << real[i] << "\ndouble:    " << doubled[i]);
    CHECK(real[i] == doubled[i]);
  }
}

TEST_CASE("preserve-version keeps source versions and never overwrites a newer document",
          "[real][preserve-version]") {
  for (const char* source_name : {"os2", "es7"}) {
    DYNAMIC_SECTION("source " << source_name) {
      RealNode source(source_name);
      RealNode target("os3");
      const std::string index = "rn-pv-docs";
      const fs::path repo = MakeVersionedSource(source, index, "v1");
      std::map<std::string, int64_t> source_versions;
      for (int n = 0; n < kDocs; ++n) source_versions[Id(n)] = Get(source, index, Id(n)).first;
      CHECK(source_versions.at("d0") == 3);
      CHECK(source_versions.at("d200") == 2);
      CHECK(source_versions.at("d299") == 1);

      target.DeleteIndices({index});
      target.Ok("PUT", "/" + index,
                R"({"settings":{"number_of_shards":2,"number_of_replicas":0}})");
      for (int n = 0; n < kWrittenBefore; ++n) REQUIRE(WriteNewer(target, index, Id(n)));

      Runner runner;
      auto migrate = [&](const std::string& store, bool preserve,
                         const std::vector<std::string>& snapshots = {"--snapshot-name", "v1"}) {
        std::vector<std::string> argv = {RFS_DOCUMENTS_TOOL,
                                         "--snapshot-local-dir",
                                         repo.string(),
                                         "--target-host",
                                         target.url(),
                                         "--coordinator-db",
                                         runner.dir.File(store),
                                         "--failed-documents-dir",
                                         runner.dir.File(store + "-failed"),
                                         "--documents-per-bulk-request",
                                         "10",
                                         "--max-connections",
                                         "1"};
        argv.insert(argv.end(), snapshots.begin(), snapshots.end());
        if (preserve) argv.push_back("--preserve-version");
        return runner.Run(argv);
      };
      // The writer goes on while the migration runs: each of its documents is newer whether it
      // lands before the migration's copy (which then meets a 409) or after it (which it replaces).
      std::atomic<bool> stop{false};
      std::atomic<int> written_during{0};
      auto writer_transport = rfs::net::BeastHttpTransport::Open({.endpoint = target.url()});
      REQUIRE(writer_transport.ok());
      std::thread writer([&] {
        // In order, so that the documents it wrote are d20 .. d(20 + written_during - 1).
        for (int n = kWrittenBefore; n < kWrittenBefore + kWrittenDuring && !stop; ++n) {
          if (!WriteNewerFromThread(**writer_transport, index, Id(n))) break;
          ++written_during;
          std::this_thread::sleep_for(std::chrono::milliseconds(15));
        }
      });
      const int code = migrate("preserve.sqlite", true);
      stop = true;
      writer.join();
      INFO(runner.out << runner.err);
      REQUIRE(code == kNoWorkLeft);
      // The documents the writer put there before the run are there in a newer version: counted
      // as such; those it wrote during the run may have landed on either side of the run's copy.
      const uint64_t newer = AlreadyNewer(runner.out);
      CHECK(newer >= kWrittenBefore);
      CHECK(newer <= kWrittenBefore + kWrittenDuring);
      CHECK(runner.out.find("0 failed docs") != std::string::npos);
      CHECK(runner.out.find(index + ": " + std::to_string(newer) + " already newer") !=
            std::string::npos);
      // Finish the writer's documents the run may have stopped it short of, then compare.
      for (int n = kWrittenBefore + written_during; n < kWrittenBefore + kWrittenDuring; ++n) {
        REQUIRE(WriteNewer(target, index, Id(n)));
      }
      target.Ok("POST", "/" + index + "/_refresh");
      for (int n = 0; n < kDocs; ++n) {
        INFO("document " << Id(n));
        const auto [version, doc] = Get(target, index, Id(n));
        if (n < kWrittenBefore + kWrittenDuring) {
          CHECK(version == kWriterVersion);
          CHECK(doc.at("writer").as_string() == Id(n).c_str());
        } else {
          CHECK(version == source_versions.at(Id(n)));
          CHECK(doc == Get(source, index, Id(n)).second);
        }
      }
      // Sent again (a redone run), every document is already there: all already newer, exit 3.
      REQUIRE(migrate("redo.sqlite", true) == kNoWorkLeft);
      CHECK(AlreadyNewer(runner.out) == kDocs);

      // A delta after live writes: on the source d250..d259 updated once more (version 2) and
      // d290 deleted; on the target the writer made d250..d254 newer meanwhile. The delta keeps
      // those, brings d255..d259 to the source's version 2, and deletes d290 (a delete carries no
      // version: it removes whatever copy the target holds).
      {
        std::string body;
        for (int n = 250; n < 260; ++n) {
          body += R"({"index":{"_index":")" + index + R"(","_id":")" + Id(n) + "\"}}\n" +
                  R"({"n":)" + std::to_string(n) + R"(,"round":4})" + "\n";
        }
        source.Ok("POST", "/_bulk?refresh=true", body);
        source.Ok("DELETE", "/" + index + "/_doc/d290?refresh=true");
        source.Send("DELETE", "/_snapshot/rn-pv-repo/v2");
        source.Ok("PUT", "/_snapshot/rn-pv-repo/v2?wait_for_completion=true",
                  R"({"indices":")" + index + R"(","include_global_state":false})");
      }
      for (int n = 250; n < 255; ++n) REQUIRE(WriteNewer(target, index, Id(n)));
      const int delta = migrate("delta.sqlite", true,
                                {"--snapshot-name", "v2", "--previous-snapshot-name", "v1"});
      INFO(runner.out << runner.err);
      REQUIRE(delta == kNoWorkLeft);
      CHECK(AlreadyNewer(runner.out) == 5);
      CHECK(runner.out.find("1 deletes of documents gone since the previous snapshot") !=
            std::string::npos);
      for (int n = 250; n < 260; ++n) {
        INFO("document " << Id(n));
        const auto [version, doc] = Get(target, index, Id(n));
        if (n < 255) {
          CHECK(version == kWriterVersion);
        } else {
          CHECK(version == 2);
          CHECK(doc == Get(source, index, Id(n)).second);
        }
      }
      CHECK(target.Send("GET", "/" + index + "/_doc/d290").status == 404);

      // Without the option, as before: every document written over, the writer's included, with
      // the target's own versions.
      REQUIRE(migrate("plain.sqlite", false) == kNoWorkLeft);
      CHECK(AlreadyNewer(runner.out) == 0);
      const auto [version0, doc0] = Get(target, index, "d0");
      CHECK(version0 == kWriterVersion + 1);
      CHECK(doc0 == Get(source, index, "d0").second);
      const auto [version299, doc299] = Get(target, index, "d299");
      CHECK(doc299 == Get(source, index, "d299").second);
      // The source's 1 from the first run, kept by the redo (a 409), then the target's own next.
      CHECK(version299 == 2);
      target.DeleteIndices({index});
      source.DeleteIndices({index});
    }
  }
}

TEST_CASE("RfsWorker --preserve-version verifies a target holding newer documents as complete",
          "[real][preserve-version]") {
  RealNode source("os2");
  RealNode target("os3");
  const std::string index = "rn-pv-worker";
  const fs::path repo = MakeVersionedSource(source, index, "w1");
  target.DeleteIndices({index});
  target.Ok("PUT", "/" + index, R"({"settings":{"number_of_shards":2,"number_of_replicas":0}})");
  for (int n = 0; n < kWrittenBefore; ++n) REQUIRE(WriteNewer(target, index, Id(n)));
  Runner runner;
  const int code = runner.Run(
      {RFS_WORKER_TOOL, "--snapshot-local-dir", repo.string(), "--snapshot-name", "w1",
       "--target-host", target.url(), "--coordinator-db", runner.dir.File("worker.sqlite"),
       "--index-allowlist", index, "--verify-sample", "1000", "--preserve-version"});
  INFO(runner.out << runner.err);
  CHECK(code == 0);
  CHECK(runner.out.find("every phase COMPLETED") != std::string::npos);
  // Every document sampled: the writer's are newer on the target, the rest identical.
  CHECK(runner.out.find(std::to_string(kDocs - kWrittenBefore) + "/" + std::to_string(kDocs) +
                        " identical, " + std::to_string(kWrittenBefore) + " newer on the target") !=
        std::string::npos);
  CHECK(runner.out.find("\"documents_already_newer\":" + std::to_string(kWrittenBefore)) !=
        std::string::npos);
  CHECK(Get(target, index, "d0").first == kWriterVersion);
  CHECK(Get(target, index, "d100").first == 3);
  // Every document compared: the writer's are newer on the target, never different.
  const int verified = runner.Run(
      {RFS_WORKER_TOOL, "--snapshot-local-dir", repo.string(), "--snapshot-name", "w1",
       "--target-host", target.url(), "--coordinator-db", runner.dir.File("worker.sqlite"),
       "--index-allowlist", index, "--preserve-version", "--verify-only", "--verify-all"});
  INFO(runner.out << runner.err);
  CHECK(verified == 0);
  CHECK(runner.out.find("  " + index + ": expected " + std::to_string(kDocs) + ", equal " +
                        std::to_string(kDocs - kWrittenBefore) +
                        ", missing 0, different 0, not comparable 0, already newer " +
                        std::to_string(kWrittenBefore) + ", extra 0, target count " +
                        std::to_string(kDocs) + "\n") != std::string::npos);
  target.DeleteIndices({index});
  source.DeleteIndices({index});
}

TEST_CASE("preserve-version warns that a data stream's documents go without versions",
          "[real][preserve-version][data-stream]") {
  // A data stream takes only `create`, which the engines refuse with an external version: the
  // stream's documents go as before (create, internal versions), and the run says so.
  RealNode source("os2");
  RealNode target("os3");
  const std::string stream = "rn-pv-stream";
  source.Send("DELETE", "/_data_stream/" + stream);
  source.Send("DELETE", "/_index_template/" + stream + "-tpl");
  source.Ok("PUT", "/_index_template/" + stream + "-tpl",
            R"({"index_patterns":[")" + stream + R"(*"],"data_stream":{},"priority":500,
                "template":{"settings":{"number_of_shards":1,"number_of_replicas":0},
                "mappings":{"properties":{"@timestamp":{"type":"date"},"n":{"type":"long"}}}}})");
  source.Ok("PUT", "/_data_stream/" + stream);
  std::string body;
  for (int n = 0; n < 10; ++n) {
    body += R"({"create":{"_index":")" + stream + R"(","_id":"e)" + std::to_string(n) + "\"}}\n" +
            R"({"@timestamp":"2024-03-01T10:00:00Z","n":)" + std::to_string(n) + "}\n";
  }
  source.Ok("POST", "/_bulk?refresh=true", body);
  const fs::path location = source.repo_path() / "rn-pv-ds-repo";
  source.RegisterFsRepository("rn-pv-ds-repo", location);
  source.Send("DELETE", "/_snapshot/rn-pv-ds-repo/a");
  source.Ok("PUT", "/_snapshot/rn-pv-ds-repo/a?wait_for_completion=true",
            R"({"indices":")" + stream + R"(","include_global_state":true})");
  target.Send("DELETE", "/_data_stream/" + stream);
  target.Send("DELETE", "/_index_template/" + stream + "-tpl");
  Runner runner;
  REQUIRE(runner.Run({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", location.string(),
                      "--snapshot-name", "a", "--target-host", target.url(), "--index-allowlist",
                      stream, "--index-template-allowlist", stream + "-tpl"}) == 0);
  const int code =
      runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", location.string(), "--snapshot-name",
                  "a", "--target-host", target.url(), "--coordinator-db",
                  runner.dir.File("ds.sqlite"), "--index-allowlist", stream, "--preserve-version"});
  INFO(runner.out << runner.err);
  CHECK(code == kNoWorkLeft);
  CHECK(runner.out.find("WARNING: --preserve-version does not apply to data streams") !=
        std::string::npos);
  CHECK(runner.out.find(": no_work_left; 10 docs") != std::string::npos);
  CHECK(runner.err.find("preserve_version_not_applied") != std::string::npos);
  target.Ok("POST", "/" + stream + "/_refresh");
  CHECK(target.Ok("GET", "/" + stream + "/_count").at("count").to_number<int64_t>() == 10);
  target.Send("DELETE", "/_data_stream/" + stream);
  source.Send("DELETE", "/_data_stream/" + stream);
}
