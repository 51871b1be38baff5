// No silent wrong results: one flipped byte at many offsets of every blob of a shard (Lucene
// data blobs, the shard's snap-*.dat and index-N) must give an error or exactly the documents of
// the intact shard; never a resurrected deleted document, a lost live one or a changed source.
// Runs over a generated repository with soft deletes in several segments, one with hard deletes
// in compound files, and the corpus's real soft-deletes repositories (ES 7.10, OpenSearch 2.11).
#include <map>
#include <random>
#include <set>

#include <catch2/catch.hpp>

#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/parallel_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/corpus.hpp"
#include "support/flipping_repo.hpp"
#include "support/generated_repo.hpp"

namespace {

namespace fs = std::filesystem;
using rfs::snapshot::ISourceRepo;

using rfs::test::FlippingRepo;

struct Doc {
  std::string source;
  std::optional<std::string> routing;
  std::optional<std::string> type;
  bool operator==(const Doc&) const = default;
};
using Docs = std::map<std::string, Doc>;

// Reads the shard from cursor `start` with a DocumentCursor, or with a ParallelDocumentReader of
// `threads` threads over small ranges (so every thread opens every segment).
absl::StatusOr<Docs> ReadShard(std::shared_ptr<const ISourceRepo> repo, const std::string& snapshot,
                               const std::string& index, int shard, int threads = 0,
                               uint64_t start = 0) {
  auto repository = rfs::snapshot::SnapshotRepository::Open(std::move(repo));
  if (!repository.ok()) return repository.status();
  auto entry = (*repository)->FindSnapshot(snapshot);
  if (!entry.ok()) return entry.status();
  auto reader = rfs::lucene::OpenSnapshotShard(**repository, **entry, index, shard);
  if (!reader.ok()) return reader.status();
  std::unique_ptr<rfs::lucene::IDocumentReader> cursor;
  if (threads == 0) {
    auto serial = (*reader)->OpenAt(start);
    if (!serial.ok()) return serial.status();
    cursor = *std::move(serial);
  } else {
    rfs::lucene::ParallelReadOptions options;
    options.threads = threads;
    options.range_docs = 7;
    auto parallel = rfs::lucene::ParallelDocumentReader::Open(**reader, start, options);
    if (!parallel.ok()) return parallel.status();
    cursor = *std::move(parallel);
  }
  Docs docs;
  rfs::lucene::Document doc;
  while (true) {
    auto more = cursor->Next(doc);
    if (!more.ok()) return more.status();
    if (!*more) break;
    auto [it, inserted] = docs.emplace(
        doc.id, Doc{std::string(doc.source.begin(), doc.source.end()), doc.routing, doc.type});
    if (!inserted) return absl::InternalError("duplicate live id " + doc.id);
  }
  return docs;
}

// Offsets to flip in a blob of `size` bytes: all of a small blob; of a larger one the first and
// last 96 bytes (headers, footers, metadata tails) and 160 spread over the rest.
std::vector<uint64_t> Offsets(uint64_t size, std::mt19937_64& random) {
  std::set<uint64_t> out;
  if (size <= 384) {
    for (uint64_t i = 0; i < size; ++i) out.insert(i);
  } else {
    for (uint64_t i = 0; i < 96; ++i) {
      out.insert(i);
      out.insert(size - 1 - i);
    }
    std::uniform_int_distribution<uint64_t> pick(96, size - 97);
    for (int i = 0; i < 160; ++i) out.insert(pick(random));
  }
  return {out.begin(), out.end()};
}

struct SweepResult {
  size_t reads = 0;
  size_t errors = 0;
  size_t identical = 0;
};

// Flips bytes in every blob of the shard's folder and checks each read.
SweepResult Sweep(const fs::path& root, const std::string& index, int shard) {
  auto base = rfs::snapshot::FileSystemRepo::Open(root.string());
  REQUIRE(base.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*base);
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->LatestSnapshot();
  REQUIRE(snapshot.ok());
  const std::string snapshot_name = (*snapshot)->name;
  auto index_entry = (*repository)->FindIndex(index);
  REQUIRE(index_entry.ok());
  auto folder = (*repository)->ShardFolder(**index_entry, shard);
  REQUIRE(folder.ok());
  auto blobs = (*base)->ListBlobs(*folder);
  REQUIRE(blobs.ok());
  REQUIRE(blobs->size() >= 3);

  auto pristine = ReadShard(*base, snapshot_name, index, shard);
  INFO(pristine.status().ToString());
  REQUIRE(pristine.ok());
  REQUIRE(!pristine->empty());

  auto flipping = std::make_shared<FlippingRepo>(*base);
  std::mt19937_64 random(20261124);
  SweepResult result;
  for (const auto& blob : *blobs) {
    const std::string path = rfs::core::StrCat(*folder, "/", blob);
    auto size = (*base)->BlobSize(path);
    REQUIRE(size.ok());
    for (uint64_t offset : Offsets(*size, random)) {
      flipping->Flip(path, offset);
      auto docs = ReadShard(flipping, snapshot_name, index, shard);
      ++result.reads;
      if (!docs.ok()) {
        ++result.errors;
        continue;
      }
      INFO(path << " byte " << offset << " flipped: read succeeded with different documents ("
                << docs->size() << " vs " << pristine->size() << ")");
      REQUIRE(*docs == *pristine);
      ++result.identical;
    }
  }

  // The parallel reader verifies the stored fields of the segments it reads whole from the chunks
  // its threads decode, and a segment it starts inside with one pass per reader: bytes flipped
  // inside the largest blob (the stored fields' compressed chunks) must fail either way.
  std::string largest;
  uint64_t largest_size = 0;
  for (const auto& blob : *blobs) {
    const std::string path = rfs::core::StrCat(*folder, "/", blob);
    if (auto size = (*base)->BlobSize(path); size.ok() && *size > largest_size) {
      largest = path;
      largest_size = *size;
    }
  }
  REQUIRE(largest_size > 400);
  for (uint64_t start : {uint64_t{0}, uint64_t{1}}) {
    auto intact = ReadShard(*base, snapshot_name, index, shard, /*threads=*/0, start);
    REQUIRE(intact.ok());
    for (int i = 0; i < 12; ++i) {
      const uint64_t offset = 200 + (largest_size - 400) * static_cast<uint64_t>(i) / 12;
      flipping->Flip(largest, offset);
      auto docs = ReadShard(flipping, snapshot_name, index, shard, /*threads=*/2, start);
      ++result.reads;
      if (!docs.ok()) {
        ++result.errors;
        continue;
      }
      INFO(largest << " byte " << offset << " flipped, read from cursor " << start
                   << ": the parallel read succeeded with different documents");
      REQUIRE(*docs == *intact);
      ++result.identical;
    }
  }
  return result;
}

}  // namespace

