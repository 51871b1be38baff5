#include "rfs/solr/schema.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>

#include <boost/json.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::solr {

using core::StrCat;
namespace json = boost::json;
namespace pt = boost::property_tree;

namespace {

// Schemas are small; nesting deeper than this is not one Solr wrote (and the XML parser recurses
// per level).
constexpr size_t kMaxSchemaBytes = 16u << 20;
constexpr int kMaxDepth = 32;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The deepest element nesting of `xml`, skipping comments, CDATA, declarations and processing
// instructions; a rough count that only needs to bound what the parser will see.
int NestingDepth(std::string_view xml) {
  int depth = 0, deepest = 0;
  for (size_t i = 0; i < xml.size(); ++i) {
    if (xml[i] != '<' || i + 1 >= xml.size()) continue;
    const std::string_view rest = xml.substr(i);
    std::string_view end_marker;
    if (rest.starts_with("<!--")) {
      end_marker = "-->";
    } else if (rest.starts_with("<![CDATA[")) {
      end_marker = "]]>";
    } else if (rest[1] == '?' || rest[1] == '!') {
      end_marker = ">";
    }
    if (!end_marker.empty()) {
      const size_t end = xml.find(end_marker, i);
      if (end == std::string_view::npos) break;
      i = end + end_marker.size() - 1;
      continue;
    }
    const size_t close = xml.find('>', i);
    if (close == std::string_view::npos) break;
    if (rest[1] == '/') {
      --depth;
    } else if (xml[close - 1] != '/') {
      deepest = std::max(deepest, ++depth);
    }
    i = close;
  }
  return deepest;
}

std::map<std::string, std::string> Attributes(const pt::ptree& element) {
  std::map<std::string, std::string> out;
  if (auto attrs = element.get_child_optional("<xmlattr>")) {
    for (const auto& [key, value] : *attrs) out[key] = value.data();
  }
  return out;
}

std::string Attr(const std::map<std::string, std::string>& attrs, const std::string& key) {
  auto it = attrs.find(key);
  return it == attrs.end() ? "" : it->second;
}

// Solr reads boolean attributes with Boolean.parseBoolean: "true" in any case is true.
void ApplyBool(const std::map<std::string, std::string>& attrs, const std::string& key,
               bool& value) {
  if (auto it = attrs.find(key); it != attrs.end()) value = Lower(it->second) == "true";
}

// "solr.StrField", "org.apache.solr.schema.StrField" -> "StrField".
std::string ShortClass(std::string_view name) {
  const size_t dot = name.rfind('.');
  return std::string(dot == std::string_view::npos ? name : name.substr(dot + 1));
}

// The SPI name of an analysis factory class ("solr.LowerCaseFilterFactory" -> "lowerCase").
std::string SpiName(std::string_view class_name) {
  std::string name = ShortClass(class_name);
  for (std::string_view suffix : {"CharFilterFactory", "TokenizerFactory", "FilterFactory"}) {
    if (name.ends_with(suffix) && name.size() > suffix.size()) {
      name.resize(name.size() - suffix.size());
      break;
    }
  }
  if (!name.empty()) name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
  return name;
}

// Types whose fields have doc values by default from schema version 1.7 (FieldType.setArgs sets
// DOC_VALUES there; types that cannot have them, text and vectors, never do).
bool DocValuesByDefault(std::string_view class_name) {
  return class_name != "TextField" && class_name != "DenseVectorField" &&
         class_name != "NestPathField" && class_name != "BinaryField" &&
         class_name != "SpatialRecursivePrefixTreeFieldType" &&
         class_name != "RptWithGeometrySpatialField" && class_name != "PreAnalyzedField" &&
         class_name != "ExternalFileField" && class_name != "RandomSortField";
}

absl::StatusOr<SolrAnalyzer> ParseAnalyzer(const pt::ptree& element, std::string_view source,
                                           std::string_view type_name) {
  SolrAnalyzer analyzer;
  const auto attrs = Attributes(element);
  analyzer.type = Attr(attrs, "type");
  analyzer.class_name = ShortClass(Attr(attrs, "class"));
  for (const auto& [kind, child] : element) {
    if (kind != "tokenizer" && kind != "filter" && kind != "charFilter") continue;
    SolrAnalyzerStep step;
    step.kind = kind;
    step.attributes = Attributes(child);
    step.name = Attr(step.attributes, "name");
    if (step.name.empty()) step.name = SpiName(Attr(step.attributes, "class"));
    step.attributes.erase("name");
    step.attributes.erase("class");
    if (step.name.empty()) {
      return absl::DataLossError(
          StrCat(source, ": a ", kind, " of field type ", type_name, " has no name or class"));
    }
    analyzer.steps.push_back(std::move(step));
  }
  return analyzer;
}

}  // namespace

