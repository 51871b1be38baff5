// A live cluster's metadata as a snapshot catalog (see cluster_metadata.hpp). Which API answers
// what, by version (Elasticsearch's and OpenSearch's REST specifications):
//   GET /                          the version
//   GET /_template                 legacy templates (every version)
//   GET /_component_template       component templates (OpenSearch, Elasticsearch 7.8+)
//   GET /_index_template           composable index templates (the same)
//   GET /_data_stream              data streams (OpenSearch, Elasticsearch 7.9+)
//   GET /_all/_settings            index settings (flat_settings=true)
//   GET /_all/_mapping             mappings (include_type_name=true where a typeless answer
//                                  would hide the type: Elasticsearch 7, OpenSearch 1)
//   GET /_all/_alias               aliases with their filters and routing
//   GET /_cluster/state/metadata   which indices are closed (filter_path to the states)
// Index requests take expand_wildcards=all (open,closed before Elasticsearch 7): closed indices,
// and the hidden backing indices of data streams, are described too.
#include "rfs/migration/cluster_metadata.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "absl/strings/match.h"

namespace rfs::migration {
namespace {

namespace json = boost::json;
using core::StrCat;

// The repository beside the catalog: it names the cluster in messages and holds no file.
class MetadataOnlyRepo final : public snapshot::ISourceRepo {
 public:
  explicit MetadataOnlyRepo(std::string description) : description_(std::move(description)) {}
  const std::string& description() const override { return description_; }
  absl::StatusOr<std::vector<std::string>> ListBlobs(std::string_view) const override {
    return NoFiles();
  }
  absl::StatusOr<std::vector<std::string>> ListFolders(std::string_view) const override {
    return NoFiles();
  }
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlob(
      std::string_view) const override {
    return NoFiles();
  }
  absl::StatusOr<uint64_t> BlobSize(std::string_view) const override { return NoFiles(); }

 private:
  absl::Status NoFiles() const {
    return absl::FailedPreconditionError(
        StrCat(description_, " is read for its metadata only: it holds no snapshot files"));
  }
  std::string description_;
};

class ClusterReader {
 public:
  explicit ClusterReader(opensearch::OpenSearchClient& client) : client_(client) {}

  // The answer to GET `target` as JSON; an error answer as the client maps it.
  absl::StatusOr<json::value> Get(const std::string& target) {
    auto response = client_.Send(opensearch::JsonRequest("GET", target));
    if (!response.ok()) return response.status();
    RFS_RETURN_IF_ERROR(opensearch::StatusFromResponse(
        *response, StrCat("GET ", target, " on the source ", client_.endpoint())));
    boost::system::error_code ec;
    json::parse_options options;
    options.max_depth = 1000;  // as deep as the engines' own parser allows (mappings nest)
    json::value parsed = json::parse(response->body, ec, {}, options);
    if (ec) {
      return absl::DataLossError(StrCat("GET ", target, " on the source ", client_.endpoint(),
                                        ": the answer is not JSON (", ec.message(), ")"));
    }
    return parsed;
  }

  // An object answer. With `none_when_missing`, a 404 is an empty one: the composable template
  // APIs answer 404 for "none" in some versions. Anywhere else a 404 is an error (a proxy that
  // forwards only some paths must not make a cluster look empty).
  absl::StatusOr<json::object> GetObject(const std::string& target,
                                         bool none_when_missing = false) {
    auto value = Get(target);
    if (none_when_missing && absl::IsNotFound(value.status())) return json::object();
    if (!value.ok()) return value.status();
    if (!value->is_object()) return Malformed(target, "an object");
    return std::move(value->as_object());
  }

  absl::Status Malformed(std::string_view target, std::string_view expected) const {
    return absl::DataLossError(
        StrCat("GET ", target, " on the source ", client_.endpoint(), ": expected ", expected));
  }

