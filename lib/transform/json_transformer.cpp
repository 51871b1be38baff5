// The transformer configuration loader (the Java tool's TransformationLoader format) and the
// providers that need no engine: Noop, document type removal, the chain and the conditional.
#include "rfs/transform/json_transformer.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "json_transformers_internal.hpp"

namespace rfs::transform {

namespace json = boost::json;
using core::StrCat;

namespace {

class NoopTransformer final : public IJsonTransformer {
 public:
  absl::StatusOr<json::value> Transform(json::value input) override { return input; }
  bool ReadsDocumentSource() const override { return false; }
  std::string Describe() const override { return "NoopTransformerProvider"; }
};

// Removes operation._type from each document (the Java tool's default document transform).
class DocumentTypeRemoval final : public IJsonTransformer {
 public:
  absl::StatusOr<json::value> Transform(json::value input) override {
    auto strip = [](json::value& item) {
      if (!item.is_object()) return;
      if (json::value* op = item.as_object().if_contains("operation"); op && op->is_object()) {
        op->as_object().erase("_type");
      }
    };
    if (input.is_array()) {
      for (auto& item : input.as_array()) strip(item);
    } else {
      strip(input);
    }
    return input;
  }
  bool ReadsDocumentSource() const override { return false; }
  std::string Describe() const override { return "JsonTransformerForDocumentTypeRemovalProvider"; }
};

class ChainTransformer final : public IJsonTransformer {
 public:
  explicit ChainTransformer(std::vector<std::unique_ptr<IJsonTransformer>> links)
      : links_(std::move(links)) {}
  absl::StatusOr<json::value> Transform(json::value input) override {
    for (size_t i = 0; i < links_.size(); ++i) {
      auto out = links_[i]->Transform(std::move(input));
      if (!out.ok()) {
        // Errors name the transformer that failed, so a failed document's reason says where.
        const std::string where =
            links_.size() == 1 ? links_[i]->Describe()
                               : StrCat("transformer ", i + 1, " (", links_[i]->Describe(), ")");
        return core::WithContext(out.status(), where);
      }
      input = *std::move(out);
    }
    return input;
  }
  bool ReadsDocumentSource() const override {
    for (const auto& link : links_) {
      if (link->ReadsDocumentSource()) return true;
    }
    return false;
  }
  std::string Describe() const override {
    std::string out;
    for (const auto& link : links_) out += (out.empty() ? "" : ", ") + link->Describe();
    return out.empty() ? "no transformers" : out;
  }

 private:
  std::vector<std::unique_ptr<IJsonTransformer>> links_;
};

// [predicate, [transformers]]: each document (or the metadata item) the predicate accepts goes
// through the transformers; the others pass unchanged. Documents are tested one by one (the Java
// tool tests its whole input, which for documents is a batch).
class ConditionalTransformer final : public IJsonTransformer {
 public:
  ConditionalTransformer(std::unique_ptr<IJsonPredicate> predicate,
                         std::unique_ptr<IJsonTransformer> then)
      : predicate_(std::move(predicate)), then_(std::move(then)) {}
  absl::StatusOr<json::value> Transform(json::value input) override {
    if (!input.is_array()) {
      RFS_ASSIGN_OR_RETURN(bool match, predicate_->Test(input));
      if (!match) return input;
      return then_->Transform(std::move(input));
    }
    // Runs of documents with the same answer go through together, in order.
    json::array out;
    json::array run;
    bool run_matches = false;
    auto flush = [&]() -> absl::Status {
      if (run.empty()) return absl::OkStatus();
      if (!run_matches) {
        for (auto& v : run) out.push_back(std::move(v));
      } else {
        RFS_ASSIGN_OR_RETURN(json::value done, then_->Transform(json::value(std::move(run))));
        if (!done.is_array()) {
          return absl::InvalidArgumentError("the conditional's transformers returned no array");
        }
        for (auto& v : done.as_array()) out.push_back(std::move(v));
      }
      run = json::array();
      return absl::OkStatus();
    };
    for (auto& item : input.as_array()) {
      RFS_ASSIGN_OR_RETURN(bool match, predicate_->Test(item));
      if (match != run_matches) {
        RFS_RETURN_IF_ERROR(flush());
        run_matches = match;
      }
      run.push_back(std::move(item));
    }
    RFS_RETURN_IF_ERROR(flush());
    return json::value(std::move(out));
  }
  bool ReadsDocumentSource() const override {
    return predicate_->ReadsDocumentSource() || then_->ReadsDocumentSource();
  }
  std::string Describe() const override {
    return StrCat("JsonConditionalTransformerProvider [", then_->Describe(), "]");
  }

