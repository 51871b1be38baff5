// User transforms end to end: DocumentsFromSnapshotMigration with a jq document transform (rename
// the index, add a field, drop some documents, fail others) against the OpenSearch double, its
// metrics pushed to an OTLP collector double; and MetadataMigration plus workers splitting a real
// Elasticsearch 5/6 typed index with TypeMappingSanitizationTransformerProvider.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/exit_codes.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/net/http_server.hpp"

#include "e2e_support.hpp"
#include "support/corpus.hpp"
#include "support/generated_repo.hpp"
#include "support/opensearch_double.hpp"
#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace rfs::e2e;

using rfs::core::kExitNoWorkLeft;

// An OTLP/HTTP collector double: keeps the last export of each service instance.
class CollectorDouble {
 public:
  CollectorDouble() {
    rfs::net::HttpServerOptions options;
    options.threads = 2;
    auto server = rfs::net::HttpServer::Start(options, [this](const rfs::net::HttpRequest& r) {
      rfs::net::HttpResponse response;
      response.status = 200;
      response.body = "{}";
      if (r.method != "POST" || r.target != "/v1/metrics") {
        response.status = 404;
        return response;
      }
      json::value body = json::parse(r.body);
      std::string instance;
      for (const auto& a :
           body.at("resourceMetrics").at(0).at("resource").at("attributes").as_array()) {
        if (a.at("key") == "service.instance.id") {
          instance = std::string(a.at("value").at("stringValue").as_string());
        }
      }
      std::lock_guard lock(mu_);
      last_[instance] = std::move(body);
      return response;
    });
    REQUIRE(server.ok());
    server_ = *std::move(server);
  }
  std::string url() const { return server_->url(); }

  // The sum over instances of a metric's data points (counters and gauges).
  int64_t Total(const std::string& name) const {
    std::lock_guard lock(mu_);
    int64_t total = 0;
    for (const auto& [instance, body] : last_) {
      for (const auto& m :
           body.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").as_array()) {
        if (m.at("name").as_string() != name) continue;
        const json::object& metric = m.as_object();
        const json::value& data = metric.contains("sum") ? metric.at("sum") : metric.at("gauge");
        for (const auto& point : data.at("dataPoints").as_array()) {
          total += std::stoll(std::string(point.at("asInt").as_string()));
        }
      }
    }
    return total;
  }
  // The same, over the data points whose attribute `key` is `value`.
  int64_t TotalWhere(const std::string& name, const std::string& key,
                     const std::string& value) const {
    std::lock_guard lock(mu_);
    int64_t total = 0;
    for (const auto& [instance, body] : last_) {
      for (const auto& m :
           body.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").as_array()) {
        if (m.at("name").as_string() != name) continue;
        for (const auto& point : m.at("sum").at("dataPoints").as_array()) {
          bool match = false;
          for (const auto& a : point.at("attributes").as_array()) {
            if (a.at("key").as_string() == key &&
                a.at("value").at("stringValue").as_string() == value) {
              match = true;
            }
          }
          if (match) total += std::stoll(std::string(point.at("asInt").as_string()));
        }
      }
    }
    return total;
  }
  size_t instances() const {
    std::lock_guard lock(mu_);
    return last_.size();
  }
  std::map<std::string, json::value> Bodies() const {
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, json::value> last_;
  std::unique_ptr<rfs::net::HttpServer> server_;
};

// GET `path` on the double: the JSON body of a 200, nullopt for anything else.
std::optional<json::value> GetJson(const std::string& endpoint, const std::string& path) {
  rfs::net::HttpTransportOptions options;
  options.endpoint = endpoint;
  auto transport = rfs::net::BeastHttpTransport::Open(options);
  REQUIRE(transport.ok());
  rfs::net::HttpRequest get;
  get.target = path;
  auto response = (*transport)->Send(get);
  REQUIRE(response.ok());
  if (response->status != 200) return std::nullopt;
  return json::parse(response->body);
}

// jq 1.6 holds every number as a double and writes integral ones without a fraction: a source's
// 648.0 comes back as 648 (the same number; README: "jq and numbers").
void AsJqWritesNumbers(json::value& v) {
  if (v.is_double() && std::trunc(v.get_double()) == v.get_double() &&
      std::abs(v.get_double()) < 9007199254740992.0) {
    v = static_cast<int64_t>(v.get_double());
  } else if (v.is_object()) {
    for (auto& [key, value] : v.as_object()) AsJqWritesNumbers(value);
  } else if (v.is_array()) {
    for (auto& value : v.as_array()) AsJqWritesNumbers(value);
  }
}

bool EndsWith(const std::string& text, char c) { return !text.empty() && text.back() == c; }

}  // namespace

