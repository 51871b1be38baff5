// Elasticsearch 8 mapping features on real OpenSearch 2 and 3 nodes, as
// docs/es-mapping-compatibility.md says: an index per feature written with documents on each
// Elasticsearch source node (8.19 and 8.18), one snapshot per source, each migrated once into
// OpenSearch 2.19 and once into 3.8 (`MetadataMigration migrate`, then
// DocumentsFromSnapshotMigration). Every index the table translates is created with the mapping
// the table gives for that target's version (rfs::transform::OutcomeFor, the same table the code
// applies) and holds every document as the snapshot does. The dense_vector index needs the k-NN
// plugin, which these two nodes (2.19.6 and 3.8.0, for which Maven Central serves no k-NN plugin)
// do not have: it fails alone, with the node's error and the advice to install the plugin. The
// fixture's k-NN nodes (OpenSearch 2.19.1 and 3.5.0 with the plugin) take dense_vector indices in
// knn_real_test.cpp: created as knn_vector, documents read back, k-NN queries answered.
//
// Elasticsearch 7.10 is no source here: its node (the OSS modules Maven Central serves) has none
// of the table's shapes -- flattened, dense_vector, sparse_vector and the other x-pack types answer
// "No handler for type", runtime fields came in 7.11 and TSDB parameters and subobjects in 8.x.
//
// Elasticsearch 7.10's own x-pack shapes (dense_vector with `dims` only, flattened, wildcard,
// histogram, constant_keyword, unsigned_long, version) come from 7.10-layout snapshots the fixture
// generator writes with that mapping and real documents: the last test case.
//
// Runtime fields: the Elasticsearch 8 nodes here have no Painless module ("script_lang not
// supported [painless]"), so they can only hold runtime fields without a script. The scripted one
// is added to the index's mapping by a --transformer-config program, which runs on the source's
// mapping before the translation table, as if the source had held it.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/version.hpp"
#include "rfs/transform/es_mapping_rules.hpp"

#include "support/real_node.hpp"
#include "support/tool_runner.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::test::RealNode;

constexpr int kNoWorkLeft = 3;

// Each index: its feature name (the index is rn-esmap-<source>-<feature>), its mapping on
// Elasticsearch and documents.
struct Feature {
  std::string name;
  std::string mappings;
  std::vector<std::string> documents;
};

std::vector<Feature> Features() {
  return {
      {"dense",
       R"({"properties":{"v":{"type":"dense_vector","dims":3,"similarity":"cosine",
           "index_options":{"type":"int8_hnsw"}},"n":{"type":"long"}}})",
       {R"({"v":[1.0,0.5,-2.0],"n":1})", R"({"v":[0.25,3.0,1.5],"n":2})"}},
      {"sparse",
       R"({"properties":{"tokens":{"type":"sparse_vector"}}})",
       {R"({"tokens":{"alpha":1.5,"beta":0.25}})", R"({"tokens":{"gamma":2.0}})"}},
      {"flattened",
       R"({"properties":{"labels":{"type":"flattened"}}})",
       {R"({"labels":{"env":"prod","team":{"name":"search"}}})", R"({"labels":{"env":"dev"}})"}},
      {"passthrough",
       R"({"properties":{"attrs":{"type":"passthrough","priority":10,
           "properties":{"host":{"type":"keyword"}}}}})",
       {R"({"attrs":{"host":"h1","zone":"z1"}})"}},
      {"tsparams",
       R"({"properties":{"host":{"type":"keyword","time_series_dimension":true},
           "cpu":{"type":"double","time_series_metric":"gauge"}}})",
       {R"({"host":"a","cpu":0.5})", R"({"host":"b","cpu":1.25})"}},
      {"keep",
       R"({"properties":{"tags":{"type":"keyword","synthetic_source_keep":"arrays"}}})",
       {R"({"tags":["b","a","b"]})"}},
      {"subobjects",
       R"({"properties":{"metrics":{"type":"object","subobjects":false,
           "properties":{"cpu.user":{"type":"double"},"cpu.system":{"type":"double"}}}}})",
       {R"({"metrics":{"cpu.user":1.5,"cpu.system":0.5}})"}},
      // `day` has no script (Elasticsearch reads it from _source); `unmapped` is added by the
      // node itself (dynamic: runtime); `twice` (a script) is added by the transformer program.
      {"runtime",
       R"j({"dynamic":"runtime","properties":{"n":{"type":"long"}},
         "runtime":{"day":{"type":"keyword"}}})j",
       {R"({"n":1,"day":"monday","unmapped":"kept in _source"})", R"({"n":21})"}},
  };
}

