// MetadataMigration --source-host against real Elasticsearch 5.6, 6.8, 7.10 and 8.19 and
// OpenSearch 2 nodes: the metadata a live cluster's APIs give must migrate exactly as the same
// cluster's snapshot of it does. Each node gets templates of the kinds it has (legacy; component
// and index templates from Elasticsearch 7.8 on; a data stream on OpenSearch), indices made by
// hand and by templates (analysis settings, a mapping type of its own on 5.6 and 6.8,
// multi-fields, nested fields, a filtered and routed alias) and a closed index; a snapshot with
// the global state is taken, and `evaluate --output json` of the snapshot and of the live cluster
// must give the same items, outcomes, bodies, notes and dropped settings, and a user transform
// must see each index alike. Then the live cluster is migrated into real OpenSearch and read
// back there.
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/real_node.hpp"
#include "support/tool_runner.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::test::RealNode;

const char* const kIndices[] = {"live-plain", "live-legacy-1", "live-composed-1", "live-closed"};

// A mapping under the type `doc` for Elasticsearch 6 (which keeps the name the index was created
// with), typeless for later versions.
std::string Typed(bool typed, const std::string& mapping) {
  return typed ? R"({"doc": )" + mapping + "}" : mapping;
}

// A source node and what it has. Elasticsearch's builds on Maven Central are its OSS
// distributions, without X-Pack's data streams: OpenSearch's stream is the one tested.
struct Source {
  const char* name;
  const char* target;   // the node the live source is migrated into
  const char* version;  // how the report names it, at least
  bool composable;      // component and index templates (Elasticsearch 7.8+, OpenSearch)
  bool data_streams;
  size_t snapshot_items;  // the test's items a snapshot of it holds
  // --source-version for every run, or none. The Elasticsearch 8 node the suite starts loads no
  // module but its HTTP layer, so it has no root handler: GET / answers 405 (a distribution's
  // node answers it), and the version is given instead.
  const char* source_version = nullptr;
};

// What the test puts on a source node (anything of an earlier run removed first).
void SetUpSource(RealNode& node, const Source& source) {
  const bool composable = source.composable;
  const bool typed = !composable;
  node.Send("DELETE", "/_data_stream/live-ds-1");
  node.DeleteIndices({kIndices[0], kIndices[1], kIndices[2], kIndices[3]});
  for (const char* path :
       {"/_index_template/rfs-live-ds", "/_index_template/rfs-live-composable",
        "/_component_template/rfs-live-component", "/_template/rfs-live-legacy"}) {
    node.Send("DELETE", path);
  }
  // Elasticsearch 5 names a legacy template's pattern `template`; 6.0 made it `index_patterns`.
  const std::string patterns = std::string(source.version).starts_with("ES 5")
                                   ? R"("template": "live-legacy-*")"
                                   : R"("index_patterns": ["live-legacy-*"])";
  node.Ok("PUT", "/_template/rfs-live-legacy",
          "{" + patterns + R"(, "order": 3, "version": 7,
              "settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": )" +
              Typed(typed, R"({"properties": {"msg": {"type": "text"}}})") + R"(,
              "aliases": {"live-legacy-alias": {}}})");
  if (composable) {
    node.Ok("PUT", "/_component_template/rfs-live-component",
            R"({"template": {"settings": {"number_of_replicas": 0},
              "mappings": {"properties": {"@timestamp": {"type": "date"},
                                          "host": {"type": "keyword"}}}},
              "_meta": {"owner": "rfs"}})");
    node.Ok("PUT", "/_index_template/rfs-live-composable",
            R"({"index_patterns": ["live-composed-*"], "composed_of": ["rfs-live-component"],
                "priority": 50, "template": {"settings": {"index.refresh_interval": "5s"}}})");
  }
  if (source.data_streams) {
    node.Ok("PUT", "/_index_template/rfs-live-ds",
            R"({"index_patterns": ["live-ds*"], "data_stream": {},
                "composed_of": ["rfs-live-component"], "priority": 60})");
    node.Ok("PUT", "/_data_stream/live-ds-1");
  }
  node.Ok("PUT", "/live-plain",
          R"({"settings": {"number_of_shards": 3, "number_of_replicas": 0,
                "analysis": {"analyzer": {"long_tokens": {"type": "standard",
                                                    "max_token_length": 100}}}},
              "mappings": )" +
              Typed(typed, R"({"properties": {
                "title": {"type": "text", "analyzer": "long_tokens",
                          "fields": {"raw": {"type": "keyword"}}},
                "count": {"type": "integer"},
                "tags": {"type": "nested", "properties": {"k": {"type": "keyword"}}}}})") +
              R"(,
              "aliases": {"live-filtered": {"filter": {"term": {"count": 1}},
                                            "routing": "r1"}}})");
  node.Ok("PUT", "/live-legacy-1");
  node.Ok("PUT", "/live-composed-1", R"({"settings": {"number_of_replicas": 0}})");
  node.Ok("PUT", "/live-closed",
          R"({"settings": {"number_of_shards": 1, "number_of_replicas": 0}})");
  node.Ok("POST", "/live-closed/_close");
  node.Ok("GET", "/_cluster/health/live-*?wait_for_status=green&timeout=60s");
}