TEST_CASE("a jq document transform renames, adds, drops and fails documents, metrics go to OTLP",
          "[e2e][generated][transform][metrics]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 2 --docs 600 --updates 20 "
      "--deletes 15 --seed 93");
  if (!generated) return;
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  CollectorDouble collector;
  MigrationRun run;
  // Ids ending in 3 are dropped, ids ending in 7 fail in the transform; the rest go to
  // "<index>-v2" with a new field.
  const std::string config_file = run.dir.File("transform.json");
  std::ofstream(config_file) << R"([{"JqTransformerProvider": {"script":
      "select(.operation._id | endswith(\"3\") | not) | if (.operation._id | endswith(\"7\")) then error(\"refused by the test\") else .operation._index += \"-v2\" | .document.migrated = true end"}}])";
  const std::string failed_dir = run.dir.File("failed");
  int runs = 0;
  // The per-index account in the JSON events (stderr is not a terminal here).
  std::map<std::string, int64_t> event_account;
  for (; runs < 10; ++runs) {
    const std::string name = "transform-" + std::to_string(runs);
    const int code = rfs::test::RunProcess(
        {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
         (*target)->endpoint(), "--worker-id", name, "--coordinator-db",
         run.dir.File("coordination.sqlite"), "--failed-documents-dir", failed_dir,
         "--doc-transformer-config-file", config_file, "--otel-metrics-collector-endpoint",
         collector.url(), "--metrics-port", "0", "--metrics-bind-address", "127.0.0.1"},
        run.Out(name), run.Err(name));
    INFO(run.Logs(name));
    REQUIRE((code == kExitNoWorkLeft || code == 6 || code == 0 || code == 2 || code == 4));
    if (code == 6) {
      CHECK(rfs::test::ReadTextFile(run.Out(name)).find("failed in a transform") !=
            std::string::npos);
    }
    // The worker says where its Prometheus metrics are served.
    CHECK(run.Logs(name).find(R"("event":"metrics_endpoint","message":"http://127.0.0.1:)") !=
          std::string::npos);
    std::string run_outcome;
    std::istringstream lines(rfs::test::ReadTextFile(run.Err(name)));
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] != '{') continue;
      const json::object event = json::parse(line).as_object();
      if (event.at("event") == "index_account") {
        for (const char* key : {"read", "written", "transform_failed", "transform_dropped"}) {
          event_account[key] += event.at(key).to_number<int64_t>();
        }
      } else if (event.at("event") == "run_account") {
        run_outcome = std::string(event.at("outcome").as_string());
      }
    }
    CHECK(run_outcome == (code == 6 ? "COMPLETED_WITH_FINDINGS" : "COMPLETED"));
    if (code == kExitNoWorkLeft) break;
  }
  REQUIRE(runs < 10);

  const ExpectedDocs expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  ExpectedDocs transformed;
  std::set<std::string> should_fail;
  size_t total = 0, dropped = 0;
  for (const auto& [index, docs] : expected) {
    for (const auto& [id, doc] : docs) {
      ++total;
      if (EndsWith(id, '3')) {
        ++dropped;
        continue;
      }
      if (EndsWith(id, '7')) {
        should_fail.insert(id);
        continue;
      }
      ExpectedDoc out = doc;
      out.source.as_object()["migrated"] = true;
      AsJqWritesNumbers(out.source);
      transformed[index + "-v2"][id] = out;
    }
  }
  REQUIRE_FALSE(should_fail.empty());
  REQUIRE(dropped > 0);
  CheckTarget(**target, transformed);

  std::set<std::string> failed_ids;
  for (const auto& record : ReadFailedDocuments(failed_dir)) {
    failed_ids.insert(std::string(record.at("id").as_string()));
    CHECK(record.at("error_type") == "transform_exception");
    CHECK(std::string(record.at("reason").as_string()).find("refused by the test") !=
          std::string::npos);
  }
  CHECK(failed_ids == should_fail);

  // Every worker's last export: documents read, sent, dropped and failed add up.
  CHECK(collector.instances() == static_cast<size_t>(runs + 1));
  CHECK(collector.Total("rfs_documents_read_total") >= static_cast<int64_t>(total));
  CHECK(collector.Total("rfs_documents_sent_total") >=
        static_cast<int64_t>(total - dropped - should_fail.size()));
  CHECK(collector.Total("rfs_transform_dropped_documents_total") >= static_cast<int64_t>(dropped));
  CHECK(collector.Total("rfs_failed_documents_total") >= static_cast<int64_t>(should_fail.size()));
  // The per-index account, by outcome.
  CHECK(collector.TotalWhere("rfs_index_documents_total", "outcome", "transform_failed") >=
        static_cast<int64_t>(should_fail.size()));
  CHECK(collector.TotalWhere("rfs_index_documents_total", "outcome", "transform_dropped") >=
        static_cast<int64_t>(dropped));
  CHECK(collector.TotalWhere("rfs_index_documents_total", "outcome", "written") >=
        static_cast<int64_t>(total - dropped - should_fail.size()));
  CHECK(collector.TotalWhere("rfs_index_documents_total", "outcome", "read") >=
        static_cast<int64_t>(total));
  CHECK(collector.Total("rfs_work_items_total") > 0);
  // The same account in the workers' JSON events.
  CHECK(event_account["transform_failed"] >= static_cast<int64_t>(should_fail.size()));
  CHECK(event_account["transform_dropped"] >= static_cast<int64_t>(dropped));
  CHECK(event_account["written"] >= static_cast<int64_t>(total - dropped - should_fail.size()));
  CHECK(event_account["read"] >= static_cast<int64_t>(total));
}

