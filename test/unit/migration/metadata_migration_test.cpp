#include "rfs/migration/metadata_migration.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/net/beast_http_transport.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "reindex_test_util.hpp"
#include "support/corpus.hpp"
#include "support/double_connection.hpp"
#include "support/opensearch_double.hpp"

namespace rfs::migration {
using namespace rfs::net;         // NOLINT: the layers this test drives
using namespace rfs::opensearch;  // NOLINT: the layers this test drives
using namespace rfs::reindex;     // NOLINT: the layers this test drives
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using rfs::testing::OpenSearchDouble;
using rfs::testing::OpenSearchDoubleOptions;
using testutil::TempDir;

// A double plus a transport and client talking to it.
struct Target : rfs::test::DoubleConnection {
  explicit Target(OpenSearchDoubleOptions double_options = {})
      : DoubleConnection(std::move(double_options)) {
    client = std::make_unique<OpenSearchClient>(*transport);
  }
  // GET `target` on the double; the parsed body (null when not 200).
  json::value Get(const std::string& target) {
    net::HttpRequest request;
    request.target = target;
    auto response = transport->Send(request);
    REQUIRE(response.ok());
    if (response->status != 200) return nullptr;
    return json::parse(response->body);
  }
  // Requests after the first `from` that change something.
  std::vector<std::string> Writes(size_t from = 0) const {
    std::vector<std::string> out;
    auto requests = server->requests();
    for (size_t i = from; i < requests.size(); ++i) {
      if (requests[i].method != "GET" && requests[i].method != "HEAD") {
        out.push_back(requests[i].method + " " + requests[i].target);
      }
    }
    return out;
  }
  std::unique_ptr<OpenSearchClient> client;
};

struct OpenRepo {
  explicit OpenRepo(const fs::path& path) {
    auto source = snapshot::FileSystemRepo::Open(path.string());
    REQUIRE(source.ok());
    auto opened = snapshot::SnapshotRepository::Open(*source);
    REQUIRE(opened.ok());
    repository = *std::move(opened);
    auto latest = repository->LatestSnapshot();
    REQUIRE(latest.ok());
    snapshot = *latest;
  }
  std::unique_ptr<snapshot::SnapshotRepository> repository;
  const snapshot::SnapshotEntry* snapshot = nullptr;
};

// Every repository of the corpus collections (each a folder holding a repository index).
std::vector<fs::path> CorpusRepositories() {
  std::vector<fs::path> out;
  for (const char* collection : {"es-snapshots", "snapshot-matrix-es1-es9-os1-os3",
                                 "opensearch-2.11-soft-deletes-multiseg"}) {
    auto dir = rfs::test::CorpusPath(collection);
    if (!dir) return {};
    for (const auto& entry : fs::directory_iterator(*dir)) {
      if (entry.is_directory()) out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

MetadataReport RunMigrator(OpenRepo& repo, OpenSearchClient* client,
                           MetadataMigrationOptions options) {
  MetadataMigrator migrator(*repo.repository, *repo.snapshot, client, std::move(options));
  auto report = migrator.Run();
  INFO(report.status().ToString());
  REQUIRE(report.ok());
  return *std::move(report);
}

MetadataMigrationOptions Mode(MetadataMode mode) {
  MetadataMigrationOptions options;
  options.mode = mode;
  return options;
}

// True when a mapping holds a type level: a single key, not a mapping parameter, whose value
// holds "properties".
bool IsTyped(const json::value& mappings) {
  if (!mappings.is_object()) return false;
  for (const auto& [key, value] : mappings.as_object()) {
    if (key == "properties" || key == "_meta" || key == "_source" || key == "_routing") continue;
    if (value.is_object() && value.as_object().contains("properties")) return true;
  }
  return false;
}

const json::object& MappingOf(const json::value& get_index_body, const std::string& index) {
  return get_index_body.at(index).at("mappings").as_object();
}

TEST_CASE(
    "every corpus repository: evaluate reads only, migrate creates type-free metadata, "
    "a second migrate finds everything",
    "[reindex][metadata][corpus]") {
  const auto repositories = CorpusRepositories();
  REQUIRE_FALSE(repositories.empty());
  for (const auto& path : repositories) {
    SECTION(path.filename().string()) {
      OpenRepo repo(path);
      Target target;

      // evaluate: only reads, and reports what migrate would create.
      const MetadataReport evaluation =
          RunMigrator(repo, target.client.get(), Mode(MetadataMode::kEvaluate));
      INFO(evaluation.ToText());
      CHECK(evaluation.ok());
      CHECK(target.Writes().empty());
      CHECK(target.server->IndexNames().empty());
      CHECK(evaluation.Count(MetadataOutcome::kCreated) == 0);
      CHECK(evaluation.Count(MetadataItemKind::kIndex, MetadataOutcome::kWouldCreate) > 0);

      // migrate: the same items are created.
      const MetadataReport migration =
          RunMigrator(repo, target.client.get(), Mode(MetadataMode::kMigrate));
      INFO(migration.ToText());
      CHECK(migration.ok());
      CHECK(migration.Count(MetadataOutcome::kCreated) ==
            evaluation.Count(MetadataOutcome::kWouldCreate));
      std::set<std::string> created_indices;
      for (const auto& item : migration.items) {
        INFO(ToString(item.kind) << " " << item.name);
        if (item.outcome != MetadataOutcome::kCreated) continue;
        switch (item.kind) {
          case MetadataItemKind::kIndex: {
            created_indices.insert(item.name);
            const json::value got = target.Get("/" + item.name);
            REQUIRE(got.is_object());
            const json::object& mapping = MappingOf(got, item.name);
            CHECK_FALSE(IsTyped(mapping));
            // Every field of every source type is in the target mapping.
            auto source = repo.repository->ReadIndexMetadata(*repo.snapshot, item.source_name);
            REQUIRE(source.ok());
            for (const auto& [type, type_mapping] : source->mappings) {
              const auto* props = type_mapping.as_object().if_contains("properties");
              if (props == nullptr || type == "_default_") continue;
              for (const auto& [field, definition] : props->as_object()) {
                INFO("field " << std::string_view(field));
                CHECK(mapping.at("properties").as_object().contains(field));
              }
            }
            const json::object& settings = got.at(item.name).at("settings").at("index").as_object();
            CHECK(settings.at("number_of_shards") ==
                  json::value(std::to_string(source->number_of_shards)));
            break;
          }
          case MetadataItemKind::kLegacyTemplate: {
            const json::value got = target.Get("/_template/" + item.name);
            REQUIRE(got.is_object());
            const json::object& body = got.at(item.name).as_object();
            CHECK(body.contains("index_patterns"));
            CHECK_FALSE(body.contains("template"));
            CHECK_FALSE(IsTyped(body.at("mappings")));
            break;
          }
          case MetadataItemKind::kComponentTemplate:
          case MetadataItemKind::kIndexTemplate: {
            const bool component = item.kind == MetadataItemKind::kComponentTemplate;
            const json::value got =
                target.Get((component ? "/_component_template/" : "/_index_template/") + item.name);
            REQUIRE(got.is_object());
            const auto& list =
                got.at(component ? "component_templates" : "index_templates").as_array();
            REQUIRE(list.size() == 1);
            const auto& body =
                list[0].at(component ? "component_template" : "index_template").as_object();
            if (const auto* t = body.if_contains("template");
                t && t->as_object().contains("mappings")) {
              CHECK_FALSE(IsTyped(t->at("mappings")));
            }
            break;
          }
        }
      }
      const auto names = target.server->IndexNames();
      CHECK(std::set<std::string>(names.begin(), names.end()) == created_indices);

      // A second migrate changes nothing and finds every item.
      const size_t before = target.server->requests().size();
      const MetadataReport again =
          RunMigrator(repo, target.client.get(), Mode(MetadataMode::kMigrate));
      CHECK(again.ok());
      CHECK(again.Count(MetadataOutcome::kCreated) == 0);
      CHECK(again.Count(MetadataOutcome::kAlreadyExists) ==
            migration.Count(MetadataOutcome::kCreated) +
                migration.Count(MetadataOutcome::kAlreadyExists));
      CHECK(target.Writes(before).empty());
    }
  }
}

TEST_CASE("a pre-existing index on the target is left untouched and reported",
          "[reindex][metadata][corpus]") {
  auto path = rfs::test::CorpusPath("es-snapshots/ES_6_8_Single");
  if (!path) return;
  OpenRepo repo(*path);
  Target target;
  REQUIRE(target.server
              ->CreateIndex("posts_2024_01_01",
                            R"({"settings":{"index":{"number_of_shards":2}},)"
                            R"("mappings":{"properties":{"other":{"type":"long"}}}})")
              .ok());
  const MetadataReport report =
      RunMigrator(repo, target.client.get(), Mode(MetadataMode::kMigrate));
  INFO(report.ToText());
  CHECK(report.ok());
  bool seen = false;
  for (const auto& item : report.items) {
    if (item.kind != MetadataItemKind::kIndex) continue;
    if (item.name == "posts_2024_01_01") {
      seen = true;
      CHECK(item.outcome == MetadataOutcome::kAlreadyExists);
    } else {
      CHECK(item.outcome == MetadataOutcome::kCreated);
    }
  }
  CHECK(seen);
  const json::value got = target.Get("/posts_2024_01_01");
  const auto& properties = MappingOf(got, "posts_2024_01_01").at("properties").as_object();
  CHECK(properties.contains("other"));
  CHECK_FALSE(properties.contains("author"));
  CHECK(got.at("posts_2024_01_01").at("settings").at("index").at("number_of_shards") == "2");
  CHECK(report.ToText().find("posts_2024_01_01") != std::string::npos);
  CHECK(json::serialize(report.ToJson()).find(R"("outcome":"already_exists")") !=
        std::string::npos);
}

TEST_CASE("the double rejects private and unknown index settings as OpenSearch does",
          "[reindex][metadata]") {
  Target target;
  auto created = target.client->CreateIndex(
      "a", json::parse(R"({"settings":{"index":{"version":{"created":"6082499"}}}})").as_object());
  REQUIRE(absl::IsInvalidArgument(created.status()));
  CHECK(created.status().message().find(
            "private index setting [index.version.created] can not be set explicitly") !=
        std::string::npos);
  created = target.client->CreateIndex(
      "a", json::parse(R"({"settings":{"index.mapper.dynamic":false}})").as_object());
  REQUIRE(absl::IsInvalidArgument(created.status()));
  CHECK(created.status().message().find("unknown setting [index.mapper.dynamic] please check") !=
        std::string::npos);
  created = target.client->CreateIndex(
      "a", json::parse(R"({"mappings":{"doc":{"properties":{"x":{"type":"long"}}}}})").as_object());
  REQUIRE(absl::IsInvalidArgument(created.status()));
  CHECK(created.status().message().find("Root mapping definition has unsupported parameters") !=
        std::string::npos);
  created = target.client->CreateIndex(
      "a", json::parse(R"({"settings":{"index":{"number_of_shards":"1","refresh_interval":"1s",
          "analysis":{"analyzer":{"x":{"type":"standard"}}},"routing":{"allocation":{
          "include":{"zone":"a"}}}}},"mappings":{"properties":{"x":{"type":"long"}}}})")
               .as_object());
  CHECK(created.ok());
}

// A copy of the ES 1.x matrix repository (plain JSON metadata) whose index and global metadata
// are patched, to give the migrator cases the corpus does not hold.
struct PatchedEs1Repo {
  PatchedEs1Repo(const json::object& index_patch_settings, const json::object& extra_mappings,
                 const json::object& templates) {
    auto source = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3/es1_nocomp");
    if (!source) return;
    fs::copy(*source, dir.path() / "repo", fs::copy_options::recursive);
    const fs::path index_blob = dir.path() / "repo/indices/simple_index/snapshot-snapshot_v2";
    json::value index = Read(index_blob);
    json::object& meta = index.at("simple_index").as_object();
    for (const auto& [k, v] : index_patch_settings) meta["settings"].as_object()[k] = v;
    for (const auto& [k, v] : extra_mappings) {
      meta["mappings"].as_array().push_back(json::object{{k, v}});
    }
    Write(index_blob, index);
    const fs::path global_blob = dir.path() / "repo/metadata-snapshot_v2";
    json::value global = Read(global_blob);
    global.at("meta-data").as_object()["templates"] = templates;
    Write(global_blob, global);
    path = dir.path() / "repo";
  }
  static json::value Read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
  }
  static void Write(const fs::path& p, const json::value& v) {
    std::ofstream out(p, std::ios::trunc);
    out << json::serialize(v);
  }
  TempDir dir;
  std::optional<fs::path> path;
};

