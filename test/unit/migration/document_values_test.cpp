// Documents follow their mapping in the worker's conversion stage (ConvertDocument): a source
// index's hex-string byte and bit vectors reach the target as the byte arrays knn_vector takes,
// a legacy semantic_text value as its text, on both the plain and the laid-out-lines paths; a
// document without such values goes byte for byte.
#include <memory>
#include <span>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/reindex/bulk_format.hpp"
#include "rfs/transform/es_mapping_rules.hpp"

#include "migration/document_pipeline_internal.hpp"

namespace {

using rfs::migration::internal::ConversionTarget;
using rfs::migration::internal::ConvertDocument;
using rfs::migration::internal::ConvertedDocument;
using rfs::migration::internal::IndexPlacement;

rfs::lucene::Document LuceneDoc(const std::string& source) {
  rfs::lucene::Document doc;
  doc.id = "d1";
  doc.has_source = true;
  doc.source_format = rfs::content::SourceFormat::kJson;
  doc.source =
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(source.data()), source.size());
  doc.cursor = 1;
  return doc;
}

}  // namespace

TEST_CASE("the worker converts the values a translated mapping takes in another form",
          "[migration][es-rules]") {
  IndexPlacement placement;
  placement.values = std::make_shared<const rfs::transform::DocumentValueConversions>(
      rfs::transform::DocumentValueConversions::ForMappings(
          boost::json::parse(R"({"_doc":{"properties":{
              "v":{"type":"dense_vector","dims":2,"element_type":"byte"},
              "body":{"type":"semantic_text"}}}})")
              .as_object()));
  const std::string index = "vectors";
  const ConversionTarget target{index, placement, rfs::transform::MultiTypePolicy::kUnion};

  const std::string hex = R"({"v":"ff01","n":0.1,"body":{"text":"hi","inference":{"chunks":[]}}})";
  rfs::lucene::Document doc = LuceneDoc(hex);
  ConvertedDocument out;
  ConvertDocument(doc, target, nullptr, out);
  REQUIRE(out.kind == ConvertedDocument::Kind::kDocument);
  CHECK(out.doc.source == R"({"v":[-1,1],"n":0.1,"body":"hi"})");

  // Laid out by a decoding thread, the source line is converted the same way.
  auto lines = std::make_shared<rfs::reindex::RenderedLines>();
  ConvertedDocument rendered;
  ConvertDocument(doc, target, &lines, rendered);
  REQUIRE(rendered.kind == ConvertedDocument::Kind::kDocument);
  CHECK(lines->bytes.find("\n{\"v\":[-1,1],\"n\":0.1,\"body\":\"hi\"}\n") != std::string::npos);

  // A document already in the target's form is sent byte for byte.
  const std::string plain = R"({"v": [1, 2],  "n": 1.50})";
  rfs::lucene::Document as_is = LuceneDoc(plain);
  ConvertedDocument unchanged;
  ConvertDocument(as_is, target, nullptr, unchanged);
  CHECK(unchanged.doc.source == plain);
}
