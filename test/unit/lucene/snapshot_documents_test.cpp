// Every live document of real snapshot repositories, read in place through the snapshot layer,
// against what their provenance states: the ES 6.8/7.10 repositories' EXPECTED.json, the
// ES 1.x-9.x / OpenSearch 1.x-3.x matrix, OpenSearch 2.11 soft deletes, and repositories
// generated at test time by real Lucene (ids and a checksum of the sources per shard).
#include <fstream>
#include <map>
#include <sstream>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/crc32.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/corpus.hpp"
#include "support/generated_repo.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

struct ReadDoc {
  std::string source;
  std::optional<std::string> routing;
  std::optional<std::string> type;
  uint64_t cursor = 0;
};

std::unique_ptr<rfs::snapshot::SnapshotRepository> OpenRepository(const fs::path& path) {
  auto repo = rfs::snapshot::FileSystemRepo::Open(path.string());
  REQUIRE(repo.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  REQUIRE(repository.ok());
  return std::move(repository).value();
}

absl::StatusOr<std::map<std::string, ReadDoc>> ReadShard(
    const rfs::snapshot::SnapshotRepository& repository,
    const rfs::snapshot::SnapshotEntry& snapshot, const std::string& index, int shard,
    rfs::lucene::ShardReaderOptions options = {}) {
  auto reader = rfs::lucene::OpenSnapshotShard(repository, snapshot, index, shard, options);
  if (!reader.ok()) return reader.status();
  auto cursor = (*reader)->OpenAt(0);
  if (!cursor.ok()) return cursor.status();
  std::map<std::string, ReadDoc> docs;
  rfs::lucene::Document doc;
  while (true) {
    auto more = (*cursor)->Next(doc);
    if (!more.ok()) return more.status();
    if (!*more) break;
    auto [it, inserted] =
        docs.emplace(doc.id, ReadDoc{std::string(doc.source.begin(), doc.source.end()), doc.routing,
                                     doc.type, doc.cursor});
    if (!inserted) return absl::InternalError("duplicate live id " + doc.id);
  }
  return docs;
}

json::value ParseFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

}  // namespace

TEST_CASE("ES 6.8 and 7.10 repositories: every live document matches EXPECTED.json",
          "[lucene][corpus]") {
  auto root = rfs::test::CorpusPath("es-snapshots");
  if (!root) return;
  const auto expected = ParseFile(*root / "EXPECTED.json").as_object();
  REQUIRE(expected.size() == 5);
  for (const auto& [repo_name, repo_expected] : expected) {
    SECTION(std::string(repo_name)) {
      auto repository = OpenRepository(*root / std::string(repo_name));
      auto snapshot = repository->LatestSnapshot();
      REQUIRE(snapshot.ok());
      const auto& indices = repo_expected.at("indices").as_object();
      CHECK(repository->IndicesIn(**snapshot).size() == indices.size());
      for (const auto& [index, index_expected] : indices) {
        const auto& docs = index_expected.at("docs").as_object();
        std::map<std::string, ReadDoc> read;
        const int shards = index_expected.at("shards").to_number<int>();
        for (int shard = 0; shard < shards; ++shard) {
          auto shard_docs = ReadShard(*repository, **snapshot, std::string(index), shard);
          INFO(repo_name << "/" << index << ": " << shard_docs.status().ToString());
          REQUIRE(shard_docs.ok());
          read.merge(*shard_docs);
        }
        CHECK(read.size() == docs.size());
        for (const auto& [id, doc] : docs) {
          INFO(repo_name << "/" << index << "/" << id);
          auto it = read.find(std::string(id));
          REQUIRE(it != read.end());
          CHECK(json::parse(it->second.source) == doc.at("_source"));
          if (const auto* routing = doc.as_object().if_contains("_routing")) {
            CHECK(it->second.routing == std::string(routing->as_string()));
          }
        }
      }
    }
  }
}