TEST_CASE(
    "a Python document transform written for the Java tool renames, drops and fails documents",
    "[e2e][generated][transform][python]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 300 --seed 95");
  REQUIRE(generated);
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  MigrationRun run;
  // As the Java tool's README writes them: main(context) returns the transform function.
  const std::string script = run.dir.File("transform.py");
  std::ofstream(script) << R"PY(
def main(context):
    suffix = context["suffix"]

    def transform(documents):
        out = []
        for document in documents:
            doc_id = document["operation"]["_id"]
            if doc_id.endswith("3"):
                continue
            if doc_id.endswith("7"):
                raise ValueError("refused by the test")
            document["operation"]["_index"] += suffix
            document["document"]["py"] = True
            print("transformed", doc_id)
            out.append(document)
        return out

    return transform

main
)PY";
  const json::array config{json::object{
      {"JsonPythonTransformerProvider", json::object{{"initializationScriptFile", script},
                                                     {"bindingsObject", R"({"suffix":"-py"})"}}}}};
  const std::string failed_dir = run.dir.File("failed");
  const int code = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
       (*target)->endpoint(), "--coordinator-db", run.dir.File("c.sqlite"),
       "--failed-documents-dir", failed_dir, "--doc-transformer-config", json::serialize(config)},
      run.Out("python"), run.Err("python"));
  INFO(run.Logs("python"));
  REQUIRE(code == 6);

  ExpectedDocs transformed;
  std::set<std::string> should_fail;
  for (const auto& [index, docs] : ReadExpectedDocs(generated->dir / "expected-docs.ndjson")) {
    for (const auto& [id, doc] : docs) {
      if (EndsWith(id, '3')) continue;
      if (EndsWith(id, '7')) {
        should_fail.insert(id);
        continue;
      }
      ExpectedDoc out = doc;
      out.source.as_object()["py"] = true;
      transformed[index + "-py"][id] = out;
    }
  }
  REQUIRE_FALSE(should_fail.empty());
  CheckTarget(**target, transformed);
  std::set<std::string> failed_ids;
  for (const auto& record : ReadFailedDocuments(failed_dir)) {
    failed_ids.insert(std::string(record.at("id").as_string()));
    CHECK(std::string(record.at("reason").as_string()).find("ValueError: refused by the test") !=
          std::string::npos);
  }
  CHECK(failed_ids == should_fail);
  // The script's print() went to stderr, not into the tool's output.
  CHECK(rfs::test::ReadTextFile(run.Err("python")).find("transformed ") != std::string::npos);
  CHECK(rfs::test::ReadTextFile(run.Out("python")).find("transformed ") == std::string::npos);
}

