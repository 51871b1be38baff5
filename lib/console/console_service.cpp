#include "rfs/console/console_service.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/json.hpp>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "rfs/coordination/target_tuning_records.hpp"
#include "rfs/coordination/verify_records.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/encoding.hpp"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "console/console_openapi_internal.hpp"
#include "console/console_page_internal.hpp"
#include "console/console_status_internal.hpp"

namespace rfs::console {
namespace {

namespace json = boost::json;
using coordination::ItemProgress;
using coordination::IWorkCoordinator;
using coordination::Lease;
using coordination::WorkItemState;
using core::StrCat;

// The suffix of a session's table of RfsWorker phase records (the "workflow" space).
constexpr std::string_view kWorkflowTableSuffix = "_wf";
// ... and of the work items of its verification round N ("verify-N"): "_vN".
constexpr std::string_view kVerifyTableSuffix = "_v";

// The console's own identity towards the store, for reads and the store's time.
constexpr std::string_view kConsoleWorker = "console";

int64_t Millis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
int64_t Millis(coordination::Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}
// Seconds as a client expects them: an integer when whole (`300`), else a fraction (`2.5`).
json::value Seconds(coordination::Duration d) {
  const int64_t ms = Millis(d);
  if (ms % 1000 == 0) return json::value(ms / 1000);
  return json::value(static_cast<double>(ms) / 1000.0);
}

// An answer that ends the request early: an HTTP status and the seed's {"detail": ...} body.
struct Reply {
  int status;
  json::value body;
  std::string allow = {};  // a 405's Allow header
};

// The detail may quote the request (a path, a name): bytes that are not UTF-8 are written as
// \xNN, so the answer stays JSON.
Reply Detail(int status, const std::string& detail) {
  if (core::IsValidUtf8(detail)) return Reply{status, json::object{{"detail", detail}}};
  std::string printable;
  for (const char c : detail) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80) {
      printable += c;
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      printable += {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
    }
  }
  return Reply{status, json::object{{"detail", printable}}};
}

// 405 for a method `route` does not serve, naming those it does (RFC 9110 10.2.1, 15.5.6).
Reply MethodNotAllowed(const std::vector<std::string>& methods, std::string_view route) {
  std::string allow;
  for (const auto& m : methods) allow += allow.empty() ? m : StrCat(", ", m);
  Reply reply = Detail(405, StrCat("use ", allow, " on ", route));
  reply.allow = std::move(allow);
  return reply;
}

// The path templates of the item actions (.../work-items/{id}/ACTION).
const std::map<std::string_view, std::string_view> kItemActionRoutes = {
    {"acquire", "/sessions/{name}/{space}/work-items/{id}/acquire"},
    {"lease", "/sessions/{name}/{space}/work-items/{id}/lease"},
    {"progress", "/sessions/{name}/{space}/work-items/{id}/progress"},
    {"complete", "/sessions/{name}/{space}/work-items/{id}/complete"},
    {"release", "/sessions/{name}/{space}/work-items/{id}/release"},
    {"successors", "/sessions/{name}/{space}/work-items/{id}/successors"}};

// absl error -> HTTP: the seed's 404/409/422, and 503 for a store that is down (clients retry).
Reply FromStatus(const absl::Status& status) {
  if (absl::IsNotFound(status)) return Detail(404, std::string(status.message()));
  if (absl::IsInvalidArgument(status) || absl::IsOutOfRange(status)) {
    return Detail(422, std::string(status.message()));
  }
  if (absl::IsFailedPrecondition(status) || absl::IsAborted(status) ||
      absl::IsAlreadyExists(status)) {
    return Detail(409, std::string(status.message()));
  }
  if (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
      absl::IsResourceExhausted(status)) {
    return Detail(503, std::string(status.message()));
  }
  return Detail(500, std::string(status.message()));
}

template <typename T>
using Result = std::variant<T, Reply>;

#define RFS_CONSOLE_TRY(lhs, expr)                                                             \
  auto RFS_CONSOLE_CONCAT(result_, __LINE__) = (expr);                                         \
  if (auto* reply = std::get_if<Reply>(&RFS_CONSOLE_CONCAT(result_, __LINE__))) return *reply; \
  lhs = std::move(std::get<0>(RFS_CONSOLE_CONCAT(result_, __LINE__)))
#define RFS_CONSOLE_CONCAT_INNER(a, b) a##b
#define RFS_CONSOLE_CONCAT(a, b) RFS_CONSOLE_CONCAT_INNER(a, b)

template <typename T>
Result<T> FromStatusOr(absl::StatusOr<T> value) {
  if (!value.ok()) return FromStatus(value.status());
  return *std::move(value);
}

// %XX escapes; '+' is a space in queries only.
std::string PercentDecode(std::string_view text, bool query = false) {
  if (!query) return net::PercentDecode(text);
  std::string spaced(text);
  std::replace(spaced.begin(), spaced.end(), '+', ' ');
  return net::PercentDecode(spaced);
}

struct Target {
  std::vector<std::string> segments;
  std::vector<std::pair<std::string, std::string>> query;

  std::optional<std::string> Param(std::string_view name) const {
    for (const auto& [key, value] : query) {
      if (key == name) return value;
    }
    return std::nullopt;
  }
};

Target ParseTarget(std::string_view target) {
  Target parsed;
  const size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (slash != 0) parsed.segments.push_back(PercentDecode(path.substr(0, slash)));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  if (question != std::string_view::npos) {
    std::string_view query = target.substr(question + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view pair = query.substr(0, amp);
      const size_t eq = pair.find('=');
      parsed.query.emplace_back(
          PercentDecode(pair.substr(0, eq), true),
          eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true));
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  return parsed;
}

Result<json::value> ParseBody(const std::string& body, bool required) {
  if (body.empty()) {
    if (required) return Detail(422, "a JSON request body is required");
    return json::value(nullptr);
  }
  boost::system::error_code ec;
  json::value value = json::parse(body, ec);
  if (ec) return Detail(422, StrCat("the request body is not JSON: ", ec.message()));
  return value;
}

// Field readers for request bodies: 422 naming the field when its type or range is wrong.
Result<std::optional<std::string>> OptionalString(const json::object& object,
                                                  std::string_view name) {
  const json::value* v = object.if_contains(name);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (!v->is_string()) return Detail(422, StrCat("'", name, "' must be a string"));
  return std::optional<std::string>(std::string(v->as_string()));
}

Result<std::optional<int64_t>> OptionalInteger(const json::object& object, std::string_view name,
                                               int64_t min, int64_t max) {
  const json::value* v = object.if_contains(name);
  if (v == nullptr || v->is_null()) return std::optional<int64_t>();
  std::optional<int64_t> value;
  if (v->is_int64()) value = v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    value = static_cast<int64_t>(v->as_uint64());
  }
  if (v->is_double() && std::trunc(v->as_double()) == v->as_double() &&
      std::abs(v->as_double()) < 9e15) {
    value = static_cast<int64_t>(v->as_double());
  }
  if (!value || *value < min || *value > max) {
    return Detail(422, StrCat("'", name, "' must be an integer from ", min, " to ", max));
  }
  return value;
}

Result<std::string> WorkerId(std::optional<std::string> worker_id) {
  if (!worker_id || worker_id->empty() || worker_id->size() > 256) {
    return Detail(422, "a worker_id of 1 to 256 characters is required");
  }
  for (char c : *worker_id) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Detail(422, "worker_id must not hold control characters");
    }
  }
  // It is stored and quoted in JSON answers (the holder of a lease).
  if (!core::IsValidUtf8(*worker_id)) return Detail(422, "worker_id must be UTF-8");
  return *std::move(worker_id);
}

