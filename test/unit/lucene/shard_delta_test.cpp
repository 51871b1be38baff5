// Deltas between the two snapshots of each corpus matrix repository (Elasticsearch 1.7 to 9.0,
// OpenSearch 1.3 to 3.1: snapshot_v1 holds doc 1, snapshot_v2 adds doc 2 in a new segment).
#include "rfs/lucene/shard_delta.hpp"

#include <filesystem>

#include <catch2/catch.hpp>

#include "rfs/snapshot/source_repo.hpp"

#include "support/corpus.hpp"
#include "support/snapshot_delta.hpp"

namespace {

namespace fs = std::filesystem;

TEST_CASE("delta modes parse by the Java tool's names", "[lucene][delta]") {
  using rfs::lucene::DeltaMode;
  CHECK(rfs::lucene::ParseDeltaMode("UPDATES_ONLY") == DeltaMode::kUpdatesOnly);
  CHECK(rfs::lucene::ParseDeltaMode("updates-and-deletes") == DeltaMode::kUpdatesAndDeletes);
  CHECK(rfs::lucene::ParseDeltaMode("DELETES_ONLY") == DeltaMode::kDeletesOnly);
  CHECK_FALSE(rfs::lucene::ParseDeltaMode("everything").has_value());
  CHECK(rfs::lucene::DeltaModeName(DeltaMode::kDeletesOnly) == "DELETES_ONLY");
}

TEST_CASE("the delta between the matrix snapshots of every engine version sends only doc 2",
          "[lucene][delta][corpus]") {
  auto root = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3");
  if (!root) return;
  size_t repositories = 0;
  for (const auto& entry : fs::directory_iterator(*root)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    INFO(name);
    auto base = rfs::snapshot::FileSystemRepo::Open(entry.path().string());
    REQUIRE(base.ok());
    auto repository = rfs::snapshot::SnapshotRepository::Open(*base);
    REQUIRE(repository.ok());
    auto v1 = (*repository)->FindSnapshot("snapshot_v1");
    auto v2 = (*repository)->FindSnapshot("snapshot_v2");
    REQUIRE(v1.ok());
    REQUIRE(v2.ok());
    const auto check = rfs::test::CheckSnapshotDelta(**repository, **v1, **v2);
    CHECK(check.shards == 1);
    CHECK(check.docs_after == 2);
    // Doc 1's segment is in both snapshots: never decoded; doc 2 alone is sent.
    CHECK(check.stats.segments_shared == 1);
    CHECK(check.stats.previous_docs_read == 0);
    CHECK(check.stats.docs_to_index == 1);
    CHECK(check.stats.docs_to_delete == 0);
    // The other way round, doc 2 is deleted and nothing is sent.
    const auto back = rfs::test::CheckSnapshotDelta(**repository, **v2, **v1);
    CHECK(back.stats.docs_to_index == 0);
    CHECK(back.stats.docs_to_delete == 1);
    ++repositories;
  }
  CHECK(repositories == 10);
}

}  // namespace
