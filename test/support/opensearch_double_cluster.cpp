// The cluster model behind OpenSearchDouble: one request in, one OpenSearch-shaped response out.
// Response and error shapes follow the OpenSearch REST API specification
// (opensearch-api-specification, schemas/_common.yaml ErrorResponseBase/ErrorCause, _core.bulk.yaml
// BulkResponse/ResponseItem, _core.get.yaml, WriteResponseBase) and the reasons OpenSearch prints
// for each error type.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <set>

#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"

#include "opensearch_double_internal.hpp"

namespace rfs::testing::internal {
namespace {

// Documents are keyed by shard and _id.
std::string DocKey(int shard, std::string_view id) { return core::StrCat(shard, ":", id); }
std::string_view IdOf(std::string_view key) { return key.substr(key.find(':') + 1); }

// MurmurHash3_x86_32 (seed 0), as OpenSearch's Murmur3HashFunction applies it to a routing value:
// over the UTF-16 code units of the string, each as two little-endian bytes
// (server/src/main/java/org/opensearch/cluster/routing/Murmur3HashFunction.java).
int32_t RoutingHash(std::string_view routing) {
  std::u16string units;
  for (size_t i = 0; i < routing.size();) {
    // UTF-8 to UTF-16 (ids and routing values are valid UTF-8 here).
    const unsigned char c = static_cast<unsigned char>(routing[i]);
    uint32_t cp = c;
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (extra > 0) cp = c & (0x3F >> extra);
    for (int k = 1; k <= extra && i + k < routing.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(routing[i + k]) & 0x3F);
    }
    i += 1 + extra;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      units.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      units.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      units.push_back(static_cast<char16_t>(cp));
    }
  }
  std::string bytes;
  for (char16_t u : units) {
    bytes.push_back(static_cast<char>(u & 0xFF));
    bytes.push_back(static_cast<char>(u >> 8));
  }
  const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  uint32_t h = 0;
  const size_t blocks = bytes.size() / 4;
  auto rotl = [](uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  for (size_t b = 0; b < blocks; ++b) {
    uint32_t k;
    std::memcpy(&k, bytes.data() + 4 * b, 4);  // little-endian host
    k *= c1;
    k = rotl(k, 15);
    k *= c2;
    h ^= k;
    h = rotl(h, 13);
    h = h * 5 + 0xe6546b64;
  }
  uint32_t k = 0;
  const size_t tail = bytes.size() & 3;
  const auto* t = reinterpret_cast<const unsigned char*>(bytes.data() + 4 * blocks);
  if (tail >= 3) k ^= static_cast<uint32_t>(t[2]) << 16;
  if (tail >= 2) k ^= static_cast<uint32_t>(t[1]) << 8;
  if (tail >= 1) {
    k ^= t[0];
    k *= c1;
    k = rotl(k, 15);
    k *= c2;
    h ^= k;
  }
  h ^= static_cast<uint32_t>(bytes.size());
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return static_cast<int32_t>(h);
}

// MetadataCreateIndexService.calculateNumRoutingShards (indices created on 7.0+): the shard count
// doubled as often as it stays at most 1024, so that the index can be split later.
int RoutingNumShards(int shards) {
  const int log2_max = 10;
  int log2_shards = 0;
  while ((1 << log2_shards) < shards) ++log2_shards;  // 32 - numberOfLeadingZeros(shards - 1)
  const int splits = std::max(0, log2_max - log2_shards);
  return shards * (1 << splits);
}

// "1s", "500ms", "2m", "-1": index.refresh_interval.
core::IClock::Duration ParseRefreshInterval(const std::string& text) {
  if (text.empty() || text[0] == '-') return core::IClock::Duration::zero();
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const int64_t n = std::atoll(text.substr(0, digits).c_str());
  const std::string unit = text.substr(digits);
  if (unit == "ms") return std::chrono::milliseconds(n);
  if (unit == "m") return std::chrono::minutes(n);
  if (unit == "h") return std::chrono::hours(n);
  return std::chrono::seconds(n);
}

}  // namespace
namespace {

namespace json = boost::json;
using core::StrCat;
using net::ParseJson;

std::string ToJson(const json::value& v) { return json::serialize(v); }

// `object` with "_source" last, holding `stored` as stored: the bytes the client sent, never
// parsed and printed again (which would change number texts such as 1.39 or 1e400).
std::string WithStoredSource(const json::object& object, std::string_view stored) {
  std::string out = ToJson(object);
  out.pop_back();
  out += object.empty() ? "\"_source\":" : ",\"_source\":";
  out += stored.empty() ? std::string_view("{}") : stored;
  out += '}';
  return out;
}

std::string StringOf(std::string_view s) { return std::string(s); }

std::optional<int64_t> ParseInt(const std::string& s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> IntOf(const json::value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
  if (v->is_string()) return ParseInt(StringOf(v->as_string()));
  return std::nullopt;
}

std::optional<std::string> StringField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(json::string_view(key.data(), key.size()));
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return StringOf(v->as_string());
  if (v->is_null()) return std::nullopt;
  return ToJson(*v);
}

json::object Shards() { return {{"total", 2}, {"successful", 1}, {"failed", 0}}; }

}  // namespace

// Flattens {"index":{"number_of_shards":1}} into {"index.number_of_shards":"1"}, the form
// OpenSearch stores and prints with flat_settings=true.
void FlattenSettings(const json::object& in, const std::string& prefix, json::object& out) {
  for (const auto& [key, value] : in) {
    std::string name = prefix.empty() ? StringOf(key) : StrCat(prefix, ".", StringOf(key));
    if (value.is_object()) {
      FlattenSettings(value.as_object(), name, out);
    } else if (value.is_string()) {
      out[name] = value;
    } else if (value.is_null()) {
      out.erase(name);
    } else {
      out[name] = ToJson(value);
    }
  }
}

json::object NestSettings(const json::object& flat) {
  json::object out;
  for (const auto& [key, value] : flat) {
    std::string_view name(key.data(), key.size());
    json::object* node = &out;
    size_t dot;
    while ((dot = name.find('.')) != std::string_view::npos) {
      json::value& child = (*node)[json::string_view(name.data(), dot)];
      if (!child.is_object()) child = json::object();
      node = &child.as_object();
      name.remove_prefix(dot + 1);
    }
    (*node)[json::string_view(name.data(), name.size())] = value;
  }
  return out;
}

