#include "rfs/migration/redrive.hpp"

#include <string>

#include <catch2/catch.hpp>

#include "rfs/migration/failed_document_stream.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/reindex/failed_document_sink.hpp"

namespace {

std::string Gzip(const std::string& text) {
  auto compressed = rfs::net::GzipCompress(text);
  REQUIRE(compressed.ok());
  return *compressed;
}

}  // namespace

TEST_CASE("failed-document records of both formats become documents to send again",
          "[migration][redrive]") {
  rfs::reindex::FailedDocument rejected;
  rejected.index = "books-v2";
  rejected.id = "7";
  rejected.cursor = 12;
  rejected.status = 400;
  rejected.error_type = "strict_dynamic_mapping_exception";
  rejected.reason = "mapping set to strict";
  rejected.action = R"({"index":{"_index":"books-v2","_id":"7","routing":"r1"}})";
  rejected.source = R"({"title":"Dune","pages":412.0})";
  rfs::reindex::FailedDocument untransformed;
  untransformed.index = "books";
  untransformed.id = "8";
  untransformed.error_type = "transform_exception";
  untransformed.reason = "jq error";
  untransformed.source = "{\"a\":\n1}";  // not one line: recorded as its JSON value
  rfs::reindex::FailedDocument unreadable;
  unreadable.index = "books";
  unreadable.id = "9";
  unreadable.error_type = "no_source";

  const std::string folder_file = Gzip(rfs::reindex::FailedDocumentToJson(rejected) + "\n" +
                                       rfs::reindex::FailedDocumentToJson(untransformed) + "\n" +
                                       rfs::reindex::FailedDocumentToJson(unreadable) + "\n");
  auto records = rfs::migration::ParseFailedDocumentRecords(folder_file, "f.ndjson.gz");
  REQUIRE(records.ok());
  REQUIRE(records->size() == 3);
  const auto& first = (*records)[0];
  CHECK(first.doc.index == "books-v2");
  CHECK(first.doc.id == "7");
  CHECK(first.doc.routing == std::optional<std::string>("r1"));
  CHECK(first.doc.op == rfs::reindex::BulkOp::kIndex);
  CHECK(first.doc.source == R"({"title":"Dune","pages":412.0})");  // byte for byte
  CHECK_FALSE(first.needs_transform);
  CHECK((*records)[1].needs_transform);
  CHECK((*records)[1].doc.source == R"({"a":1})");
  CHECK_FALSE((*records)[2].has_source);

  // The S3 stream's record (the Java tool's): the bulk lines as sent.
  rfs::migration::FailedDocumentStreamOptions stream;
  stream.session_id = "s";
  stream.worker_id = "w";
  rejected.action = R"({"create":{"_index":"logs","_id":"x1"}})";
  const std::string stream_file = Gzip(rfs::migration::FailedDocumentStreamRecord(
                                           rejected, stream, std::chrono::system_clock::now()) +
                                       "\n");
  auto from_stream = rfs::migration::ParseFailedDocumentRecords(stream_file, "s.ndjson.gz");
  REQUIRE(from_stream.ok());
  REQUIRE(from_stream->size() == 1);
  CHECK(from_stream->front().doc.op == rfs::reindex::BulkOp::kCreate);
  CHECK(from_stream->front().doc.index == "logs");
  CHECK(from_stream->front().doc.id == "x1");
  CHECK(from_stream->front().doc.source == R"({"title":"Dune","pages":412.0})");

  // Damage names the file and line.
  auto broken = rfs::migration::ParseFailedDocumentRecords(
      Gzip("{\"index\":\"a\",\"id\":\"1\"}\nnot json\n"), "b.ndjson.gz");
  REQUIRE_FALSE(broken.ok());
  CHECK(std::string(broken.status().message()).find("b.ndjson.gz: line 2") != std::string::npos);
  CHECK_FALSE(rfs::migration::ParseFailedDocumentRecords("not gzip", "c.ndjson.gz").ok());
}