constexpr const char* kAddScriptedRuntime =
    R"j([{"JqTransformerProvider":{"script":"if .type == \"index\" and (.name | endswith(\"-runtime\")) then .body.mappings._doc.runtime.twice = {\"type\":\"long\",\"script\":{\"source\":\"emit(doc['n'].value * 2)\"}} else . end"}}])j";

std::vector<std::string> Names(const std::string& source, const std::vector<Feature>& features) {
  std::vector<std::string> out;
  for (const auto& f : features) out.push_back("rn-esmap-" + source + "-" + f.name);
  return out;
}

// One source node's snapshot of every feature index.
struct SourceSnapshot {
  std::string source;  // the fixture node's name: es8, es818
  fs::path location;
  rfs::test::SnapshotDocuments documents;
};

SourceSnapshot WriteSource(const std::string& source, const std::vector<Feature>& features) {
  RealNode es(source);
  const std::vector<std::string> names = Names(source, features);
  es.DeleteIndices(names);
  for (size_t i = 0; i < features.size(); ++i) {
    const Feature& f = features[i];
    es.Ok("PUT", "/" + names[i],
          R"({"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":)" + f.mappings +
              "}");
    std::string bulk;
    int id = 0;
    for (const std::string& doc : f.documents) {
      bulk += R"({"index":{"_index":")" + names[i] + R"(","_id":"d)" + std::to_string(id++) +
              "\"}}\n" + doc + "\n";
    }
    const json::value answer = es.Ok("POST", "/_bulk?refresh=true", bulk);
    INFO(json::serialize(answer));
    REQUIRE(!answer.at("errors").as_bool());
  }
  const std::string repo = "rn-esmap-" + source + "-repo";
  SourceSnapshot out{source, es.repo_path() / repo, {}};
  es.RegisterFsRepository(repo, out.location);
  es.Send("DELETE", "/_snapshot/" + repo + "/s1");
  es.Ok("PUT", "/_snapshot/" + repo + "/s1?wait_for_completion=true",
        R"({"indices":"rn-esmap-)" + source + R"(-*","include_global_state":false})");
  es.DeleteIndices(names);
  out.documents = rfs::test::ReadSnapshotDocuments(out.location, "s1");
  return out;
}

// The type the table gives `es_type` on `target`.
std::string TableType(const std::string& es_type, const rfs::core::ClusterVersion& target) {
  const auto* rule = rfs::transform::FindRule(rfs::transform::RuleSubject::kType, es_type);
  REQUIRE(rule != nullptr);
  const auto outcome = rfs::transform::OutcomeFor(*rule, target);
  return outcome.action == rfs::transform::RuleAction::kKeep ? es_type : std::string(outcome.to);
}