bool SolrField::Matches(std::string_view field_name) const {
  if (!dynamic) return field_name == name;
  if (name == "*") return true;
  if (name.starts_with("*")) return field_name.ends_with(std::string_view(name).substr(1));
  if (name.ends_with("*")) {
    return field_name.starts_with(std::string_view(name).substr(0, name.size() - 1));
  }
  return field_name == name;
}

const SolrField* SolrSchema::FindField(std::string_view field_name) const {
  for (const SolrField& f : fields) {
    if (f.name == field_name) return &f;
  }
  return nullptr;
}

const SolrField* SolrSchema::FieldFor(std::string_view field_name) const {
  if (const SolrField* f = FindField(field_name)) return f;
  for (const SolrField& f : dynamic_fields) {
    if (f.Matches(field_name)) return &f;
  }
  return nullptr;
}

const SolrFieldType* SolrSchema::TypeOf(const SolrField& field) const {
  auto it = types.find(field.type);
  return it == types.end() ? nullptr : &it->second;
}

namespace {

// A <fieldType>: its name, class and attributes, and its analyzers.
absl::StatusOr<SolrFieldType> ParseFieldType(const pt::ptree& element, std::string_view source) {
  SolrFieldType type;
  type.attributes = Attributes(element);
  type.name = Attr(type.attributes, "name");
  type.class_name = ShortClass(Attr(type.attributes, "class"));
  if (type.name.empty() || type.class_name.empty()) {
    return absl::DataLossError(StrCat(source, ": a <fieldType> without name or class"));
  }
  for (const auto& [child_name, child] : element) {
    if (child_name != "analyzer") continue;
    auto analyzer = ParseAnalyzer(child, source, type.name);
    if (!analyzer.ok()) return analyzer.status();
    type.analyzers.push_back(*std::move(analyzer));
  }
  return type;
}

// A <copyField>: source, dest and maxChars.
absl::StatusOr<SolrCopyField> ParseCopyField(const pt::ptree& element, std::string_view source) {
  const auto attrs = Attributes(element);
  SolrCopyField copy{Attr(attrs, "source"), Attr(attrs, "dest"), 0};
  if (copy.source.empty() || copy.dest.empty()) {
    return absl::DataLossError(StrCat(source, ": a <copyField> without source or dest"));
  }
  if (const std::string max = Attr(attrs, "maxChars"); !max.empty()) {
    try {
      copy.max_chars = std::stoi(max);
    } catch (const std::exception&) {
      return absl::DataLossError(StrCat(source, ": copyField ", copy.source, " -> ", copy.dest,
                                        ": maxChars '", max, "' is no number"));
    }
  }
  return copy;
}

// A <field> or <dynamicField> (`name`) of a declared type, its properties from the schema
// version's defaults, then its type's, then its own.
absl::StatusOr<SolrField> ParseField(const std::string& name, const pt::ptree& element,
                                     const SolrSchema& schema, std::string_view source) {
  const auto attrs = Attributes(element);
  SolrField field;
  field.name = Attr(attrs, "name");
  field.type = Attr(attrs, "type");
  field.dynamic = name == "dynamicField";
  if (field.name.empty())
    return absl::DataLossError(StrCat(source, ": a <", name, "> without name"));
  auto type = schema.types.find(field.type);
  if (type == schema.types.end()) {
    return absl::DataLossError(StrCat(source, ": field ", field.name, " has type '", field.type,
                                      "', which the schema does not declare"));
  }
  // Defaults of the schema version, then the type's properties, then the field's.
  field.doc_values = schema.version >= 1.7 && DocValuesByDefault(type->second.class_name);
  if (type->second.class_name == "SortableTextField") field.doc_values = true;
  field.use_doc_values_as_stored = schema.version >= 1.6;
  using Attrs = std::map<std::string, std::string>;
  for (const Attrs* source_attrs : {static_cast<const Attrs*>(&type->second.attributes), &attrs}) {
    ApplyBool(*source_attrs, "indexed", field.indexed);
    ApplyBool(*source_attrs, "stored", field.stored);
    ApplyBool(*source_attrs, "docValues", field.doc_values);
    ApplyBool(*source_attrs, "multiValued", field.multi_valued);
    ApplyBool(*source_attrs, "useDocValuesAsStored", field.use_doc_values_as_stored);
    ApplyBool(*source_attrs, "required", field.required);
  }
  return field;
}

}  // namespace