TEST_CASE("settings the target rejects are dropped, reported and the create retried",
          "[reindex][metadata][corpus]") {
  PatchedEs1Repo patched(
      json::parse(R"({"index.custom_plugin.a":"1","index.another_plugin.b":"2"})").as_object(), {},
      {});
  if (!patched.path) return;
  OpenRepo repo(*patched.path);
  Target target;
  {
    auto options = Mode(MetadataMode::kMigrate);
    options.max_setting_retries = 2;  // one retry: the second unknown setting still fails
    const MetadataReport report = RunMigrator(repo, target.client.get(), options);
    INFO(report.ToText());
    CHECK_FALSE(report.ok());
    REQUIRE(report.items.size() == 1);
    CHECK(report.items[0].outcome == MetadataOutcome::kFailed);
    CHECK(report.items[0].error.find("unknown setting [index.another_plugin.b]") !=
          std::string::npos);
    CHECK(target.server->IndexNames().empty());
  }
  const MetadataReport report =
      RunMigrator(repo, target.client.get(), Mode(MetadataMode::kMigrate));
  INFO(report.ToText());
  CHECK(report.ok());
  REQUIRE(report.items.size() == 1);
  const auto& item = report.items[0];
  CHECK(item.outcome == MetadataOutcome::kCreated);
  std::set<std::string> rejected;
  for (const auto& d : item.dropped_settings) {
    if (d.reason.find("rejected by the target") != std::string::npos) rejected.insert(d.key);
  }
  CHECK(rejected == std::set<std::string>{"index.custom_plugin.a", "index.another_plugin.b"});
  // The snapshot's own internal settings were dropped before sending.
  std::set<std::string> dropped;
  for (const auto& d : item.dropped_settings) dropped.insert(d.key);
  CHECK(dropped.count("index.version.created"));
  CHECK(dropped.count("index.uuid"));
  CHECK(target.server->IndexNames() == std::vector<std::string>{"simple_index"});
  const std::string text = report.ToText();
  CHECK(text.find("dropped setting index.custom_plugin.a: rejected by the target") !=
        std::string::npos);
}

