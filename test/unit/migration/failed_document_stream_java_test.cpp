// The failed-document stream against records built the way the Java tool builds them. The
// expected records follow opensearch-migrations' RFS module:
//   OpenSearchClient.emitFailedDocumentStreamRecord (bulkload/common/OpenSearchClient.java):
//     requestItem = the BulkOperationSpec as a Jackson tree, its "document" the source;
//     responseItem = the bulk response's item as the target sent it; timestamp = Instant.now();
//   BulkOperationSpec, IndexOp, DeleteOp (bulkload/common/bulk/): snake_case, nulls left out,
//     "schema":"rfs-opensearch-bulk-v1", "include_document", "operation_type";
//   BaseMetadata, IndexOperationMeta (bulk/metadata, bulk/operations): "_id", "_index", "_type",
//     "routing", the versioning fields, "op_type" for a create;
//   FailedDocumentStreamRecord (reindexer/faileddocumentstream/): the record's ten fields, nulls
//     written (the default ObjectMapper).
// The bulk response items are the ones OpenSearch 2 answers for these failures.
#include <regex>
#include <set>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/migration/failed_document_stream.hpp"
#include "rfs/migration/redrive.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/reindex/failed_document_sink.hpp"

namespace {

namespace json = boost::json;

// A document the target rejected (strict mapping), as the Java tool records it.
constexpr std::string_view kJavaRejected =
    R"({"sessionId":"run-7","workerId":"worker-1","workItemId":"aW5kZXgtMA__0__0",)"
    R"("targetIndex":"index-0","documentId":"d1","failureType":"strict_dynamic_mapping_exception",)"
    R"("failureClass":"NON_RETRYABLE","timestamp":"2026-05-14T12:00:00.123456Z",)"
    R"("requestItem":{"schema":"rfs-opensearch-bulk-v1","document":{"title":"Dune","n":1},)"
    R"("include_document":true,"operation":{"_id":"d1","_index":"index-0","routing":"r1"},)"
    R"("operation_type":"index"},)"
    R"("responseItem":{"index":{"_index":"index-0","_id":"d1","status":400,"error":{)"
    R"("type":"strict_dynamic_mapping_exception","reason":"mapping set to strict, dynamic )"
    R"(introduction of [title] within [_doc] is not allowed"}}}})";

// A create (IndexOp with an op_type override) whose retries ran out: the Java tool could not
// match the last response to the document, so type and response are null.
constexpr std::string_view kJavaExhaustedCreate =
    R"({"sessionId":"run-7","workerId":"worker-1","workItemId":null,"targetIndex":"index-0",)"
    R"("documentId":"d2","failureType":null,"failureClass":"RETRYABLE_EXHAUSTED",)"
    R"("timestamp":"2026-05-14T12:00:01Z","requestItem":{"schema":"rfs-opensearch-bulk-v1",)"
    R"("document":{"title":"Emma"},"include_document":true,)"
    R"("operation":{"_id":"d2","_index":"index-0","op_type":"create"},)"
    R"("operation_type":"index"},"responseItem":null})";

// A delete (DeleteOp: no document).
constexpr std::string_view kJavaDelete =
    R"({"sessionId":"run-7","workerId":"worker-1","workItemId":null,"targetIndex":"index-0",)"
    R"("documentId":"d3","failureType":"index_closed_exception","failureClass":"NON_RETRYABLE",)"
    R"("timestamp":"2026-05-14T12:00:02.5Z","requestItem":{"schema":"rfs-opensearch-bulk-v1",)"
    R"("include_document":false,"operation":{"_id":"d3","_index":"index-0"},)"
    R"("operation_type":"delete"},"responseItem":{"delete":{"_index":"index-0","_id":"d3",)"
    R"("status":400,"error":{"type":"index_closed_exception","reason":"closed"}}}})";

std::string Gzip(std::string_view text) {
  auto compressed = rfs::net::GzipCompress(text);
  REQUIRE(compressed.ok());
  return *compressed;
}

json::object Object(std::string_view text) { return json::parse(text).as_object(); }

rfs::reindex::FailedDocument Rejected() {
  rfs::reindex::FailedDocument doc;
  doc.index = "index-0";
  doc.id = "d1";
  doc.cursor = 41;
  doc.status = 400;
  doc.error_type = "strict_dynamic_mapping_exception";
  doc.reason =
      "mapping set to strict, dynamic introduction of [title] within [_doc] is not allowed";
  doc.action = R"({"index":{"_index":"index-0","_id":"d1","routing":"r1"}})";
  doc.source = R"({"title":"Dune","n":1})";
  return doc;
}