absl::StatusOr<SolrSchema> ParseSchema(std::string_view xml, std::string_view source) {
  if (xml.size() > kMaxSchemaBytes) {
    return absl::DataLossError(StrCat(source, ": ", xml.size(), " bytes is no Solr schema"));
  }
  if (NestingDepth(xml) > kMaxDepth) {
    return absl::DataLossError(
        StrCat(source, ": elements nested deeper than ", kMaxDepth, ": not a Solr schema"));
  }
  pt::ptree tree;
  try {
    std::istringstream in{std::string(xml)};
    pt::read_xml(in, tree, pt::xml_parser::no_comments);
  } catch (const pt::xml_parser_error& e) {
    return absl::DataLossError(StrCat(source, ": line ", static_cast<int64_t>(e.line()),
                                      ": not valid XML: ", e.message()));
  }
  auto root = tree.get_child_optional("schema");
  if (!root) return absl::DataLossError(StrCat(source, ": no <schema> root element"));
  SolrSchema schema;
  const auto root_attrs = Attributes(*root);
  schema.name = Attr(root_attrs, "name");
  if (const std::string version = Attr(root_attrs, "version"); !version.empty()) {
    try {
      schema.version = std::stod(version);
    } catch (const std::exception&) {
      return absl::DataLossError(StrCat(source, ": schema version '", version, "' is no number"));
    }
  }

  // Elements directly under <schema>, or under the <types> and <fields> of older schemas.
  std::vector<std::pair<std::string, const pt::ptree*>> elements;
  for (const auto& [name, child] : *root) {
    if (name == "types" || name == "fields") {
      for (const auto& [inner_name, inner] : child) elements.emplace_back(inner_name, &inner);
    } else {
      elements.emplace_back(name, &child);
    }
  }
  for (const auto& [name, element] : elements) {
    if (name != "fieldType" && name != "fieldtype") continue;
    RFS_ASSIGN_OR_RETURN(SolrFieldType type, ParseFieldType(*element, source));
    std::string key = type.name;
    schema.types[key] = std::move(type);
  }
  for (const auto& [name, element] : elements) {
    if (name == "uniqueKey") {
      schema.unique_key = element->data();
      while (!schema.unique_key.empty() &&
             std::isspace(static_cast<unsigned char>(schema.unique_key.back()))) {
        schema.unique_key.pop_back();
      }
      while (!schema.unique_key.empty() &&
             std::isspace(static_cast<unsigned char>(schema.unique_key.front()))) {
        schema.unique_key.erase(0, 1);
      }
      continue;
    }
    if (name == "copyField") {
      RFS_ASSIGN_OR_RETURN(SolrCopyField copy, ParseCopyField(*element, source));
      schema.copy_fields.push_back(std::move(copy));
      continue;
    }
    if (name != "field" && name != "dynamicField") continue;
    RFS_ASSIGN_OR_RETURN(SolrField field, ParseField(name, *element, schema, source));
    (field.dynamic ? schema.dynamic_fields : schema.fields).push_back(std::move(field));
  }
  // IndexSchema.DynamicField's order: the longest pattern first.
  std::stable_sort(
      schema.dynamic_fields.begin(), schema.dynamic_fields.end(),
      [](const SolrField& a, const SolrField& b) { return a.name.size() > b.name.size(); });
  return schema;
}

bool IsInternalField(std::string_view name) {
  return name == "_version_" || name == "_root_" || name == "_nest_path_";
}

namespace {

// One analysis component of OpenSearch, or why there is none.
struct Translated {
  bool ok = false;
  json::value component;  // a built-in name (string) or a custom definition (object)
  std::string why;
};

// Attributes a step may carry that the translation takes into account; any other changes what
// the step does, so the step is not translated.
bool OnlyAttributes(const SolrAnalyzerStep& step, std::initializer_list<std::string_view> known,
                    std::string& why) {
  for (const auto& [key, value] : step.attributes) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      why = StrCat(step.kind, " ", step.name, " with ", key, "=\"", value, "\"");
      return false;
    }
  }
  return true;
}