TEST_CASE("split and union of a two-type ES 1.x index, and an ES 1.x legacy template",
          "[reindex][metadata][corpus]") {
  PatchedEs1Repo patched(
      {},
      json::parse(R"({"other":{"properties":{"value":{"type":"long"},"name":{"type":"string",
          "index":"not_analyzed"}}}})")
          .as_object(),
      json::parse(R"({"logs":{"order":0,"template":"logs-*","settings":{"index.number_of_shards":
          "2","index.mapper.dynamic":"false"},"mappings":{"event":{"_all":{"enabled":false},
          "properties":{"msg":{"type":"string"}}}},"aliases":{}}})")
          .as_object());
  if (!patched.path) return;
  OpenRepo repo(*patched.path);
  SECTION("union fails on the field both types map differently") {
    Target target;
    const MetadataReport report =
        RunMigrator(repo, target.client.get(), Mode(MetadataMode::kMigrate));
    INFO(report.ToText());
    CHECK(report.Count(MetadataItemKind::kLegacyTemplate, MetadataOutcome::kCreated) == 1);
    REQUIRE(report.Count(MetadataItemKind::kIndex, MetadataOutcome::kFailed) == 1);
    CHECK(report.ToText().find("field [value] is mapped differently") != std::string::npos);
    CHECK(target.server->IndexNames().empty());
    const json::value got = target.Get("/_template/logs");
    CHECK(json::serialize(got.at("logs").at("index_patterns")) == R"(["logs-*"])");
    CHECK(json::serialize(got.at("logs").at("mappings")) ==
          R"({"properties":{"msg":{"type":"text"}}})");
    CHECK(json::serialize(got.at("logs").at("settings")) ==
          R"({"index":{"number_of_shards":"2"}})");
  }
  SECTION("split creates one index per type, named as the document migration names them") {
    Target target;
    auto options = Mode(MetadataMode::kMigrate);
    options.multi_type_policy = transform::MultiTypePolicy::kSplit;
    const MetadataReport report = RunMigrator(repo, target.client.get(), options);
    INFO(report.ToText());
    CHECK(report.ok());
    auto metadata = repo.repository->ReadIndexMetadata(*repo.snapshot, "simple_index");
    REQUIRE(metadata.ok());
    std::vector<std::string> expected;
    for (const auto& [type, mapping] : metadata->mappings) {
      expected.push_back(transform::TargetIndexForType(
          "simple_index", type, metadata->mappings.size(), transform::MultiTypePolicy::kSplit));
    }
    std::sort(expected.begin(), expected.end());
    CHECK(expected == std::vector<std::string>{"simple_index_doc", "simple_index_other"});
    CHECK(target.server->IndexNames() == expected);
    const json::value other = target.Get("/simple_index_other");
    CHECK(json::serialize(MappingOf(other, "simple_index_other")) ==
          R"({"properties":{"value":{"type":"long"},"name":{"type":"keyword"}}})");
  }
}

