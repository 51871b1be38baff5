// rfs::solr::SolrBackupLocation over backup folders laid out here as Solr 9.10 writes them (the
// names, properties and JSON are those of a real Solr's BACKUP of a two-shard collection, see
// test/real-nodes/solr), and ParseJavaProperties over java.util.Properties' grammar.
#include "rfs/solr/backup.hpp"

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "rfs/core/crc32.hpp"

#include "support/temp_dir.hpp"

namespace {

using rfs::solr::BackupLayout;
using rfs::solr::ParseJavaProperties;
using rfs::solr::SolrBackupLocation;
namespace fs = std::filesystem;

void Write(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// `body` followed by a Lucene codec footer (magic, algorithm 0, CRC-32 of all before it as a
// big-endian long): what CodecUtil.retrieveChecksum reads back.
std::string LuceneFile(std::string body, uint32_t* checksum) {
  const auto be32 = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) body.push_back(static_cast<char>(v >> shift));
  };
  be32(0xC02893E8u);
  be32(0);
  const uint32_t crc = rfs::core::Crc32(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  be32(0);
  be32(crc);
  *checksum = crc;
  return body;
}

SolrBackupLocation Location(const rfs::test::TempDir& dir) {
  auto repo = rfs::snapshot::FileSystemRepo::Open(dir.str());
  REQUIRE(repo.ok());
  return SolrBackupLocation(*repo);
}

constexpr std::string_view kCollectionState = R"({"books":{
    "pullReplicas":"0",
    "configName":"books.AUTOCREATED",
    "router":{"name":"compositeId"},
    "shards":{
      "shard1":{"range":"80000000-ffffffff","state":"active","replicas":{}},
      "shard2":{"range":"0-7fffffff","state":"active","replicas":{}}}}})";

// An incremental backup "b1" of collection "books" with points 0 and 1; point 1 adds a segment
// to shard1. Returns the checksum of shard1's _1.si.
uint32_t WriteIncremental(const fs::path& location) {
  const fs::path root = location / "b1" / "books";
  uint32_t seg0 = 0, seg1 = 0, si0 = 0, si1 = 0;
  Write(root / "index" / "u-seg0", LuceneFile("segments-body-0", &seg0));
  Write(root / "index" / "u-si0", LuceneFile("si-body-0", &si0));
  Write(root / "index" / "u-seg1", LuceneFile("segments-body-1", &seg1));
  Write(root / "index" / "u-si1", LuceneFile("si-body-1", &si1));
  for (int id : {0, 1}) {
    Write(root / ("backup_" + std::to_string(id) + ".properties"),
          "#Backup properties file\n#Wed Dec 02 14:19:07 UTC 2026\nindexFileCount=2\n"
          "shard2.md=md_shard2_" +
              std::to_string(id) +
              ".json\n"
              "collection.configName=books.AUTOCREATED\nshard1.md=md_shard1_" +
              std::to_string(id) +
              ".json\nindexVersion=9.12.3\ncollection=books\ncollectionAlias=books\n"
              "startTime=2026-12-02T14\\:19\\:0" +
              std::to_string(id) + ".888967255Z\nbackupName=b1\n");
    Write(root / ("zk_backup_" + std::to_string(id)) / "collection_state.json", kCollectionState);
    Write(root / ("zk_backup_" + std::to_string(id)) / "configs" / "books.AUTOCREATED" /
              "managed-schema.xml",
          "<schema name=\"s" + std::to_string(id) + "\"/>");
  }
  const auto entry = [](const char* unique, const char* name, size_t size, uint32_t crc) {
    return "\"" + std::string(unique) + "\":{\"fileName\":\"" + name +
           "\",\"size\":" + std::to_string(size) + ",\"checksum\":" + std::to_string(crc) + "}";
  };
  const size_t n0 = fs::file_size(root / "index" / "u-seg0");
  const size_t s0 = fs::file_size(root / "index" / "u-si0");
  const size_t n1 = fs::file_size(root / "index" / "u-seg1");
  const size_t s1 = fs::file_size(root / "index" / "u-si1");
  Write(
      root / "shard_backup_metadata" / "md_shard1_0.json",
      "{" + entry("u-seg0", "segments_2", n0, seg0) + "," + entry("u-si0", "_0.si", s0, si0) + "}");
  Write(root / "shard_backup_metadata" / "md_shard2_0.json",
        "{" + entry("u-seg0", "segments_2", n0, seg0) + "}");
  Write(root / "shard_backup_metadata" / "md_shard1_1.json",
        "{" + entry("u-seg1", "segments_3", n1, seg1) + "," + entry("u-si0", "_0.si", s0, si0) +
            "," + entry("u-si1", "_1.si", s1, si1) + "}");
  Write(root / "shard_backup_metadata" / "md_shard2_1.json",
        "{" + entry("u-seg0", "segments_2", n0, seg0) + "}");
  return si1;
}