json::value IntAttr(const SolrAnalyzerStep& step, const std::string& key, int64_t fallback) {
  auto it = step.attributes.find(key);
  if (it == step.attributes.end()) return fallback;
  try {
    return static_cast<int64_t>(std::stoll(it->second));
  } catch (const std::exception&) {
    return fallback;
  }
}

namespace {

// Analysis components that translate by name alone (no attributes): Solr's factory name (lower
// case, without Tokenizer/Filter/CharFilterFactory) to OpenSearch's.
std::optional<std::string_view> RenamedComponent(std::string_view kind, std::string_view name) {
  struct Rename {
    std::string_view kind, solr, opensearch;
  };
  static constexpr Rename kRenames[] = {
      {"tokenizer", "standard", "standard"},
      {"tokenizer", "whitespace", "whitespace"},
      {"tokenizer", "keyword", "keyword"},
      {"tokenizer", "classic", "classic"},
      {"tokenizer", "letter", "letter"},
      {"tokenizer", "lowercase", "lowercase"},
      {"tokenizer", "uax29urlemail", "uax_url_email"},
      {"tokenizer", "pathhierarchy", "path_hierarchy"},
      {"filter", "lowercase", "lowercase"},
      {"filter", "uppercase", "uppercase"},
      {"filter", "trim", "trim"},
      {"filter", "classic", "classic"},
      {"filter", "apostrophe", "apostrophe"},
      {"filter", "kstem", "kstem"},
      {"filter", "porterstem", "porter_stem"},
      {"filter", "reversestring", "reverse"},
      {"filter", "removeduplicates", "remove_duplicates"},
      {"filter", "flattengraph", "flatten_graph"},
      {"filter", "decimaldigit", "decimal_digit"},
      {"charFilter", "htmlstrip", "html_strip"},
  };
  for (const Rename& r : kRenames) {
    if (r.kind == kind && r.solr == name) return r.opensearch;
  }
  return std::nullopt;
}

}  // namespace

Translated TranslateStep(const SolrAnalyzerStep& step) {
  Translated t;
  const std::string name = Lower(step.name);
  const bool tokenizer = step.kind == "tokenizer";
  const bool filter = step.kind == "filter";
  if (const auto renamed = RenamedComponent(step.kind, name)) {
    if (OnlyAttributes(step, {}, t.why)) {
      t.ok = true;
      t.component = json::string(*renamed);
    }
  } else if ((tokenizer || filter) && (name == "ngram" || name == "edgengram")) {
    // NGram and EdgeNGram, the tokenizer's and the filter's alike.
    if (!OnlyAttributes(step, {"minGramSize", "maxGramSize"}, t.why)) return t;
    t.ok = true;
    t.component = json::object{{"type", name == "ngram" ? "ngram" : "edge_ngram"},
                               {"min_gram", IntAttr(step, "minGramSize", 1)},
                               {"max_gram", IntAttr(step, "maxGramSize", name == "ngram" ? 2 : 1)}};
  } else if (tokenizer && name == "pattern") {
    if (!OnlyAttributes(step, {"pattern", "group"}, t.why)) return t;
    t.ok = true;
    t.component =
        json::object{{"type", "pattern"},
                     {"pattern", step.attributes.count("pattern") ? step.attributes.at("pattern")
                                                                  : std::string("\\W+")},
                     {"group", IntAttr(step, "group", -1)}};
  } else if (filter && name == "asciifolding") {
    if (!OnlyAttributes(step, {"preserveOriginal"}, t.why)) return t;
    t.ok = true;
    t.component = "asciifolding";
    if (step.attributes.count("preserveOriginal") &&
        Lower(step.attributes.at("preserveOriginal")) == "true") {
      t.component = json::object{{"type", "asciifolding"}, {"preserve_original", true}};
    }
  } else if (filter && (name == "englishminimalstem" || name == "englishpossessive")) {
    if (!OnlyAttributes(step, {}, t.why)) return t;
    t.ok = true;
    t.component = json::object{
        {"type", "stemmer"},
        {"language", name == "englishminimalstem" ? "minimal_english" : "possessive_english"}};
  } else if (filter && name == "length") {
    if (!OnlyAttributes(step, {"min", "max"}, t.why)) return t;
    t.ok = true;
    t.component = json::object{{"type", "length"},
                               {"min", IntAttr(step, "min", 0)},
                               {"max", IntAttr(step, "max", INT32_MAX)}};
  } else if (filter && name == "stop") {
    // Without a words file, Lucene's StopFilterFactory uses its English set, which is
    // OpenSearch's _english_; a file's words are not read here.
    if (!OnlyAttributes(step, {"ignoreCase"}, t.why)) return t;
    t.ok = true;
    t.component = json::object{{"type", "stop"}, {"stopwords", "_english_"}};
    if (step.attributes.count("ignoreCase")) {
      t.component.as_object()["ignore_case"] = Lower(step.attributes.at("ignoreCase")) == "true";
    }
  }
  if (!t.ok && t.why.empty())
    t.why = StrCat(step.kind, " ", step.name, " has no OpenSearch equivalent here");
  return t;
}

