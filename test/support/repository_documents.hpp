// Every live document of every shard of a repository's newest snapshot, for tests that compare
// one way of reading a repository with another (a folder and S3, with and without faults).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"

namespace rfs::test {

/// Every live document `reader` gives from cursor 0, in order, each passed to `each`; fails the
/// test on a read error.
inline void ForEachDocument(const lucene::ShardReader& reader,
                            const std::function<void(const lucene::Document&)>& each) {
  auto cursor = reader.OpenAt(0);
  INFO(cursor.status().ToString());
  REQUIRE(cursor.ok());
  lucene::Document doc;
  while (true) {
    auto more = (*cursor)->Next(doc);
    INFO(more.status().ToString());
    REQUIRE(more.ok());
    if (!*more) break;
    each(doc);
  }
}

/// "index/shard/id" -> source. `between_documents`, when set, runs after each document.
inline std::map<std::string, std::string> RepositoryDocuments(
    const std::shared_ptr<snapshot::ISourceRepo>& source,
    const std::function<void()>& between_documents = nullptr) {
  auto repository = snapshot::SnapshotRepository::Open(source);
  INFO(repository.status().ToString());
  REQUIRE(repository.ok());
  auto latest = (*repository)->LatestSnapshot();
  REQUIRE(latest.ok());
  std::map<std::string, std::string> out;
  for (const auto& index : (*repository)->IndicesIn(**latest)) {
    auto meta = (*repository)->ReadIndexMetadata(**latest, index);
    REQUIRE(meta.ok());
    for (int shard = 0; shard < meta->number_of_shards; ++shard) {
      auto reader = lucene::OpenSnapshotShard(**repository, **latest, index, shard);
      INFO(index << "/" << shard << ": " << reader.status().ToString());
      REQUIRE(reader.ok());
      ForEachDocument(**reader, [&](const lucene::Document& doc) {
        out[index + "/" + std::to_string(shard) + "/" + doc.id] =
            std::string(doc.source.begin(), doc.source.end());
        if (between_documents) between_documents();
      });
    }
  }
  return out;
}

}  // namespace rfs::test
