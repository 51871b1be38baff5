// ShardDocumentStream::NextInPlace over the parallel source on real Lucene shards: documents are
// handed on where the decoding threads converted them, with their range as the holder, except in
// a range with a large document, where each goes alone (so a huge document's memory goes with its
// own bulk); either way the same documents as Next() reads, in order.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/reindex/bulk_format.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "migration/document_pipeline_internal.hpp"
#include "support/generated_repo.hpp"

namespace rfs::migration::internal {
namespace {

struct HandedOn {
  uint64_t cursor = 0;
  std::string id;
  std::string source;
  const void* holder = nullptr;
};

// Runs `read` over shard 0 of a repository generated with `args`, read through the parallel
// source (two threads) with bulk lines laid out, or with `serial`, on this thread with none.
void ReadThroughSource(const std::string& args,
                       const std::function<void(ShardDocumentStream&)>& read, bool serial = false) {
  auto generated = test::Generate(args);
  auto source_repo = snapshot::FileSystemRepo::Open(generated->repo().string());
  REQUIRE(source_repo.ok());
  auto repository = snapshot::SnapshotRepository::Open(*source_repo);
  REQUIRE(repository.ok());
  auto latest = (*repository)->LatestSnapshot();
  REQUIRE(latest.ok());
  auto reader = lucene::OpenSnapshotShard(**repository, **latest, "index-0", 0);
  REQUIRE(reader.ok());
  const std::string index = "index-0";
  const IndexPlacement placement;
  const ConversionTarget target{index, placement, transform::MultiTypePolicy{}};
  const uint64_t end = (*reader)->max_cursor();
  std::unique_ptr<IConvertedSource> source;
  if (serial) {
    auto cursor = (*reader)->OpenAt(0);
    REQUIRE(cursor.ok());
    source = OpenSerialSource(*std::move(cursor), target);
  } else {
    auto parallel = OpenParallelSource(**reader, 0, end, 2, target, reindex::BulkActionOptions{});
    REQUIRE(parallel.ok());
    source = *std::move(parallel);
  }
  ShardDocumentStream stream(*source, end, [] { return false; }, nullptr, {});
  read(stream);
}

enum class HandOff {
  kInPlace,   // the parallel source, every holder kept (so no address is reused)
  kMovedOut,  // the parallel source, each document moved out with Next()
  kSerial,    // one thread, no ranges: each document moved out with Next()
};

// Every document of shard 0 of a repository generated with `args`, read as `hand_off` says.
std::vector<HandedOn> ReadShard(const std::string& args, HandOff hand_off) {
  const bool in_place = hand_off == HandOff::kInPlace;
  std::vector<HandedOn> out;
  ReadThroughSource(
      args,
      [&](ShardDocumentStream& stream) {
        std::vector<reindex::DocumentHolder> kept;
        while (true) {
          if (in_place) {
            reindex::DocumentHolder holder;
            auto next = stream.NextInPlace(holder);
            REQUIRE(next.ok());
            if (*next == nullptr) break;
            REQUIRE(holder != nullptr);
            const reindex::SourceDocument& doc = **next;
            out.push_back(
                {doc.cursor, doc.id, std::string(reindex::SourceBytes(doc)), holder.get()});
            kept.push_back(std::move(holder));
          } else {
            auto next = stream.Next();
            REQUIRE(next.ok());
            if (!next->has_value()) break;
            out.push_back(
                {(*next)->cursor, (*next)->id, std::string(reindex::SourceBytes(**next))});
          }
        }
        CHECK(stream.docs_read() == out.size());
      },
      hand_off == HandOff::kSerial);
  return out;
}

// `got` holds the same `count` documents as `expected`, in the same order.
void CheckSameDocuments(const std::vector<HandedOn>& got, const std::vector<HandedOn>& expected,
                        size_t count) {
  REQUIRE(got.size() == count);
  REQUIRE(expected.size() == count);
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(got[i].cursor == expected[i].cursor);
    CHECK(got[i].id == expected[i].id);
    CHECK(got[i].source == expected[i].source);
  }
}

// How many documents share each holder.
std::map<const void*, size_t> DocumentsPerHolder(const std::vector<HandedOn>& docs) {
  std::map<const void*, size_t> per_holder;
  for (const HandedOn& doc : docs) ++per_holder[doc.holder];
  return per_holder;
}

// The documents handed on in place, checked against those Next() moves out (`count` of them),
// with how many documents share each holder.
std::pair<std::vector<HandedOn>, std::map<const void*, size_t>> ReadInPlaceAndCheck(
    const std::string& args, size_t count) {
  std::vector<HandedOn> in_place = ReadShard(args, HandOff::kInPlace);
  CheckSameDocuments(in_place, ReadShard(args, HandOff::kMovedOut), count);
  std::map<const void*, size_t> per_holder = DocumentsPerHolder(in_place);
  return {std::move(in_place), std::move(per_holder)};
}

// Reads shard 0 of a repository generated with `args` in place, letting each range go once the
// next one begins, as the reindexer does once a range's bulks are written, except every third
// range, kept to the end: its documents must not change while the ranges let go are used again
// for later documents (which the read checks happened). Returns the documents as they were
// handed on.
std::vector<HandedOn> ReadLettingRangesGo(const std::string& args) {
  std::vector<HandedOn> out;
  ReadThroughSource(args, [&](ShardDocumentStream& stream) {
    struct Kept {
      const reindex::SourceDocument* doc;
      size_t at;  // in `out`
    };
    std::vector<Kept> kept_docs;
    std::vector<reindex::DocumentHolder> kept_holders;
    reindex::DocumentHolder current;
    size_t ranges = 0;
    std::set<const void*> let_go;  // ranges let go, by address
    size_t used_again = 0;
    while (true) {
      reindex::DocumentHolder holder = current;
      auto next = stream.NextInPlace(holder);
      REQUIRE(next.ok());
      if (*next == nullptr) break;
      if (holder != current) {
        ++ranges;
        if (let_go.count(holder.get()) != 0) ++used_again;
        if (ranges % 3 == 1) kept_holders.push_back(holder);
        // The range before is let go here, unless kept.
        if (current != nullptr && (ranges - 1) % 3 != 1) let_go.insert(current.get());
        current = holder;
      }
      const reindex::SourceDocument& doc = **next;
      out.push_back({doc.cursor, doc.id, std::string(reindex::SourceBytes(doc)), holder.get()});
      if (ranges % 3 == 1) kept_docs.push_back({&doc, out.size() - 1});
    }
    CHECK(ranges >= 20);
    CHECK(used_again > 0);
    REQUIRE(!kept_docs.empty());
    for (const Kept& kept : kept_docs) {
      INFO("document at cursor " << out[kept.at].cursor);
      CHECK(kept.doc->cursor == out[kept.at].cursor);
      CHECK(kept.doc->id == out[kept.at].id);
      CHECK(reindex::SourceBytes(*kept.doc) == out[kept.at].source);
    }
  });
  return out;
}

}  // namespace

