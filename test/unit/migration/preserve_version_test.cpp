// --preserve-version in the worker's pieces: which documents carry their source version (an
// `index`; never a data stream's `create` or a delta's `delete`), a user transform that keeps a
// document's `_id` keeps its version, and a redrive sends a recorded document with the version it
// was sent with.
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/migration/redrive.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/reindex/bulk_format.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/reindex/transforming_stream.hpp"
#include "rfs/transform/json_transformer.hpp"

#include "migration/document_pipeline_internal.hpp"

namespace {

using rfs::migration::internal::ConversionTarget;
using rfs::migration::internal::ConvertDocument;
using rfs::migration::internal::ConvertedDocument;
using rfs::migration::internal::IndexPlacement;
using rfs::reindex::BulkOp;

rfs::lucene::Document LuceneDoc(const std::string& id, const std::string& source, int64_t version) {
  rfs::lucene::Document doc;
  doc.id = id;
  doc.has_source = true;
  doc.source_format = rfs::content::SourceFormat::kJson;
  doc.source =
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(source.data()), source.size());
  doc.version = version;
  doc.cursor = 1;
  return doc;
}

}  // namespace

TEST_CASE("only an index action carries the source version, and only with preserve_version",
          "[migration][preserve-version]") {
  const std::string index = "logs";
  const std::string source = R"({"@timestamp":"2024-01-01T00:00:00Z","n":1})";
  IndexPlacement plain;
  IndexPlacement stream;
  stream.data_stream = "logs-app";
  stream.timestamp_field = "@timestamp";
  for (const bool preserve : {false, true}) {
    INFO("preserve_version " << preserve);
    const ConversionTarget to_index{index, plain, rfs::transform::MultiTypePolicy::kUnion,
                                    preserve};
    const ConversionTarget to_stream{index, stream, rfs::transform::MultiTypePolicy::kUnion,
                                     preserve};
    rfs::lucene::Document doc = LuceneDoc("a1", source, 7);
    ConvertedDocument out;
    ConvertDocument(doc, to_index, nullptr, out);
    REQUIRE(out.kind == ConvertedDocument::Kind::kDocument);
    CHECK(out.doc.op == BulkOp::kIndex);
    CHECK(out.doc.version == (preserve ? std::optional<int64_t>(7) : std::nullopt));

    // Laid out by a decoding thread: the action line carries it.
    auto lines = std::make_shared<rfs::reindex::RenderedLines>();
    ConvertedDocument rendered;
    ConvertDocument(doc, to_index, &lines, rendered);
    CHECK((lines->bytes.find(R"("version":7,"version_type":"external")") != std::string::npos) ==
          preserve);

    // A data stream takes only create, with internal versions.
    ConvertedDocument in_stream;
    ConvertDocument(doc, to_stream, nullptr, in_stream);
    REQUIRE(in_stream.kind == ConvertedDocument::Kind::kDocument);
    CHECK(in_stream.doc.op == BulkOp::kCreate);
    CHECK_FALSE(in_stream.doc.version.has_value());

    // A delta's delete carries none (the snapshot keeps no version of a document gone).
    rfs::lucene::Document gone = LuceneDoc("a2", "", 0);
    gone.deleted = true;
    gone.has_source = false;
    ConvertedDocument deleted;
    ConvertDocument(gone, to_index, nullptr, deleted);
    CHECK(deleted.doc.op == BulkOp::kDelete);
    CHECK_FALSE(deleted.doc.version.has_value());

    // The converted document reused for the next one (the serial source does): no stale version.
    ConvertDocument(doc, to_stream, nullptr, out);
    CHECK_FALSE(out.doc.version.has_value());
  }
}

TEST_CASE("a transform's outputs keep the version of the input whose _id they keep",
          "[migration][preserve-version]") {
  auto transformer = rfs::transform::LoadTransformers(
      R"([{"JqTransformerProvider":{"script":"if .operation._id == \"b\" then [., (.operation._id = \"b-copy\")] else (.operation._index = \"renamed\") end"}}])");
  REQUIRE(transformer.ok());
  std::vector<rfs::reindex::SourceDocument> docs(2);
  docs[0].index = "logs";
  docs[0].id = "a";
  docs[0].source = R"({"n":1})";
  docs[0].version = 4;
  docs[0].cursor = 1;
  docs[1].index = "logs";
  docs[1].id = "b";
  docs[1].source = R"({"n":2})";
  docs[1].version = 9;
  docs[1].cursor = 2;
  rfs::reindex::VectorDocumentStream input(std::move(docs));
  rfs::reindex::TransformingDocumentStream transformed(input, **transformer, nullptr, {});
  std::map<std::string, std::optional<int64_t>> versions;
  while (true) {
    auto next = transformed.Next();
    REQUIRE(next.ok());
    if (!next->has_value()) break;
    versions[(*next)->index + "/" + (*next)->id] = (*next)->version;
  }
  CHECK(versions == std::map<std::string, std::optional<int64_t>>{
                        {"renamed/a", 4}, {"logs/b", 9}, {"logs/b-copy", std::nullopt}});
}

TEST_CASE("a redrive sends a recorded document again with the version it was sent with",
          "[migration][preserve-version][redrive]") {
  rfs::reindex::FailedDocument versioned;
  versioned.index = "logs";
  versioned.id = "7";
  versioned.status = 400;
  versioned.error_type = "mapper_parsing_exception";
  versioned.action =
      R"({"index":{"_index":"logs","_id":"7","version":12,"version_type":"external"}})";
  versioned.source = R"({"n":7})";
  rfs::reindex::FailedDocument plain = versioned;
  plain.id = "8";
  plain.action = R"({"index":{"_index":"logs","_id":"8"}})";
  auto gzipped = rfs::net::GzipCompress(rfs::reindex::FailedDocumentToJson(versioned) + "\n" +
                                        rfs::reindex::FailedDocumentToJson(plain) + "\n");
  REQUIRE(gzipped.ok());
  auto records = rfs::migration::ParseFailedDocumentRecords(*gzipped, "f.ndjson.gz");
  REQUIRE(records.ok());
  REQUIRE(records->size() == 2);
  CHECK((*records)[0].doc.version == std::optional<int64_t>(12));
  CHECK_FALSE((*records)[1].doc.version.has_value());
  std::string action;
  rfs::reindex::AppendBulkAction((*records)[0].doc, {}, action);
  CHECK(action ==
        "{\"index\":{\"_index\":\"logs\",\"_id\":\"7\",\"version\":12,\"version_type\":"
        "\"external\"}}\n");
}
