// Helpers the end-to-end tests share: expected documents (the corpus's EXPECTED files and the
// generator's expected-docs.ndjson), the corpus cases, the check of a target double against
// them, a run's log folder, and the records of a failed-document stream.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/net/gzip.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/corpus.hpp"
#include "support/opensearch_double.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace rfs::e2e {

namespace fs = std::filesystem;
namespace json = boost::json;

struct ExpectedDoc {
  json::value source;
  std::optional<std::string> routing;
  /// False when the expectation does not state routing (EXPECTED.json lists it only sometimes).
  bool routing_stated = true;
};
// index -> id -> document
using ExpectedDocs = std::map<std::string, std::map<std::string, ExpectedDoc>>;

inline json::value ParseFile(const fs::path& path) {
  return json::parse(rfs::test::ReadTextFile(path));
}

struct MigrationRun {
  rfs::test::TempDir dir{"rfs-e2e"};
  std::string Out(const std::string& name) const { return dir.File(name + ".out"); }
  std::string Err(const std::string& name) const { return dir.File(name + ".err"); }
  std::string Logs(const std::string& name) const {
    return rfs::test::ReadTextFile(Out(name)) + rfs::test::ReadTextFile(Err(name));
  }
};

// rfs-check-output: the bulk files in `out` hold exactly the generator's expected documents.
inline void CheckBulkFiles(const MigrationRun& run, const fs::path& generated_dir,
                           const std::string& out) {
  const int check = rfs::test::RunProcess(
      {RFS_CHECK_OUTPUT_TOOL, "--expected-docs", (generated_dir / "expected-docs.ndjson").string(),
       "--output-dir", out},
      run.Out("check"), run.Err("check"));
  INFO(run.Logs("check"));
  CHECK(check == 0);
}

// Every expected document is on the double with the same source and routing, and no index holds
// anything else.
inline void CheckTarget(const rfs::testing::OpenSearchDouble& target,
                        const ExpectedDocs& expected) {
  for (const auto& [index, docs] : expected) {
    INFO("index " << index);
    CHECK(target.DocumentCount(index) == docs.size());
    for (const auto& [id, doc] : docs) {
      INFO("document " << id);
      auto stored = target.GetDocument(index, id);
      REQUIRE(stored.has_value());
      CHECK(json::parse(stored->source) == doc.source);
      if (doc.routing_stated || doc.routing) CHECK(stored->routing == doc.routing);
    }
  }
  for (const auto& name : target.IndexNames()) {
    if (name.starts_with(".")) continue;
    INFO("index on the target: " << name);
    CHECK(expected.count(name) == 1);
  }
}

struct CorpusCase {
  std::string label;
  fs::path repo;
  std::string snapshot;
  ExpectedDocs expected;
};

