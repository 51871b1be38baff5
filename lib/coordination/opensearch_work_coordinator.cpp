#include "rfs/coordination/opensearch_work_coordinator.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "coordination/coordinator_base_internal.hpp"
#include "coordination/store_clock_internal.hpp"

namespace rfs::coordination {
namespace {

namespace json = boost::json;
using core::StrCat;
using internal::FloorMillis;
using internal::FromMillis;
using internal::StoreTime;

// Document fields. Times are epoch milliseconds on the store's clock (the Java tool's index uses
// seconds and other names, so the two tools never misread each other's items).
constexpr std::string_view kExpiration = "leaseExpirationMillis";
constexpr std::string_view kHolder = "leaseHolderId";
constexpr std::string_view kGeneration = "leaseGeneration";
constexpr std::string_view kExponent = "nextAcquisitionLeaseExponent";
constexpr std::string_view kCompletedAt = "completedAtMillis";
constexpr std::string_view kSuccessors = "successorItems";
constexpr std::string_view kSuccessorExponent = "successorLeaseExponent";
constexpr std::string_view kCreator = "creatorId";
constexpr std::string_view kProbeTime = "storeTimeMillis";

// The document the clock probe writes; it has no expiration field, so searches and counts of
// work items never see it.
constexpr std::string_view kClockProbeId = "rfs_store_clock_probe";
// Painless allows System.currentTimeMillis() (the Java tool's lease scripts rely on it too).
constexpr std::string_view kClockProbeScript =
    "ctx._source.storeTimeMillis = System.currentTimeMillis()";

// One shard keeps every item's sequence numbers on one primary; auto_expand_replicas gives a
// replica when the cluster has a second data node and stays green on a single node. dynamic:false
// keeps unknown fields out of the mapping rather than guessing their types.
constexpr std::string_view kIndexBody = R"json({
  "settings": {"index": {"number_of_shards": 1, "auto_expand_replicas": "0-1"}},
  "mappings": {
    "dynamic": false,
    "properties": {
      "leaseExpirationMillis": {"type": "long"},
      "completedAtMillis": {"type": "long"},
      "leaseHolderId": {"type": "keyword"},
      "leaseGeneration": {"type": "long"},
      "nextAcquisitionLeaseExponent": {"type": "integer"},
      "successorItems": {"type": "keyword"},
      "successorLeaseExponent": {"type": "integer"},
      "creatorId": {"type": "keyword"},
      "storeTimeMillis": {"type": "long"}
    }
  }
})json";

constexpr int kMaxMutateAttempts = 32;

json::string_view J(std::string_view s) { return {s.data(), s.size()}; }
std::string_view S(json::string_view s) { return {s.data(), s.size()}; }

std::optional<int64_t> GetInt(const json::object& object, std::string_view key) {
  const json::value* v = object.if_contains(J(key));
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v->get_uint64());
  }
  if (v->is_double()) return static_cast<int64_t>(v->get_double());
  return std::nullopt;
}

std::string GetString(const json::object& object, std::string_view key) {
  const json::value* v = object.if_contains(J(key));
  return v != nullptr && v->is_string() ? std::string(S(v->get_string())) : std::string();
}

