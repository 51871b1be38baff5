// TypeMappingSanitizationTransformerProvider, natively: Elasticsearch <= 6 mapping types routed to
// target indices, with the Java provider's configuration keys and decisions
// (opensearch-migrations transformation/.../typeMappingsSanitizer.js):
//   staticMappings  {"<index>": {"<type>": "<target index>"}}; an index listed here is looked up
//                   here only, and a type it does not list is dropped
//   regexMappings   [{"sourceIndexPattern","sourceTypePattern","targetIndexPattern"}] (or
//                   [[index, type, target]]), tried in order against "<index>/<type>"; the
//                   target may use $1.. of the groups of both patterns. Default: (.+)/(.+) -> $1,
//                   every type into the index of the same name.
//   sourceProperties {"version": {"major", "minor"}}: taken from the snapshot when absent.
// A document or type that maps to no target is dropped. Documents without _type count as "_doc".
// Metadata: each type's mapping goes to its target index as {"_doc": mapping}; types sharing a
// target have their properties merged (a later type wins a conflicting field, as in Java).
#include <algorithm>
#include <map>
#include <optional>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/transform/metadata_transform.hpp"

#include "boost/json/serialize.hpp"
#include "json_transformers_internal.hpp"
#include "user_regex_internal.hpp"

namespace rfs::transform::internal {

namespace json = boost::json;
using core::StrCat;

namespace {

// `target` with $0-$9 replaced by the groups of `pattern`'s whole match of `key` ($$ is a '$'),
// as Java's Matcher.replaceAll; nullopt when it does not match.
std::optional<std::string> MatchAndSubstitute(const re2::RE2& pattern, std::string_view key,
                                              std::string_view target) {
  const int groups = std::min(pattern.NumberOfCapturingGroups(), 9);
  std::vector<re2::StringPiece> match(static_cast<size_t>(groups) + 1);
  if (!pattern.Match(re2::StringPiece(key.data(), key.size()), 0, key.size(), re2::RE2::ANCHOR_BOTH,
                     match.data(), groups + 1)) {
    return std::nullopt;
  }
  std::string out;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '$' && i + 1 < target.size()) {
      const char next = target[i + 1];
      if (next == '$') {
        out += '$';
        ++i;
        continue;
      }
      if (next >= '0' && next <= '9' && next - '0' <= groups) {
        const re2::StringPiece& group = match[static_cast<size_t>(next - '0')];
        out.append(group.data(), group.size());
        ++i;
        continue;
      }
    }
    out += target[i];
  }
  return out;
}

struct RegexMapping {
  std::shared_ptr<const re2::RE2> pattern;
  std::string target;
  std::string text;  // for messages
};

class TypeMappingSanitization final : public IJsonTransformer {
 public:
  TypeMappingSanitization(std::map<std::string, std::map<std::string, std::string>> statics,
                          std::vector<RegexMapping> regexes)
      : static_(std::move(statics)), regexes_(std::move(regexes)) {}

  absl::StatusOr<json::value> Transform(json::value input) override {
    if (input.is_array()) {
      json::array out;
      for (auto& item : input.as_array()) {
        if (IsDocument(item)) {
          if (RouteDocument(item)) out.push_back(std::move(item));
        } else {
          RFS_ASSIGN_OR_RETURN(json::array items, Metadata(std::move(item)));
          for (auto& i : items) out.push_back(std::move(i));
        }
      }
      return json::value(std::move(out));
    }
    if (IsDocument(input)) {
      json::array out;
      if (RouteDocument(input)) out.push_back(std::move(input));
      return json::value(std::move(out));
    }
    RFS_ASSIGN_OR_RETURN(json::array items, Metadata(std::move(input)));
    return json::value(std::move(items));
  }
  bool ReadsDocumentSource() const override { return false; }
  std::string Describe() const override { return "TypeMappingSanitizationTransformerProvider"; }

 private:
  static bool IsDocument(const json::value& v) {
    const json::object* o = v.if_object();
    return o != nullptr && o->contains("operation") && !o->contains("body");
  }

  // The target index of (index, type), or nullopt to drop.
  std::optional<std::string> Target(const std::string& index, const std::string& type) const {
    if (auto found = static_.find(index); found != static_.end()) {
      auto target = found->second.find(type);
      if (target == found->second.end()) return std::nullopt;
      return target->second;
    }
    const std::string key = index + "/" + type;
    for (const RegexMapping& r : regexes_) {
      if (auto target = MatchAndSubstitute(*r.pattern, key, r.target)) return target;
    }
    return std::nullopt;
  }