// Migrates `snapshot` into `os` (of `target` version) and checks every index as the table says.
void MigrateInto(const SourceSnapshot& snapshot, RealNode& os,
                 const rfs::core::ClusterVersion& target, const std::vector<Feature>& features) {
  INFO(snapshot.source << " -> " << os.name());
  const std::vector<std::string> names = Names(snapshot.source, features);
  auto index = [&](const std::string& feature) {
    return "rn-esmap-" + snapshot.source + "-" + feature;
  };
  os.DeleteIndices(names);
  rfs::test::ToolRunner runner("rfs-esmap");
  int code = runner.Run({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir",
                         snapshot.location.string(), "--target-host", os.url(), "--index-allowlist",
                         "regex:rn-esmap-" + snapshot.source + "-.*", "--transformer-config",
                         kAddScriptedRuntime, "--output", "json"});
  INFO(runner.out << runner.err);
  REQUIRE(code == 1);  // the dense_vector index fails: the node has no k-NN plugin
  std::map<std::string, json::object> items;
  const json::value report = json::parse(runner.out);
  for (const auto& item : report.at("items").as_array()) {
    items[std::string(item.at("name").as_string())] = item.as_object();
  }
  auto notes = [&](const std::string& feature) {
    std::string all;
    for (const auto& n : items.at(index(feature)).at("notes").as_array()) {
      all += std::string(n.as_string()) + "\n";
    }
    return all;
  };
  for (const Feature& f : features) {
    INFO(f.name);
    REQUIRE(items.count(index(f.name)) == 1);
    CHECK(items.at(index(f.name)).at("outcome") == (f.name == "dense" ? "failed" : "created"));
  }
  const std::string dense_error(items.at(index("dense")).at("error").as_string());
  CHECK(dense_error.find("No handler for type [knn_vector]") != std::string::npos);
  CHECK(dense_error.find("install the k-NN plugin (opensearch-knn)") != std::string::npos);
  CHECK(notes("dense").find("field [v]: `dense_vector` translated to `knn_vector`") !=
        std::string::npos);
  CHECK(notes("tsparams").find("field [host]: parameter `time_series_dimension` dropped") !=
        std::string::npos);
  CHECK(notes("runtime").find("runtime field [twice] translated to a derived field (long") !=
        std::string::npos);
  CHECK(notes("runtime").find("runtime field [day] dropped: no script") != std::string::npos);
  CHECK(notes("runtime").find("runtime field [unmapped] dropped: no script") != std::string::npos);

  // The mappings the node holds are the ones the table gives for its version.
  auto mapping = [&](const std::string& feature) {
    return os.Ok("GET", "/" + index(feature) + "/_mapping").at(index(feature)).at("mappings");
  };
  CHECK(json::value_to<std::string>(mapping("sparse").at("properties").at("tokens").at("type")) ==
        TableType("sparse_vector", target));
  CHECK(
      json::value_to<std::string>(mapping("flattened").at("properties").at("labels").at("type")) ==
      TableType("flattened", target));
  CHECK(!mapping("passthrough").at("properties").at("attrs").as_object().contains("type"));
  CHECK(json::serialize(mapping("tsparams").at("properties").at("host")) ==
        R"({"type":"keyword"})");
  CHECK(json::serialize(mapping("keep").at("properties").at("tags")) == R"({"type":"keyword"})");
  CHECK(mapping("subobjects")
            .at("properties")
            .at("metrics")
            .at("properties")
            .at("cpu")
            .at("properties")
            .at("user")
            .at("type") == "double");
  const json::value runtime = mapping("runtime");
  CHECK(runtime.at("dynamic") == "false");
  CHECK(runtime.at("derived").at("twice").at("type") == "long");
  CHECK(!runtime.at("derived").as_object().contains("day"));

  // Every document of the created indices migrates and reads back as the snapshot holds it.
  rfs::test::SnapshotDocuments expected = snapshot.documents;
  expected.erase(index("dense"));
  REQUIRE(expected.size() == features.size() - 1);
  std::string created;
  for (const auto& [name, docs] : expected) created += (created.empty() ? "" : ",") + name;
  code = runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", snapshot.location.string(),
                     "--target-host", os.url(), "--index-allowlist", created, "--coordinator-db",
                     runner.dir.File("coordination.sqlite"), "--failed-documents-dir",
                     runner.dir.File("failed")});
  INFO(runner.out << runner.err);
  REQUIRE(code == kNoWorkLeft);
  CHECK(rfs::test::CheckNodeHolds(os, expected) == 11);
  // Dotted keys of the subobjects:false object index as the expanded paths.
  const json::value hits = os.Ok("POST", "/" + index("subobjects") + "/_search",
                                 R"({"query":{"range":{"metrics.cpu.user":{"gte":1.0}}}})");
  CHECK(hits.at("hits").at("total").at("value") == 1);
  // flat_object leaves are searchable by their dotted path.
  const json::value flat = os.Ok("POST", "/" + index("flattened") + "/_search",
                                 R"({"query":{"term":{"labels.team.name":"search"}}})");
  CHECK(flat.at("hits").at("total").at("value") == 1);
  // The derived field runs its script on the target: 21 * 2 >= 40 holds for d1 alone.
  const json::value derived = os.Ok("POST", "/" + index("runtime") + "/_search",
                                    R"({"query":{"range":{"twice":{"gte":40}}}})");
  CHECK(derived.at("hits").at("total").at("value") == 1);
  CHECK(derived.at("hits").at("hits").at(0).at("_id") == "d1");
  os.DeleteIndices(names);
}

}  // namespace