json::object OutcomesJson(const coordination::ItemOutcomes& outcomes) {
  json::object out;
  for (const auto& [name, field] : coordination::kItemOutcomeFields) out[name] = outcomes.*field;
  return out;
}

json::value ProgressJson(const std::optional<ItemProgress>& progress) {
  if (!progress) return nullptr;
  json::object out{{"next_cursor", progress->next_cursor},
                   {"documents_processed", progress->docs},
                   {"bytes_processed", progress->bytes}};
  if (progress->outcomes.any()) out["outcomes"] = OutcomesJson(progress->outcomes);
  return out;
}

// The backends keep no outcomes: the console's side table does.
std::optional<ItemProgress> WithOutcomes(std::optional<ItemProgress> progress,
                                         const WorkItemInfo* info) {
  if (progress && info != nullptr && info->outcomes) progress->outcomes = *info->outcomes;
  return progress;
}

json::object LeaseJson(const Lease& lease) {
  return {{"work_item_id", lease.work_item_id},
          {"worker_id", lease.worker_id},
          {"generation", lease.generation},
          {"exponent", lease.exponent},
          {"duration_ms", Millis(lease.duration)},
          {"acquired_at_ms", Millis(lease.acquired_at)},
          {"expires_at_ms", Millis(lease.expires_at)},
          {"recorded_progress", ProgressJson(lease.recorded_progress)}};
}

// The seed's BackfillWorkItem, with the lease fields IWorkCoordinator clients need.
json::object ItemJson(std::string_view session, const WorkItemState& item, const WorkItemInfo* info,
                      TimePoint now) {
  const auto [index_name, shard_number] = internal::ShardOfItem(item, info);
  const bool held = !item.lease_holder.empty() && !item.completed();
  json::object out{
      {"work_item_id", item.id},
      {"session_name", session},
      {"status", ItemStatus(item, now)},
      {"index_name", index_name ? json::value(*index_name) : nullptr},
      {"shard_number", shard_number ? json::value(*shard_number) : nullptr},
      {"document_count",
       info != nullptr && info->document_count ? json::value(*info->document_count) : nullptr},
      {"total_size_bytes",
       info != nullptr && info->total_size_bytes ? json::value(*info->total_size_bytes) : nullptr},
      {"worker_id", held ? json::value(item.lease_holder) : nullptr},
      {"lease_expiry", held ? json::value(FormatTime(item.lease_expires_at)) : nullptr},
      {"documents_processed", item.progress ? item.progress->docs : 0},
      {"bytes_processed", item.progress ? item.progress->bytes : 0},
      {"documents_failed", info != nullptr ? info->documents_failed : 0},
      {"last_progress_update", item.progress ? json::value(FormatTime(item.progress_at)) : nullptr},
      {"created_at", info != nullptr ? json::value(FormatTime(info->created_at)) : nullptr},
      {"completed_at", item.completed_at ? json::value(FormatTime(*item.completed_at)) : nullptr},
      {"completed_at_ms", item.completed_at ? json::value(Millis(*item.completed_at)) : nullptr},
      // IWorkCoordinator state.
      {"lease_holder", item.lease_holder},
      {"lease_expires_at_ms", Millis(item.lease_expires_at)},
      {"lease_generation", item.lease_generation},
      {"next_lease_exponent", item.next_lease_exponent},
      {"successor_ids", json::value_from(item.successor_ids)},
      {"successor_lease_exponent", item.successor_lease_exponent},
      {"creator_id", item.creator_id},
      {"outcomes",
       info != nullptr && info->outcomes ? json::value(OutcomesJson(*info->outcomes)) : nullptr},
      {"progress", ProgressJson(WithOutcomes(item.progress, info))},
      {"progress_at_ms", item.progress ? json::value(Millis(item.progress_at)) : nullptr}};
  return out;
}

bool TokenMatches(std::string_view token, std::string_view expected_sha256) {
  const std::string actual = net::Sha256Hex(token);
  return actual.size() == expected_sha256.size() &&
         CRYPTO_memcmp(actual.data(), expected_sha256.data(), actual.size()) == 0;
}

// "Authorization: Bearer <token>". The scheme is case-insensitive (RFC 9110 11.1) and one or
// more spaces part it from the token (RFC 9110 11.4, RFC 6750 2.1).
std::optional<std::string> BearerToken(const net::HttpRequest& request) {
  const auto header = net::FindHeader(request.headers, "Authorization");
  if (!header) return std::nullopt;
  std::string_view value(*header);
  constexpr std::string_view kBearer = "bearer";
  if (value.size() <= kBearer.size() || value[kBearer.size()] != ' ') return std::nullopt;
  for (size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kBearer[i]) return std::nullopt;
  }
  value.remove_prefix(kBearer.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (value.empty()) return std::nullopt;
  return std::string(value);
}

}  // namespace

