// The IFailedDocumentSink conformance suite: the contract of rfs/reindex/failed_document_sink.hpp,
// run against any sink through a factory that also opens, as an ISourceRepo, the place the sink
// writes to (a folder, an S3 prefix). The records are read back the way a redrive reads them
// (ParseFailedDocumentRecords, which knows both record formats).
//
// Call RunFailedDocumentSinkConformance(make_sink) from a Catch2 TEST_CASE. What it checks: once
// Record returns, every document of the call can be read back (index, id, error type and source);
// successive calls add to what is there and lose nothing; calls from several threads at once are
// all recorded, each document once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "rfs/migration/redrive.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/snapshot/source_repo.hpp"

namespace rfs::reindex::conformance {

struct FailedSinkUnderTest {
  std::shared_ptr<IFailedDocumentSink> sink;
  /// Where the sink writes, as a repository of blobs (files at any depth).
  std::shared_ptr<const snapshot::ISourceRepo> written;
};

/// A fresh, empty place to write to and a sink that writes there.
using MakeFailedSink = std::function<FailedSinkUnderTest()>;

namespace internal {

inline FailedDocument Failed(int n) {
  FailedDocument doc;
  doc.index = n % 2 == 0 ? "conf-a" : "conf-b";
  doc.id = "doc-" + std::to_string(n);
  doc.cursor = static_cast<uint64_t>(n + 1);
  doc.status = 400;
  doc.error_type = "mapper_parsing_exception";
  doc.reason = "failed to parse field [n] of type [long] in document with id 'doc-" +
               std::to_string(n) + "'";
  doc.action = R"({"index":{"_index":")" + doc.index + R"(","_id":")" + doc.id + R"("}})";
  doc.source = R"({"n":"not a number )" + std::to_string(n) + R"(","text":"é ✓"})";
  return doc;
}

// Every record written so far, by id.
inline std::map<std::string, std::vector<migration::RedriveRecord>> ReadBack(
    const snapshot::ISourceRepo& written) {
  std::map<std::string, std::vector<migration::RedriveRecord>> out;
  auto files = written.ListBlobsBelow("");
  INFO(files.status().ToString());
  REQUIRE(files.ok());
  for (const std::string& file : *files) {
    auto bytes = written.ReadBlob(file);
    REQUIRE(bytes.ok());
    auto records = migration::ParseFailedDocumentRecords(
        std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()), file);
    INFO(file << ": " << records.status().ToString());
    REQUIRE(records.ok());
    for (auto& record : *records) out[record.doc.id].push_back(std::move(record));
  }
  return out;
}

inline void CheckRecorded(const std::map<std::string, std::vector<migration::RedriveRecord>>& held,
                          const FailedDocument& doc) {
  INFO(doc.id);
  auto found = held.find(doc.id);
  REQUIRE(found != held.end());
  REQUIRE(found->second.size() == 1);
  const migration::RedriveRecord& record = found->second.front();
  CHECK(record.doc.index == doc.index);
  CHECK(record.error_type == doc.error_type);
  REQUIRE(record.has_source);
  CHECK(boost::json::parse(record.doc.source) == boost::json::parse(doc.source));
}

}  // namespace internal

inline void RunFailedDocumentSinkConformance(const MakeFailedSink& make_sink) {
  FailedSinkUnderTest target = make_sink();
  REQUIRE(target.sink != nullptr);
  REQUIRE(target.written != nullptr);

  SECTION("once Record returns, its documents can be read back") {
    const std::vector<FailedDocument> docs = {internal::Failed(0), internal::Failed(1),
                                              internal::Failed(2)};
    REQUIRE(target.sink->Record(docs).ok());
    const auto held = internal::ReadBack(*target.written);
    CHECK(held.size() == docs.size());
    for (const auto& doc : docs) internal::CheckRecorded(held, doc);
  }

  SECTION("successive calls add to what is there") {
    std::vector<FailedDocument> all;
    for (int call = 0; call < 5; ++call) {
      std::vector<FailedDocument> docs;
      for (int i = 0; i < 4; ++i) docs.push_back(internal::Failed(call * 4 + i));
      REQUIRE(target.sink->Record(docs).ok());
      all.insert(all.end(), docs.begin(), docs.end());
      CHECK(internal::ReadBack(*target.written).size() == all.size());
    }
    const auto held = internal::ReadBack(*target.written);
    for (const auto& doc : all) internal::CheckRecorded(held, doc);
  }

  SECTION("calls from several threads are all recorded, each document once") {
    constexpr int kThreads = 4, kCalls = 5, kPerCall = 3;
    std::vector<std::thread> writers;
    std::vector<int> errors(kThreads, 0);
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&, t] {
        for (int c = 0; c < kCalls; ++c) {
          std::vector<FailedDocument> docs;
          for (int i = 0; i < kPerCall; ++i) {
            docs.push_back(internal::Failed((t * kCalls + c) * kPerCall + i));
          }
          if (!target.sink->Record(docs).ok()) ++errors[t];
        }
      });
    }
    for (auto& writer : writers) writer.join();
    CHECK(errors == std::vector<int>(kThreads, 0));
    const auto held = internal::ReadBack(*target.written);
    CHECK(held.size() == kThreads * kCalls * kPerCall);
    for (int n = 0; n < kThreads * kCalls * kPerCall; ++n) {
      internal::CheckRecorded(held, internal::Failed(n));
    }
  }
}

}  // namespace rfs::reindex::conformance