TEST_CASE("Elasticsearch 8 mapping features land on OpenSearch 2 and 3 as the table says",
          "[real][es-mapping]") {
  const std::vector<Feature> features = Features();
  // One snapshot per source node, each migrated once per target node.
  std::vector<SourceSnapshot> snapshots;
  for (const std::string source : {"es8", "es818"}) {
    snapshots.push_back(WriteSource(source, features));
  }
  const std::vector<std::pair<std::string, rfs::core::ClusterVersion>> targets = {
      {"os2", {rfs::core::ClusterVersion::Product::kOpenSearch, 2, 19}},
      {"os3", {rfs::core::ClusterVersion::Product::kOpenSearch, 3, 8}}};
  for (const auto& [name, version] : targets) {
    RealNode os(name);
    for (const SourceSnapshot& snapshot : snapshots) MigrateInto(snapshot, os, version, features);
  }

  // RfsWorker's --knn-engine reaches its metadata phase: the dense_vector index it writes (into
  // an output directory, as OpenSearch 2.19) has a faiss method.
  rfs::test::ToolRunner runner("rfs-esmap-worker");
  const std::string out = runner.dir.File("out");
  const int code =
      runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir", snapshots[0].location.string(),
                  "--output-dir", out, "--index-allowlist", "rn-esmap-es8-dense", "--knn-engine",
                  "faiss", "--coordinator-db", runner.dir.File("coordination.sqlite"),
                  "--failed-documents-dir", runner.dir.File("failed"), "--skip-verify"});
  INFO(runner.out << runner.err);
  CHECK(code == 0);
  const fs::path written =
      fs::path(out) / ".rfs" / "metadata" / "index" / "rn-esmap-es8-dense.json";
  REQUIRE(fs::exists(written));
  const json::value body = json::parse(rfs::test::ReadTextFile(written.string()));
  INFO(json::serialize(body));
  CHECK(body.at("mappings").at("properties").at("v").at("method").at("engine") == "faiss");
  // A value other than lucene or faiss is a usage error.
  CHECK(runner.Run({RFS_WORKER_TOOL, "--snapshot-local-dir", snapshots[0].location.string(),
                    "--output-dir", out, "--knn-engine", "nmslib"}) == 64);
  CHECK(runner.err.find("--knn-engine: knn engine 'nmslib' is not one of: lucene, faiss") !=
        std::string::npos);
}