TEST_CASE("a JMESPath document transform runs whatever virtual environment is on PATH",
          "[e2e][generated][transform][python][jmespath]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 120 --seed 96");
  REQUIRE(generated);
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  MigrationRun run;
  // An activated virtual environment without the system's packages: its python3 first on PATH.
  // Found there, it would become the interpreter's prefix and hide Debian's jmespath.
  const fs::path venv = run.dir.path() / "venv";
  fs::create_directories(venv / "bin");
  fs::create_symlink("/usr/bin/python3", venv / "bin" / "python3");
  std::ofstream(venv / "pyvenv.cfg") << "home = /usr/bin\ninclude-system-site-packages = false\n";
  const std::string old_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", ((venv / "bin").string() + ":" + old_path).c_str(), 1);
  // Every document but those of ids ending in 3.
  const int code = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
       (*target)->endpoint(), "--coordinator-db", run.dir.File("c.sqlite"),
       "--doc-transformer-config",
       R"([{"JsonJMESPathTransformerProvider": {"script": "[?!ends_with(operation._id, '3')]"}}])"},
      run.Out("jmespath"), run.Err("jmespath"));
  ::setenv("PATH", old_path.c_str(), 1);
  INFO(run.Logs("jmespath"));
  REQUIRE(code == kExitNoWorkLeft);
  ExpectedDocs kept;
  for (const auto& [index, docs] : ReadExpectedDocs(generated->dir / "expected-docs.ndjson")) {
    for (const auto& [id, doc] : docs) {
      if (!EndsWith(id, '3')) kept[index][id] = doc;
    }
  }
  CheckTarget(**target, kept);
}

TEST_CASE("a Jolt chain (shift, default, remove, modify) reshapes every document it migrates",
          "[e2e][generated][transform][jolt]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 90 --seed 97");
  REQUIRE(generated);
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  MigrationRun run;
  // The batch is a list: the shift keeps each document's operation and source, the default adds
  // a field to every source, the remove takes one out of each (where it is), the modify
  // upper-cases the added field.
  const std::string config = R"([{"JsonJoltTransformerProvider": [
      {"script": {"operation": "shift", "spec": {"*": {"operation": "[&1].operation",
                                                       "document": "[&1].document"}}}},
      {"script": {"operation": "default", "spec": {"*": {"document": {"migrated_by": "jolt"}}}}},
      {"script": {"operation": "remove", "spec": {"*": {"document": {"title": ""}}}}},
      {"script": {"operation": "modify-overwrite-beta",
                  "spec": {"*": {"document": {"migrated_by": "=toUpper"}}}}}]}])";
  const int code =
      rfs::test::RunProcess({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(),
                             "--target-host", (*target)->endpoint(), "--coordinator-db",
                             run.dir.File("c.sqlite"), "--doc-transformer-config", config},
                            run.Out("jolt"), run.Err("jolt"));
  INFO(run.Logs("jolt"));
  REQUIRE(code == kExitNoWorkLeft);
  ExpectedDocs expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  size_t documents = 0;
  size_t titled = 0;
  for (auto& [index, docs] : expected) {
    for (auto& [id, doc] : docs) {
      REQUIRE(doc.source.is_object());
      doc.source.as_object()["migrated_by"] = "JOLT";
      titled += doc.source.as_object().erase("title");
      ++documents;
    }
  }
  CHECK(documents == 90);
  CHECK(titled > 0);
  CheckTarget(**target, expected);
}