namespace {

// One generated repository swept whole. Each layout is a test case of its own, so that ctest runs
// them side by side (together they are the suite's longest case).
void SweepGenerated(const char* args) {
  auto generated = rfs::test::Generate(args);
  REQUIRE(generated.has_value());
  const SweepResult result = Sweep(generated->repo(), "index-0", 0);
  CHECK(result.errors > 0);
  CHECK(result.identical > 0);
  std::cout << args << ": " << result.reads << " reads, " << result.errors << " errors, "
            << result.identical << " identical\n";
}

}  // namespace

TEST_CASE("one flipped byte in a generated shard with soft deletes in several segments",
          "[lucene][generated][corrupt]") {
  // The __soft_deletes doc values decide liveness.
  SweepGenerated(
      "--docs 150 --updates 40 --deletes 30 --segments 3 --routing-fraction 0.3 --seed 121");
}

TEST_CASE("one flipped byte in a generated shard with hard deletes in compound files",
          "[lucene][generated][corrupt]") {
  // .liv files inside compound files, with best_compression stored fields.
  SweepGenerated(
      "--docs 150 --updates 20 --deletes 25 --segments 2 --soft-deletes false --compound true "
      "--codec best_compression --seed 122");
}

TEST_CASE("one flipped byte in a generated shard with zstd stored fields and zstd metadata",
          "[lucene][generated][corrupt]") {
  // Elasticsearch 8.14+'s zstd stored fields and OpenSearch's ZSTD\0 metadata blobs.
  SweepGenerated(
      "--docs 150 --updates 20 --deletes 25 --segments 2 --codec zstd814_best_speed "
      "--compress-metadata true --metadata-compressor zstd --seed 123");
}

