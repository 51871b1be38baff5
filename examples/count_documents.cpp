// Embedding the snapshot reader: count the live documents of every index of a snapshot.
//
//   count_documents <repository folder> [snapshot name]
//
// Opens the repository, picks the snapshot (default: the newest), and for each index and shard
// streams the documents straight out of the snapshot's blobs with a DocumentCursor.
#include <cstdio>
#include <string>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <repository folder> [snapshot name]\n", argv[0]);
    return 2;
  }
  auto repo = rfs::snapshot::FileSystemRepo::Open(argv[1]);
  if (!repo.ok()) {
    std::fprintf(stderr, "%s\n", repo.status().ToString().c_str());
    return 1;
  }
  auto repository = rfs::snapshot::SnapshotRepository::Open(*repo);
  if (!repository.ok()) {
    std::fprintf(stderr, "%s\n", repository.status().ToString().c_str());
    return 1;
  }
  auto snapshot = argc > 2 ? (*repository)->FindSnapshot(argv[2]) : (*repository)->LatestSnapshot();
  if (!snapshot.ok()) {
    std::fprintf(stderr, "%s\n", snapshot.status().ToString().c_str());
    return 1;
  }
  uint64_t total = 0;
  for (const std::string& index : (*repository)->IndicesIn(**snapshot)) {
    auto metadata = (*repository)->ReadIndexMetadata(**snapshot, index);
    if (!metadata.ok()) {
      std::fprintf(stderr, "%s\n", metadata.status().ToString().c_str());
      return 1;
    }
    uint64_t count = 0;
    for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
      auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, index, shard);
      if (!reader.ok()) {
        std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
        return 1;
      }
      auto cursor = (*reader)->OpenAt(0);
      if (!cursor.ok()) return 1;
      rfs::lucene::Document doc;  // reused: Next() refills it in place
      while (true) {
        auto more = (*cursor)->Next(doc);
        if (!more.ok()) {
          std::fprintf(stderr, "%s\n", more.status().ToString().c_str());
          return 1;
        }
        if (!*more) break;
        ++count;
      }
    }
    std::printf("%-40s %12llu\n", index.c_str(), static_cast<unsigned long long>(count));
    total += count;
  }
  std::printf("%-40s %12llu\n", "total", static_cast<unsigned long long>(total));
  return 0;
}
