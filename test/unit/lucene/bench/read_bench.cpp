// Single-threaded read speed of ShardReader over a Lucene index folder:
// documents per second and MB/s of _source, best of several rounds.
//
//   lucene_read_bench <index dir> [rounds] [verify 0|1]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/shard_reader.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <index dir> [rounds] [verify 0|1]\n", argv[0]);
    return 2;
  }
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  rfs::lucene::ShardReaderOptions options;
  options.verify_checksums = argc > 3 ? std::atoi(argv[3]) != 0 : true;
  auto dir = rfs::core::LocalDirectory::Open(argv[1]);
  if (!dir.ok()) {
    std::fprintf(stderr, "%s\n", dir.status().ToString().c_str());
    return 1;
  }
  std::shared_ptr<const rfs::core::IDirectory> shared(std::move(dir).value());
  for (int round = 0; round < rounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    auto reader = rfs::lucene::ShardReader::Open(shared, options);
    if (!reader.ok()) {
      std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
      return 1;
    }
    auto cursor = (*reader)->OpenAt(0);
    rfs::lucene::Document doc;
    uint64_t docs = 0, bytes = 0;
    for (;;) {
      auto more = (*cursor)->Next(doc);
      if (!more.ok()) {
        std::fprintf(stderr, "%s\n", more.status().ToString().c_str());
        return 1;
      }
      if (!*more) break;
      ++docs;
      bytes += doc.source.size();
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rfs round %d: %llu docs, %.1f MB _source, %.3f s, %.0f docs/s, %.1f MB/s%s\n",
                round, static_cast<unsigned long long>(docs), bytes / 1e6, secs, docs / secs,
                bytes / 1e6 / secs, options.verify_checksums ? " (with .fdt CRC check)" : "");
  }
  return 0;
}