namespace {

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

// The object holding "properties"/"dynamic": untyped (7+) or inside a single type (<= 6).
const json::object* MappingRoot(const json::object& mappings) {
  if (mappings.contains("properties") || mappings.contains("dynamic")) return &mappings;
  if (mappings.size() == 1 && mappings.begin()->value().is_object()) {
    return &mappings.begin()->value().as_object();
  }
  return &mappings;
}

const json::value* FieldValue(const json::object& doc, std::string_view path) {
  const json::object* node = &doc;
  while (true) {
    if (const json::value* direct =
            node->if_contains(json::string_view(path.data(), path.size()))) {
      return direct;
    }
    const size_t dot = path.find('.');
    if (dot == std::string_view::npos) return nullptr;
    const json::value* child = node->if_contains(json::string_view(path.data(), dot));
    if (child == nullptr || !child->is_object()) return nullptr;
    node = &child->as_object();
    path.remove_prefix(dot + 1);
  }
}

// Total order for sort and range: numbers before strings; nullopt when incomparable.
std::optional<int> Compare(const json::value& a, const json::value& b) {
  auto number = [](const json::value& v) -> std::optional<double> {
    if (v.is_int64()) return static_cast<double>(v.as_int64());
    if (v.is_uint64()) return static_cast<double>(v.as_uint64());
    if (v.is_double()) return v.as_double();
    return std::nullopt;
  };
  auto na = number(a), nb = number(b);
  if (na && nb) return *na < *nb ? -1 : (*na > *nb ? 1 : 0);
  if (a.is_string() && b.is_string()) {
    const int c = StringOf(a.as_string()).compare(StringOf(b.as_string()));
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (na && b.is_string()) {  // "5" vs 5: OpenSearch coerces query values to the field type
    if (auto parsed = ParseInt(StringOf(b.as_string()))) {
      return *na < *parsed ? -1 : (*na > *parsed ? 1 : 0);
    }
  }
  if (a.is_bool() && b.is_bool()) return a.as_bool() == b.as_bool() ? 0 : (a.as_bool() ? 1 : -1);
  return std::nullopt;
}

bool ValueMatches(const json::value& field, const json::value& wanted) {
  if (field.is_array()) {
    for (const auto& element : field.as_array()) {
      if (ValueMatches(element, wanted)) return true;
    }
    return false;
  }
  if (field.is_bool() && wanted.is_string()) {
    return (field.as_bool() ? "true" : "false") == StringOf(wanted.as_string());
  }
  auto c = Compare(field, wanted);
  return c && *c == 0;
}

struct QueryError {
  std::string reason;
};

// Evaluates the query DSL subset against one document. Throws QueryError (caught by the
// caller, never across the library boundary) for unsupported or malformed queries.
bool Matches(const json::value& query, const std::string& id, const json::object& doc) {
  if (!query.is_object() || query.as_object().size() != 1) {
    throw QueryError{"query must be an object with exactly one clause"};
  }
  const auto& [kind_key, body] = *query.as_object().begin();
  const std::string kind = StringOf(kind_key);
  if (kind == "match_all") return true;
  if (kind == "match_none") return false;
  if (!body.is_object()) throw QueryError{StrCat("[", kind, "] query malformed")};
  const json::object& b = body.as_object();
  if (kind == "function_score") {
    // Scoring functions (random_score, ...) change the order, never which documents match; the
    // double does not score, so hits keep their stored order.
    const json::value* inner = b.if_contains("query");
    return inner == nullptr || Matches(*inner, id, doc);
  }
  if (kind == "ids") {
    const json::value* values = b.if_contains("values");
    if (values == nullptr || !values->is_array()) throw QueryError{"[ids] requires values"};
    for (const auto& v : values->as_array()) {
      if (v.is_string() && StringOf(v.as_string()) == id) return true;
    }
    return false;
  }
  if (kind == "exists") {
    auto field = StringField(b, "field");
    if (!field) throw QueryError{"[exists] requires field"};
    const json::value* v = FieldValue(doc, *field);
    return v != nullptr && !v->is_null();
  }
  if (kind == "term" || kind == "terms" || kind == "range" || kind == "match") {
    if (b.empty()) throw QueryError{StrCat("[", kind, "] query malformed, no field")};
    const auto& [field_key, spec] = *b.begin();
    const std::string field = StringOf(field_key);
    const json::value* actual = field == "_id" ? nullptr : FieldValue(doc, std::string_view(field));
    json::value id_value = json::string(id);
    if (field == "_id") actual = &id_value;
    if (kind == "terms") {
      if (!spec.is_array()) throw QueryError{"[terms] query requires an array"};
      if (actual == nullptr) return false;
      for (const auto& v : spec.as_array()) {
        if (ValueMatches(*actual, v)) return true;
      }
      return false;
    }
    if (kind == "range") {
      if (!spec.is_object()) throw QueryError{"[range] query malformed"};
      if (actual == nullptr || actual->is_null()) return false;
      for (const auto& [op_key, bound] : spec.as_object()) {
        const std::string op = StringOf(op_key);
        auto c = Compare(*actual, bound);
        if (!c) return false;
        if ((op == "gt" && !(*c > 0)) || (op == "gte" && !(*c >= 0)) || (op == "lt" && !(*c < 0)) ||
            (op == "lte" && !(*c <= 0))) {
          return false;
        }
      }
      return true;
    }
    const json::value& wanted =
        spec.is_object() &&
                (spec.as_object().contains("value") || spec.as_object().contains("query"))
            ? (spec.as_object().contains("value") ? spec.as_object().at("value")
                                                  : spec.as_object().at("query"))
            : spec;
    return actual != nullptr && ValueMatches(*actual, wanted);
  }
  if (kind == "bool") {
    auto clauses = [&](std::string_view name) {
      std::vector<const json::value*> out;
      if (const json::value* v = b.if_contains(json::string_view(name.data(), name.size()))) {
        if (v->is_array()) {
          for (const auto& q : v->as_array()) out.push_back(&q);
        } else {
          out.push_back(v);
        }
      }
      return out;
    };
    for (const auto* q : clauses("must")) {
      if (!Matches(*q, id, doc)) return false;
    }
    for (const auto* q : clauses("filter")) {
      if (!Matches(*q, id, doc)) return false;
    }
    for (const auto* q : clauses("must_not")) {
      if (Matches(*q, id, doc)) return false;
    }
    auto should = clauses("should");
    if (!should.empty()) {
      int64_t minimum = (clauses("must").empty() && clauses("filter").empty()) ? 1 : 0;
      if (auto m = IntOf(b.if_contains("minimum_should_match"))) minimum = *m;
      int64_t hits = 0;
      for (const auto* q : should) hits += Matches(*q, id, doc) ? 1 : 0;
      return hits >= minimum;
    }
    return true;
  }
  throw QueryError{StrCat("unknown query [", kind, "]")};
}

}  // namespace

DoubleCluster::DoubleCluster(const OpenSearchDoubleOptions& options)
    : options_(options), rng_(options.faults.seed ^ 0x9e3779b97f4a7c15ULL) {
  major_ =
      static_cast<int>(ParseInt(options.version.substr(0, options.version.find('.'))).value_or(2));
}

std::string DoubleCluster::rejected_execution_type() const {
  return is_elasticsearch() ? "es_rejected_execution_exception" : "rejected_execution_exception";
}

DoubleResponse DoubleCluster::IndexNotFound(const std::string& name,
                                            const std::string& resource_type) const {
  return Error(404, "index_not_found_exception", StrCat("no such index [", name, "]"),
               {{"index", name},
                {"resource.type", resource_type},
                {"resource.id", name},
                {"index_uuid", "_na_"}});
}

DoubleResponse DoubleCluster::Error(int status, const std::string& type, const std::string& reason,
                                    json::object extra) const {
  json::object cause{{"type", type}, {"reason", reason}};
  for (const auto& [k, v] : extra) cause[k] = v;
  json::object error = cause;
  error["root_cause"] = json::array{cause};
  return {status, ToJson(json::object{{"error", error}, {"status", status}}), {}};
}

json::object DoubleCluster::ItemError(const std::string& index, const Index* idx,
                                      const std::string& type, const std::string& reason) const {
  json::object e{{"type", type}, {"reason", reason}, {"index", index}};
  if (idx != nullptr) {
    e["index_uuid"] = idx->uuid;
    e["shard"] = "0";  // Callers that know the shard overwrite it.
  }
  return e;
}

std::optional<StoredDocument> DoubleCluster::GetDocument(const std::string& index,
                                                         const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = indices_.find(index);
  if (it == indices_.end()) return std::nullopt;
  for (int shard = 0; shard < it->second.shards; ++shard) {
    auto doc = it->second.docs.find(DocKey(shard, id));
    if (doc != it->second.docs.end()) return doc->second;
  }
  return std::nullopt;
}

size_t DoubleCluster::DocumentCount(const std::string& index) const {
  std::lock_guard lock(mu_);
  auto it = indices_.find(index);
  return it == indices_.end() ? 0 : it->second.docs.size();
}

std::vector<std::string> DoubleCluster::IndexNames() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, index] : indices_) names.push_back(name);
  return names;
}

uint64_t DoubleCluster::write_operations() const {
  std::lock_guard lock(mu_);
  return write_operations_;
}

uint64_t DoubleCluster::bulk_items() const {
  std::lock_guard lock(mu_);
  return bulk_items_;
}

// The query parameters each API takes (OpenSearch's REST spec), beyond the ones every API takes.
// OpenSearch answers any other with 400: "request [...] contains unrecognized parameter: [...]".
std::vector<std::string_view> AllowedParams(const std::vector<std::string>& s,
                                            const std::string& m) {
  // Copied from the spec's parameter lists (namespaces/_core.yaml, indices.yaml, cat.yaml); the
  // suite checks that none is missing there.
  auto last = [&](std::string_view name) { return !s.empty() && s.back() == name; };
  if (s.size() == 2 && s[0] == "_cat" && s[1] == "health") {
    return {"format", "h", "help", "s", "time", "ts", "v"};
  }
  if (last("_bulk")) {
    return {"_source",
            "_source_excludes",
            "_source_includes",
            "index",
            "pipeline",
            "refresh",
            "require_alias",
            "routing",
            "timeout",
            "type",
            "wait_for_active_shards"};
  }
  if (last("_refresh")) return {"allow_no_indices", "expand_wildcards", "ignore_unavailable"};
  if (s.size() >= 2 && s[1] == "_settings") {
    if (m == "PUT") {
      return {"allow_no_indices",   "cluster_manager_timeout", "expand_wildcards",  "flat_settings",
              "ignore_unavailable", "master_timeout",          "preserve_existing", "timeout"};
    }
    return {"allow_no_indices",
            "cluster_manager_timeout",
            "expand_wildcards",
            "flat_settings",
            "ignore_unavailable",
            "include_defaults",
            "local",
            "master_timeout"};
  }
  if (last("_count")) {
    return {"allow_no_indices",
            "analyze_wildcard",
            "analyzer",
            "default_operator",
            "df",
            "expand_wildcards",
            "ignore_throttled",
            "ignore_unavailable",
            "lenient",
            "min_score",
            "preference",
            "q",
            "routing",
            "terminate_after"};
  }
  if (last("_search")) {
    return {"_source",
            "_source_excludes",
            "_source_includes",
            "allow_no_indices",
            "allow_partial_search_results",
            "analyze_wildcard",
            "analyzer",
            "default_operator",
            "df",
            "docvalue_fields",
            "expand_wildcards",
            "explain",
            "from",
            "ignore_throttled",
            "ignore_unavailable",
            "lenient",
            "preference",
            "q",
            "request_cache",
            "rest_total_hits_as_int",
            "routing",
            "scroll",
            "search_type",
            "seq_no_primary_term",
            "size",
            "sort",
            "stats",
            "stored_fields",
            "terminate_after",
            "timeout",
            "track_scores",
            "track_total_hits",
            "typed_keys",
            "version"};
  }
  if (s.size() >= 2 && s[1] == "_create") {
    return {"pipeline",
            "refresh",
            "routing",
            "timeout",
            "version",
            "version_type",
            "wait_for_active_shards"};
  }
  if (s.size() >= 2 && s[1] == "_doc") {
    if (m == "GET" || m == "HEAD") {
      return {"_source", "_source_excludes", "_source_includes", "preference", "realtime",
              "refresh", "routing",          "stored_fields",    "version",    "version_type"};
    }
    if (m == "DELETE") {
      return {"if_primary_term", "if_seq_no", "refresh",      "routing",
              "timeout",         "version",   "version_type", "wait_for_active_shards"};
    }
    return {"if_primary_term",       "if_seq_no", "op_type", "pipeline", "refresh",
            "require_alias",         "routing",   "timeout", "version",  "version_type",
            "wait_for_active_shards"};
  }
  return {};  // Other APIs check their own parameters.
}

