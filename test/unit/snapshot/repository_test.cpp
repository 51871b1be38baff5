#include "rfs/snapshot/repository.hpp"

#include <filesystem>
#include <fstream>
#include <set>

#include <catch2/catch.hpp>

#include "rfs/codec/codec_util.hpp"
#include "rfs/snapshot/inspect.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/corpus.hpp"

namespace {

using rfs::snapshot::FileSystemRepo;
using rfs::snapshot::RepositoryLayout;
using rfs::snapshot::SnapshotRepository;
namespace fs = std::filesystem;

std::unique_ptr<SnapshotRepository> OpenRepository(const fs::path& path) {
  auto repo = FileSystemRepo::Open(path.string());
  REQUIRE(repo.ok());
  auto repository = SnapshotRepository::Open(*repo);
  INFO(path.string() << ": " << repository.status().ToString());
  REQUIRE(repository.ok());
  return std::move(repository).value();
}

// Reads every Lucene file of every shard of `snapshot` with checksum verification, returning
// the number of files read.
int ReadAllShardFiles(const SnapshotRepository& repository,
                      const rfs::snapshot::SnapshotEntry& snapshot, const std::string& index,
                      int shards) {
  int files = 0;
  for (int shard = 0; shard < shards; ++shard) {
    auto directory = repository.OpenShardFiles(snapshot, index, shard, {.verify_checksums = true});
    INFO(index << " shard " << shard << ": " << directory.status().ToString());
    REQUIRE(directory.ok());
    bool has_commit = false;
    for (const auto& name : (*directory)->ListFiles()) {
      has_commit |= name.starts_with("segments_");
      auto file = (*directory)->OpenFile(name);
      INFO(name << ": " << file.status().ToString());
      REQUIRE(file.ok());
      auto bytes = rfs::core::ReadRange(**file, 0, (*file)->size());
      REQUIRE(bytes.ok());
      ++files;
    }
    CHECK(has_commit);
  }
  return files;
}

struct MatrixCase {
  const char* folder;
  RepositoryLayout layout;
  const char* version;
};

}  // namespace

TEST_CASE("snapshot matrix: every layout from ES 1.x to OpenSearch 3.x", "[snapshot][corpus]") {
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  const MatrixCase cases[] = {
      {"es1_nocomp", RepositoryLayout::kEs1, "ES 1.7.6"},
      {"es2_nocomp", RepositoryLayout::kEs2, "ES 2.4.6"},
      {"es5_nocomp", RepositoryLayout::kModern, "ES 5.6.16"},
      {"es6_nocomp", RepositoryLayout::kModern, "ES 6.8.23"},
      {"es7_nocomp", RepositoryLayout::kModern, "ES 7.17.29"},
      {"es8_nocomp", RepositoryLayout::kModern, "ES 8.14"},
      {"es9_nocomp", RepositoryLayout::kModern, "ES 9.0"},
      {"os1_nocomp", RepositoryLayout::kModern, "OS 1.3.20"},
      {"os2_nocomp", RepositoryLayout::kModern, "OS 2.19.2"},
      {"os3_nocomp", RepositoryLayout::kModern, "OS 3.1.0"},
  };
  for (const auto& c : cases) {
    SECTION(c.folder) {
      auto repository = OpenRepository(*root / c.folder);
      CHECK(repository->layout() == c.layout);
      std::set<std::string> names;
      for (const auto& s : repository->snapshots()) {
        names.insert(s.name);
        CHECK(s.state == "SUCCESS");
      }
      CHECK(names == std::set<std::string>{"snapshot_v1", "snapshot_v2"});
      // The newest snapshot by start time, whatever order the layout lists them in (OpenSearch
      // lists newest first and keeps start times only in snap-<uuid>.dat).
      auto latest = repository->LatestSnapshot();
      INFO(latest.status().ToString());
      REQUIRE(latest.ok());
      CHECK((*latest)->name == "snapshot_v2");
      for (const char* name : {"snapshot_v1", "snapshot_v2"}) {
        auto snapshot = repository->FindSnapshot(name);
        REQUIRE(snapshot.ok());
        auto version = repository->DetectSourceVersion(**snapshot);
        REQUIRE(version.ok());
        CHECK(version->ToString() == c.version);
        auto indices = repository->IndicesIn(**snapshot);
        REQUIRE(std::find(indices.begin(), indices.end(), "simple_index") != indices.end());
        auto meta = repository->ReadIndexMetadata(**snapshot, "simple_index");
        INFO(meta.status().ToString());
        REQUIRE(meta.ok());
        CHECK(meta->number_of_shards == 1);
        REQUIRE(meta->mappings.size() == 1);
        const auto& mapping = meta->mappings.begin()->value().as_object();
        CHECK(mapping.at("properties").at("value").at("type").as_string() == "integer");
        auto info = repository->ReadSnapshotInfo(**snapshot);
        REQUIRE(info.ok());
        CHECK(info->state == "SUCCESS");
        CHECK(ReadAllShardFiles(*repository, **snapshot, "simple_index", 1) > 0);
        auto global = repository->ReadGlobalMetadata(**snapshot);
        INFO(global.status().ToString());
        CHECK(global.ok());
      }
    }
  }
}

