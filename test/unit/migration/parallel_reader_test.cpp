// lucene::ParallelDocumentReader against a DocumentCursor on real Lucene shards (generated with
// several segments, updates and deletes): the same documents in the same order with the same
// positions, whatever the threads, range size and memory budget, from any start, and a reader
// dropped part-way stops cleanly.
#include "rfs/lucene/parallel_reader.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/json_string.hpp"
#include "rfs/core/memory_budget.hpp"
#include "rfs/core/memory_pages.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/generated_repo.hpp"
#include "support/scattered_repo.hpp"

namespace {

using Row = std::tuple<uint64_t, std::string, std::string, std::string, uint64_t>;

// (cursor, id, routing, source, position after) of every document `reader` returns.
std::vector<Row> ReadAll(rfs::lucene::IDocumentReader& reader, size_t limit = SIZE_MAX) {
  std::vector<Row> rows;
  rfs::lucene::Document doc;
  while (rows.size() < limit) {
    auto more = reader.Next(doc);
    REQUIRE(more.ok());
    if (!*more) break;
    rows.emplace_back(doc.cursor, doc.id, doc.routing.value_or(""),
                      std::string(doc.source.begin(), doc.source.end()), reader.position());
  }
  return rows;
}

// Runs `body(repository, snapshot)` (both checked) on a generated repository: 2 shards of several
// segments with updates and deletes.
template <typename Body>
void WithGeneratedRepository(
    Body body,
    const std::string& args =
        "--indices 1 --shards 2 --docs 3000 --updates 200 --deletes 150 --segments 4 --seed 91") {
  auto generated = rfs::test::Generate(args);
  auto source = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(source.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*source);
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->LatestSnapshot();
  REQUIRE(snapshot.ok());
  body(repository, snapshot);
}

// The cursors of the live documents in [start, end) as a serial DocumentCursor reads them.
std::vector<uint64_t> SerialCursors(const rfs::lucene::ShardReader& reader, uint64_t start,
                                    uint64_t end) {
  auto serial = reader.OpenAt(start);
  REQUIRE(serial.ok());
  std::vector<uint64_t> cursors;
  rfs::lucene::Document doc;
  while (true) {
    auto more = (*serial)->Next(doc);
    REQUIRE(more.ok());
    if (!*more || doc.cursor >= end) break;
    cursors.push_back(doc.cursor);
  }
  return cursors;
}

// The folder of a repository generated (or reused) for generator options `args`.
std::shared_ptr<const rfs::snapshot::ISourceRepo> GeneratedFolder(const std::string& args) {
  const auto generated = rfs::test::Generate(args);
  auto folder = rfs::snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(folder.ok());
  return *std::move(folder);
}

// Index-0's shard 0 of `repo`'s latest snapshot, with the repository it reads from.
struct ShardZero {
  std::unique_ptr<rfs::snapshot::SnapshotRepository> repository;
  std::unique_ptr<rfs::lucene::ShardReader> reader;
};
ShardZero OpenShardZero(std::shared_ptr<const rfs::snapshot::ISourceRepo> repo) {
  auto repository = rfs::snapshot::SnapshotRepository::Open(std::move(repo));
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->LatestSnapshot();
  REQUIRE(snapshot.ok());
  auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "index-0", 0);
  REQUIRE(reader.ok());
  return {*std::move(repository), *std::move(reader)};
}

// Every document of index-0's shard 0 of `repo`'s latest snapshot: serially with `threads` 0,
// else through a ParallelDocumentReader of ranges of 32.
std::vector<Row> ReadShardZero(std::shared_ptr<const rfs::snapshot::ISourceRepo> repo,
                               int threads) {
  const ShardZero shard = OpenShardZero(std::move(repo));
  const auto& reader = shard.reader;
  if (threads == 0) {
    auto cursor = reader->OpenAt(0);
    REQUIRE(cursor.ok());
    return ReadAll(**cursor);
  }
  rfs::lucene::ParallelReadOptions options;
  options.threads = threads;
  options.range_docs = 32;
  auto parallel = rfs::lucene::ParallelDocumentReader::Open(*reader, 0, options);
  REQUIRE(parallel.ok());
  return ReadAll(**parallel);
}

}  // namespace

