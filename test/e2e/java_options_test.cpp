// Command lines and environments written for the Java tools of opensearch-migrations work
// unchanged: their camelCase option names, their environment prefixes (METADATA_MIGRATE_,
// CREATE_SNAPSHOT_, unprefixed credentials), options rfs has no use for (taken and said so),
// and options for what rfs does not do (refused with the reason, exit 64), and their JSON form
// (---INLINE-JSON, ---JSON-FILE), which their workflows use. No option is taken by an
// abbreviation.
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/base64.hpp"
#include "rfs/core/exit_codes.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "e2e_support.hpp"
#include "support/generated_repo.hpp"
#include "support/opensearch_double.hpp"
#include "support/process.hpp"
#include "support/scripted_http_server.hpp"

namespace rfs::e2e::java_options {

using rfs::core::kExitNoWorkLeft;
using rfs::core::kExitUsage;

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

int Run(MigrationRun& run, const std::string& name, std::vector<std::string> argv) {
  return rfs::test::RunProcess(argv, run.Out(name), run.Err(name));
}

TEST_CASE(
    "DocumentsFromSnapshotMigration takes a Java command line: camelCase names and the "
    "options it has no use for",
    "[e2e][generated][cli][java-options]") {
  auto generated = rfs::test::Generate("--indices 2 --shards 1 --docs 300 --seed 7101");
  REQUIRE(generated);
  MigrationRun run;
  const std::string out = run.dir.File("out");
  const int code = Run(run, "java",
                       {RFS_DOCUMENTS_TOOL,
                        "--snapshotLocalDir",
                        generated->repo().string(),
                        "--outputDir",
                        out,
                        "--maxConnections",
                        "4",
                        "--documentsSizePerBulkRequest",
                        "1000000",
                        "--initialLeaseDuration",
                        "PT5M",
                        "--luceneDir",
                        run.dir.File("lucene"),
                        "--cleanLocalDirs",
                        "--allow-loose-version-matching",
                        "--use-recovery-source",
                        "--positionGapStopword",
                        "a",
                        "--server-generated-ids",
                        "AUTO",
                        "--emit-doc-type",
                        "OFF",
                        "--gcs-local-dir",
                        run.dir.File("gcs"),
                        "--coordinator-retry-max-retries",
                        "3",
                        "--coordinator-retry-initial-delay-ms",
                        "100",
                        "--coordinator-retry-max-delay-ms",
                        "2000",
                        "--otelTraceCollectorEndpoint",
                        "http://127.0.0.1:4317"});
  INFO(run.Logs("java"));
  CHECK(code == kExitNoWorkLeft);
  CheckBulkFiles(run, generated->dir, out);
  // An option rfs takes and cannot honour says so.
  CHECK(rfs::test::ReadTextFile(run.Err("java")).find("rfs exports no traces") !=
        std::string::npos);
}

TEST_CASE("the tools take no abbreviated option", "[e2e][cli][java-options]") {
  MigrationRun run;
  // Boost would have taken --output for --output-dir and created a folder named "json".
  CHECK(Run(run, "abbrev",
            {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", run.dir.str(), "--output",
             run.dir.File("json")}) == kExitUsage);
  CHECK(rfs::test::ReadTextFile(run.Err("abbrev")).find("unrecognised option '--output'") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(run.dir.File("json")));
  CHECK(Run(run, "worker", {RFS_WORKER_TOOL, "--output", "json"}) == kExitUsage);
}

TEST_CASE("options for what rfs does not do are refused with the reason",
          "[e2e][cli][java-options]") {
  MigrationRun run;
  const std::string repo = run.dir.str();
  struct Refusal {
    std::vector<std::string> argv;
    std::string reason;
  };
  const std::vector<Refusal> refusals = {
      {{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", repo,
        "--server-generated-ids", "ALWAYS"},
       "under its source _id"},
      {{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", repo, "--emit-doc-type",
        "on"},
       "no _type"},
      {{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", repo,
        "--server-generated-ids", "SOMETIMES"},
       "takes AUTO or NEVER"},
      {{RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", repo, "--output-dir", repo,
        "--coordinator-retry-initial-delay-ms", "5000", "--coordinator-retry-max-delay-ms", "1000"},
       "must not be less than"},
      {{RFS_METADATA_TOOL, "evaluate", "--source-host", "http://127.0.0.1:9200", "--source-version",
        "SOLR 9"},
       "a Solr backup is read from its location"},
      {{RFS_METADATA_TOOL, "evaluate", "--sourceHost", "http://127.0.0.1:9200", "--source-username",
        "u"},
       "--source-username and --source-password must be given together"},
      {{RFS_METADATA_TOOL, "evaluate", "--snapshot-local-dir", repo, "--allow-existing-indexes",
        "maybe"},
       "takes true or false"},
      {{RFS_CREATE_SNAPSHOT_TOOL, "--source-host", "http://127.0.0.1:1", "--snapshot-name", "s",
        "--repo-uri", "/r", "--include-global-state"},
       "include-global-state"},
      {{RFS_CREATE_SNAPSHOT_TOOL, "--source-host", "http://127.0.0.1:1", "--snapshot-name", "s",
        "--repo-uri", "/r", "--solr-collections", "c"},
       "Solr's BACKUP action"},
      {{RFS_CREATE_SNAPSHOT_TOOL, "--source-host", "http://127.0.0.1:1", "--snapshot-name", "s",
        "--repo-uri", "az://account/container"},
       "registers file:///PATH, /PATH, s3://BUCKET/PATH and gs://BUCKET/PATH"},
      {{RFS_CREATE_SNAPSHOT_TOOL, "--source-host", "http://127.0.0.1:1", "--snapshot-name", "s",
        "--repo-uri", "/r", "--source-type", "solr"},
       "Solr's BACKUP action"},
  };
  int i = 0;
  for (const Refusal& refusal : refusals) {
    const std::string name = "refused-" + std::to_string(i++);
    INFO(refusal.argv[0] << " " << refusal.argv.back() << ": " << run.Logs(name));
    CHECK(Run(run, name, refusal.argv) == kExitUsage);
    CHECK(rfs::test::ReadTextFile(run.Err(name)).find(refusal.reason) != std::string::npos);
  }
  // From the Java tool's environment as well: the source's variables are read (a user without
  // a password is refused as on the command line).
  ScopedEnv source("METADATA_MIGRATE_SOURCE_HOST", "http://127.0.0.1:9200");
  ScopedEnv user("METADATA_MIGRATE_SOURCE_USERNAME", "u");
  CHECK(Run(run, "env", {RFS_METADATA_TOOL, "evaluate", "--snapshot-local-dir", repo}) ==
        kExitUsage);
  CHECK(rfs::test::ReadTextFile(run.Err("env")).find("--source-username and --source-password") !=
        std::string::npos);
}

TEST_CASE("MetadataMigration --source-host: a source it cannot read stops the run at once",
          "[e2e][cli][java-options][live-source]") {
  // A source that refuses the credentials, one whose template API answers no JSON, one behind a
  // proxy that answers 404 for the settings: each stops the run before anything is written to
  // the target folder, with exit 1, naming the source and the request but never the password.
  // Then the same answers as an Elasticsearch 7.10 OSS node gives them (the real-node tests
  // compare those with snapshots): the index is migrated. Only GETs reach the source, each
  // with the credentials.
  const std::string secret = "live-source-secret-51";
  std::string phase = "unauthorized";
  std::mutex mu;
  const std::map<std::string, std::string> answers = {
      {"/", R"({"name": "n", "cluster_name": "c", "version": {"number": "7.10.2"}})"},
      {"/_template?include_type_name=true", "{}"},
      {"/_component_template", R"({"component_templates": []})"},
      {"/_index_template", R"({"index_templates": []})"},
      {"/_all/_settings?flat_settings=true&expand_wildcards=all",
       R"({"logs-1": {"settings": {"index.number_of_shards": "2",
           "index.number_of_replicas": "1", "index.uuid": "u1",
           "index.version.created": "7100299", "index.provided_name": "logs-1"}}})"},
      {"/_all/_mapping?expand_wildcards=all&include_type_name=true",
       R"({"logs-1": {"mappings": {"_doc": {"properties": {"msg": {"type": "text"}}}}}})"},
      {"/_all/_alias?expand_wildcards=all", R"({"logs-1": {"aliases": {"logs": {}}}})"},
      {"/_cluster/state/metadata?filter_path=metadata.indices.*.state&expand_wildcards=all",
       R"({"metadata": {"indices": {"logs-1": {"state": "open"}}}})"}};
  rfs::test::ScriptedHttpServer source([&](const rfs::net::HttpRequest& request) {
    std::lock_guard lock(mu);
    rfs::net::HttpResponse response;
    response.status = 200;
    response.headers.emplace_back("Content-Type", "application/json");
    const auto answer = answers.find(request.target);
    if (phase == "unauthorized") {
      response.status = 401;
      response.body = R"({"error": {"type": "security_exception", "reason": "bad credentials"}})";
    } else if (request.target == "/_data_stream") {
      // The OSS build has no data stream API: the path reads as an index name.
      response.status = 400;
      response.body = R"({"error": {"type": "invalid_index_name_exception",
          "reason": "Invalid index name [_data_stream], must not start with '_'."}})";
    } else if (phase == "not json" && request.target != "/") {
      response.body = "<html>a proxy's page</html>";
    } else if (phase == "root refused" && request.target == "/") {
      response.status = 403;
      response.body = R"({"error": {"type": "security_exception",
          "reason": "no permissions for [cluster:monitor/main]"}})";
    } else if (answer == answers.end() ||
               (phase == "settings 404" && request.target.starts_with("/_all/_settings"))) {
      response.status = 404;
      response.body = "<html>not found</html>";
    } else {
      response.body = answer->second;
    }
    return response;
  });
  auto set_phase = [&](const char* next) {
    std::lock_guard lock(mu);
    phase = next;
  };
  MigrationRun run;
  const std::string out = run.dir.File("out");
  const std::vector<std::string> argv = {
      RFS_METADATA_TOOL,   "migrate", "--source-host",     source.endpoint(),
      "--source-username", "u",       "--source-password", secret,
      "--output-dir",      out};
  // Each failure: its phase of the source, the run's name, what the error must name.
  struct Failure {
    const char* phase;
    const char* name;
    std::vector<std::string> said;
  };
  const Failure failures[] = {
      {"unauthorized", "unauthorized", {source.endpoint(), "bad credentials"}},
      {"not json", "not-json", {"GET /_template?include_type_name=true on the source", "not JSON"}},
      {"settings 404", "settings-404", {"GET /_all/_settings"}}};
  for (const Failure& failure : failures) {
    set_phase(failure.phase);
    CHECK(Run(run, failure.name, argv) == rfs::core::kExitFailure);
    const std::string err = rfs::test::ReadTextFile(run.Err(failure.name));
    INFO(failure.name << ": " << err);
    for (const std::string& said : failure.said) CHECK(err.find(said) != std::string::npos);
    CHECK(run.Logs(failure.name).find(secret) == std::string::npos);
  }
  CHECK_FALSE(fs::exists(fs::path(out) / ".rfs" / "metadata"));

  set_phase("answers");
  const size_t before = source.requests().size();
  CHECK(Run(run, "answers", argv) == 0);
  INFO(run.Logs("answers"));
  const json::value index =
      json::parse(rfs::test::ReadTextFile(out + "/.rfs/metadata/index/logs-1.json"));
  CHECK(index.at("mappings").at("properties").at("msg").at("type") == "text");
  CHECK(index.at("aliases").as_object().contains("logs"));
  CHECK(index.at("settings").at("index").at("number_of_shards") == "2");
  auto requests = source.requests();
  CHECK(requests.size() - before == answers.size() + 1);  // and /_data_stream
  for (size_t i = before; i < requests.size(); ++i) {
    INFO(requests[i].target);
    CHECK((answers.contains(requests[i].target) || requests[i].target == "/_data_stream"));
  }

  // A user without the permission for GET /: --source-version stands in, and the report says so.
  set_phase("root refused");
  std::vector<std::string> with_version = argv;
  with_version.insert(with_version.end(), {"--source-version", "ES 7.10", "--output", "json"});
  CHECK(Run(run, "root-refused", with_version) == 0);
  INFO(run.Logs("root-refused"));
  const json::value report = json::parse(rfs::test::ReadTextFile(run.Out("root-refused")));
  CHECK(report.at("source_version") == "ES 7.10");
  CHECK(json::serialize(report.at("warnings")).find("GET / failed") != std::string::npos);
  // Without it, the refusal stops the run.
  CHECK(Run(run, "root-refused-alone", argv) == rfs::core::kExitFailure);
  CHECK(rfs::test::ReadTextFile(run.Err("root-refused-alone")).find("cluster:monitor/main") !=
        std::string::npos);

  requests = source.requests();
  const std::string user_password = "u:" + secret;
  const std::string credentials =
      "Basic " + rfs::core::Base64Encode(std::span<const uint8_t>(
                     reinterpret_cast<const uint8_t*>(user_password.data()), user_password.size()));
  for (const auto& request : requests) {
    INFO(request.method << " " << request.target);
    CHECK(request.method == "GET");
    CHECK(rfs::net::FindHeader(request.headers, "Authorization") == credentials);
  }
}