TEST_CASE("a broken transformer configuration stops the tools at start-up with exit 64",
          "[e2e][transform][cli]") {
  MigrationRun run;
  const std::string out = run.dir.File("out");
  const int documents = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", run.dir.File("missing"), "--output-dir", out,
       "--doc-transformer-config", R"([{"JqTransformerProvider": {"script": ".a |||"}}])"},
      run.Out("documents"), run.Err("documents"));
  CHECK(documents == 64);
  CHECK(run.Logs("documents").find("JqTransformerProvider") != std::string::npos);
  // jq modules are refused the same way (libjq used to abort the process on them).
  const int modules = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", run.dir.File("missing"), "--output-dir", out,
       "--doc-transformer-config",
       R"([{"JqTransformerProvider": {"script": "import \"lib\" as lib; ."}}])"},
      run.Out("modules"), run.Err("modules"));
  CHECK(modules == 64);
  CHECK(run.Logs("modules").find("modules (import/include) are not supported") !=
        std::string::npos);
#ifdef RFS_METADATA_TOOL
  const int metadata = rfs::test::RunProcess(
      {RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", run.dir.File("missing"),
       "--target-host", "http://127.0.0.1:9", "--transformer-config", R"([{"Nope": {}}])"},
      run.Out("metadata"), run.Err("metadata"));
  CHECK(metadata == 64);
  CHECK(run.Logs("metadata").find("unknown provider") != std::string::npos);
#endif
}

TEST_CASE("an Elasticsearch 5 and 6 typed index is split by TypeMappingSanitization",
          "[e2e][corpus][transform]") {
#ifndef RFS_METADATA_TOOL
  FAIL("the MetadataMigration tool is not part of this build");
#else
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  // simple_index holds mapping type "doc" (as the repository was written); staticMappings sends it
  // to a new index, for metadata and documents alike.
  const std::string config =
      R"([{"TypeMappingSanitizationTransformerProvider":{"staticMappings":{"simple_index":{"doc":"simple_docs"}}}}])";
  for (const char* repo : {"es5_nocomp", "es6_nocomp"}) {
    SECTION(repo) {
      auto target = rfs::testing::OpenSearchDouble::Start();
      REQUIRE(target.ok());
      MigrationRun run;
      const std::string path = (*root / repo).string();
      const int metadata = rfs::test::RunProcess(
          {RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", path, "--snapshot-name",
           "snapshot_v2", "--target-host", (*target)->endpoint(), "--transformer-config", config},
          run.Out("metadata"), run.Err("metadata"));
      INFO(run.Logs("metadata"));
      REQUIRE(metadata == 0);
      auto index = GetJson((*target)->endpoint(), "/simple_docs");
      REQUIRE(index.has_value());
      INFO(json::serialize(*index));
      const json::value* mappings = &index->at("simple_docs").at("mappings");
      if (mappings->as_object().contains("_doc")) mappings = &mappings->at("_doc");
      CHECK(mappings->at("properties").at("value").at("type") == "integer");
      CHECK_FALSE(GetJson((*target)->endpoint(), "/simple_index").has_value());

      const int documents = rfs::test::RunProcess(
          {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", path, "--snapshot-name", "snapshot_v2",
           "--target-host", (*target)->endpoint(), "--coordinator-db",
           run.dir.File("coordination.sqlite"), "--failed-documents-dir", run.dir.File("failed"),
           "--doc-transformer-config", config},
          run.Out("documents"), run.Err("documents"));
      INFO(run.Logs("documents"));
      CHECK((documents == 0 || documents == kExitNoWorkLeft));
      ExpectedDocs expected;
      expected["simple_docs"]["1"] = ExpectedDoc{json::parse(R"({"value":42})"), std::nullopt};
      expected["simple_docs"]["2"] = ExpectedDoc{json::parse(R"({"value":99})"), std::nullopt};
      CheckTarget(**target, expected);
    }
  }
#endif
}