TEST_CASE("ParallelDocumentReader returns exactly what a DocumentCursor returns, in order",
          "[lucene][parallel][generated][tsan]") {
  WithGeneratedRepository([&](auto& repository, auto& snapshot) {
    for (int shard = 0; shard < 2; ++shard) {
      auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "index-0", shard);
      REQUIRE(reader.ok());
      const uint64_t max = (*reader)->max_cursor();
      for (uint64_t start : {uint64_t{0}, max / 3, max - 1, max}) {
        auto serial = (*reader)->OpenAt(start);
        REQUIRE(serial.ok());
        const std::vector<Row> expected = ReadAll(**serial);
        for (auto [threads, range, budget] :
             {std::tuple{1, uint64_t{2048}, size_t{64} << 20},
              std::tuple{2, uint64_t{7}, size_t{1}}, std::tuple{3, uint64_t{100}, size_t{4096}},
              std::tuple{4, uint64_t{1}, size_t{64} << 20}}) {
          INFO("shard " << shard << " start " << start << " threads " << threads << " range "
                        << range << " budget " << budget);
          rfs::lucene::ParallelReadOptions options;
          options.threads = threads;
          options.range_docs = range;
          options.max_buffered_bytes = budget;
          auto parallel = rfs::lucene::ParallelDocumentReader::Open(**reader, start, options);
          REQUIRE(parallel.ok());
          CHECK((*parallel)->position() == start);
          const std::vector<Row> got = ReadAll(**parallel);
          REQUIRE(got.size() == expected.size());
          for (size_t i = 0; i < got.size(); ++i) {
            // Positions may run ahead over deleted documents at range ends, never past the next.
            CHECK(std::get<0>(got[i]) == std::get<0>(expected[i]));
            CHECK(std::get<1>(got[i]) == std::get<1>(expected[i]));
            CHECK(std::get<2>(got[i]) == std::get<2>(expected[i]));
            CHECK(std::get<3>(got[i]) == std::get<3>(expected[i]));
            CHECK(std::get<4>(got[i]) == std::get<0>(got[i]) + 1);
          }
          CHECK((*parallel)->position() >=
                (expected.empty() ? start : std::get<0>(expected.back()) + 1));
          CHECK((*parallel)->stats().docs_emitted == expected.size());
        }
      }
      // Dropped part-way (decoding ahead, blocked on its window): stops and joins.
      rfs::lucene::ParallelReadOptions options;
      options.threads = 2;
      options.range_docs = 16;
      options.max_ranges_ahead = 2;
      auto parallel = rfs::lucene::ParallelDocumentReader::Open(**reader, 0, options);
      REQUIRE(parallel.ok());
      const auto first = ReadAll(**parallel, 40);
      CHECK(first.size() == 40);
      // Resuming a DocumentCursor at the reported position continues with the next document.
      auto resumed = (*reader)->OpenAt((*parallel)->position());
      REQUIRE(resumed.ok());
      rfs::lucene::Document next;
      auto more = (*resumed)->Next(next);
      REQUIRE(more.ok());
      REQUIRE(*more);
      CHECK(next.cursor > std::get<0>(first.back()));
      parallel->reset();
    }
    rfs::lucene::ParallelReadOptions bad;
    bad.threads = 0;
    auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "index-0", 0);
    REQUIRE(reader.ok());
    CHECK(absl::IsInvalidArgument(
        rfs::lucene::ParallelDocumentReader::Open(**reader, 0, bad).status()));
  });
}

TEST_CASE("ParallelShardScan stops at end_cursor and counts its ranges' documents",
          "[lucene][parallel][generated]") {
  WithGeneratedRepository([&](auto& repository, auto& snapshot) {
    auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "index-0", 0);
    REQUIRE(reader.ok());
    const uint64_t start = 100;
    const uint64_t end = (*reader)->max_cursor() / 2 + 3;
    const std::vector<uint64_t> expected = SerialCursors(**reader, start, end);
    struct Cursors final : rfs::lucene::ScannedRange {
      std::vector<uint64_t> cursors;
    };
    rfs::lucene::ParallelReadOptions options;
    options.threads = 2;
    options.range_docs = 97;
    options.end_cursor = end;
    auto scan = rfs::lucene::ParallelShardScan::Open(
        **reader, start, options, [] { return std::make_unique<Cursors>(); },
        [](rfs::lucene::Document& d, rfs::lucene::ScannedRange& range) {
          static_cast<Cursors&>(range).cursors.push_back(d.cursor);
          return absl::OkStatus();
        });
    REQUIRE(scan.ok());
    std::vector<uint64_t> got;
    uint64_t last_end = start;
    while (true) {
      auto range = (*scan)->Next();
      REQUIRE(range.ok());
      if (*range == nullptr) break;
      CHECK((*range)->end > last_end);
      last_end = (*range)->end;
      for (uint64_t c : static_cast<Cursors&>(**range).cursors) got.push_back(c);
    }
    CHECK(last_end == end);
    CHECK(got == expected);
    CHECK((*scan)->stats().docs_emitted == expected.size());
  });
}