// The items of an `evaluate --output json` run that this test made, by kind and name.
std::map<std::string, json::object> OwnItems(const std::string& output) {
  std::map<std::string, json::object> out;
  const json::value report = json::parse(output);
  for (const json::value& item : report.at("items").as_array()) {
    const std::string name(item.at("name").as_string());
    if (!name.starts_with("live-") && !name.starts_with("rfs-live-") &&
        !name.starts_with(".ds-live-ds-1")) {
      continue;
    }
    out[std::string(item.at("kind").as_string()) + " " + name] = item.as_object();
  }
  return out;
}

struct Runner : rfs::test::ToolRunner {
  Runner() : ToolRunner("rfs-live-source") {}
};

}  // namespace

TEST_CASE("MetadataMigration --source-host reads a live cluster as its snapshot describes it",
          "[real][metadata][live-source]") {
  // Templates of each kind, the data stream and its backing index, and the three open indices.
  const Source sources[] = {{"es5", "os2", "ES 5.6", false, false, 4},
                            {"es6", "os2", "ES 6.8", false, false, 4},
                            {"es7", "os2", "ES 7.10", true, false, 6},
                            {"es8", "os2", "ES 8.19", true, false, 6, "ES 8.19"},
                            {"os2", "os3", "OS 2.19", true, true, 9}};
  for (const Source& described : sources) {
    SECTION(described.name) {
      RealNode source(described.name);
      SetUpSource(source, described);
      // The snapshot of the same metadata, with the global state (templates, data streams).
      const fs::path location = source.repo_path() / "live-source";
      source.RegisterFsRepository("live-source", location);
      source.Send("DELETE", "/_snapshot/live-source/snap");
      source.Ok("PUT", "/_snapshot/live-source/snap?wait_for_completion=true",
                json::serialize(json::object{
                    {"indices", described.data_streams
                                    ? "live-plain,live-legacy-1,live-composed-1,live-ds-1"
                                    : "live-plain,live-legacy-1,live-composed-1"},
                    {"include_global_state", true}}));

      Runner runner;
      auto with_version = [&](std::vector<std::string> argv) {
        if (described.source_version != nullptr) {
          argv.insert(argv.end(), {"--source-version", described.source_version});
        }
        return argv;
      };
      // A user transform sees an index as the snapshot holds it: mappings by type. (A legacy
      // template's mappings come as Elasticsearch keeps them, an array from a snapshot of 6.8 or
      // 7.10 and an object from the API, as the Java tool hands them to its transforms too.)
      const std::string shapes =
          R"([{"JqTransformerProvider": {"script": "if .type == \"index\" then )"
          R"(.body.settings[\"index.rfs_seen_types\"] = (.body.mappings | keys | join(\",\")) )"
          R"(else . end"}}])";
      int code = runner.Run(with_version({RFS_METADATA_TOOL, "evaluate", "--snapshot-local-dir",
                                          location.string(), "--snapshot-name", "snap", "--output",
                                          "json", "--transformer-config", shapes}));
      INFO(runner.out << runner.err);
      REQUIRE(code == 0);
      const auto from_snapshot = OwnItems(runner.out);
      code = runner.Run(with_version({RFS_METADATA_TOOL, "evaluate", "--source-host", source.url(),
                                      "--output", "json", "--transformer-config", shapes}));
      INFO(runner.out << runner.err);
      REQUIRE(code == 0);
      const auto live = OwnItems(runner.out);
      const json::value live_report = json::parse(runner.out);
      CHECK(live_report.at("snapshot") == "live-cluster");
      CHECK(
          std::string(live_report.at("source_version").as_string()).starts_with(described.version));
      CHECK(from_snapshot.size() == described.snapshot_items);
      for (const auto& [key, item] : from_snapshot) {
        INFO(key << "\n from the snapshot: " << json::serialize(item));
        const auto found = live.find(key);
        REQUIRE(found != live.end());
        INFO(" live: " << json::serialize(found->second));
        for (const char* field : {"outcome", "body", "notes", "dropped_settings", "source_name"}) {
          INFO(field);
          const json::value* in_snapshot = item.if_contains(field);
          const json::value* in_live = found->second.if_contains(field);
          REQUIRE((in_snapshot == nullptr) == (in_live == nullptr));
          if (in_snapshot != nullptr)
            CHECK(json::serialize(*in_live) == json::serialize(*in_snapshot));
        }
      }
      // What only the live cluster has: the closed index, created open (as from a snapshot).
      REQUIRE(live.contains("index live-closed"));
      const json::object& closed = live.at("index live-closed");
      CHECK(closed.at("outcome") == "would_create");
      CHECK(json::serialize(closed.at("notes")).find("closed") != std::string::npos);
      CHECK(live.size() == from_snapshot.size() + 1);

      // Into real OpenSearch, from the live cluster.
      RealNode target(described.target);
      target.DeleteIndices({kIndices[0], kIndices[1]});
      target.Send("DELETE", "/_template/rfs-live-legacy");
      code = runner.Run(
          with_version({RFS_METADATA_TOOL, "migrate", "--source-host", source.url(),
                        "--target-host", target.url(), "--index-allowlist",
                        "live-plain,live-legacy-1", "--index-template-allowlist", "rfs-live-legacy",
                        "--component-template-allowlist", "none", "--output", "json"}));
      INFO(runner.out << runner.err);
      REQUIRE(code == 0);
      const auto migrated = OwnItems(runner.out);
      CHECK(migrated.at("index live-plain").at("outcome") == "created");
      CHECK(migrated.at("index live-legacy-1").at("outcome") == "created");
      CHECK(migrated.at("legacy_template rfs-live-legacy").at("outcome") == "created");
      const json::value plain = target.Ok("GET", "/live-plain");
      const json::object& index = plain.at("live-plain").as_object();
      CHECK(index.at("mappings").at("properties").at("title").at("fields").at("raw").at("type") ==
            "keyword");
      CHECK(index.at("mappings").at("properties").at("tags").at("type") == "nested");
      CHECK(index.at("settings").at("index").at("number_of_shards") == "3");
      CHECK(index.at("settings")
                .at("index")
                .at("analysis")
                .at("analyzer")
                .at("long_tokens")
                .at("max_token_length") == "100");
      const json::object& alias = index.at("aliases").at("live-filtered").as_object();
      CHECK(alias.at("filter").at("term").at("count") == 1);
      CHECK(alias.at("index_routing") == "r1");
      const json::value legacy = target.Ok("GET", "/live-legacy-1");
      CHECK(legacy.at("live-legacy-1").at("aliases").as_object().contains("live-legacy-alias"));
      CHECK(legacy.at("live-legacy-1").at("settings").at("index").at("number_of_shards") == "2");
      target.DeleteIndices({kIndices[0], kIndices[1]});
      target.Send("DELETE", "/_template/rfs-live-legacy");
      source.Send("DELETE", "/_snapshot/live-source/snap");
    }
  }
}
