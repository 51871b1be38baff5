// The translation table of Elasticsearch-only mapping features (es_mapping_rules.hpp): each rule
// as TransformIndex and the template transforms apply it per target version, and the doc page
// rendered from the same table.
#include "rfs/transform/es_mapping_rules.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/transform/metadata_transform.hpp"

namespace {

namespace json = boost::json;
using rfs::core::ClusterVersion;
using rfs::transform::MetadataTransformOptions;
using rfs::transform::SourceIndex;

MetadataTransformOptions To(int os_major, int os_minor, int es_minor = 19) {
  MetadataTransformOptions o;
  o.source = {ClusterVersion::Product::kElasticsearch, 8, es_minor};
  o.target = {ClusterVersion::Product::kOpenSearch, os_major, os_minor};
  return o;
}

SourceIndex Index(std::string_view properties, std::string_view extra = "") {
  SourceIndex index;
  index.name = "idx";
  index.settings = json::parse(R"({"index.number_of_shards":"1"})").as_object();
  index.mappings =
      json::parse(std::string(R"({"_doc":{)") + std::string(extra) + (extra.empty() ? "" : ",") +
                  R"("properties":)" + std::string(properties) + "}}")
          .as_object();
  return index;
}

// The one index TransformIndex makes (REQUIREd to succeed).
rfs::transform::TransformedIndex One(const SourceIndex& index,
                                     const MetadataTransformOptions& options) {
  auto out = rfs::transform::TransformIndex(index, options);
  INFO((out.ok() ? "" : std::string(out.status().message())));
  REQUIRE(out.ok());
  REQUIRE(out->size() == 1);
  return std::move((*out)[0]);
}

json::value Field(const rfs::transform::TransformedIndex& t, std::string_view path) {
  json::value v = t.body.at("mappings").at("properties");
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    v = v.at(path.substr(start, dot - start));
    if (dot == std::string_view::npos) return v;
    v = v.at("properties");
    start = dot + 1;
  }
}

bool HasNote(const rfs::transform::TransformNotes& notes, std::string_view fragment) {
  return std::any_of(notes.notes.begin(), notes.notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

}  // namespace

TEST_CASE("dense_vector becomes knn_vector with its dimension, space type and HNSW parameters",
          "[transform][es-rules]") {
  const auto t = One(Index(R"({
      "v":{"type":"dense_vector","dims":3,"similarity":"cosine",
           "index_options":{"type":"hnsw","m":24,"ef_construction":200}},
      "l2":{"type":"dense_vector","dims":2,"similarity":"l2_norm","index":true},
      "dot":{"type":"dense_vector","dims":2,"similarity":"dot_product"},
      "mip":{"type":"dense_vector","dims":2,"similarity":"max_inner_product"},
      "plain":{"type":"dense_vector","dims":4},
      "off":{"type":"dense_vector","dims":2,"index":false}})"),
                     To(3, 8));
  CHECK(json::serialize(Field(t, "v")) ==
        R"({"type":"knn_vector","dimension":3,"method":{"name":"hnsw","engine":"lucene",)"
        R"("space_type":"cosinesimil","parameters":{"m":24,"ef_construction":200}}})");
  CHECK(Field(t, "l2").at("method").at("space_type") == "l2");
  CHECK(Field(t, "dot").at("method").at("space_type") == "innerproduct");
  CHECK(Field(t, "mip").at("method").at("space_type") == "innerproduct");
  // Elasticsearch 8.11+ indexes with cosine by default.
  CHECK(Field(t, "plain").at("method").at("space_type") == "cosinesimil");
  CHECK(json::serialize(Field(t, "off")) == R"({"type":"knn_vector","dimension":2})");
  CHECK(t.body.at("settings").at("index").at("knn") == true);
  CHECK(HasNote(t.notes, "field [v]: `dense_vector` translated to `knn_vector`: dims 3"));
  CHECK(HasNote(t.notes, "index.knn: true added"));

  SECTION("faiss on request") {
    auto options = To(3, 8);
    options.knn_engine = rfs::transform::KnnEngine::kFaiss;
    CHECK(One(Index(R"({"v":{"type":"dense_vector","dims":3}})"), options)
              .body.at("mappings")
              .at("properties")
              .at("v")
              .at("method")
              .at("engine") == "faiss");
  }
  SECTION("Elasticsearch 8.0-8.10 did not index by default: no method, no index.knn") {
    const auto old = One(Index(R"({"v":{"type":"dense_vector","dims":3}})"), To(3, 8, 10));
    CHECK(json::serialize(Field(old, "v")) == R"({"type":"knn_vector","dimension":3})");
    CHECK(!old.body.at("settings").at("index").as_object().contains("knn"));
  }
  SECTION("an 8.x source of unknown minor (newer than rfs's version table) indexes by default") {
    CHECK(Field(One(Index(R"({"v":{"type":"dense_vector","dims":3}})"), To(3, 8, -1)), "v")
              .as_object()
              .contains("method"));
  }
  SECTION("OpenSearch 1.x has no lucene engine: nmslib") {
    CHECK(Field(One(Index(R"({"v":{"type":"dense_vector","dims":3}})"), To(1, 3)), "v")
              .at("method")
              .at("engine") == "nmslib");
  }
  SECTION("without dims the index is refused with advice") {
    auto out = rfs::transform::TransformIndex(Index(R"({"v":{"type":"dense_vector"}})"), To(3, 8));
    REQUIRE(!out.ok());
    CHECK(out.status().message().find("field [v]: `dense_vector` without `dims`") !=
          std::string::npos);
    CHECK(out.status().message().find("--transformer-config") != std::string::npos);
  }
  SECTION("Elasticsearch targets keep dense_vector") {
    MetadataTransformOptions es = To(3, 8);
    es.target = {ClusterVersion::Product::kElasticsearch, 8, 19};
    CHECK(Field(One(Index(R"({"v":{"type":"dense_vector","dims":3}})"), es), "v").at("type") ==
          "dense_vector");
  }
}