const json::object* GetObject(const json::object& object, std::string_view key) {
  const json::value* v = object.if_contains(J(key));
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

std::string PercentEncode(std::string_view segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : segment) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

absl::StatusOr<json::object> ParseObject(std::string_view body, std::string_view what) {
  boost::system::error_code ec;
  json::value v = json::parse(J(body), ec);
  if (ec || !v.is_object()) {
    return absl::InternalError(
        StrCat(what, ": response is not a JSON object: ", body.substr(0, 200)));
  }
  return std::move(v.get_object());
}

// The error type OpenSearch reports ("version_conflict_engine_exception", ...), if any.
std::string ErrorType(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(J(body), ec);
  if (ec || !v.is_object()) return "";
  const json::object* error = GetObject(v.get_object(), "error");
  return error != nullptr ? GetString(*error, "type") : "";
}

// An unexpected response, as a Status whose code follows the error model: overload is
// ResourceExhausted, timeouts DeadlineExceeded, other server trouble Unavailable (all
// retryable); a rejected request is Internal (rfs and the cluster disagree on the API).
absl::Status ResponseError(const core::HttpResponse& response, std::string_view what) {
  std::string detail(response.body.substr(0, 300));
  boost::system::error_code ec;
  json::value v = json::parse(J(response.body), ec);
  if (!ec && v.is_object()) {
    if (const json::object* error = GetObject(v.get_object(), "error")) {
      detail = StrCat(GetString(*error, "type"), ": ", GetString(*error, "reason"));
    }
  }
  const std::string message = StrCat(what, ": HTTP ", response.status, " ", detail);
  const int code = response.status;
  if (code == 429) return absl::ResourceExhaustedError(message);
  if (code == 408 || code == 504) return absl::DeadlineExceededError(message);
  if (code >= 500 && code != 501) return absl::UnavailableError(message);
  if (code == 401 || code == 403) return absl::PermissionDeniedError(message);
  if (code == 404) return absl::NotFoundError(message);
  return absl::InternalError(message);
}

json::object ToSource(const WorkItemState& state) {
  json::object source;
  source[J(kExpiration)] = FloorMillis(state.lease_expires_at);
  source[J(kHolder)] = J(state.lease_holder);
  source[J(kGeneration)] = state.lease_generation;
  source[J(kExponent)] = state.next_lease_exponent;
  if (state.completed_at) source[J(kCompletedAt)] = FloorMillis(*state.completed_at);
  if (!state.successor_ids.empty()) {
    json::array successors;
    for (const auto& id : state.successor_ids) successors.emplace_back(J(id));
    source[J(kSuccessors)] = std::move(successors);
  }
  source[J(kSuccessorExponent)] = state.successor_lease_exponent;
  source[J(kCreator)] = J(state.creator_id);
  return source;
}

absl::StatusOr<WorkItemState> FromSource(std::string_view id, const json::object& source) {
  WorkItemState state;
  state.id = std::string(id);
  const std::optional<int64_t> expiration = GetInt(source, kExpiration);
  if (!expiration) {
    return absl::DataLossError(StrCat("work item '", id, "' has no ", kExpiration));
  }
  state.lease_expires_at = FromMillis(*expiration);
  state.lease_holder = GetString(source, kHolder);
  state.lease_generation = GetInt(source, kGeneration).value_or(0);
  state.next_lease_exponent = static_cast<int>(GetInt(source, kExponent).value_or(0));
  if (auto completed = GetInt(source, kCompletedAt)) state.completed_at = FromMillis(*completed);
  if (const json::value* successors = source.if_contains(J(kSuccessors))) {
    if (!successors->is_array()) {
      return absl::DataLossError(StrCat("work item '", id, "': ", kSuccessors, " not an array"));
    }
    for (const auto& s : successors->get_array()) {
      if (!s.is_string()) {
        return absl::DataLossError(StrCat("work item '", id, "': bad successor id"));
      }
      state.successor_ids.emplace_back(S(s.get_string()));
    }
  }
  state.successor_lease_exponent = static_cast<int>(GetInt(source, kSuccessorExponent).value_or(0));
  state.creator_id = GetString(source, kCreator);
  return state;
}

// Items not yet complete (the clock probe has no expiration, so `exists` leaves it out).
json::object IncompleteQuery() {
  return {{"bool",
           {{"filter", json::array{{{"exists", {{"field", J(kExpiration)}}}}}},
            {"must_not", json::array{{{"exists", {{"field", J(kCompletedAt)}}}}}}}}};
}

// Incomplete items whose lease expired before `threshold_millis`.
json::object AvailableQuery(int64_t threshold_millis) {
  return {{"bool",
           {{"filter", json::array{{{"range", {{J(kExpiration), {{"lt", threshold_millis}}}}}}}},
            {"must_not", json::array{{{"exists", {{"field", J(kCompletedAt)}}}}}}}}};
}

struct Hit {
  std::string id;
  int64_t seq_no = 0;
  int64_t primary_term = 0;
  json::object source;
};

class OpenSearchCoordinator final : public internal::CoordinatorBase {
 public:
  explicit OpenSearchCoordinator(OpenSearchWorkCoordinatorOptions options)
      : CoordinatorBase(options),
        transport_(std::move(options.transport)),
        index_(OpenSearchWorkCoordinator::IndexName(options.session_name)),
        index_path_("/" + PercentEncode(index_)),
        batch_size_(options.search_batch_size),
        max_rounds_(options.max_acquire_rounds),
        estimator_(options.clock_sample_max_age),
        rng_(std::random_device{}() ^ std::hash<std::string>{}(options.worker_id)) {}

  absl::Status Setup() override {
    RFS_ASSIGN_OR_RETURN(core::HttpResponse head, Send("HEAD", index_path_, ""));
    if (head.status == 200) return absl::OkStatus();
    if (head.status != 404) return ResponseError(head, StrCat("HEAD ", index_));
    RFS_ASSIGN_OR_RETURN(core::HttpResponse created, Send("PUT", index_path_, kIndexBody));
    if (created.status == 200) return absl::OkStatus();
    // Another worker created it between our HEAD and PUT.
    if (created.status == 400 && ErrorType(created.body) == "resource_already_exists_exception") {
      return absl::OkStatus();
    }
    return ResponseError(created, StrCat("create index ", index_));
  }

  absl::StatusOr<int64_t> CountIncompleteWorkItems() override {
    // Every write here uses refresh=true; the explicit refresh also covers writes whose
    // responses were lost, so a zero count really means "all done".
    RFS_ASSIGN_OR_RETURN(core::HttpResponse refreshed, Send("POST", index_path_ + "/_refresh", ""));
    if (refreshed.status != 200) return ResponseError(refreshed, StrCat("refresh ", index_));
    json::object body{{"query", IncompleteQuery()}};
    RFS_ASSIGN_OR_RETURN(core::HttpResponse response,
                         Send("POST", index_path_ + "/_count", json::serialize(body)));
    if (response.status != 200) return ResponseError(response, StrCat("count in ", index_));
    RFS_ASSIGN_OR_RETURN(json::object parsed, ParseObject(response.body, "count"));
    std::optional<int64_t> count = GetInt(parsed, "count");
    if (!count) return absl::InternalError(StrCat("count response without count: ", response.body));
    return *count;
  }

  absl::StatusOr<std::optional<WorkItemState>> GetWorkItem(std::string_view id) override {
    RFS_ASSIGN_OR_RETURN(std::optional<Hit> doc, GetDoc(id));
    if (!doc) return std::nullopt;
    RFS_ASSIGN_OR_RETURN(WorkItemState state, FromSource(doc->id, doc->source));
    return state;
  }

 protected:
  absl::StatusOr<StoreTime> ReadStoreTime() override {
    if (auto estimate = estimator_.Estimate(clock().Now())) return *estimate;
    if (!date_header_missing_.load()) {
      // Any response would do; HEAD of the index is the cheapest.
      RFS_RETURN_IF_ERROR(Send("HEAD", index_path_, "").status());
      if (auto estimate = estimator_.Estimate(clock().Now())) return *estimate;
      date_header_missing_.store(true);
    }
    RFS_RETURN_IF_ERROR(ProbeClock());
    if (auto estimate = estimator_.Estimate(clock().Now())) return *estimate;
    return absl::InternalError("the store clock probe gave no usable time");
  }

  absl::StatusOr<bool> InsertItem(const WorkItemState& state) override {
    // op_type=create: never overwrites an existing item (409 instead).
    RFS_ASSIGN_OR_RETURN(core::HttpResponse response,
                         Send("PUT", DocPath("_create", state.id) + "?refresh=true",
                              json::serialize(ToSource(state))));
    if (response.status == 200 || response.status == 201) return true;
    if (response.status == 409) return false;
    return ResponseError(response, StrCat("create work item '", state.id, "'"));
  }

  absl::Status MutateItem(std::string_view id, const internal::ItemMutation& mutation) override {
    for (int attempt = 0; attempt < kMaxMutateAttempts; ++attempt) {
      RFS_ASSIGN_OR_RETURN(std::optional<Hit> doc, GetDoc(id));
      if (!doc) return absl::NotFoundError(StrCat("no work item '", id, "' in ", index_));
      RFS_ASSIGN_OR_RETURN(WorkItemState state, FromSource(doc->id, doc->source));
      RFS_ASSIGN_OR_RETURN(StoreTime now, ReadStoreTime());
      RFS_ASSIGN_OR_RETURN(bool write, mutation(state, now));
      if (!write) return absl::OkStatus();
      RFS_ASSIGN_OR_RETURN(bool written, PutIfUnchanged(state, doc->seq_no, doc->primary_term));
      if (written) return absl::OkStatus();
      // Someone else changed the item since we read it: decide again on its new state.
    }
    return absl::UnavailableError(
        StrCat("work item '", id, "': lost ", kMaxMutateAttempts, " update races in a row"));
  }

  absl::StatusOr<internal::TryOutcome> TryAcquireNext(Duration initial_lease) override {
    RFS_ASSIGN_OR_RETURN(std::optional<internal::Grant> reclaimed,
                         ReclaimUncertainGrants(initial_lease));
    if (reclaimed) return *std::move(reclaimed);
    for (int round = 0; round < max_rounds_; ++round) {
      RFS_ASSIGN_OR_RETURN(StoreTime now, ReadCheckedStoreTime());
      // random_score spreads concurrent workers over different candidates (the Java tool measured
      // a third fewer conflicts with it).
      json::object body{{"size", batch_size_},
                        {"query",
                         {{"function_score",
                           {{"query", AvailableQuery(FloorMillis(now.earliest))},
                            {"random_score", json::object{}},
                            {"boost_mode", "replace"}}}}}};
      RFS_ASSIGN_OR_RETURN(std::vector<Hit> hits, Search(body, "search available work items"));
      if (hits.empty()) {
        internal::TryOutcome none = NoAvailableWork{};
        RFS_ASSIGN_OR_RETURN(bool settled, Summarise(none));
        if (settled) return none;
        continue;  // An item became available meanwhile.
      }
      {
        std::lock_guard lock(rng_mu_);
        std::shuffle(hits.begin(), hits.end(), rng_);
      }
      for (Hit& hit : hits) {
        RFS_ASSIGN_OR_RETURN(WorkItemState state, FromSource(hit.id, hit.source));
        RFS_ASSIGN_OR_RETURN(StoreTime at, ReadCheckedStoreTime());
        if (!IsAvailable(state, at)) continue;
        Lease lease = BeginLease(state, at, initial_lease);
        bool sent = false;
        absl::StatusOr<bool> won = PutIfUnchanged(state, hit.seq_no, hit.primary_term, &sent);
        if (!won.ok()) {
          // The write may have been applied with its response lost: remember the grant so the
          // next acquisition can pick it up instead of leaving the item stranded until expiry.
          if (sent) RememberUncertainGrant(state.id, lease.generation);
          return won.status();
        }
        if (*won) return internal::Grant{std::move(lease), std::move(state)};
      }
      // Every candidate went to a racing worker: back off a little, with jitter, and search again.
      clock().SleepFor(std::chrono::microseconds(Jitter(500 << std::min(round, 6))));
    }
    return absl::UnavailableError(StrCat("no work item acquired from ", index_, " after ",
                                         max_rounds_, " rounds of races with other workers"));
  }

 private:
  int64_t Jitter(int64_t max) {
    std::lock_guard lock(rng_mu_);
    return std::uniform_int_distribution<int64_t>(0, max)(rng_);
  }

  std::string DocPath(std::string_view api, std::string_view id) const {
    return StrCat(index_path_, "/", api, "/", PercentEncode(id));
  }

  // Sends one request; samples the store's clock from its Date header when there is one.
  absl::StatusOr<core::HttpResponse> Send(std::string_view method, std::string target,
                                          std::string_view body) {
    core::HttpRequest request;
    request.method = std::string(method);
    request.target = std::move(target);
    if (!body.empty()) {
      request.body = std::string(body);
      request.headers.emplace_back("Content-Type", "application/json");
    }
    const TimePoint sent = clock().Now();
    absl::StatusOr<core::HttpResponse> response = transport_->Send(request);
    const TimePoint received = clock().Now();
    if (!response.ok()) {
      return core::WithContext(response.status(), StrCat(request.method, " ", request.target,
                                                         " on ", transport_->endpoint()));
    }
    if (auto date = response->Header("Date")) {
      if (auto store = internal::ParseHttpDate(*date)) {
        // Second resolution: the server's clock read somewhere in [date, date + 1 s).
        estimator_.Observe(sent, received, *store, *store + std::chrono::seconds(1));
      }
    }
    return response;
  }

  // Reads the cluster's clock with a scripted update (for clusters that send no Date header).
  absl::Status ProbeClock() {
    json::object body{{"scripted_upsert", true},
                      {"upsert", json::object{}},
                      {"script", {{"lang", "painless"}, {"source", J(kClockProbeScript)}}}};
    const TimePoint sent = clock().Now();
    RFS_ASSIGN_OR_RETURN(
        core::HttpResponse response,
        Send("POST", DocPath("_update", kClockProbeId) + "?retry_on_conflict=5&_source=true",
             json::serialize(body)));
    const TimePoint received = clock().Now();
    if (response.status != 200 && response.status != 201) {
      return ResponseError(response, "read the store's clock (no Date header; Painless probe)");
    }
    RFS_ASSIGN_OR_RETURN(json::object parsed, ParseObject(response.body, "clock probe"));
    const json::object* get = GetObject(parsed, "get");
    const json::object* source = get != nullptr ? GetObject(*get, "_source") : nullptr;
    std::optional<int64_t> millis = source != nullptr ? GetInt(*source, kProbeTime) : std::nullopt;
    if (!millis) {
      return absl::InternalError(StrCat("clock probe response without get._source.", kProbeTime,
                                        ": ", response.body.substr(0, 300)));
    }
    estimator_.Observe(sent, received, FromMillis(*millis),
                       FromMillis(*millis) + std::chrono::milliseconds(1));
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<Hit>> GetDoc(std::string_view id) {
    // GET is real-time: it sees the latest write whether or not a refresh happened since.
    RFS_ASSIGN_OR_RETURN(core::HttpResponse response, Send("GET", DocPath("_doc", id), ""));
    if (response.status == 404 && ErrorType(response.body).empty()) return std::nullopt;
    if (response.status != 200) return ResponseError(response, StrCat("get work item '", id, "'"));
    RFS_ASSIGN_OR_RETURN(json::object parsed, ParseObject(response.body, "get"));
    return ParseHit(parsed, "get");
  }

  absl::StatusOr<Hit> ParseHit(const json::object& object, std::string_view what) {
    Hit hit;
    hit.id = GetString(object, "_id");
    std::optional<int64_t> seq_no = GetInt(object, "_seq_no");
    std::optional<int64_t> term = GetInt(object, "_primary_term");
    const json::object* source = GetObject(object, "_source");
    if (hit.id.empty() || !seq_no || !term || source == nullptr) {
      return absl::InternalError(
          StrCat(what, ": document without _id, _seq_no, _primary_term or _source"));
    }
    hit.seq_no = *seq_no;
    hit.primary_term = *term;
    hit.source = *source;
    return hit;
  }

  // Writes `state` only if the item is still at (seq_no, primary_term): false on a lost race.
  // `*unanswered` is set when the request went out but no response came back (so the write may
  // or may not have happened).
  absl::StatusOr<bool> PutIfUnchanged(const WorkItemState& state, int64_t seq_no,
                                      int64_t primary_term, bool* unanswered = nullptr) {
    absl::StatusOr<core::HttpResponse> sent =
        Send("PUT",
             StrCat(DocPath("_doc", state.id), "?if_seq_no=", seq_no,
                    "&if_primary_term=", primary_term, "&refresh=true"),
             json::serialize(ToSource(state)));
    if (!sent.ok()) {
      if (unanswered != nullptr) *unanswered = true;
      return sent.status();
    }
    const core::HttpResponse& response = *sent;
    if (response.status == 200 || response.status == 201) return true;
    if (response.status == 409) return false;
    return ResponseError(response, StrCat("update work item '", state.id, "'"));
  }

  absl::StatusOr<std::vector<Hit>> Search(const json::object& body, std::string_view what) {
    RFS_ASSIGN_OR_RETURN(
        core::HttpResponse response,
        Send("POST", index_path_ + "/_search?seq_no_primary_term=true", json::serialize(body)));
    if (response.status != 200) return ResponseError(response, what);
    RFS_ASSIGN_OR_RETURN(json::object parsed, ParseObject(response.body, what));
    const json::object* hits = GetObject(parsed, "hits");
    const json::value* list = hits != nullptr ? hits->if_contains("hits") : nullptr;
    if (list == nullptr || !list->is_array()) {
      return absl::InternalError(StrCat(what, ": response without hits.hits"));
    }
    std::vector<Hit> out;
    for (const auto& entry : list->get_array()) {
      if (!entry.is_object()) return absl::InternalError(StrCat(what, ": bad hit"));
      RFS_ASSIGN_OR_RETURN(Hit hit, ParseHit(entry.get_object(), what));
      out.push_back(std::move(hit));
    }
    return out;
  }

  void RememberUncertainGrant(const std::string& id, int64_t generation) {
    std::lock_guard lock(uncertain_mu_);
    uncertain_grants_.emplace_back(id, generation);
  }

  // Grants this worker attempted without learning the outcome: any that did land, and is still
  // live, is handed back as the acquisition's result.
  absl::StatusOr<std::optional<internal::Grant>> ReclaimUncertainGrants(Duration initial_lease) {
    std::vector<std::pair<std::string, int64_t>> pending;
    {
      std::lock_guard lock(uncertain_mu_);
      pending.swap(uncertain_grants_);
    }
    for (size_t i = 0; i < pending.size(); ++i) {
      const auto& [id, generation] = pending[i];
      absl::StatusOr<std::optional<Hit>> doc = GetDoc(id);
      if (!doc.ok()) {
        std::lock_guard lock(uncertain_mu_);
        uncertain_grants_.insert(uncertain_grants_.end(), pending.begin() + i, pending.end());
        return doc.status();
      }
      if (!doc->has_value()) continue;
      RFS_ASSIGN_OR_RETURN(WorkItemState state, FromSource(id, (*doc)->source));
      RFS_ASSIGN_OR_RETURN(StoreTime now, ReadCheckedStoreTime());
      if (state.lease_generation == generation && HoldsLiveLease(state, now)) {
        std::lock_guard lock(uncertain_mu_);
        uncertain_grants_.insert(uncertain_grants_.end(), pending.begin() + i + 1, pending.end());
        return internal::Grant{ResumeLease(state, now, initial_lease), std::move(state)};
      }
    }
    return std::nullopt;
  }

  // With nothing available: sets `out` to NoAvailableWork if nothing is incomplete, else to
  // AllLeasedElsewhere with the earliest expiry, and returns true; false if that expiry has
  // passed meanwhile (search again).
  absl::StatusOr<bool> Summarise(internal::TryOutcome& out) {
    json::object body{{"size", 1},
                      {"track_total_hits", true},
                      {"query", IncompleteQuery()},
                      {"sort", json::array{{{J(kExpiration), {{"order", "asc"}}}}}}};
    RFS_ASSIGN_OR_RETURN(std::vector<Hit> hits, Search(body, "summarise incomplete work items"));
    if (hits.empty()) {
      out = NoAvailableWork{};
      return true;
    }
    RFS_ASSIGN_OR_RETURN(WorkItemState earliest, FromSource(hits[0].id, hits[0].source));
    RFS_ASSIGN_OR_RETURN(StoreTime now, ReadStoreTime());
    if (IsAvailable(earliest, now)) return false;
    out = LeasedUntil(earliest.lease_expires_at, now);
    return true;
  }

  std::shared_ptr<core::IHttpTransport> transport_;
  const std::string index_;
  const std::string index_path_;
  const int batch_size_;
  const int max_rounds_;
  internal::StoreClockEstimator estimator_;
  std::atomic<bool> date_header_missing_{false};
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
  std::mutex uncertain_mu_;
  std::vector<std::pair<std::string, int64_t>> uncertain_grants_;  // Item id, generation.
};

bool IsValidSessionName(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

}  // namespace

std::string OpenSearchWorkCoordinator::IndexName(std::string_view session_name) {
  return session_name.empty() ? std::string(kWorkingStateIndex)
                              : StrCat(kWorkingStateIndex, "_", session_name);
}

absl::StatusOr<std::unique_ptr<IWorkCoordinator>> OpenSearchWorkCoordinator::Open(
    OpenSearchWorkCoordinatorOptions options) {
  RFS_RETURN_IF_ERROR(internal::CoordinatorBase::ValidateOptions(options));
  if (options.transport == nullptr) return absl::InvalidArgumentError("transport is required");
  // OpenSearch index names: lowercase, at most 255 bytes, no separators or wildcards.
  if (!IsValidSessionName(options.session_name) || IndexName(options.session_name).size() > 255) {
    return absl::InvalidArgumentError(
        StrCat("session name '", options.session_name,
               "' must be lowercase letters, digits, '-' or '_' (index names are lowercase)"));
  }
  if (options.search_batch_size < 1 || options.max_acquire_rounds < 1) {
    return absl::InvalidArgumentError("search_batch_size and max_acquire_rounds must be >= 1");
  }
  return std::unique_ptr<IWorkCoordinator>(new OpenSearchCoordinator(std::move(options)));
}

}  // namespace rfs::coordination