std::set<std::string> Keys(const json::object& o) {
  std::set<std::string> keys;
  for (const auto& [key, value] : o) keys.emplace(key);
  return keys;
}

}  // namespace

TEST_CASE("a rejected document's stream record has the Java record's fields and shapes",
          "[migration][failed-stream]") {
  rfs::migration::FailedDocumentStreamOptions options;
  options.session_id = "run-7";
  options.worker_id = "worker-1";
  const json::object ours = Object(rfs::migration::FailedDocumentStreamRecord(
      Rejected(), options, std::chrono::system_clock::now()));
  const json::object java = Object(kJavaRejected);

  // Every Java field, and only rfs's cursor beside them.
  std::set<std::string> expected = Keys(java);
  expected.insert("cursor");
  CHECK(Keys(ours) == expected);
  CHECK(ours.at("cursor").as_int64() == 41);
  for (const char* same :
       {"sessionId", "workerId", "targetIndex", "documentId", "failureType", "failureClass"}) {
    INFO(same);
    CHECK(ours.at(same) == java.at(same));
  }
  // The bulk operation, field for field (Boost.JSON compares objects whatever their key order).
  CHECK(ours.at("requestItem") == java.at("requestItem"));
  // The response item: the operation's key, then what the target answered.
  const json::object& item = ours.at("responseItem").as_object();
  REQUIRE(Keys(item) == Keys(java.at("responseItem").as_object()));
  const json::object& answered = item.at("index").as_object();
  const json::object& expected_item = java.at("responseItem").at("index").as_object();
  for (const char* same : {"_index", "_id", "status"}) {
    INFO(same);
    CHECK(answered.at(same) == expected_item.at(same));
  }
  CHECK(answered.at("error").at("type") == expected_item.at("error").at("type"));
  CHECK(answered.at("error").at("reason") == expected_item.at("error").at("reason"));
  // As Java's Instant prints it (whole seconds, or 3, 6 or 9 fraction digits), and as Java
  // leaves an unknown work item.
  const std::string timestamp(ours.at("timestamp").as_string());
  CHECK(std::regex_match(timestamp,
                         std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.(\d{3}|\d{6}|\d{9}))?Z)")));
  CHECK(std::regex_match(std::string(java.at("timestamp").as_string()),
                         std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.(\d{3}|\d{6}|\d{9}))?Z)")));
  CHECK(ours.at("workItemId").is_null());
}

TEST_CASE("a create, a delete and a document that is no JSON take the Java record's shapes",
          "[migration][failed-stream]") {
  rfs::migration::FailedDocumentStreamOptions options;
  options.session_id = "run-7";
  options.worker_id = "worker-1";
  const auto now = std::chrono::system_clock::now();

  rfs::reindex::FailedDocument create = Rejected();
  create.id = "d2";
  create.action = R"({"create":{"_index":"index-0","_id":"d2"}})";
  create.source = R"({"title":"Emma"})";
  const json::object create_record =
      Object(rfs::migration::FailedDocumentStreamRecord(create, options, now));
  CHECK(create_record.at("requestItem") == Object(kJavaExhaustedCreate).at("requestItem"));
  // The target answers a create under "create".
  CHECK(Keys(create_record.at("responseItem").as_object()) == std::set<std::string>{"create"});

  rfs::reindex::FailedDocument deleted = Rejected();
  deleted.id = "d3";
  deleted.error_type = "index_closed_exception";
  deleted.reason = "closed";
  deleted.action = R"({"delete":{"_index":"index-0","_id":"d3"}})";
  deleted.source.clear();
  const json::object delete_record =
      Object(rfs::migration::FailedDocumentStreamRecord(deleted, options, now));
  CHECK(delete_record.at("requestItem") == Object(kJavaDelete).at("requestItem"));
  CHECK(delete_record.at("responseItem") == Object(kJavaDelete).at("responseItem"));

  // A source that is no JSON (it failed for that) stays one valid line: the document as text.
  rfs::reindex::FailedDocument garbled = Rejected();
  garbled.source = "{\"title\":\n\"Du";
  const json::object garbled_record =
      Object(rfs::migration::FailedDocumentStreamRecord(garbled, options, now));
  CHECK(garbled_record.at("requestItem").at("document") == json::value("{\"title\":\n\"Du"));

  // A source with numbers a re-print would change is written as the document's own text.
  rfs::reindex::FailedDocument exact = Rejected();
  exact.source = R"({"n":959.30,"big":123456789012345678901234567890})";
  const std::string exact_record = rfs::migration::FailedDocumentStreamRecord(exact, options, now);
  CHECK(exact_record.find(R"("document":{"n":959.30,"big":123456789012345678901234567890}})") !=
        std::string::npos);
}