DoubleResponse DoubleCluster::Handle(const DoubleRequest& request,
                                     double item_failure_probability) {
  const auto& s = request.segments;
  const std::string& m = request.method;
  if (const auto allowed = AllowedParams(s, m); !allowed.empty()) {
    static constexpr std::string_view kEveryApi[] = {
        "pretty", "human", "error_trace", "filter_path", "source", "source_content_type"};
    for (const auto& [name, value] : request.params) {
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end() ||
          std::find(std::begin(kEveryApi), std::end(kEveryApi), name) != std::end(kEveryApi)) {
        continue;
      }
      std::string path;
      for (const auto& segment : s) path += "/" + segment;
      return Error(400, "illegal_argument_exception",
                   StrCat("request [", path, "] contains unrecognized parameter: [", name, "]"));
    }
  }
  if (s.empty()) {
    if (m == "GET" || m == "HEAD") return Info(m == "HEAD");
  } else if (s[0] == "_cluster" && s.size() == 2 && s[1] == "settings") {
    if (m == "GET" || m == "PUT") return ClusterSettings(request);
  } else if (s[0] == "_cat" && s.size() == 2 && s[1] == "health" && m == "GET") {
    // The elected master's clock in epoch seconds, stringified as OpenSearch renders cat cells
    // (spec: schemas/cat.health.yaml; format=json).
    const int64_t epoch =
        std::chrono::duration_cast<std::chrono::seconds>(Clock().Now().time_since_epoch()).count();
    return {200,
            json::serialize(json::array{json::object{{"epoch", std::to_string(epoch)},
                                                     {"cluster", "opensearch-double"},
                                                     {"status", "green"},
                                                     {"node.total", "1"}}}),
            {}};
  } else if (s[0] == "_bulk" && s.size() == 1) {
    if (m == "POST" || m == "PUT") return Bulk(request, "", "", item_failure_probability);
  } else if (s[0] == "_refresh" && s.size() == 1) {
    if (m == "POST" || m == "GET") return Refresh(request);
  } else if ((s[0] == "_count" || s[0] == "_search") && s.size() == 1) {
    if (m == "POST" || m == "GET") return SearchOrCount(request, s[0] == "_count");
  } else if (s[0] == "_template" || s[0] == "_component_template" || s[0] == "_index_template") {
    return Templates(request, s[0]);
  } else if (s[0] == "_snapshot") {
    return Snapshots(request);
  } else if (s.size() == 1 && s[0][0] != '_') {
    return IndexApi(request);
  } else if (s.size() == 2 && s[1] == "_bulk") {
    if (m == "POST" || m == "PUT") return Bulk(request, s[0], "", item_failure_probability);
  } else if (s.size() == 3 && s[2] == "_bulk") {
    if (m == "POST" || m == "PUT") return Bulk(request, s[0], s[1], item_failure_probability);
  } else if (s.size() == 2 && s[1] == "_refresh") {
    if (m == "POST" || m == "GET") return Refresh(request);
  } else if ((s.size() == 2 || s.size() == 3) && s[1] == "_settings") {
    if (m == "GET" || (m == "PUT" && s.size() == 2)) return IndexSettings(request);
  } else if (s.size() == 2 && (s[1] == "_count" || s[1] == "_search")) {
    if (m == "POST" || m == "GET") return SearchOrCount(request, s[1] == "_count");
  } else if ((s.size() == 3 && (s[1] == "_doc" || s[1] == "_create")) ||
             (s.size() == 2 && s[1] == "_doc")) {
    return DocumentApi(request);
  }
  std::string path;
  for (const auto& segment : s) path += "/" + segment;
  if (path.empty()) path = "/";
  return {400,
          ToJson(json::object{
              {"error", StrCat("no handler found for uri [", path, "] and method [", m, "]")},
              {"status", 400}}),
          {}};
}

DoubleResponse DoubleCluster::Info(bool head) {
  json::object version{{"number", options_.version},
                       {"build_type", "tar"},
                       {"build_hash", "0000000000000000000000000000000000000000"},
                       {"build_date", "2024-01-01T00:00:00.000000Z"},
                       {"build_snapshot", false},
                       {"lucene_version", major_ >= 2 ? "9.7.0" : "8.10.1"},
                       {"minimum_wire_compatibility_version", "7.10.0"},
                       {"minimum_index_compatibility_version", "7.0.0"}};
  if (!is_elasticsearch()) version["distribution"] = "opensearch";
  json::object body{
      {"name", "double-node-1"},
      {"cluster_name", "opensearch-double"},
      {"cluster_uuid", "dOuBlEcLuStErUuId000000"},
      {"version", version},
      {"tagline", is_elasticsearch() ? "You Know, for Search"
                                     : "The OpenSearch Project: https://opensearch.org/"}};
  DoubleResponse r{200, ToJson(body), {}};
  if (head) r.body.clear();
  return r;
}

DoubleResponse DoubleCluster::ClusterSettings(const DoubleRequest& request) {
  std::lock_guard lock(mu_);
  if (request.method == "PUT") {
    auto body = ParseJson(request.body);
    if (!body || !body->is_object()) {
      return Error(400, "parse_exception", "request body is required");
    }
    if (const auto* p = body->as_object().if_contains("persistent"); p && p->is_object()) {
      FlattenSettings(p->as_object(), "", persistent_settings_);
    }
    if (const auto* t = body->as_object().if_contains("transient"); t && t->is_object()) {
      FlattenSettings(t->as_object(), "", transient_settings_);
    }
    return {200,
            ToJson(json::object{{"acknowledged", true},
                                {"persistent", NestSettings(persistent_settings_)},
                                {"transient", NestSettings(transient_settings_)}}),
            {}};
  }
  const bool flat =
      request.params.count("flat_settings") && request.params.at("flat_settings") != "false";
  const bool defaults =
      request.params.count("include_defaults") && request.params.at("include_defaults") != "false";
  auto shape = [&](const json::object& settings) -> json::value {
    return flat ? json::value(settings) : json::value(NestSettings(settings));
  };
  json::object body{{"persistent", shape(persistent_settings_)},
                    {"transient", shape(transient_settings_)}};
  if (defaults) {
    json::object d{{"http.compression", options_.http_compression ? "true" : "false"},
                   {"http.max_content_length", "100mb"},
                   {"action.auto_create_index", "true"},
                   {"cluster.name", "opensearch-double"}};
    body["defaults"] = shape(d);
  }
  return {200, ToJson(body), {}};
}

DoubleResponse DoubleCluster::Templates(const DoubleRequest& request, const std::string& kind) {
  std::lock_guard lock(mu_);
  auto& store = kind == "_template"             ? legacy_templates_
                : kind == "_component_template" ? component_templates_
                                                : index_templates_;
  const std::string name = request.segments.size() > 1 ? request.segments[1] : "";
  const std::string& m = request.method;
  auto not_found = [&]() -> DoubleResponse {
    if (kind == "_template") return {404, "{}", {}};
    const std::string what =
        kind == "_component_template" ? "component template" : "index template";
    return Error(404, "resource_not_found_exception",
                 StrCat(what, " matching [", name, "] not found"));
  };
  if (m == "HEAD") return {store.count(name) ? 200 : 404, "", {}};
  if (m == "GET") {
    if (kind == "_template") {
      json::object out;
      for (const auto& [n, t] : store) {
        if (name.empty() || GlobMatch(name, n)) out[n] = t;
      }
      if (out.empty() && !name.empty()) return not_found();
      return {200, ToJson(out), {}};
    }
    json::array list;
    const std::string key = kind == "_component_template" ? "component_template" : "index_template";
    for (const auto& [n, t] : store) {
      if (name.empty() || GlobMatch(name, n)) list.push_back(json::object{{"name", n}, {key, t}});
    }
    if (list.empty() && !name.empty()) return not_found();
    return {200,
            ToJson(json::object{
                {kind == "_component_template" ? "component_templates" : "index_templates", list}}),
            {}};
  }
  if (m == "DELETE") {
    if (!store.erase(name)) return not_found();
    return {200, R"({"acknowledged":true})", {}};
  }
  if (m == "PUT" || m == "POST") {
    if (name.empty()) return Error(400, "illegal_argument_exception", "template name is missing");
    auto body = ParseJson(request.body);
    if (!body || !body->is_object()) {
      return Error(400, "parse_exception", "request body is required");
    }
    if (kind == "_index_template") {
      const json::value* patterns = body->as_object().if_contains("index_patterns");
      if (patterns == nullptr) {
        return Error(400, "action_request_validation_exception",
                     "Validation Failed: 1: index patterns are missing;");
      }
      if (const auto* composed = body->as_object().if_contains("composed_of");
          composed && composed->is_array()) {
        for (const auto& c : composed->as_array()) {
          if (!c.is_string() || !component_templates_.count(StringOf(c.as_string()))) {
            return Error(400, "invalid_index_template_exception",
                         StrCat("index_template [", name, "] invalid, cause [index template [",
                                name, "] specifies component templates ", ToJson(*composed),
                                " that do not exist]"));
          }
        }
      }
    }
    if (request.params.count("create") && request.params.at("create") == "true" &&
        store.count(name)) {
      return Error(400, "illegal_argument_exception",
                   StrCat("index template [", name, "] already exists"));
    }
    store[name] = *body;
    return {200, R"({"acknowledged":true})", {}};
  }
  return Error(405, "illegal_argument_exception", "method not allowed");
}