TEST_CASE("the newest snapshot is chosen by start time, never guessed", "[snapshot][corpus]") {
  auto root = rfs::test::CorpusRoot("newest snapshot");
  if (!root) return;
  SECTION("ES_7_10_Double lists no start times in index-N: snap-*.dat decides") {
    auto repository = OpenRepository(*root / "es-snapshots/ES_7_10_Double");
    auto latest = repository->LatestSnapshot();
    REQUIRE(latest.ok());
    auto first =
        repository->ReadSnapshotInfo(*repository->FindSnapshot("global_state_snapshot").value());
    auto second =
        repository->ReadSnapshotInfo(*repository->FindSnapshot("global_state_snapshot_2").value());
    REQUIRE(first.ok());
    REQUIRE(second.ok());
    CHECK(second->start_time > first->start_time);
    CHECK((*latest)->name == "global_state_snapshot_2");
  }
  // A copy of the ES 7.17 repository whose index-N is edited: wrong or missing start times.
  const fs::path copy = fs::temp_directory_path() / ("rfs-latest-" + std::to_string(::getpid()));
  fs::remove_all(copy);
  fs::copy(*root / "snapshot-matrix-es1-es9-os1-os3/es7_nocomp", copy, fs::copy_options::recursive);
  for (auto& entry : fs::recursive_directory_iterator(copy)) {
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  std::string index_n;
  {
    std::ifstream in(copy / "index-1", std::ios::binary);
    index_n.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write_index = [&](const std::string& text) {
    std::ofstream(copy / "index-1", std::ios::binary | std::ios::trunc) << text;
  };
  auto without_start_times = [](std::string text) {
    const std::string key = "\"start_time_millis\":";
    for (size_t at; (at = text.find(key)) != std::string::npos;) {
      text.replace(at, key.size(), "\"start_time_ignored\":");
    }
    return text;
  };
  SECTION("an index-N start time that disagrees with snap-*.dat is DataLoss, not a choice") {
    // snapshot_v2 is listed first; give snapshot_v1 a later start time in index-N only.
    const size_t v1 = index_n.find("\"name\":\"snapshot_v1\"");
    const size_t t1 = index_n.find("\"start_time_millis\":", v1);
    REQUIRE(t1 != std::string::npos);
    const size_t digits = t1 + std::string("\"start_time_millis\":").size();
    index_n[digits] = '9';
    write_index(index_n);
    auto repository = OpenRepository(copy);
    auto latest = repository->LatestSnapshot();
    REQUIRE_FALSE(latest.ok());
    CHECK(absl::IsDataLoss(latest.status()));
    CHECK(std::string(latest.status().message()).find("snapshot_v1") != std::string::npos);
    CHECK(std::string(latest.status().message()).find("--snapshot-name") != std::string::npos);
  }
  SECTION("without start times the snapshots' own SnapshotInfo decides") {
    write_index(without_start_times(index_n));
    auto repository = OpenRepository(copy);
    for (const auto& s : repository->snapshots()) CHECK(s.start_time_millis == 0);
    auto latest = repository->LatestSnapshot();
    INFO(latest.status().ToString());
    REQUIRE(latest.ok());
    CHECK((*latest)->name == "snapshot_v2");
  }
  SECTION("an unreadable SnapshotInfo is an error, not a guess") {
    write_index(without_start_times(index_n));
    fs::remove(copy / "snap-SvWHOYyhRc-yCEo4OND5_g.dat");
    auto repository = OpenRepository(copy);
    auto latest = repository->LatestSnapshot();
    REQUIRE_FALSE(latest.ok());
    CHECK(std::string(latest.status().message()).find("--snapshot-name") != std::string::npos);
  }
  fs::remove_all(copy);
}

TEST_CASE("snapshots that started at the same millisecond are an error, not a guess",
          "[snapshot]") {
  // An ES 1.x-style repository: plain JSON blobs, start times only in each SnapshotInfo.
  const fs::path dir = fs::temp_directory_path() / ("rfs-tie-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "index") << R"({"snapshots":["first","second"]})";
  for (const char* name : {"first", "second"}) {
    std::ofstream(dir / (std::string("snapshot-") + name))
        << R"({"snapshot":{"name":")" << name
        << R"(","version_id":1070699,"indices":[],"state":"SUCCESS","start_time":1700000000000,)"
        << R"("end_time":1700000000100,"total_shards":0,"successful_shards":0,"failures":[]}})";
  }
  auto repository = OpenRepository(dir);
  REQUIRE(repository->snapshots().size() == 2);
  auto latest = repository->LatestSnapshot();
  REQUIRE_FALSE(latest.ok());
  CHECK(absl::IsFailedPrecondition(latest.status()));
  CHECK(std::string(latest.status().message()).find("--snapshot-name") != std::string::npos);
  CHECK(std::string(latest.status().message()).find("first, second") != std::string::npos);
  // One snapshot needs no time to be the newest.
  std::ofstream(dir / "index", std::ios::trunc) << R"({"snapshots":["first"]})";
  auto single = OpenRepository(dir);
  CHECK(single->LatestSnapshot().ok());
  fs::remove_all(dir);
}

TEST_CASE("OpenSearch 3 hashed shard paths resolve through snapshot_shard_paths",
          "[snapshot][corpus]") {
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3/os3_nocomp");
  if (!root) return;
  auto repository = OpenRepository(*root);
  auto index = repository->FindIndex("simple_index");
  REQUIRE(index.ok());
  CHECK((*index)->shard_path_type == 1);
  auto folder = repository->ShardFolder(**index, 0);
  REQUIRE(folder.ok());
  CHECK(*folder == "501000001111000/indices/8PQrZ0q_RW2EmjGZxwy2JQ/0");
}

TEST_CASE("Elasticsearch 6.8 and 7.10 repositories: indices, versions and templates",
          "[snapshot][corpus]") {
  auto root = rfs::test::CorpusPath("es-snapshots");
  if (!root) return;

  SECTION("ES_6_8_Single: legacy template, two indices") {
    auto repository = OpenRepository(*root / "ES_6_8_Single");
    CHECK(repository->generation() == 1);
    auto snapshot = repository->FindSnapshot("global_state_snapshot");
    REQUIRE(snapshot.ok());
    CHECK(repository->DetectSourceVersion(**snapshot)->ToString().starts_with("ES 6.8."));
    CHECK(repository->IndicesIn(**snapshot) ==
          std::vector<std::string>{"posts_2023_02_25", "posts_2024_01_01"});
    auto global = repository->ReadGlobalMetadata(**snapshot);
    REQUIRE(global.ok());
    CHECK(global->legacy_templates.contains("posts_index_template"));
    for (const auto& index : repository->IndicesIn(**snapshot)) {
      auto meta = repository->ReadIndexMetadata(**snapshot, index);
      REQUIRE(meta.ok());
      CHECK(ReadAllShardFiles(*repository, **snapshot, index, meta->number_of_shards) > 0);
    }
  }

  SECTION("ES_7_10_Single: component and index templates") {
    auto repository = OpenRepository(*root / "ES_7_10_Single");
    auto snapshot = repository->LatestSnapshot();
    REQUIRE(snapshot.ok());
    CHECK(repository->DetectSourceVersion(**snapshot)->ToString() == "ES 7.10.2");
    auto global = repository->ReadGlobalMetadata(**snapshot);
    REQUIRE(global.ok());
    CHECK(global->index_templates.contains("posts_index_template"));
    CHECK(global->component_templates.contains("posts_template"));
  }

  SECTION("ES_7_10_Double: the second snapshot holds one index") {
    auto repository = OpenRepository(*root / "ES_7_10_Double");
    CHECK(repository->snapshots().size() == 2);
    auto second = repository->FindSnapshot("global_state_snapshot_2");
    REQUIRE(second.ok());
    CHECK(repository->IndicesIn(**second) == std::vector<std::string>{"posts_2024_01_01"});
    auto missing = repository->FindSnapshot("nope");
    CHECK(absl::IsNotFound(missing.status()));
    CHECK(std::string(missing.status().message()).find("global_state_snapshot_2") !=
          std::string::npos);
  }

  SECTION("inspection JSON of ES_7_10_Single") {
    auto repository = OpenRepository(*root / "ES_7_10_Single");
    auto inspection = rfs::snapshot::InspectRepository(*repository, std::nullopt);
    REQUIRE(inspection.ok());
    CHECK(inspection->at("source_version").as_string() == "ES 7.10.2");
    const auto& indices = inspection->at("indices").as_array();
    REQUIRE(indices.size() == 2);
    CHECK(indices[0].at("name").as_string() == "posts_2023_02_25");
    CHECK(indices[0].at("number_of_shards").as_int64() == 1);
    CHECK(indices[0].at("shard_file_bytes").as_uint64() > 0u);
    CHECK(inspection->at("templates").at("index").as_object().contains("posts_index_template"));
    CHECK(!rfs::snapshot::FormatInspection(*inspection).empty());
  }
}

TEST_CASE("OpenSearch 2.11: leftover blobs of an unreferenced snapshot are ignored",
          "[snapshot][corpus]") {
  auto root = rfs::test::CorpusPath(
      "opensearch-2.11-soft-deletes-multiseg/OS_2_11_Deletes_w_Soft_Multi_Seg");
  if (!root) return;
  auto repository = OpenRepository(*root);
  REQUIRE(repository->snapshots().size() == 1);
  CHECK(repository->snapshots()[0].name == "rfs_snapshot");
  auto snapshot = repository->LatestSnapshot();
  REQUIRE(snapshot.ok());
  CHECK(repository->DetectSourceVersion(**snapshot)->ToString() == "OS 2.11.1");
  CHECK(repository->IndicesIn(**snapshot) == std::vector<std::string>{"test-index"});
  CHECK(ReadAllShardFiles(*repository, **snapshot, "test-index", 1) > 0);
}

TEST_CASE("corrupt repository blobs give DataLoss naming the blob", "[snapshot][corpus]") {
  auto source = rfs::test::CorpusPath("es-snapshots/ES_7_10_Single");
  if (!source) return;
  const fs::path copy = fs::temp_directory_path() / ("rfs-corrupt-" + std::to_string(::getpid()));
  fs::remove_all(copy);
  fs::copy(*source, copy, fs::copy_options::recursive);
  for (auto& entry : fs::recursive_directory_iterator(copy)) {
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  auto flip = [](const fs::path& path, size_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(offset);
    char c;
    f.get(c);
    f.seekp(offset);
    f.put(static_cast<char>(c ^ 0x20));
  };

  SECTION("a flipped byte in SnapshotInfo") {
    const fs::path blob = copy / "snap-7_1RHMshSc6c0cuzX1NCDg.dat";
    flip(blob, 40);
    auto repository = OpenRepository(copy);
    // The only snapshot is checked against its SnapshotInfo before it is returned as the newest.
    auto latest = repository->LatestSnapshot();
    REQUIRE_FALSE(latest.ok());
    REQUIRE(repository->snapshots().size() == 1);
    auto info = repository->ReadSnapshotInfo(repository->snapshots()[0]);
    REQUIRE_FALSE(info.ok());
    for (const absl::Status& status : {latest.status(), info.status()}) {
      INFO(status.ToString());
      CHECK(absl::IsDataLoss(status));
      CHECK(std::string(status.message()).find("snap-7_1RHMshSc6c0cuzX1NCDg.dat") !=
            std::string::npos);
      CHECK(std::string(status.message()).find("offset") != std::string::npos);
    }
  }
  SECTION("a truncated shard data blob fails its length check") {
    auto repository = OpenRepository(copy);
    auto snapshot = repository->LatestSnapshot();
    auto shard = repository->ReadShardSnapshot(**snapshot, "posts_2023_02_25", 0);
    REQUIRE(shard.ok());
    auto index = repository->FindIndex("posts_2023_02_25");
    for (const auto& file : shard->files) {
      if (file.is_virtual()) continue;
      fs::resize_file(copy / "indices" / (*index)->id / "0" / file.name, file.length / 2);
      auto directory = repository->OpenShardFiles(**snapshot, "posts_2023_02_25", 0);
      REQUIRE(directory.ok());
      auto opened = (*directory)->OpenFile(file.physical_name);
      CHECK(absl::IsDataLoss(opened.status()));
      CHECK(std::string(opened.status().message()).find(file.physical_name) != std::string::npos);
      break;
    }
  }
  SECTION("a flipped byte inside a Lucene file fails checksum verification") {
    auto repository = OpenRepository(copy);
    auto snapshot = repository->LatestSnapshot();
    auto shard = repository->ReadShardSnapshot(**snapshot, "posts_2023_02_25", 0);
    auto index = repository->FindIndex("posts_2023_02_25");
    for (const auto& file : shard->files) {
      if (file.is_virtual() || file.length < 64) continue;
      flip(copy / "indices" / (*index)->id / "0" / file.name, file.length / 2);
      auto directory =
          repository->OpenShardFiles(**snapshot, "posts_2023_02_25", 0, {.verify_checksums = true});
      REQUIRE(directory.ok());
      auto opened = (*directory)->OpenFile(file.physical_name);
      CHECK(absl::IsDataLoss(opened.status()));
      break;
    }
  }
  SECTION("no repository index at all is NotFound") {
    auto empty = fs::temp_directory_path() / ("rfs-empty-" + std::to_string(::getpid()));
    fs::create_directories(empty);
    auto repo = FileSystemRepo::Open(empty.string());
    REQUIRE(repo.ok());
    CHECK(absl::IsNotFound(SnapshotRepository::Open(*repo).status()));
    fs::remove_all(empty);
  }
  fs::remove_all(copy);
}

TEST_CASE("multi-part files and version ids", "[snapshot]") {
  rfs::snapshot::FileInfo info;
  info.name = "__abc";
  info.length = 10;
  CHECK(info.number_of_parts() == 1);
  CHECK(info.PartName(0) == "__abc");
  info.part_size = 4;
  CHECK(info.number_of_parts() == 3);
  CHECK(info.PartName(2) == "__abc.part2");
  info.part_size = INT64_MAX;
  CHECK(info.number_of_parts() == 1);

  using rfs::snapshot::VersionFromId;
  CHECK(VersionFromId(7100299).ToString() == "ES 7.10.2");
  CHECK(VersionFromId(5061699).ToString() == "ES 5.6.16");
  CHECK(VersionFromId(2110199 ^ 0x08000000).ToString() == "OS 2.11.1");
  CHECK(VersionFromId(8512000).ToString() == "ES 8.x");
  CHECK(VersionFromId(0).ToString() == "unknown");
}