TEST_CASE("ParseJavaProperties reads java.util.Properties' grammar", "[solr]") {
  auto p = ParseJavaProperties(
      "# comment\n! also a comment\n  a = 1\nb:2\nc 3\nd=x\\:y\\=z\\\\\n"
      "e=line one \\\n    continued\nf=\\u00e9\\u4e2d\\ud83d\\ude00\ng=tab\\there\n"
      "key\\ with\\ blanks=v\r\nh\n",
      "test.properties");
  REQUIRE(p.ok());
  CHECK(p->at("a") == "1");
  CHECK(p->at("b") == "2");
  CHECK(p->at("c") == "3");
  CHECK(p->at("d") == "x:y=z\\");
  CHECK(p->at("e") == "line one continued");
  CHECK(p->at("f") == "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
  CHECK(p->at("g") == "tab\there");
  CHECK(p->at("key with blanks") == "v");
  CHECK(p->at("h").empty());
  CHECK(p->size() == 9);

  auto bad = ParseJavaProperties("x=1\ny=\\u12g4\n", "bad.properties");
  REQUIRE(absl::IsDataLoss(bad.status()));
  CHECK(bad.status().message().find("bad.properties: line 2") != std::string::npos);
}

TEST_CASE("an incremental Solr backup: the newest point, or the one named", "[solr]") {
  rfs::test::TempDir dir;
  const uint32_t si1 = WriteIncremental(dir.path());
  const SolrBackupLocation location = Location(dir);

  auto list = location.ListBackups();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 1);
  CHECK((*list)[0].name == "b1");
  CHECK((*list)[0].layout == BackupLayout::kIncremental);
  CHECK((*list)[0].collections == std::vector<std::string>{"books"});
  CHECK((*list)[0].backup_ids == std::vector<int>{0, 1});

  auto backup = location.ReadBackup("b1");
  INFO(backup.status().ToString());
  REQUIRE(backup.ok());
  CHECK(backup->backup_id == 1);
  CHECK(backup->collection == "books");
  CHECK(backup->config_name == "books.AUTOCREATED");
  CHECK(backup->lucene_version == "9.12.3");
  CHECK(backup->start_time == "2026-12-02T14:19:01.888967255Z");
  REQUIRE(backup->shards.size() == 2);
  const auto& shard1 = backup->shards[0];
  CHECK(shard1.name == "shard1");
  CHECK(shard1.range == "80000000-ffffffff");
  REQUIRE(shard1.files.size() == 3);
  CHECK(shard1.files[0].lucene_name == "_0.si");
  CHECK(shard1.files[1].lucene_name == "_1.si");
  CHECK(shard1.files[1].blob == "b1/books/index/u-si1");
  CHECK(shard1.files[1].checksum == si1);
  CHECK(shard1.files[2].lucene_name == "segments_3");

  auto schema = location.ReadSchema(*backup);
  REQUIRE(schema.ok());
  CHECK(schema->file == "managed-schema.xml");
  CHECK(schema->text == "<schema name=\"s1\"/>");
  auto config = location.ListConfigFiles(*backup);
  REQUIRE(config.ok());
  CHECK(*config == std::vector<std::string>{"managed-schema.xml"});

  auto directory = location.OpenShardFiles(*backup, "shard1", /*verify_checksums=*/true);
  REQUIRE(directory.ok());
  CHECK((*directory)->ListFiles() == std::vector<std::string>{"_0.si", "_1.si", "segments_3"});
  for (const std::string& name : (*directory)->ListFiles()) {
    auto file = (*directory)->OpenFile(name);
    INFO(name << ": " << file.status().ToString());
    CHECK(file.ok());
  }
  CHECK(absl::IsNotFound(location.OpenShardFiles(*backup, "shard9").status()));

  auto first = location.ReadBackup("b1", {.backup_id = 0});
  REQUIRE(first.ok());
  CHECK(first->backup_id == 0);
  CHECK(first->shards[0].files.size() == 2);
  auto first_schema = location.ReadSchema(*first);
  REQUIRE(first_schema.ok());
  CHECK(first_schema->text == "<schema name=\"s0\"/>");

  auto missing_point = location.ReadBackup("b1", {.backup_id = 7});
  CHECK(absl::IsInvalidArgument(missing_point.status()));
  CHECK(missing_point.status().message().find("has 0, 1") != std::string::npos);
  auto missing_name = location.ReadBackup("nope");
  CHECK(absl::IsNotFound(missing_name.status()));
  CHECK(missing_name.status().message().find("it holds: b1") != std::string::npos);
  CHECK(absl::IsInvalidArgument(location.ReadBackup("b1", {.collection = "other"}).status()));
}