// The OpenSearch analyzer of one Solr analyzer: a built-in name, or a custom analyzer added to
// `analysis` under `name`. nullopt (with `why`) when a step has no equivalent.
std::optional<std::string> TranslateAnalyzer(const SolrAnalyzer& analyzer, const std::string& name,
                                             json::object& analysis, std::string& why) {
  if (!analyzer.class_name.empty()) {
    static const std::map<std::string, std::string> kBuiltIn = {
        {"StandardAnalyzer", "standard"}, {"WhitespaceAnalyzer", "whitespace"},
        {"KeywordAnalyzer", "keyword"},   {"SimpleAnalyzer", "simple"},
        {"StopAnalyzer", "stop"},         {"EnglishAnalyzer", "english"}};
    auto it = kBuiltIn.find(analyzer.class_name);
    if (it == kBuiltIn.end()) {
      why = StrCat("analyzer class ", analyzer.class_name, " has no OpenSearch equivalent here");
      return std::nullopt;
    }
    return it->second;
  }
  json::value tokenizer;
  json::array filters, char_filters;
  json::object custom_tokenizers, custom_filters, custom_char_filters;
  int counter = 0;
  for (const SolrAnalyzerStep& step : analyzer.steps) {
    Translated t = TranslateStep(step);
    if (!t.ok) {
      why = t.why;
      return std::nullopt;
    }
    json::value ref = t.component;
    if (t.component.is_object()) {
      const std::string custom =
          StrCat(name, "_", step.kind == "charFilter" ? "char_filter" : step.kind, "_", counter++);
      (step.kind == "tokenizer" ? custom_tokenizers
       : step.kind == "filter"  ? custom_filters
                                : custom_char_filters)[custom] = t.component;
      ref = json::string(custom);
    }
    if (step.kind == "tokenizer") {
      tokenizer = ref;
    } else if (step.kind == "filter") {
      filters.push_back(ref);
    } else {
      char_filters.push_back(ref);
    }
  }
  if (tokenizer.is_null()) {
    why = "the analyzer has no tokenizer";
    return std::nullopt;
  }
  // OpenSearch's standard analyzer is exactly the standard tokenizer and lowercase filter.
  if (tokenizer == "standard" && filters == json::array{"lowercase"} && char_filters.empty()) {
    return std::string("standard");
  }
  // Definitions made for other analyzers stay: merge into what `analysis` holds.
  for (const auto& [key, defs] :
       {std::pair<const char*, json::object*>{"tokenizer", &custom_tokenizers},
        {"filter", &custom_filters},
        {"char_filter", &custom_char_filters}}) {
    if (defs->empty()) continue;
    json::value& slot = analysis[key];
    if (!slot.is_object()) slot.emplace_object();
    for (auto& [k, v] : *defs) slot.as_object()[k] = v;
  }
  json::object def{{"type", "custom"}, {"tokenizer", tokenizer}};
  if (!filters.empty()) def["filter"] = filters;
  if (!char_filters.empty()) def["char_filter"] = char_filters;
  json::value& analyzers = analysis["analyzer"];
  if (!analyzers.is_object()) analyzers.emplace_object();
  analyzers.as_object()[name] = std::move(def);
  return name;
}