// Every corpus repository with its expected documents (empty when ../shared is absent).
inline std::vector<CorpusCase> CorpusCases() {
  std::vector<CorpusCase> cases;
  if (auto root = rfs::test::CorpusPath("es-snapshots")) {
    const auto expected = ParseFile(*root / "EXPECTED.json").as_object();
    for (const auto& [repo_name, repo_expected] : expected) {
      CorpusCase c{std::string(repo_name), *root / std::string(repo_name), "", {}};
      for (const auto& [index, index_expected] : repo_expected.at("indices").as_object()) {
        auto& docs = c.expected[std::string(index)];
        for (const auto& [id, doc] : index_expected.at("docs").as_object()) {
          std::optional<std::string> routing;
          if (const auto* r = doc.as_object().if_contains("_routing")) {
            routing = std::string(r->as_string());
          }
          // EXPECTED.json states routing for some documents only (ES_6_8_Single's posts carry
          // "user123" without saying so), so absence is not checked.
          docs[std::string(id)] = ExpectedDoc{doc.at("_source"), routing, false};
        }
      }
      cases.push_back(std::move(c));
    }
  }
  if (auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3")) {
    for (const char* folder :
         {"es1_nocomp", "es2_nocomp", "es5_nocomp", "es6_nocomp", "es7_nocomp", "es8_nocomp",
          "es9_nocomp", "os1_nocomp", "os2_nocomp", "os3_nocomp"}) {
      // As the matrix was written: snapshot_v2 holds documents 1 and 2 of simple_index.
      CorpusCase c{folder, *root / folder, "snapshot_v2", {}};
      c.expected["simple_index"]["1"] = ExpectedDoc{json::parse(R"({"value":42})"), std::nullopt};
      c.expected["simple_index"]["2"] = ExpectedDoc{json::parse(R"({"value":99})"), std::nullopt};
      cases.push_back(std::move(c));
    }
  }
  if (auto root = rfs::test::CorpusPath(
          "opensearch-2.11-soft-deletes-multiseg/OS_2_11_Deletes_w_Soft_Multi_Seg")) {
    CorpusCase c{"OS_2_11_Deletes_w_Soft_Multi_Seg", *root, "", {}};
    for (int id : {1, 3, 4, 5}) {
      c.expected["test-index"][std::to_string(id)] = ExpectedDoc{
          json::parse("{\"field\":\"value " + std::to_string(id) + "\"}"), std::nullopt};
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// The `_id`s of every NDJSON bulk file under `folder` (action lines only; none when it does not
// exist), and the number of files in `files` when given.
inline std::multiset<std::string> OutputIds(const fs::path& folder, size_t* files = nullptr) {
  std::multiset<std::string> ids;
  size_t count = 0;
  if (fs::exists(folder)) {
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      if (entry.path().extension() != ".ndjson") continue;
      if (entry.path().string().find("/.rfs/") != std::string::npos) continue;
      ++count;
      std::istringstream lines(rfs::test::ReadTextFile(entry.path().string()));
      std::string line;
      bool action = true;
      while (std::getline(lines, line)) {
        if (line.empty()) continue;
        if (action) {
          const auto value = json::parse(line);
          // A delete (delta runs) is an action line alone.
          if (value.as_object().begin()->key() == "delete") continue;
          ids.insert(std::string(value.as_object().begin()->value().at("_id").as_string()));
        }
        action = !action;
      }
    }
  }
  if (files != nullptr) *files = count;
  return ids;
}

// Each document of the generator's expected-docs.ndjson at `path` is on the double with the
// same source (routing not compared, other documents allowed); how many it lists.
inline size_t CheckExpectedSources(const rfs::testing::OpenSearchDouble& target,
                                   const fs::path& path) {
  std::ifstream expected(path);
  size_t count = 0;
  for (std::string line; std::getline(expected, line);) {
    if (line.empty()) continue;
    const auto doc = json::parse(line).as_object();
    const std::string index(doc.at("_index").as_string());
    const std::string id(doc.at("_id").as_string());
    auto stored = target.GetDocument(index, id);
    INFO(index << "/" << id);
    REQUIRE(stored.has_value());
    CHECK(json::parse(stored->source) == doc.at("_source"));
    ++count;
  }
  return count;
}

// A record of the failed-document stream and the object it was read from.
struct StreamRecord {
  std::string object;
  json::object record;
};

// The records of the failed-document stream's `objects` in `stream`: each object gunzipped, one
// JSON record a line.
inline std::vector<StreamRecord> ReadStreamRecords(const rfs::snapshot::ISourceRepo& stream,
                                                   const std::vector<std::string>& objects) {
  std::vector<StreamRecord> records;
  for (const auto& name : objects) {
    INFO(name);
    auto gz = stream.ReadBlob(name);
    REQUIRE(gz.ok());
    auto text = rfs::net::GzipDecompress(std::string(gz->begin(), gz->end()));
    REQUIRE(text.ok());
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      records.push_back({name, json::parse(line).as_object()});
    }
  }
  return records;
}

// The generator's expected-docs.ndjson as ExpectedDocs.
inline ExpectedDocs ReadExpectedDocs(const fs::path& path) {
  ExpectedDocs expected;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto doc = json::parse(line).as_object();
    std::optional<std::string> routing;
    if (const auto* r = doc.if_contains("_routing")) routing = std::string(r->as_string());
    expected[std::string(doc.at("_index").as_string())][std::string(doc.at("_id").as_string())] =
        ExpectedDoc{doc.at("_source"), routing};
  }
  return expected;
}

// The records of every failed-documents file (gzip NDJSON) in `dir`; none when it is missing.
inline std::vector<json::object> ReadFailedDocuments(const fs::path& dir) {
  std::vector<json::object> out;
  if (!fs::exists(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    auto text = rfs::net::GzipDecompress(rfs::test::ReadTextFile(entry.path()));
    REQUIRE(text.ok());
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) out.push_back(json::parse(line).as_object());
    }
  }
  return out;
}

}  // namespace rfs::e2e