TEST_CASE("hex-string byte vectors of Elasticsearch 8.19 reach a k-NN node as byte arrays",
          "[real][es-mapping]") {
  // Elasticsearch 8.14+ takes a byte vector as a hex string and keeps it so in _source; k-NN
  // takes only arrays, so the worker converts (transform::DocumentValueConversions).
  RealNode es("es8");
  RealNode os("os3knn");
  const std::string index = "rn-esmap-hex";
  es.DeleteIndices({index});
  os.DeleteIndices({index});
  es.Ok("PUT", "/" + index,
        R"({"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":{
            "v":{"type":"dense_vector","dims":3,"element_type":"byte","similarity":"l2_norm"}}}})");
  const json::value answer = es.Ok("POST", "/_bulk?refresh=true",
                                   "{\"index\":{\"_index\":\"" + index +
                                       "\",\"_id\":\"d0\"}}\n{\"v\":\"7f80ff\"}\n"
                                       "{\"index\":{\"_index\":\"" +
                                       index + "\",\"_id\":\"d1\"}}\n{\"v\":[1,2,3]}\n");
  INFO(json::serialize(answer));
  REQUIRE(!answer.at("errors").as_bool());
  const fs::path location = es.repo_path() / "rn-esmap-hex-repo";
  es.RegisterFsRepository("rn-esmap-hex-repo", location);
  es.Send("DELETE", "/_snapshot/rn-esmap-hex-repo/s1");
  es.Ok("PUT", "/_snapshot/rn-esmap-hex-repo/s1?wait_for_completion=true",
        R"({"indices":"rn-esmap-hex","include_global_state":false})");
  es.DeleteIndices({index});
  // The snapshot holds the hex string as written.
  const auto snapshot = rfs::test::ReadSnapshotDocuments(location, "s1");
  REQUIRE(snapshot.at(index).at("d0").source.find("7f80ff") != std::string::npos);

  rfs::test::ToolRunner runner("rfs-esmap-hex");
  int code = runner.Run({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir", location.string(),
                         "--target-host", os.url(), "--index-allowlist", index});
  INFO(runner.out << runner.err);
  REQUIRE(code == 0);
  code = runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", location.string(), "--target-host",
                     os.url(), "--index-allowlist", index, "--coordinator-db",
                     runner.dir.File("coordination.sqlite"), "--failed-documents-dir",
                     runner.dir.File("failed")});
  INFO(runner.out << runner.err);
  REQUIRE(code == kNoWorkLeft);
  os.Ok("POST", "/" + index + "/_refresh");
  CHECK(json::serialize(os.Ok("GET", "/" + index + "/_source/d0")) == R"({"v":[127,-128,-1]})");
  CHECK(json::serialize(os.Ok("GET", "/" + index + "/_source/d1")) == R"({"v":[1,2,3]})");
  // The converted vector is the one k-NN finds nearest to itself.
  const json::value hits =
      os.Ok("POST", "/" + index + "/_search",
            R"({"size":1,"query":{"knn":{"v":{"vector":[127,-128,-1],"k":1}}}})");
  CHECK(hits.at("hits").at("hits").at(0).at("_id") == "d0");
  os.DeleteIndices({index});
}