TEST_CASE("quantized dense_vector index options take the nearest method of the engine and target",
          "[transform][es-rules]") {
  const std::string mapping = R"({
      "q8":{"type":"dense_vector","dims":3,"index_options":{"type":"int8_hnsw","m":16,
            "confidence_interval":0.9}},
      "q4":{"type":"dense_vector","dims":3,"index_options":{"type":"int4_hnsw"}},
      "bbq":{"type":"dense_vector","dims":64,"index_options":{"type":"bbq_hnsw"}},
      "flat":{"type":"dense_vector","dims":3,"index_options":{"type":"flat"}}})";
  const auto t = One(Index(mapping), To(3, 8));
  CHECK(json::serialize(Field(t, "q8").at("method").at("parameters")) ==
        R"({"m":16,"encoder":{"name":"sq"}})");
  CHECK(json::serialize(Field(t, "q4").at("method").at("parameters")) ==
        R"({"encoder":{"name":"sq"}})");
  CHECK(!Field(t, "bbq").at("method").as_object().contains("parameters"));
  CHECK(!Field(t, "flat").at("method").as_object().contains("parameters"));
  CHECK(HasNote(t.notes, "field [q8]: `dense_vector` translated to `knn_vector`"));
  CHECK(HasNote(t.notes, "index_options int8_hnsw -> hnsw with the lucene `sq` encoder"));
  CHECK(HasNote(t.notes, "confidence_interval dropped"));
  CHECK(HasNote(t.notes, "index_options bbq_hnsw -> full-precision hnsw"));
  // Before k-NN 2.16 the lucene engine has no scalar quantization: full precision, said.
  const auto old = One(Index(mapping), To(2, 11));
  CHECK(json::serialize(Field(old, "q8").at("method").at("parameters")) == R"({"m":16})");
  CHECK(HasNote(old.notes, "index_options int8_hnsw -> full-precision hnsw (lucene on OS 2.11"));
  // Faiss: fp16 from 2.13.
  auto faiss = To(2, 19);
  faiss.knn_engine = rfs::transform::KnnEngine::kFaiss;
  CHECK(json::serialize(Field(One(Index(mapping), faiss), "q8").at("method").at("parameters")) ==
        R"({"m":16,"encoder":{"name":"sq","parameters":{"type":"fp16"}}})");
}