TEST_CASE("no planted secret leaves the worker: not through transforms, logs, documents or metrics",
          "[e2e][generated][transform][security]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 120 --seed 17");
  if (!generated) return;
  const std::vector<std::pair<std::string, std::string>> planted = {
      {"RFS_TARGET_PASSWORD", "planted-target-password-83f1"},
      {"AWS_SECRET_ACCESS_KEY", "planted-aws-secret-5b7c"},
      {"AWS_SESSION_TOKEN", "planted-session-token-a41e"},
      {"RFS_CONSOLE_TOKEN", "planted-console-token-c09d"}};
  rfs::testing::OpenSearchDoubleOptions double_options;
  double_options.username = "rfs";
  double_options.password = planted[0].second;
  auto target = rfs::testing::OpenSearchDouble::Start(double_options);
  REQUIRE(target.ok());
  CollectorDouble collector;
  MigrationRun run;
  // Every document carries what the program can see of the environment; ids ending in 7 fail
  // with it as their error message.
  const std::string config_file = run.dir.File("transform.json");
  std::ofstream(config_file) << R"([{"JqTransformerProvider": {"script":
      "if (.operation._id | endswith(\"7\")) then error(($ENV | tostring) + (env | tostring)) else .document.seen = {e: $ENV, f: env, o: [get_jq_origin, get_prog_origin, get_search_list]} end"}}])";
  for (const auto& [name, value] : planted) ::setenv(name.c_str(), value.c_str(), 1);
  const std::string failed_dir = run.dir.File("failed");
  const int code = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
       (*target)->endpoint(), "--target-username", "rfs", "--worker-id", "secrets",
       "--coordinator-db", run.dir.File("coordination.sqlite"), "--failed-documents-dir",
       failed_dir, "--doc-transformer-config-file", config_file,
       "--otel-metrics-collector-endpoint", collector.url()},
      run.Out("secrets"), run.Err("secrets"));
  for (const auto& [name, value] : planted) ::unsetenv(name.c_str());
  INFO(run.Logs("secrets"));
  REQUIRE(code == 6);  // the documents failed on purpose

  std::string everything = run.Logs("secrets");
  const ExpectedDocs expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  size_t stored = 0;
  for (const auto& [index, docs] : expected) {
    for (const auto& [id, doc] : docs) {
      if (auto found = (*target)->GetDocument(index, id)) {
        everything += found->source;
        ++stored;
      }
    }
  }
  CHECK(stored > 50);
  const auto failed = ReadFailedDocuments(failed_dir);
  CHECK_FALSE(failed.empty());
  for (const auto& record : failed) everything += json::serialize(record);
  for (const auto& [instance, body] : collector.Bodies()) everything += json::serialize(body);
  for (const auto& entry : fs::recursive_directory_iterator(run.dir.path())) {
    if (entry.is_regular_file() && entry.path().extension() != ".gz") {
      everything += rfs::test::ReadTextFile(entry.path());
    }
  }
  for (const auto& [name, value] : planted) {
    INFO(name);
    CHECK(everything.find(value) == std::string::npos);
    CHECK(everything.find(name) == std::string::npos);
  }
  CHECK((*target)->protocol_errors().empty());
}