std::optional<std::string> DoubleCluster::InvalidIndexNameReason(const std::string& name) const {
  // OpenSearch MetadataCreateIndexService.validateIndexOrAliasName.
  auto invalid = [&](const std::string& why) {
    return StrCat("Invalid index name [", name, "], ", why);
  };
  if (name.empty()) return invalid("must not be empty");
  if (name.find_first_of("\\/*?\"<>| ,#") != std::string::npos) {
    return invalid(R"(must not contain the following characters [ , ", *, \, <, |, ,, >, /, ?])");
  }
  if (name.find(':') != std::string::npos) return invalid("must not contain ':'");
  if (name[0] == '_' || name[0] == '-' || name[0] == '+') {
    return invalid("must not start with '_', '-', or '+'");
  }
  if (name == "." || name == "..") return invalid("must not be '.' or '..'");
  if (name.size() > 255)
    return invalid("index name is too long, (" + std::to_string(name.size()) + " > 255)");
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') return invalid("must be lowercase");
  }
  return std::nullopt;
}

DoubleCluster::Index* DoubleCluster::FindIndex(const std::string& name) {
  auto it = indices_.find(name);
  return it == indices_.end() ? nullptr : &it->second;
}

namespace {

// Index settings OpenSearch 2.x accepts on create (IndexScopedSettings, with the common plugins),
// as exact keys or prefixes; anything else is an "unknown setting". Private settings are the
// ones the cluster sets itself (Property.PrivateIndex and IndexScopedSettings.isPrivateSetting).
bool IsPrivateIndexSetting(std::string_view key) {
  for (std::string_view prefix : {"index.version.", "index.resize.source.", "index.shrink.source.",
                                  "index.routing.allocation.initial_recovery."}) {
    if (key.starts_with(prefix)) return true;
  }
  return key == "index.uuid" || key == "index.history.uuid" ||
         key == "index.verified_before_close" || key == "index.merge.enabled";
}

bool IsKnownIndexSetting(std::string_view key) {
  static const std::set<std::string_view> kExact = {"index.number_of_shards",
                                                    "index.number_of_replicas",
                                                    "index.number_of_routing_shards",
                                                    "index.routing_partition_size",
                                                    "index.refresh_interval",
                                                    "index.auto_expand_replicas",
                                                    "index.codec",
                                                    "index.hidden",
                                                    "index.priority",
                                                    "index.creation_date",
                                                    "index.provided_name",
                                                    "index.default_pipeline",
                                                    "index.final_pipeline",
                                                    "index.gc_deletes",
                                                    "index.load_fixed_bitset_filters_eagerly",
                                                    "index.data_path",
                                                    "index.flush_after_merge",
                                                    "index.warmer.enabled",
                                                    "index.check_pending_flush.enabled",
                                                    "index.replication.type",
                                                    "index.append_only.enabled",
                                                    "index.max_result_window",
                                                    "index.max_inner_result_window",
                                                    "index.max_rescore_window",
                                                    "index.max_docvalue_fields_search",
                                                    "index.max_script_fields",
                                                    "index.max_ngram_diff",
                                                    "index.max_shingle_diff",
                                                    "index.max_refresh_listeners",
                                                    "index.max_terms_count",
                                                    "index.max_regex_length",
                                                    "index.max_slices_per_scroll",
                                                    "index.max_adjacency_matrix_filters",
                                                    "index.max_analyzed_offset"};
  if (kExact.count(key)) return true;
  // The removed mapping settings are unknown even though index.mapping.* is a known family.
  if (key == "index.mapping.single_type" || key == "index.mapper.dynamic") return false;
  for (std::string_view prefix :
       {"index.analysis.",     "index.routing.",        "index.blocks.",
        "index.mapping.",      "index.similarity.",     "index.sort.",
        "index.translog.",     "index.merge.",          "index.search.",
        "index.indexing.",     "index.store.",          "index.soft_deletes.",
        "index.unassigned.",   "index.write.",          "index.query.",
        "index.query_string.", "index.highlight.",      "index.requests.",
        "index.shard.",        "index.codec.",          "index.queries.",
        "index.remote_store.", "index.plugins.",        "index.opendistro.",
        "index.knn",           "index.composite_index", "index.optimize_doc_id_lookup."}) {
    if (key.starts_with(prefix)) return true;
  }
  return false;
}

// The error type and reason OpenSearch answers (400) for settings of a create-index body it does
// not accept: private settings together (MetadataCreateIndexService's validation_exception), else
// the first unknown one (AbstractScopedSettings.validate). Elasticsearch doubles check private
// settings only.
std::optional<std::pair<std::string, std::string>> RejectedIndexSettings(const json::object& body,
                                                                         bool elasticsearch) {
  const json::value* settings = body.if_contains("settings");
  if (settings == nullptr || !settings->is_object()) return std::nullopt;
  json::object flat;
  FlattenSettings(settings->as_object(), "", flat);
  std::string private_errors;
  int count = 0;
  for (const auto& [k, v] : flat) {
    std::string key = StringOf(k);
    if (!key.starts_with("index.")) key = "index." + key;
    if (IsPrivateIndexSetting(key)) {
      private_errors +=
          StrCat(++count, ": private index setting [", key, "] can not be set explicitly;");
    }
  }
  if (count > 0) {
    return std::pair<std::string, std::string>("validation_exception",
                                               StrCat("Validation Failed: ", private_errors));
  }
  if (elasticsearch) return std::nullopt;
  for (const auto& [k, v] : flat) {
    std::string key = StringOf(k);
    if (!key.starts_with("index.")) key = "index." + key;
    if (!IsKnownIndexSetting(key)) {
      return std::pair<std::string, std::string>(
          "illegal_argument_exception",
          StrCat("unknown setting [", key,
                 "] please check that any required plugins are installed, or check the "
                 "breaking changes documentation for removed settings"));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<DoubleResponse> DoubleCluster::CreateIndexLocked(const std::string& name,
                                                               const json::object& body) {
  if (auto reason = InvalidIndexNameReason(name)) {
    return Error(400, "invalid_index_name_exception", *reason,
                 {{"index", name}, {"index_uuid", "_na_"}});
  }
  if (const Index* existing = FindIndex(name)) {
    return Error(400, "resource_already_exists_exception",
                 StrCat("index [", name, "/", existing->uuid, "] already exists"),
                 {{"index", name}, {"index_uuid", existing->uuid}});
  }
  if (auto rejected = RejectedIndexSettings(body, is_elasticsearch())) {
    return Error(400, rejected->first, rejected->second);
  }
  // Typeless clusters reject a mapping nested under a type other than "_doc".
  if (const auto* mp = body.if_contains("mappings"); mp && mp->is_object() &&
                                                     mp->as_object().size() == 1 &&
                                                     (!is_elasticsearch() || major_ >= 7)) {
    const auto& [type, mapping] = *mp->as_object().begin();
    static const std::set<std::string_view> kRootParameters = {"properties",
                                                               "dynamic",
                                                               "dynamic_templates",
                                                               "_source",
                                                               "_meta",
                                                               "_routing",
                                                               "date_detection",
                                                               "numeric_detection",
                                                               "dynamic_date_formats",
                                                               "enabled",
                                                               "_field_names",
                                                               "_data_stream_timestamp",
                                                               "_doc"};
    if (mapping.is_object() && !kRootParameters.count(std::string_view(type))) {
      return Error(400, "mapper_parsing_exception",
                   StrCat("Failed to parse mapping [_doc]: Root mapping definition has "
                          "unsupported parameters:  [",
                          StringOf(type), " : ", ToJson(mapping), "]"));
    }
  }
  Index index;
  index.uuid = StrCat("dbl", std::to_string(next_uuid_++), "uuid");
  index.settings = {{"index.number_of_shards", "1"}, {"index.number_of_replicas", "1"}};
  // Templates first (legacy by ascending order, then the highest-priority index template),
  // the request body last, as OpenSearch merges them.
  auto apply = [&](const json::object& source) {
    if (const auto* s = source.if_contains("settings"); s && s->is_object()) {
      json::object flat;
      FlattenSettings(s->as_object(), "", flat);
      for (auto& [k, v] : flat) {
        std::string key = StringOf(k);
        if (!key.starts_with("index.")) key = "index." + key;
        index.settings[key] = v;
      }
    }
    if (const auto* mp = source.if_contains("mappings"); mp && mp->is_object()) {
      for (const auto& [k, v] : mp->as_object()) index.mappings[k] = v;
    }
    if (const auto* a = source.if_contains("aliases"); a && a->is_object()) {
      for (const auto& [k, v] : a->as_object()) index.aliases[k] = v;
    }
  };
  auto patterns_match = [&](const json::value* patterns) {
    if (patterns == nullptr) return false;
    if (patterns->is_string()) return GlobMatch(StringOf(patterns->as_string()), name);
    if (!patterns->is_array()) return false;
    for (const auto& p : patterns->as_array()) {
      if (p.is_string() && GlobMatch(StringOf(p.as_string()), name)) return true;
    }
    return false;
  };
  const json::object* best = nullptr;
  int64_t best_priority = -1;
  for (const auto& [n, t] : index_templates_) {
    if (t.is_object() && patterns_match(t.as_object().if_contains("index_patterns"))) {
      const int64_t priority = IntOf(t.as_object().if_contains("priority")).value_or(0);
      if (priority > best_priority) {
        best = &t.as_object();
        best_priority = priority;
      }
    }
  }
  if (best != nullptr) {
    if (const auto* composed = best->if_contains("composed_of"); composed && composed->is_array()) {
      for (const auto& c : composed->as_array()) {
        auto it = component_templates_.find(StringOf(c.as_string()));
        if (it != component_templates_.end() && it->second.is_object()) {
          if (const auto* t = it->second.as_object().if_contains("template"); t && t->is_object()) {
            apply(t->as_object());
          }
        }
      }
    }
    if (const auto* t = best->if_contains("template"); t && t->is_object()) apply(t->as_object());
  } else {
    std::vector<std::pair<int64_t, const json::object*>> legacy;
    for (const auto& [n, t] : legacy_templates_) {
      if (t.is_object() && (patterns_match(t.as_object().if_contains("index_patterns")) ||
                            patterns_match(t.as_object().if_contains("template")))) {
        legacy.emplace_back(IntOf(t.as_object().if_contains("order")).value_or(0), &t.as_object());
      }
    }
    std::stable_sort(legacy.begin(), legacy.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [order, t] : legacy) apply(*t);
  }
  apply(body);
  if (auto it = index.settings.find("index.number_of_shards"); it != index.settings.end()) {
    const std::string text =
        it->value().is_string() ? StringOf(it->value().as_string()) : ToJson(it->value());
    index.shards = std::max(1, std::atoi(text.c_str()));
  }
  index.routing_num_shards = RoutingNumShards(index.shards);
  index.next_seq_no.assign(static_cast<size_t>(index.shards), 0);
  if (auto it = index.settings.find("index.refresh_interval"); it != index.settings.end()) {
    index.refresh_interval = ParseRefreshInterval(
        it->value().is_string() ? StringOf(it->value().as_string()) : ToJson(it->value()));
  }
  index.last_refresh = Clock().Now();
  indices_.emplace(name, std::move(index));
  return std::nullopt;
}

int DoubleCluster::ShardFor(const Index& index, std::string_view routing) {
  // OperationRouting.calculateScaledShardId: floorMod(hash, routingNumShards) / routingFactor.
  const int64_t hash = RoutingHash(routing);
  const int64_t n = index.routing_num_shards;
  const int64_t mod = ((hash % n) + n) % n;
  return static_cast<int>(mod / (index.routing_num_shards / index.shards));
}

void DoubleCluster::RefreshLocked(Index& index) {
  index.searchable = index.docs;
  index.last_refresh = Clock().Now();
}

absl::StatusOr<DoubleCluster::Index*> DoubleCluster::GetOrAutoCreate(const std::string& name,
                                                                     DoubleResponse* error) {
  if (Index* index = FindIndex(name)) return index;
  if (auto failed = CreateIndexLocked(name, {})) {
    *error = *failed;
    return absl::InvalidArgumentError("cannot create index");
  }
  return FindIndex(name);
}

std::vector<std::string> DoubleCluster::ResolveIndices(const std::string& expression) const {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= expression.size()) {
    size_t comma = expression.find(',', start);
    if (comma == std::string::npos) comma = expression.size();
    const std::string part = expression.substr(start, comma - start);
    start = comma + 1;
    if (part == "_all" || part.find('*') != std::string::npos) {
      for (const auto& [name, index] : indices_) {
        if ((part == "_all" || GlobMatch(part, name)) &&
            std::find(out.begin(), out.end(), name) == out.end()) {
          out.push_back(name);
        }
      }
    } else if (!part.empty()) {
      out.push_back(part);
    }
  }
  return out;
}

DoubleResponse DoubleCluster::IndexApi(const DoubleRequest& request) {
  std::lock_guard lock(mu_);
  const std::string& name = request.segments[0];
  const std::string& m = request.method;
  Index* index = FindIndex(name);
  auto missing = [&] { return IndexNotFound(name, "index_or_alias"); };
  if (m == "HEAD") return {index != nullptr ? 200 : 404, "", {}};
  if (m == "GET") {
    if (index == nullptr) return missing();
    json::object settings = index->settings;
    settings["index.uuid"] = index->uuid;
    settings["index.provided_name"] = name;
    json::object nested = NestSettings(settings);
    return {200,
            ToJson(json::object{{name, json::object{{"aliases", index->aliases},
                                                    {"mappings", index->mappings},
                                                    {"settings", nested}}}}),
            {}};
  }
  if (m == "DELETE") {
    if (index == nullptr) return missing();
    indices_.erase(name);
    return {200, R"({"acknowledged":true})", {}};
  }
  if (m == "PUT") {
    json::object body;
    if (!request.body.empty()) {
      auto parsed = ParseJson(request.body);
      if (!parsed || !parsed->is_object()) {
        return Error(400, "parse_exception", "Failed to parse content to map");
      }
      body = parsed->as_object();
    }
    if (auto error = CreateIndexLocked(name, body)) return *error;
    return {200,
            ToJson(json::object{
                {"acknowledged", true}, {"shards_acknowledged", true}, {"index", name}}),
            {}};
  }
  return Error(405, "illegal_argument_exception",
               StrCat("Incorrect HTTP method for uri [/", name, "] and method [", m,
                      "], allowed: [GET, HEAD, DELETE, PUT]"));
}

std::optional<std::pair<std::string, std::string>> DoubleCluster::CheckMapping(
    const Index& index, const json::object& doc, const std::string& id) const {
  const json::object* root = MappingRoot(index.mappings);
  // Walks the document against the mapping; `strict` is inherited by inner objects.
  std::function<std::optional<std::pair<std::string, std::string>>(
      const json::object&, const json::object*, bool, const std::string&)>
      walk = [&](const json::object& object, const json::object* mapping, bool strict,
                 const std::string& path) -> std::optional<std::pair<std::string, std::string>> {
    if (mapping != nullptr) {
      if (const auto* dynamic = mapping->if_contains("dynamic")) {
        strict = (dynamic->is_string() && dynamic->as_string() == "strict");
      }
    }
    const json::object* properties = nullptr;
    if (mapping != nullptr) {
      if (const auto* p = mapping->if_contains("properties"); p && p->is_object()) {
        properties = &p->as_object();
      }
    }
    for (const auto& [key, value] : object) {
      const std::string field = StringOf(key);
      const std::string full = path.empty() ? field : StrCat(path, ".", field);
      const json::value* field_mapping = properties ? properties->if_contains(key) : nullptr;
      if (field_mapping == nullptr) {
        if (strict) {
          return std::make_pair(
              std::string("strict_dynamic_mapping_exception"),
              StrCat("mapping set to strict, dynamic introduction of [", field, "] within [",
                     path.empty() ? "_doc" : path, "] is not allowed"));
        }
        continue;
      }
      if (!field_mapping->is_object()) continue;
      const json::object& fm = field_mapping->as_object();
      const std::string type = StringField(fm, "type").value_or("object");
      if (value.is_object() && (type == "object" || type == "nested")) {
        if (auto failure = walk(value.as_object(), &fm, strict, full)) return failure;
        continue;
      }
      const bool numeric = type == "long" || type == "integer" || type == "short" ||
                           type == "byte" || type == "double" || type == "float";
      bool bad = false;
      if (numeric) {
        bad = !(value.is_number() || value.is_null() || value.is_array() ||
                (value.is_string() && ParseInt(StringOf(value.as_string()))));
      } else if (type == "boolean") {
        bad =
            !(value.is_bool() || value.is_null() || value.is_array() ||
              (value.is_string() && (value.as_string() == "true" || value.as_string() == "false")));
      } else if (type == "object" && !value.is_object() && !value.is_null()) {
        bad = true;
      }
      if (bad) {
        return std::make_pair(
            std::string("mapper_parsing_exception"),
            StrCat("failed to parse field [", full, "] of type [", type, "] in document with id '",
                   id, "'. Preview of field's value: '",
                   value.is_string() ? StringOf(value.as_string()) : ToJson(value), "'"));
      }
    }
    return std::nullopt;
  };
  return walk(doc, root, false, "");
}

DoubleCluster::WriteResult DoubleCluster::ApplyWrite(
    const std::string& op, const std::string& index_name, std::optional<std::string> id,
    const std::optional<std::string>& routing, std::string_view source,
    std::optional<int64_t> if_seq_no, std::optional<int64_t> if_primary_term,
    std::optional<ExternalVersion> external) {
  WriteResult result;
  if (op == "delete") {
    Index* index = FindIndex(index_name);
    if (index == nullptr) {
      result.status = 404;
      result.body = ItemError(index_name, nullptr, "index_not_found_exception",
                              StrCat("no such index [", index_name, "]"));
      return result;
    }
    const int shard = ShardFor(*index, routing.value_or(*id));
    const std::string key = DocKey(shard, *id);
    auto it = index->docs.find(key);
    json::object body{{"_index", index_name}, {"_id", *id}};
    if (it == index->docs.end()) {
      body["result"] = "not_found";
      body["_version"] = 1;
      result.status = 404;
    } else {
      index->deleted_versions[key] = it->second.version + 1;
      body["result"] = "deleted";
      body["_version"] = it->second.version + 1;
      index->docs.erase(it);
      result.status = 200;
    }
    body["_shards"] = Shards();
    body["_seq_no"] = index->next_seq_no[static_cast<size_t>(shard)]++;
    body["_primary_term"] = 1;
    ++write_operations_;
    result.body = std::move(body);
    return result;
  }

  DoubleResponse create_error;
  auto index_or = GetOrAutoCreate(index_name, &create_error);
  if (!index_or.ok()) {
    result.status = create_error.status;
    auto parsed = ParseJson(create_error.body);
    result.body = parsed->as_object()["error"].as_object();
    result.body.erase("root_cause");
    return result;
  }
  Index& index = **index_or;
  if (!id) id = StrCat("dbl-auto-", std::to_string(next_auto_id_++));
  const int shard = ShardFor(index, routing.value_or(*id));
  const std::string key = DocKey(shard, *id);

  auto parsed = ParseJson(source);
  std::string stored_source(source);
  if (op == "update") {
    if (!parsed || !parsed->is_object()) {
      result.status = 400;
      result.body = ItemError(index_name, &index, "x_content_parse_exception",
                              "[1:2] [UpdateRequest] failed to parse object");
      return result;
    }
    const json::object& u = parsed->as_object();
    auto existing = index.docs.find(key);
    const json::value* doc = u.if_contains("doc");
    if (existing == index.docs.end()) {
      const bool upsert = u.if_contains("doc_as_upsert") && u.at("doc_as_upsert").is_bool() &&
                          u.at("doc_as_upsert").as_bool();
      if (!upsert || doc == nullptr) {
        result.status = 404;
        result.body = ItemError(index_name, &index, "document_missing_exception",
                                StrCat("[", *id, "]: document missing"));
        return result;
      }
      parsed = *doc;
    } else {
      auto current = ParseJson(existing->second.source);
      json::object merged = current && current->is_object() ? current->as_object() : json::object();
      if (doc != nullptr && doc->is_object()) {
        for (const auto& [k, v] : doc->as_object()) merged[k] = v;
      }
      parsed = json::value(merged);
    }
    stored_source = ToJson(*parsed);
  }
  if (!parsed) {
    result.status = 400;
    result.body = ItemError(index_name, &index, "mapper_parsing_exception", "failed to parse");
    result.body["caused_by"] = json::object{
        {"type", "json_parse_exception"},
        {"reason", "Unexpected character: was expecting a JSON value or a valid closing token"}};
    return result;
  }
  if (!parsed->is_object()) {
    result.status = 400;
    result.body = ItemError(index_name, &index, "mapper_parsing_exception", "failed to parse");
    result.body["caused_by"] = json::object{
        {"type", "not_x_content_exception"},
        {"reason",
         "Compressor detection can only be called on some xcontent bytes or compressed "
         "xcontent bytes"}};
    return result;
  }
  if (auto failure = CheckMapping(index, parsed->as_object(), *id)) {
    result.status = 400;
    result.body = ItemError(index_name, &index, failure->first, failure->second);
    return result;
  }

  auto existing = index.docs.find(key);
  const bool exists = existing != index.docs.end();
  if (if_seq_no || if_primary_term) {
    std::string reason;
    if (!exists) {
      reason =
          StrCat("[", *id, "]: version conflict, required seqNo [", if_seq_no.value_or(-2),
                 "], primary term [", if_primary_term.value_or(0), "]. but no document was found");
    } else if (existing->second.seq_no != if_seq_no.value_or(-2) ||
               existing->second.primary_term != if_primary_term.value_or(0)) {
      reason = StrCat("[", *id, "]: version conflict, required seqNo [", if_seq_no.value_or(-2),
                      "], primary term [", if_primary_term.value_or(0),
                      "]. current document has seqNo [", existing->second.seq_no,
                      "] and primary term [", existing->second.primary_term, "]");
    }
    if (!reason.empty()) {
      result.status = 409;
      result.body = ItemError(index_name, &index, "version_conflict_engine_exception", reason);
      return result;
    }
  }
  if (external) {
    // VersionType.EXTERNAL(_GTE).isVersionConflictForWrites: the current version is the live
    // document's, or a delete tombstone's (OpenSearch keeps those for index.gc_deletes, 60 s;
    // the double keeps them), and none at all is no conflict.
    std::optional<int64_t> current;
    if (exists) {
      current = existing->second.version;
    } else if (auto tomb = index.deleted_versions.find(key); tomb != index.deleted_versions.end()) {
      current = tomb->second;
    }
    if (current && (external->gte ? *current > external->version : *current >= external->version)) {
      result.status = 409;
      result.body = ItemError(index_name, &index, "version_conflict_engine_exception",
                              StrCat("[", *id, "]: version conflict, current version [", *current,
                                     external->gte ? "] is higher than the one provided ["
                                                   : "] is higher or equal to the one provided [",
                                     external->version, "]"));
      return result;
    }
  }
  if (op == "create" && exists) {
    result.status = 409;
    result.body = ItemError(index_name, &index, "version_conflict_engine_exception",
                            StrCat("[", *id,
                                   "]: version conflict, document already exists "
                                   "(current version [",
                                   existing->second.version, "])"));
    return result;
  }

  StoredDocument doc;
  doc.source = std::move(stored_source);
  doc.seq_no = index.next_seq_no[static_cast<size_t>(shard)]++;
  doc.primary_term = 1;
  doc.routing = routing;
  if (exists) {
    doc.version = existing->second.version + 1;
    doc.writes = existing->second.writes + 1;
  } else if (auto tomb = index.deleted_versions.find(key); tomb != index.deleted_versions.end()) {
    doc.version = tomb->second + 1;
    index.deleted_versions.erase(tomb);
  }
  if (external) doc.version = external->version;
  json::object body{{"_index", index_name},
                    {"_id", *id},
                    {"_version", doc.version},
                    {"result", exists ? "updated" : "created"},
                    {"_shards", Shards()},
                    {"_seq_no", doc.seq_no},
                    {"_primary_term", doc.primary_term}};
  if (is_elasticsearch() && major_ <= 6) body["_type"] = "_doc";
  index.docs[key] = std::move(doc);
  ++write_operations_;
  result.status = exists ? 200 : 201;
  result.body = std::move(body);
  return result;
}

DoubleResponse DoubleCluster::Bulk(const DoubleRequest& request, const std::string& path_index,
                                   const std::string& path_type, double item_failure_probability) {
  if (options_.discard_bulk) {
    // Benchmark mode: count action lines (every other non-empty line) and acknowledge them.
    size_t lines = 0;
    if (request.discarded_actions) {
      lines = *request.discarded_actions * 2;
    } else {
      for (size_t pos = 0; pos < request.body.size();) {
        const size_t nl = request.body.find('\n', pos);
        if (nl != pos) ++lines;
        if (nl == std::string::npos) break;
        pos = nl + 1;
      }
    }
    static constexpr std::string_view kItem = R"({"index":{"_index":"discard","status":201}})";
    std::string body = R"({"took":1,"errors":false,"items":[)";
    body.reserve(body.size() + (lines / 2) * (kItem.size() + 1) + 2);
    for (size_t i = 0; i < lines / 2; ++i) {
      if (i != 0) body.push_back(',');
      body.append(kItem);
    }
    body.append("]}");
    std::lock_guard lock(mu_);
    bulk_items_ += lines / 2;
    return {200, std::move(body), {}};
  }

  std::lock_guard lock(mu_);
  const bool typed_required = is_elasticsearch() && major_ <= 6;
  const bool type_forbidden =
      (is_elasticsearch() && major_ >= 8) || (!is_elasticsearch() && major_ >= 2);
  if (request.body.empty()) {
    return Error(400, "action_request_validation_exception",
                 "Validation Failed: 1: no requests added;");
  }
  if (request.body.back() != '\n') {
    return Error(400, "illegal_argument_exception",
                 "The bulk request must be terminated by a newline [\\n]");
  }
  {
    // OpenSearch validates the whole request before applying any item (BulkRequest.validate):
    // an _id over 512 bytes refuses it all.
    std::string errors_text;
    int count = 0;
    size_t at = 0;
    bool expect_action = true;
    while (at < request.body.size()) {
      const size_t nl = request.body.find('\n', at);
      const std::string_view text = std::string_view(request.body).substr(at, nl - at);
      at = nl + 1;
      if (text.empty()) continue;
      if (!expect_action) {
        expect_action = true;
        continue;
      }
      auto action = ParseJson(text);
      if (!action || !action->is_object() || action->as_object().size() != 1) break;
      const auto& [op, meta] = *action->as_object().begin();
      expect_action = op == "delete";
      if (!meta.is_object()) continue;
      if (auto id = StringField(meta.as_object(), "_id"); id && id->size() > 512) {
        errors_text +=
            StrCat(++count, ": id [", *id,
                   "] is too long, must be no longer than 512 bytes but was: ", id->size(), ";");
      }
      // IndexRequest.validate, DeleteRequest.validate: versions.
      const std::string version_type =
          StringField(meta.as_object(), "version_type").value_or("internal");
      const bool has_version = meta.as_object().contains("version");
      if (version_type != "internal" && version_type != "external" &&
          version_type != "external_gte") {
        return Error(400, "illegal_argument_exception",
                     StrCat("No version type match [", version_type, "]"));
      }
      if (op == "create" && version_type != "internal") {
        errors_text += StrCat(++count,
                              ": create operations only support internal versioning. use index "
                              "instead;");
      } else if (op == "create" && has_version) {
        errors_text += StrCat(
            ++count, ": create operations do not support explicit versions. use index instead;");
      } else if (version_type != "internal" && !has_version) {
        errors_text += StrCat(++count, ": illegal version value [-3] for version type [",
                              version_type == "external" ? "EXTERNAL" : "EXTERNAL_GTE", "];");
      } else if (version_type == "internal" && has_version && op != "delete") {
        errors_text += StrCat(++count,
                              ": internal versioning can not be used for optimistic concurrency "
                              "control. Please use `if_seq_no` and `if_primary_term` instead;");
      } else if (op == "update" && version_type != "internal") {
        errors_text += StrCat(++count, ": only internal versioning is supported for update;");
      }
    }
    if (count > 0) {
      return Error(400, "action_request_validation_exception",
                   StrCat("Validation Failed: ", errors_text));
    }
  }
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  json::array items;
  bool errors = false;
  size_t pos = 0;
  int line_number = 0;
  auto next_line = [&](std::string_view& line) {
    while (pos < request.body.size()) {
      const size_t nl = request.body.find('\n', pos);
      line = std::string_view(request.body).substr(pos, nl - pos);
      pos = nl + 1;
      ++line_number;
      if (!line.empty()) return true;
    }
    return false;
  };
  std::string_view line;
  while (next_line(line)) {
    const int action_line = line_number;
    auto action = ParseJson(line);
    if (!action || !action->is_object() || action->as_object().size() != 1) {
      return Error(400, "illegal_argument_exception",
                   StrCat("Malformed action/metadata line [", action_line,
                          "], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]"));
    }
    const auto& [op_key, meta_value] = *action->as_object().begin();
    const std::string op = StringOf(op_key);
    if (op != "index" && op != "create" && op != "update" && op != "delete") {
      return Error(
          400, "illegal_argument_exception",
          StrCat("Malformed action/metadata line [", action_line,
                 "], expected field [create], [delete], [index] or [update] but found [", op, "]"));
    }
    if (!meta_value.is_object()) {
      return Error(400, "illegal_argument_exception",
                   StrCat("Malformed action/metadata line [", action_line,
                          "], expected START_OBJECT but found [", ToJson(meta_value), "]"));
    }
    const json::object& meta = meta_value.as_object();
    for (const auto& [key, value] : meta) {
      static const char* kKnown[] = {"_index",
                                     "_id",
                                     "_type",
                                     "routing",
                                     "if_seq_no",
                                     "if_primary_term",
                                     "version",
                                     "version_type",
                                     "pipeline",
                                     "require_alias",
                                     "retry_on_conflict",
                                     "_source"};
      if (std::find(std::begin(kKnown), std::end(kKnown), StringOf(key)) == std::end(kKnown) ||
          (key == "_type" && type_forbidden)) {
        return Error(400, "illegal_argument_exception",
                     StrCat("Action/metadata line [", action_line,
                            "] contains an unknown parameter [", StringOf(key), "]"));
      }
    }
    std::string index_name = StringField(meta, "_index").value_or(path_index);
    if (index_name.empty()) {
      return Error(400, "action_request_validation_exception",
                   "Validation Failed: 1: index is missing;");
    }
    if (typed_required && !meta.contains("_type") && path_type.empty()) {
      return Error(400, "action_request_validation_exception",
                   "Validation Failed: 1: type is missing;");
    }
    std::optional<std::string> id = StringField(meta, "_id");
    std::optional<std::string> routing = StringField(meta, "routing");
    std::string_view source;
    if (op != "delete") {
      if (!next_line(source)) {
        return Error(400, "illegal_argument_exception",
                     StrCat("The bulk request must be terminated by a newline [\\n]"));
      }
    } else if (!id) {
      return Error(400, "action_request_validation_exception",
                   "Validation Failed: 1: id is missing;");
    }
    ++bulk_items_;
    WriteResult result;
    if (item_failure_probability > 0 && uniform(rng_) < item_failure_probability) {
      result.status = 429;
      result.body = ItemError(index_name, FindIndex(index_name), rejected_execution_type(),
                              "rejected execution of primary operation [coordinating_and_primary_"
                              "bytes=0, replica_bytes=0, all_bytes=0, primary_operation_bytes=0, "
                              "max_coordinating_and_primary_bytes=0]");
    } else {
      std::optional<ExternalVersion> external;
      if (const std::string type = StringField(meta, "version_type").value_or("internal");
          type != "internal" && op == "index") {
        external =
            ExternalVersion{IntOf(meta.if_contains("version")).value_or(0), type == "external_gte"};
      }
      result = ApplyWrite(op, index_name, id, routing, source, IntOf(meta.if_contains("if_seq_no")),
                          IntOf(meta.if_contains("if_primary_term")), external);
    }
    json::object item;
    if (result.status >= 300 &&
        !(op == "delete" && result.status == 404 && result.body.contains("result"))) {
      errors = true;
      item = {{"_index", index_name},
              {"_id", id.value_or("")},
              {"status", result.status},
              {"error", result.body}};
    } else {
      item = std::move(result.body);
      item["status"] = result.status;
    }
    if (typed_required) item["_type"] = StringField(meta, "_type").value_or(path_type);
    items.push_back(json::object{{op, std::move(item)}});
  }
  if (auto it = request.params.find("refresh");
      it != request.params.end() && it->second != "false") {
    for (const auto& entry : items) {
      const auto& item = entry.as_object().begin()->value().as_object();
      if (Index* index = FindIndex(StringOf(item.at("_index").as_string()))) RefreshLocked(*index);
    }
  }
  return {200, ToJson(json::object{{"took", 1}, {"errors", errors}, {"items", items}}), {}};
}

DoubleResponse DoubleCluster::DocumentApi(const DoubleRequest& request) {
  std::lock_guard lock(mu_);
  const auto& s = request.segments;
  const std::string& index_name = s[0];
  const std::string& m = request.method;
  const bool create_endpoint = s[1] == "_create";
  std::optional<std::string> id;
  if (s.size() == 3) id = s[2];
  auto param = [&](const std::string& name) -> std::optional<std::string> {
    auto it = request.params.find(name);
    if (it == request.params.end()) return std::nullopt;
    return it->second;
  };
  if ((m == "GET" || m == "HEAD") && id && !create_endpoint) {
    Index* index = FindIndex(index_name);
    if (index == nullptr) {
      if (m == "HEAD") return {404, "", {}};
      return IndexNotFound(index_name, "index_expression");
    }
    // A real-time get reads the shard the routing (or the _id) names.
    auto it = index->docs.find(DocKey(ShardFor(*index, param("routing").value_or(*id)), *id));
    if (it == index->docs.end()) {
      if (m == "HEAD") return {404, "", {}};
      return {
          404, ToJson(json::object{{"_index", index_name}, {"_id", *id}, {"found", false}}), {}};
    }
    if (m == "HEAD") return {200, "", {}};
    json::object body{{"_index", index_name},
                      {"_id", *id},
                      {"_version", it->second.version},
                      {"_seq_no", it->second.seq_no},
                      {"_primary_term", it->second.primary_term},
                      {"found", true}};
    if (it->second.routing) body["_routing"] = *it->second.routing;
    return {200, WithStoredSource(body, it->second.source), {}};
  }
  if (m == "DELETE" && id && !create_endpoint) {
    WriteResult r =
        ApplyWrite("delete", index_name, id, param("routing"), "", std::nullopt, std::nullopt);
    if (r.status >= 400 && !r.body.contains("result")) {
      return Error(r.status, StringOf(r.body["type"].as_string()),
                   StringOf(r.body["reason"].as_string()));
    }
    return {r.status, ToJson(r.body), {}};
  }
  if (m == "PUT" || m == "POST") {
    if (m == "PUT" && !id) {
      return Error(405, "illegal_argument_exception",
                   StrCat("Incorrect HTTP method for uri [/", index_name,
                          "/_doc] and method [PUT], allowed: [POST]"));
    }
    auto if_seq_no = param("if_seq_no");
    auto if_primary_term = param("if_primary_term");
    if (if_seq_no.has_value() != if_primary_term.has_value()) {
      return Error(400, "action_request_validation_exception",
                   if_seq_no ? "Validation Failed: 1: ifSeqNo is set, but primary term is [0];"
                             : "Validation Failed: 1: ifSeqNo is unassigned, but primary term is "
                               "set;");
    }
    const std::string op =
        create_endpoint || param("op_type").value_or("index") == "create" ? "create" : "index";
    if (op == "create" && if_seq_no) {
      return Error(400, "action_request_validation_exception",
                   "Validation Failed: 1: create operations do not support compare and set. use "
                   "index instead;");
    }
    std::optional<int64_t> seq = if_seq_no ? ParseInt(*if_seq_no) : std::nullopt;
    std::optional<int64_t> term = if_primary_term ? ParseInt(*if_primary_term) : std::nullopt;
    std::optional<ExternalVersion> external;
    if (const std::string type = param("version_type").value_or("internal"); type != "internal") {
      if (type != "external" && type != "external_gte") {
        return Error(400, "illegal_argument_exception",
                     StrCat("No version type match [", type, "]"));
      }
      if (op == "create") {
        return Error(400, "action_request_validation_exception",
                     "Validation Failed: 1: create operations only support internal versioning. "
                     "use index instead;");
      }
      std::optional<int64_t> version =
          param("version") ? ParseInt(*param("version")) : std::nullopt;
      if (!version || *version < 0) {
        return Error(
            400, "action_request_validation_exception",
            StrCat("Validation Failed: 1: illegal version value [", version.value_or(-3),
                   "] for version type [", type == "external" ? "EXTERNAL" : "EXTERNAL_GTE", "];"));
      }
      external = ExternalVersion{*version, type == "external_gte"};
    }
    WriteResult r =
        ApplyWrite(op, index_name, id, param("routing"), request.body, seq, term, external);
    if (r.status >= 400) {
      const std::string type = StringOf(r.body["type"].as_string());
      const std::string reason = StringOf(r.body["reason"].as_string());
      json::object extra;
      for (const auto& [k, v] : r.body) {
        if (k != "type" && k != "reason") extra[k] = v;
      }
      return Error(r.status, type, reason, extra);
    }
    if (auto refresh = param("refresh"); refresh && *refresh != "false") {
      if (Index* index = FindIndex(index_name)) RefreshLocked(*index);
      if (*refresh != "wait_for") r.body["forced_refresh"] = true;
    }
    return {r.status,
            ToJson(r.body),
            {{"Location", StrCat("/", index_name, "/_doc/", *r.body["_id"].if_string())}}};
  }
  return Error(405, "illegal_argument_exception",
               StrCat("Incorrect HTTP method for uri and method [", m, "]"));
}

DoubleResponse DoubleCluster::Refresh(const DoubleRequest& request) {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  if (request.segments.size() == 2) {
    names = ResolveIndices(request.segments[0]);
    for (const auto& name : names) {
      if (FindIndex(name) == nullptr) {
        return IndexNotFound(name, "index_or_alias");
      }
    }
  } else {
    for (const auto& [name, index] : indices_) names.push_back(name);
  }
  for (const auto& name : names) RefreshLocked(*FindIndex(name));
  return {200, ToJson(json::object{{"_shards", Shards()}}), {}};
}

DoubleResponse DoubleCluster::IndexSettings(const DoubleRequest& request) {
  std::lock_guard lock(mu_);
  const std::vector<std::string> names = ResolveIndices(request.segments[0]);
  for (const auto& name : names) {
    if (FindIndex(name) == nullptr) return IndexNotFound(name, "index_or_alias");
  }
  if (request.method == "PUT") {
    auto body = ParseJson(request.body);
    if (!body || !body->is_object()) {
      return Error(400, "parse_exception", "request body is required");
    }
    for (const auto& name : names) {
      Index& index = *FindIndex(name);
      // {"index": {...}} or the settings without the "index" level; a null puts the default back.
      if (body->as_object().contains("index")) {
        FlattenSettings(body->as_object(), "", index.settings);
      } else {
        FlattenSettings(body->as_object(), "index", index.settings);
      }
      auto refresh = index.settings.find("index.refresh_interval");
      index.refresh_interval =
          refresh == index.settings.end()
              ? std::chrono::seconds(1)
              : ParseRefreshInterval(refresh->value().is_string()
                                         ? StringOf(refresh->value().as_string())
                                         : ToJson(refresh->value()));
    }
    return {200, ToJson(json::object{{"acknowledged", true}}), {}};
  }
  std::vector<std::string> wanted;
  if (request.segments.size() == 3) {
    const std::string& list = request.segments[2];
    for (size_t start = 0; start <= list.size();) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      wanted.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
  }
  const bool flat =
      request.params.count("flat_settings") && request.params.at("flat_settings") != "false";
  json::object out;
  for (const auto& name : names) {
    json::object settings;
    for (const auto& [key, value] : FindIndex(name)->settings) {
      if (wanted.empty() ||
          std::find(wanted.begin(), wanted.end(), StringOf(key)) != wanted.end()) {
        settings[key] = value;
      }
    }
    out[name] = json::object{{"settings", flat ? json::value(std::move(settings))
                                               : json::value(NestSettings(settings))}};
  }
  return {200, ToJson(out), {}};
}

DoubleResponse DoubleCluster::SearchOrCount(const DoubleRequest& request, bool count) {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  if (request.segments.size() == 2) {
    names = ResolveIndices(request.segments[0]);
    for (const auto& name : names) {
      if (FindIndex(name) == nullptr) {
        return IndexNotFound(name, "index_or_alias");
      }
    }
  } else {
    for (const auto& [name, index] : indices_) names.push_back(name);
  }
  json::object body;
  if (!request.body.empty()) {
    auto parsed = ParseJson(request.body);
    if (!parsed || !parsed->is_object()) {
      return Error(400, "parsing_exception", "Unknown key for a VALUE_STRING in [query].");
    }
    body = parsed->as_object();
  }
  json::value query = json::object{{"match_all", json::object()}};
  if (const auto* q = body.if_contains("query")) query = *q;
  int64_t size = IntOf(body.if_contains("size")).value_or(10);
  int64_t from = IntOf(body.if_contains("from")).value_or(0);
  if (auto it = request.params.find("size"); it != request.params.end()) {
    size = ParseInt(it->second).value_or(size);
  }
  bool seq_no_primary_term = body.contains("seq_no_primary_term") &&
                             body.at("seq_no_primary_term").is_bool() &&
                             body.at("seq_no_primary_term").as_bool();
  if (auto it = request.params.find("seq_no_primary_term"); it != request.params.end()) {
    seq_no_primary_term = it->second == "true";
  }
  const bool version =
      body.contains("version") && body.at("version").is_bool() && body.at("version").as_bool();
  const bool with_source =
      !(body.contains("_source") && body.at("_source").is_bool() && !body.at("_source").as_bool());

  struct Hit {
    const std::string* index;
    const std::string* id;
    const StoredDocument* doc;
    json::object source;
  };
  std::vector<Hit> hits;
  std::deque<std::string> ids;  // stable addresses for Hit::id
  try {
    for (const auto& name : names) {
      Index& index = indices_.at(name);
      // The periodic refresh (index.refresh_interval), done when someone looks.
      if (index.refresh_interval > core::IClock::Duration::zero() &&
          Clock().Now() - index.last_refresh >= index.refresh_interval) {
        RefreshLocked(index);
      }
      for (const auto& [key, doc] : index.searchable) {
        auto source = ParseJson(doc.source);
        json::object object = source && source->is_object() ? source->as_object() : json::object();
        ids.emplace_back(IdOf(key));
        if (Matches(query, ids.back(), object)) {
          hits.push_back({&name, &ids.back(), &doc, std::move(object)});
        }
      }
    }
  } catch (const QueryError& e) {
    return Error(400, "parsing_exception", e.reason);
  }
  if (count) {
    return {200, ToJson(json::object{{"count", hits.size()}, {"_shards", Shards()}}), {}};
  }
  if (const auto* sort = body.if_contains("sort")) {
    std::vector<std::pair<std::string, bool>> keys;  // field, descending
    auto add_key = [&](const json::value& k) {
      if (k.is_string()) {
        keys.emplace_back(StringOf(k.as_string()), false);
      } else if (k.is_object() && !k.as_object().empty()) {
        const auto& [field, spec] = *k.as_object().begin();
        bool desc = false;
        if (spec.is_string()) desc = spec.as_string() == "desc";
        if (spec.is_object()) desc = StringField(spec.as_object(), "order").value_or("") == "desc";
        keys.emplace_back(StringOf(field), desc);
      }
    };
    if (sort->is_array()) {
      for (const auto& k : sort->as_array()) add_key(k);
    } else {
      add_key(*sort);
    }
    std::stable_sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
      for (const auto& [field, desc] : keys) {
        if (field == "_doc") continue;
        json::value id_a = json::string(*a.id), id_b = json::string(*b.id);
        const json::value* va = field == "_id" ? &id_a : FieldValue(a.source, field);
        const json::value* vb = field == "_id" ? &id_b : FieldValue(b.source, field);
        if (va == nullptr || vb == nullptr) {
          if (va == vb) continue;
          return va != nullptr;  // missing values sort last
        }
        auto c = Compare(*va, *vb);
        if (!c || *c == 0) continue;
        return desc ? *c > 0 : *c < 0;
      }
      return false;
    });
  }
  // The hits as text: each _source is the stored bytes, as a real node returns them.
  std::string out = "[";
  for (int64_t i = from; i < static_cast<int64_t>(hits.size()) && i < from + size; ++i) {
    const Hit& h = hits[static_cast<size_t>(i)];
    json::object hit{{"_index", *h.index}, {"_id", *h.id}, {"_score", 1.0}};
    if (version) hit["_version"] = h.doc->version;
    if (seq_no_primary_term) {
      hit["_seq_no"] = h.doc->seq_no;
      hit["_primary_term"] = h.doc->primary_term;
    }
    if (h.doc->routing) hit["_routing"] = *h.doc->routing;
    if (out.size() > 1) out += ',';
    out += with_source ? WithStoredSource(hit, h.doc->source) : ToJson(hit);
  }
  out += ']';
  constexpr std::string_view kHitsPlaceholder = "\"rfs-double-hits\"";
  json::object result{
      {"took", 1},
      {"timed_out", false},
      {"_shards",
       json::object{
           {"total", names.size()}, {"successful", names.size()}, {"skipped", 0}, {"failed", 0}}},
      {"hits", json::object{{"total", json::object{{"value", hits.size()}, {"relation", "eq"}}},
                            {"max_score", hits.empty() ? json::value(nullptr) : json::value(1.0)},
                            {"hits", kHitsPlaceholder.substr(1, kHitsPlaceholder.size() - 2)}}}};
  std::string text = ToJson(result);
  text.replace(text.find(kHitsPlaceholder), kHitsPlaceholder.size(), out);
  return {200, std::move(text), {}};
}

}  // namespace rfs::testing::internal