TEST_CASE("byte and bit dense_vectors keep their element type", "[transform][es-rules]") {
  const auto t = One(Index(R"({
      "b":{"type":"dense_vector","dims":3,"element_type":"byte","similarity":"l2_norm"},
      "bits":{"type":"dense_vector","dims":16,"element_type":"bit"}})"),
                     To(2, 19));
  CHECK(Field(t, "b").at("data_type") == "byte");
  CHECK(Field(t, "b").at("method").at("engine") == "lucene");
  CHECK(Field(t, "bits").at("data_type") == "binary");
  CHECK(Field(t, "bits").at("method").at("engine") == "faiss");
  CHECK(Field(t, "bits").at("method").at("space_type") == "hamming");
  CHECK(!Field(One(Index(R"({"b":{"type":"dense_vector","dims":3,"element_type":"byte"}})"),
                   To(2, 7)),
               "b")
             .as_object()
             .contains("data_type"));
}

TEST_CASE("Elasticsearch-only field types are translated", "[transform][es-rules]") {
  const auto t = One(Index(R"({
      "sv":{"type":"sparse_vector","store":true},
      "pt":{"type":"passthrough","priority":10,"time_series_dimension":true,
            "properties":{"x":{"type":"keyword"}}},
      "ver":{"type":"version"},
      "sem":{"type":"semantic_text","inference_id":"e5"},
      "sh":{"type":"shape","orientation":"ccw"},
      "pn":{"type":"point"}})"),
                     To(3, 8));
  CHECK(json::serialize(Field(t, "sv")) == R"({"type":"rank_features"})");
  CHECK(json::serialize(Field(t, "pt")) ==
        R"({"type":"object","properties":{"x":{"type":"keyword"}}})");
  CHECK(json::serialize(Field(t, "ver")) == R"({"type":"keyword"})");
  CHECK(json::serialize(Field(t, "sem")) == R"({"type":"text"})");
  CHECK(json::serialize(Field(t, "sh")) == R"({"type":"xy_shape","orientation":"ccw"})");
  CHECK(json::serialize(Field(t, "pn")) == R"({"type":"xy_point"})");
  CHECK(HasNote(t.notes, "field [sv]: `sparse_vector` translated to `rank_features`"));
  CHECK(HasNote(t.notes, "dropped `store`"));
  CHECK(HasNote(t.notes, "field [pt]: `passthrough` translated to `object`"));
  CHECK(HasNote(t.notes,
                "field [sem]: `semantic_text` translated to `text`: the text is "
                "searchable as text; its inference endpoint and embeddings are not"));
}