TEST_CASE("without a target: evaluate assumes a version, migrate writes a directory",
          "[reindex][metadata][corpus]") {
  auto path = rfs::test::CorpusPath("es-snapshots/ES_7_10_Single");
  if (!path) return;
  OpenRepo repo(*path);
  TempDir out;
  {
    MetadataMigrator migrator(*repo.repository, *repo.snapshot, nullptr,
                              Mode(MetadataMode::kMigrate));
    auto report = migrator.Run();
    CHECK(absl::IsInvalidArgument(report.status()));
    CHECK(migrator.failure_source() == MetadataFailureSource::kOptions);
  }
  const MetadataReport evaluation = RunMigrator(repo, nullptr, Mode(MetadataMode::kEvaluate));
  CHECK(evaluation.ok());
  CHECK(evaluation.target == "OS 2.19 (assumed)");
  CHECK(evaluation.Count(MetadataItemKind::kIndex, MetadataOutcome::kWouldCreate) == 2);
  CHECK(evaluation.Count(MetadataItemKind::kComponentTemplate, MetadataOutcome::kWouldCreate) == 1);
  CHECK(evaluation.Count(MetadataItemKind::kIndexTemplate, MetadataOutcome::kWouldCreate) == 1);

  auto options = Mode(MetadataMode::kMigrate);
  options.output_dir = out.str();
  const MetadataReport migration = RunMigrator(repo, nullptr, options);
  CHECK(migration.ok());
  CHECK(migration.Count(MetadataOutcome::kCreated) ==
        evaluation.Count(MetadataOutcome::kWouldCreate));
  for (const auto& item : migration.items) {
    if (item.outcome != MetadataOutcome::kCreated) continue;
    const std::string file = MetadataItemPath(out.str(), item.kind, item.name);
    INFO(file);
    REQUIRE(fs::exists(file));
    CHECK(PatchedEs1Repo::Read(file) == json::value(item.body));
  }
  CHECK(fs::exists(out.path() / ".rfs/metadata/index/posts_2024_01_01.json"));
  CHECK(fs::exists(out.path() / ".rfs/metadata/component_template/posts_template.json"));
  options.mode = MetadataMode::kEvaluate;
  const MetadataReport again = RunMigrator(repo, nullptr, options);
  CHECK(again.Count(MetadataOutcome::kAlreadyExists) == migration.Count(MetadataOutcome::kCreated));
  CHECK(again.Count(MetadataOutcome::kWouldCreate) == 0);
}

