// Backups of Solr 6 and 7, which do not run here: the full layout (backup.properties, zk_backup/,
// snapshot.shard1/) around an index that Lucene 6.6 and 7.7 themselves write the way Solr of those
// releases keeps each field (test/unit/solr/java/WriteSolrIndex.java: Trie fields, BoolField's
// "T"/"F", point doc values), read as a snapshot and each document rebuilt as /select returns it.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/solr/documents.hpp"

#include "support/iso8601.hpp"
#include "support/java_fixture.hpp"
#include "support/repository_documents.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

void WriteBackupFile(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// The schema of the core WriteSolrIndex.java writes, as Solr 6 and 7 wrote managed-schema.
constexpr std::string_view kOldSchema = R"(<?xml version="1.0" encoding="UTF-8"?>
<schema name="old" version="1.6">
  <uniqueKey>id</uniqueKey>
  <fieldType name="string" class="solr.StrField" sortMissingLast="true"/>
  <fieldType name="strings" class="solr.StrField" multiValued="true"/>
  <fieldType name="tint" class="solr.TrieIntField" precisionStep="8"/>
  <fieldType name="tlong" class="solr.TrieLongField" precisionStep="8"/>
  <fieldType name="tfloat" class="solr.TrieFloatField" precisionStep="8"/>
  <fieldType name="tdate" class="solr.TrieDateField" precisionStep="6"/>
  <fieldType name="boolean" class="solr.BoolField"/>
  <fieldType name="pfloat" class="solr.FloatPointField"/>
  <fieldType name="plongs" class="solr.LongPointField" multiValued="true"/>
  <fieldType name="pdoubles" class="solr.DoublePointField" multiValued="true"/>
  <fieldType name="text_general" class="solr.TextField">
    <analyzer><tokenizer class="solr.StandardTokenizerFactory"/></analyzer>
  </fieldType>
  <field name="id" type="string" indexed="true" stored="true" required="true"/>
  <field name="_version_" type="tlong" indexed="false" stored="false" docValues="true"/>
  <field name="_root_" type="string" indexed="true" stored="false"/>
  <dynamicField name="*_t" type="text_general" indexed="true" stored="true"/>
  <dynamicField name="*_ti" type="tint" indexed="true" stored="true"/>
  <dynamicField name="*_tl" type="tlong" indexed="true" stored="true"/>
  <dynamicField name="*_tf" type="tfloat" indexed="true" stored="true"/>
  <dynamicField name="*_tdt" type="tdate" indexed="true" stored="true"/>
  <dynamicField name="*_b" type="boolean" indexed="true" stored="true"/>
  <dynamicField name="*_ss" type="strings" indexed="true" stored="true"/>
  <dynamicField name="*_pf" type="pfloat" indexed="false" stored="false" docValues="true"/>
  <dynamicField name="*_pls" type="plongs" indexed="false" stored="false" docValues="true"/>
  <dynamicField name="*_pds" type="pdoubles" indexed="false" stored="false" docValues="true"/>
  <dynamicField name="*_sdv" type="strings" indexed="false" stored="false" docValues="true"/>
  <dynamicField name="*_s1dv" type="string" indexed="false" stored="false" docValues="true"/>
</schema>)";

