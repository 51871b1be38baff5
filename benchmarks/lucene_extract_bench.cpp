// lucene_extract_bench: single-threaded extraction of every live document (`_id` and `_source`)
// from a generated shard, by rfs and by real Java Lucene 8.8.1, for BEST_SPEED and
// BEST_COMPRESSION, and the peak memory of extracting a single 50 MB document.
//
//   lucene_extract_bench [--docs N] [--doc-size BYTES] [--rounds R] [--huge-doc-mb MB]
//                        [--skip-java] [--data-dir DIR]
//
// Shards come from the real-Lucene fixture generator (test/fixtures) and are cached in the data
// dir. rfs reads each shard twice: in place from the snapshot's blobs, and from a plain Lucene
// folder restored from them, which is also what Java Lucene reads. Each measurement is the best
// of R rounds (Java's rounds also warm its JIT). Goal: >= 3x Java Lucene's docs/s on BEST_SPEED;
// a single 50 MB document under 256 MB peak RSS.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/shard_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "bench_read.hpp"
#include "bench_support.hpp"
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using bench::Fail;
using bench::Generate;
using bench::Restore;
using bench::Result;
using bench::RunJava;
using bench::SnapshotShard;

struct Options {
  long docs = 1000000;
  long doc_size = 1000;
  int rounds = 3;
  long huge_doc_mb = 50;
  bool skip_java = false;
  fs::path data_dir = RFS_BENCH_DATA_DIR;
};

template <typename F>
Result Best(int rounds, F run) {
  Result best;
  for (int i = 0; i < rounds; ++i) {
    Result r = run();
    if (best.seconds == 0 || r.seconds < best.seconds) best = r;
  }
  return best;
}

void Print(const char* what, const Result& r) {
  std::printf("  %-34s %9llu docs %8.2f s %11.0f docs/s %8.1f MB/s\n", what,
              static_cast<unsigned long long>(r.docs), r.seconds, r.docs_per_second(),
              r.mb_per_second());
}

// Peak RSS (MiB) of a child process that extracts every document of `dir`'s shard.
double PeakRssOfExtraction(const fs::path& dir) {
  return bench::PeakRssOfChild([&] {
    std::unique_ptr<rfs::snapshot::SnapshotRepository> keep;
    const rfs::snapshot::SnapshotEntry* snapshot = nullptr;
    auto files = SnapshotShard(dir, keep, &snapshot);
    const std::string commit = bench::CommitName(*files);
    return bench::ReadEveryDocument(files, commit).docs > 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  bench::program = "lucene_extract_bench";
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Fail("missing value for " + arg);
      return argv[++i];
    };
    if (arg == "--docs") {
      options.docs = std::stol(next());
    } else if (arg == "--doc-size") {
      options.doc_size = std::stol(next());
    } else if (arg == "--rounds") {
      options.rounds = std::stoi(next());
    } else if (arg == "--huge-doc-mb") {
      options.huge_doc_mb = std::stol(next());
    } else if (arg == "--skip-java") {
      options.skip_java = true;
    } else if (arg == "--data-dir") {
      options.data_dir = next();
    } else {
      std::printf(
          "usage: %s [--docs N] [--doc-size BYTES] [--rounds R] [--huge-doc-mb MB] "
          "[--skip-java] [--data-dir DIR]\n",
          argv[0]);
      return arg == "--help" ? 0 : 2;
    }
  }
  std::printf("lucene_extract_bench: %ld docs of ~%ld bytes, one shard, 10 segments, best of %d\n",
              options.docs, options.doc_size, options.rounds);
  for (const char* codec : {"best_speed", "best_compression"}) {
    const std::string name = std::string(codec) + "-" + std::to_string(options.docs) + "x" +
                             std::to_string(options.doc_size);
    const fs::path dir =
        Generate(options.data_dir, name,
                 "--docs " + std::to_string(options.docs) + " --doc-size " +
                     std::to_string(options.doc_size) + " --segments 10 --codec " + codec);
    const fs::path lucene_dir = Restore(dir);
    std::printf("%s:\n", codec);

    std::unique_ptr<rfs::snapshot::SnapshotRepository> keep;
    const rfs::snapshot::SnapshotEntry* snapshot = nullptr;
    auto in_place = SnapshotShard(dir, keep, &snapshot);
    const std::string commit = bench::CommitName(*in_place);
    const Result ours_snapshot =
        Best(options.rounds, [&] { return bench::ReadEveryDocument(in_place, commit); });
    Print("rfs, in place from snapshot blobs", ours_snapshot);
    auto plain = rfs::core::LocalDirectory::Open(lucene_dir.string());
    if (!plain.ok()) Fail(std::string(plain.status().message()));
    std::shared_ptr<const rfs::core::IDirectory> plain_dir = std::move(plain).value();
    const Result ours_plain =
        Best(options.rounds, [&] { return bench::ReadEveryDocument(plain_dir, commit); });
    Print("rfs, plain Lucene folder", ours_plain);
    if (!options.skip_java) {
      // Java's extra rounds warm its JIT before the best one counts.
      const Result java = RunJava(lucene_dir, options.rounds + 2, "document");
      Print("Java Lucene, document() per doc", java);
      const Result java_sequential = RunJava(lucene_dir, options.rounds + 2, "sequential");
      Print("Java Lucene, sequential merge reader", java_sequential);
      for (const Result* r : {&java, &java_sequential}) {
        if (r->docs != ours_plain.docs || r->source_bytes != ours_plain.source_bytes) {
          Fail("rfs and Java Lucene disagree on the documents");
        }
      }
      std::printf("  ratio rfs (plain folder) / Java: %.2fx vs document(), %.2fx vs sequential\n",
                  ours_plain.docs_per_second() / java.docs_per_second(),
                  ours_plain.docs_per_second() / java_sequential.docs_per_second());
    }
  }
  if (options.huge_doc_mb > 0) {
    const long bytes = options.huge_doc_mb * 1024 * 1024;
    const fs::path dir =
        Generate(options.data_dir, "huge-" + std::to_string(options.huge_doc_mb) + "mb",
                 "--docs 20 --doc-size 500 --huge-doc-bytes " + std::to_string(bytes));
    const double rss = PeakRssOfExtraction(dir);
    std::printf(
        "memory: extracting a shard with one %ld MB document peaks at %.1f MiB RSS "
        "(goal < 256 MiB)\n",
        options.huge_doc_mb, rss);
  }
  return 0;
}