TEST_CASE("allowlists select items and composable templates are skipped on an ES 6 target",
          "[reindex][metadata][corpus]") {
  auto path = rfs::test::CorpusPath("es-snapshots/ES_7_10_Single");
  if (!path) return;
  OpenRepo repo(*path);
  auto options = Mode(MetadataMode::kEvaluate);
  options.index_allowlist = *transform::Allowlist::Parse({"posts_2023_02_25"});
  options.index_template_allowlist = *transform::Allowlist::Parse({"regex:posts_.*"});
  options.assumed_target_version = {core::ClusterVersion::Product::kElasticsearch, 6, 8};
  const MetadataReport report = RunMigrator(repo, nullptr, options);
  INFO(report.ToText());
  for (const auto& item : report.items) {
    INFO(ToString(item.kind) << " " << item.name);
    if (item.kind == MetadataItemKind::kIndex) {
      CHECK(item.outcome == (item.name == "posts_2023_02_25"
                                 ? MetadataOutcome::kWouldCreate
                                 : MetadataOutcome::kSkippedByAllowlist));
    } else if (item.kind == MetadataItemKind::kIndexTemplate) {
      CHECK(item.outcome == (item.name == "posts_index_template"
                                 ? MetadataOutcome::kSkippedUnsupported
                                 : MetadataOutcome::kSkippedByAllowlist));
    } else if (item.kind == MetadataItemKind::kLegacyTemplate) {
      CHECK(item.outcome == MetadataOutcome::kSkippedByAllowlist);
    }
  }
  const json::object doc = report.ToJson();
  CHECK(doc.at("counts").at("would_create") == 1);
  CHECK(doc.at("ok") == true);
}

}  // namespace
}  // namespace rfs::migration