TEST_CASE("types OpenSearch gained in 2.x are kept from their version and translated before it",
          "[transform][es-rules]") {
  const std::string mapping = R"({
      "fl":{"type":"flattened","depth_limit":5},
      "w":{"type":"wildcard","ignore_above":100},
      "ul":{"type":"unsigned_long"},
      "ck":{"type":"constant_keyword","value":"prod"},
      "mot":{"type":"match_only_text"}})";
  const auto now = One(Index(mapping), To(2, 19));
  CHECK(json::serialize(Field(now, "fl")) == R"({"type":"flat_object"})");
  CHECK(json::serialize(Field(now, "w")) == R"({"type":"wildcard","ignore_above":100})");
  CHECK(Field(now, "ul").at("type") == "unsigned_long");
  CHECK(json::serialize(Field(now, "ck")) == R"({"type":"constant_keyword","value":"prod"})");
  CHECK(Field(now, "mot").at("type") == "match_only_text");
  CHECK(HasNote(now.notes, "field [fl]: `flattened` translated to `flat_object`"));

  // One minor before each: 2.6 (flat_object 2.7), 2.7 (unsigned_long 2.8), 2.11 (match_only_text
  // 2.12), 2.13 (constant_keyword 2.14), 2.14 (wildcard 2.15).
  CHECK(json::serialize(Field(One(Index(mapping), To(2, 6)), "fl")) ==
        R"({"type":"object","enabled":false})");
  CHECK(Field(One(Index(mapping), To(2, 7)), "fl").at("type") == "flat_object");
  CHECK(Field(One(Index(mapping), To(2, 7)), "ul").at("type") == "keyword");
  CHECK(Field(One(Index(mapping), To(2, 8)), "ul").at("type") == "unsigned_long");
  CHECK(json::serialize(Field(One(Index(mapping), To(2, 11)), "mot")) ==
        R"({"type":"text","index_options":"docs","norms":false})");
  CHECK(Field(One(Index(mapping), To(2, 12)), "mot").at("type") == "match_only_text");
  CHECK(json::serialize(Field(One(Index(mapping), To(2, 13)), "ck")) == R"({"type":"keyword"})");
  CHECK(Field(One(Index(mapping), To(2, 14)), "ck").at("type") == "constant_keyword");
  CHECK(json::serialize(Field(One(Index(mapping), To(2, 14)), "w")) ==
        R"({"type":"keyword","ignore_above":100})");
  CHECK(Field(One(Index(mapping), To(2, 15)), "w").at("type") == "wildcard");
  const auto os1 = One(Index(mapping), To(1, 3));
  CHECK(Field(os1, "w").at("type") == "keyword");
  CHECK(HasNote(os1.notes,
                "field [ck]: `constant_keyword` translated to `keyword`: `keyword` "
                "without `value`: documents that omit the field no longer match it"));
}

TEST_CASE("types without an OpenSearch equivalent refuse their index with advice, the rest migrate",
          "[transform][es-rules]") {
  for (const std::string type : {"histogram", "aggregate_metric_double", "counted_keyword"}) {
    auto out = rfs::transform::TransformIndex(
        Index(R"({"ok":{"type":"long"},"m":{"properties":{"lat":{"type":")" + type + R"("}}}})"),
        To(3, 8));
    REQUIRE(!out.ok());
    INFO(out.status().message());
    CHECK(absl::IsInvalidArgument(out.status()));
    CHECK(out.status().message().find("index [idx] refused: field [m.lat]: type `" + type + "`") !=
          std::string::npos);
    CHECK(out.status().message().find("--transformer-config") != std::string::npos);
  }
  // The same field in a template refuses the template.
  auto tmpl = rfs::transform::TransformIndexTemplate("t",
                                                     json::parse(R"({"index_patterns":["h-*"],
          "template":{"mappings":{"properties":{"h":{"type":"histogram"}}}}})")
                                                         .as_object(),
                                                     To(3, 8));
  REQUIRE(!tmpl.ok());
  CHECK(tmpl.status().message().find("index template [t] refused: field [h]") != std::string::npos);
}

TEST_CASE("Elasticsearch-only field parameters are dropped and reported per field",
          "[transform][es-rules]") {
  const auto t = One(Index(R"j({
      "host":{"type":"keyword","time_series_dimension":true,"synthetic_source_keep":"arrays"},
      "cpu":{"type":"double","time_series_metric":"gauge"},
      "o":{"properties":{"n":{"type":"long","store_array_source":true}}},
      "calc":{"type":"long","script":{"source":"emit(1)"},"on_script_error":"continue"}})j"),
                     To(3, 8));
  CHECK(json::serialize(Field(t, "host")) == R"({"type":"keyword"})");
  CHECK(json::serialize(Field(t, "cpu")) == R"({"type":"double"})");
  CHECK(json::serialize(Field(t, "o.n")) == R"({"type":"long"})");
  CHECK(json::serialize(Field(t, "calc")) == R"({"type":"long"})");
  CHECK(HasNote(t.notes, "field [host]: parameter `time_series_dimension` dropped"));
  CHECK(HasNote(t.notes, "field [host]: parameter `synthetic_source_keep` dropped"));
  CHECK(HasNote(t.notes, "field [cpu]: parameter `time_series_metric` dropped"));
  CHECK(HasNote(t.notes, "field [o.n]: parameter `store_array_source` dropped"));
  CHECK(HasNote(t.notes, "field [calc]: parameter `script` dropped"));
}

