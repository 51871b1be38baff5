#include "coordination/fake_opensearch.hpp"

#include <algorithm>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"

namespace rfs::coordination::testing {
namespace {

namespace json = boost::json;
using core::StrCat;
using net::HttpResponse;

constexpr std::string_view kClockProbeScript =
    "ctx._source.storeTimeMillis = System.currentTimeMillis()";
constexpr int64_t kPrimaryTerm = 1;
constexpr int64_t kMaxResultWindow = 10'000;

json::string_view J(std::string_view s) { return {s.data(), s.size()}; }
std::string_view S(json::string_view s) { return {s.data(), s.size()}; }

struct Target {
  std::vector<std::string> segments;
  std::map<std::string, std::string> params;
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = HexValue(text[i + 1]);
    const int lo = HexValue(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::optional<Target> ParseTarget(std::string_view target) {
  Target out;
  const size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  if (path.empty() || path[0] != '/') return std::nullopt;
  path.remove_prefix(1);
  while (!path.empty()) {
    const size_t slash = path.find('/');
    auto segment = PercentDecode(path.substr(0, slash));
    if (!segment || segment->empty()) return std::nullopt;
    out.segments.push_back(std::move(*segment));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  if (question != std::string_view::npos) {
    std::string_view query = target.substr(question + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      std::string_view pair = query.substr(0, amp);
      const size_t eq = pair.find('=');
      auto key = PercentDecode(pair.substr(0, eq));
      auto value = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
      if (!key || !value) return std::nullopt;
      out.params[*key] = *value;
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  return out;
}

std::string HttpDate(core::IClock::TimePoint t) {
  const std::time_t seconds =
      std::chrono::system_clock::to_time_t(std::chrono::time_point_cast<std::chrono::seconds>(t));
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof(buffer), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buffer;
}

int64_t EpochMillis(core::IClock::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::optional<double> Number(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  return std::nullopt;
}

bool IsNumericType(const std::string& type) { return type == "long" || type == "integer"; }

// Clauses given as one object or an array of objects.
std::vector<const json::value*> Clauses(const json::value& v) {
  std::vector<const json::value*> out;
  if (v.is_array()) {
    for (const auto& e : v.get_array()) out.push_back(&e);
  } else {
    out.push_back(&v);
  }
  return out;
}

}  // namespace

struct FakeOpenSearch::Store {
  struct Doc {
    json::object source;
    int64_t seq_no = 0;
    int64_t version = 1;
  };
  struct Index {
    std::map<std::string, std::string> field_types;
    // Documents are immutable and shared, so a refresh copies pointers, not sources.
    std::map<std::string, std::shared_ptr<const Doc>> docs;        // Real-time state (GET).
    std::map<std::string, std::shared_ptr<const Doc>> searchable;  // As of the last refresh.
    int64_t next_seq_no = 0;
  };
  // A request the fake refuses: the response to send and whether the request was malformed.
  struct Rejection {
    int status;
    std::string type;
    std::string reason;
    bool protocol;
  };

  mutable std::mutex mu;
  std::map<std::string, Index> indices;
  std::vector<std::string> protocol_errors;
  int64_t requests = 0;
  int64_t conflicts = 0;
  int64_t fail_at = -1;
  bool fail_after_applying = false;
  std::mt19937_64 rng{12345};
  core::IClock* clock = nullptr;

  // --- Query evaluation -----------------------------------------------------------------------

  // Evaluates `query` on `source`. Sets `error` (and returns false) for anything outside the
  // modelled subset or for fields the mapping lacks.
  bool Matches(const Index& index, const json::value& query, const json::object& source,
               std::string& error) const {
    if (!query.is_object() || query.get_object().size() != 1) {
      error = "a query clause must be an object with one key";
      return false;
    }
    const auto& [kind, body] = *query.get_object().begin();
    if (kind == "match_all") return true;
    if (kind == "function_score") {
      const json::object* fs = body.if_object();
      if (fs == nullptr) return (error = "function_score must be an object"), false;
      for (const auto& [key, value] : *fs) {
        if (key != "query" && key != "random_score" && key != "boost_mode") {
          error = StrCat("function_score: unsupported key [", S(key), "]");
          return false;
        }
      }
      const json::value* inner = fs->if_contains("query");
      return inner == nullptr || Matches(index, *inner, source, error);
    }
    if (kind == "bool") {
      const json::object* b = body.if_object();
      if (b == nullptr) return (error = "bool must be an object"), false;
      bool result = true;
      for (const auto& [occur, clauses] : *b) {
        const bool negate = occur == "must_not";
        if (occur != "filter" && occur != "must" && !negate) {
          error = StrCat("bool: unsupported occurrence [", S(occur), "]");
          return false;
        }
        for (const json::value* clause : Clauses(clauses)) {
          const bool m = Matches(index, *clause, source, error);
          if (!error.empty()) return false;
          if (m == negate) result = false;
        }
      }
      return result;
    }
    if (kind == "exists") {
      const json::object* e = body.if_object();
      const json::value* field = e != nullptr ? e->if_contains("field") : nullptr;
      if (field == nullptr || !field->is_string() || e->size() != 1) {
        return (error = "exists needs exactly {\"field\": name}"), false;
      }
      const std::string name(S(field->get_string()));
      if (!index.field_types.contains(name)) {
        return (error = StrCat("exists on unmapped field [", name, "]")), false;
      }
      const json::value* v = source.if_contains(J(name));
      return v != nullptr && !v->is_null() && !(v->is_array() && v->get_array().empty());
    }
    if (kind == "range") {
      const json::object* r = body.if_object();
      if (r == nullptr || r->size() != 1) return (error = "range needs one field"), false;
      const auto& [field, bounds] = *r->begin();
      const std::string name(S(field));
      auto type = index.field_types.find(name);
      if (type == index.field_types.end() || !IsNumericType(type->second)) {
        return (error = StrCat("range on unmapped or non-numeric field [", name, "]")), false;
      }
      if (!bounds.is_object()) return (error = "range bounds must be an object"), false;
      const json::value* v = source.if_contains(field);
      const std::optional<double> value = v != nullptr ? Number(*v) : std::nullopt;
      bool result = value.has_value();
      for (const auto& [op, limit_value] : bounds.get_object()) {
        const std::optional<double> limit = Number(limit_value);
        if (!limit) return (error = "range bound must be a number"), false;
        if (!value) continue;
        if (op == "lt") {
          result = result && *value < *limit;
        } else if (op == "lte") {
          result = result && *value <= *limit;
        } else if (op == "gt") {
          result = result && *value > *limit;
        } else if (op == "gte") {
          result = result && *value >= *limit;
        } else {
          return (error = StrCat("range: unsupported operator [", S(op), "]")), false;
        }
      }
      return result;
    }
    if (kind == "term") {
      const json::object* t = body.if_object();
      if (t == nullptr || t->size() != 1) return (error = "term needs one field"), false;
      const auto& [field, spec] = *t->begin();
      const std::string name(S(field));
      auto type = index.field_types.find(name);
      if (type == index.field_types.end() || type->second != "keyword") {
        return (error = StrCat("term on unmapped or non-keyword field [", name, "]")), false;
      }
      const json::value& wanted =
          spec.is_object() && spec.get_object().contains("value") ? spec.at("value") : spec;
      const json::value* v = source.if_contains(field);
      if (v == nullptr) return false;
      if (v->is_array()) {
        const auto& a = v->get_array();
        return std::find(a.begin(), a.end(), wanted) != a.end();
      }
      return *v == wanted;
    }
    error = StrCat("unknown query [", S(kind), "]");
    return false;
  }
};

FakeOpenSearch::FakeOpenSearch(Options options)
    : options_(options), store_(std::make_unique<Store>()) {
  store_->clock = options_.clock;
}

FakeOpenSearch::~FakeOpenSearch() = default;

std::vector<std::string> FakeOpenSearch::protocol_errors() const {
  std::lock_guard lock(store_->mu);
  return store_->protocol_errors;
}

int64_t FakeOpenSearch::request_count() const {
  std::lock_guard lock(store_->mu);
  return store_->requests;
}

int64_t FakeOpenSearch::conflict_count() const {
  std::lock_guard lock(store_->mu);
  return store_->conflicts;
}

void FakeOpenSearch::FailRequest(int64_t n, bool after_applying) {
  std::lock_guard lock(store_->mu);
  store_->fail_at = store_->requests + n;
  store_->fail_after_applying = after_applying;
}

absl::StatusOr<HttpResponse> FakeOpenSearch::Send(const net::HttpRequest& request) {
  if (options_.latency.count() > 0) std::this_thread::sleep_for(options_.latency);
  bool lose_response = false;
  {
    std::lock_guard lock(store_->mu);
    if (store_->requests++ == store_->fail_at) {
      if (!store_->fail_after_applying) {
        return absl::UnavailableError("fake-opensearch: injected connection failure");
      }
      lose_response = true;
    }
  }
  HttpResponse response = Handle(request);
  if (lose_response) return absl::UnavailableError("fake-opensearch: injected lost response");
  if (options_.send_date_header) {
    response.headers.emplace_back("Date", HttpDate(options_.clock->Now()));
  }
  return response;
}

namespace {

HttpResponse JsonResponse(int status, const json::value& body) {
  HttpResponse r;
  r.status = status;
  r.headers.emplace_back("content-type", "application/json; charset=UTF-8");
  r.body = json::serialize(body);
  return r;
}

json::object ErrorBody(int status, std::string_view type, std::string_view reason) {
  json::object cause{{"type", J(type)}, {"reason", J(reason)}};
  return {{"error", {{"root_cause", json::array{cause}}, {"type", J(type)}, {"reason", J(reason)}}},
          {"status", status}};
}

json::object Shards() { return {{"total", 1}, {"successful", 1}, {"failed", 0}}; }

}  // namespace

HttpResponse FakeOpenSearch::Handle(const net::HttpRequest& request) {
  Store& s = *store_;
  std::lock_guard lock(s.mu);
  const std::string what = StrCat(request.method, " ", request.target);
  auto reject = [&](int status, std::string_view type, std::string_view reason,
                    bool protocol = true) {
    if (protocol) s.protocol_errors.push_back(StrCat(what, ": ", type, ": ", reason));
    return JsonResponse(status, ErrorBody(status, type, reason));
  };

  std::optional<Target> target = ParseTarget(request.target);
  if (!target || target->segments.empty()) {
    return reject(400, "illegal_argument_exception", "unparseable target");
  }
  // OpenSearch refuses bodies it cannot identify as JSON.
  if (!request.body.empty()) {
    const std::optional<std::string> type = net::FindHeader(request.headers, "Content-Type");
    if (!type || !type->starts_with("application/json")) {
      s.protocol_errors.push_back(StrCat(what, ": body without Content-Type: application/json"));
      HttpResponse r;
      r.status = 406;
      r.body = StrCat("{\"error\":\"Content-Type header [", type.value_or(""),
                      "] is not supported\",\"status\":406}");
      return r;
    }
  }
  json::value body;
  if (!request.body.empty()) {
    boost::system::error_code ec;
    body = json::parse(J(request.body), ec);
    if (ec || !body.is_object()) return reject(400, "parsing_exception", "body is not an object");
  }
  auto allow_params = [&](std::initializer_list<std::string_view> allowed) -> std::string {
    for (const auto& [key, value] : target->params) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) return key;
    }
    return "";
  };
  auto check_refresh = [&]() -> bool {
    auto it = target->params.find("refresh");
    return it == target->params.end() || it->second == "true" || it->second == "false" ||
           it->second == "wait_for" || it->second.empty();
  };
  // The cluster's clock, as OpenSearch's cat API reports it (schemas/cat.health.yaml: epoch is
  // stringified seconds).
  if (target->segments.size() == 2 && target->segments[0] == "_cat" &&
      target->segments[1] == "health" && request.method == "GET") {
    const int64_t epoch =
        std::chrono::duration_cast<std::chrono::seconds>(options_.clock->Now().time_since_epoch())
            .count();
    return JsonResponse(200, json::array{json::object{{"epoch", std::to_string(epoch)},
                                                      {"cluster", "fake-opensearch"},
                                                      {"status", "green"}}});
  }
  const std::string& index_name = target->segments[0];
  const std::string api = target->segments.size() > 1 ? target->segments[1] : "";
  const std::string id = target->segments.size() > 2 ? target->segments[2] : "";
  auto index_it = s.indices.find(index_name);
  auto refresh_if_asked = [&](Store::Index& index) -> bool {
    auto it = target->params.find("refresh");
    if (it != target->params.end() && (it->second == "true" || it->second.empty())) {
      index.searchable = index.docs;
      return true;
    }
    return false;
  };

  // --- Index level ------------------------------------------------------------------------------
  if (target->segments.size() == 1) {
    if (!allow_params({}).empty()) return reject(400, "illegal_argument_exception", "params");
    if (request.method == "HEAD") {
      HttpResponse r;
      r.status = index_it != s.indices.end() ? 200 : 404;
      return r;
    }
    if (request.method == "PUT") {
      if (index_it != s.indices.end()) {
        return reject(400, "resource_already_exists_exception",
                      StrCat("index [", index_name, "] already exists"), false);
      }
      Store::Index index;
      if (body.is_object()) {
        for (const auto& [key, value] : body.get_object()) {
          if (key != "settings" && key != "mappings") {
            return reject(400, "parse_exception", StrCat("unknown key [", S(key), "]"));
          }
        }
        const json::value* mappings = body.get_object().if_contains("mappings");
        const json::value* properties = mappings != nullptr && mappings->is_object()
                                            ? mappings->get_object().if_contains("properties")
                                            : nullptr;
        if (properties != nullptr && properties->is_object()) {
          for (const auto& [field, spec] : properties->get_object()) {
            const json::value* type =
                spec.is_object() ? spec.get_object().if_contains("type") : nullptr;
            if (type == nullptr || !type->is_string()) {
              return reject(400, "mapper_parsing_exception", "property without type");
            }
            index.field_types[std::string(S(field))] = std::string(S(type->get_string()));
          }
        }
      }
      s.indices.emplace(index_name, std::move(index));
      return JsonResponse(200, json::object{{"acknowledged", true},
                                            {"shards_acknowledged", true},
                                            {"index", J(index_name)}});
    }
    return reject(405, "method_not_allowed", request.method);
  }

  if (index_it == s.indices.end()) {
    // Reads of a missing index are a legitimate 404; writes would auto-create it in a real
    // cluster with guessed mappings, which the coordinator must never cause.
    const bool write =
        api == "_create" || api == "_update" || (api == "_doc" && request.method != "GET");
    return reject(404, "index_not_found_exception", StrCat("no such index [", index_name, "]"),
                  write);
  }
  Store::Index& index = index_it->second;

  auto write_response = [&](const std::string& doc_id, const Store::Doc& doc, bool created,
                            bool forced_refresh) {
    json::object r{{"_index", J(index_name)},      {"_id", J(doc_id)},
                   {"_version", doc.version},      {"result", created ? "created" : "updated"},
                   {"_shards", Shards()},          {"_seq_no", doc.seq_no},
                   {"_primary_term", kPrimaryTerm}};
    if (forced_refresh) r["forced_refresh"] = true;
    return JsonResponse(created ? 201 : 200, r);
  };
  auto conflict = [&](std::string reason) {
    ++s.conflicts;
    return reject(409, "version_conflict_engine_exception", reason, false);
  };

  // --- Document APIs ----------------------------------------------------------------------------
  if ((api == "_create" || api == "_doc") && target->segments.size() == 3) {
    if (api == "_doc" && request.method == "GET") {
      if (!allow_params({}).empty()) return reject(400, "illegal_argument_exception", "params");
      auto doc = index.docs.find(id);
      if (doc == index.docs.end()) {
        return JsonResponse(
            404, json::object{{"_index", J(index_name)}, {"_id", J(id)}, {"found", false}});
      }
      return JsonResponse(200, json::object{{"_index", J(index_name)},
                                            {"_id", J(id)},
                                            {"_version", doc->second->version},
                                            {"_seq_no", doc->second->seq_no},
                                            {"_primary_term", kPrimaryTerm},
                                            {"found", true},
                                            {"_source", doc->second->source}});
    }
    if (request.method != "PUT" && request.method != "POST") {
      return reject(405, "method_not_allowed", request.method);
    }
    const std::string bad =
        api == "_create" ? allow_params({"refresh"})
                         : allow_params({"refresh", "if_seq_no", "if_primary_term", "op_type"});
    if (!bad.empty() || !check_refresh()) {
      return reject(400, "illegal_argument_exception",
                    StrCat("request contains unrecognized parameter: [", bad, "]"));
    }
    if (!body.is_object()) return reject(400, "action_request_validation_exception", "no body");
    auto existing = index.docs.find(id);
    const bool create_only = api == "_create" || target->params["op_type"] == "create";
    target->params.erase("op_type");
    if (create_only && existing != index.docs.end()) {
      return conflict(StrCat("[", id,
                             "]: version conflict, document already exists (current version [",
                             existing->second->version, "])"));
    }
    const bool has_seq = target->params.contains("if_seq_no");
    if (has_seq != target->params.contains("if_primary_term")) {
      return reject(400, "action_request_validation_exception",
                    "if_seq_no and if_primary_term must be set together");
    }
    if (has_seq) {
      int64_t want_seq = 0, want_term = 0;
      try {
        want_seq = std::stoll(target->params["if_seq_no"]);
        want_term = std::stoll(target->params["if_primary_term"]);
      } catch (...) {
        return reject(400, "illegal_argument_exception", "bad if_seq_no/if_primary_term");
      }
      if (existing == index.docs.end()) {
        return conflict(StrCat("[", id, "]: version conflict, required seqNo [", want_seq,
                               "], primary term [", want_term, "]. but no document was found"));
      }
      if (existing->second->seq_no != want_seq || want_term != kPrimaryTerm) {
        return conflict(StrCat("[", id, "]: version conflict, required seqNo [", want_seq,
                               "], primary term [", want_term, "]. current document has seqNo [",
                               existing->second->seq_no, "] and primary term [", kPrimaryTerm,
                               "]"));
      }
    }
    const bool created = existing == index.docs.end();
    auto written = std::make_shared<Store::Doc>();
    written->source = body.get_object();
    written->seq_no = index.next_seq_no++;
    written->version = created ? 1 : existing->second->version + 1;
    index.docs[id] = written;
    const Store::Doc& doc = *written;
    const bool refreshed = refresh_if_asked(index);
    return write_response(id, doc, created, refreshed);
  }

  if (api == "_update" && target->segments.size() == 3 && request.method == "POST") {
    const std::string bad = allow_params({"retry_on_conflict", "_source", "refresh"});
    if (!bad.empty() || !check_refresh()) {
      return reject(400, "illegal_argument_exception",
                    StrCat("unrecognized parameter [", bad, "]"));
    }
    // Only the coordinator's clock probe: a scripted upsert storing the server's time.
    const json::object* b = body.if_object();
    const json::value* script = b != nullptr ? b->if_contains("script") : nullptr;
    const bool is_probe =
        b != nullptr && b->size() == 3 && b->contains("upsert") && b->at("upsert").is_object() &&
        b->at("upsert").get_object().empty() && b->contains("scripted_upsert") &&
        b->at("scripted_upsert") == json::value(true) && script != nullptr && script->is_object() &&
        script->get_object().if_contains("lang") != nullptr &&
        script->at("lang") == json::value("painless") &&
        script->get_object().if_contains("source") != nullptr &&
        script->at("source") == json::value(J(kClockProbeScript)) &&
        script->get_object().size() == 2;
    if (!is_probe) return reject(400, "illegal_argument_exception", "unsupported update");
    auto existing = index.docs.find(id);
    const bool created = existing == index.docs.end();
    auto written = std::make_shared<Store::Doc>();
    if (!created) written->source = existing->second->source;
    written->source["storeTimeMillis"] = EpochMillis(s.clock->Now());
    written->seq_no = index.next_seq_no++;
    written->version = created ? 1 : existing->second->version + 1;
    index.docs[id] = written;
    const Store::Doc& doc = *written;
    const bool refreshed = refresh_if_asked(index);
    HttpResponse r = write_response(id, doc, created, refreshed);
    if (target->params["_source"] == "true") {
      json::value parsed = json::parse(r.body);
      parsed.get_object()["get"] = json::object{{"_seq_no", doc.seq_no},
                                                {"_primary_term", kPrimaryTerm},
                                                {"found", true},
                                                {"_source", doc.source}};
      r.body = json::serialize(parsed);
    }
    r.status = 200;  // The update API answers 200 for both created and updated.
    return r;
  }

  if (api == "_refresh" && target->segments.size() == 2 && request.method == "POST") {
    if (!allow_params({}).empty()) return reject(400, "illegal_argument_exception", "params");
    index.searchable = index.docs;
    return JsonResponse(200, json::object{{"_shards", Shards()}});
  }

  if ((api == "_search" || api == "_count") && target->segments.size() == 2 &&
      (request.method == "POST" || request.method == "GET")) {
    const bool search = api == "_search";
    const std::string bad =
        allow_params(search ? std::initializer_list<std::string_view>{"seq_no_primary_term"}
                            : std::initializer_list<std::string_view>{});
    if (!bad.empty()) {
      return reject(400, "illegal_argument_exception",
                    StrCat("unrecognized parameter [", bad, "]"));
    }
    json::object empty;
    const json::object& b = body.is_object() ? body.get_object() : empty;
    for (const auto& [key, value] : b) {
      const bool known =
          key == "query" || (search && (key == "size" || key == "sort" ||
                                        key == "track_total_hits" || key == "seq_no_primary_term"));
      if (!known) return reject(400, "parsing_exception", StrCat("unknown key [", S(key), "]"));
    }
    struct Match {
      const std::string* id;
      const Store::Doc* doc;
      double score;
      std::optional<double> sort_value;
    };
    std::vector<Match> matches;
    const json::value* query = b.if_contains("query");
    const bool random_score = query != nullptr && query->is_object() &&
                              query->get_object().contains("function_score") &&
                              query->at("function_score").is_object() &&
                              query->at("function_score").get_object().contains("random_score");
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (const auto& [doc_id, doc] : index.searchable) {
      std::string error;
      const bool m = query == nullptr || s.Matches(index, *query, doc->source, error);
      if (!error.empty()) return reject(400, "parsing_exception", error);
      if (m) matches.push_back({&doc_id, doc.get(), random_score ? uniform(s.rng) : 1.0, {}});
    }
    if (!search) {
      return JsonResponse(200, json::object{{"count", static_cast<int64_t>(matches.size())},
                                            {"_shards", Shards()}});
    }
    int64_t size = 10;
    if (const json::value* v = b.if_contains("size")) {
      if (!v->is_int64() || v->get_int64() < 0 || v->get_int64() > kMaxResultWindow) {
        return reject(400, "illegal_argument_exception", "bad size");
      }
      size = v->get_int64();
    }
    std::optional<std::string> sort_field;
    bool descending = false;
    if (const json::value* sort = b.if_contains("sort")) {
      const auto clauses = Clauses(*sort);
      if (clauses.size() != 1 || !clauses[0]->is_object() || clauses[0]->get_object().size() != 1) {
        return reject(400, "parsing_exception", "sort: exactly one {field: {order}} supported");
      }
      const auto& [field, spec] = *clauses[0]->get_object().begin();
      sort_field = std::string(S(field));
      auto type = index.field_types.find(*sort_field);
      if (type == index.field_types.end() || !IsNumericType(type->second)) {
        return reject(400, "query_shard_exception",
                      StrCat("No mapping found for [", *sort_field, "] in order to sort on"));
      }
      const json::value* order = spec.is_object() ? spec.get_object().if_contains("order") : &spec;
      if (order == nullptr || !order->is_string() ||
          (order->get_string() != "asc" && order->get_string() != "desc")) {
        return reject(400, "parsing_exception", "sort order must be asc or desc");
      }
      descending = order->get_string() == "desc";
      for (Match& m : matches) {
        if (const json::value* v = m.doc->source.if_contains(J(*sort_field)))
          m.sort_value = Number(*v);
      }
    }
    std::stable_sort(matches.begin(), matches.end(), [&](const Match& a, const Match& b2) {
      if (sort_field) {
        if (a.sort_value.has_value() != b2.sort_value.has_value()) return a.sort_value.has_value();
        if (!a.sort_value) return false;
        return descending ? *a.sort_value > *b2.sort_value : *a.sort_value < *b2.sort_value;
      }
      return a.score > b2.score;
    });
    const bool seq_no =
        target->params["seq_no_primary_term"] == "true" ||
        (b.contains("seq_no_primary_term") && b.at("seq_no_primary_term") == json::value(true));
    json::array hits;
    for (int64_t i = 0; i < size && i < static_cast<int64_t>(matches.size()); ++i) {
      const Match& m = matches[i];
      json::object hit{{"_index", J(index_name)}, {"_id", J(*m.id)}, {"_source", m.doc->source}};
      if (sort_field) {
        hit["_score"] = nullptr;
        hit["sort"] = json::array{m.sort_value ? json::value(static_cast<int64_t>(*m.sort_value))
                                               : json::value(nullptr)};
      } else {
        hit["_score"] = m.score;
      }
      if (seq_no) {
        hit["_seq_no"] = m.doc->seq_no;
        hit["_primary_term"] = kPrimaryTerm;
      }
      hits.push_back(std::move(hit));
    }
    const bool exact_total =
        b.contains("track_total_hits") && b.at("track_total_hits") == json::value(true);
    int64_t total = static_cast<int64_t>(matches.size());
    std::string relation = "eq";
    if (!exact_total && total > kMaxResultWindow) {
      total = kMaxResultWindow;
      relation = "gte";
    }
    return JsonResponse(200,
                        json::object{{"took", 1},
                                     {"timed_out", false},
                                     {"_shards", Shards()},
                                     {"hits",
                                      {{"total", {{"value", total}, {"relation", J(relation)}}},
                                       {"max_score", nullptr},
                                       {"hits", std::move(hits)}}}});
  }

  return reject(400, "illegal_argument_exception", "unsupported API in the fake");
}

}  // namespace rfs::coordination::testing