TEST_CASE("a range still held never changes while the ranges let go are used again",
          "[migration][pipeline][generated][tsan]") {
  // About 30 ranges, three times what the decoding threads may hold ahead.
  const std::string args = "--indices 1 --shards 1 --docs 60000 --seed 47";
  const std::vector<HandedOn> released = ReadLettingRangesGo(args);
  // The reference: the same shard decoded on one thread, with no range at all.
  CheckSameDocuments(released, ReadShard(args, HandOff::kSerial), 60000);
}

TEST_CASE("a shard's documents are handed on in place, a range per holder",
          "[migration][pipeline][generated][tsan]") {
  const auto [in_place, per_holder] =
      ReadInPlaceAndCheck("--indices 1 --shards 1 --docs 5000 --seed 41", 5000);
  // Ranges of 2,048 documents: three holders, each for many documents.
  CHECK(per_holder.size() == 3);
  for (const auto& [holder, count] : per_holder) CHECK(count > 1);
}

TEST_CASE("a range with a large document hands each of its documents on alone",
          "[migration][pipeline][generated][tsan]") {
  // One 3 MB document among 300: the whole shard is one range, with a large document.
  const auto [in_place, per_holder] = ReadInPlaceAndCheck(
      "--indices 1 --shards 1 --docs 300 --huge-doc-bytes 3000000 --seed 43", 300);
  bool saw_large = false;
  for (const HandedOn& doc : in_place) saw_large |= doc.source.size() >= size_t{1} << 20;
  CHECK(saw_large);
  CHECK(per_holder.size() == in_place.size());
}

}  // namespace rfs::migration::internal