namespace rfs::migration {
namespace {

TEST_CASE("transient target errors are retried", "[reindex][metadata][corpus]") {
  auto path = rfs::test::CorpusPath("es-snapshots/ES_7_10_Single");
  if (!path) return;
  OpenRepo repo(*path);
  Target target;
  rfs::testing::FaultOptions faults;
  faults.path_contains = "posts_2023_02_25";
  faults.schedule = {{1, rfs::testing::Fault::kUnavailable503},
                     {2, rfs::testing::Fault::kReject429},
                     {4, rfs::testing::Fault::kUnavailable503}};
  target.server->SetFaults(faults);
  const MetadataReport report =
      RunMigrator(repo, target.client.get(), Mode(MetadataMode::kMigrate));
  INFO(report.ToText());
  CHECK(report.ok());
  CHECK(target.server->stats().faults_injected == 3);
  const auto names = target.server->IndexNames();
  CHECK(std::count(names.begin(), names.end(), "posts_2023_02_25") == 1);
}

TEST_CASE("templates are the source engine's own by their markers and built-in names, not prefix",
          "[reindex][metadata][corpus]") {
  // A user's `logs-app-tpl` of an OpenSearch 2.19 source was skipped as "system" by its prefix.
  const json::object legacy =
      json::parse(R"({"order":0,"template":"logs-app*","settings":{},"mappings":{}})").as_object();
  PatchedEs1Repo patched(
      {}, {}, json::object{{"logs-app-tpl", legacy}, {"logs", legacy}, {".hidden", legacy}});
  if (!patched.path) return;
  OpenRepo repo(*patched.path);
  auto outcome = [](const MetadataReport& report, const std::string& name) {
    for (const auto& item : report.items) {
      if (item.kind == MetadataItemKind::kLegacyTemplate && item.name == name) return item;
    }
    FAIL("no item " << name);
    return MetadataItemReport{};
  };
  Target target;
  auto options = Mode(MetadataMode::kMigrate);
  SECTION("an OpenSearch source has none of Elasticsearch's built-in templates") {
    options.source_version = *core::ClusterVersion::Parse("OS 2.19");
    const MetadataReport report = RunMigrator(repo, target.client.get(), options);
    INFO(report.ToText());
    CHECK(outcome(report, "logs-app-tpl").outcome == MetadataOutcome::kCreated);
    CHECK(outcome(report, "logs").outcome == MetadataOutcome::kCreated);
    CHECK(outcome(report, ".hidden").outcome == MetadataOutcome::kSkippedSystem);
    CHECK(target.Get("/_template/logs-app-tpl").is_object());
  }
  SECTION("Elasticsearch 8's stack template `logs` is its own; the user's template migrates") {
    options.source_version = *core::ClusterVersion::Parse("ES 8.19");
    const MetadataReport report = RunMigrator(repo, target.client.get(), options);
    INFO(report.ToText());
    CHECK(outcome(report, "logs-app-tpl").outcome == MetadataOutcome::kCreated);
    const auto logs = outcome(report, "logs");
    CHECK(logs.outcome == MetadataOutcome::kSkippedSystem);
    REQUIRE(logs.notes.size() == 1);
    CHECK(logs.notes[0] == "one of the templates ES 8.19 installs itself");
  }
}

TEST_CASE(
    "an Elasticsearch mapping the target cannot hold refuses its item with advice, and the rest "
    "migrate",
    "[reindex][metadata][corpus]") {
  PatchedEs1Repo patched({}, {},
                         json::parse(R"({
          "metrics-tpl":{"order":0,"index_patterns":["m-*"],
                         "mappings":{"_doc":{"properties":{"h":{"type":"histogram"}}}}},
          "vectors-tpl":{"order":0,"index_patterns":["v-*"],
                         "mappings":{"_doc":{"properties":{
                           "v":{"type":"dense_vector","dims":3,"similarity":"l2_norm"},
                           "host":{"type":"keyword","time_series_dimension":true}}}}}})")
                             .as_object());
  if (!patched.path) return;
  OpenRepo repo(*patched.path);
  Target target;
  for (const MetadataMode mode : {MetadataMode::kEvaluate, MetadataMode::kMigrate}) {
    auto options = Mode(mode);
    options.source_version = *core::ClusterVersion::Parse("ES 8.19");
    const MetadataReport report = RunMigrator(repo, target.client.get(), options);
    const std::string text = report.ToText();
    INFO(text);
    CHECK(report.Count(MetadataItemKind::kLegacyTemplate, MetadataOutcome::kFailed) == 1);
    CHECK(text.find("legacy template [metrics-tpl] refused: field [h]: type `histogram`") !=
          std::string::npos);
    CHECK(text.find("--transformer-config") != std::string::npos);
    CHECK(text.find("field [v]: `dense_vector` translated to `knn_vector`") != std::string::npos);
    CHECK(text.find("field [host]: parameter `time_series_dimension` dropped") !=
          std::string::npos);
    CHECK(report.Count(MetadataItemKind::kIndex, mode == MetadataMode::kMigrate
                                                     ? MetadataOutcome::kCreated
                                                     : MetadataOutcome::kWouldCreate) == 1);
  }
  const json::value got = target.Get("/_template/vectors-tpl").at("vectors-tpl");
  CHECK(json::serialize(got.at("mappings").at("properties").at("v")) ==
        R"({"type":"knn_vector","dimension":3,"method":{"name":"hnsw","engine":"lucene",)"
        R"("space_type":"l2"}})");
  CHECK(got.at("settings").at("index").at("knn") == true);
  CHECK(target.Get("/_template/metrics-tpl").is_null());
}

}  // namespace
}  // namespace rfs::migration