TEST_CASE("a damaged incremental Solr backup fails naming the file", "[solr]") {
  rfs::test::TempDir dir;
  WriteIncremental(dir.path());
  const fs::path root = dir.path() / "b1" / "books";

  SECTION("a changed index file fails its checksum when verified") {
    // Same size, other bytes: only the footer check notices.
    std::string bytes;
    {
      std::ifstream in(root / "index" / "u-si1", std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    bytes[0] ^= 1;
    Write(root / "index" / "u-si1", bytes);
    const SolrBackupLocation location = Location(dir);
    auto backup = location.ReadBackup("b1");
    REQUIRE(backup.ok());
    auto unverified = location.OpenShardFiles(*backup, "shard1");
    REQUIRE(unverified.ok());
    CHECK((*unverified)->OpenFile("_1.si").ok());
    auto directory = location.OpenShardFiles(*backup, "shard1", true);
    REQUIRE(directory.ok());
    auto file = (*directory)->OpenFile("_1.si");
    REQUIRE(absl::IsDataLoss(file.status()));
    CHECK(file.status().message().find("_1.si (b1/books/index/u-si1)") != std::string::npos);
  }
  SECTION("a truncated index file") {
    Write(root / "index" / "u-si1", "short");
    const SolrBackupLocation location = Location(dir);
    auto backup = location.ReadBackup("b1");
    REQUIRE(backup.ok());
    auto directory = location.OpenShardFiles(*backup, "shard1");
    REQUIRE(directory.ok());
    auto file = (*directory)->OpenFile("_1.si");
    REQUIRE(absl::IsDataLoss(file.status()));
    CHECK(file.status().message().find("_1.si") != std::string::npos);
  }
  SECTION("a missing shard metadata file") {
    fs::remove(root / "shard_backup_metadata" / "md_shard2_1.json");
    auto backup = Location(dir).ReadBackup("b1");
    REQUIRE(absl::IsDataLoss(backup.status()));
    CHECK(backup.status().message().find("md_shard2_1.json") != std::string::npos);
  }
  SECTION("shard metadata that is not JSON") {
    Write(root / "shard_backup_metadata" / "md_shard1_1.json", "{\"x\":");
    auto backup = Location(dir).ReadBackup("b1");
    REQUIRE(absl::IsDataLoss(backup.status()));
    CHECK(backup.status().message().find("md_shard1_1.json") != std::string::npos);
  }
  SECTION("a file name that leaves the folder") {
    Write(root / "shard_backup_metadata" / "md_shard1_1.json",
          R"({"../../x":{"fileName":"segments_3","size":1,"checksum":1}})");
    auto backup = Location(dir).ReadBackup("b1");
    REQUIRE_FALSE(backup.ok());
    CHECK(backup.status().message().find("md_shard1_1.json") != std::string::npos);
  }
  SECTION("a checksum that is no CRC-32") {
    Write(root / "shard_backup_metadata" / "md_shard1_1.json",
          R"({"u":{"fileName":"segments_3","size":1,"checksum":-5}})");
    auto backup = Location(dir).ReadBackup("b1");
    REQUIRE(absl::IsDataLoss(backup.status()));
    CHECK(backup.status().message().find("'checksum'") != std::string::npos);
  }
  SECTION("a shard the collection state does not list") {
    Write(root / "zk_backup_1" / "collection_state.json",
          R"({"books":{"shards":{"shard1":{"range":"0-1"}}}})");
    auto backup = Location(dir).ReadBackup("b1");
    REQUIRE(absl::IsDataLoss(backup.status()));
    CHECK(backup.status().message().find("shard2") != std::string::npos);
  }
  SECTION("no collection state") {
    fs::remove(root / "zk_backup_1" / "collection_state.json");
    auto backup = Location(dir).ReadBackup("b1");
    REQUIRE(absl::IsDataLoss(backup.status()));
    CHECK(backup.status().message().find("zk_backup_1/collection_state.json") != std::string::npos);
  }
}

TEST_CASE("a full (non-incremental) Solr backup and a core backup", "[solr]") {
  rfs::test::TempDir dir;
  uint32_t crc = 0;
  Write(dir.path() / "full1" / "backup.properties",
        "#Backup properties file\nindexFileCount=3\ncollection.configName=books.AUTOCREATED\n"
        "indexVersion=9.12.3\ncollection=books\ncollectionAlias=books\n"
        "startTime=2026-12-02T14\\:19\\:12.958811134Z\nbackupName=full1\n");
  Write(dir.path() / "full1" / "zk_backup" / "collection_state.json", kCollectionState);
  Write(dir.path() / "full1" / "zk_backup" / "configs" / "books.AUTOCREATED" / "managed-schema",
        "<schema/>");
  Write(dir.path() / "full1" / "snapshot.shard1" / "segments_2", LuceneFile("a", &crc));
  Write(dir.path() / "full1" / "snapshot.shard1" / "_0.si", LuceneFile("b", &crc));
  Write(dir.path() / "full1" / "snapshot.shard2" / "segments_1", LuceneFile("c", &crc));
  Write(dir.path() / "snapshot.core1" / "segments_4", LuceneFile("d", &crc));
  Write(dir.path() / "snapshot.core1" / "_3.si", LuceneFile("e", &crc));
  Write(dir.path() / "unrelated" / "notes.txt", "x");
  const SolrBackupLocation location = Location(dir);

  auto list = location.ListBackups();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].name == "full1");
  CHECK((*list)[0].layout == BackupLayout::kFull);
  CHECK((*list)[0].collections == std::vector<std::string>{"books"});
  CHECK((*list)[1].name == "snapshot.core1");
  CHECK((*list)[1].layout == BackupLayout::kCore);

  auto full = location.ReadBackup("full1");
  INFO(full.status().ToString());
  REQUIRE(full.ok());
  CHECK(full->layout == BackupLayout::kFull);
  CHECK(full->collection == "books");
  CHECK(full->backup_id == -1);
  REQUIRE(full->shards.size() == 2);
  CHECK(full->shards[0].name == "shard1");
  CHECK(full->shards[0].range == "80000000-ffffffff");
  REQUIRE(full->shards[0].files.size() == 2);
  CHECK(full->shards[0].files[1].blob == "full1/snapshot.shard1/segments_2");
  CHECK_FALSE(full->shards[0].files[1].checksum.has_value());
  auto schema = location.ReadSchema(*full);
  REQUIRE(schema.ok());
  CHECK(schema->file == "managed-schema");

  // A core backup is found by its folder's name or by its name without "snapshot.".
  for (const char* name : {"snapshot.core1", "core1"}) {
    auto core = location.ReadBackup(name);
    INFO(name << ": " << core.status().ToString());
    REQUIRE(core.ok());
    CHECK(core->layout == BackupLayout::kCore);
    CHECK(core->collection == "core1");
    REQUIRE(core->shards.size() == 1);
    CHECK(core->shards[0].files.size() == 2);
    CHECK(absl::IsNotFound(location.ReadSchema(*core).status()));
    auto directory = location.OpenShardFiles(*core, "core1", true);
    REQUIRE(directory.ok());
    CHECK((*directory)->OpenFile("segments_4").ok());
  }

  SECTION("a full backup missing an active shard's folder") {
    fs::remove_all(dir.path() / "full1" / "snapshot.shard2");
    auto damaged = location.ReadBackup("full1");
    REQUIRE(absl::IsDataLoss(damaged.status()));
    CHECK(damaged.status().message().find("snapshot.shard2") != std::string::npos);
  }
  SECTION("a folder that is no backup") {
    auto unrelated = location.ReadBackup("unrelated");
    REQUIRE(absl::IsDataLoss(unrelated.status()));
    CHECK(unrelated.status().message().find("not a Solr backup") != std::string::npos);
  }
}

}  // namespace