TEST_CASE("failed documents are redriven once the cause is fixed, by two workers sharing the work",
          "[e2e][generated][transform][redrive]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 2 --docs 160 --seed 29");
  if (!generated) return;
  const ExpectedDocs expected = ReadExpectedDocs(generated->dir / "expected-docs.ndjson");
  REQUIRE(expected.size() == 1);
  const std::string index = expected.begin()->first;
  // The first target refuses every document (a strict mapping without their fields), and the
  // transform fails those whose id ends in 7.
  auto first = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(first.ok());
  REQUIRE((*first)
              ->CreateIndex(index, R"({"mappings":{"dynamic":"strict","properties":{)"
                                   R"("rfs_absent":{"type":"keyword"}}}})")
              .ok());
  MigrationRun run;
  const std::string failing = R"([{"JqTransformerProvider": {"script":
      "if (.operation._id | endswith(\"7\")) then error(\"not yet\") else . end"}}])";
  const std::string failed_dir = run.dir.File("failed");
  const int migrated = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(), "--target-host",
       (*first)->endpoint(), "--coordinator-db", run.dir.File("migration.sqlite"),
       "--failed-documents-dir", failed_dir, "--doc-transformer-config", failing},
      run.Out("migrate"), run.Err("migrate"));
  INFO(run.Logs("migrate"));
  REQUIRE(migrated == 6);
  size_t total = 0, sevens = 0;
  for (const auto& [id, doc] : expected.begin()->second) {
    ++total;
    if (EndsWith(id, '7')) ++sevens;
  }
  REQUIRE(ReadFailedDocuments(failed_dir).size() == total);

  // Fixed: a target that takes them, and a transform that no longer fails. Two workers share the
  // redrive through one store.
  auto second = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(second.ok());
  const std::string fixed = R"([{"JqTransformerProvider": {"script": "."}}])";
  std::vector<std::unique_ptr<rfs::test::ChildProcess>> workers;
  for (const char* name : {"redrive-a", "redrive-b"}) {
    workers.push_back(std::make_unique<rfs::test::ChildProcess>(
        std::vector<std::string>{RFS_DOCUMENTS_TOOL, "--redrive-failed-documents", failed_dir,
                                 "--target-host", (*second)->endpoint(), "--coordinator-db",
                                 run.dir.File("redrive.sqlite"), "--failed-documents-dir",
                                 run.dir.File("failed-again"), "--doc-transformer-config", fixed,
                                 "--worker-id", name},
        run.Out(name), run.Err(name)));
  }
  uint64_t accepted = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    const std::string name = i == 0 ? "redrive-a" : "redrive-b";
    const int code = workers[i]->Wait();
    INFO(run.Logs(name));
    CHECK(code == 0);
    const std::string out = rfs::test::ReadTextFile(run.Out(name));
    const size_t at = out.find(" accepted, ");
    REQUIRE(at != std::string::npos);
    const size_t start = out.rfind(": ", at) + 2;
    accepted += std::stoull(out.substr(start, at - start));
  }
  CHECK(accepted == total);  // each record sent by exactly one worker
  // Every document went through jq once (the refused ones in the first run, the others now).
  ExpectedDocs through_jq = expected;
  for (auto& [name, docs] : through_jq) {
    for (auto& [id, doc] : docs) AsJqWritesNumbers(doc.source);
  }
  CheckTarget(**second, through_jq);
  CHECK(ReadFailedDocuments(run.dir.File("failed-again")).empty());

  // Not fixed: the same failing transform records the sevens again, and only them.
  auto third = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(third.ok());
  const int again = rfs::test::RunProcess(
      {RFS_DOCUMENTS_TOOL, "--redrive-failed-documents", failed_dir, "--target-host",
       (*third)->endpoint(), "--coordinator-db", run.dir.File("redrive-2.sqlite"),
       "--failed-documents-dir", run.dir.File("failed-third"), "--doc-transformer-config", failing},
      run.Out("again"), run.Err("again"));
  INFO(run.Logs("again"));
  CHECK(again == 6);
  const auto recorded = ReadFailedDocuments(run.dir.File("failed-third"));
  CHECK(recorded.size() == sevens);
  for (const auto& record : recorded) {
    CHECK(EndsWith(std::string(record.at("id").as_string()), '7'));
    CHECK(record.at("error_type") == "transform_exception");
  }
  CHECK((*third)->DocumentCount(index) == total - sevens);
}

namespace {

// Writes `lines` (one record a line) gzipped into `path`.
void WriteRecords(const fs::path& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  auto gz = rfs::net::GzipCompress(text);
  REQUIRE(gz.ok());
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << *gz;
}

// A failed-documents record as rfs writes it (GzipFailedDocumentSink).
std::string Record(const std::string& index, const std::string& id, const std::string& action,
                   const std::string& source) {
  return R"({"index":")" + index + R"(","id":")" + id +
         R"(","cursor":0,"status":400,"error_type":"mapper_parsing_exception",)" +
         R"("reason":"no","action":)" + action + R"(,"source":)" + source + "}";
}

}  // namespace