std::string Describe(const SolrField& field) {
  std::string out;
  const auto add = [&](bool on, std::string_view what) {
    if (on) out += StrCat(out.empty() ? "" : ",", what);
  };
  add(field.indexed, "indexed");
  add(field.stored, "stored");
  add(field.doc_values, "docValues");
  add(field.multi_valued, "multiValued");
  return out.empty() ? std::string("nothing") : out;
}

struct MappingBuilder {
  const SolrSchema& schema;
  SchemaMapping out;
  json::object analysis;
  // Analyzers made per field type (by type name), so that each is translated once.
  std::map<std::string, std::pair<std::string, std::string>> analyzers_by_type;

  // The analyzer (and search analyzer) of a text type.
  std::pair<std::string, std::string> AnalyzersOf(const SolrFieldType& type) {
    if (auto it = analyzers_by_type.find(type.name); it != analyzers_by_type.end()) {
      return it->second;
    }
    const SolrAnalyzer* index = nullptr;
    const SolrAnalyzer* query = nullptr;
    for (const SolrAnalyzer& a : type.analyzers) {
      if (a.type.empty() || a.type == "index") index = index == nullptr ? &a : index;
      if (a.type == "query") query = &a;
    }
    std::pair<std::string, std::string> result{"standard", ""};
    if (index == nullptr) {
      out.decisions.push_back(StrCat("field type ", type.name, " (", type.class_name,
                                     "): no analyzer given; OpenSearch's standard analyzer"));
    } else {
      std::string why;
      const std::string base = StrCat("solr_", type.name);
      auto translated = TranslateAnalyzer(*index, base, analysis, why);
      if (!translated) {
        out.decisions.push_back(StrCat("field type ", type.name, ": analyzer not translated (", why,
                                       "); OpenSearch's standard analyzer instead"));
      } else {
        result.first = *translated;
        out.decisions.push_back(
            StrCat("field type ", type.name, ": analyzer translated as ", *translated));
        if (query != nullptr && query != index) {
          std::string query_why;
          auto q = TranslateAnalyzer(*query, base + "_query", analysis, query_why);
          if (!q) {
            out.decisions.push_back(StrCat("field type ", type.name,
                                           ": query analyzer not translated (", query_why,
                                           "); searches use the index analyzer"));
          } else if (*q != result.first) {
            result.second = *q;
            out.decisions.push_back(
                StrCat("field type ", type.name, ": query analyzer translated as ", *q));
          }
        }
      }
    }
    analyzers_by_type[type.name] = result;
    return result;
  }