 private:
  opensearch::OpenSearchClient& client_;
};

// Mappings as a snapshot keeps them, by type: a typeless answer's mapping under `_doc` (the one
// type of every index and template of Elasticsearch 8 and OpenSearch 2+), nothing for none.
json::object ByType(json::value mappings, bool typeless_answer) {
  if (!mappings.is_object() || mappings.as_object().empty()) return {};
  if (!typeless_answer) return std::move(mappings.as_object());
  json::object out;
  out["_doc"] = std::move(mappings);
  return out;
}

// The APIs of composable templates answer a list of {"name", "<kind>"}; the snapshot keeps an
// object by name.
absl::StatusOr<json::object> NamedList(ClusterReader& reader, const std::string& target,
                                       std::string_view list_key, std::string_view item_key) {
  RFS_ASSIGN_OR_RETURN(json::object answer, reader.GetObject(target, /*none_when_missing=*/true));
  json::object out;
  const json::value* list = answer.if_contains(list_key);
  if (list == nullptr) return out;
  if (!list->is_array()) return reader.Malformed(target, StrCat("\"", list_key, "\": [...]"));
  for (const json::value& entry : list->as_array()) {
    const json::object* item = entry.if_object();
    const json::value* name = item ? item->if_contains("name") : nullptr;
    const json::value* body = item ? item->if_contains(item_key) : nullptr;
    if (name == nullptr || !name->is_string() || body == nullptr || !body->is_object()) {
      return reader.Malformed(target, StrCat("items with \"name\" and \"", item_key, "\""));
    }
    out[name->as_string()] = *body;
  }
  return out;
}

// Data streams as the snapshot's metadata lists them. The API adds what the cluster derives
// (health, the matching template, the lifecycle manager in charge): left out, so that what the
// migration notes as dropped is what the stream itself holds.
absl::StatusOr<std::vector<snapshot::DataStream>> DataStreams(ClusterReader& reader,
                                                              const core::ClusterVersion& version) {
  constexpr std::array<std::string_view, 8> kDerived = {
      "status",     "template",         "ilm_policy",        "next_generation_managed_by",
      "prefer_ilm", "store_size_bytes", "maximum_timestamp", "store_size"};
  // Hidden streams too where the API can be asked for them (Elasticsearch 7.11+; OpenSearch's
  // takes no parameter and lists every stream).
  const bool expand = version.elasticsearch() && (version.major > 7 || version.minor >= 11);
  const std::string target = expand ? "/_data_stream?expand_wildcards=all" : "/_data_stream";
  auto answered = reader.GetObject(target, /*none_when_missing=*/true);
  // Elasticsearch's data streams are X-Pack's: a build without it (the OSS distribution of 7.x)
  // has no such API and reads the path as an index name, so has no data streams either.
  if (!answered.ok() && version.elasticsearch() && absl::IsInvalidArgument(answered.status()) &&
      absl::StrContains(answered.status().message(), "invalid_index_name_exception")) {
    return std::vector<snapshot::DataStream>();
  }
  RFS_ASSIGN_OR_RETURN(json::object answer, std::move(answered));
  std::vector<snapshot::DataStream> out;
  const json::value* list = answer.if_contains("data_streams");
  if (list == nullptr) return out;
  if (!list->is_array()) return reader.Malformed(target, "\"data_streams\": [...]");
  for (const json::value& entry : list->as_array()) {
    const json::object* stream = entry.if_object();
    const json::value* name = stream ? stream->if_contains("name") : nullptr;
    const json::value* indices = stream ? stream->if_contains("indices") : nullptr;
    if (name == nullptr || !name->is_string() || indices == nullptr || !indices->is_array()) {
      return reader.Malformed(target, "data streams with \"name\" and \"indices\"");
    }
    snapshot::DataStream& ds = out.emplace_back();
    ds.name = std::string(name->as_string());
    for (const auto& [key, value] : *stream) {
      const bool derived =
          std::find(kDerived.begin(), kDerived.end(), std::string_view(key)) != kDerived.end();
      if (!derived && key != "indices") ds.raw[key] = value;  // the indices follow, trimmed
    }
    if (const json::value* ts = stream->if_contains("timestamp_field"); ts && ts->is_object()) {
      if (const json::value* field = ts->as_object().if_contains("name");
          field && field->is_string())
        ds.timestamp_field = std::string(field->as_string());
    }
    // Each backing index as the snapshot lists it (the API adds its lifecycle manager).
    json::array backing;
    for (const json::value& index : indices->as_array()) {
      const json::value* index_name =
          index.is_object() ? index.as_object().if_contains("index_name") : nullptr;
      if (index_name == nullptr || !index_name->is_string()) {
        return reader.Malformed(target, "backing indices with \"index_name\"");
      }
      ds.backing_indices.emplace_back(index_name->as_string());
      json::object& kept = backing.emplace_back(json::object()).as_object();
      kept["index_name"] = *index_name;
      if (const json::value* uuid = index.as_object().if_contains("index_uuid")) {
        kept["index_uuid"] = *uuid;
      }
    }
    ds.raw["indices"] = std::move(backing);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

// Each index's part of a per-index answer ({"<index>": {"<part>": {...}}}). `required`: every
// index must have it (settings); else an index without it has none (no mapping, no alias).
absl::StatusOr<std::map<std::string, json::object>> PerIndex(ClusterReader& reader,
                                                             const std::string& target,
                                                             std::string_view part, bool required) {
  RFS_ASSIGN_OR_RETURN(json::object answer, reader.GetObject(target));
  std::map<std::string, json::object> out;
  for (auto& [index, body] : answer) {
    json::value* value = body.is_object() ? body.as_object().if_contains(part) : nullptr;
    if (value == nullptr && !required) continue;
    if (value == nullptr || !value->is_object()) {
      return reader.Malformed(
          target, StrCat("\"", part, "\" of index ", std::string_view(index), " to be an object"));
    }
    out[std::string(index)] = std::move(value->as_object());
  }
  return out;
}

absl::StatusOr<int64_t> SettingNumber(const json::object& settings, std::string_view key) {
  const json::value* value = settings.if_contains(key);
  if (value == nullptr) return absl::NotFoundError(std::string(key));
  if (value->is_int64()) return value->as_int64();
  if (value->is_string()) {
    const json::string& text = value->as_string();
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc() && end == text.data() + text.size()) return n;
  }
  return absl::InvalidArgumentError(std::string(key));
}

}  // namespace

absl::StatusOr<std::unique_ptr<snapshot::SnapshotRepository>> ReadClusterMetadata(
    opensearch::OpenSearchClient& source, std::optional<core::ClusterVersion> given_version,
    std::vector<std::string>* notes) {
  auto note = [&](std::string text) {
    if (notes != nullptr) notes->push_back(std::move(text));
  };
  // The cluster's own word decides which APIs are asked and how their answers read. The version
  // given stands in where GET / is refused (a proxy, a user without the permission, a node
  // without the handler), never for a source that cannot be reached or refuses the
  // credentials; and where an OpenSearch in its compatibility mode
  // (compatibility.override_main_response_version) answers as Elasticsearch 7.10.2.
  core::ClusterVersion version;
  auto answered = source.GetVersion();
  if (answered.ok()) {
    version = *answered;
    if (given_version && *given_version != version) {
      const bool compatibility_mode = given_version->opensearch() && version.elasticsearch() &&
                                      version.major == 7 && version.minor == 10;
      if (compatibility_mode) {
        version = *given_version;
      } else {
        note(StrCat("the source answers GET / as ", version.ToString(), ", not ",
                    given_version->ToString(), " as --source-version says: read and migrated as ",
                    version.ToString()));
      }
    }
  } else if (given_version &&
             (absl::IsNotFound(answered.status()) || absl::IsPermissionDenied(answered.status()) ||
              absl::IsInvalidArgument(answered.status()))) {
    version = *given_version;
    note(StrCat("GET / failed (", answered.status().message(), "): the source is read as ",
                version.ToString(), " (--source-version)"));
  } else {
    return answered.status();
  }
  if (!version.IsKnownMajor()) {
    return absl::UnimplementedError(StrCat("the source ", source.endpoint(), " runs ",
                                           version.LongName(),
                                           ": rfs reads Elasticsearch 1-9 and OpenSearch 1-3"));
  }
  ClusterReader reader(source);
  // Elasticsearch 7 and OpenSearch 1 answer typeless unless asked: the type an index was
  // created with (an index of Elasticsearch 6 carried over, `doc` rather than `_doc`) would be
  // lost. Earlier versions answer by type; later ones have no parameter and one type.
  const bool ask_types = (version.elasticsearch() && version.major == 7) ||
                         (version.opensearch() && version.major == 1);
  const bool typeless_answer = version.typeless() && !ask_types;
  const std::string types = ask_types ? "include_type_name=true" : "";
  auto with = [](std::string path, std::initializer_list<std::string_view> params) {
    char sep = '?';
    for (std::string_view p : params) {
      if (p.empty()) continue;
      path += sep;
      path += p;
      sep = '&';
    }
    return path;
  };

  snapshot::GlobalMetadata global;
  {
    const std::string target = with("/_template", {types});
    RFS_ASSIGN_OR_RETURN(json::object templates, reader.GetObject(target));
    for (auto& [name, body] : templates) {
      if (!body.is_object()) return reader.Malformed(target, "templates as objects");
      json::object& t = body.as_object();
      if (json::value* mappings = t.if_contains("mappings")) {
        *mappings = ByType(std::move(*mappings), typeless_answer);
      }
    }
    global.legacy_templates = std::move(templates);
  }
  if (version.SupportsComposableTemplates()) {
    RFS_ASSIGN_OR_RETURN(
        global.component_templates,
        NamedList(reader, "/_component_template", "component_templates", "component_template"));
    RFS_ASSIGN_OR_RETURN(global.index_templates, NamedList(reader, "/_index_template",
                                                           "index_templates", "index_template"));
  }
  if (version.SupportsDataStreams()) {
    RFS_ASSIGN_OR_RETURN(global.data_streams, DataStreams(reader, version));
  }

  // Closed indices too, and hidden ones (7.7+, where `all` takes them in; before 2.0 `all` is
  // refused, and before 7.7 it means open and closed).
  const std::string every_index = version.elasticsearch() && version.major < 7
                                      ? "expand_wildcards=open,closed"
                                      : "expand_wildcards=all";
  RFS_ASSIGN_OR_RETURN(
      auto settings,
      PerIndex(reader, with("/_all/_settings", {"flat_settings=true", every_index}), "settings",
               /*required=*/true));
  RFS_ASSIGN_OR_RETURN(auto mappings,
                       PerIndex(reader, with("/_all/_mapping", {every_index, types}), "mappings",
                                /*required=*/false));
  RFS_ASSIGN_OR_RETURN(auto aliases, PerIndex(reader, with("/_all/_alias", {every_index}),
                                              "aliases", /*required=*/false));
  // Which indices are closed (the settings answer has no state).
  const std::string state_target =
      with("/_cluster/state/metadata", {"filter_path=metadata.indices.*.state", every_index});
  RFS_ASSIGN_OR_RETURN(json::object state_answer, reader.GetObject(state_target));
  std::map<std::string, std::string> states;
  if (const json::value* m = state_answer.if_contains("metadata"); m && m->is_object()) {
    if (const json::value* indices = m->as_object().if_contains("indices");
        indices && indices->is_object()) {
      for (const auto& [index, body] : indices->as_object()) {
        const json::value* state =
            body.is_object() ? body.as_object().if_contains("state") : nullptr;
        if (state && state->is_string()) states[std::string(index)] = state->as_string();
      }
    }
  }

  snapshot::SnapshotCatalog catalog;
  catalog.info.name = kLiveClusterSnapshotName;
  catalog.info.uuid = StrCat("live:", source.endpoint());
  catalog.info.state = "SUCCESS";
  catalog.info.source_version = version;
  catalog.info.include_global_state = true;
  for (auto& [name, index_settings] : settings) {
    // Every index has a state. One the answer does not name was deleted between the two
    // requests (by ILM, say): it is left out rather than guessed open.
    const auto state = states.find(name);
    if (state == states.end()) {
      note(StrCat("index ", name,
                  " is in the settings the source gave but not in its cluster state "
                  "(deleted while it was read?): left out"));
      continue;
    }
    snapshot::IndexMetadata& index = catalog.indices.emplace_back();
    index.name = name;
    index.state = state->second;
    auto shards = SettingNumber(index_settings, "index.number_of_shards");
    if (!shards.ok() || *shards <= 0 || *shards > 100000) {
      return absl::DataLossError(StrCat("the source ", source.endpoint(), " gives index ", name,
                                        " no valid index.number_of_shards"));
    }
    index.number_of_shards = static_cast<int>(*shards);
    index.number_of_replicas =
        static_cast<int>(SettingNumber(index_settings, "index.number_of_replicas").value_or(0));
    index.version_created = SettingNumber(index_settings, "index.version.created").value_or(0);
    if (auto mapping = mappings.find(name); mapping != mappings.end()) {
      index.mappings = ByType(json::value(std::move(mapping->second)), typeless_answer);
    }
    if (auto alias = aliases.find(name); alias != aliases.end()) {
      index.aliases = std::move(alias->second);
    }
    index.settings = std::move(index_settings);
    index.raw = json::object{{"state", index.state}};
    catalog.info.indices.push_back(name);
    catalog.shards[name];  // no shard files
  }
  catalog.global = std::move(global);
  return snapshot::SnapshotRepository::FromCatalog(
      std::make_shared<MetadataOnlyRepo>(StrCat("the source cluster ", source.endpoint())),
      std::move(catalog));
}

}  // namespace rfs::migration