TEST_CASE("subobjects false objects are expanded, or flat_object on a conflict",
          "[transform][es-rules]") {
  const auto t = One(Index(R"({
      "metrics":{"type":"object","subobjects":false,
                 "properties":{"cpu.user":{"type":"double"},"cpu.system":{"type":"double"},
                               "mem":{"type":"long"}}},
      "clash":{"subobjects":false,
               "properties":{"a":{"type":"keyword"},"a.b":{"type":"keyword"}}}})",
                           R"("subobjects":false)"),
                     To(3, 8));
  CHECK(json::serialize(Field(t, "metrics")) ==
        R"({"type":"object","properties":{"cpu":{"properties":{"user":{"type":"double"},)"
        R"("system":{"type":"double"}}},"mem":{"type":"long"}}})");
  CHECK(json::serialize(Field(t, "clash")) == R"({"type":"flat_object"})");
  CHECK(!t.body.at("mappings").as_object().contains("subobjects"));
  CHECK(HasNote(t.notes,
                "field [metrics]: `subobjects: false` translated: dotted child names "
                "expanded into objects"));
  CHECK(HasNote(t.notes, "field [clash]: `subobjects: false` translated to `flat_object`"));
  CHECK(HasNote(t.notes, "mapping root: `subobjects: false` translated"));

  // Before 2.7 there is no flat_object: the conflict refuses the index.
  auto old = rfs::transform::TransformIndex(
      Index(R"({"c":{"subobjects":false,"properties":{"a":{"type":"keyword"},
                                                     "a.b":{"type":"keyword"}}}})"),
      To(2, 5));
  REQUIRE(!old.ok());
  CHECK(old.status().message().find("field [c]: `subobjects: false` with a child that is both") !=
        std::string::npos);
}

TEST_CASE("dynamic runtime becomes false and runtime fields are dropped", "[transform][es-rules]") {
  const auto t = One(Index(R"({"o":{"dynamic":"runtime","properties":{"x":{"type":"long"}}}})",
                           R"j("dynamic":"runtime",
                             "runtime":{"day":{"type":"keyword","script":{"source":"emit('x')"}},
                                        "hour":{"type":"long"}},
                             "dynamic_templates":[
                               {"rt":{"match":"r_*","runtime":{"type":"long"}}},
                               {"kw":{"match":"k_*","mapping":{"type":"keyword"}}}])j"),
                     To(2, 14));
  const json::object& mappings = t.body.at("mappings").as_object();
  CHECK(mappings.at("dynamic") == false);
  CHECK(Field(t, "o").at("dynamic") == false);
  CHECK(!mappings.contains("runtime"));
  CHECK(!mappings.contains("derived"));
  CHECK(json::serialize(mappings.at("dynamic_templates")) ==
        R"([{"kw":{"match":"k_*","mapping":{"type":"keyword"}}}])");
  CHECK(HasNote(t.notes, "runtime fields [day, hour] dropped"));
  CHECK(HasNote(t.notes, "dynamic template [rt] dropped"));
  CHECK(HasNote(t.notes, "mapping root: `dynamic: runtime` translated to `false`"));
  CHECK(HasNote(t.notes, "field [o]: `dynamic: runtime` translated to `false`"));
}