  // The mapping of one field (or dynamic field), and the decision in words; nullopt for a
  // type whose values the index does not hold.
  std::optional<json::object> MappingOf(const SolrField& field, std::string& decision) {
    const SolrFieldType* type = schema.TypeOf(field);
    const std::string& c = type->class_name;
    json::object m;
    const auto is = [&](std::initializer_list<std::string_view> names) {
      return std::find(names.begin(), names.end(), c) != names.end();
    };
    if (is({"StrField", "UUIDField", "EnumFieldType", "EnumField", "CollationField",
            "ICUCollationField"})) {
      m["type"] = "keyword";
    } else if (is({"TextField", "SortableTextField"})) {
      m["type"] = "text";
      auto [analyzer, search] = AnalyzersOf(*type);
      if (analyzer != "standard") m["analyzer"] = analyzer;
      if (!search.empty()) m["search_analyzer"] = search;
      if (c == "SortableTextField") {
        m["fields"] =
            json::object{{"keyword", json::object{{"type", "keyword"}, {"ignore_above", 1024}}}};
      }
    } else if (is({"BoolField"})) {
      m["type"] = "boolean";
    } else if (is({"IntPointField", "TrieIntField", "IntField"})) {
      m["type"] = "integer";
    } else if (is({"LongPointField", "TrieLongField", "LongField"})) {
      m["type"] = "long";
    } else if (is({"FloatPointField", "TrieFloatField", "FloatField", "RankField"})) {
      m["type"] = "float";
    } else if (is({"DoublePointField", "TrieDoubleField", "DoubleField"})) {
      m["type"] = "double";
    } else if (is({"DatePointField", "TrieDateField", "DateField"})) {
      m["type"] = "date";
    } else if (is({"LatLonPointSpatialField", "LatLonType"})) {
      m["type"] = "geo_point";
    } else if (is({"SpatialRecursivePrefixTreeFieldType", "RptWithGeometrySpatialField",
                   "BBoxField"})) {
      m["type"] = "geo_shape";
    } else if (is({"BinaryField"})) {
      m["type"] = "binary";
    } else if (is({"DenseVectorField"})) {
      const auto& a = type->attributes;
      int64_t dimension = 0;
      try {
        dimension = std::stoll(Attr(a, "vectorDimension"));
      } catch (const std::exception&) {
        dimension = 0;
      }
      if (dimension <= 0) {
        decision = StrCat(c, " without a vectorDimension: not mapped");
        return std::nullopt;
      }
      // DenseVectorField's similarityFunction (default euclidean) as the k-NN space type.
      const std::string similarity = Lower(Attr(a, "similarityFunction"));
      std::string space = "l2";
      if (similarity == "cosine") space = "cosinesimil";
      if (similarity == "dot_product") space = "innerproduct";
      if (similarity == "max_inner_product") space = "innerproduct";
      m["type"] = "knn_vector";
      m["dimension"] = dimension;
      if (Lower(Attr(a, "vectorEncoding")) == "byte") m["data_type"] = "byte";
      m["method"] = json::object{{"name", "hnsw"}, {"engine", "lucene"}, {"space_type", space}};
    } else if (is({"CurrencyFieldType", "CurrencyField", "DateRangeField", "PointType"})) {
      m["type"] = "keyword";
      decision = StrCat(c, " -> keyword (OpenSearch has no such type; values kept as text)");
    } else if (is({"ExternalFileField", "RandomSortField", "PreAnalyzedField", "NestPathField"})) {
      decision = StrCat(c, ": the index holds no values to migrate; not mapped");
      return std::nullopt;
    } else {
      m["type"] = "keyword";
      decision = StrCat("unknown class ", c, ": mapped as keyword");
    }
    if (!field.indexed && m["type"] != "knn_vector") m["index"] = false;
    if (decision.empty()) decision = StrCat(c, " -> ", json::value_to<std::string>(m["type"]));
    decision += StrCat(" [", Describe(field), "]");
    return m;
  }
};

}  // namespace

// A <copyField> as copy_to on its source's mapping, when it names one field of each side and
// the destination is one Solr does not return (a returned one comes with each document).
void TranslateCopyField(const SolrSchema& schema, const SolrCopyField& copy, MappingBuilder& b,
                        json::object& properties) {
  const std::string what = StrCat("copyField ", copy.source, " -> ", copy.dest);
  if (copy.source.find('*') != std::string::npos || copy.dest.find('*') != std::string::npos) {
    b.out.decisions.push_back(
        StrCat(what, ": a pattern: not translated (copy_to names one field)"));
    return;
  }
  const SolrField* source = schema.FieldFor(copy.source);
  const SolrField* dest = schema.FieldFor(copy.dest);
  if (source == nullptr || dest == nullptr) {
    b.out.decisions.push_back(StrCat(what, ": ", source == nullptr ? copy.source : copy.dest,
                                     " matches no field of the schema: not translated"));
    return;
  }
  if (dest->returned()) {
    b.out.decisions.push_back(StrCat(what, ": ", copy.dest,
                                     " is returned by Solr, so its values come with each "
                                     "document: no copy_to"));
    return;
  }
  // copy_to names fields mapped explicitly: a dynamic source or dest gets its mapping here.
  for (const SolrField* f : {source, dest}) {
    const std::string& name = f == source ? copy.source : copy.dest;
    if (properties.contains(name)) continue;
    std::string ignored;
    if (auto m = b.MappingOf(*f, ignored)) properties[name] = std::move(*m);
  }
  if (!properties.contains(copy.source)) return;
  json::value& copy_to = properties[copy.source].as_object()["copy_to"];
  if (!copy_to.is_array()) copy_to.emplace_array();
  copy_to.as_array().push_back(json::string(copy.dest));
  b.out.decisions.push_back(
      StrCat(what, ": copy_to",
             copy.max_chars > 0 ? StrCat(" (maxChars ", copy.max_chars, " not kept: whole values)")
                                : std::string()));
}