// What Solr's /select returns for document d<i> of the index (the writer's formulas).
json::value Expected(int i, bool doc_values) {
  const int64_t when = 1'500'000'000'000 + int64_t{i} * 86'400'001;
  std::string iso = rfs::test::Iso8601Utc(
      std::chrono::system_clock::time_point(std::chrono::milliseconds(when - when % 1000)));
  if (when % 1000 != 0) {
    iso.insert(iso.size() - 1, "." + std::string(3 - std::to_string(when % 1000).size(), '0') +
                                   std::to_string(when % 1000));
  }
  const std::string tag = "z" + std::to_string(i);
  json::object doc{{"id", "d" + std::to_string(i)},
                   {"title_t", "Title number " + std::to_string(i)},
                   {"n_ti", i * 10},
                   {"big_tl", int64_t{9'000'000'000} + i},
                   {"ratio_tf", i + 0.25},
                   {"when_tdt", iso},
                   {"flag_b", i % 2 == 0},
                   {"tags_ss", json::array{tag, "a", tag}}};
  if (doc_values) {
    doc["score_pf"] = i * 1.5 + 0.5;
    doc["counts_pls"] = json::array{-1, i * 3, i * 3};  // doc-values order: sorted
    doc["ws_pds"] = json::array{-2.25, i + 0.5};
    doc["codes_sdv"] = json::array{"x", "y"};
    doc["kind_s1dv"] = i % 3 == 0 ? "three" : "other";
  }
  return doc;
}

// Lays out a full backup "old" of collection "books" around the written index, reads every
// document of it as a snapshot, and returns them by id.
std::map<std::string, json::value> ReadOldBackup(const fs::path& written,
                                                 const std::string& lucene_version) {
  rfs::test::TempDir location("rfs-old-solr");
  const fs::path backup = location.path() / "old";
  WriteBackupFile(
      backup / "backup.properties",
      "#Backup properties file\ncollection.configName=books_conf\nindexVersion=" + lucene_version +
          "\ncollection=books\nstartTime=2019-01-01T00\\:00\\:00.000Z\n");
  WriteBackupFile(
      backup / "zk_backup" / "collection_state.json",
      R"({"books":{"configName":"books_conf","router":{"name":"compositeId"},)"
      R"("shards":{"shard1":{"range":"80000000-7fffffff","state":"active","replicas":{}}}}})");
  WriteBackupFile(backup / "zk_backup" / "configs" / "books_conf" / "managed-schema", kOldSchema);
  fs::create_directories(backup / "snapshot.shard1");
  for (const auto& file : fs::directory_iterator(written / "index")) {
    if (file.path().filename() == "write.lock") continue;
    fs::copy_file(file.path(), backup / "snapshot.shard1" / file.path().filename());
  }

  auto repo = rfs::snapshot::FileSystemRepo::Open(location.str());
  REQUIRE(repo.ok());
  auto repository = rfs::solr::OpenBackupAsSnapshotRepository(*repo, "old");
  INFO(repository.status().ToString());
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->FindSnapshot("old");
  REQUIRE(snapshot.ok());
  REQUIRE((*repository)->IndicesIn(**snapshot) == std::vector<std::string>{"books"});
  auto metadata = (*repository)->ReadIndexMetadata(**snapshot, "books");
  REQUIRE(metadata.ok());
  rfs::lucene::ShardReaderOptions options;
  auto plan = rfs::solr::RebuildPlanForBackupIndex(*metadata);
  REQUIRE(plan.ok());
  REQUIRE(*plan != nullptr);
  options.rebuild_plan = *plan;
  auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "books", 0, options);
  INFO(reader.status().ToString());
  REQUIRE(reader.ok());
  std::map<std::string, json::value> out;
  rfs::test::ForEachDocument(**reader, [&](const rfs::lucene::Document& doc) {
    CHECK(doc.rebuilt);
    out[doc.id] = json::parse(
        std::string_view(reinterpret_cast<const char*>(doc.source.data()), doc.source.size()));
  });
  return out;
}

void CheckDocuments(const std::map<std::string, json::value>& read, bool doc_values) {
  // d2 is deleted; the child of d5 is a document of its own (Solr 6/7 keep no nest path).
  std::map<std::string, json::value> expected;
  for (int i : {0, 1, 3, 4, 5, 6, 7}) expected["d" + std::to_string(i)] = Expected(i, doc_values);
  expected["d5-child"] = json::object{{"id", "d5-child"}, {"n_ti", 1}};
  CHECK(read.size() == expected.size());
  for (const auto& [id, doc] : expected) {
    INFO(id << ": expected " << json::serialize(doc) << "\nread     "
            << (read.count(id) ? json::serialize(read.at(id)) : std::string("(none)")));
    REQUIRE(read.count(id) == 1);
    CHECK(read.at(id) == doc);
  }
}

std::string LuceneJar(const std::string& version) {
  return std::string(RFS_MAVEN_REPO) + "/org/apache/lucene/lucene-core/" + version +
         "/lucene-core-" + version + ".jar";
}

TEST_CASE("A Solr 7 backup (Lucene 7.7, Trie fields, point doc values) read as /select returns it",
          "[solr]") {
  const fs::path written = rfs::test::JavaWrittenFixture(
      std::string(RFS_SOLR_INDEX_DIR) + "-7", RFS_JAVA, LuceneJar("7.7.3"), RFS_SOLR_WRITER_SOURCE,
      {"--doc-values"}, "written");
  CheckDocuments(ReadOldBackup(written, "7.7.3"), /*doc_values=*/true);
}

TEST_CASE("A Solr 6 backup (Lucene 6.6, stored fields) read as /select returns it", "[solr]") {
  const fs::path written =
      rfs::test::JavaWrittenFixture(std::string(RFS_SOLR_INDEX_DIR) + "-6", RFS_JAVA,
                                    LuceneJar("6.6.1"), RFS_SOLR_WRITER_SOURCE, {}, "written");
  CheckDocuments(ReadOldBackup(written, "6.6.1"), /*doc_values=*/false);
}

}  // namespace