namespace {

// An Elasticsearch 7.10 x-pack shape: the index rn-es710-<feature>-0, its mapping as 7.10 kept it
// in the index metadata, the documents (one _source per line, or {"_id","_source"}) and the type
// the table is asked about.
struct Es710Shape {
  std::string feature;
  std::string es_type;
  std::string mapping;
  std::vector<std::string> documents;
};

std::vector<Es710Shape> Es710Shapes() {
  return {
      // Elasticsearch 7.10's dense_vector takes `dims` and `meta` only: no similarity, index or
      // index_options, and its vectors are never indexed for search (Builder.getParameters() is
      // List.of(dims, meta) in
      // x-pack/plugin/vectors/src/main/java/org/elasticsearch/xpack/vectors/mapper/DenseVectorFieldMapper.java
      // of elastic/elasticsearch 7.10; the values go to binary doc values).
      {"dense",
       "dense_vector",
       R"({"properties":{"v":{"type":"dense_vector","dims":3},"n":{"type":"long"}}})",
       {R"({"v":[1.0,0.5,-2.0],"n":1})", R"({"v":[0.25,3.0,1.5],"n":2})",
        R"({"_id":"vec-given","_source":{"v":[-1.5,0.0,0.125],"n":3}})"}},
      {"flattened",
       "flattened",
       R"({"properties":{"labels":{"type":"flattened","ignore_above":256}}})",
       {R"({"labels":{"env":"prod","team":{"name":"search"}}})",
        R"({"labels":{"env":"dev","tags":["a","b"]}})"}},
      {"wildcard",
       "wildcard",
       R"({"properties":{"path":{"type":"wildcard"}}})",
       {R"({"path":"/var/log/app/one.log"})", R"({"path":"C:\\Temp\\two.txt"})"}},
      {"histogram",
       "histogram",
       R"({"properties":{"latency":{"type":"histogram"},"n":{"type":"long"}}})",
       {R"({"latency":{"values":[0.1,0.25,0.5],"counts":[3,7,23]},"n":1})"}},
      // 7.10 sets `value` from the first document when the mapping has none: a snapshot holds it.
      {"constant",
       "constant_keyword",
       R"({"properties":{"env":{"type":"constant_keyword","value":"prod"},"n":{"type":"long"}}})",
       {R"({"env":"prod","n":1})", R"({"n":2})"}},
      {"unsigned",
       "unsigned_long",
       R"({"properties":{"counter":{"type":"unsigned_long"}}})",
       {R"({"counter":18446744073709551615})", R"({"counter":0})"}},
      {"version",
       "version",
       R"({"properties":{"release":{"type":"version"}}})",
       {R"({"release":"7.10.2"})", R"({"release":"1.0.0-beta1"})"}},
  };
}

// One shape's 7.10-layout snapshot, written by the fixture generator, and its documents as the
// snapshot's Lucene index holds them.
struct Es710Snapshot {
  Es710Shape shape;
  std::string index;
  fs::path repo;
  rfs::test::SnapshotDocuments documents;
};

Es710Snapshot GenerateEs710(const Es710Shape& shape, rfs::test::ToolRunner& runner) {
  const std::string generator = RFS_GENERATE_SNAPSHOT;
  REQUIRE(!generator.empty());
  const std::string mapping_file = runner.dir.File(shape.feature + "-mapping.json");
  const std::string docs_file = runner.dir.File(shape.feature + "-docs.ndjson");
  std::ofstream(mapping_file) << shape.mapping << "\n";
  {
    std::ofstream docs(docs_file);
    for (const std::string& doc : shape.documents) docs << doc << "\n";
  }
  const std::string out = runner.dir.File(shape.feature + "-generated");
  const int code =
      runner.Run({generator, "--out", out, "--mapping-file", mapping_file, "--docs-file", docs_file,
                  "--index-prefix", "rn-es710-" + shape.feature, "--templates", "false"});
  INFO(runner.out << runner.err);
  REQUIRE(code == 0);
  Es710Snapshot snapshot{shape, "rn-es710-" + shape.feature + "-0", fs::path(out) / "repo", {}};
  snapshot.documents = rfs::test::ReadSnapshotDocuments(snapshot.repo, "snap-1");
  REQUIRE(snapshot.documents.size() == 1);
  REQUIRE(snapshot.documents.at(snapshot.index).size() == shape.documents.size());
  return snapshot;
}

// `MetadataMigration migrate` of one snapshot into `os`: the exit code and the index's item.
json::object MigrateMetadata(const Es710Snapshot& snapshot, RealNode& os,
                             rfs::test::ToolRunner& runner, int expected_code) {
  const int code = runner.Run({RFS_METADATA_TOOL, "migrate", "--snapshot-local-dir",
                               snapshot.repo.string(), "--target-host", os.url(),
                               "--index-allowlist", snapshot.index, "--output", "json"});
  INFO(runner.out << runner.err);
  REQUIRE(code == expected_code);
  const json::value report = json::parse(runner.out);
  for (const auto& item : report.at("items").as_array()) {
    if (std::string(item.at("name").as_string()) == snapshot.index) return item.as_object();
  }
  FAIL("no item for " << snapshot.index);
  return {};
}

std::string NotesOf(const json::object& item) {
  std::string all;
  for (const auto& n : item.at("notes").as_array()) all += std::string(n.as_string()) + "\n";
  return all;
}

// DocumentsFromSnapshotMigration of one snapshot into `os`; every document reads back equal.
void MigrateDocuments(const Es710Snapshot& snapshot, RealNode& os, rfs::test::ToolRunner& runner) {
  const std::string session = snapshot.shape.feature + "-" + os.name();
  const int code = runner.Run({RFS_DOCUMENTS_TOOL, "--snapshot-local-dir", snapshot.repo.string(),
                               "--target-host", os.url(), "--index-allowlist", snapshot.index,
                               "--coordinator-db", runner.dir.File(session + ".sqlite"),
                               "--failed-documents-dir", runner.dir.File(session + "-failed")});
  INFO(runner.out << runner.err);
  REQUIRE(code == kNoWorkLeft);
  CHECK(rfs::test::CheckNodeHolds(os, snapshot.documents) == snapshot.shape.documents.size());
}

json::value FieldMapping(RealNode& os, const std::string& index, const std::string& field) {
  return os.Ok("GET", "/" + index + "/_mapping")
      .at(index)
      .at("mappings")
      .at("properties")
      .at(field);
}

std::string TypeOf(RealNode& os, const std::string& index, const std::string& field) {
  return json::value_to<std::string>(FieldMapping(os, index, field).at("type"));
}

}  // namespace