TEST_CASE("one flipped byte in a generated shard with OpenSearch's zstd dictionary layout",
          "[lucene][generated][corrupt]") {
  SweepGenerated(
      "--docs 150 --updates 20 --deletes 25 --segments 2 --soft-deletes false --codec zstd "
      "--seed 124");
}

TEST_CASE("one flipped byte in the corpus's soft-deletes shards: an error or the right documents",
          "[lucene][corpus][corrupt]") {
  struct Case {
    const char* repo;
    const char* index;
  };
  const Case cases[] = {
      {"es-snapshots/ES_7_10_Updates_Deletes_w_Soft", nullptr},
      {"opensearch-2.11-soft-deletes-multiseg/OS_2_11_Deletes_w_Soft_Multi_Seg", "test-index"},
  };
  for (const auto& c : cases) {
    SECTION(c.repo) {
      auto root = rfs::test::CorpusPath(c.repo);
      if (!root) return;
      std::string index = c.index ? c.index : "";
      if (index.empty()) {
        auto base = rfs::snapshot::FileSystemRepo::Open(root->string());
        REQUIRE(base.ok());
        auto repository = rfs::snapshot::SnapshotRepository::Open(*base);
        REQUIRE(repository.ok());
        auto indices = (*repository)->IndicesIn(**(*repository)->LatestSnapshot());
        REQUIRE(!indices.empty());
        index = indices.front();
      }
      const SweepResult result = Sweep(*root, index, 0);
      CHECK(result.errors > 0);
      std::cout << c.repo << ": " << result.reads << " reads, " << result.errors << " errors, "
                << result.identical << " identical\n";
    }
  }
}

TEST_CASE("an error inside a compound file names the repository blob that holds it",
          "[lucene][generated][corrupt]") {
  auto generated =
      rfs::test::Generate("--docs 80 --segments 1 --soft-deletes false --compound true --seed 125");
  REQUIRE(generated.has_value());
  auto base = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(base.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*base);
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->LatestSnapshot();
  REQUIRE(snapshot.ok());
  auto shard = (*repository)->ReadShardSnapshot(**snapshot, "index-0", 0);
  REQUIRE(shard.ok());
  auto index_entry = (*repository)->FindIndex("index-0");
  REQUIRE(index_entry.ok());
  auto folder = (*repository)->ShardFolder(**index_entry, 0);
  REQUIRE(folder.ok());
  std::string cfs_blob;
  uint64_t cfs_size = 0;
  for (const auto& file : shard->files) {
    if (file.physical_name.ends_with(".cfs")) {
      cfs_blob = rfs::core::StrCat(*folder, "/", file.name);
      cfs_size = file.length;
    }
  }
  REQUIRE(!cfs_blob.empty());
  auto flipping = std::make_shared<FlippingRepo>(*base);
  size_t errors = 0;
  for (int i = 1; i < 8; ++i) {
    flipping->Flip(cfs_blob, cfs_size * static_cast<uint64_t>(i) / 8);
    auto docs = ReadShard(flipping, (*snapshot)->name, "index-0", 0);
    if (docs.ok()) continue;
    ++errors;
    INFO(docs.status().ToString());
    CHECK(docs.status().message().find(cfs_blob) != std::string_view::npos);
  }
  CHECK(errors > 0);
}
