// Elasticsearch 8 mapping features on a real OpenSearch 3 node, as docs/es-mapping-compatibility.md
// says: an index per feature written on a real Elasticsearch 8.19 node with documents, snapshotted,
// `MetadataMigration migrate` into OpenSearch 3.8, then DocumentsFromSnapshotMigration; every index
// the table translates is created with the translated mapping and holds every document as the
// snapshot does. The dense_vector index needs the k-NN plugin, which the test's OpenSearch 3.8 node
// does not have: it fails alone, with the node's error and the advice to install the plugin.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "support/real_node.hpp"
#include "support/tool_runner.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::test::RealNode;

constexpr int kNoWorkLeft = 3;

// Each index: its mapping on Elasticsearch and documents.
struct Feature {
  std::string index;
  std::string mappings;
  std::vector<std::string> documents;
};

std::vector<Feature> Features() {
  return {
      {"rn-esmap-dense",
       R"({"properties":{"v":{"type":"dense_vector","dims":3,"similarity":"cosine",
           "index_options":{"type":"int8_hnsw"}},"n":{"type":"long"}}})",
       {R"({"v":[1.0,0.5,-2.0],"n":1})", R"({"v":[0.25,3.0,1.5],"n":2})"}},
      {"rn-esmap-sparse",
       R"({"properties":{"tokens":{"type":"sparse_vector"}}})",
       {R"({"tokens":{"alpha":1.5,"beta":0.25}})", R"({"tokens":{"gamma":2.0}})"}},
      {"rn-esmap-flattened",
       R"({"properties":{"labels":{"type":"flattened"}}})",
       {R"({"labels":{"env":"prod","team":{"name":"search"}}})", R"({"labels":{"env":"dev"}})"}},
      {"rn-esmap-passthrough",
       R"({"properties":{"attrs":{"type":"passthrough","priority":10,
           "properties":{"host":{"type":"keyword"}}}}})",
       {R"({"attrs":{"host":"h1","zone":"z1"}})"}},
      {"rn-esmap-tsparams",
       R"({"properties":{"host":{"type":"keyword","time_series_dimension":true},
           "cpu":{"type":"double","time_series_metric":"gauge"}}})",
       {R"({"host":"a","cpu":0.5})", R"({"host":"b","cpu":1.25})"}},
      {"rn-esmap-keep",
       R"({"properties":{"tags":{"type":"keyword","synthetic_source_keep":"arrays"}}})",
       {R"({"tags":["b","a","b"]})"}},
      {"rn-esmap-subobjects",
       R"({"properties":{"metrics":{"type":"object","subobjects":false,
           "properties":{"cpu.user":{"type":"double"},"cpu.system":{"type":"double"}}}}})",
       {R"({"metrics":{"cpu.user":1.5,"cpu.system":0.5}})"}},
      {"rn-esmap-runtime",
       R"j({"dynamic":"runtime","properties":{"n":{"type":"long"}},
         "runtime":{"day":{"type":"keyword"}}})j",
       {R"({"n":1,"day":"monday","unmapped":"kept in _source"})"}},
  };
}

std::vector<std::string> Names(const std::vector<Feature>& features) {
  std::vector<std::string> out;
  for (const auto& f : features) out.push_back(f.index);
  return out;
}

}  // namespace

