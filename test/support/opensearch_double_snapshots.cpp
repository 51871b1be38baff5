// The snapshot APIs of OpenSearchDouble: `/_snapshot/<repository>` (register, get, delete a
// repository) and `/_snapshot/<repository>/<snapshot>` (create, get, `_status`, delete).
//
// Shapes follow the OpenSearch REST API specification (opensearch-api-specification,
// namespaces/snapshot.yaml, schemas/ snapshot._common.yaml: SnapshotInfo, SnapshotStatus) and the
// errors OpenSearch raises: RepositoriesService wraps a repository's construction errors in a 500
// repository_exception
// "[<repo>] failed to create repository" whose caused_by says what is wrong (an `fs` repository
// without `location`, an `s3` or `gcs` one (as with their plugins installed) without `bucket`);
// an unknown type is a 500
// repository_exception; a missing repository is a 404 repository_missing_exception "[<repo>]
// missing"; SnapshotsService.validate names bad snapshot names in a 400
// invalid_snapshot_name_exception "[<repo>:<snap>] Invalid snapshot name [<snap>], <why>".
//
// Snapshots record metadata only: the shards of the indices they cover (one per index), with a
// size derived from the stored documents. A snapshot created without wait_for_completion is
// IN_PROGRESS until it has been observed `snapshot_polls_to_complete` times; every observation
// moves its shards and bytes forward. It then ends as `snapshot_final_state` says. As in
// OpenSearch, `_status` reports a finished PARTIAL snapshot as SUCCESS (GET reports PARTIAL), and
// an IN_PROGRESS SnapshotInfo has no end time and zero shard counts.
#include <algorithm>
#include <chrono>
#include <ctime>

#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"

#include "opensearch_double_internal.hpp"

namespace rfs::testing::internal {

namespace json = boost::json;
using core::StrCat;

struct SnapshotStore {
  struct Repository {
    std::string type;
    json::object settings;  // flat keys, string values, as OpenSearch stores them
  };
  struct Shard {
    std::string index;
    std::string index_uuid;
    uint64_t size_in_bytes = 0;
    uint64_t file_count = 0;
    bool fails = false;
  };
  struct Snapshot {
    std::string name;
    std::string uuid;
    std::vector<std::string> indices;
    bool include_global_state = true;
    std::optional<json::value> metadata;
    std::vector<Shard> shards;
    int64_t start_ms = 0;
    int64_t end_ms = 0;
    int polls = 0;
    bool done = false;
    std::string final_state;  // SUCCESS, PARTIAL or FAILED
  };
  std::map<std::string, Repository> repositories;
  // By repository name, in creation order. Kept when a repository is unregistered, as the
  // snapshots of a real repository stay in its storage.
  std::map<std::string, std::vector<Snapshot>> snapshots;
  uint64_t next_uuid = 1;
};

namespace {

std::string StringOf(json::string_view s) { return std::string(s.data(), s.size()); }

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "2024-01-02T03:04:05.678Z".
std::string IsoTime(int64_t millis) {
  const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis % 1000));
  return buffer;
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  if (pattern.empty()) return text.empty();
  if (pattern[0] == '*') {
    for (size_t i = 0; i <= text.size(); ++i) {
      if (GlobMatch(pattern.substr(1), text.substr(i))) return true;
    }
    return false;
  }
  return !text.empty() && pattern[0] == text[0] && GlobMatch(pattern.substr(1), text.substr(1));
}

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string part = text.substr(start, comma - start);
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    if (!part.empty()) out.push_back(part);
    start = comma + 1;
  }
  return out;
}

// A boolean as OpenSearch's nodeBooleanValue reads it: true/false or "true"/"false".
std::optional<bool> BoolOf(const json::value& v) {
  if (v.is_bool()) return v.as_bool();
  if (v.is_string()) {
    if (v.as_string() == "true") return true;
    if (v.as_string() == "false") return false;
  }
  return std::nullopt;
}

