// Test helper: applies the delta between two snapshots of a repository (lucene::ShardDeltaReader)
// to the older snapshot's documents and checks the result is the newer snapshot's documents, and
// that a delta reader opened at any position it passed returns the same rest.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/content/source_json.hpp"
#include "rfs/lucene/shard_delta.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"

namespace rfs::test {

struct DeltaDoc {
  std::string source;  // JSON
  std::optional<std::string> routing;
  friend bool operator==(const DeltaDoc&, const DeltaDoc&) = default;
};
/// "type\0id" (or id) -> document, for one shard.
using ShardDocs = std::map<std::string, DeltaDoc>;

struct DeltaOp {
  bool deleted = false;
  std::string key;
  DeltaDoc doc;
  uint64_t cursor = 0;
  friend bool operator==(const DeltaOp&, const DeltaOp&) = default;
};

inline std::string DeltaKey(const lucene::Document& doc) {
  return doc.type ? *doc.type + std::string(1, '\0') + doc.id : doc.id;
}

inline DeltaOp ToOp(const lucene::Document& doc) {
  DeltaOp op;
  op.deleted = doc.deleted;
  op.key = DeltaKey(doc);
  op.doc.routing = doc.routing;
  op.cursor = doc.cursor;
  if (!doc.deleted && doc.has_source) {
    REQUIRE(content::AppendSourceAsJson(doc.source, doc.source_format, op.doc.source).ok());
  }
  return op;
}

inline ShardDocs ReadAll(lucene::IDocumentReader& reader) {
  ShardDocs out;
  lucene::Document doc;
  for (;;) {
    auto more = reader.Next(doc);
    INFO(more.status().ToString());
    REQUIRE(more.ok());
    if (!*more) return out;
    DeltaOp op = ToOp(doc);
    out[op.key] = op.doc;
  }
}

inline std::vector<DeltaOp> ReadOps(lucene::ShardDeltaReader& reader,
                                    std::vector<uint64_t>* positions = nullptr) {
  std::vector<DeltaOp> out;
  lucene::Document doc;
  for (;;) {
    if (positions != nullptr) positions->push_back(reader.position());
    auto more = reader.Next(doc);
    INFO(more.status().ToString());
    REQUIRE(more.ok());
    if (!*more) return out;
    out.push_back(ToOp(doc));
  }
}

struct DeltaCheck {
  lucene::ShardDeltaStats stats;  // summed over shards
  size_t shards = 0;
  uint64_t docs_after = 0;
};

/// For every index and shard of `newer`: the older snapshot's documents with the delta applied
/// equal the newer snapshot's (UPDATES_AND_DELETES), and reading the delta from every
/// `resume_every`-th position it passed gives the same rest. Returns the summed statistics.
inline DeltaCheck CheckSnapshotDelta(const snapshot::SnapshotRepository& repository,
                                     const snapshot::SnapshotEntry& older,
                                     const snapshot::SnapshotEntry& newer,
                                     lucene::ShardReaderOptions options = {},
                                     size_t resume_every = 1) {
  DeltaCheck out;
  for (const auto& index : repository.IndicesIn(newer)) {
    if (index.starts_with(".")) continue;
    auto meta = repository.ReadIndexMetadata(newer, index);
    REQUIRE(meta.ok());
    const auto older_indices = repository.IndicesIn(older);
    const bool in_older =
        std::find(older_indices.begin(), older_indices.end(), index) != older_indices.end();
    for (int shard = 0; shard < meta->number_of_shards; ++shard) {
      INFO(index << "/" << shard);
      auto open_pair = [&]() {
        std::unique_ptr<lucene::ShardReader> before;
        if (in_older) {
          auto opened = lucene::OpenSnapshotShard(repository, older, index, shard, options);
          INFO(opened.status().ToString());
          REQUIRE(opened.ok());
          before = *std::move(opened);
        }
        auto now = lucene::OpenSnapshotShard(repository, newer, index, shard, options);
        INFO(now.status().ToString());
        REQUIRE(now.ok());
        return std::pair{std::move(before), *std::move(now)};
      };
      ShardDocs expected, applied;
      {
        auto [before, now] = open_pair();
        auto cursor = now->OpenAt(0);
        REQUIRE(cursor.ok());
        expected = ReadAll(**cursor);
        if (before != nullptr) {
          auto older_cursor = before->OpenAt(0);
          REQUIRE(older_cursor.ok());
          applied = ReadAll(**older_cursor);
        }
      }
      auto [before, now] = open_pair();
      auto delta = lucene::ShardDeltaReader::Open(std::move(before), std::move(now),
                                                  lucene::DeltaMode::kUpdatesAndDeletes);
      INFO(delta.status().ToString());
      REQUIRE(delta.ok());
      std::vector<uint64_t> positions;
      const std::vector<DeltaOp> ops = ReadOps(**delta, &positions);
      for (const DeltaOp& op : ops) {
        if (op.deleted) {
          REQUIRE(applied.erase(op.key) == 1);  // only ids the older snapshot held are deleted
        } else {
          applied[op.key] = op.doc;
        }
      }
      CHECK(applied == expected);
      // Cursors never decrease (the delete of a document's old copy shares its cursor), deletes
      // last.
      for (size_t i = 1; i < ops.size(); ++i) CHECK(ops[i - 1].cursor <= ops[i].cursor);
      // Resumed from any position passed, the rest is every operation at or after it.
      for (size_t i = 0; i < positions.size(); i += std::max<size_t>(resume_every, 1)) {
        auto [b, n] = open_pair();
        auto resumed = lucene::ShardDeltaReader::Open(
            std::move(b), std::move(n), lucene::DeltaMode::kUpdatesAndDeletes, positions[i]);
        REQUIRE(resumed.ok());
        const std::vector<DeltaOp> rest = ReadOps(**resumed);
        INFO("resumed at " << positions[i]);
        std::vector<DeltaOp> want;
        for (const DeltaOp& op : ops) {
          if (op.cursor >= positions[i]) want.push_back(op);
        }
        CHECK(rest == want);
      }
      const auto& s = (*delta)->stats();
      out.stats.segments_shared += s.segments_shared;
      out.stats.segments_previous += s.segments_previous;
      out.stats.segments_current += s.segments_current;
      out.stats.previous_docs_read += s.previous_docs_read;
      out.stats.current_docs_read += s.current_docs_read;
      out.stats.docs_unchanged += s.docs_unchanged;
      out.stats.docs_to_index += s.docs_to_index;
      out.stats.docs_to_delete += s.docs_to_delete;
      out.docs_after += expected.size();
      ++out.shards;
    }
  }
  return out;
}

}  // namespace rfs::test