TEST_CASE(
    "a redrive skips files it cannot read, refuses actions it must not carry out, and says so",
    "[e2e][redrive]") {
  auto target = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(target.ok());
  MigrationRun run;
  auto redrive = [&](const std::string& folder, const std::string& store, const std::string& name) {
    return rfs::test::RunProcess(
        {RFS_DOCUMENTS_TOOL, "--redrive-failed-documents", folder, "--target-host",
         (*target)->endpoint(), "--coordinator-db", run.dir.File(store), "--failed-documents-dir",
         run.dir.File("failed-" + name), "--worker-id", name},
        run.Out(name), run.Err(name));
  };
  auto index_action = [](const std::string& index, const std::string& id) {
    return R"({"index":{"_index":")" + index + R"(","_id":")" + id + R"("}})";
  };
  // The target holds books/2 and books/9 first.
  const fs::path seed = run.dir.File("seed");
  WriteRecords(seed / "a.ndjson.gz", {Record("books", "2", index_action("books", "2"), "{}"),
                                      Record("books", "9", index_action("books", "9"), "{}")});
  REQUIRE(redrive(seed.string(), "seed.sqlite", "seed") == 0);
  REQUIRE((*target)->DocumentCount("books") == 2);

  const fs::path folder = run.dir.File("failed");
  // A good file, a writer's killed before its first record (empty) and one cut mid-member, and
  // another good file after them: the bad ones are named and skipped, the others go.
  WriteRecords(
      folder / "a-good.ndjson.gz",
      {
          Record("books", "1", index_action("books", "1"), R"({"n":1})"),
          // The delete of the record's own document, as rfs records a delta's delete.
          Record("books", "2", R"({"delete":{"_index":"books","_id":"2"}})", "{}"),
          // A delete of another document, an update, writes into rfs's state indices.
          Record("books", "3", R"({"delete":{"_index":"books","_id":"9"}})", "{}"),
          Record("books", "4", R"({"update":{"_index":"books","_id":"4"}})", R"({"doc":{"n":4}})"),
          Record("books", "shard_setup", index_action(".migrations_working_state", "shard_setup"),
                 R"({"completedAt":1})"),
          Record(".migrations_working_state_s", "x", R"("")", R"({"n":5})"),
      });
  std::ofstream(folder / "b-killed.ndjson.gz").close();
  {
    auto gz = rfs::net::GzipCompress(Record("books", "7", index_action("books", "7"), "{}") + "\n");
    REQUIRE(gz.ok());
    std::ofstream(folder / "c-cut.ndjson.gz", std::ios::binary) << gz->substr(0, gz->size() / 2);
  }
  WriteRecords(folder / "d-good.ndjson.gz",
               {Record("books", "8", index_action("books", "8"), R"({"n":8})")});

  const int code = redrive(folder.string(), "redrive.sqlite", "redrive");
  const std::string out = rfs::test::ReadTextFile(run.Out("redrive"));
  INFO(run.Logs("redrive"));
  // Some input was not redriven: the partial failure's code, with the good files' documents
  // counted as sent.
  CHECK(code == 6);
  CHECK(out.find("redrive done; 2 files, 7 records: 3 accepted, 0 failed again, 0 dropped by "
                 "transforms, 4 refused; 2 files unreadable") != std::string::npos);
  for (const char* named :
       {"b-killed.ndjson.gz (cannot be read: the file is empty",
        "c-cut.ndjson.gz (cannot be read: ", "a-good.ndjson.gz: line 3 ",
        "a-good.ndjson.gz: line 4 ", "a-good.ndjson.gz: line 5 ", "a-good.ndjson.gz: line 6 "}) {
    CHECK(out.find(named) != std::string::npos);
  }
  CHECK((*target)->GetDocument("books", "1").has_value());
  CHECK_FALSE((*target)->GetDocument("books", "2").has_value());  // its own delete
  CHECK((*target)->GetDocument("books", "9").has_value());        // another's: refused
  CHECK_FALSE((*target)->GetDocument("books", "4").has_value());
  CHECK((*target)->GetDocument("books", "8").has_value());
  for (const auto& index : (*target)->IndexNames()) {
    CHECK_FALSE(index.starts_with(".migrations_working_state"));
  }
}