 private:
  std::unique_ptr<IJsonPredicate> predicate_;
  std::unique_ptr<IJsonTransformer> then_;
};

absl::Status ConfigError(size_t position, std::string_view provider, std::string_view problem) {
  return absl::InvalidArgumentError(
      StrCat("transformer configuration entry ", position, " (", provider, "): ", problem));
}

// One {"Name": config} entry (or a bare name) -> its provider name and config.
absl::StatusOr<std::pair<std::string, json::value>> SplitEntry(const json::value& entry,
                                                               size_t position) {
  if (entry.is_string()) return std::pair{std::string(entry.as_string()), json::value()};
  if (!entry.is_object() || entry.as_object().size() != 1) {
    return absl::InvalidArgumentError(
        StrCat("transformer configuration entry ", position,
               " must be an object with exactly one key, the provider name, e.g. "
               "{\"NoopTransformerProvider\": {}}; got ",
               json::serialize(entry).substr(0, 200)));
  }
  const auto& [name, config] = *entry.as_object().begin();
  return std::pair{std::string(name), config};
}

absl::StatusOr<std::unique_ptr<IJsonTransformer>> LoadList(const json::value& list,
                                                           const TransformerContext& context);

absl::StatusOr<std::unique_ptr<IJsonPredicate>> LoadPredicate(const json::value& entry,
                                                              const TransformerContext& context) {
  RFS_ASSIGN_OR_RETURN(auto named, SplitEntry(entry, 1));
  auto& [name, config] = named;
  absl::StatusOr<std::unique_ptr<IJsonPredicate>> made;
  if (name == "JsonJSPredicateProvider") {
    made = internal::MakeJsPredicate(config, context.limits);
  } else if (name == "JqPredicateProvider") {
    made = internal::MakeJqPredicate(config, context.limits);
  } else if (name == "JsonJMESPathPredicateProvider") {
    made = internal::MakeJmesPathPredicate(config, context.limits);
  } else {
    return absl::InvalidArgumentError(
        StrCat("unknown predicate provider \"", name,
               "\" (known: JsonJSPredicateProvider, "
               "JqPredicateProvider, JsonJMESPathPredicateProvider)"));
  }
  if (!made.ok()) {
    return absl::InvalidArgumentError(StrCat(name, ": ", made.status().message()));
  }
  return made;
}

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeConditional(
    const json::value& config, const TransformerContext& context) {
  if (!config.is_array() || config.as_array().size() != 2) {
    return absl::InvalidArgumentError(
        "expects [<predicate>, [<transformers>...]], e.g. [{\"JqPredicateProvider\": "
        "{\"script\": \".operation._index == \\\"logs\\\"\"}}, [{\"NoopTransformerProvider\": "
        "{}}]]");
  }
  RFS_ASSIGN_OR_RETURN(auto predicate, LoadPredicate(config.as_array()[0], context));
  RFS_ASSIGN_OR_RETURN(auto then, LoadList(config.as_array()[1], context));
  return std::unique_ptr<IJsonTransformer>(
      new ConditionalTransformer(std::move(predicate), std::move(then)));
}

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeProvider(const std::string& name,
                                                               const json::value& config,
                                                               const TransformerContext& context) {
  if (name == "NoopTransformerProvider")
    return std::unique_ptr<IJsonTransformer>(new NoopTransformer);
  if (name == "JsonTransformerForDocumentTypeRemovalProvider") {
    return std::unique_ptr<IJsonTransformer>(new DocumentTypeRemoval);
  }
  if (name == "TypeMappingSanitizationTransformerProvider") {
    return internal::MakeTypeMappingSanitization(config, context);
  }
  if (name == "JsonConditionalTransformerProvider") return MakeConditional(config, context);
  if (name == "JqTransformerProvider") return internal::MakeJqTransformer(config, context.limits);
  if (name == "JsonJSTransformerProvider")
    return internal::MakeJsTransformer(config, context.limits);
  if (name == "JsonPythonTransformerProvider") {
    return internal::MakePythonTransformer(config, context.limits);
  }
  if (name == "JsonJMESPathTransformerProvider") {
    return internal::MakeJmesPathTransformer(config, context.limits);
  }
  if (name == "JsonJoltTransformerProvider") {
    return internal::MakeJoltTransformer(config, context.limits);
  }
  std::string known;
  for (const auto& n : TransformerProviderNames()) known += (known.empty() ? "" : ", ") + n;
  return absl::NotFoundError(StrCat("unknown provider (known: ", known, ")"));
}

absl::StatusOr<std::unique_ptr<IJsonTransformer>> LoadList(const json::value& list,
                                                           const TransformerContext& context) {
  std::vector<std::unique_ptr<IJsonTransformer>> links;
  auto add = [&](const json::value& entry, size_t position) -> absl::Status {
    RFS_ASSIGN_OR_RETURN(auto named, SplitEntry(entry, position));
    auto made = MakeProvider(named.first, named.second, context);
    if (!made.ok()) {
      return ConfigError(position, named.first, std::string(made.status().message()));
    }
    links.push_back(*std::move(made));
    return absl::OkStatus();
  };
  if (list.is_array()) {
    for (size_t i = 0; i < list.as_array().size(); ++i) {
      RFS_RETURN_IF_ERROR(add(list.as_array()[i], i + 1));
    }
  } else if (list.is_object() || list.is_string()) {
    RFS_RETURN_IF_ERROR(add(list, 1));  // a single entry without the list around it
  } else if (!list.is_null()) {
    return absl::InvalidArgumentError(
        "the transformer configuration must be a JSON list of {\"<ProviderName>\": <config>}");
  }
  return std::unique_ptr<IJsonTransformer>(new ChainTransformer(std::move(links)));
}

}  // namespace

std::vector<std::string> TransformerProviderNames() {
  return {"NoopTransformerProvider",
          "JsonTransformerForDocumentTypeRemovalProvider",
          "TypeMappingSanitizationTransformerProvider",
          "JsonConditionalTransformerProvider",
          "JqTransformerProvider",
          "JsonJSTransformerProvider",
          "JsonPythonTransformerProvider",
          "JsonJMESPathTransformerProvider",
          "JsonJoltTransformerProvider"};
}

absl::StatusOr<std::optional<std::string>> ResolveTransformerConfig(std::string_view option_prefix,
                                                                    const std::string& text,
                                                                    const std::string& base64,
                                                                    const std::string& file) {
  const int set = !text.empty() + !base64.empty() + !file.empty();
  if (set > 1) {
    return absl::InvalidArgumentError(StrCat("give only one of --", option_prefix, ", --",
                                             option_prefix, "-base64 and --", option_prefix,
                                             "-file"));
  }
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      return absl::InvalidArgumentError(StrCat("--", option_prefix, "-file: cannot read ", file));
    }
    std::ostringstream contents;
    contents << in.rdbuf();
    return std::optional<std::string>(contents.str());
  }
  if (!base64.empty()) {
    auto decoded = core::Base64Decode(base64);
    if (!decoded.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--", option_prefix, "-base64: ", decoded.status().message()));
    }
    return std::optional<std::string>(std::string(decoded->begin(), decoded->end()));
  }
  if (!text.empty()) return std::optional<std::string>(text);
  return std::optional<std::string>();
}

