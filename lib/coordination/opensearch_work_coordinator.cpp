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

#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/retrying_transport.hpp"
#include "rfs/opensearch/client.hpp"

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
// Heartbeat progress (absent until a holder records some).
constexpr std::string_view kProgressCursor = "progressNextCursor";
constexpr std::string_view kProgressDocs = "progressDocs";
constexpr std::string_view kProgressBytes = "progressBytes";
constexpr std::string_view kProgressAt = "progressAtMillis";

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
      "progressNextCursor": {"type": "long"},
      "progressDocs": {"type": "long"},
      "progressBytes": {"type": "long"},
      "progressAtMillis": {"type": "long"}
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

// Forwards every request to the store's transport and feeds the `Date` header of each response
// (second resolution: the server's clock read somewhere in [date, date + 1 s)) to the estimator.
class DateSamplingTransport final : public net::IHttpTransport {
 public:
  DateSamplingTransport(std::shared_ptr<net::IHttpTransport> inner, core::IClock& clock,
                        internal::StoreClockEstimator& estimator)
      : inner_(std::move(inner)), clock_(clock), estimator_(estimator) {}

  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override {
    const TimePoint sent = clock_.Now();
    absl::StatusOr<net::HttpResponse> response = inner_->Send(request);
    const TimePoint received = clock_.Now();
    if (response.ok()) {
      if (auto date = response->Header("Date")) {
        if (auto store = internal::ParseHttpDate(*date)) {
          estimator_.Observe(sent, received, *store, *store + std::chrono::seconds(1));
        }
      }
    }
    return response;
  }
  std::string endpoint() const override { return inner_->endpoint(); }

 private:
  std::shared_ptr<net::IHttpTransport> inner_;
  core::IClock& clock_;
  internal::StoreClockEstimator& estimator_;
};

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
  if (state.progress) {
    source[J(kProgressCursor)] = state.progress->next_cursor;
    source[J(kProgressDocs)] = state.progress->docs;
    source[J(kProgressBytes)] = state.progress->bytes;
    source[J(kProgressAt)] = FloorMillis(state.progress_at);
  }
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
  if (auto cursor = GetInt(source, kProgressCursor)) {
    if (*cursor < 0) return absl::DataLossError(StrCat("work item '", id, "': negative cursor"));
    state.progress = ItemProgress{
        static_cast<uint64_t>(*cursor),
        static_cast<uint64_t>(std::max<int64_t>(0, GetInt(source, kProgressDocs).value_or(0))),
        static_cast<uint64_t>(std::max<int64_t>(0, GetInt(source, kProgressBytes).value_or(0)))};
    state.progress_at = FromMillis(GetInt(source, kProgressAt).value_or(0));
  }
  return state;
}

