// SnapshotRepository over repositories written at test time by real Lucene 8.8.1 in the
// Elasticsearch 7.10 layout (test/fixtures): parts, compressed metadata, several indices and
// shards, both codecs.
#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/snapshot/inspect.hpp"
#include "rfs/snapshot/repository.hpp"

#include "support/generated_repo.hpp"

namespace {

boost::json::object ReadExpected(const rfs::test::GeneratedRepo& generated) {
  std::ifstream in(generated.expected());
  std::stringstream text;
  text << in.rdbuf();
  return boost::json::parse(text.str()).as_object();
}

void CheckAgainstExpected(const rfs::test::GeneratedRepo& generated) {
  const auto expected = ReadExpected(generated);
  auto repo = rfs::snapshot::FileSystemRepo::Open(generated.repo().string());
  REQUIRE(repo.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  INFO(repository.status().ToString());
  REQUIRE(repository.ok());
  auto snapshot = repository->get()->FindSnapshot(expected.at("snapshot").as_string().c_str());
  REQUIRE(snapshot.ok());
  CHECK(repository->get()->DetectSourceVersion(**snapshot)->ToString() == "ES 7.10.2");

  const auto& indices = expected.at("indices").as_object();
  auto names = repository->get()->IndicesIn(**snapshot);
  REQUIRE(names.size() == indices.size());
  for (const auto& [name, index] : indices) {
    auto meta = repository->get()->ReadIndexMetadata(**snapshot, std::string(name));
    INFO(name << ": " << meta.status().ToString());
    REQUIRE(meta.ok());
    CHECK(meta->number_of_shards == index.at("number_of_shards").to_number<int>());
    CHECK(meta->mappings.contains("_doc"));
    for (int shard = 0; shard < meta->number_of_shards; ++shard) {
      auto directory = repository->get()->OpenShardFiles(**snapshot, std::string(name), shard,
                                                         {.verify_checksums = true});
      REQUIRE(directory.ok());
      for (const auto& file : (*directory)->ListFiles()) {
        auto opened = (*directory)->OpenFile(file);
        INFO(file << ": " << opened.status().ToString());
        CHECK(opened.ok());
      }
    }
  }
  auto inspection = rfs::snapshot::InspectRepository(**repository, std::nullopt);
  REQUIRE(inspection.ok());
  const auto& templates = inspection->at("templates").as_object();
  CHECK(!templates.at("legacy").as_object().empty());
  CHECK(!templates.at("component").as_object().empty());
  CHECK(!templates.at("index").as_object().empty());
}

}  // namespace

TEST_CASE("generated: parts, compressed metadata, two indices of two shards",
          "[snapshot][generated]") {
  auto generated = rfs::test::Generate(
      "--indices 2 --shards 2 --docs 300 --updates 20 --deletes 15 --nested 5 --segments 3 "
      "--large-docs 2 --part-size 4096 --compress-metadata true --seed 7");
  if (!generated) return;
  CheckAgainstExpected(*generated);

  // Files longer than the part size really were split into .partN blobs.
  bool saw_parts = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(generated->repo())) {
    saw_parts |= entry.path().filename().string().ends_with(".part1");
  }
  CHECK(saw_parts);
}

TEST_CASE("generated: hard deletes, best_compression, compound files", "[snapshot][generated]") {
  auto generated = rfs::test::Generate(
      "--indices 1 --shards 3 --docs 200 --deletes 10 --soft-deletes false "
      "--codec best_compression --compound true --seed 8");
  if (!generated) return;
  CheckAgainstExpected(*generated);
}

TEST_CASE("an index id or blob name that would leave its folder is refused, on every read path",
          "[snapshot][generated][security]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 20 --seed 31");
  if (!generated) return;
  auto repo = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(repo.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->LatestSnapshot();
  REQUIRE(snapshot.ok());
  const std::string index_name = (*repository)->IndicesIn(**snapshot).at(0);
  auto index = (*repository)->FindIndex(index_name);
  REQUIRE(index.ok());
  // The shard folder of an index whose id (from index-N) climbs out of indices/.
  for (const char* id : {"..", "../../etc", "a/../../b", ""}) {
    INFO(id);
    rfs::snapshot::IndexEntry hostile = **index;
    hostile.id = id;
    auto folder = (*repository)->ShardFolder(hostile, 0);
    REQUIRE_FALSE(folder.ok());
    CHECK(absl::IsInvalidArgument(folder.status()));
  }
  // The folder repository itself refuses any path that would leave its root.
  for (const char* path : {"../outside", "indices/../../x", "/etc/passwd", "a//b", "a/./b"}) {
    INFO(path);
    CHECK_FALSE((*repo)->OpenBlob(path).ok());
    CHECK_FALSE((*repo)->ListBlobs(path).ok());
  }
}