absl::StatusOr<std::unique_ptr<IJsonTransformer>> LoadTransformers(
    std::string_view config, const TransformerContext& context) {
  // As the Java loader: text without braces is a single provider name with no config.
  if (config.find_first_of("{}[]") == std::string_view::npos) {
    std::string name(config);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    size_t start = 0;
    while (start < name.size() && std::isspace(static_cast<unsigned char>(name[start]))) ++start;
    return LoadList(json::value(name.substr(start)), context);
  }
  boost::system::error_code ec;
  json::value parsed = json::parse(config, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        StrCat("the transformer configuration is not valid JSON: ", ec.message()));
  }
  return LoadList(parsed, context);
}

std::string SerializeJson(const json::value& value) { return core::JsonText(value); }

json::object MakeDocumentMap(const DocumentOperation& operation, json::value source) {
  json::object op{{"_index", operation.index}, {"_id", operation.id}};
  if (operation.type) op["_type"] = *operation.type;
  if (operation.routing) op["routing"] = *operation.routing;
  return json::object{{"schema", "rfs-opensearch-bulk-v1"},
                      {"operation_type", "index"},
                      {"include_document", true},
                      {"operation", std::move(op)},
                      {"document", std::move(source)}};
}

absl::StatusOr<DocumentOperation> ReadDocumentOperation(const json::value& item) {
  const json::object* object = item.if_object();
  const json::value* op = object ? object->if_contains("operation") : nullptr;
  if (op == nullptr || !op->is_object()) {
    return absl::InvalidArgumentError(
        "a transformed document must be an object with an \"operation\" object");
  }
  if (const json::value* kind = object->if_contains("operation_type");
      kind && !(kind->is_string() && kind->as_string() == "index")) {
    return absl::InvalidArgumentError(
        StrCat("only \"index\" operations can be written, not ", json::serialize(*kind)));
  }
  DocumentOperation out;
  auto field = [&](std::string_view key, bool required,
                   std::optional<std::string>& into) -> absl::Status {
    const json::value* v = op->as_object().if_contains(key);
    if (v == nullptr || v->is_null()) {
      if (required) {
        return absl::InvalidArgumentError(StrCat("a transformed document has no operation.", key));
      }
      return absl::OkStatus();
    }
    if (v->is_string()) {
      into = std::string(v->as_string());
    } else if (v->is_int64() || v->is_uint64()) {
      into = json::serialize(*v);  // a numeric id or routing, as the bulk API would take it
    } else {
      return absl::InvalidArgumentError(
          StrCat("operation.", key, " must be a string, not ", json::serialize(*v)));
    }
    return absl::OkStatus();
  };
  std::optional<std::string> index, id;
  RFS_RETURN_IF_ERROR(field("_index", true, index));
  RFS_RETURN_IF_ERROR(field("_id", true, id));
  RFS_RETURN_IF_ERROR(field("_type", false, out.type));
  RFS_RETURN_IF_ERROR(field("routing", false, out.routing));
  out.index = *std::move(index);
  out.id = *std::move(id);
  if (out.index.empty() || out.id.empty()) {
    return absl::InvalidArgumentError("a transformed document has an empty _index or _id");
  }
  return out;
}