  // Sets the document's target index and removes its type; false to drop it.
  bool RouteDocument(json::value& item) const {
    json::object& op = item.as_object()["operation"].as_object();
    const json::value* index = op.if_contains("_index");
    if (index == nullptr || !index->is_string()) return true;  // nothing to route by
    std::string type = "_doc";
    if (const json::value* t = op.if_contains("_type"); t && t->is_string()) {
      type = std::string(t->as_string());
    }
    auto target = Target(std::string(index->as_string()), type);
    if (!target) return false;
    op["_index"] = *target;
    op.erase("_type");
    return true;
  }

  absl::StatusOr<json::array> Metadata(json::value item) const {
    json::object* o = item.if_object();
    if (o == nullptr || !o->contains("name") || !(*o)["name"].is_string()) {
      return absl::InvalidArgumentError(
          "expects documents (with \"operation\") or metadata items (with \"type\", \"name\" and "
          "\"body\")");
    }
    const std::string name((*o)["name"].as_string());
    json::value* body = o->if_contains("body");
    json::value* mappings = nullptr;
    if (body != nullptr && body->is_object()) {
      mappings = body->as_object().if_contains("mappings");
      if (mappings == nullptr) {
        if (json::value* t = body->as_object().if_contains("template"); t && t->is_object()) {
          mappings = t->as_object().if_contains("mappings");
        }
      }
    }
    std::vector<std::pair<std::string, json::object>> types;
    if (mappings != nullptr) types = SplitMappingTypes(*mappings);
    json::array out;
    if (types.empty() || (types.size() == 1 && types[0].first.empty())) {
      // Typeless: routed as type _doc, its mappings unchanged.
      auto target = Target(name, "_doc");
      if (!target) return out;
      (*o)["name"] = *target;
      out.push_back(std::move(item));
      return out;
    }
    // Targets in order of first appearance, each with its merged mapping.
    std::vector<std::pair<std::string, json::object>> targets;
    for (auto& [type, mapping] : types) {
      if (type == "_default_") continue;
      auto target = Target(name, type.empty() ? "_doc" : type);
      if (!target) continue;
      auto existing = std::find_if(targets.begin(), targets.end(),
                                   [&](const auto& t) { return t.first == *target; });
      if (existing == targets.end()) {
        targets.emplace_back(*target, std::move(mapping));
        continue;
      }
      json::object& merged = existing->second;
      if (const json::value* props = mapping.if_contains("properties");
          props && props->is_object()) {
        json::value& into = merged["properties"];
        if (!into.is_object()) into = json::object();
        for (const auto& [field, definition] : props->as_object()) {
          into.as_object()[field] = definition;
        }
      }
    }
    for (auto& [target, mapping] : targets) {
      json::value copy = item;
      copy.as_object()["name"] = target;
      *FindMappings(copy) = json::object{{"_doc", std::move(mapping)}};
      out.push_back(std::move(copy));
    }
    return out;
  }

  static json::value* FindMappings(json::value& item) {
    json::object& body = item.as_object()["body"].as_object();
    if (json::value* m = body.if_contains("mappings")) return m;
    return &body["template"].as_object()["mappings"];
  }

  const std::map<std::string, std::map<std::string, std::string>> static_;
  const std::vector<RegexMapping> regexes_;
};

absl::StatusOr<RegexMapping> MakeRegex(const std::string& index, const std::string& type,
                                       std::string target) {
  RegexMapping out;
  out.text = StrCat(index, "/", type, " -> ", target);
  RFS_ASSIGN_OR_RETURN(out.pattern, CompileUserRegex(StrCat("(?:", index, ")/(?:", type, ")"),
                                                     StrCat("regexMappings entry ", out.text)));
  out.target = std::move(target);
  return out;
}

}  // namespace

