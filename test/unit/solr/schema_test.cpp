// rfs::solr::ParseSchema and MappingFromSchema: a Solr 9 managed schema (as Solr 9.10 writes it
// back after a Schema API change) and a Solr 6-era schema.xml with <types> and <fields>.
#include "rfs/solr/schema.hpp"

#include <algorithm>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

namespace {

namespace json = boost::json;
using rfs::solr::MappingFromSchema;
using rfs::solr::ParseSchema;

constexpr std::string_view kManaged = R"(<?xml version="1.0" encoding="UTF-8"?>
<!-- Solr managed schema - automatically generated - DO NOT EDIT -->
<schema name="rfs-default" version="1.6">
  <uniqueKey>id</uniqueKey>
  <fieldType name="_nest_path_" class="solr.NestPathField" omitTermFreqAndPositions="true" omitNorms="true" maxCharsForDocValues="-1" multiValued="false" stored="false"/>
  <fieldType name="boolean" class="solr.BoolField" sortMissingLast="true"/>
  <fieldType name="knn_vector_4" class="solr.DenseVectorField" vectorDimension="4" similarityFunction="cosine"/>
  <fieldType name="location" class="solr.LatLonPointSpatialField" docValues="true"/>
  <fieldType name="pdate" class="solr.DatePointField" docValues="true"/>
  <fieldType name="pint" class="solr.IntPointField" docValues="true"/>
  <fieldType name="pints" class="solr.IntPointField" docValues="true" multiValued="true"/>
  <fieldType name="plong" class="solr.LongPointField" docValues="true"/>
  <fieldType name="string" class="solr.StrField" sortMissingLast="true" docValues="true"/>
  <fieldType name="strings" class="solr.StrField" sortMissingLast="true" docValues="true" multiValued="true"/>
  <fieldType name="text_general" class="solr.TextField" positionIncrementGap="100" multiValued="true">
    <analyzer>
      <tokenizer name="standard"/>
      <filter name="lowercase"/>
    </analyzer>
  </fieldType>
  <field name="_nest_path_" type="_nest_path_"/>
  <field name="_root_" type="string" docValues="false" indexed="true" stored="false"/>
  <field name="_text_" type="text_general" multiValued="true" indexed="true" stored="false"/>
  <field name="_version_" type="plong" indexed="false" stored="false"/>
  <field name="id" type="string" multiValued="false" indexed="true" required="true" stored="true"/>
  <dynamicField name="*_sdv" type="strings" docValues="true" indexed="false" stored="false"/>
  <dynamicField name="*_ss" type="strings" indexed="true" stored="true"/>
  <dynamicField name="*_ti" type="text_general" indexed="true" stored="false"/>
  <dynamicField name="*_v4" type="knn_vector_4" indexed="true" stored="true"/>
  <dynamicField name="*_txt" type="text_general" indexed="true" stored="true"/>
  <dynamicField name="*_dt" type="pdate" indexed="true" stored="true"/>
  <dynamicField name="*_s" type="string" indexed="true" stored="true"/>
  <dynamicField name="*_i" type="pint" indexed="true" stored="true"/>
  <dynamicField name="*_b" type="boolean" indexed="true" stored="true"/>
  <dynamicField name="*_t" type="text_general" multiValued="false" indexed="true" stored="true"/>
  <dynamicField name="*_p" type="location" indexed="true" stored="true"/>
  <copyField source="title_t" dest="all_ti"/>
  <copyField source="title_t" dest="_text_"/>
  <copyField source="*_t" dest="_text_"/>
</schema>)";