TEST_CASE("Elasticsearch 8 mapping features land on OpenSearch 3 as the table says",
          "[real][es-mapping]") {
  RealNode es("es8");
  RealNode os("os3");
  const std::vector<Feature> features = Features();
  es.DeleteIndices(Names(features));
  os.DeleteIndices(Names(features));
  for (const Feature& f : features) {
    es.Ok("PUT", "/" + f.index,
          R"({"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":)" + f.mappings +
              "}");
    std::string bulk;
    int id = 0;
    for (const std::string& doc : f.documents) {
      bulk += R"({"index":{"_index":")" + f.index + R"(","_id":"d)" + std::to_string(id++) +
              "\"}}\n" + doc + "\n";
    }
    const json::value answer = es.Ok("POST", "/_bulk?refresh=true", bulk);
    INFO(json::serialize(answer));
    REQUIRE(!answer.at("errors").as_bool());
  }
  const fs::path location = es.repo_path() / "rn-esmap-repo";
  es.Ok("PUT", "/_snapshot/rn-esmap-repo",
        json::serialize(json::object{{"type", "fs"},
                                     {"settings", json::object{{"location", location.string()}}}}));
  es.Send("DELETE", "/_snapshot/rn-esmap-repo/s1");
  es.Ok("PUT", "/_snapshot/rn-esmap-repo/s1?wait_for_completion=true",
        R"({"indices":"rn-esmap-*","include_global_state":false})");

  rfs::test::ToolRunner runner("rfs-esmap");
  int code = runner.Run({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", location.string(),
                         "--target-host", os.url(), "--index-allowlist", "regex:rn-esmap-.*",
                         "--output", "json"});
  INFO(runner.out << runner.err);
  REQUIRE(code == 1);  // the dense_vector index fails: the node has no k-NN plugin
  std::map<std::string, json::object> items;
  const json::value report = json::parse(runner.out);
  for (const auto& item : report.at("items").as_array()) {
    items[std::string(item.at("name").as_string())] = item.as_object();
  }
  auto notes = [&](const std::string& index) {
    std::string all;
    for (const auto& n : items.at(index).at("notes").as_array()) {
      all += std::string(n.as_string()) + "\n";
    }
    return all;
  };
  for (const Feature& f : features) {
    INFO(f.index);
    REQUIRE(items.count(f.index) == 1);
    CHECK(items.at(f.index).at("outcome") == (f.index == "rn-esmap-dense" ? "failed" : "created"));
  }
  const std::string dense_error(items.at("rn-esmap-dense").at("error").as_string());
  CHECK(dense_error.find("No handler for type [knn_vector]") != std::string::npos);
  CHECK(dense_error.find("install the k-NN plugin (opensearch-knn)") != std::string::npos);
  CHECK(notes("rn-esmap-dense").find("field [v]: `dense_vector` translated to `knn_vector`") !=
        std::string::npos);
  CHECK(
      notes("rn-esmap-tsparams").find("field [host]: parameter `time_series_dimension` dropped") !=
      std::string::npos);
  CHECK(notes("rn-esmap-runtime").find("runtime fields [day, unmapped] dropped") !=
        std::string::npos);

  // The mappings the node holds are the translated ones.
  auto mapping = [&](const std::string& index) {
    return os.Ok("GET", "/" + index + "/_mapping").at(index).at("mappings");
  };
  CHECK(mapping("rn-esmap-sparse").at("properties").at("tokens").at("type") == "rank_features");
  CHECK(mapping("rn-esmap-flattened").at("properties").at("labels").at("type") == "flat_object");
  CHECK(!mapping("rn-esmap-passthrough").at("properties").at("attrs").as_object().contains("type"));
  CHECK(json::serialize(mapping("rn-esmap-tsparams").at("properties").at("host")) ==
        R"({"type":"keyword"})");
  CHECK(json::serialize(mapping("rn-esmap-keep").at("properties").at("tags")) ==
        R"({"type":"keyword"})");
  CHECK(mapping("rn-esmap-subobjects")
            .at("properties")
            .at("metrics")
            .at("properties")
            .at("cpu")
            .at("properties")
            .at("user")
            .at("type") == "double");
  CHECK(mapping("rn-esmap-runtime").at("dynamic") == "false");

  // Every document of the created indices migrates and reads back as the snapshot holds it.
  rfs::test::SnapshotDocuments expected = rfs::test::ReadSnapshotDocuments(location, "s1");
  expected.erase("rn-esmap-dense");
  REQUIRE(expected.size() == features.size() - 1);
  std::string created;
  for (const auto& [index, docs] : expected) created += (created.empty() ? "" : ",") + index;
  code = runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", location.string(), "--target-host",
                     os.url(), "--index-allowlist", created, "--coordinator-db",
                     runner.dir.File("coordination.sqlite"), "--failed-documents-dir",
                     runner.dir.File("failed")});
  INFO(runner.out << runner.err);
  REQUIRE(code == kNoWorkLeft);
  CHECK(rfs::test::CheckNodeHolds(os, expected) == 10);
  // Dotted keys of the subobjects:false object index as the expanded paths.
  const json::value hits = os.Ok("POST", "/rn-esmap-subobjects/_search",
                                 R"({"query":{"range":{"metrics.cpu.user":{"gte":1.0}}}})");
  CHECK(hits.at("hits").at("total").at("value") == 1);
  // flat_object leaves are searchable by their dotted path.
  const json::value flat = os.Ok("POST", "/rn-esmap-flattened/_search",
                                 R"({"query":{"term":{"labels.team.name":"search"}}})");
  CHECK(flat.at("hits").at("total").at("value") == 1);

  es.DeleteIndices(Names(features));
  os.DeleteIndices(Names(features));
}