TEST_CASE("snapshot matrix ES 1.x-9.x, OpenSearch 1.x-3.x: v1 holds doc 1, v2 docs 1 and 2",
          "[lucene][corpus]") {
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  for (const char* folder :
       {"es1_nocomp", "es2_nocomp", "es5_nocomp", "es6_nocomp", "es7_nocomp", "es8_nocomp",
        "es9_nocomp", "os1_nocomp", "os2_nocomp", "os3_nocomp"}) {
    SECTION(folder) {
      auto repository = OpenRepository(*root / folder);
      for (const char* name : {"snapshot_v1", "snapshot_v2"}) {
        auto snapshot = repository->FindSnapshot(name);
        REQUIRE(snapshot.ok());
        auto docs = ReadShard(*repository, **snapshot, "simple_index", 0);
        INFO(folder << " " << name << ": " << docs.status().ToString());
        // Every folder is read, ES 1.x (Lucene 4.10) included.
        REQUIRE(docs.ok());
        std::map<std::string, json::value> expected = {{"1", json::parse(R"({"value":42})")}};
        if (std::string(name) == "snapshot_v2") expected["2"] = json::parse(R"({"value":99})");
        REQUIRE(docs->size() == expected.size());
        for (const auto& [id, source] : expected) {
          REQUIRE(docs->count(id) == 1);
          CHECK(json::parse(docs->at(id).source) == source);
          // ES 1.x stores `_uid` = "type#id": the type comes back with the doc.
          if (std::string(folder) == "es1_nocomp") CHECK(docs->at(id).type == "doc");
        }
      }
    }
  }
}

TEST_CASE("the snapshot matrix's documents carry their _version from doc values, ES 6 and later",
          "[lucene][corpus]") {
  // Each document of the matrix was indexed once: version 1, as the engine's VersionFieldMapper
  // and InternalEngine write it in the `_version` numeric doc values of Elasticsearch 6+ and
  // OpenSearch. Elasticsearch 5 keeps them in Lucene 6's doc-values format, which rfs does not
  // read: asking for versions fails there (and DocumentsFromSnapshotMigration refuses
  // --preserve-version for such an index before any work).
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  for (const char* folder : {"es5_nocomp", "es6_nocomp", "es7_nocomp", "es8_nocomp", "es9_nocomp",
                             "os1_nocomp", "os2_nocomp", "os3_nocomp"}) {
    SECTION(folder) {
      auto repository = OpenRepository(*root / folder);
      auto snapshot = repository->FindSnapshot("snapshot_v2");
      REQUIRE(snapshot.ok());
      rfs::lucene::ShardReaderOptions options;
      options.read_versions = true;
      auto reader =
          rfs::lucene::OpenSnapshotShard(*repository, **snapshot, "simple_index", 0, options);
      REQUIRE(reader.ok());
      auto cursor = (*reader)->OpenAt(0);
      REQUIRE(cursor.ok());
      rfs::lucene::Document doc;
      std::map<std::string, int64_t> versions;
      absl::StatusOr<bool> more;
      while ((more = (*cursor)->Next(doc)).ok() && *more) versions[doc.id] = doc.version;
      INFO(more.status().ToString());
      if (std::string(folder) == "es5_nocomp") {
        CHECK(absl::IsUnimplemented(more.status()));
        continue;
      }
      REQUIRE(more.ok());
      CHECK(versions == std::map<std::string, int64_t>{{"1", 1}, {"2", 1}});
    }
  }
}

TEST_CASE("OpenSearch 2.11: a soft-deleted document in an earlier segment is not live",
          "[lucene][corpus]") {
  auto root = rfs::test::CorpusPath(
      "opensearch-2.11-soft-deletes-multiseg/OS_2_11_Deletes_w_Soft_Multi_Seg");
  if (!root) return;
  auto repository = OpenRepository(*root);
  auto snapshot = repository->LatestSnapshot();
  REQUIRE(snapshot.ok());
  auto docs = ReadShard(*repository, **snapshot, "test-index", 0);
  INFO(docs.status().ToString());
  REQUIRE(docs.ok());
  std::vector<std::string> ids;
  for (const auto& [id, doc] : *docs) ids.push_back(id);
  CHECK(ids == std::vector<std::string>{"1", "3", "4", "5"});
  CHECK(json::parse(docs->at("4").source) == json::parse(R"({"field":"value 4"})"));
}