std::string NewSessionToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    throw std::runtime_error("the random number generator failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

// The console's metrics (with ConsoleServiceOptions::metrics):
//   rfs_console_requests_total{route,code}           API requests by route and HTTP status
//   rfs_console_request_duration_seconds             their latency
//   rfs_console_work_items_total{outcome}            acquired, completed, handed_on, released
//   rfs_console_lease_renewals_total                 leases renewed by workers
//   rfs_console_session_work_items{session,state}    pending, assigned, completed (sampled)
//   rfs_console_session_documents_processed{session} documents and bytes the fleet reported
//   rfs_console_session_source_bytes_processed{session}
//   rfs_console_session_failed_documents{session}
struct ConsoleMetrics {
  explicit ConsoleMetrics(metrics::Registry& r)
      : requests(r.AddCounter("rfs_console_requests_total",
                              "Console API requests by route and HTTP status.", {"route", "code"})),
        latency(r.AddHistogram("rfs_console_request_duration_seconds",
                               "Console API request latency in seconds.",
                               metrics::LatencyBucketsSeconds())
                    .Get()),
        work_items(r.AddCounter("rfs_console_work_items_total",
                                "Work-item actions of the fleet: acquired, completed, handed_on "
                                "(successors created), released.",
                                {"outcome"})),
        lease_renewals(r.AddCounter("rfs_console_lease_renewals_total",
                                    "Leases renewed by the fleet's workers.")
                           .Get()),
        session_items(r.AddGauge("rfs_console_session_work_items",
                                 "Shards of a session by state, as last sampled.",
                                 {"session", "state"})),
        session_documents(r.AddGauge("rfs_console_session_documents_processed",
                                     "Documents a session's workers reported migrated.",
                                     {"session"})),
        session_bytes(r.AddGauge("rfs_console_session_source_bytes_processed",
                                 "Source bytes a session's workers reported migrated.",
                                 {"session"})),
        session_failed(r.AddGauge("rfs_console_session_failed_documents",
                                  "Documents a session's workers reported failed.", {"session"})) {}
  metrics::Family<metrics::Counter>& requests;
  metrics::Histogram& latency;
  metrics::Family<metrics::Counter>& work_items;
  metrics::Counter& lease_renewals;
  metrics::Family<metrics::Gauge>& session_items;
  metrics::Family<metrics::Gauge>& session_documents;
  metrics::Family<metrics::Gauge>& session_bytes;
  metrics::Family<metrics::Gauge>& session_failed;
};

// A low-cardinality name for the route of `segments` (never a session or item name).
std::string_view RouteLabel(const std::vector<std::string>& s) {
  if (s.empty() || (s.size() == 1 && s[0] == "index.html")) return "page";
  if (s[0] == "health") return "health";
  if (s[0] == "openapi.json") return "openapi";
  if (s[0] != "sessions") return "other";
  if (s.size() == 1) return "sessions";
  if (s.size() == 2) return "session";
  if (s.size() == 4) return s[3] == "time" ? "time" : "work_items";
  if (s.size() == 5) {
    if (s[4] == "acquire") return "acquire";
    if (s[4] == "status") return "status";
    return "work_item";
  }
  if (s.size() == 6) {
    for (std::string_view action :
         {"acquire", "lease", "progress", "complete", "release", "successors"}) {
      if (s[5] == action) return action;
    }
  }
  return "other";
}

struct ConsoleService::Impl {
  ConsoleStore& store;
  ConsoleServiceOptions options;
  std::string admin_sha256;
  ProgressHistory history;
  WorkerReports worker_reports;
  std::unique_ptr<ConsoleMetrics> metrics;

  Impl(ConsoleStore& s, ConsoleServiceOptions o)
      : store(s), options(std::move(o)), admin_sha256(net::Sha256Hex(options.admin_token)) {
    if (options.metrics != nullptr) metrics = std::make_unique<ConsoleMetrics>(*options.metrics);
  }

  void Count(const net::HttpRequest& request, const Reply& reply,
             std::chrono::steady_clock::duration elapsed) {
    if (!metrics) return;
    const std::string_view route = RouteLabel(ParseTarget(request.target).segments);
    metrics->requests.With({route, std::to_string(reply.status)}).Add();
    metrics->latency.Observe(std::chrono::duration<double>(elapsed).count());
    if (reply.status != 200) return;
    if (route == "acquire") {
      const json::object* body = reply.body.if_object();
      const json::value* outcome = body ? body->if_contains("outcome") : nullptr;
      if (outcome && *outcome == "acquired") metrics->work_items.With({"acquired"}).Add();
    } else if (route == "complete") {
      metrics->work_items.With({"completed"}).Add();
    } else if (route == "successors") {
      metrics->work_items.With({"handed_on"}).Add();
    } else if (route == "release") {
      metrics->work_items.With({"released"}).Add();
    } else if (route == "lease") {
      metrics->lease_renewals.Add();
    }
  }

  void RecordSessionGauges(const SessionRecord& session, const json::object& status) {
    if (!metrics) return;
    auto number = [&](const char* key) -> int64_t {
      const json::value* v = status.if_contains(key);
      return v && v->is_number() ? v->to_number<int64_t>() : 0;
    };
    metrics->session_items.With({session.name, "pending"}).Set(number("pending_work_items"));
    metrics->session_items.With({session.name, "assigned"}).Set(number("assigned_work_items"));
    metrics->session_items.With({session.name, "completed"}).Set(number("completed_work_items"));
    metrics->session_documents.With({session.name}).Set(number("total_documents_processed"));
    metrics->session_bytes.With({session.name}).Set(number("total_bytes_processed"));
    int64_t failed = 0;
    if (const json::value* documents = status.if_contains("documents")) {
      if (const json::value* f = documents->as_object().if_contains("failed");
          f && f->is_number()) {
        failed = f->to_number<int64_t>();
      }
    }
    metrics->session_failed.With({session.name}).Set(failed);
  }

  bool IsAdmin(const std::optional<std::string>& token) const {
    return token && !options.admin_token.empty() && TokenMatches(*token, admin_sha256);
  }

  // The session named in the path, if the caller's token opens it. 401 without a token, 403 for
  // a token of another session, 404 for no such session (only to a caller who may know).
  Result<SessionRecord> Authorize(const std::optional<std::string>& token, std::string_view name) {
    if (!token) {
      return Detail(401, "an Authorization: Bearer <token> header is required");
    }
    auto session = store.GetSession(name);
    if (!session.ok()) return FromStatus(session.status());
    if (IsAdmin(token)) {
      if (!*session) return Detail(404, StrCat("Session '", name, "' not found"));
      return **session;
    }
    if (!*session || !TokenMatches(*token, (*session)->token_sha256)) {
      return Detail(403, StrCat("this token does not open session '", name, "'"));
    }
    return **session;
  }

  Result<std::shared_ptr<IWorkCoordinator>> Coordinator(const SessionRecord& session,
                                                        std::string_view worker) {
    return FromStatusOr(store.Coordinator(session, worker));
  }

  Result<TimePoint> StoreNow(const SessionRecord& session) {
    RFS_CONSOLE_TRY(auto coordinator, Coordinator(session, kConsoleWorker));
    return FromStatusOr(coordinator->StoreNow());
  }

  std::optional<WorkItemInfo> InfoFor(const SessionRecord& session, std::string_view id) {
    auto info = store.GetWorkItemInfo(session, id);
    return info.ok() ? *std::move(info) : std::nullopt;
  }

  Result<json::value> ItemReply(const SessionRecord& session, IWorkCoordinator& coordinator,
                                std::string_view id) {
    RFS_CONSOLE_TRY(auto state, FromStatusOr(coordinator.GetWorkItem(id)));
    if (!state) return Detail(404, StrCat("Work item '", id, "' not found"));
    RFS_CONSOLE_TRY(TimePoint now, StoreNow(session));
    const auto info = InfoFor(session, id);
    return json::value(ItemJson(session.name, *state, info ? &*info : nullptr, now));
  }

  // ---- sessions ----

  Reply CreateSession(const std::optional<std::string>& token, const std::string& body) {
    if (!IsAdmin(token))
      return Detail(token ? 403 : 401, "creating a session needs the admin token");
    RFS_CONSOLE_TRY(json::value parsed, ParseBody(body, true));
    if (!parsed.is_object()) return Detail(422, "the body must be an object: {\"name\": ...}");
    RFS_CONSOLE_TRY(auto name, OptionalString(parsed.as_object(), "name"));
    if (!name) return Detail(422, "'name' is required");
    if (auto valid = ValidateSessionName(*name); !valid.ok()) return FromStatus(valid);
    const std::string session_token = NewSessionToken();
    RFS_CONSOLE_TRY(bool created,
                    FromStatusOr(store.CreateSession(*name, net::Sha256Hex(session_token))));
    if (!created) return Detail(409, StrCat("Session '", *name, "' already exists"));
    RFS_CONSOLE_TRY(auto session, FromStatusOr(store.GetSession(*name)));
    if (!session) return Detail(500, "the session vanished after its creation");
    return Reply{201, json::object{{"name", *name},
                                   {"token", session_token},
                                   {"created_at", FormatTime(session->created_at)}}};
  }

  json::object SessionJson(const SessionRecord& session) {
    json::object out{{"name", session.name}, {"created_at", FormatTime(session.created_at)}};
    return out;
  }

  Reply ListSessions(const std::optional<std::string>& token) {
    if (!token) return Detail(401, "an Authorization: Bearer <token> header is required");
    RFS_CONSOLE_TRY(auto sessions, FromStatusOr(store.ListSessions()));
    const bool admin = IsAdmin(token);
    json::array out;
    for (const auto& session : sessions) {
      if (admin || TokenMatches(*token, session.token_sha256)) out.push_back(SessionJson(session));
    }
    if (!admin && out.empty()) return Detail(403, "this token opens no session");
    return Reply{200, out};
  }

  Reply GetSession(const std::optional<std::string>& token, std::string_view name) {
    RFS_CONSOLE_TRY(SessionRecord session, Authorize(token, name));
    json::object out = SessionJson(session);
    RFS_CONSOLE_TRY(json::object status, Status(session));
    out["percent_complete"] = status["percent_complete"];
    out["work_items"] = status["work_items"];
    return Reply{200, out};
  }

  Reply DeleteSession(const std::optional<std::string>& token, std::string_view name) {
    if (!IsAdmin(token))
      return Detail(token ? 403 : 401, "deleting a session needs the admin token");
    RFS_CONSOLE_TRY(bool deleted, FromStatusOr(store.DeleteSession(name)));
    if (!deleted) return Detail(404, StrCat("Session '", name, "' not found"));
    history.Forget(std::string(name));
    worker_reports.Forget(std::string(name));
    return Reply{200, json::object{{"deleted", name}}};
  }

  // ---- work items ----

  Reply CreateWorkItem(const SessionRecord& session, const std::string& body) {
    RFS_CONSOLE_TRY(json::value parsed, ParseBody(body, true));
    if (!parsed.is_object()) return Detail(422, "the body must be a CreateWorkItemRequest object");
    const json::object& request = parsed.as_object();
    RFS_CONSOLE_TRY(auto id, OptionalString(request, "work_item_id"));
    if (!id) return Detail(422, "'work_item_id' is required");
    if (auto valid = coordination::ValidateWorkItemId(*id); !valid.ok()) return FromStatus(valid);
    if (*id == "acquire" || *id == "status") {
      return Detail(422, StrCat("'", *id, "' names a route, not a work item"));
    }
    WorkItemInfo info;
    info.id = *id;
    RFS_CONSOLE_TRY(info.index_name, OptionalString(request, "index_name"));
    if (info.index_name && info.index_name->size() > 255) {
      return Detail(422, "'index_name' is longer than an index name can be (255 bytes)");
    }
    RFS_CONSOLE_TRY(info.shard_number, OptionalInteger(request, "shard_number", 0, 1 << 20));
    RFS_CONSOLE_TRY(info.document_count,
                    OptionalInteger(request, "document_count", 0, int64_t{1} << 53));
    RFS_CONSOLE_TRY(info.total_size_bytes,
                    OptionalInteger(request, "total_size_bytes", 0, int64_t{1} << 53));
    RFS_CONSOLE_TRY(auto exponent,
                    OptionalInteger(request, "lease_exponent", 0, coordination::kMaxLeaseExponent));
    if (auto parsed_id = coordination::WorkItemId::ParseForJson(*id)) {
      if (!info.index_name) info.index_name = parsed_id->index_name;
      if (!info.shard_number) info.shard_number = parsed_id->shard;
    }
    // The creator, when the client names itself (IWorkCoordinator clients), else the console.
    RFS_CONSOLE_TRY(auto creator, OptionalString(request, "worker_id"));
    if (creator) {
      RFS_CONSOLE_TRY(std::string valid, WorkerId(creator));
      creator = std::move(valid);
    }
    RFS_CONSOLE_TRY(auto coordinator,
                    Coordinator(session, creator ? *creator : std::string(kConsoleWorker)));
    RFS_CONSOLE_TRY(TimePoint now, StoreNow(session));
    info.created_at = now;
    // The record first: an item never exists without what its creator said about it.
    if (auto put = store.PutWorkItemInfo(session, info); !put.ok()) return FromStatus(put);
    RFS_CONSOLE_TRY(bool created,
                    FromStatusOr(coordinator->CreateUnassignedWorkItem(*id, exponent.value_or(0))));
    if (!created) return Detail(409, StrCat("Work item '", *id, "' already exists"));
    RFS_CONSOLE_TRY(json::value item, ItemReply(session, *coordinator, *id));
    return Reply{201, item};
  }

  Reply ListWorkItems(const SessionRecord& session) {
    RFS_CONSOLE_TRY(auto coordinator, Coordinator(session, kConsoleWorker));
    RFS_CONSOLE_TRY(auto items, FromStatusOr(coordinator->ListWorkItems()));
    RFS_CONSOLE_TRY(auto infos, FromStatusOr(store.ListWorkItemInfo(session)));
    RFS_CONSOLE_TRY(TimePoint now, StoreNow(session));
    std::map<std::string, const WorkItemInfo*> by_id;
    for (const auto& info : infos) by_id[info.id] = &info;
    json::array out;
    for (const auto& item : items) {
      auto it = by_id.find(item.id);
      out.push_back(ItemJson(session.name, item, it == by_id.end() ? nullptr : it->second, now));
    }
    return Reply{200, out};
  }

  Result<coordination::Duration> InitialLease(const Target& target) {
    const auto text = target.Param("initial_lease_ms");
    if (!text) return coordination::Duration(options.default_lease);
    int64_t millis = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), millis);
    if (ec != std::errc() || end != text->data() + text->size() || millis < 1 ||
        millis > int64_t{7} * 24 * 3600 * 1000) {
      return Detail(422, "initial_lease_ms must be an integer from 1 to 604800000");
    }
    return coordination::Duration(std::chrono::milliseconds(millis));
  }

  // lease_growth: `doubling` (the default: each grant doubles the next one's lease unless its
  // holder moves or gives it back) or `fixed` (IWorkCoordinator::AcquireFixedLease), for one
  // named item only.
  Result<bool> FixedLease(const Target& target, std::string_view id) {
    if (options.ignore_lease_growth) return false;
    const auto growth = target.Param("lease_growth");
    if (!growth || *growth == "doubling") return false;
    if (*growth != "fixed") return Detail(422, "lease_growth must be doubling or fixed");
    if (id.empty()) return Detail(422, "lease_growth=fixed applies to one named work item");
    return true;
  }

  // Both acquisitions. `id` empty: any available item (the seed's GET .../acquire, 404 when none).
  Reply Acquire(const SessionRecord& session, const Target& target, std::string_view id) {
    RFS_CONSOLE_TRY(std::string worker, WorkerId(target.Param("worker_id")));
    RFS_CONSOLE_TRY(coordination::Duration initial, InitialLease(target));
    RFS_CONSOLE_TRY(const bool fixed, FixedLease(target, id));
    RFS_CONSOLE_TRY(auto coordinator, Coordinator(session, worker));
    RFS_CONSOLE_TRY(coordination::AcquireOutcome outcome,
                    FromStatusOr(id.empty() ? coordinator->AcquireNextWorkItem(initial)
                                 : fixed    ? coordinator->AcquireFixedLease(id, initial)
                                            : coordinator->AcquireWorkItem(id, initial)));
    // The store's time with every answer, read after the acquisition: for the client's clock
    // guard, and for the time left on a lease the worker held already (a grant's own start
    // would make such a lease look new).
    RFS_CONSOLE_TRY(TimePoint now, FromStatusOr(coordinator->StoreNow()));
    if (auto* acquired = std::get_if<coordination::Acquired>(&outcome)) {
      RFS_CONSOLE_TRY(json::value item,
                      ItemReply(session, *coordinator, acquired->lease.work_item_id));
      // The next holder carries on the earlier holders' outcomes.
      RFS_CONSOLE_TRY(auto info,
                      FromStatusOr(store.GetWorkItemInfo(session, acquired->lease.work_item_id)));
      acquired->lease.recorded_progress =
          WithOutcomes(acquired->lease.recorded_progress, info ? &*info : nullptr);
      json::object reply{{"outcome", "acquired"},
                         {"work_item", item},
                         {"lease_duration_seconds", Seconds(acquired->lease.duration)},
                         {"lease", LeaseJson(acquired->lease)},
                         // A console from before lease_growth answered with the grant's start.
                         {"store_time_ms",
                          Millis(options.ignore_lease_growth ? acquired->lease.acquired_at : now)}};
      // Said back, so that a worker can tell this console from one before lease_growth.
      if (fixed) reply["lease_growth"] = "fixed";
      return Reply{200, std::move(reply)};
    }
    if (std::holds_alternative<coordination::AlreadyCompleted>(outcome)) {
      return Reply{200,
                   json::object{{"outcome", "already_completed"}, {"store_time_ms", Millis(now)}}};
    }
    json::object body{{"detail", "No available work items"}, {"store_time_ms", Millis(now)}};
    if (auto* busy = std::get_if<coordination::AllLeasedElsewhere>(&outcome)) {
      body["outcome"] = "all_leased_elsewhere";
      body["earliest_lease_expiry_ms"] = Millis(busy->earliest_expiry);
      body["retry_after_ms"] = Millis(busy->retry_after);
    } else {
      body["outcome"] = "no_available_work";
    }
    return Reply{id.empty() ? 404 : 200, body};
  }

  // The lease a lease-bound call names: its fields when the client sent them (IWorkCoordinator
  // clients), else the item's current grant if the worker holds it (the seed's clients).
  Result<Lease> RequestLease(const WorkItemState& state, const std::string& worker,
                             const json::object& request) {
    Lease lease;
    lease.work_item_id = state.id;
    lease.worker_id = worker;
    RFS_CONSOLE_TRY(auto generation,
                    OptionalInteger(request, "lease_generation", 0, int64_t{1} << 53));
    if (!generation) {
      if (state.completed()) {
        return Detail(409, StrCat("Work item '", state.id, "' is already completed"));
      }
      if (state.lease_holder != worker) {
        return Detail(state.lease_holder.empty() ? 410 : 409,
                      state.lease_holder.empty()
                          ? StrCat("Work item '", state.id, "': the lease has expired")
                          : StrCat("Work item '", state.id, "' is assigned to another worker"));
      }
      generation = state.lease_generation;
    }
    lease.generation = *generation;
    RFS_CONSOLE_TRY(auto exponent,
                    OptionalInteger(request, "lease_exponent", 0, coordination::kMaxLeaseExponent));
    lease.exponent = exponent.value_or(std::max(state.next_lease_exponent - 1, 0));
    RFS_CONSOLE_TRY(auto duration, OptionalInteger(request, "lease_duration_ms", 1,
                                                   int64_t{7} * 24 * 3600 * 1000));
    lease.duration = duration
                         ? coordination::Duration(std::chrono::milliseconds(*duration))
                         : coordination::LeaseDurationFor(options.default_lease, lease.exponent);
    return lease;
  }

  // A refused lease-bound call: 409 when another worker holds the item (or it is complete), 410
  // when the caller's own lease is simply gone.
  Reply LeaseLost(IWorkCoordinator& coordinator, std::string_view id, const std::string& worker,
                  const absl::Status& status) {
    auto state = coordinator.GetWorkItem(id);
    if (state.ok() && *state && (*state)->lease_holder == worker && !(*state)->completed()) {
      return Detail(410,
                    StrCat("Work item '", id, "': the lease has expired (", status.message(), ")"));
    }
    return Detail(409, std::string(status.message()));
  }

  Result<std::optional<ItemProgress>> RequestProgress(const json::object& request) {
    const json::value* v = request.if_contains("progress");
    if (v == nullptr || v->is_null()) return std::optional<ItemProgress>();
    if (!v->is_object()) return Detail(422, "'progress' must be an object");
    const json::object& p = v->as_object();
    constexpr int64_t kMax = int64_t{1} << 62;
    RFS_CONSOLE_TRY(auto docs, OptionalInteger(p, "documents_processed", 0, kMax));
    RFS_CONSOLE_TRY(auto bytes, OptionalInteger(p, "bytes_processed", 0, kMax));
    RFS_CONSOLE_TRY(auto cursor, OptionalInteger(p, "next_cursor", 0, kMax));
    ItemProgress progress{static_cast<uint64_t>(cursor.value_or(0)),
                          static_cast<uint64_t>(docs.value_or(0)),
                          static_cast<uint64_t>(bytes.value_or(0))};
    if (const json::value* o = p.if_contains("outcomes"); o != nullptr && !o->is_null()) {
      if (!o->is_object()) return Detail(422, "'progress.outcomes' must be an object");
      for (const auto& [name, field] : coordination::kItemOutcomeFields) {
        RFS_CONSOLE_TRY(auto count, OptionalInteger(o->as_object(), name, 0, kMax));
        progress.outcomes.*field = static_cast<uint64_t>(count.value_or(0));
      }
    }
    return std::optional<ItemProgress>(progress);
  }

  // Keeps what a holder reported of its documents' outcomes (the backends do not).
  absl::Status StoreOutcomes(const SessionRecord& session, std::string_view id,
                             const std::optional<ItemProgress>& progress) {
    if (!progress || !progress->outcomes.any()) return absl::OkStatus();
    return store.SetItemOutcomes(session, id, progress->outcomes);
  }

  Result<std::optional<int64_t>> RequestFailed(const json::object& request) {
    const json::value* v = request.if_contains("progress");
    if (v == nullptr || !v->is_object()) return std::optional<int64_t>();
    return OptionalInteger(v->as_object(), "documents_failed", 0, int64_t{1} << 62);
  }

  // The back-pressure a worker reports with its lease calls, kept for the status.
  Result<bool> RecordBackPressure(const SessionRecord& session, const std::string& worker,
                                  const json::object& request, TimePoint now) {
    const json::value* v = request.if_contains("back_pressure");
    if (v == nullptr || v->is_null()) return false;
    if (!v->is_object()) return Detail(422, "'back_pressure' must be an object");
    constexpr int64_t kMax = int64_t{1} << 62;
    RFS_CONSOLE_TRY(auto rejected, OptionalInteger(v->as_object(), "rejected_429", 0, kMax));
    RFS_CONSOLE_TRY(auto retries, OptionalInteger(v->as_object(), "retries", 0, kMax));
    worker_reports.Add(session.name, {worker, static_cast<uint64_t>(rejected.value_or(0)),
                                      static_cast<uint64_t>(retries.value_or(0)), now});
    return true;
  }

  // A lease call's body: an object with a worker_id or (the seed's complete) a bare worker id.
  static Result<json::object> LeaseRequestBody(const std::string& body) {
    RFS_CONSOLE_TRY(json::value parsed, ParseBody(body, true));
    json::object request;
    if (parsed.is_string()) {
      request["worker_id"] = parsed.as_string();
    } else if (parsed.is_object()) {
      request = parsed.as_object();
    } else {
      return Detail(422, "the body must be an object with a worker_id (or, to complete, a string)");
    }
    return request;
  }

  // What a lease call works on once the caller's lease is checked.
  struct LeaseContext {
    const SessionRecord& session;
    std::string_view id;
    const std::string& worker;
    const json::object& request;
    IWorkCoordinator& coordinator;
    const Lease& lease;
  };

  // PUT .../progress: progress between renewals, recorded, the lease left as it is.
  Reply RecordProgressCall(const LeaseContext& c) {
    RFS_CONSOLE_TRY(auto progress, RequestProgress(c.request));
    if (!progress) return Detail(422, "'progress' is required");
    absl::Status recorded = c.coordinator.RecordProgress(c.lease, *progress);
    if (!recorded.ok()) {
      if (coordination::IsLeaseLost(recorded)) {
        return LeaseLost(c.coordinator, c.id, c.worker, recorded);
      }
      return FromStatus(recorded);
    }
    RFS_CONSOLE_TRY(json::value item, ItemReply(c.session, c.coordinator, c.id));
    return Reply{200, item};
  }

  // PUT .../lease: the renewal, with the progress, failures and outcomes it carries.
  Reply RenewLeaseCall(const LeaseContext& c, const WorkItemState& state) {
    RFS_CONSOLE_TRY(auto progress, RequestProgress(c.request));
    RFS_CONSOLE_TRY(auto failed, RequestFailed(c.request));
    // The seed's renewal may carry no progress: keep what is recorded.
    ItemProgress effective = progress ? *progress : state.progress.value_or(ItemProgress{});
    if (progress && !c.request.at("progress").as_object().contains("next_cursor") &&
        state.progress) {
      effective.next_cursor = state.progress->next_cursor;
    }
    auto renewed = c.coordinator.RenewLease(c.lease, effective);
    if (!renewed.ok()) {
      if (coordination::IsLeaseLost(renewed.status())) {
        return LeaseLost(c.coordinator, c.id, c.worker, renewed.status());
      }
      return FromStatus(renewed.status());
    }
    if (failed && !(progress && progress->outcomes.any())) {
      if (auto set = store.SetDocumentsFailed(c.session, c.id, *failed); !set.ok()) {
        return FromStatus(set);
      }
    }
    if (auto set = StoreOutcomes(c.session, c.id, progress); !set.ok()) return FromStatus(set);
    RFS_CONSOLE_TRY(json::value item, ItemReply(c.session, c.coordinator, c.id));
    return Reply{200, json::object{{"work_item", item},
                                   {"lease_duration_seconds", Seconds(renewed->duration)},
                                   {"lease", LeaseJson(*renewed)}}};
  }

  // POST .../successors: the successors the request names created and the item completed; with
  // stop_before_step, stopped where the client asked (`stopped_before`).
  Result<absl::Status> CreateSuccessors(const LeaseContext& c, std::optional<int>& stopped_before) {
    const json::value* ids = c.request.if_contains("successor_ids");
    if (ids == nullptr || !ids->is_array()) {
      return Detail(422, "'successor_ids' must be an array of work item ids");
    }
    // A worker hands on one successor (at most a few); a long list is an attack on the store.
    if (ids->as_array().size() > 64) {
      return Detail(422, "'successor_ids' holds at most 64 ids");
    }
    std::vector<std::string> successors;
    for (const auto& v : ids->as_array()) {
      if (!v.is_string()) return Detail(422, "'successor_ids' must hold strings");
      successors.emplace_back(v.as_string());
    }
    RFS_CONSOLE_TRY(auto exponent, OptionalInteger(c.request, "successor_lease_exponent", 0,
                                                   coordination::kMaxLeaseExponent));
    RFS_CONSOLE_TRY(auto stop, OptionalInteger(c.request, "stop_before_step", 1, 2));
    std::optional<ScopedSuccessorStop> scoped;
    if (stop) scoped.emplace(static_cast<coordination::SuccessorStep>(*stop));
    absl::Status status =
        c.coordinator.CreateSuccessorsAndComplete(c.lease, successors, exponent.value_or(0));
    if (stop && absl::IsAborted(status) &&
        absl::StrContains(status.message(), "as the client asked")) {
      status = absl::OkStatus();
      stopped_before = static_cast<int>(*stop);
    }
    return status;
  }

  // PUT .../complete, /release and POST .../successors: the item handed on.
  Reply EndLeaseCall(const LeaseContext& c, std::string_view action) {
    absl::Status status;
    std::optional<int> stopped_before;
    if (action == "complete") {
      status = c.coordinator.CompleteWorkItem(c.lease);
    } else if (action == "release") {
      RFS_CONSOLE_TRY(auto progress, RequestProgress(c.request));
      status = c.coordinator.ReleaseWorkItem(c.lease, progress);
      if (status.ok()) status = StoreOutcomes(c.session, c.id, progress);
    } else {  // successors
      RFS_CONSOLE_TRY(status, CreateSuccessors(c, stopped_before));
    }
    if (!status.ok()) {
      if (coordination::IsLeaseLost(status)) {
        return LeaseLost(c.coordinator, c.id, c.worker, status);
      }
      return FromStatus(status);
    }
    RFS_CONSOLE_TRY(json::value item, ItemReply(c.session, c.coordinator, c.id));
    if (action == "successors") {
      json::object out{{"work_item", item}};
      if (stopped_before) out["stopped_before_step"] = *stopped_before;
      return Reply{200, out};
    }
    return Reply{200, item};
  }

  // PUT .../{id}/lease, /progress, /complete, /release and POST .../{id}/successors.
  Reply LeaseCall(const SessionRecord& session, std::string_view id, std::string_view action,
                  const std::string& body) {
    RFS_CONSOLE_TRY(json::object request, LeaseRequestBody(body));
    RFS_CONSOLE_TRY(auto worker_field, OptionalString(request, "worker_id"));
    RFS_CONSOLE_TRY(std::string worker, WorkerId(worker_field));
    RFS_CONSOLE_TRY(auto coordinator, Coordinator(session, worker));
    RFS_CONSOLE_TRY(auto state, FromStatusOr(coordinator->GetWorkItem(id)));
    if (!state) return Detail(404, StrCat("Work item '", id, "' not found"));
    RFS_CONSOLE_TRY(Lease lease, RequestLease(*state, worker, request));
    if (request.contains("back_pressure")) {
      RFS_CONSOLE_TRY(TimePoint now, FromStatusOr(coordinator->StoreNow()));
      RFS_CONSOLE_TRY(bool recorded, RecordBackPressure(session, worker, request, now));
      (void)recorded;
    }
    const LeaseContext context{session, id, worker, request, *coordinator, lease};
    if (action == "progress") return RecordProgressCall(context);
    if (action == "lease") return RenewLeaseCall(context, *state);
    return EndLeaseCall(context, action);
  }

  // RfsWorker --verify-all: the newest round, per index: its items done so far while it runs,
  // then what it found (the verify_index__ records, rfs/coordination/verify_records.hpp).
  Result<json::object> Verification(const SessionRecord& session,
                                    const std::vector<WorkItemState>& records) {
    int round = 0;
    bool reported = false;
    for (const auto& record : records) {
      if (!record.id.starts_with(coordination::kVerifyRoundPrefix)) continue;
      int begun = 0;
      const std::string_view digits =
          std::string_view(record.id).substr(coordination::kVerifyRoundPrefix.size());
      if (std::from_chars(digits.data(), digits.data() + digits.size(), begun).ec == std::errc() &&
          begun > round) {
        round = begun;
      }
    }
    if (round == 0) return json::object{};
    const std::string done = StrCat(coordination::kVerifyRoundDonePrefix, round);
    for (const auto& record : records) {
      if (record.id == done && record.completed()) reported = true;
    }
    std::map<std::string, json::object> by_index;
    for (const auto& record : records) {
      auto row = coordination::VerifyIndexRow::FromRecord(record.id, record.creator_id);
      if (!row || row->round != round) continue;
      json::object entry{
          {"index", row->index},
          {"state", row->missing + row->different + row->not_comparable + row->extra == 0
                        ? "verified"
                        : "differs"},
          {"expected", row->expected},
          {"equal", row->equal},
          {"missing", row->missing},
          {"different", row->different},
          {"not_comparable", row->not_comparable},
          {"already_newer", row->already_newer},
          {"extra", row->extra},
          {"target_count", row->target_count}};
      if (!row->note.empty()) entry["note"] = row->note;
      by_index[row->index] = std::move(entry);
    }
    // While the round runs: its items per index, done and in all.
    if (!reported) {
      SessionRecord items = session;
      items.work_table += StrCat(kVerifyTableSuffix, round);
      RFS_CONSOLE_TRY(auto reader, Coordinator(items, kConsoleWorker));
      RFS_CONSOLE_TRY(auto listed, FromStatusOr(reader->ListWorkItems()));
      std::map<std::string, std::pair<uint64_t, uint64_t>> counts;  // done, all
      for (const auto& item : listed) {
        auto id = coordination::WorkItemId::ParseForJson(item.id);
        if (!id) continue;
        auto& [completed, all] = counts[id->index_name];
        ++all;
        if (item.completed()) ++completed;
      }
      for (const auto& [index, count] : counts) {
        if (by_index.contains(index)) continue;
        by_index[index] = json::object{{"index", index},
                                       {"state", "verifying"},
                                       {"items_completed", count.first},
                                       {"items", count.second}};
      }
    }
    json::array indices;
    for (auto& [index, entry] : by_index) indices.push_back(std::move(entry));
    return json::object{{"round", round},
                        {"state", reported ? "reported" : "running"},
                        {"indices", std::move(indices)}};
  }

  // RfsWorker's phase records as the status shows them (the target tuning's and verification's
  // records apart), the FAILED one with its reason.
  static json::array WorkflowRows(const std::vector<coordination::WorkItemState>& phases,
                                  TimePoint now) {
    json::array workflow;
    // After N resets (--reset-failed: records failed_reset_1..N) the FAILED record of the
    // migration is failed.N; earlier ones were reset.
    int resets = 0;
    for (const auto& record : phases) {
      if (record.id.starts_with("failed_reset_")) ++resets;
    }
    const std::string current_failed =
        resets == 0 ? std::string("failed") : StrCat("failed.", resets);
    for (const auto& record : phases) {
      // The target tuning's records are shown as tuned_indices below.
      if (record.id.starts_with(coordination::kVerifyIndexPrefix) ||
          record.id.starts_with(coordination::kCreatedEmptyPrefix) ||
          record.id.starts_with(coordination::kTunedPrefix) ||
          record.id.starts_with(coordination::kTunedOriginalPrefix) ||
          record.id.starts_with(coordination::kRestoredPrefix) ||
          record.id.starts_with(coordination::kTuningLockPrefix)) {
        continue;
      }
      const std::string state = ItemStatus(record, now);
      json::object row{{"record", record.id},
                       {"status", state == "completed"  ? "COMPLETED"
                                  : state == "assigned" ? "IN_PROGRESS"
                                                        : "NOT_STARTED"},
                       {"attempts", record.lease_generation}};
      if (state == "assigned") {
        row["worker_id"] = record.lease_holder;
        row["lease_expiry"] = FormatTime(record.lease_expires_at);
      }
      // The FAILED record carries its reason as its creator (see rfs_worker.cpp).
      if (record.id == current_failed) {
        row["status"] = "FAILED";
        row["reason"] = record.creator_id;
      } else if (record.id == "failed" || record.id.starts_with("failed.")) {
        row["status"] = "RESET";
        row["reason"] = record.creator_id;
      }
      workflow.push_back(std::move(row));
    }
    return workflow;
  }

  // Target tuning (RfsWorker --tune-target): indices still at 0 replicas and no refresh.
  static json::array TunedIndices(const std::vector<coordination::WorkItemState>& phases) {
    std::set<std::string> restored;
    for (const auto& record : phases) {
      if (!record.completed()) continue;
      if (auto index = coordination::TuningRecordIndex(coordination::kRestoredPrefix, record.id)) {
        restored.insert(*index);
      }
    }
    json::array tuned;
    for (const auto& record : phases) {
      auto index = coordination::TuningRecordIndex(coordination::kTunedPrefix, record.id);
      if (!record.completed() || !index || restored.contains(*index)) continue;
      tuned.push_back(json::object{{"index", *index}, {"state", "tuned, not yet restored"}});
    }
    return tuned;
  }

  Result<json::object> Status(const SessionRecord& session) {
    RFS_CONSOLE_TRY(auto coordinator, Coordinator(session, kConsoleWorker));
    RFS_CONSOLE_TRY(auto items, FromStatusOr(coordinator->ListWorkItems()));
    RFS_CONSOLE_TRY(auto infos, FromStatusOr(store.ListWorkItemInfo(session)));
    RFS_CONSOLE_TRY(TimePoint now, FromStatusOr(coordinator->StoreNow()));
    json::object status = ComputeStatus(session, items, infos, history.Get(session.name), now);
    AddBackPressure(status, worker_reports.Get(session.name), now);
    // RfsWorker's phase records, when workers keep them in this session.
    json::array workflow;
    if (!session.work_table.ends_with(kWorkflowTableSuffix)) {
      SessionRecord records = session;
      records.work_table += kWorkflowTableSuffix;
      RFS_CONSOLE_TRY(auto reader, Coordinator(records, kConsoleWorker));
      RFS_CONSOLE_TRY(auto phases, FromStatusOr(reader->ListWorkItems()));
      workflow = WorkflowRows(phases, now);
      json::array tuned = TunedIndices(phases);
      if (!tuned.empty()) status["tuned_indices"] = std::move(tuned);
      RFS_CONSOLE_TRY(json::object verification, Verification(session, phases));
      if (!verification.empty()) status["verification"] = std::move(verification);
    }
    status["workflow"] = std::move(workflow);
    ProgressSample sample{now, status.at("total_documents_processed").to_number<uint64_t>(),
                          status.at("source_bytes_sent").to_number<uint64_t>()};
    for (const json::value& row : status.at("indices").as_array()) {
      const json::object& index = row.as_object();
      sample.indices[std::string(index.at("index_name").as_string())] = {
          index.at("documents").at("processed").to_number<uint64_t>(),
          index.at("bytes").at("source_bytes_sent").to_number<uint64_t>()};
    }
    history.Add(session.name, sample);
    RecordSessionGauges(session, status);
    return status;
  }

  Reply Route(const net::HttpRequest& request) {
    const Target target = ParseTarget(request.target);
    const auto& s = target.segments;
    const std::string& method = request.method;
    const auto token = BearerToken(request);
    // The methods of each route are the OpenAPI document's, no more: any other gets 405 with
    // the route's methods in Allow (RFC 9110 15.5.6).
    const auto not_allowed = [&](std::string_view route) -> std::optional<Reply> {
      const auto methods = internal::DocumentedMethods(route);
      if (!methods) return std::nullopt;
      if (std::find(methods->begin(), methods->end(), method) != methods->end()) {
        return std::nullopt;
      }
      return MethodNotAllowed(*methods, route);
    };
    if (s.empty() || (s.size() == 1 && s[0] == "index.html")) {
      if (method != "GET") return MethodNotAllowed({"GET"}, "the page");
      return Reply{200, nullptr};  // the page, filled in by Handle
    }
    if (s[0] == "health" && s.size() == 1) {
      if (auto refused = not_allowed("/health")) return *refused;
      return Reply{200, json::object{{"status", "ok"}}};
    }
    if (s[0] == "openapi.json" && s.size() == 1) {
      if (auto refused = not_allowed("/openapi.json")) return *refused;
      static const json::value kOpenApi = json::parse(internal::ConsoleOpenApi());
      return Reply{200, kOpenApi};
    }
    if (s[0] != "sessions") return Detail(404, StrCat("no route ", request.target));
    if (s.size() == 1) {
      if (auto refused = not_allowed("/sessions")) return *refused;
      if (method == "POST") return CreateSession(token, request.body);
      return ListSessions(token);
    }
    if (s.size() == 2) {
      if (auto refused = not_allowed("/sessions/{name}")) return *refused;
      if (method == "DELETE") return DeleteSession(token, s[1]);
      return GetSession(token, s[1]);
    }
    const std::string_view route = SpaceRoute(s);
    if (route.empty()) return Detail(404, StrCat("no route ", request.target));
    // The method before the token: a wrong method is wrong whoever asks.
    if (auto refused = not_allowed(route)) return *refused;
    RFS_CONSOLE_TRY(SessionRecord session, Authorize(token, s[1]));
    return SpaceCall(std::move(session), request, target);
  }

  // The OpenAPI path template of /sessions/{name}/{space}/... (`s`: its segments, at least three),
  // "" when it names none.
  static std::string_view SpaceRoute(const std::vector<std::string>& s) {
    if ((s[2] != "backfill" && s[2] != "workflow" &&
         !coordination::VerifyConsoleSpaceRound(s[2])) ||
        s.size() < 4) {
      return "";
    }
    if (s.size() == 4 && s[3] == "time") return "/sessions/{name}/{space}/time";
    if (s[3] != "work-items") return "";
    if (s.size() == 4) return "/sessions/{name}/{space}/work-items";
    if (s.size() == 5 && s[4] == "acquire") return "/sessions/{name}/{space}/work-items/acquire";
    if (s.size() == 5 && s[4] == "status") return "/sessions/{name}/{space}/work-items/status";
    if (s.size() == 5) return "/sessions/{name}/{space}/work-items/{id}";
    if (s.size() == 6) {
      for (std::string_view action :
           {"acquire", "lease", "progress", "complete", "release", "successors"}) {
        if (s[5] == action) return kItemActionRoutes.at(action);
      }
    }
    return "";
  }

  // A call on a session's work items or phase records (SpaceRoute), the caller authorized.
  Reply SpaceCall(SessionRecord session, const net::HttpRequest& request, const Target& target) {
    const auto& s = target.segments;
    const std::string& method = request.method;
    // RfsWorker's phase records live beside the work items, in a table of their own.
    if (s[2] == "workflow") session.work_table += kWorkflowTableSuffix;
    // A verification round's items (RfsWorker --verify-all): a table per round.
    if (auto round = coordination::VerifyConsoleSpaceRound(s[2])) {
      session.work_table += StrCat(kVerifyTableSuffix, *round);
    }
    if (s[3] == "time") {
      RFS_CONSOLE_TRY(TimePoint now, StoreNow(session));
      return Reply{200, json::object{{"store_time_ms", Millis(now)}}};
    }
    if (s.size() == 4) {
      if (method == "POST") return CreateWorkItem(session, request.body);
      return ListWorkItems(session);
    }
    if (s.size() == 5 && s[4] == "acquire") return Acquire(session, target, "");
    if (s.size() == 5 && s[4] == "status") {
      RFS_CONSOLE_TRY(json::object status, Status(session));
      return Reply{200, status};
    }
    const std::string& id = s[4];
    if (s.size() == 5) {
      RFS_CONSOLE_TRY(auto coordinator, Coordinator(session, kConsoleWorker));
      RFS_CONSOLE_TRY(json::value item, ItemReply(session, *coordinator, id));
      return Reply{200, item};
    }
    if (s[5] == "acquire") return Acquire(session, target, id);
    return LeaseCall(session, id, s[5], request.body);
  }
};