TEST_CASE("MetadataMigration takes the Java tool's command line and environment",
          "[e2e][generated][cli][java-options]") {
  auto generated = rfs::test::Generate("--indices 2 --shards 1 --docs 20 --seed 7102");
  REQUIRE(generated);
  MigrationRun run;
  const std::string repo = generated->repo().string();
  const std::string out = run.dir.File("out");

  // The Java tool's own prefix, its global options before the command, an enum in upper case,
  // the output also in a file, and replicas raised for three zones.
  {
    ScopedEnv snapshot("METADATA_MIGRATE_SNAPSHOT_LOCAL_DIR", repo);
    const int code =
        Run(run, "json",
            {RFS_METADATA_TOOL, "--otel-trace-collector-endpoint", "http://127.0.0.1:4317",
             "migrate", "--outputDir", out, "--output", "JSON", "--outputFile",
             run.dir.File("report.json"), "--clusterAwarenessAttributes", "3",
             "--enable-sourceless-migrations", "--use-recovery-source"});
    INFO(run.Logs("json"));
    REQUIRE(code == 0);
  }
  const std::string printed = rfs::test::ReadTextFile(run.Out("json"));
  CHECK(printed == rfs::test::ReadTextFile(run.dir.File("report.json")));
  const json::object report = json::parse(printed).as_object();
  int indices = 0;
  for (const json::value& item : report.at("items").as_array()) {
    const json::object& o = item.as_object();
    if (o.at("kind") != "index" || o.at("outcome") != "created") continue;
    ++indices;
    // The generator's indices have one replica: two copies, raised to three.
    const std::string body = rfs::test::ReadTextFile(
        out + "/.rfs/metadata/index/" + std::string(o.at("name").as_string()) + ".json");
    INFO(body);
    CHECK(body.find("\"number_of_replicas\":\"2\"") != std::string::npos);
  }
  CHECK(indices == 2);

  // Run again: the indices are there. rfs leaves them and succeeds; the Java tool's default,
  // given explicitly, fails them.
  CHECK(Run(run, "again",
            {RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", repo, "--output-dir", out}) ==
        0);
  CHECK(Run(run, "strict",
            {RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", repo, "--output-dir", out,
             "--allow-existing-indexes", "false"}) == 1);
  CHECK(rfs::test::ReadTextFile(run.Out("strict")).find("--allow-existing-indexes false") !=
        std::string::npos);

  // A switch before the command takes no value: the command is still found.
  CHECK(Run(run, "switch-first",
            {RFS_METADATA_TOOL, "--allow-loose-version-matching", "evaluate",
             "--snapshot-local-dir", repo}) == 0);

  // Nothing selected: fine by default, a failure with --succeed-on-empty false.
  const std::vector<std::string> none = {RFS_METADATA_TOOL,
                                         "evaluate",
                                         "--snapshot-local-dir",
                                         repo,
                                         "--index-allowlist",
                                         "no-such-index",
                                         "--index-template-allowlist",
                                         "no-such-template",
                                         "--component-template-allowlist",
                                         "no-such-template"};
  CHECK(Run(run, "empty", none) == 0);
  std::vector<std::string> strict_empty = none;
  strict_empty.insert(strict_empty.end(), {"--succeed-on-empty", "false"});
  CHECK(Run(run, "strict-empty", strict_empty) == 1);
  CHECK(rfs::test::ReadTextFile(run.Out("strict-empty")).find("nothing to migrate") !=
        std::string::npos);
}

TEST_CASE("credentials from the unprefixed variables the Java tools read, after RFS_ ones",
          "[e2e][generated][cli][java-options]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 50 --seed 7103");
  REQUIRE(generated);
  MigrationRun run;
  rfs::testing::OpenSearchDoubleOptions options;
  options.username = "admin";
  options.password = "unprefixed-secret-41";
  auto target = rfs::testing::OpenSearchDouble::Start(options);
  REQUIRE(target.ok());
  auto worker = [&](const std::string& name) {
    return Run(run, name,
               {RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", generated->repo().string(),
                "--target-host", (*target)->endpoint(), "--coordinator-db",
                run.dir.File(name + ".db"), "--max-retries", "1"});
  };
  ScopedEnv user("TARGET_USERNAME", "admin");
  {
    // An RFS_ variable wins over the unprefixed one: a wrong password is refused (401).
    ScopedEnv wrong("RFS_TARGET_PASSWORD", "wrong");
    ScopedEnv right("TARGET_PASSWORD", "unprefixed-secret-41");
    CHECK(worker("rfs-wins") != kExitNoWorkLeft);
    CHECK((*target)->stats().bulk_requests == 0);
  }
  ScopedEnv right("TARGET_PASSWORD", "unprefixed-secret-41");
  const int code = worker("unprefixed");
  INFO(run.Logs("unprefixed"));
  CHECK(code == kExitNoWorkLeft);
  CheckTarget(**target, ReadExpectedDocs(generated->dir / "expected-docs.ndjson"));
  CHECK(run.Logs("unprefixed").find("unprefixed-secret-41") == std::string::npos);
}

std::string Base64(const std::string& text) {
  return rfs::core::Base64Encode(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

TEST_CASE("the Java tools' JSON form of a command line: ---INLINE-JSON and ---JSON-FILE",
          "[e2e][generated][cli][java-options]") {
  auto generated = rfs::test::Generate("--indices 2 --shards 1 --docs 200 --seed 7104");
  REQUIRE(generated);
  MigrationRun run;
  const std::string repo = generated->repo().string();

  // The documents tool as the Java workflows start it: base64 of the options object, with the
  // defaults they send (Integer.MAX_VALUE documents per bulk, switches false, empty lists);
  // keys in either case with or without dashes, a switch, a null, options rfs ignores.
  const std::string out = run.dir.File("out");
  json::object documents{{"snapshotLocalDir", repo},
                         {"output-dir", out},
                         {"--maxConnections", 2},
                         {"documentsPerBulkRequest", 2147483647},
                         {"documentsSizePerBulkRequest", 1000000},
                         {"maxShardSizeBytes", 85899345920},
                         {"initialLeaseDuration", "PT5M"},
                         {"luceneDir", run.dir.File("lucene")},
                         {"cleanLocalDirs", true},
                         {"enableSourcelessMigrations", false},
                         {"allowedDocExceptionTypes", json::array{}},
                         {"serverGeneratedIds", "AUTO"},
                         {"coordinatorRetryMaxRetries", 7},
                         {"allow-loose-version-matching", "true"},
                         {"targetAwsServiceSigningName", nullptr},
                         {"otelTraceCollectorEndpoint", nullptr}};
  int code = Run(run, "documents",
                 {RFS_DOCUMENTS_TOOL, "---INLINE-JSON", Base64(json::serialize(documents))});
  INFO(run.Logs("documents"));
  CHECK(code == kExitNoWorkLeft);
  CheckBulkFiles(run, generated->dir, out);

  // MetadataMigration from a file, its command in the object; then inline, the command after it,
  // which wins over the object's, and a list option as an array.
  const std::string options_file = run.dir.File("metadata.json");
  std::ofstream(options_file) << json::serialize(json::object{
      {"jcommanderCommand", "evaluate"}, {"snapshotLocalDir", repo}, {"output", "JSON"}});
  code = Run(run, "evaluate", {RFS_METADATA_TOOL, "---JSON-FILE", options_file});
  INFO(run.Logs("evaluate"));
  REQUIRE(code == 0);
  const json::object evaluated =
      json::parse(rfs::test::ReadTextFile(run.Out("evaluate"))).as_object();
  CHECK(evaluated.at("mode") == "evaluate");
  std::vector<std::string> indices;
  for (const json::value& item : evaluated.at("items").as_array()) {
    if (item.at("kind") == "index" && item.at("outcome") == "would_create") {
      indices.emplace_back(item.at("name").as_string());
    }
  }
  REQUIRE(indices.size() == 2);
  const std::string metadata_out = run.dir.File("metadata-out");
  // With the defaults the workflows send.
  json::object migrate{{"jcommanderCommand", "evaluate"},
                       {"snapshotLocalDir", repo},
                       {"outputDir", metadata_out},
                       {"output", "JSON"},
                       {"indexAllowlist", json::array{json::value(indices[0])}},
                       {"componentTemplateAllowlist", json::array{}},
                       {"allowExistingIndexes", true},
                       {"clusterAwarenessAttributes", 1},
                       {"allowLooseVersionMatching", false},
                       {"enableSourcelessMigrations", false},
                       {"useRecoverySource", false},
                       {"localDir", run.dir.File("local")},
                       {"transformerConfigBase64", nullptr}};
  code = Run(run, "migrate",
             {RFS_METADATA_TOOL, "---INLINE-JSON", json::serialize(migrate), "migrate"});
  INFO(run.Logs("migrate"));
  REQUIRE(code == 0);
  const json::object migrated =
      json::parse(rfs::test::ReadTextFile(run.Out("migrate"))).as_object();
  CHECK(migrated.at("mode") == "migrate");
  std::vector<std::string> created;
  for (const json::value& item : migrated.at("items").as_array()) {
    if (item.at("kind") == "index" && item.at("outcome") == "created") {
      created.emplace_back(item.at("name").as_string());
    }
  }
  CHECK(created == std::vector<std::string>{indices[0]});

  // Mistakes are usage errors that name the key, never quote a value (it may be a password),
  // and start nothing.
  const std::string secret = "json-secret-93";
  struct Mistake {
    std::vector<std::string> argv;
    std::string says;
  };
  const std::vector<Mistake> mistakes = {
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON",
        json::serialize(json::object{{"targetPassword", secret}, {"noSuchOption", 1}})},
       "no option named noSuchOption"},
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON", "{\"targetPassword\": \"" + secret + "\","},
       "not valid JSON"},
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON", secret + "!"}, "nor its base64"},
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON", "[\"" + secret + "\"]"}, "one JSON object"},
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON", "{}", "--target-password", secret},
       "every option is in the JSON"},
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON", "{}", "--target-password=" + secret},
       "unexpected option --target-password"},
      // An object left unquoted splits into words.
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON", "{\"targetPassword\":", "\"" + secret + "\"}"},
       "unexpected argument 3; quote the JSON object"},
      {{RFS_DOCUMENTS_TOOL, "---JSON-FILE", run.dir.File("missing.json")}, "cannot read it"},
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON"}, "takes the options as its value"},
      {{RFS_DOCUMENTS_TOOL, "---INLINE-JSON",
        json::serialize(json::object{{"snapshotLocalDir", json::object{{"a", secret}}}})},
       "not an object"},
      {{RFS_WORKER_TOOL, "---INLINE-JSON", "{\"snapshotLocalDir\": \"x\", \"bogus\": 2}"},
       "no option named bogus"},
      {{RFS_METADATA_TOOL, "---INLINE-JSON",
        json::serialize(json::object{{"sourceHost", "http://127.0.0.1:9"},
                                     {"sourceUsername", "u"},
                                     {"sourcePassword", secret},
                                     {"sourceVersion", "SOLR 9"}}),
        "evaluate"},
       "a Solr backup is read from its location"},
      {{RFS_METADATA_TOOL, "---INLINE-JSON", "{\"jcommanderCommand\": \"delete\"}"},
       "must be one of evaluate, migrate"},
      {{RFS_METADATA_TOOL, "---INLINE-JSON",
        json::serialize(json::object{{"targetPassword", secret}})},
       "a command is required"},
      {{RFS_CREATE_SNAPSHOT_TOOL, "migrate", "---INLINE-JSON", "{}"}, "unexpected argument"},
      {{RFS_CREATE_SNAPSHOT_TOOL, "---INLINE-JSON",
        json::serialize(json::object{{"solrCollections", json::array{"c1"}}})},
       "back a Solr collection up"},
  };
  int n = 0;
  for (const Mistake& mistake : mistakes) {
    const std::string name = "mistake-" + std::to_string(++n);
    CHECK(Run(run, name, mistake.argv) == kExitUsage);
    const std::string logs = run.Logs(name);
    INFO(name << ": " << logs);
    CHECK(logs.find(mistake.says) != std::string::npos);
    CHECK(logs.find(secret) == std::string::npos);
  }
}