TEST_CASE("runtime fields become derived fields where the target has them, else are dropped",
          "[transform][es-rules]") {
  const std::string runtime = R"j("runtime":{
      "day":{"type":"keyword","script":{"source":"emit(doc['ts'].value.dayOfWeekEnum.toString())"}},
      "twice":{"type":"long","script":"emit(doc['n'].value * 2)","on_script_error":"continue"},
      "when":{"type":"date","format":"yyyy-MM-dd",
              "script":{"source":"emit(params.base + doc['n'].value)","params":{"base":1000}}},
      "loc":{"type":"geo_point","script":{"source":"emit(doc['g'].lat, doc['g'].lon)"}},
      "from_source":{"type":"keyword"},
      "n":{"type":"double","script":{"source":"emit(doc['n'].value / 2.0)"}},
      "http.code":{"type":"long","script":{"source":"emit(200)"}},
      "parts":{"type":"composite","script":{"source":"emit(['a': 1])"},
               "fields":{"a":{"type":"long"}}},
      "other":{"type":"lookup","target_index":"ip_location","input_field":"host",
               "target_field":"ip","fetch_fields":["country"]},
      "grokked":{"type":"keyword","script":{"source":"emit(grok('%{IP:ip}').extract(params._source.m).ip)"}},
      "expr":{"type":"double","script":{"source":"doc['n'].value","lang":"expression"}},
      "noemit":{"type":"long","script":{"source":"return 1"}},
      "hist":{"type":"keyword","script":{"source":"emit(field('host').get(''))"}}})j";
  const std::string properties =
      R"({"ts":{"type":"date"},"n":{"type":"long"},"g":{"type":"geo_point"}})";
  const auto t = One(Index(properties, runtime), To(3, 8));
  const json::object& mappings = t.body.at("mappings").as_object();
  CHECK(!mappings.contains("runtime"));
  const json::object& derived = mappings.at("derived").as_object();
  CHECK(
      json::serialize(derived.at("day")) ==
      R"j({"type":"keyword","script":{"source":"emit(doc['ts'].value.dayOfWeekEnum.toString())",)j"
      R"j("lang":"painless"}})j");
  // A script given as a string, params and a date format are kept; on_script_error is dropped.
  CHECK(json::serialize(derived.at("twice")) ==
        R"j({"type":"long","script":{"source":"emit(doc['n'].value * 2)","lang":"painless"}})j");
  CHECK(json::serialize(derived.at("when")) ==
        R"j({"type":"date","script":{"source":"emit(params.base + doc['n'].value)",)j"
        R"j("params":{"base":1000},"lang":"painless"},"format":"yyyy-MM-dd"})j");
  CHECK(derived.at("loc").at("type") == "geo_point");
  CHECK(derived.size() == 4);
  CHECK(HasNote(t.notes, "runtime field [day] translated to a derived field (keyword"));
  CHECK(HasNote(t.notes,
                "runtime field [twice] translated to a derived field (long, the same "
                "Painless script; dropped `on_script_error`)"));
  CHECK(HasNote(t.notes, "runtime field [from_source] dropped: no script"));
  CHECK(HasNote(t.notes, "runtime field [n] dropped: the mapping also maps it"));
  CHECK(HasNote(t.notes, "runtime field [http.code] dropped: a dotted name"));
  CHECK(HasNote(t.notes, "runtime field [parts] dropped: type `composite`"));
  CHECK(HasNote(t.notes, "runtime field [other] dropped: type `lookup`"));
  CHECK(HasNote(t.notes, "runtime field [grokked] dropped: a script calling `grok(...)`"));
  CHECK(HasNote(t.notes, "runtime field [expr] dropped: a script in `expression`, not Painless"));
  CHECK(HasNote(t.notes, "runtime field [noemit] dropped: a script that never calls emit(...)"));
  CHECK(HasNote(t.notes, "runtime field [hist] dropped: a script calling `field(...)`"));

  // 2.15 is the first version with derived fields; 2.14 drops them all, naming each.
  CHECK(One(Index(properties, runtime), To(2, 15))
            .body.at("mappings")
            .at("derived")
            .as_object()
            .size() == 4);
  const auto old = One(Index(properties, runtime), To(2, 14));
  CHECK(!old.body.at("mappings").as_object().contains("derived"));
  CHECK(HasNote(old.notes, "runtime fields [day, twice, when, loc, from_source, n, http.code"));
  CHECK(HasNote(old.notes, "no derived fields before 2.15"));

  // Templates carry them too.
  auto component = rfs::transform::TransformComponentTemplate(
      "c",
      json::parse(R"j({"template":{"mappings":{"runtime":{
          "d":{"type":"keyword","script":"emit('x')"}}}}})j")
          .as_object(),
      To(2, 19));
  REQUIRE(component.ok());
  CHECK(component->body.at("template").at("mappings").at("derived").at("d").at("type") ==
        "keyword");
}

