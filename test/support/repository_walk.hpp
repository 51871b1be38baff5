// Two ways of reading one snapshot repository compared blob by blob and shard by shard (a folder
// against S3, GCS or Azure): every blob's bytes, and every shard's documents or the error that
// stopped its read.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"

namespace rfs::test {

// Every blob path below `dir`, recursively, with its bytes.
inline void Walk(const snapshot::ISourceRepo& repo, const std::string& dir,
                 std::map<std::string, std::vector<uint8_t>>& out) {
  auto blobs = repo.ListBlobs(dir);
  REQUIRE(blobs.ok());
  for (const auto& blob : *blobs) {
    const std::string path = dir.empty() ? blob : dir + "/" + blob;
    auto bytes = repo.ReadBlob(path);
    INFO(path);
    REQUIRE(bytes.ok());
    out[path] = *std::move(bytes);
  }
  auto folders = repo.ListFolders(dir);
  INFO(repo.description() << " " << dir << ": " << folders.status().ToString());
  REQUIRE(folders.ok());
  for (const auto& folder : *folders) Walk(repo, dir.empty() ? folder : dir + "/" + folder, out);
}

// One shard's documents ("id" -> source), or the error that stopped the read (its code).
inline std::variant<absl::StatusCode, std::map<std::string, std::string>> ShardDocuments(
    const snapshot::SnapshotRepository& repository, const snapshot::SnapshotEntry& snapshot,
    const std::string& index, int shard) {
  auto reader = lucene::OpenSnapshotShard(repository, snapshot, index, shard);
  if (!reader.ok()) return reader.status().code();
  auto cursor = (*reader)->OpenAt(0);
  if (!cursor.ok()) return cursor.status().code();
  std::map<std::string, std::string> out;
  lucene::Document doc;
  while (true) {
    auto more = (*cursor)->Next(doc);
    if (!more.ok()) return more.status().code();
    if (!*more) return out;
    out[doc.id] = std::string(doc.source.begin(), doc.source.end());
  }
}

// Every snapshot, index and shard read from both: the same documents, or the same error (the
// corpus holds repositories with blobs left out on purpose).
inline void CompareEveryShard(const std::shared_ptr<snapshot::ISourceRepo>& local,
                              const std::shared_ptr<snapshot::ISourceRepo>& remote) {
  auto a = snapshot::SnapshotRepository::Open(local);
  auto b = snapshot::SnapshotRepository::Open(remote);
  REQUIRE(a.ok() == b.ok());
  if (!a.ok()) return;
  for (const auto& entry : (*a)->snapshots()) {
    const std::string& name = entry.name;
    auto sa = (*a)->FindSnapshot(name);
    auto sb = (*b)->FindSnapshot(name);
    REQUIRE(sa.ok() == sb.ok());
    if (!sa.ok()) continue;
    for (const auto& index : (*a)->IndicesIn(**sa)) {
      auto meta = (*a)->ReadIndexMetadata(**sa, index);
      if (!meta.ok()) continue;
      for (int shard = 0; shard < meta->number_of_shards; ++shard) {
        INFO(name << " " << index << "/" << shard);
        CHECK(ShardDocuments(**b, **sb, index, shard) == ShardDocuments(**a, **sa, index, shard));
      }
    }
  }
}

}  // namespace rfs::test