TEST_CASE("ParallelShardScan hands a range of large documents out in parts, in cursor order",
          "[lucene][parallel][generated][tsan]") {
  // 400 documents, 150 of them 70-300 KB: ranges of 64 reach max_range_bytes after a few.
  WithGeneratedRepository(
      [&](auto& repository, auto& snapshot) {
        auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "index-0", 0);
        REQUIRE(reader.ok());
        const std::vector<uint64_t> expected = SerialCursors(**reader, 0, (*reader)->max_cursor());
        struct Part final : rfs::lucene::ScannedRange {
          std::vector<uint64_t> cursors;
          size_t largest = 0;
        };
        rfs::lucene::ParallelReadOptions options;
        options.threads = 2;
        options.range_docs = 64;
        options.max_range_bytes = 1'000'000;
        options.max_buffered_bytes = 2'000'000;
        auto scan = rfs::lucene::ParallelShardScan::Open(
            **reader, 0, options, [] { return std::make_unique<Part>(); },
            [](rfs::lucene::Document& d, rfs::lucene::ScannedRange& range) {
              auto& part = static_cast<Part&>(range);
              part.cursors.push_back(d.cursor);
              part.bytes += d.source.size();
              part.largest = std::max(part.largest, d.source.size());
              return absl::OkStatus();
            });
        REQUIRE(scan.ok());
        std::vector<uint64_t> got;
        uint64_t last_end = 0;
        size_t parts = 0;
        size_t cut_inside_a_range = 0;
        while (true) {
          auto next = (*scan)->Next();
          REQUIRE(next.ok());
          if (*next == nullptr) break;
          const auto& part = static_cast<const Part&>(**next);
          ++parts;
          CHECK(part.end > last_end);
          // Every cursor before its end was given; none after it.
          for (uint64_t c : part.cursors) {
            CHECK(c >= last_end);
            CHECK(c < part.end);
          }
          if (part.end % 64 != 0 && part.end != (*reader)->max_cursor()) ++cut_inside_a_range;
          // A part ends after the document that took it to the limit.
          CHECK(part.bytes < options.max_range_bytes + part.largest);
          last_end = part.end;
          got.insert(got.end(), part.cursors.begin(), part.cursors.end());
        }
        CHECK(last_end == (*reader)->max_cursor());
        CHECK(got == expected);
        CHECK(cut_inside_a_range > 0);
        CHECK(parts > ((*reader)->max_cursor() + 63) / 64);
        CHECK((*scan)->stats().docs_emitted == expected.size());
      },
      "--indices 1 --shards 1 --docs 400 --large-docs 150 --seed 29");
}

TEST_CASE("ParallelShardScan decodes a huge document only with room in the memory budget",
          "[lucene][parallel][generated][tsan]") {
  // One 6 MB document among 300: its stored-fields chunk is over the 4 MiB gate.
  WithGeneratedRepository(
      [&](auto& repository, auto& snapshot) {
        auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "index-0", 0);
        REQUIRE(reader.ok());

        struct Sizes final : rfs::lucene::ScannedRange {
          std::vector<size_t> sources;
        };
        // 10 MB of budget, 9 MB of it held (bulks in flight): the huge document needs twice its
        // size.
        rfs::core::MemoryBudget budget(10'000'000);
        budget.Charge(9'000'000);
        std::atomic<bool> huge_seen{false};
        rfs::lucene::ParallelReadOptions options;
        options.threads = 2;
        options.range_docs = 16;
        options.memory_budget = &budget;
        auto scan = rfs::lucene::ParallelShardScan::Open(
            **reader, 0, options, [] { return std::make_unique<Sizes>(); },
            [&](rfs::lucene::Document& d, rfs::lucene::ScannedRange& range) {
              static_cast<Sizes&>(range).sources.push_back(d.source.size());
              if (d.source.size() > 5'000'000) huge_seen = true;
              return absl::OkStatus();
            });
        REQUIRE(scan.ok());
        size_t docs = 0;
        size_t largest = 0;
        bool released = false;
        auto drain = [&](bool until_stuck) {
          while (true) {
            if (until_stuck) {
              // Stop before the range the huge document is in: Next would block on it.
              auto probe = std::async(std::launch::async, [&] { return (*scan)->Next(); });
              if (probe.wait_for(std::chrono::milliseconds(500)) != std::future_status::ready) {
                CHECK_FALSE(huge_seen.load());
                budget.Release(9'000'000);  // the bulks in flight are done
                released = true;
                auto range = probe.get();
                REQUIRE(range.ok());
                REQUIRE(*range != nullptr);
                for (size_t s : static_cast<Sizes&>(**range).sources)
                  largest = std::max(largest, s);
                docs += static_cast<Sizes&>(**range).sources.size();
                return;
              }
              auto range = probe.get();
              REQUIRE(range.ok());
              REQUIRE(*range != nullptr);  // the shard cannot end before its huge document
              docs += static_cast<Sizes&>(**range).sources.size();
              for (size_t s : static_cast<Sizes&>(**range).sources) largest = std::max(largest, s);
              REQUIRE(largest < 5'000'000);
            } else {
              auto range = (*scan)->Next();
              REQUIRE(range.ok());
              if (*range == nullptr) return;
              docs += static_cast<Sizes&>(**range).sources.size();
              for (size_t s : static_cast<Sizes&>(**range).sources) largest = std::max(largest, s);
            }
          }
        };
        drain(true);
        CHECK(released);
        drain(false);
        CHECK(huge_seen.load());
        CHECK(docs == 300);
        CHECK(largest > 5'000'000);
        CHECK(budget.used() == 0);
      },
      "--indices 1 --shards 1 --docs 300 --huge-doc-bytes 6000000 --seed 23");
}