TEST_CASE("the rules apply in templates and dynamic templates", "[transform][es-rules]") {
  auto component =
      rfs::transform::TransformComponentTemplate("c",
                                                 json::parse(R"({"template":{"mappings":{
          "dynamic_templates":[{"vec":{"match":"v_*","mapping":{"type":"dense_vector","dims":4}}}],
          "properties":{"labels":{"type":"flattened"}}}}})")
                                                     .as_object(),
                                                 To(3, 8));
  REQUIRE(component.ok());
  const json::object& tmpl = component->body.at("template").as_object();
  CHECK(tmpl.at("mappings").at("properties").at("labels").at("type") == "flat_object");
  CHECK(tmpl.at("mappings").at("dynamic_templates").at(0).at("vec").at("mapping").at("type") ==
        "knn_vector");
  CHECK(tmpl.at("settings").at("index").at("knn") == true);
  CHECK(HasNote(component->notes, "field [dynamic template vec]: `dense_vector` translated"));

  auto legacy = rfs::transform::TransformLegacyTemplate(
      "l",
      json::parse(R"({"index_patterns":["l-*"],"mappings":{"_doc":{"properties":{
          "v":{"type":"version"},"h":{"type":"keyword","time_series_dimension":true}}}}})")
          .as_object(),
      To(2, 19));
  REQUIRE(legacy.ok());
  CHECK(legacy->body.at("mappings").at("properties").at("v").at("type") == "keyword");
  CHECK(json::serialize(legacy->body.at("mappings").at("properties").at("h")) ==
        R"({"type":"keyword"})");
}

TEST_CASE("Elasticsearch-only index settings are dropped", "[transform][es-rules]") {
  // Every setting row the table drops is dropped by the settings transform, and a kept one kept.
  for (const auto& rule : rfs::transform::EsMappingRules()) {
    if (rule.subject != rfs::transform::RuleSubject::kSetting) continue;
    INFO(rule.name);
    const bool dropped = rfs::transform::DropReason(rule.name, "x", To(3, 8)).has_value();
    if (rule.action == rfs::transform::RuleAction::kDrop) CHECK(dropped);
    if (rule.action == rfs::transform::RuleAction::kKeep) CHECK(!dropped);
  }
  SourceIndex index = Index(R"({"@timestamp":{"type":"date"}})");
  index.settings["index.mode"] = "logsdb";
  index.settings["index.sort.field"] = "@timestamp";
  const auto t = One(index, To(3, 8));
  CHECK(!t.body.at("settings").at("index").as_object().contains("mode"));
  CHECK(t.body.at("settings").at("index").at("sort").at("field") == "@timestamp");
}

