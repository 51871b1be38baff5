// The IDocumentSink conformance suite: the contract of rfs/reindex/document_sink.hpp, run against
// any sink through a factory that also says what the target holds afterwards (for the bulk sink,
// the OpenSearch double's documents; for the NDJSON sink, its files replayed in cursor order).
//
// Call RunDocumentSinkConformance(make_sink) from a Catch2 TEST_CASE. What it checks: a batch
// over two indices arrives whole, with routings; a batch resent with the same `_id`s replaces
// the documents in place (no duplicates); a delete removes its document, and deleting one the
// target does not hold is no failure; a document whose index name cannot exist fails alone, at
// its position, as invalid_index_name_exception, and the rest of its batch arrives; a
// pretty-printed source arrives as the same JSON; batches written from several threads at once
// all arrive.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "rfs/reindex/document_sink.hpp"

namespace rfs::reindex::conformance {

/// A document as the target holds it.
struct HeldDocument {
  std::string source;  ///< JSON text
  std::optional<std::string> routing;
};

struct SinkUnderTest {
  std::shared_ptr<IDocumentSink> sink;
  /// The document the target holds under `index`/`id`, if any.
  std::function<std::optional<HeldDocument>(const std::string& index, const std::string& id)> get;
  /// How many documents the target holds in `index`.
  std::function<size_t(const std::string& index)> count;
};

/// A fresh, empty target and a sink that writes to it.
using MakeSink = std::function<SinkUnderTest()>;

namespace internal {

inline SourceDocument Doc(const std::string& index, int n, uint64_t cursor,
                          const std::string& flavour = "first") {
  SourceDocument doc;
  doc.index = index;
  doc.id = "doc-" + std::to_string(n);
  doc.source = R"({"n":)" + std::to_string(n) + R"(,"flavour":")" + flavour + R"("})";
  doc.one_line = true;
  doc.cursor = cursor;
  if (n % 5 == 0) doc.routing = "r" + std::to_string(n % 3);
  return doc;
}

inline std::vector<ItemFailure> Write(IDocumentSink& sink,
                                      const std::vector<SourceDocument>& docs) {
  std::vector<const SourceDocument*> pointers;
  for (const auto& doc : docs) pointers.push_back(&doc);
  auto written = sink.Write(pointers);
  INFO(written.status().ToString());
  REQUIRE(written.ok());
  return *std::move(written);
}

inline void CheckHeld(const SinkUnderTest& target, const SourceDocument& doc) {
  INFO(doc.index << "/" << doc.id);
  const std::optional<HeldDocument> held = target.get(doc.index, doc.id);
  REQUIRE(held.has_value());
  CHECK(boost::json::parse(held->source) == boost::json::parse(doc.source));
  CHECK(held->routing == doc.routing);
}

}  // namespace internal

inline void RunDocumentSinkConformance(const MakeSink& make_sink) {
  using internal::Doc;
  SinkUnderTest target = make_sink();
  REQUIRE(target.sink != nullptr);
  IDocumentSink& sink = *target.sink;
  CHECK_FALSE(sink.description().empty());

  SECTION("a batch over two indices arrives whole, with routings") {
    std::vector<SourceDocument> docs;
    for (int n = 0; n < 40; ++n) docs.push_back(Doc(n % 2 == 0 ? "conf-a" : "conf-b", n, n + 1));
    CHECK(internal::Write(sink, docs).empty());
    CHECK(target.count("conf-a") == 20);
    CHECK(target.count("conf-b") == 20);
    for (const auto& doc : docs) internal::CheckHeld(target, doc);
  }

  SECTION("a batch resent with the same ids replaces the documents in place") {
    std::vector<SourceDocument> first, again;
    for (int n = 0; n < 30; ++n) first.push_back(Doc("conf-a", n, n + 1));
    for (int n = 0; n < 30; ++n) again.push_back(Doc("conf-a", n, 100 + n, "second"));
    CHECK(internal::Write(sink, first).empty());
    CHECK(internal::Write(sink, again).empty());
    CHECK(target.count("conf-a") == 30);
    for (const auto& doc : again) internal::CheckHeld(target, doc);
  }

  SECTION("a delete removes its document; deleting a missing one is no failure") {
    std::vector<SourceDocument> docs;
    for (int n = 0; n < 10; ++n) docs.push_back(Doc("conf-a", n, n + 1));
    CHECK(internal::Write(sink, docs).empty());
    std::vector<SourceDocument> deletes = {Doc("conf-a", 3, 20), Doc("conf-a", 99, 21)};
    for (auto& doc : deletes) {
      doc.op = BulkOp::kDelete;
      doc.source.clear();
    }
    CHECK(internal::Write(sink, deletes).empty());
    CHECK_FALSE(target.get("conf-a", "doc-3").has_value());
    CHECK(target.count("conf-a") == 9);
  }

  SECTION("a document whose index cannot exist fails alone, at its position") {
    std::vector<SourceDocument> docs;
    for (int n = 0; n < 5; ++n) docs.push_back(Doc("conf-a", n, n + 1));
    docs[2].index = "Conf/Bad";
    const std::vector<ItemFailure> failed = internal::Write(sink, docs);
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].position == 2);
    CHECK(failed[0].type == "invalid_index_name_exception");
    CHECK(failed[0].status == 400);
    CHECK(target.count("conf-a") == 4);
  }

  SECTION("a pretty-printed source arrives as the same JSON") {
    SourceDocument doc = Doc("conf-a", 1, 1);
    doc.source =
        "{\n  \"n\": 1,\n  \"nested\": {\"a\": [1, 2, 3]},\n  \"text\": \"two\\nlines\"\n}";
    doc.one_line = false;
    CHECK(internal::Write(sink, {doc}).empty());
    internal::CheckHeld(target, doc);
  }

  SECTION("a batch of 17 MB, with a huge document and a pretty one, arrives exactly") {
    // Over the size from which the bulk sink gzips a body as it lays it out (net::GzipStream).
    std::vector<SourceDocument> docs;
    for (int n = 0; n < 6; ++n) docs.push_back(Doc("conf-a", n, n + 1));
    docs[2].source = R"({"n":2,"huge":")" + std::string(17'000'000, 'h') + R"("})";
    docs[4].source = "{\n  \"n\": 4,\n  \"pretty\": [1,\n 2]\n}";
    docs[4].one_line = false;
    docs.push_back(docs[0]);
    docs.back().op = BulkOp::kDelete;
    docs.back().cursor = 7;
    CHECK(internal::Write(sink, docs).empty());
    CHECK(target.count("conf-a") == 5);
    for (int n = 1; n < 6; ++n) internal::CheckHeld(target, docs[static_cast<size_t>(n)]);
    CHECK_FALSE(target.get("conf-a", docs[0].id).has_value());
  }

  SECTION("batches written from several threads at once all arrive") {
    constexpr int kThreads = 4, kBatches = 5, kPerBatch = 20;
    std::vector<std::thread> writers;
    std::vector<int> errors(kThreads, 0);
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&, t] {
        for (int b = 0; b < kBatches; ++b) {
          std::vector<SourceDocument> docs;
          for (int i = 0; i < kPerBatch; ++i) {
            const int n = (t * kBatches + b) * kPerBatch + i;
            docs.push_back(Doc("conf-a", n, n + 1));
          }
          std::vector<const SourceDocument*> pointers;
          for (const auto& doc : docs) pointers.push_back(&doc);
          auto written = sink.Write(pointers);
          if (!written.ok() || !written->empty()) ++errors[t];
        }
      });
    }
    for (auto& writer : writers) writer.join();
    CHECK(errors == std::vector<int>(kThreads, 0));
    CHECK(target.count("conf-a") == kThreads * kBatches * kPerBatch);
  }
}

}  // namespace rfs::reindex::conformance