TEST_CASE(
    "CreateSnapshot takes the Java tool's --repo-uri, --include-global-state and "
    "CREATE_SNAPSHOT_ variables",
    "[e2e][cli][java-options]") {
  MigrationRun run;
  auto source = rfs::testing::OpenSearchDouble::Start();
  REQUIRE(source.ok());
  ScopedEnv name("CREATE_SNAPSHOT_SNAPSHOT_NAME", "java-style");
  const int code = Run(
      run, "create",
      {RFS_CREATE_SNAPSHOT_TOOL, "--sourceHost", (*source)->endpoint(), "--repo-uri",
       "file://" + run.dir.File("repo"), "--include-global-state", "false", "--snapshot-repo-name",
       "java_repo", "--otel-metrics-collector-endpoint", "http://127.0.0.1:4317"});
  INFO(run.Logs("create"));
  REQUIRE(code == 0);
  CHECK(rfs::test::ReadTextFile(run.Err("create")).find("exports no metrics") != std::string::npos);
  auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = (*source)->endpoint()});
  REQUIRE(transport.ok());
  auto repository = (*transport)->Send({.method = "GET", .target = "/_snapshot/java_repo"});
  REQUIRE(repository.ok());
  INFO(repository->body);
  CHECK(repository->body.find(run.dir.File("repo")) != std::string::npos);
  auto snapshot =
      (*transport)->Send({.method = "GET", .target = "/_snapshot/java_repo/java-style"});
  REQUIRE(snapshot.ok());
  INFO(snapshot->body);
  REQUIRE(snapshot->status == 200);
  CHECK(snapshot->body.find("\"include_global_state\":false") != std::string::npos);

  // The same from the Java tool's JSON form, in a file.
  const std::string options_file = run.dir.File("create.json");
  // As the workflows send it: every option with its default, Solr's empty list included.
  std::ofstream(options_file) << json::serialize(
      json::object{{"sourceHost", (*source)->endpoint()},
                   {"sourceInsecure", false},
                   {"snapshotName", "from-json"},
                   {"snapshotRepoName", "java_repo"},
                   {"repoUri", "file://" + run.dir.File("repo")},
                   {"indexAllowlist", json::array{}},
                   {"maxSnapshotRateMbPerNode", 0},
                   {"compressionEnabled", false},
                   {"includeGlobalState", true},
                   {"mode", "create"},
                   {"solrCollections", json::array{}},
                   {"noWait", false}});
  const int from_json =
      Run(run, "create-json", {RFS_CREATE_SNAPSHOT_TOOL, "---JSON-FILE", options_file});
  INFO(run.Logs("create-json"));
  REQUIRE(from_json == 0);
  auto second = (*transport)->Send({.method = "GET", .target = "/_snapshot/java_repo/from-json"});
  REQUIRE(second.ok());
  CHECK(second->status == 200);

  // A gs:// repository, as the Java tool registers it; its --endpoint (for the readers' GCS
  // emulator) is not the source's business and is said to be ignored.
  const int gcs =
      Run(run, "create-gcs",
          {RFS_CREATE_SNAPSHOT_TOOL, "--source-host", (*source)->endpoint(), "--snapshot-name",
           "to-gcs", "--repo-uri", "gs://rfs-bucket/base/path/", "--snapshot-repo-name", "gcs_repo",
           "--endpoint", "http://127.0.0.1:4443", "--max-snapshot-rate-mb-per-node", "30"});
  INFO(run.Logs("create-gcs"));
  REQUIRE(gcs == 0);
  CHECK(rfs::test::ReadTextFile(run.Err("create-gcs"))
            .find("--endpoint is ignored for a gs:// repository") != std::string::npos);
  auto registered = (*transport)->Send({.method = "GET", .target = "/_snapshot/gcs_repo"});
  REQUIRE(registered.ok());
  INFO(registered->body);
  const json::value repositories = json::parse(registered->body);
  const json::object& gcs_repo = repositories.at("gcs_repo").as_object();
  CHECK(gcs_repo.at("type") == "gcs");
  CHECK(gcs_repo.at("settings").at("bucket") == "rfs-bucket");
  CHECK(gcs_repo.at("settings").at("base_path") == "base/path");
  CHECK(gcs_repo.at("settings").at("max_snapshot_bytes_per_sec") == "30mb");
  CHECK(Run(run, "bad-gcs",
            {RFS_CREATE_SNAPSHOT_TOOL, "--source-host", (*source)->endpoint(), "--snapshot-name",
             "x", "--repo-uri", "gs://No_Such/bucket"}) == kExitUsage);
}

}  // namespace rfs::e2e::java_options