namespace {

using StaticMappings = std::map<std::string, std::map<std::string, std::string>>;

// "staticMappings": {index: {type: target index}}.
absl::StatusOr<StaticMappings> ParseStaticMappings(const json::object& c) {
  StaticMappings statics;
  if (const json::value* s = c.if_contains("staticMappings"); s && !s->is_null()) {
    if (!s->is_object()) return absl::InvalidArgumentError("staticMappings must be an object");
    for (const auto& [index, types] : s->as_object()) {
      if (!types.is_object()) {
        return absl::InvalidArgumentError(StrCat("staticMappings.", std::string_view(index),
                                                 " must map types to target indices"));
      }
      auto& into = statics[std::string(index)];
      for (const auto& [type, target] : types.as_object()) {
        if (!target.is_string()) {
          return absl::InvalidArgumentError(StrCat("staticMappings.", std::string_view(index), ".",
                                                   std::string_view(type),
                                                   " must be a target index name"));
        }
        into[std::string(type)] = std::string(target.as_string());
      }
    }
  }
  return statics;
}

// "regexMappings": a list of {sourceIndexPattern, sourceTypePattern, targetIndexPattern} (or
// [index, type, target]); every index and type to an index of the same name when absent.
absl::StatusOr<std::vector<RegexMapping>> ParseRegexMappings(const json::object& c) {
  std::vector<RegexMapping> regexes;
  const json::value* r = c.if_contains("regexMappings");
  if (r == nullptr || r->is_null()) {
    RFS_ASSIGN_OR_RETURN(auto all, MakeRegex("(.+)", "(.+)", "$1"));
    regexes.push_back(std::move(all));
  } else {
    if (!r->is_array()) return absl::InvalidArgumentError("regexMappings must be a list");
    for (const json::value& entry : r->as_array()) {
      std::string index, type, target;
      if (entry.is_object()) {
        const json::object& e = entry.as_object();
        for (auto [key, into] : {std::pair{"sourceIndexPattern", &index},
                                 {"sourceTypePattern", &type},
                                 {"targetIndexPattern", &target}}) {
          const json::value* v = e.if_contains(key);
          if (v == nullptr || !v->is_string()) {
            return absl::InvalidArgumentError(
                StrCat("regexMappings entry ", json::serialize(entry), " needs string ", key));
          }
          *into = std::string(v->as_string());
        }
      } else if (entry.is_array() && entry.as_array().size() == 3 &&
                 std::all_of(entry.as_array().begin(), entry.as_array().end(),
                             [](const json::value& v) { return v.is_string(); })) {
        index = std::string(entry.as_array()[0].as_string());
        type = std::string(entry.as_array()[1].as_string());
        target = std::string(entry.as_array()[2].as_string());
      } else {
        return absl::InvalidArgumentError(StrCat(
            "regexMappings entry ", json::serialize(entry),
            " must be {\"sourceIndexPattern\",\"sourceTypePattern\",\"targetIndexPattern\"}"));
      }
      RFS_ASSIGN_OR_RETURN(auto made, MakeRegex(index, type, std::move(target)));
      regexes.push_back(std::move(made));
    }
  }
  return regexes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeTypeMappingSanitization(
    const json::value& config, const TransformerContext& context) {
  if (!config.is_null() && !config.is_object()) {
    return absl::InvalidArgumentError(
        "expects an object (staticMappings, regexMappings, "
        "sourceProperties, featureFlags)");
  }
  static const json::object kEmpty;
  const json::object& c = config.is_object() ? config.as_object() : kEmpty;
  for (const auto& [key, value] : c) {
    if (key != "staticMappings" && key != "regexMappings" && key != "sourceProperties" &&
        key != "featureFlags") {
      return absl::InvalidArgumentError(
          StrCat("unknown key \"", std::string_view(key),
                 "\" (known: staticMappings, regexMappings, sourceProperties, featureFlags)"));
    }
  }
  RFS_ASSIGN_OR_RETURN(StaticMappings statics, ParseStaticMappings(c));
  RFS_ASSIGN_OR_RETURN(std::vector<RegexMapping> regexes, ParseRegexMappings(c));
  if (const json::value* p = c.if_contains("sourceProperties"); p && !p->is_null()) {
    const json::value* version = p->is_object() ? p->as_object().if_contains("version") : nullptr;
    const json::value* major =
        version && version->is_object() ? version->as_object().if_contains("major") : nullptr;
    if (major == nullptr || !major->is_number()) {
      return absl::InvalidArgumentError(
          "sourceProperties must be {\"version\": {\"major\": N, \"minor\": M}}");
    }
  }
  (void)context;  // the version only matters to the replayer's requests, not to documents
  return std::unique_ptr<IJsonTransformer>(
      new TypeMappingSanitization(std::move(statics), std::move(regexes)));
}

}  // namespace rfs::transform::internal