TEST_CASE("a redrive reads the records the Java tool writes", "[migration][failed-stream]") {
  const std::string lines = std::string(kJavaRejected) + "\n" + std::string(kJavaExhaustedCreate) +
                            "\n" + std::string(kJavaDelete) + "\n";
  auto records = rfs::migration::ParseFailedDocumentRecords(Gzip(lines), "java.ndjson.gz");
  REQUIRE(records.ok());
  REQUIRE(records->size() == 3);
  const auto& r = *records;
  CHECK(r[0].refusal.empty());
  CHECK(r[0].doc.op == rfs::reindex::BulkOp::kIndex);
  CHECK(r[0].doc.index == "index-0");
  CHECK(r[0].doc.id == "d1");
  CHECK(r[0].doc.routing == std::optional<std::string>("r1"));
  CHECK(json::parse(r[0].doc.source) == json::parse(R"({"title":"Dune","n":1})"));
  CHECK(r[0].error_type == "strict_dynamic_mapping_exception");

  CHECK(r[1].refusal.empty());
  CHECK(r[1].doc.op == rfs::reindex::BulkOp::kCreate);
  CHECK(r[1].doc.id == "d2");
  CHECK(json::parse(r[1].doc.source) == json::parse(R"({"title":"Emma"})"));
  CHECK(r[1].error_type.empty());

  // The record's own document's delete is carried out, as rfs's own are.
  CHECK(r[2].refusal.empty());
  CHECK(r[2].doc.op == rfs::reindex::BulkOp::kDelete);
  CHECK(r[2].doc.id == "d3");
}

TEST_CASE("rfs's own stream records go round a redrive unchanged", "[migration][failed-stream]") {
  rfs::migration::FailedDocumentStreamOptions options;
  options.session_id = "s";
  options.worker_id = "w";
  const rfs::reindex::FailedDocument doc = Rejected();
  auto records = rfs::migration::ParseFailedDocumentRecords(
      Gzip(rfs::migration::FailedDocumentStreamRecord(doc, options,
                                                      std::chrono::system_clock::now()) +
           "\n"),
      "own.ndjson.gz");
  REQUIRE(records.ok());
  REQUIRE(records->size() == 1);
  const auto& record = records->front();
  CHECK(record.refusal.empty());
  CHECK(record.doc.index == doc.index);
  CHECK(record.doc.id == doc.id);
  CHECK(record.doc.routing == std::optional<std::string>("r1"));
  CHECK(record.doc.source == doc.source);
}

TEST_CASE("a redrive sends a stream record's document as it was written, numbers and all",
          "[migration][failed-stream]") {
  rfs::migration::FailedDocumentStreamOptions options;
  options.session_id = "s";
  options.worker_id = "w";
  const auto now = std::chrono::system_clock::now();
  rfs::reindex::FailedDocument exact = Rejected();
  // A re-print would write 959.3 and round the integer to a double; a key named "document"
  // inside the document, and one in a string, do not mislead the reader.
  exact.source =
      R"({"n":959.30,"big":123456789012345678901234567890,"document":{"x":"","document":1"}})";
  rfs::reindex::FailedDocument unreadable = Rejected();
  unreadable.action = "not a bulk action";
  auto records = rfs::migration::ParseFailedDocumentRecords(
      Gzip(rfs::migration::FailedDocumentStreamRecord(exact, options, now) + "\n" +
           rfs::migration::FailedDocumentStreamRecord(unreadable, options, now) + "\n" +
           std::string(kJavaRejected) + "\n"),
      "exact.ndjson.gz");
  REQUIRE(records.ok());
  REQUIRE(records->size() == 3);
  CHECK((*records)[0].refusal.empty());
  CHECK((*records)[0].doc.source == exact.source);
  // An action that was no bulk action line is refused, not indexed under the record's id.
  CHECK((*records)[1].refusal.find("no bulk action line") != std::string::npos);
  // The Java record's document, in the middle of its requestItem, as the line holds it.
  CHECK((*records)[2].doc.source == R"({"title":"Dune","n":1})");
}