// OpenSearch's ByteSizeValue syntax: "-1", "0" or a number with a unit (b, kb, mb, gb, tb, pb).
bool IsByteSize(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (text == "-1" || text == "0") return true;
  size_t digits = 0;
  bool dot = false;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) ||
                                  (!dot && text[digits] == '.'))) {
    dot = dot || text[digits] == '.';
    ++digits;
  }
  if (digits == 0) return false;
  const std::string unit = text.substr(digits);
  return unit == "b" || unit == "kb" || unit == "k" || unit == "mb" || unit == "m" ||
         unit == "gb" || unit == "g" || unit == "tb" || unit == "t" || unit == "pb" || unit == "p";
}

// Query parameters the snapshot APIs accept (OpenSearch rejects any other).
bool KnownParameter(const std::string& name) {
  static const char* const kKnown[] = {"cluster_manager_timeout",
                                       "master_timeout",
                                       "timeout",
                                       "verify",
                                       "wait_for_completion",
                                       "ignore_unavailable",
                                       "verbose",
                                       "local",
                                       "pretty",
                                       "human",
                                       "error_trace",
                                       "filter_path"};
  return std::any_of(std::begin(kKnown), std::end(kKnown),
                     [&](const char* known) { return name == known; });
}

}  // namespace

class SnapshotApi {
 public:
  SnapshotApi(DoubleCluster& cluster, SnapshotStore& store) : c_(cluster), store_(store) {}

  DoubleResponse Handle(const DoubleRequest& request) {
    const auto& s = request.segments;
    const std::string& m = request.method;
    for (const auto& [name, value] : request.params) {
      if (!KnownParameter(name)) {
        return c_.Error(
            400, "illegal_argument_exception",
            StrCat("request [", Path(request), "] contains unrecognized parameter: [", name, "]"));
      }
    }
    if (s.size() == 1) {
      if (m == "GET") return GetRepositories("_all");
      return MethodNotAllowed(request, "GET");
    }
    if (s.size() == 2 && s[1] == "_status") {
      if (m == "GET") return Status(request, "", {});
      return MethodNotAllowed(request, "GET");
    }
    if (s.size() == 2) {
      if (m == "GET") return GetRepositories(s[1]);
      if (m == "PUT" || m == "POST") return PutRepository(request, s[1]);
      if (m == "DELETE") return DeleteRepository(s[1]);
      return MethodNotAllowed(request, "GET, DELETE, PUT, POST");
    }
    if (s.size() == 3 && s[2] == "_status") {
      if (m == "GET") return Status(request, s[1], {});
      return MethodNotAllowed(request, "GET");
    }
    if (s.size() == 3 && s[2] != "_verify" && s[2] != "_cleanup") {
      if (m == "GET") return GetSnapshots(request, s[1], s[2]);
      if (m == "PUT" || m == "POST") return CreateSnapshot(request, s[1], s[2]);
      if (m == "DELETE") return DeleteSnapshots(s[1], s[2]);
      return MethodNotAllowed(request, "GET, DELETE, PUT, POST");
    }
    if (s.size() == 4 && s[3] == "_status") {
      if (m == "GET") return Status(request, s[1], SplitComma(s[2]));
      return MethodNotAllowed(request, "GET");
    }
    return {400,
            json::serialize(json::object{{"error", StrCat("no handler found for uri [",
                                                          Path(request), "] and method [", m, "]")},
                                         {"status", 400}}),
            {}};
  }

 private:
  static std::string Path(const DoubleRequest& request) {
    std::string path;
    for (const auto& segment : request.segments) path += "/" + segment;
    return path;
  }

  DoubleResponse MethodNotAllowed(const DoubleRequest& request, const std::string& allowed) const {
    return {405,
            json::serialize(json::object{
                {"error", StrCat("Incorrect HTTP method for uri [", Path(request), "] and method [",
                                 request.method, "], allowed: [", allowed, "]")},
                {"status", 405}}),
            {}};
  }