bool HasLine(const std::vector<std::string>& lines, std::string_view part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

TEST_CASE("a Solr 9 managed schema: effective properties and dynamic field order", "[solr]") {
  auto schema = ParseSchema(kManaged, "managed-schema.xml");
  INFO(schema.status().ToString());
  REQUIRE(schema.ok());
  CHECK(schema->name == "rfs-default");
  CHECK(schema->version == 1.6);
  CHECK(schema->unique_key == "id");
  CHECK(schema->nested());
  REQUIRE(schema->fields.size() == 5);
  // Solr matches the longest pattern first: *_sdv before *_s.
  CHECK(schema->dynamic_fields.front().name.size() == 5);
  const auto* sdv = schema->FieldFor("codes_sdv");
  REQUIRE(sdv != nullptr);
  CHECK(sdv->name == "*_sdv");
  CHECK(sdv->multi_valued);  // from its type
  CHECK(sdv->doc_values);
  CHECK_FALSE(sdv->stored);
  CHECK(sdv->returned());  // useDocValuesAsStored, the default from version 1.6
  const auto* title = schema->FieldFor("title_t");
  REQUIRE(title != nullptr);
  CHECK_FALSE(title->multi_valued);  // the field's attribute over its type's
  CHECK_FALSE(title->doc_values);
  const auto* ti = schema->FieldFor("body_ti");
  REQUIRE(ti != nullptr);
  CHECK_FALSE(ti->returned());
  CHECK(schema->FieldFor("unknown") == nullptr);
  const auto& text_type = schema->types.at("text_general");
  REQUIRE(text_type.analyzers.size() == 1);
  REQUIRE(text_type.analyzers[0].steps.size() == 2);
  CHECK(text_type.analyzers[0].steps[1].name == "lowercase");
}

TEST_CASE("a Solr 9 managed schema as an OpenSearch mapping", "[solr]") {
  auto schema = ParseSchema(kManaged, "managed-schema.xml");
  REQUIRE(schema.ok());
  const rfs::solr::SchemaMapping mapping = MappingFromSchema(*schema);
  const json::object& properties = mapping.mappings.at("properties").as_object();
  INFO(json::serialize(mapping.mappings));
  CHECK(properties.at("id") == json::parse(R"({"type":"keyword"})"));
  // Internal fields are not mapped.
  CHECK_FALSE(properties.contains("_version_"));
  CHECK_FALSE(properties.contains("_root_"));
  CHECK_FALSE(properties.contains("_nest_path_"));
  // copy fields: copy_to from a dynamic source to fields Solr does not return.
  CHECK(properties.at("title_t") ==
        json::parse(R"({"type":"text","copy_to":["all_ti","_text_"]})"));
  CHECK(properties.at("all_ti") == json::parse(R"({"type":"text"})"));
  CHECK(properties.at("_text_") == json::parse(R"({"type":"text"})"));
  const json::array& templates = mapping.mappings.at("dynamic_templates").as_array();
  // Child documents as nested objects first, then the dynamic fields longest pattern first.
  CHECK(templates.at(0) == json::parse(R"({"solr_child_documents":{"match_mapping_type":"object",
                                            "mapping":{"type":"nested"}}})"));
  CHECK(templates.at(1).as_object().begin()->key() == "*_sdv");
  for (const auto& t : templates) {
    const auto& [name, body] = *t.as_object().begin();
    // No dynamic template can map a vector.
    CHECK(name != "*_v4");
    if (name == "*_p") CHECK(body.at("mapping") == json::parse(R"({"type":"geo_point"})"));
    if (name == "*_dt") CHECK(body.at("mapping") == json::parse(R"({"type":"date"})"));
    if (name == "*_sdv") {
      CHECK(body.at("mapping") == json::parse(R"({"type":"keyword","index":false})"));
    }
  }
  // Without the index's field names no vector is mapped, and no k-NN setting is needed.
  CHECK_FALSE(mapping.settings.contains("index"));
  CHECK(HasLine(mapping.decisions, "*_v4 (dynamic): DenseVectorField -> knn_vector"));
  // The standard tokenizer with lowercase is OpenSearch's standard analyzer: nothing to define.
  CHECK_FALSE(mapping.settings.contains("analysis"));
  CHECK(HasLine(mapping.decisions, "id: the uniqueKey: each document's _id"));
  CHECK(HasLine(mapping.decisions, "copyField *_t -> _text_: a pattern: not translated"));
  CHECK(HasLine(mapping.decisions, "_text_: not stored in Solr; copy_to fills it"));
  CHECK(HasLine(mapping.decisions, "field type text_general: analyzer translated as standard"));
  // *_ti is indexed only: listed as what cannot be migrated.
  REQUIRE(mapping.unrebuildable.size() == 1);
  CHECK(mapping.unrebuildable[0].starts_with("*_ti: indexed only"));
}

TEST_CASE("fields of the index that dynamic fields made are mapped by name", "[solr]") {
  auto schema = ParseSchema(kManaged, "managed-schema.xml");
  REQUIRE(schema.ok());
  const rfs::solr::SchemaMapping mapping = MappingFromSchema(
      *schema, {"id", "_version_", "emb_v4", "n_i", "emb_v4", "odd", "_root_", "tags_ss"});
  const json::object& properties = mapping.mappings.at("properties").as_object();
  INFO(json::serialize(mapping.mappings));
  CHECK(properties.at("emb_v4") == json::parse(R"({"type":"knn_vector","dimension":4,
                        "method":{"name":"hnsw","engine":"lucene","space_type":"cosinesimil"}})"));
  CHECK(properties.at("n_i") == json::parse(R"({"type":"integer"})"));
  CHECK(properties.at("tags_ss") == json::parse(R"({"type":"keyword"})"));
  CHECK_FALSE(properties.contains("_version_"));
  CHECK_FALSE(properties.contains("odd"));
  CHECK(HasLine(mapping.decisions, "odd: in the index but matches no field of the schema"));
  CHECK(HasLine(mapping.decisions, "emb_v4 (from *_v4): DenseVectorField -> knn_vector"));
  CHECK(mapping.settings.at("index") == json::parse(R"({"knn":true})"));
}