TEST_CASE("Elasticsearch 7.10 x-pack mapping shapes land on OpenSearch 3 as the table says",
          "[real][es-mapping]") {
  // The 7.10 node here runs the OSS modules Maven Central serves, which refuse every x-pack type
  // ("No handler for type"), so these snapshots are written by the fixture generator: the 7.10
  // repository layout and index metadata (index.version.created 7.10.2) holding each mapping as
  // 7.10 kept it, and real Lucene 8 shards whose stored _source and _id are the documents below.
  const rfs::core::ClusterVersion target{rfs::core::ClusterVersion::Product::kOpenSearch, 3, 8};
  rfs::test::ToolRunner runner("rfs-esmap-710");
  std::map<std::string, Es710Snapshot> snapshots;
  std::map<std::string, json::object> items;  // feature -> its index's item on os3
  std::vector<std::string> names;
  for (const Es710Shape& shape : Es710Shapes()) {
    Es710Snapshot snapshot = GenerateEs710(shape, runner);
    names.push_back(snapshot.index);
    snapshots.emplace(shape.feature, std::move(snapshot));
  }
  RealNode os("os3");
  os.DeleteIndices(names);

  for (const auto& [feature, snapshot] : snapshots) {
    INFO(feature << " -> os3");
    const std::string& es_type = snapshot.shape.es_type;
    const auto* rule = rfs::transform::FindRule(rfs::transform::RuleSubject::kType, es_type);
    REQUIRE(rule != nullptr);
    const auto outcome = rfs::transform::OutcomeFor(*rule, target);
    if (outcome.action == rfs::transform::RuleAction::kRefuse) {
      // Refused before anything is sent, with the field, the type, the reason and the way out.
      const json::object& item = items[feature] = MigrateMetadata(snapshot, os, runner, 1);
      CHECK(item.at("outcome") == "failed");
      const std::string error(item.at("error").as_string());
      CHECK(error.find("refused: field [latency]: type `histogram`: no OpenSearch type holds "
                       "pre-aggregated histograms") != std::string::npos);
      CHECK(error.find("--transformer-config") != std::string::npos);
      CHECK(os.Send("GET", "/" + snapshot.index).status == 404);
      continue;
    }
    if (es_type == "dense_vector") {
      // os3 has no k-NN plugin: the translated index fails alone, with the advice.
      const json::object& item = items[feature] = MigrateMetadata(snapshot, os, runner, 1);
      CHECK(item.at("outcome") == "failed");
      const std::string error(item.at("error").as_string());
      CHECK(error.find("No handler for type [knn_vector]") != std::string::npos);
      CHECK(error.find("install the k-NN plugin (opensearch-knn)") != std::string::npos);
      continue;
    }
    const json::object& item = items[feature] = MigrateMetadata(snapshot, os, runner, 0);
    CHECK(item.at("outcome") == "created");
    MigrateDocuments(snapshot, os, runner);
  }

  // The mappings are the table's for 3.8, and the values search as the target's types do.
  const std::string flattened = snapshots.at("flattened").index;
  CHECK(json::serialize(FieldMapping(os, flattened, "labels")) ==
        R"({"type":")" + TableType("flattened", target) + R"("})");
  const std::string flattened_notes = NotesOf(items.at("flattened"));
  INFO(flattened_notes);
  CHECK(flattened_notes.find("field [labels]") != std::string::npos);
  CHECK(flattened_notes.find("ignore_above") != std::string::npos);
  CHECK(os.Ok("POST", "/" + flattened + "/_search",
              R"({"query":{"term":{"labels.team.name":"search"}}})")
            .at("hits")
            .at("total")
            .at("value") == 1);

  const std::string wildcard = snapshots.at("wildcard").index;
  CHECK(TypeOf(os, wildcard, "path") == TableType("wildcard", target));
  const json::value wild = os.Ok("POST", "/" + wildcard + "/_search",
                                 R"({"query":{"wildcard":{"path":{"value":"*app/one*"}}}})");
  CHECK(wild.at("hits").at("total").at("value") == 1);

  const std::string constant = snapshots.at("constant").index;
  CHECK(json::serialize(FieldMapping(os, constant, "env")) ==
        R"({"type":")" + TableType("constant_keyword", target) + R"(","value":"prod"})");

  const std::string unsigned_index = snapshots.at("unsigned").index;
  CHECK(TypeOf(os, unsigned_index, "counter") == TableType("unsigned_long", target));
  const json::value top = os.Ok("POST", "/" + unsigned_index + "/_search",
                                R"({"query":{"range":{"counter":{"gte":18446744073709551615}}}})");
  CHECK(top.at("hits").at("total").at("value") == 1);

  const std::string version = snapshots.at("version").index;
  CHECK(TypeOf(os, version, "release") == TableType("version", target));
  os.DeleteIndices(names);

  // dense_vector as 7.10 had it (dims only, never indexed for search) on the k-NN node: a
  // knn_vector of that dimension without a method (exact search only) and without index.knn;
  // every vector reads back as the snapshot holds it.
  RealNode knn("os3knn");
  const Es710Snapshot& dense = snapshots.at("dense");
  knn.DeleteIndices({dense.index});
  const json::object item = MigrateMetadata(dense, knn, runner, 0);
  CHECK(item.at("outcome") == "created");
  CHECK(NotesOf(item).find("field [v]: `dense_vector` translated to `knn_vector`: dims 3 -> "
                           "dimension, not indexed in the source: no method (exact search only)") !=
        std::string::npos);
  const json::value v = FieldMapping(knn, dense.index, "v");
  INFO(json::serialize(v));
  CHECK(v.at("type") == "knn_vector");
  CHECK(v.at("dimension") == 3);
  CHECK(!v.as_object().contains("method"));
  const json::value settings = knn.Ok("GET", "/" + dense.index + "/_settings");
  INFO(json::serialize(settings));
  CHECK(settings.at(dense.index).at("settings").at("index").as_object().if_contains("knn") ==
        nullptr);
  MigrateDocuments(dense, knn, runner);
  knn.DeleteIndices({dense.index});
}