  // A boolean query parameter: absent -> `fallback`, "" or "true" -> true, "false" -> false.
  std::optional<bool> BoolParam(const DoubleRequest& request, const std::string& name,
                                bool fallback, DoubleResponse* error) const {
    auto it = request.params.find(name);
    if (it == request.params.end()) return fallback;
    if (it->second.empty() || it->second == "true") return true;
    if (it->second == "false") return false;
    *error = c_.Error(
        400, "illegal_argument_exception",
        StrCat("Failed to parse value [", it->second, "] as only [true] or [false] are allowed."));
    return std::nullopt;
  }

  DoubleResponse RepositoryMissing(const std::string& name) const {
    return c_.Error(404, "repository_missing_exception", StrCat("[", name, "] missing"));
  }

  DoubleResponse SnapshotMissing(const std::string& repository, const std::string& name) const {
    return c_.Error(404, "snapshot_missing_exception",
                    StrCat("[", repository, ":", name, "] is missing"));
  }

  // RepositoriesService.createRepository: construction errors wrapped in "failed to create".
  DoubleResponse CreationFailed(const std::string& repository, const std::string& cause_type,
                                const std::string& cause_reason) const {
    json::object cause{{"type", cause_type}, {"reason", cause_reason}};
    const std::string reason = StrCat("[", repository, "] failed to create repository");
    json::object error{{"root_cause", json::array{cause}},
                       {"type", "repository_exception"},
                       {"reason", reason},
                       {"caused_by", cause}};
    return {500, json::serialize(json::object{{"error", error}, {"status", 500}}), {}};
  }

  DoubleResponse GetRepositories(const std::string& expression) {
    json::object body;
    for (const auto& part : SplitComma(expression)) {
      const bool pattern = part == "_all" || part.find('*') != std::string::npos;
      bool found = false;
      for (const auto& [name, repository] : store_.repositories) {
        if (part == "_all" || (pattern ? GlobMatch(part, name) : part == name)) {
          body[name] = json::object{{"type", repository.type},
                                    {"settings", NestSettings(repository.settings)}};
          found = true;
        }
      }
      if (!found && !pattern) return RepositoryMissing(part);
    }
    return {200, json::serialize(body), {}};
  }

  DoubleResponse PutRepository(const DoubleRequest& request, const std::string& name) {
    DoubleResponse error;
    if (!BoolParam(request, "verify", true, &error)) return error;
    if (name.find('#') != std::string::npos) {
      return c_.Error(
          400, "invalid_repository_name_exception",
          StrCat("[", name, "] Invalid repository name [", name, "], must not contain '#'"));
    }
    if (request.body.empty()) return c_.Error(400, "parse_exception", "request body is required");
    auto parsed = net::ParseJson(request.body);
    if (!parsed || !parsed->is_object()) {
      return c_.Error(400, "parse_exception", "request body must be a JSON object");
    }
    const json::object& body = parsed->as_object();
    std::optional<std::string> type;
    json::object settings;
    if (const json::value* t = body.if_contains("type"); t != nullptr && !t->is_null()) {
      type = t->is_string() ? StringOf(t->as_string()) : json::serialize(*t);
    }
    if (const json::value* s = body.if_contains("settings"); s != nullptr) {
      if (!s->is_object()) {
        return c_.Error(400, "illegal_argument_exception",
                        "Malformed settings section, should include an inner object");
      }
      FlattenSettings(s->as_object(), "", settings);
    }
    if (!type) {
      return c_.Error(400, "action_request_validation_exception",
                      "Validation Failed: 1: type is missing;");
    }
    auto setting = [&](const char* key) -> std::string {
      const json::value* v = settings.if_contains(key);
      return v != nullptr && v->is_string() ? StringOf(v->as_string()) : std::string();
    };
    if (*type == "fs") {
      if (setting("location").empty()) {
        return CreationFailed(name, "repository_exception",
                              StrCat("[", name, "] missing location"));
      }
    } else if (*type == "s3" || *type == "gcs") {
      if (setting("bucket").empty()) {
        return CreationFailed(name, "repository_exception",
                              StrCat("[", name, "] No bucket defined for ", *type, " repository"));
      }
    } else {
      return c_.Error(500, "repository_exception",
                      StrCat("[", name, "] repository type [", *type, "] does not exist"));
    }
    for (const char* key :
         {"max_snapshot_bytes_per_sec", "max_restore_bytes_per_sec", "chunk_size"}) {
      if (settings.contains(key) && !IsByteSize(setting(key))) {
        return CreationFailed(
            name, "parse_exception",
            StrCat("failed to parse setting [", key, "] with value [", setting(key),
                   "] as a size in bytes: unit is missing or unrecognized"));
      }
    }
    for (const char* key : {"compress", "readonly", "read_only"}) {
      const std::string value = setting(key);
      if (settings.contains(key) && value != "true" && value != "false") {
        return CreationFailed(
            name, "illegal_argument_exception",
            StrCat("Failed to parse value [", value, "] as only [true] or [false] are allowed."));
      }
    }
    store_.repositories[name] = SnapshotStore::Repository{*type, std::move(settings)};
    return {200, R"({"acknowledged":true})", {}};
  }