ConsoleService::ConsoleService(ConsoleStore& store, ConsoleServiceOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {}
ConsoleService::~ConsoleService() = default;

net::HttpResponse ConsoleService::Handle(const net::HttpRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  Reply reply = impl_->Route(request);
  impl_->Count(request, reply, std::chrono::steady_clock::now() - started);
  net::HttpResponse response;
  response.status = reply.status;
  response.headers.emplace_back("Cache-Control", "no-store");
  if (reply.status == 200 && reply.body.is_null()) {
    response.headers.emplace_back("Content-Type", "text/html; charset=utf-8");
    response.headers.emplace_back("Content-Security-Policy",
                                  "default-src 'self'; script-src 'unsafe-inline'; style-src "
                                  "'unsafe-inline'; connect-src 'self'; img-src 'self' data:");
    response.body = std::string(internal::ConsolePage());
    return response;
  }
  response.headers.emplace_back("Content-Type", "application/json");
  if (reply.status == 401) response.headers.emplace_back("WWW-Authenticate", "Bearer");
  if (!reply.allow.empty()) response.headers.emplace_back("Allow", reply.allow);
  response.body = core::JsonText(reply.body);
  if (impl_->options.on_departure_from_openapi) {
    const std::string departure = internal::CheckAnswerAgainstOpenApi(
        request.method, request.target, response.status, response.body);
    if (!departure.empty()) impl_->options.on_departure_from_openapi(departure);
  }
  return response;
}

net::HeadDecision ConsoleService::Admit(const net::HttpRequest& head) {
  const std::optional<std::string> length = net::FindHeader(head.headers, "Content-Length");
  const bool chunked = net::FindHeader(head.headers, "Transfer-Encoding").has_value();
  uint64_t declared = 0;
  if (length && !absl::SimpleAtoi(*length, &declared)) declared = UINT64_MAX;
  const bool has_body = chunked || declared > 0;
  const auto token = BearerToken(head);
  // Whether the token opens the route: the admin token, or the token of the session in the
  // path. Checked for every request with a token (a session lookup), so that the server knows
  // which connections are its clients'.
  bool known = impl_->IsAdmin(token);
  absl::Status store_error;
  if (!known && token) {
    const std::vector<std::string>& s = ParseTarget(head.target).segments;
    if (s.size() >= 2 && s[0] == "sessions") {
      auto session = impl_->store.GetSession(s[1]);
      if (!session.ok()) store_error = session.status();
      known =
          session.ok() && session->has_value() && TokenMatches(*token, (*session)->token_sha256);
    }
  }
  if (!has_body || known) return net::HeadDecision{std::nullopt, kMaxRequestBodyBytes, known};
  // No body is read from a peer the console does not know: no route takes one without a token.
  Reply reply = !store_error.ok() ? FromStatus(store_error)
                : token           ? Detail(403,
                                           "this token does not open this route; a request body "
                                                     "needs one that does")
                                  : Detail(401,
                                           "a request body needs an Authorization: Bearer <token> "
                                                     "header that opens this route");
  impl_->Count(head, reply, std::chrono::steady_clock::duration::zero());
  net::HttpResponse refused;
  refused.status = reply.status;
  refused.headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-store"}};
  if (reply.status == 401) refused.headers.emplace_back("WWW-Authenticate", "Bearer");
  refused.body = core::JsonText(reply.body);
  return net::HeadDecision{std::move(refused), 0, false};
}

void ConsoleService::SampleProgress() {
  auto sessions = impl_->store.ListSessions();
  if (!sessions.ok()) return;
  for (const auto& session : *sessions) (void)impl_->Status(session);
}

}  // namespace rfs::console