TEST_CASE("ParallelShardScan decodes the next huge document only once the caller waits for it",
          "[lucene][parallel][generated][tsan]") {
  // Two 6 MB documents in a row, each ending its part. The caller lays the first out for a while
  // before its bulk charges the budget (as the reindexer does while a Submit waits): the second
  // must not be decoded meanwhile, when nothing is charged yet, but only once the caller asks for
  // it, and then only with room, after the first's bulk is done.
  auto repo = GeneratedFolder(
      "--indices 1 --shards 1 --docs 100 --huge-doc-bytes 6000000,6000000 --huge-doc-layout "
      "adjacent --huge-doc-content base64 --seed 29");
  const ShardZero shard = OpenShardZero(std::move(repo));

  struct Part final : rfs::lucene::ScannedRange {
    size_t huge = 0;
  };
  rfs::core::MemoryBudget budget(10'000'000);
  std::atomic<int> huge_decoded{0};
  std::atomic<bool> first_sent{false};
  std::atomic<bool> decoded_beside_the_first{false};
  rfs::lucene::ParallelReadOptions options;
  options.threads = 2;
  options.range_docs = 16;
  options.max_range_bytes = 1'000'000;
  options.memory_budget = &budget;
  auto scan = rfs::lucene::ParallelShardScan::Open(
      *shard.reader, 0, options, [] { return std::make_unique<Part>(); },
      [&](rfs::lucene::Document& d, rfs::lucene::ScannedRange& range) {
        range.bytes += d.source.size();
        if (d.source.size() > 5'000'000) {
          ++static_cast<Part&>(range).huge;
          if (++huge_decoded == 2 && !first_sent) decoded_beside_the_first = true;
        }
        return absl::OkStatus();
      });
  REQUIRE(scan.ok());
  size_t huge_taken = 0;
  std::jthread bulk;  // joined on every way out
  while (true) {
    auto part = (*scan)->Next();
    REQUIRE(part.ok());
    if (*part == nullptr) break;
    if (static_cast<Part&>(**part).huge == 0 || huge_taken++ > 0) continue;
    // The first huge document: laid out, uncharged, for a while; then its bulk holds twice its
    // size until it is acknowledged.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(huge_decoded == 1);
    budget.Charge(12'000'000);
    bulk = std::jthread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      first_sent = true;
      budget.Release(12'000'000);
    });
  }
  if (bulk.joinable()) bulk.join();
  CHECK(huge_taken == 2);
  CHECK(huge_decoded == 2);
  CHECK_FALSE(decoded_beside_the_first.load());
  CHECK(budget.used() == 0);
}

