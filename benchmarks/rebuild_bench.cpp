// rebuild_bench: documents/s rebuilt (--enable-sourceless-migrations) on a generated shard of N
// documents whose index keeps no _source (real-Lucene fixture generator, Lucene 8.8.1), against
// reading the same documents' stored _source from the twin shard that keeps it: once from doc
// values only, once with two more fields that only the terms index (a keyword) and the points (a
// long) hold; and the peak RSS of each rebuilding read (the worker's bound is 256 MB).
//
//   rebuild_bench [--docs N] [--rounds R] [--data-dir DIR]
//
// Build in Release without sanitizers to measure. Shards are cached in the data dir.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rfs/lucene/shard_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "bench_support.hpp"
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using bench::Fail;
using bench::Result;

struct Options {
  long docs = 1000000;
  int rounds = 3;
  fs::path data_dir = RFS_BENCH_DATA_DIR;
};

// Every live document of the generated repository's single shard, rebuilt when `rebuild`; each
// rebuilt document must hold every field of `required` (JSON keys with their quotes and colon).
Result ReadShard(const fs::path& dir, bool rebuild, const std::vector<std::string>& required = {}) {
  auto repo = rfs::snapshot::FileSystemRepo::Open((dir / "repo").string());
  if (!repo.ok()) Fail(std::string(repo.status().message()));
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  if (!repository.ok()) Fail(std::string(repository.status().message()));
  auto snapshot = (*repository)->LatestSnapshot();
  if (!snapshot.ok()) Fail(std::string(snapshot.status().message()));
  const auto start = std::chrono::steady_clock::now();
  rfs::lucene::ShardReaderOptions options;
  if (rebuild) {
    auto metadata = (*repository)->ReadIndexMetadata(**snapshot, "index-0");
    if (!metadata.ok()) Fail(std::string(metadata.status().message()));
    auto plan = rfs::lucene::RebuildPlanForIndex(*metadata);
    if (!plan.ok() || *plan == nullptr) Fail("no rebuild plan for index-0");
    options.rebuild_plan = *plan;
  }
  auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, "index-0", 0, options);
  if (!reader.ok()) Fail(std::string(reader.status().message()));
  auto cursor = (*reader)->OpenAt(0);
  if (!cursor.ok()) Fail(std::string(cursor.status().message()));
  Result result;
  rfs::lucene::Document doc;
  while (true) {
    auto more = (*cursor)->Next(doc);
    if (!more.ok()) Fail(std::string(more.status().message()));
    if (!*more) break;
    if (rebuild && !doc.rebuilt) Fail("a document was not rebuilt");
    const std::string_view json(reinterpret_cast<const char*>(doc.source.data()),
                                doc.source.size());
    for (const std::string& key : required) {
      if (json.find(key) == std::string_view::npos) Fail("a rebuilt document lacks " + key);
    }
    ++result.docs;
    result.source_bytes += doc.source.size();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

Result Best(int rounds, const fs::path& dir, bool rebuild,
            const std::vector<std::string>& required = {}) {
  Result best;
  for (int i = 0; i < rounds; ++i) {
    Result r = ReadShard(dir, rebuild, required);
    if (best.seconds == 0 || r.seconds < best.seconds) best = r;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  bench::program = "rebuild_bench";
  Options o;
  if (auto code =
          bench::ParseOptions(argc, argv,
                              {{"--docs", [&](const std::string& v) { o.docs = std::stol(v); }},
                               {"--rounds", [&](const std::string& v) { o.rounds = std::stoi(v); }},
                               {"--data-dir", [&](const std::string& v) { o.data_dir = v; }}},
                              "[--docs N] [--rounds R] [--data-dir DIR]")) {
    return *code;
  }
  const std::string args = "--indices 1 --shards 1 --docs " + std::to_string(o.docs) +
                           " --doc-size 300 --segments 4 --seed 5";
  const fs::path with_source =
      bench::Generate(o.data_dir, "rebuild-" + std::to_string(o.docs) + "-stored", args);
  const fs::path without_source =
      bench::Generate(o.data_dir, "rebuild-" + std::to_string(o.docs) + "-sourceless",
                      args + " --source-enabled false");
  const fs::path with_fallbacks =
      bench::Generate(o.data_dir, "rebuild-" + std::to_string(o.docs) + "-fallbacks",
                      args + " --source-enabled false --fallback-fields true");
  const std::vector<std::string> fallback_keys = {"\"code\":", "\"level\":"};
  const Result stored = Best(o.rounds, with_source, false);
  const Result rebuilt = Best(o.rounds, without_source, true);
  const Result fallbacks = Best(o.rounds, with_fallbacks, true, fallback_keys);
  std::printf("rebuild_bench: %ld documents, one shard of 4 segments, best of %d\n", o.docs,
              o.rounds);
  std::printf("  stored _source read   %9llu docs %7.2f s %10.0f docs/s\n",
              static_cast<unsigned long long>(stored.docs), stored.seconds,
              stored.docs_per_second());
  std::printf("  rebuilt from doc values %7llu docs %7.2f s %10.0f docs/s (%.1f MB of JSON)\n",
              static_cast<unsigned long long>(rebuilt.docs), rebuilt.seconds,
              rebuilt.docs_per_second(), rebuilt.source_bytes / 1e6);
  std::printf("  + terms and points      %7llu docs %7.2f s %10.0f docs/s (%.1f MB of JSON)\n",
              static_cast<unsigned long long>(fallbacks.docs), fallbacks.seconds,
              fallbacks.docs_per_second(), fallbacks.source_bytes / 1e6);
  std::printf(
      "  peak RSS of the rebuilding read: %.0f MiB from doc values, %.0f MiB with terms and "
      "points (bound 256)\n",
      bench::PeakRssOfChild([&] { return ReadShard(without_source, true).docs > 0; }),
      bench::PeakRssOfChild(
          [&] { return ReadShard(with_fallbacks, true, fallback_keys).docs > 0; }));
  return 0;
}
