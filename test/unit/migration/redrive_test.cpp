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

  // A source that could not be made JSON is recorded as read, before any transform: once an
  // operator mends it, a redrive sends it through the transforms.
  rfs::reindex::FailedDocument undecodable;
  undecodable.index = "books";
  undecodable.id = "10";
  undecodable.error_type = "source_conversion_exception";
  undecodable.source = R"({"title":"mended"})";
  auto mended = rfs::migration::ParseFailedDocumentRecords(
      Gzip(rfs::reindex::FailedDocumentToJson(undecodable) + "\n"), "g.ndjson.gz");
  REQUIRE(mended.ok());
  REQUIRE(mended->size() == 1);
  CHECK((*mended)[0].needs_transform);

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

TEST_CASE("a redrive refuses records whose action is not index or create, or a state index",
          "[migration][redrive]") {
  // rfs's own record of a delta's delete the target refused: the delete of its own document.
  rfs::reindex::FailedDocument own_delete;
  own_delete.index = "books";
  own_delete.id = "2";
  own_delete.status = 400;
  own_delete.error_type = "illegal_argument_exception";
  own_delete.action = R"({"delete":{"_index":"books","_id":"2","routing":"r"}})";
  own_delete.source = "{}";
  rfs::reindex::FailedDocument foreign_delete = own_delete;
  foreign_delete.id = "3";  // its action deletes books/2: not the record's document
  rfs::reindex::FailedDocument update = own_delete;
  update.id = "4";
  update.action = R"({"update":{"_index":"books","_id":"4"}})";
  update.source = R"({"doc":{"n":4}})";
  rfs::reindex::FailedDocument into_state = own_delete;
  into_state.id = "5";
  into_state.action = R"({"index":{"_index":".migrations_working_state","_id":"5"}})";
  into_state.source = R"({"n":5})";
  rfs::reindex::FailedDocument state_record = into_state;
  state_record.index = ".migrations_working_state_redrive";
  state_record.action.clear();  // no action: the record's own index
  rfs::reindex::FailedDocument not_an_action = into_state;
  not_an_action.action = "delete everything";
  rfs::reindex::FailedDocument plain = into_state;
  plain.action = R"({"create":{"_index":"books","_id":"5"}})";

  std::string lines;
  for (const auto* doc : {&own_delete, &foreign_delete, &update, &into_state, &state_record,
                          &not_an_action, &plain}) {
    lines += rfs::reindex::FailedDocumentToJson(*doc) + "\n";
  }
  auto records = rfs::migration::ParseFailedDocumentRecords(Gzip(lines), "f.ndjson.gz");
  REQUIRE(records.ok());
  REQUIRE(records->size() == 7);
  const auto& r = *records;
  CHECK(r[0].refusal.empty());
  CHECK(r[0].doc.op == rfs::reindex::BulkOp::kDelete);
  CHECK(r[0].doc.routing == std::optional<std::string>("r"));
  CHECK(r[1].refusal.find("f.ndjson.gz: line 2 (books/3) is refused: a delete of books/2") !=
        std::string::npos);
  CHECK(r[2].refusal.find("line 3 (books/4) is refused: the action 'update'") != std::string::npos);
  CHECK(r[3].refusal.find("it writes into .migrations_working_state,") != std::string::npos);
  CHECK(r[4].refusal.find("it writes into .migrations_working_state_redrive,") !=
        std::string::npos);
  CHECK(r[5].refusal.find("no bulk action line") != std::string::npos);
  CHECK(r[6].refusal.empty());
  CHECK(r[6].doc.op == rfs::reindex::BulkOp::kCreate);

  // The same in the S3 stream's records (the bulk lines as sent).
  rfs::migration::FailedDocumentStreamOptions stream;
  stream.session_id = "s";
  stream.worker_id = "w";
  std::string stream_lines;
  for (const auto* doc : {&own_delete, &foreign_delete, &update, &into_state, &plain}) {
    stream_lines +=
        rfs::migration::FailedDocumentStreamRecord(*doc, stream, std::chrono::system_clock::now()) +
        "\n";
  }
  // A source alone (no action line) is a source, whatever it looks like.
  rfs::reindex::FailedDocument source_alone = plain;
  source_alone.action.clear();
  source_alone.source = R"({"delete":{"_index":"books","_id":"9"}})";
  stream_lines += rfs::migration::FailedDocumentStreamRecord(source_alone, stream,
                                                             std::chrono::system_clock::now()) +
                  "\n";
  auto from_stream = rfs::migration::ParseFailedDocumentRecords(Gzip(stream_lines), "s.ndjson.gz");
  REQUIRE(from_stream.ok());
  REQUIRE(from_stream->size() == 6);
  const auto& s = *from_stream;
  CHECK(s[0].refusal.empty());
  CHECK(s[0].doc.op == rfs::reindex::BulkOp::kDelete);
  CHECK_FALSE(s[1].refusal.empty());
  CHECK_FALSE(s[2].refusal.empty());
  CHECK_FALSE(s[3].refusal.empty());
  CHECK(s[4].refusal.empty());
  CHECK(s[5].refusal.empty());
  CHECK(s[5].doc.op == rfs::reindex::BulkOp::kIndex);
  CHECK(s[5].doc.index == "books");
  CHECK(s[5].doc.source == source_alone.source);
}