TEST_CASE("a Solr 6 schema.xml: types and fields sections, Trie fields, analyzers", "[solr]") {
  constexpr std::string_view kClassic = R"(<?xml version="1.0" ?>
<schema name="legacy" version="1.5">
  <types>
    <fieldType name="string" class="solr.StrField" sortMissingLast="true"/>
    <fieldType name="tint" class="solr.TrieIntField" precisionStep="8"/>
    <fieldType name="tdate" class="solr.TrieDateField"/>
    <fieldtype name="text_en" class="solr.TextField">
      <analyzer type="index">
        <charFilter class="solr.HTMLStripCharFilterFactory"/>
        <tokenizer class="solr.WhitespaceTokenizerFactory"/>
        <filter class="solr.LowerCaseFilterFactory"/>
        <filter class="solr.ASCIIFoldingFilterFactory" preserveOriginal="true"/>
        <filter class="solr.EdgeNGramFilterFactory" minGramSize="2" maxGramSize="5"/>
      </analyzer>
      <analyzer type="query">
        <tokenizer class="solr.WhitespaceTokenizerFactory"/>
        <filter class="solr.SynonymGraphFilterFactory" synonyms="synonyms.txt"/>
        <filter class="solr.LowerCaseFilterFactory"/>
      </analyzer>
    </fieldtype>
    <fieldType name="text_syn" class="solr.TextField">
      <analyzer>
        <tokenizer class="solr.StandardTokenizerFactory"/>
        <filter class="solr.SynonymGraphFilterFactory" synonyms="synonyms.txt"/>
      </analyzer>
    </fieldType>
    <fieldType name="money" class="solr.CurrencyFieldType" defaultCurrency="USD"/>
  </types>
  <fields>
    <field name="key" type="string" indexed="true" stored="true"/>
    <field name="count" type="tint" stored="false"/>
    <field name="when" type="tdate" multiValued="true"/>
    <field name="body" type="text_en"/>
    <field name="tags" type="text_syn"/>
    <field name="price" type="money"/>
  </fields>
  <uniqueKey> key </uniqueKey>
</schema>)";
  auto schema = ParseSchema(kClassic, "schema.xml");
  INFO(schema.status().ToString());
  REQUIRE(schema.ok());
  CHECK(schema->unique_key == "key");
  CHECK_FALSE(schema->nested());
  const auto* count = schema->FindField("count");
  REQUIRE(count != nullptr);
  // Before version 1.6 doc values are not returned as stored: an indexed-only field.
  CHECK_FALSE(count->use_doc_values_as_stored);
  CHECK_FALSE(count->returned());
  const rfs::solr::SchemaMapping mapping = MappingFromSchema(*schema);
  INFO(json::serialize(mapping.mappings) << " " << json::serialize(mapping.settings));
  const json::object& properties = mapping.mappings.at("properties").as_object();
  CHECK(properties.at("count") == json::parse(R"({"type":"integer"})"));
  CHECK(properties.at("when") == json::parse(R"({"type":"date"})"));
  CHECK(properties.at("price") == json::parse(R"({"type":"keyword"})"));
  // The index analyzer is translated; the query one (synonyms from a file) is not.
  CHECK(properties.at("body") == json::parse(R"({"type":"text","analyzer":"solr_text_en"})"));
  const json::object& analysis = mapping.settings.at("analysis").as_object();
  CHECK(analysis.at("analyzer").at("solr_text_en") ==
        json::parse(R"({"type":"custom","tokenizer":"whitespace",
                        "filter":["lowercase","solr_text_en_filter_0","solr_text_en_filter_1"],
                        "char_filter":["html_strip"]})"));
  CHECK(analysis.at("filter").at("solr_text_en_filter_0") ==
        json::parse(R"({"type":"asciifolding","preserve_original":true})"));
  CHECK(analysis.at("filter").at("solr_text_en_filter_1") ==
        json::parse(R"({"type":"edge_ngram","min_gram":2,"max_gram":5})"));
  CHECK(HasLine(mapping.decisions,
                "field type text_en: query analyzer not translated (filter synonymGraph has no "
                "OpenSearch equivalent here)"));
  // Not translatable at all: OpenSearch's standard analyzer, said so.
  CHECK(properties.at("tags") == json::parse(R"({"type":"text"})"));
  CHECK(HasLine(mapping.decisions, "field type text_syn: analyzer not translated"));
  CHECK(HasLine(mapping.decisions, "price: CurrencyFieldType -> keyword"));
  REQUIRE(mapping.unrebuildable.size() == 1);
  CHECK(mapping.unrebuildable[0].starts_with("count: indexed only"));
}

TEST_CASE("a damaged Solr schema fails naming the file", "[solr]") {
  auto not_xml = ParseSchema("<schema><field name=\"a\"", "managed-schema.xml");
  REQUIRE(absl::IsDataLoss(not_xml.status()));
  CHECK(not_xml.status().message().find("managed-schema.xml: line") != std::string::npos);
  auto undeclared = ParseSchema(R"(<schema><field name="a" type="nope"/></schema>)", "s.xml");
  REQUIRE(absl::IsDataLoss(undeclared.status()));
  CHECK(undeclared.status().message().find("field a has type 'nope'") != std::string::npos);
  auto no_root = ParseSchema("<config/>", "s.xml");
  CHECK(absl::IsDataLoss(no_root.status()));
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  auto too_deep = ParseSchema("<schema>" + deep + "</schema>", "s.xml");
  REQUIRE(absl::IsDataLoss(too_deep.status()));
  CHECK(too_deep.status().message().find("nested deeper") != std::string::npos);
}

}  // namespace