namespace internal {

absl::StatusOr<std::optional<std::string>> OptionalString(const json::object& config,
                                                          std::string_view provider,
                                                          std::string_view key) {
  const json::value* v = config.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (!v->is_string()) {
    return absl::InvalidArgumentError(StrCat(provider, ": \"", key, "\" must be a string"));
  }
  return std::optional<std::string>(std::string(v->as_string()));
}

absl::StatusOr<std::string> ScriptFromConfig(const json::value& config, std::string_view provider,
                                             std::string_view inline_key,
                                             std::string_view file_key) {
  if (!config.is_object()) {
    return absl::InvalidArgumentError(
        StrCat("expects an object with \"", inline_key, "\" or \"", file_key, "\""));
  }
  RFS_ASSIGN_OR_RETURN(auto text, OptionalString(config.as_object(), provider, inline_key));
  RFS_ASSIGN_OR_RETURN(auto file, OptionalString(config.as_object(), provider, file_key));
  if (text.has_value() == file.has_value()) {
    return absl::InvalidArgumentError(
        StrCat("give exactly one of \"", inline_key, "\" and \"", file_key, "\""));
  }
  if (text) return *text;
  std::ifstream in(*file, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(StrCat("cannot read ", file_key, " ", *file));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

absl::StatusOr<std::string> BindingsFromConfig(const json::object& config) {
  const json::value* b = config.if_contains("bindingsObject");
  if (b == nullptr || b->is_null()) return std::string("{}");
  if (b->is_string()) return std::string(b->as_string());
  if (b->is_object()) return json::serialize(*b);
  return absl::InvalidArgumentError("bindingsObject must be a JSON object (or a string of one)");
}

namespace {
void FindInexact(const json::value& v, std::string& path, std::optional<std::string>& found) {
  constexpr uint64_t kExact = uint64_t{1} << 53;
  if (found) return;
  if (v.is_int64()) {
    const int64_t i = v.as_int64();
    if (i > static_cast<int64_t>(kExact) || i < -static_cast<int64_t>(kExact)) {
      found = StrCat(path.empty() ? "." : path, " = ", i);
    }
  } else if (v.is_uint64()) {
    if (v.as_uint64() > kExact) found = StrCat(path.empty() ? "." : path, " = ", v.as_uint64());
  } else if (v.is_array()) {
    const auto& a = v.as_array();
    for (size_t i = 0; i < a.size() && !found; ++i) {
      const size_t mark = path.size();
      path += StrCat("[", i, "]");
      FindInexact(a[i], path, found);
      path.resize(mark);
    }
  } else if (v.is_object()) {
    for (const auto& [key, child] : v.as_object()) {
      if (found) break;
      const size_t mark = path.size();
      path += ".";
      path.append(key.data(), key.size());
      FindInexact(child, path, found);
      path.resize(mark);
    }
  }
}
}  // namespace

std::optional<std::string> FindInexactInteger(const json::value& value) {
  std::string path;
  std::optional<std::string> found;
  FindInexact(value, path, found);
  return found;
}

}  // namespace internal

}  // namespace rfs::transform