TEST_CASE("a huge document from blobs not held in memory is read a slice at a time",
          "[lucene][parallel][generated]") {
  // One 6 MB document among 300: its chunk is sliced, and compressed it is larger than the 1 MiB
  // read window. From a source that is not in memory (S3), the reader takes its compressed bytes
  // a window at a time as the slices are decoded; it used to read windows doubling up to the
  // whole chunk. Read serially (the file hashed first) and on two threads (hashed from the pieces
  // of the chunks decoded), the documents are those of the mapped files.
  const auto folder =
      GeneratedFolder("--indices 1 --shards 1 --docs 300 --huge-doc-bytes 6000000 --seed 23");
  const std::vector<Row> expected = ReadShardZero(folder, 0);
  REQUIRE(expected.size() == 300);
  size_t largest_source = 0;
  for (const auto& row : expected)
    largest_source = std::max(largest_source, std::get<3>(row).size());
  REQUIRE(largest_source > 5'000'000);

  for (int threads : {0, 2}) {
    INFO("threads " << threads);
    auto scattered = std::make_shared<rfs::test::ScatteredRepo>(folder);
    const std::vector<Row> got = ReadShardZero(scattered, threads);
    CHECK(got == expected);
    // The stored-fields file's compressed bytes came a window at a time: the serial reader's
    // checksum pass reads up to 8 MiB at once, the decoding at most 1 MiB.
    INFO("largest read " << scattered->largest_read());
    if (threads == 0) {
      CHECK(scattered->largest_read() <= (uint64_t{8} << 20));
    } else {
      CHECK(scattered->largest_read() <= (uint64_t{1} << 20));
    }
  }
}

TEST_CASE("a huge chunk of a mapped file lets its pages go a step at a time as it is decoded",
          "[lucene][parallel][generated]") {
  // One 20 MB document of base64, which LZ4 cannot shrink: its compressed chunk is about 20 MB.
  // Its pages used to be offered back only after the whole chunk was decoded, so the compressed
  // chunk stayed resident beside the decoded one (and was hashed after it, which read it back in);
  // now they are hashed and go every 8 MiB as slices are decoded.
  const auto folder = GeneratedFolder(
      "--indices 1 --shards 1 --docs 300 --huge-doc-bytes 20000000 --huge-doc-content base64 "
      "--seed 23");
  for (int threads : {0, 2}) {
    INFO("threads " << threads);
    auto mapped =
        std::make_shared<rfs::test::ScatteredRepo>(folder, rfs::test::ScatteredRepo::Mode::kMapped);
    const std::vector<Row> got = ReadShardZero(mapped, threads);
    REQUIRE(got.size() == 300);
    size_t largest_source = 0;
    for (const auto& row : got) largest_source = std::max(largest_source, std::get<3>(row).size());
    CHECK(largest_source > 19'000'000);
    // Read in place, through the mapped views (ReadAt only for a few small files).
    CHECK(mapped->bytes_read() < 100'000);
    // The serial reader hashes each file first (in 8 MiB steps) and then offers the whole file
    // back at once; the parallel one hashes the pieces it decodes, so every drop is a step.
    if (threads == 2) {
      INFO("largest drop " << mapped->largest_drop());
      CHECK(mapped->largest_drop() > 0);
      CHECK(mapped->largest_drop() < (uint64_t{9} << 20));
    }
  }
}

TEST_CASE("a huge document whose pages its consumer released reads again exactly after a seek",
          "[lucene][generated]") {
  // The last document of a huge chunk is handed out releasable: a consumer that copies it out
  // gives the decoded pages back (they read as zeros). Seeking back to it must decode the chunk
  // again, not hand out the zeros.
  const auto folder = GeneratedFolder(
      "--indices 1 --shards 1 --docs 40 --huge-doc-bytes 9000000 --huge-doc-content base64 "
      "--seed 31");
  auto repository = rfs::snapshot::SnapshotRepository::Open(folder);
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->LatestSnapshot();
  REQUIRE(snapshot.ok());
  auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "index-0", 0);
  REQUIRE(reader.ok());
  auto cursor = (*reader)->OpenAt(0);
  REQUIRE(cursor.ok());
  rfs::lucene::Document doc;
  std::string huge;
  uint64_t huge_cursor = 0;
  size_t releasable = 0;
  while (true) {
    auto more = (*cursor)->Next(doc);
    REQUIRE(more.ok());
    if (!*more) break;
    if (!doc.source_releasable) {
      CHECK(doc.source.size() < 4'000'000);
      continue;
    }
    ++releasable;
    huge_cursor = doc.cursor;
    huge.clear();
    rfs::core::AppendJsonOneLineReleasing(
        std::string_view(reinterpret_cast<const char*>(doc.source.data()), doc.source.size()), huge,
        1 << 20);
  }
  REQUIRE(releasable == 1);
  CHECK(huge.size() > 8'900'000);
  CHECK(huge.find(std::string(4096, '\0')) == std::string::npos);  // copied before released
  REQUIRE((*cursor)->SeekTo(huge_cursor).ok());
  auto again = (*cursor)->Next(doc);
  REQUIRE(again.ok());
  REQUIRE(*again);
  CHECK(doc.cursor == huge_cursor);
  std::string reread;
  rfs::core::AppendJsonOneLine(
      std::string_view(reinterpret_cast<const char*>(doc.source.data()), doc.source.size()),
      reread);
  CHECK(reread == huge);
}