// Items not yet complete (`exists` leaves out any document that is not a work item).
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
        index_(OpenSearchWorkCoordinator::IndexName(options.session_name)),
        batch_size_(options.search_batch_size),
        max_rounds_(options.max_acquire_rounds),
        estimator_(options.clock_sample_max_age),
        sampler_(
            std::make_shared<net::RetryingHttpTransport>(
                std::move(options.transport), clock(),
                net::TransportRetryPolicy{.max_attempts = std::max(1, options.request_attempts)}),
            clock(), estimator_),
        client_(sampler_),
        rng_(std::random_device{}() ^ std::hash<std::string>{}(options.worker_id)) {}

  absl::Status Setup() override {
    RFS_ASSIGN_OR_RETURN(bool exists, client_.IndexExists(index_));
    if (exists) return absl::OkStatus();
    // CreateIndex is false when another worker created the index between our HEAD and PUT.
    return client_.CreateIndex(index_, json::parse(J(kIndexBody)).as_object()).status();
  }

  absl::StatusOr<int64_t> CountIncompleteWorkItems() override {
    // Every write here uses refresh=true; the explicit refresh also covers writes whose
    // responses were lost, so a zero count really means "all done".
    RFS_RETURN_IF_ERROR(client_.Refresh(index_));
    RFS_ASSIGN_OR_RETURN(uint64_t count, client_.Count(index_, IncompleteQuery()));
    return static_cast<int64_t>(count);
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
      RFS_RETURN_IF_ERROR(client_.IndexExists(index_).status());
      if (auto estimate = estimator_.Estimate(clock().Now())) return *estimate;
      date_header_missing_.store(true);
    }
    RFS_RETURN_IF_ERROR(ProbeClock());
    if (auto estimate = estimator_.Estimate(clock().Now())) return *estimate;
    return absl::InternalError("the store clock probe gave no usable time");
  }

  absl::StatusOr<bool> InsertItem(const WorkItemState& state) override {
    // op_type=create: never overwrites an existing item (409 instead).
    opensearch::PutDocumentOptions put;
    put.create_only = true;
    put.refresh = "true";
    RFS_ASSIGN_OR_RETURN(
        opensearch::PutDocumentResult result,
        client_.PutDocument(index_, state.id, core::JsonText(ToSource(state)), put));
    return result.outcome != opensearch::PutDocumentResult::Outcome::kVersionConflict;
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

  // Reads the cluster's clock from GET /_cat/health (for clusters that send no Date header):
  // epoch seconds, so the store's clock read somewhere in [epoch, epoch + 1 s) meanwhile.
  absl::Status ProbeClock() {
    const TimePoint sent = clock().Now();
    RFS_ASSIGN_OR_RETURN(int64_t epoch, client_.GetClusterEpochSeconds());
    const TimePoint received = clock().Now();
    const TimePoint store = FromMillis(epoch * 1000);
    estimator_.Observe(sent, received, store, store + std::chrono::seconds(1));
    return absl::OkStatus();
  }

  // A stored document as a work-item hit; its `_source` is parsed here.
  absl::StatusOr<Hit> ToHit(opensearch::StoredDocument doc, std::string_view what) {
    boost::system::error_code ec;
    json::value source = json::parse(J(doc.source), ec);
    if (ec || !source.is_object() || doc.id.empty() || doc.version.seq_no < 0) {
      return absl::DataLossError(StrCat(what, " in ", index_, ": document '", doc.id,
                                        "' without _seq_no or an object _source"));
    }
    return Hit{std::move(doc.id), doc.version.seq_no, doc.version.primary_term,
               std::move(source.get_object())};
  }

  absl::StatusOr<std::optional<Hit>> GetDoc(std::string_view id) {
    // GET is real-time: it sees the latest write whether or not a refresh happened since.
    RFS_ASSIGN_OR_RETURN(std::optional<opensearch::StoredDocument> doc,
                         client_.GetDocument(index_, id));
    if (!doc) return std::nullopt;
    RFS_ASSIGN_OR_RETURN(Hit hit, ToHit(*std::move(doc), "get work item"));
    return hit;
  }

  // Writes `state` only if the item is still at (seq_no, primary_term): false on a lost race.
  // `*unanswered` is set when the request failed without a clear answer (so the write may or may
  // not have happened).
  absl::StatusOr<bool> PutIfUnchanged(const WorkItemState& state, int64_t seq_no,
                                      int64_t primary_term, bool* unanswered = nullptr) {
    opensearch::PutDocumentOptions put;
    put.if_seq_no = seq_no;
    put.if_primary_term = primary_term;
    put.refresh = "true";
    absl::StatusOr<opensearch::PutDocumentResult> result =
        client_.PutDocument(index_, state.id, core::JsonText(ToSource(state)), put);
    if (!result.ok()) {
      if (unanswered != nullptr) *unanswered = true;
      return result.status();
    }
    return result->outcome != opensearch::PutDocumentResult::Outcome::kVersionConflict;
  }

  absl::StatusOr<std::vector<Hit>> Search(const json::object& body, std::string_view what) {
    RFS_ASSIGN_OR_RETURN(opensearch::SearchResult result, client_.Search(index_, body));
    std::vector<Hit> out;
    out.reserve(result.hits.size());
    for (opensearch::StoredDocument& doc : result.hits) {
      RFS_ASSIGN_OR_RETURN(Hit hit, ToHit(std::move(doc), what));
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

  const std::string index_;
  const int batch_size_;
  const int max_rounds_;
  internal::StoreClockEstimator estimator_;
  DateSamplingTransport sampler_;
  opensearch::OpenSearchClient client_;
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