TEST_CASE("docs/es-mapping-compatibility.md holds the table the code applies",
          "[transform][es-rules]") {
  // The page's table is rendered from EsMappingRules(); RFS_UPDATE_DOCS=1 rewrites it.
  const std::string path = std::string(RFS_DOCS_DIR) + "/es-mapping-compatibility.md";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::string page = text.str();
  const std::string begin =
      "<!-- BEGIN es-mapping-rules: rendered by RenderCompatibilityTable -->\n";
  const std::string end = "<!-- END es-mapping-rules -->";
  const size_t from = page.find(begin);
  const size_t to = page.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string table = rfs::transform::RenderCompatibilityTable();
  if (const char* update = std::getenv("RFS_UPDATE_DOCS"); update && std::string(update) == "1") {
    page.replace(from + begin.size(), to - from - begin.size(), table);
    std::ofstream(path) << page;
    return;
  }
  CHECK(page.substr(from + begin.size(), to - from - begin.size()) == table);
  // Every rule names its tests ("; " between two), and each is a test case of this file or of the
  // real-node tests (names split over source lines joined as the compiler joins them).
  std::string sources;
  for (const char* file : {"test/unit/transform/es_mapping_rules_test.cpp",
                           "test/real/es_mapping_real_test.cpp", "test/real/knn_real_test.cpp"}) {
    std::ifstream source(std::string(RFS_SOURCE_DIR) + "/" + file);
    REQUIRE(source.good());
    std::stringstream content;
    content << source.rdbuf();
    const std::string joined = std::regex_replace(content.str(), std::regex("\"\\s*\""), "");
    sources += std::regex_replace(joined, std::regex("TEST_CASE\\(\\s*\""), "TEST_CASE(\"");
  }
  for (const auto& rule : rfs::transform::EsMappingRules()) {
    REQUIRE(!rule.test.empty());
    size_t start = 0;
    while (start <= rule.test.size()) {
      const size_t end = std::min(rule.test.find("; ", start), rule.test.size());
      const std::string name(rule.test.substr(start, end - start));
      INFO(rule.name << " names the test \"" << name << "\"");
      CHECK(sources.find("TEST_CASE(\"" + name + "\"") != std::string::npos);
      start = end + 2;
    }
  }
}

TEST_CASE(
    "documents follow their mapping: hex vectors become byte arrays, legacy semantic_text "
    "its text",
    "[transform][es-rules]") {
  const auto conversions =
      rfs::transform::DocumentValueConversions::ForMappings(json::parse(R"({"_doc":{"properties":{
          "b":{"type":"dense_vector","dims":3,"element_type":"byte"},
          "bits":{"type":"dense_vector","dims":16,"element_type":"bit"},
          "f":{"type":"dense_vector","dims":2},
          "o":{"properties":{"inner":{"type":"dense_vector","dims":2,"element_type":"byte"}}},
          "body":{"type":"semantic_text","inference_id":"e5"},
          "kw":{"type":"keyword"}}}})")
                                                                .as_object());
  REQUIRE(!conversions.empty());
  auto apply = [&](std::string_view text) {
    json::object source = json::parse(text).as_object();
    const bool changed = conversions.Apply(source);
    return std::make_pair(changed, json::serialize(source));
  };
  // Elasticsearch reads hex as signed bytes: ff is -1, 80 is -128.
  CHECK(apply(R"({"b":"7f80ff","bits":"0aF0","kw":"7f"})") ==
        std::make_pair(true, std::string(R"({"b":[127,-128,-1],"bits":[10,-16],"kw":"7f"})")));
  // Arrays stay arrays; a float vector is never touched; a string that is not hex stays.
  CHECK(apply(R"({"b":[1,2,3],"f":["0102",2]})") ==
        std::make_pair(false, std::string(R"({"b":[1,2,3],"f":["0102",2]})")));
  CHECK(apply(R"({"b":"xyz0"})").first == false);
  CHECK(apply(R"({"b":"abc"})").first == false);
  // Through objects, arrays of objects and dotted keys.
  CHECK(apply(R"({"o":[{"inner":"0102"},{"inner":"ff00"}]})").second ==
        R"({"o":[{"inner":[1,2]},{"inner":[-1,0]}]})");
  CHECK(apply(R"({"o.inner":"0102"})").second == R"({"o.inner":[1,2]})");
  // semantic_text: the legacy source form becomes its text; a plain string stays.
  CHECK(
      apply(R"({"body":{"text":"hello","inference":{"inference_id":"e5","chunks":[]}}})").second ==
      R"({"body":"hello"})");
  CHECK(apply(R"({"body":{"text":["a","b"],"inference":{}}})").second == R"({"body":["a","b"]})");
  CHECK(apply(R"({"body":"plain"})").first == false);
  // An index without such fields converts nothing.
  CHECK(rfs::transform::DocumentValueConversions::ForMappings(
            json::parse(R"({"properties":{"v":{"type":"dense_vector","dims":2}}})").as_object())
            .empty());
}