namespace {

// Compares every shard of a generated repository with the generator's expected.json: the live
// ids and the sum of CRC-32(id, 0, source) over live documents (the generator's definition).
void CheckGenerated(const rfs::test::GeneratedRepo& generated) {
  const auto expected = ParseFile(generated.expected()).as_object();
  auto repository = OpenRepository(generated.repo());
  auto snapshot = repository->FindSnapshot(std::string(expected.at("snapshot").as_string()));
  REQUIRE(snapshot.ok());
  for (const auto& [index, index_expected] : expected.at("indices").as_object()) {
    for (const auto& [shard_key, shard_expected] : index_expected.at("shards").as_object()) {
      const int shard = std::stoi(std::string(shard_key));
      auto docs = ReadShard(*repository, **snapshot, std::string(index), shard);
      INFO(index << " shard " << shard << ": " << docs.status().ToString());
      REQUIRE(docs.ok());
      std::vector<std::string> ids;
      uint64_t crc_sum = 0;
      for (const auto& [id, doc] : *docs) {
        ids.push_back(id);
        std::string bytes = id;
        bytes.push_back('\0');
        bytes += doc.source;
        crc_sum += rfs::core::Crc32(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
      }
      std::vector<std::string> expected_ids;
      for (const auto& id : shard_expected.at("ids").as_array()) {
        expected_ids.emplace_back(id.as_string());
      }
      CHECK(ids == expected_ids);  // both sorted by UTF-8 bytes
      CHECK(std::to_string(crc_sum) ==
            std::string(shard_expected.at("source_crc_sum").as_string()));
      for (const auto& [id, routing] : shard_expected.at("routed_ids").as_object()) {
        REQUIRE(docs->count(std::string(id)) == 1);
        CHECK(docs->at(std::string(id)).routing == std::string(routing.as_string()));
      }
    }
  }
}

}  // namespace

TEST_CASE("generated repositories: live ids, sources and routing per shard",
          "[lucene][generated]") {
  const char* variants[] = {
      "--indices 2 --shards 2 --docs 300 --updates 20 --deletes 15 --nested 5 --segments 3 "
      "--large-docs 2 --part-size 4096 --compress-metadata true --seed 7",
      "--indices 1 --shards 3 --docs 200 --deletes 10 --soft-deletes false "
      "--codec best_compression --compound true --seed 8",
      "--docs 2000 --updates 300 --deletes 200 --segments 6 --nested 20 --id-style utf8 "
      "--routing-fraction 0.5 --codec best_compression --seed 9",
      "--docs 1500 --updates 100 --deletes 100 --segments 4 --soft-deletes false --compound true "
      "--large-docs 3 --id-style numeric --seed 10",
      // zstd stored fields in the Lucene 9/10 container, frames by zstd-jni: Elasticsearch 8.14+
      // both modes (sliced chunks from the large documents), OpenSearch zstd and zstd_no_dict; and
      // OpenSearch's ZSTD\0 metadata blobs.
      "--docs 400 --updates 30 --deletes 20 --nested 5 --segments 3 --large-docs 3 "
      "--codec zstd814_best_speed --compress-metadata true --metadata-compressor zstd --seed 12",
      "--shards 2 --docs 3000 --updates 50 --deletes 50 --segments 2 --large-docs 4 --soft-deletes "
      "false --codec zstd814_best_compression --id-style utf8 --seed 13",
      "--docs 2500 --updates 40 --deletes 40 --nested 10 --segments 3 --large-docs 3 --codec zstd "
      "--compress-metadata true --metadata-compressor zstd --seed 14",
      "--docs 2500 --deletes 40 --segments 2 --large-docs 3 --soft-deletes false "
      "--routing-fraction 0.5 --codec zstd_no_dict --seed 15",
  };
  for (const char* args : variants) {
    SECTION(args) {
      auto generated = rfs::test::Generate(args);
      if (!generated) return;
      CheckGenerated(*generated);
    }
  }
}

TEST_CASE("resuming from every cursor of a generated shard yields exactly the tail",
          "[lucene][generated]") {
  auto generated =
      rfs::test::Generate("--docs 120 --updates 30 --deletes 20 --nested 4 --segments 4 --seed 11");
  if (!generated) return;
  auto repository = OpenRepository(generated->repo());
  auto snapshot = repository->LatestSnapshot();
  auto reader = rfs::lucene::OpenSnapshotShard(*repository, **snapshot, "index-0", 0);
  REQUIRE(reader.ok());
  std::vector<std::pair<uint64_t, std::string>> all;
  {
    auto cursor = (*reader)->OpenAt(0);
    REQUIRE(cursor.ok());
    rfs::lucene::Document doc;
    while (*(*cursor)->Next(doc)) all.emplace_back(doc.cursor, doc.id);
  }
  REQUIRE(all.size() > 50);
  for (uint64_t start = 0; start <= (*reader)->max_cursor(); ++start) {
    auto cursor = (*reader)->OpenAt(start);
    REQUIRE(cursor.ok());
    std::vector<std::pair<uint64_t, std::string>> tail;
    rfs::lucene::Document doc;
    while (*(*cursor)->Next(doc)) tail.emplace_back(doc.cursor, doc.id);
    std::vector<std::pair<uint64_t, std::string>> expected;
    for (const auto& entry : all) {
      if (entry.first >= start) expected.push_back(entry);
    }
    INFO("start cursor " << start);
    REQUIRE(tail == expected);
  }
}

TEST_CASE("Lucene 8 doc values rebuild the documents of a _source-disabled index",
          "[lucene][rebuild][generated]") {
  // The same documents twice, with and without a stored _source (the generator's Lucene 8.8.1:
  // Lucene80 doc values, big-endian), in several segments with updates, deletes and nested
  // children: each rebuilt document holds what the mapping's doc-values fields kept of the stored
  // one (author, a keyword; counter, a long).
  const std::string args =
      "--docs 3000 --updates 200 --deletes 150 --nested 3 --segments 4 --soft-deletes true "
      "--seed 23 --shards 2";
  const auto stored = rfs::test::Generate(args);
  const auto disabled = rfs::test::Generate(args + " --source-enabled false");
  if (!stored || !disabled) return;
  auto with_source = OpenRepository(stored->repo());
  auto without_source = OpenRepository(disabled->repo());
  auto snapshot_a = with_source->LatestSnapshot();
  auto snapshot_b = without_source->LatestSnapshot();
  REQUIRE(snapshot_a.ok());
  REQUIRE(snapshot_b.ok());
  size_t compared = 0, with_nested = 0;
  for (const auto& index : without_source->IndicesIn(**snapshot_b)) {
    auto metadata = without_source->ReadIndexMetadata(**snapshot_b, index);
    REQUIRE(metadata.ok());
    auto plan = rfs::lucene::RebuildPlanForIndex(*metadata);
    REQUIRE(plan.ok());
    REQUIRE(*plan != nullptr);
    rfs::lucene::ShardReaderOptions options;
    options.rebuild_plan = *plan;
    for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
      auto expected = ReadShard(*with_source, **snapshot_a, index, shard);
      auto rebuilt = ReadShard(*without_source, **snapshot_b, index, shard, options);
      INFO(index << "/" << shard << ": " << rebuilt.status().ToString());
      REQUIRE(expected.ok());
      REQUIRE(rebuilt.ok());
      REQUIRE(rebuilt->size() == expected->size());
      for (const auto& [id, doc] : *expected) {
        INFO("_id " << id);
        REQUIRE(rebuilt->count(id) == 1);
        const json::object source = json::parse(doc.source).as_object();
        json::object want{{"author", source.at("author")}, {"counter", source.at("counter")}};
        // Nested comments come back from the child documents, each with its keyword author, in
        // document order; a single one as an object.
        if (const auto* comments = source.if_contains("comments");
            comments != nullptr && comments->is_array() && !comments->get_array().empty()) {
          json::array authors;
          for (const auto& comment : comments->get_array()) {
            authors.push_back(json::object{{"author", comment.at("author")}});
          }
          want["comments"] = authors.size() == 1 ? authors[0] : json::value(authors);
          ++with_nested;
          // Read from a cursor inside the block (its last child): the children before the
          // cursor still belong to the document.
          auto reader =
              rfs::lucene::OpenSnapshotShard(*without_source, **snapshot_b, index, shard, options);
          REQUIRE(reader.ok());
          auto cursor = (*reader)->OpenAt(rebuilt->at(id).cursor - 1);
          REQUIRE(cursor.ok());
          auto first = (*cursor)->Next();
          REQUIRE(first.ok());
          REQUIRE(first->has_value());
          CHECK((*first)->id == id);
          CHECK(json::parse(std::string((*first)->source.begin(), (*first)->source.end())) ==
                json::value(want));
        }
        CHECK(json::parse(rebuilt->at(id).source) == json::value(want));
        CHECK(rebuilt->at(id).routing == doc.routing);
        ++compared;
      }
    }
  }
  CHECK(compared > 2500);
  CHECK(with_nested >= 3);
}