// The fields of the index that dynamic fields made, mapped by name.
void MapIndexFields(const SolrSchema& schema, const std::vector<std::string>& index_fields,
                    MappingBuilder& b, json::object& properties) {
  for (const std::string& name : std::set<std::string>(index_fields.begin(), index_fields.end())) {
    if (IsInternalField(name) || schema.FindField(name) != nullptr) continue;
    const SolrField* field = schema.FieldFor(name);
    if (field == nullptr) {
      b.out.decisions.push_back(
          StrCat(name, ": in the index but matches no field of the schema: not mapped"));
      continue;
    }
    std::string decision;
    auto m = b.MappingOf(*field, decision);
    b.out.decisions.push_back(StrCat(name, " (from ", field->name, "): ", decision));
    if (m) properties[name] = std::move(*m);
  }
}

SchemaMapping MappingFromSchema(const SolrSchema& schema,
                                const std::vector<std::string>& index_fields) {
  MappingBuilder b{schema, {}, {}, {}};
  json::object properties;
  json::array templates;
  std::set<std::string> copy_destinations;
  for (const SolrCopyField& copy : schema.copy_fields) copy_destinations.insert(copy.dest);

  const auto note_unreturned = [&](const SolrField& field) {
    if (field.returned()) return;
    if (copy_destinations.count(field.name)) {
      b.out.decisions.push_back(StrCat(field.name,
                                       ": not stored in Solr; copy_to fills it at the "
                                       "target from its copy field sources"));
    } else {
      b.out.unrebuildable.push_back(
          StrCat(field.name,
                 ": indexed only (neither stored nor doc values returned as stored): "
                 "Solr returns no values of it, so none can be migrated"));
    }
  };

  if (!schema.unique_key.empty()) {
    b.out.decisions.push_back(StrCat(schema.unique_key, ": the uniqueKey: each document's _id (",
                                     "and kept as a field)"));
  }
  if (schema.nested()) {
    templates.push_back(json::object{
        {"solr_child_documents", json::object{{"match_mapping_type", "object"},
                                              {"mapping", json::object{{"type", "nested"}}}}}});
    b.out.decisions.push_back(
        "_root_: the schema has child documents: each becomes a nested object under its parent "
        "(its label, or _childDocuments_ for anonymous children)");
  }
  for (const SolrField& field : schema.fields) {
    if (IsInternalField(field.name)) {
      b.out.decisions.push_back(StrCat(field.name, ": Solr's internal field; not migrated"));
      continue;
    }
    std::string decision;
    auto m = b.MappingOf(field, decision);
    b.out.decisions.push_back(StrCat(field.name, ": ", decision));
    if (m) properties[field.name] = std::move(*m);
    note_unreturned(field);
  }
  // Fields of the index that dynamic fields made, by name.
  MapIndexFields(schema, index_fields, b, properties);
  for (const SolrField& field : schema.dynamic_fields) {
    std::string decision;
    auto m = b.MappingOf(field, decision);
    if (m && m->at("type") == "knn_vector") {
      // OpenSearch maps a new array's elements one by one, which a knn_vector refuses: vectors
      // are mapped by name, for each field of the index this dynamic field made.
      b.out.decisions.push_back(StrCat(field.name, " (dynamic): ", decision,
                                       "; mapped by name for each such field of the index (no "
                                       "dynamic template: one cannot map a vector)"));
      continue;
    }
    b.out.decisions.push_back(StrCat(field.name, " (dynamic): ", decision));
    if (!m) continue;
    templates.push_back(
        json::object{{field.name, json::object{{"match", field.name}, {"mapping", *m}}}});
    note_unreturned(field);
  }
  for (const SolrCopyField& copy : schema.copy_fields) {
    TranslateCopyField(schema, copy, b, properties);
  }
  // The k-NN plugin's index setting, only where a vector field is mapped (an OpenSearch without
  // the plugin refuses the setting).
  for (const auto& [name, m] : properties) {
    if (m.is_object() && m.as_object().contains("type") && m.at("type") == "knn_vector") {
      b.out.settings["index"] = json::object{{"knn", true}};
      break;
    }
  }
  b.out.mappings["properties"] = std::move(properties);
  if (!templates.empty()) b.out.mappings["dynamic_templates"] = std::move(templates);
  if (!b.analysis.empty()) b.out.settings["analysis"] = std::move(b.analysis);
  return b.out;
}

}  // namespace rfs::solr