  DoubleResponse DeleteRepository(const std::string& expression) {
    std::vector<std::string> doomed;
    for (const auto& part : SplitComma(expression)) {
      const bool pattern = part == "_all" || part.find('*') != std::string::npos;
      bool found = false;
      for (const auto& [name, repository] : store_.repositories) {
        if (part == "_all" || (pattern ? GlobMatch(part, name) : part == name)) {
          doomed.push_back(name);
          found = true;
        }
      }
      if (!found && !pattern) return RepositoryMissing(part);
    }
    for (const auto& name : doomed) {
      for (const auto& snapshot : store_.snapshots[name]) {
        if (!snapshot.done) {
          return c_.Error(400, "repository_conflict_exception",
                          StrCat("[", name,
                                 "] trying to modify or unregister repository that is currently "
                                 "used"));
        }
      }
    }
    for (const auto& name : doomed) store_.repositories.erase(name);
    return {200, R"({"acknowledged":true})", {}};
  }

  // SnapshotsService.validate.
  std::optional<std::string> InvalidSnapshotName(const std::string& name) const {
    if (name.empty()) return "cannot be empty";
    if (name.find(' ') != std::string::npos) return "must not contain whitespace";
    if (name.find(',') != std::string::npos) return "must not contain ','";
    if (name.find('#') != std::string::npos) return "must not contain '#'";
    if (name[0] == '_') return "must not start with '_'";
    for (char ch : name) {
      if (ch >= 'A' && ch <= 'Z') return "must be lowercase";
    }
    if (name.find_first_of("\\/*?\"<>|") != std::string::npos) {
      return R"(must not contain the following characters [ , ", *, \, <, |, ,, >, /, ?])";
    }
    return std::nullopt;
  }

  DoubleResponse CreateSnapshot(const DoubleRequest& request, const std::string& repository,
                                const std::string& name) {
    DoubleResponse error;
    auto wait = BoolParam(request, "wait_for_completion", false, &error);
    if (!wait) return error;
    if (!store_.repositories.contains(repository)) return RepositoryMissing(repository);
    auto invalid_name = [&](const std::string& why) {
      return c_.Error(
          400, "invalid_snapshot_name_exception",
          StrCat("[", repository, ":", name, "] Invalid snapshot name [", name, "], ", why));
    };
    if (auto why = InvalidSnapshotName(name)) return invalid_name(*why);
    for (const auto& existing : store_.snapshots[repository]) {
      if (existing.name == name) {
        return invalid_name(existing.done ? "snapshot with the same name already exists"
                                          : "snapshot with the same name is already in-progress");
      }
    }

    std::vector<std::string> expressions;
    bool include_global_state = true;
    bool ignore_unavailable = false;
    std::optional<json::value> metadata;
    if (!request.body.empty()) {
      auto parsed = net::ParseJson(request.body);
      if (!parsed || !parsed->is_object()) {
        return c_.Error(400, "parse_exception", "request body must be a JSON object");
      }
      for (const auto& [key, value] : parsed->as_object()) {
        const std::string field = StringOf(key);
        if (field == "indices") {
          if (value.is_string()) {
            expressions = SplitComma(StringOf(value.as_string()));
          } else if (value.is_array()) {
            for (const auto& element : value.as_array()) {
              if (!element.is_string()) {
                return c_.Error(400, "illegal_argument_exception",
                                "malformed indices section, should be an array of strings");
              }
              expressions.push_back(StringOf(element.as_string()));
            }
          } else {
            return c_.Error(400, "illegal_argument_exception",
                            "malformed indices section, should be an array of strings");
          }
        } else if (field == "include_global_state" || field == "ignore_unavailable" ||
                   field == "partial") {
          auto flag = BoolOf(value);
          if (!flag) {
            return c_.Error(400, "illegal_argument_exception",
                            StrCat("Could not convert [", field, "] to boolean"));
          }
          if (field == "include_global_state") include_global_state = *flag;
          if (field == "ignore_unavailable") ignore_unavailable = *flag;
        } else if (field == "metadata") {
          if (!value.is_object() && !value.is_null()) {
            return c_.Error(400, "illegal_argument_exception",
                            "malformed metadata, should be an object");
          }
          if (value.is_object()) metadata = value;
        }
      }
    }

    // IndexNameExpressionResolver: "_all"/empty is every index, wildcards expand (and match
    // nothing quietly), "-pattern" after other expressions removes matches, and a missing
    // concrete index fails unless ignore_unavailable.
    std::vector<std::string> indices;
    if (expressions.empty()) expressions.push_back("_all");
    for (size_t i = 0; i < expressions.size(); ++i) {
      const std::string& part = expressions[i];
      if (part[0] == '-' && i > 0) {
        const std::string pattern = part.substr(1);
        std::erase_if(indices, [&](const std::string& n) { return GlobMatch(pattern, n); });
      } else if (part == "_all" || part == "*" || part.find('*') != std::string::npos) {
        for (const auto& [index_name, index] : c_.indices_) {
          if ((part == "_all" || GlobMatch(part, index_name)) &&
              std::find(indices.begin(), indices.end(), index_name) == indices.end()) {
            indices.push_back(index_name);
          }
        }
      } else if (c_.FindIndex(part) != nullptr) {
        if (std::find(indices.begin(), indices.end(), part) == indices.end()) {
          indices.push_back(part);
        }
      } else if (!ignore_unavailable) {
        return c_.IndexNotFound(part, "index_or_alias");
      }
    }

    SnapshotStore::Snapshot snapshot;
    snapshot.name = name;
    const std::string counter = std::to_string(store_.next_uuid++);
    snapshot.uuid =
        StrCat("dblSnap", std::string(15 - std::min<size_t>(counter.size(), 15), '0'), counter);
    snapshot.indices = indices;
    snapshot.include_global_state = include_global_state;
    snapshot.metadata = metadata;
    snapshot.start_ms = NowMillis();
    snapshot.final_state = c_.options_.snapshot_final_state == "PARTIAL" ||
                                   c_.options_.snapshot_final_state == "FAILED"
                               ? c_.options_.snapshot_final_state
                               : "SUCCESS";
    for (const auto& index_name : indices) {
      const DoubleCluster::Index& index = c_.indices_.at(index_name);
      SnapshotStore::Shard shard;
      shard.index = index_name;
      shard.index_uuid = index.uuid;
      // A Lucene commit (segments_N and the segment files) plus the stored documents.
      shard.size_in_bytes = 1024;
      for (const auto& [id, doc] : index.docs) shard.size_in_bytes += doc.source.size() + id.size();
      shard.file_count = index.docs.empty() ? 1 : 1 + 9 + index.docs.size() / 1000;
      shard.fails = snapshot.final_state == "FAILED" ||
                    (snapshot.final_state == "PARTIAL" && snapshot.shards.empty());
      snapshot.shards.push_back(std::move(shard));
    }
    if (*wait || c_.options_.snapshot_polls_to_complete <= 0) Complete(snapshot);
    auto& list = store_.snapshots[repository];
    list.push_back(std::move(snapshot));
    if (*wait) {
      return {200, json::serialize(json::object{{"snapshot", Info(list.back())}}), {}};
    }
    return {200, R"({"accepted":true})", {}};
  }

  void Complete(SnapshotStore::Snapshot& snapshot) const {
    snapshot.done = true;
    snapshot.end_ms = std::max(NowMillis(), snapshot.start_ms);
  }

  // One observation of an in-progress snapshot: it moves forward and may finish.
  void Observe(SnapshotStore::Snapshot& snapshot) const {
    if (snapshot.done) return;
    if (++snapshot.polls >= c_.options_.snapshot_polls_to_complete) Complete(snapshot);
  }

  // How far shard `i` has got, 0..1: shards finish one after another as polls accumulate.
  double ShardProgress(const SnapshotStore::Snapshot& snapshot, size_t i) const {
    if (snapshot.done) return 1.0;
    const int polls_to_complete = std::max(1, c_.options_.snapshot_polls_to_complete);
    const double overall = static_cast<double>(snapshot.polls) / polls_to_complete;
    const double progress =
        overall * static_cast<double>(snapshot.shards.size()) - static_cast<double>(i);
    return std::clamp(progress, 0.0, 1.0);
  }

  json::object Info(const SnapshotStore::Snapshot& snapshot) const {
    json::array indices;
    for (const auto& index : snapshot.indices) indices.emplace_back(index);
    json::object info{{"snapshot", snapshot.name},
                      {"uuid", snapshot.uuid},
                      {"version_id", VersionId()},
                      {"version", c_.options_.version},
                      {"indices", indices},
                      {"data_streams", json::array{}},
                      {"include_global_state", snapshot.include_global_state},
                      {"state", snapshot.done ? snapshot.final_state : "IN_PROGRESS"},
                      {"start_time", IsoTime(snapshot.start_ms)},
                      {"start_time_in_millis", snapshot.start_ms}};
    if (snapshot.metadata) info["metadata"] = *snapshot.metadata;
    json::array failures;
    int64_t failed = 0;
    if (snapshot.done) {
      if (snapshot.final_state == "FAILED") {
        info["reason"] = "simulated snapshot failure (opensearch-double snapshot_final_state)";
      }
      info["end_time"] = IsoTime(snapshot.end_ms);
      info["end_time_in_millis"] = snapshot.end_ms;
      info["duration_in_millis"] = snapshot.end_ms - snapshot.start_ms;
      for (const auto& shard : snapshot.shards) {
        if (!shard.fails) continue;
        ++failed;
        failures.emplace_back(
            json::object{{"index", shard.index},
                         {"index_uuid", shard.index_uuid},
                         {"shard_id", 0},
                         {"reason", "IndexShardSnapshotFailedException[simulated shard failure]"},
                         {"node_id", "dOuBlEnOdEiD0000000000"},
                         {"status", "INTERNAL_SERVER_ERROR"}});
      }
    }
    info["failures"] = failures;
    const int64_t total = snapshot.done ? static_cast<int64_t>(snapshot.shards.size()) : 0;
    info["shards"] =
        json::object{{"total", total}, {"failed", failed}, {"successful", total - failed}};
    return info;
  }

  int64_t VersionId() const {
    int parts[3] = {0, 0, 0};
    size_t start = 0;
    const std::string& version = c_.options_.version;
    for (int& part : parts) {
      size_t end = version.find_first_of(".-", start);
      if (end == std::string::npos) end = version.size();
      part = std::atoi(version.substr(start, end - start).c_str());
      if (end >= version.size() || version[end] == '-') break;
      start = end + 1;
    }
    const int64_t id = parts[0] * 1000000 + parts[1] * 10000 + parts[2] * 100 + 99;
    return c_.is_elasticsearch() ? id : id ^ 0x08000000;  // OpenSearch's version id mask
  }

  // Snapshots of `repository` named by `expression` ("_all", "*", comma lists, wildcards).
  // Missing concrete names fail unless `ignore_unavailable`.
  std::optional<DoubleResponse> Select(const std::string& repository,
                                       const std::vector<std::string>& names,
                                       bool ignore_unavailable,
                                       std::vector<SnapshotStore::Snapshot*>& out) {
    auto& list = store_.snapshots[repository];
    for (const auto& part : names) {
      const bool pattern = part == "_all" || part.find('*') != std::string::npos;
      bool found = false;
      for (auto& snapshot : list) {
        if (part == "_all" || (pattern ? GlobMatch(part, snapshot.name) : part == snapshot.name)) {
          found = true;
          if (std::find(out.begin(), out.end(), &snapshot) == out.end()) out.push_back(&snapshot);
        }
      }
      if (!found && !pattern && !ignore_unavailable) return SnapshotMissing(repository, part);
    }
    return std::nullopt;
  }

  DoubleResponse GetSnapshots(const DoubleRequest& request, const std::string& repository,
                              const std::string& expression) {
    DoubleResponse error;
    auto ignore = BoolParam(request, "ignore_unavailable", false, &error);
    if (!ignore) return error;
    if (!store_.repositories.contains(repository)) return RepositoryMissing(repository);
    std::vector<SnapshotStore::Snapshot*> selected;
    if (auto missing = Select(repository, SplitComma(expression), *ignore, selected)) {
      return *missing;
    }
    json::array snapshots;
    for (auto* snapshot : selected) {
      Observe(*snapshot);
      snapshots.emplace_back(Info(*snapshot));
    }
    return {200, json::serialize(json::object{{"snapshots", snapshots}}), {}};
  }

  DoubleResponse DeleteSnapshots(const std::string& repository, const std::string& expression) {
    if (!store_.repositories.contains(repository)) return RepositoryMissing(repository);
    std::vector<SnapshotStore::Snapshot*> selected;
    if (auto missing = Select(repository, SplitComma(expression), false, selected)) {
      return *missing;
    }
    auto& list = store_.snapshots[repository];
    std::erase_if(list, [&](const SnapshotStore::Snapshot& snapshot) {
      return std::find(selected.begin(), selected.end(), &snapshot) != selected.end();
    });
    return {200, R"({"acknowledged":true})", {}};
  }

  static json::object FileStats(uint64_t files, uint64_t bytes) {
    return {{"file_count", files}, {"size_in_bytes", bytes}};
  }

  json::object StatusOf(const std::string& repository, const SnapshotStore::Snapshot& snapshot) {
    struct Totals {
      uint64_t files = 0, bytes = 0, processed_files = 0, processed_bytes = 0;
      int64_t initializing = 0, started = 0, done = 0, failed = 0, total = 0;
    };
    auto shards_stats = [](const Totals& t) {
      return json::object{{"initializing", t.initializing},
                          {"started", t.started},
                          {"finalizing", 0},
                          {"done", t.done},
                          {"failed", t.failed},
                          {"total", t.total}};
    };
    const int64_t elapsed = (snapshot.done ? snapshot.end_ms : NowMillis()) - snapshot.start_ms;
    auto stats = [&](const Totals& t) {
      return json::object{{"incremental", FileStats(t.files, t.bytes)},
                          {"processed", FileStats(t.processed_files, t.processed_bytes)},
                          {"total", FileStats(t.files, t.bytes)},
                          {"start_time_in_millis", snapshot.start_ms},
                          {"time_in_millis", std::max<int64_t>(elapsed, 0)}};
    };
    Totals all;
    std::map<std::string, std::pair<Totals, json::object>> per_index;
    for (size_t i = 0; i < snapshot.shards.size(); ++i) {
      const auto& shard = snapshot.shards[i];
      const double progress = ShardProgress(snapshot, i);
      const bool failed = snapshot.done && shard.fails;
      Totals t;
      t.total = 1;
      t.files = shard.file_count;
      t.bytes = shard.size_in_bytes;
      std::string stage;
      if (failed) {
        t.failed = 1;
        stage = "FAILURE";
      } else if (progress >= 1.0) {
        t.done = 1;
        stage = "DONE";
      } else if (progress > 0) {
        t.started = 1;
        stage = "STARTED";
      } else {
        t.initializing = 1;
        stage = "INIT";
      }
      // A failed shard keeps what it had processed (its copy stops with the failure).
      t.processed_files = static_cast<uint64_t>(static_cast<double>(t.files) * progress);
      t.processed_bytes = static_cast<uint64_t>(static_cast<double>(t.bytes) * progress);
      for (Totals* sum : {&all, &per_index[shard.index].first}) {
        sum->files += t.files;
        sum->bytes += t.bytes;
        sum->processed_files += t.processed_files;
        sum->processed_bytes += t.processed_bytes;
        sum->initializing += t.initializing;
        sum->started += t.started;
        sum->done += t.done;
        sum->failed += t.failed;
        sum->total += t.total;
      }
      json::object shard_status{{"stage", stage}, {"stats", stats(t)}};
      if (failed)
        shard_status["reason"] = "IndexShardSnapshotFailedException[simulated shard failure]";
      per_index[shard.index].second["0"] = std::move(shard_status);
    }
    json::object indices;
    for (const auto& [name, entry] : per_index) {
      indices[name] = json::object{{"shards_stats", shards_stats(entry.first)},
                                   {"stats", stats(entry.first)},
                                   {"shards", entry.second}};
    }
    // TransportSnapshotsStatusAction reports finished PARTIAL snapshots as SUCCESS.
    std::string state = "STARTED";
    if (snapshot.done) state = snapshot.final_state == "FAILED" ? "FAILED" : "SUCCESS";
    return json::object{{"snapshot", snapshot.name},
                        {"repository", repository},
                        {"uuid", snapshot.uuid},
                        {"state", state},
                        {"include_global_state", snapshot.include_global_state},
                        {"shards_stats", shards_stats(all)},
                        {"stats", stats(all)},
                        {"indices", indices}};
  }

  // `repository` empty: every in-progress snapshot; `names` empty: the in-progress snapshots of
  // `repository`; otherwise the named snapshots, finished or not.
  DoubleResponse Status(const DoubleRequest& request, const std::string& repository,
                        const std::vector<std::string>& names) {
    DoubleResponse error;
    auto ignore = BoolParam(request, "ignore_unavailable", false, &error);
    if (!ignore) return error;
    json::array out;
    if (repository.empty()) {
      for (auto& [repo, list] : store_.snapshots) {
        for (auto& snapshot : list) {
          if (!snapshot.done) out.emplace_back(StatusOf(repo, snapshot));
        }
      }
      return {200, json::serialize(json::object{{"snapshots", out}}), {}};
    }
    if (!store_.repositories.contains(repository)) return RepositoryMissing(repository);
    std::vector<SnapshotStore::Snapshot*> selected;
    if (names.empty()) {
      for (auto& snapshot : store_.snapshots[repository]) {
        if (!snapshot.done) selected.push_back(&snapshot);
      }
    } else {
      if (auto missing = Select(repository, names, *ignore, selected)) return *missing;
    }
    for (auto* snapshot : selected) {
      Observe(*snapshot);
      out.emplace_back(StatusOf(repository, *snapshot));
    }
    return {200, json::serialize(json::object{{"snapshots", out}}), {}};
  }

  DoubleCluster& c_;
  SnapshotStore& store_;
};

DoubleResponse DoubleCluster::Snapshots(const DoubleRequest& request) {
  std::lock_guard lock(mu_);
  if (!snapshot_store_) snapshot_store_ = std::make_shared<SnapshotStore>();
  return SnapshotApi(*this, *snapshot_store_).Handle(request);
}

}  // namespace rfs::testing::internal
