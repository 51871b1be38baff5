#include "rfs/coordination/console_work_coordinator.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <utility>

#include <boost/json.hpp>

#include "rfs/coordination/verify_records.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/http_status.hpp"
#include "rfs/net/retrying_transport.hpp"

#include "absl/strings/match.h"

namespace rfs::coordination {
namespace {

namespace json = boost::json;
using core::StrCat;

TimePoint FromMillis(int64_t millis) { return TimePoint(std::chrono::milliseconds(millis)); }

// A path segment (session names and work item ids), every byte outside unreserved escaped.
std::string Escape(std::string_view segment) { return net::PercentEncode(segment, false); }

int64_t Int(const json::object& o, std::string_view name, int64_t fallback = 0) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr) return fallback;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
  if (v->is_double()) return static_cast<int64_t>(v->as_double());
  return fallback;
}

std::string String(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::optional<ItemProgress> ReadProgress(const json::value* v) {
  if (v == nullptr || !v->is_object()) return std::nullopt;
  const json::object& p = v->as_object();
  ItemProgress progress{static_cast<uint64_t>(Int(p, "next_cursor")),
                        static_cast<uint64_t>(Int(p, "documents_processed")),
                        static_cast<uint64_t>(Int(p, "bytes_processed"))};
  if (const json::value* o = p.if_contains("outcomes"); o != nullptr && o->is_object()) {
    for (const auto& [name, field] : kItemOutcomeFields) {
      progress.outcomes.*field =
          static_cast<uint64_t>(std::max<int64_t>(0, Int(o->as_object(), name)));
    }
  }
  return progress;
}

// The seed's progress fields, the failed count it shows, and ours.
json::object ProgressBody(const ItemProgress& progress) {
  json::object body{{"next_cursor", progress.next_cursor},
                    {"documents_processed", progress.docs},
                    {"bytes_processed", progress.bytes}};
  if (progress.outcomes.any()) {
    body["documents_failed"] = progress.outcomes.failed();
    json::object outcomes;
    for (const auto& [name, field] : kItemOutcomeFields) outcomes[name] = progress.outcomes.*field;
    body["outcomes"] = std::move(outcomes);
  }
  return body;
}

WorkItemState ReadItem(const json::object& item) {
  WorkItemState state;
  state.id = String(item, "work_item_id");
  state.next_lease_exponent = static_cast<int>(Int(item, "next_lease_exponent"));
  state.lease_holder = String(item, "lease_holder");
  state.lease_expires_at = FromMillis(Int(item, "lease_expires_at_ms"));
  state.lease_generation = Int(item, "lease_generation");
  if (const json::value* v = item.if_contains("completed_at_ms"); v != nullptr && !v->is_null()) {
    state.completed_at = FromMillis(Int(item, "completed_at_ms"));
  }
  if (const json::value* v = item.if_contains("successor_ids"); v != nullptr && v->is_array()) {
    for (const auto& id : v->as_array()) {
      if (id.is_string()) state.successor_ids.emplace_back(id.as_string());
    }
  }
  state.successor_lease_exponent = static_cast<int>(Int(item, "successor_lease_exponent"));
  state.creator_id = String(item, "creator_id");
  state.progress = ReadProgress(item.if_contains("progress"));
  if (state.progress) state.progress_at = FromMillis(Int(item, "progress_at_ms"));
  return state;
}

class ConsoleCoordinator final : public IWorkCoordinator {
 public:
  ConsoleCoordinator(ConsoleWorkCoordinatorOptions options,
                     std::shared_ptr<net::IHttpTransport> transport)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock : &core::SystemClock::Instance()),
        transport_(std::move(transport)),
        base_(StrCat("/sessions/", Escape(options_.session), "/", options_.space)) {}

  const std::string& worker_id() const override { return options_.worker_id; }

  absl::Status Setup() override {
    // The console creates a session's store with the session; check that it is there and open.
    return Call("GET", StrCat("/sessions/", Escape(options_.session)), "").status();
  }

  absl::StatusOr<bool> CreateUnassignedWorkItem(std::string_view id, int lease_exponent) override {
    RFS_RETURN_IF_ERROR(ValidateWorkItemId(id));
    json::object body{{"work_item_id", id},
                      {"lease_exponent", lease_exponent},
                      {"worker_id", options_.worker_id}};
    if (auto parsed = WorkItemId::ParseForJson(id)) {
      body["index_name"] = parsed->index_name;
      body["shard_number"] = parsed->shard;
    }
    if (options_.item_totals) {
      const WorkItemTotals totals = options_.item_totals(id);
      if (totals.document_count) body["document_count"] = *totals.document_count;
      if (totals.total_size_bytes) body["total_size_bytes"] = *totals.total_size_bytes;
    }
    auto response = Call("POST", StrCat(base_, "/work-items"), core::JsonText(body));
    if (response.ok()) return true;
    if (absl::IsFailedPrecondition(response.status()) &&
        absl::StrContains(response.status().message(), "already exists")) {
      return false;
    }
    return response.status();
  }

  absl::StatusOr<AcquireOutcome> AcquireNextWorkItem(Duration initial_lease) override {
    return Acquire(StrCat(base_, "/work-items/acquire"), initial_lease);
  }

  absl::StatusOr<AcquireOutcome> AcquireWorkItem(std::string_view id,
                                                 Duration initial_lease) override {
    RFS_RETURN_IF_ERROR(ValidateWorkItemId(id));
    return Acquire(StrCat(base_, "/work-items/", Escape(id), "/acquire"), initial_lease);
  }

  absl::StatusOr<AcquireOutcome> AcquireFixedLease(std::string_view id, Duration lease) override {
    RFS_RETURN_IF_ERROR(ValidateWorkItemId(id));
    const std::string path = StrCat(base_, "/work-items/", Escape(id), "/acquire");
    if (!console_before_lease_growth_.load()) {
      bool fixed = false;
      RFS_ASSIGN_OR_RETURN(AcquireOutcome outcome, Acquire(path, lease, /*fixed=*/true, &fixed));
      auto* acquired = std::get_if<Acquired>(&outcome);
      if (fixed || acquired == nullptr) return outcome;
      // Granted without saying so: a console from before lease_growth, which doubles each grant
      // that runs out. A grant at exponent 0 lasts what was asked; a doubled one is given back
      // (which takes its doubling back) and asked for again below. Should the release fail, the
      // longer grant stays this worker's.
      console_before_lease_growth_ = true;
      RFS_RETURN_IF_ERROR(CountTimeLeft(acquired->lease));
      if (acquired->lease.exponent == 0) return outcome;
      const absl::Status released = ReleaseWorkItem(acquired->lease);
      if (!released.ok() && !IsLeaseLost(released)) return outcome;
    }
    return AcquireFixedOnOlderConsole(id, path, lease);
  }

  absl::Status CompleteWorkItem(const Lease& lease) override {
    RFS_RETURN_IF_ERROR(CheckOwn(lease));
    return Call("PUT", ItemPath(lease, "complete"), core::JsonText(LeaseBody(lease))).status();
  }

  absl::Status CreateSuccessorsAndComplete(const Lease& lease,
                                           std::span<const std::string> successor_ids,
                                           int successor_lease_exponent) override {
    RFS_RETURN_IF_ERROR(CheckOwn(lease));
    // The hook may stop the checkpoint before any step, as a death there would; the console
    // then takes the steps before it and leaves the rest to a retry or to the next holder.
    absl::Status stop;
    int stop_before = 3;
    if (options_.successor_step_hook) {
      for (SuccessorStep step : {SuccessorStep::kRecordSuccessors, SuccessorStep::kCreateSuccessors,
                                 SuccessorStep::kCompleteParent}) {
        stop = options_.successor_step_hook(step);
        if (!stop.ok()) {
          stop_before = static_cast<int>(step);
          break;
        }
      }
    }
    if (stop_before == 0) return stop;
    json::object body = LeaseBody(lease);
    json::array ids;
    for (const auto& id : successor_ids) ids.emplace_back(id);
    body["successor_ids"] = std::move(ids);
    body["successor_lease_exponent"] = successor_lease_exponent;
    if (stop_before < 3) body["stop_before_step"] = stop_before;
    RFS_RETURN_IF_ERROR(Call("POST", ItemPath(lease, "successors"), core::JsonText(body)).status());
    return stop;
  }

  absl::StatusOr<Lease> RenewLease(const Lease& lease, const ItemProgress& progress) override {
    RFS_RETURN_IF_ERROR(CheckOwn(lease));
    json::object body = LeaseBody(lease);
    body["progress"] = ProgressBody(progress);
    const TimePoint sent = clock_->Now();
    RFS_ASSIGN_OR_RETURN(json::value reply,
                         Call("PUT", ItemPath(lease, "lease"), core::JsonText(body)));
    Lease renewed = lease;
    RFS_RETURN_IF_ERROR(ReadLease(reply, sent, renewed));
    return renewed;
  }

  absl::Status RecordProgress(const Lease& lease, const ItemProgress& progress) override {
    RFS_RETURN_IF_ERROR(CheckOwn(lease));
    json::object body = LeaseBody(lease);
    body["progress"] = ProgressBody(progress);
    return Call("PUT", ItemPath(lease, "progress"), core::JsonText(body)).status();
  }

  absl::Status ReleaseWorkItem(const Lease& lease, std::optional<ItemProgress> progress) override {
    RFS_RETURN_IF_ERROR(CheckOwn(lease));
    json::object body = LeaseBody(lease);
    if (progress) {
      body["progress"] = ProgressBody(*progress);
    }
    return Call("PUT", ItemPath(lease, "release"), core::JsonText(body)).status();
  }
  using IWorkCoordinator::ReleaseWorkItem;

  absl::StatusOr<int64_t> CountIncompleteWorkItems() override {
    RFS_ASSIGN_OR_RETURN(json::value status, Call("GET", StrCat(base_, "/work-items/status"), ""));
    if (!status.is_object() || !status.as_object().contains("incomplete_items")) {
      return absl::DataLossError("the console's status has no incomplete_items");
    }
    return Int(status.as_object(), "incomplete_items");
  }

  absl::StatusOr<std::optional<WorkItemState>> GetWorkItem(std::string_view id) override {
    auto reply = Call("GET", StrCat(base_, "/work-items/", Escape(id)), "");
    if (absl::IsNotFound(reply.status())) return std::nullopt;
    RFS_RETURN_IF_ERROR(reply.status());
    if (!reply->is_object())
      return absl::DataLossError("the console sent a work item that is not an object");
    return ReadItem(reply->as_object());
  }

  absl::StatusOr<std::vector<WorkItemState>> ListWorkItems() override {
    RFS_ASSIGN_OR_RETURN(json::value reply, Call("GET", StrCat(base_, "/work-items"), ""));
    if (!reply.is_array())
      return absl::DataLossError("the console's work-item list is not an array");
    std::vector<WorkItemState> items;
    for (const auto& item : reply.as_array()) {
      if (item.is_object()) items.push_back(ReadItem(item.as_object()));
    }
    return items;
  }

  absl::StatusOr<TimePoint> StoreNow() override {
    const TimePoint sent = clock_->Now();
    RFS_ASSIGN_OR_RETURN(json::value reply, Call("GET", StrCat(base_, "/time"), ""));
    const TimePoint received = clock_->Now();
    if (!reply.is_object()) return absl::DataLossError("the console's time is not an object");
    // The reading is from somewhere in the round trip: as seen now, half of it ago on average.
    return FromMillis(Int(reply.as_object(), "store_time_ms")) + (received - sent) / 2;
  }

 private:
  // On a console from before lease_growth: the lease divided by 2 to the exponent the item's
  // grant will have (its next one, or for a lease this worker holds, the one it was granted at),
  // so that the grant lasts `lease`; rounded down, never longer.
  absl::StatusOr<AcquireOutcome> AcquireFixedOnOlderConsole(std::string_view id,
                                                            const std::string& path,
                                                            Duration lease) {
    RFS_ASSIGN_OR_RETURN(std::optional<WorkItemState> state, GetWorkItem(id));
    int exponent = state ? std::clamp(state->next_lease_exponent, 0, kMaxLeaseExponent) : 0;
    if (state && state->lease_holder == options_.worker_id && !state->completed()) {
      exponent = std::max(exponent - 1, 0);
    }
    const int64_t millis = std::chrono::duration_cast<std::chrono::milliseconds>(lease).count();
    const Duration asked = std::chrono::milliseconds(std::max<int64_t>(millis >> exponent, 1));
    bool fixed = false;
    RFS_ASSIGN_OR_RETURN(AcquireOutcome outcome, Acquire(path, asked, /*fixed=*/true, &fixed));
    auto* acquired = std::get_if<Acquired>(&outcome);
    if (acquired == nullptr) return outcome;
    if (fixed) {
      // The console was upgraded meanwhile: its grant lasts what was asked here.
      console_before_lease_growth_ = false;
      if (asked == lease) return outcome;
      const absl::Status released = ReleaseWorkItem(acquired->lease);
      if (!released.ok() && !IsLeaseLost(released)) return outcome;
      return Acquire(path, lease, /*fixed=*/true);
    }
    RFS_RETURN_IF_ERROR(CountTimeLeft(acquired->lease));
    return outcome;
  }

  // A console from before lease_growth answers an acquisition with the grant's start as its
  // time, which makes a lease this worker held already look whole: the deadline is taken from
  // the time left at a reading of its clock after the grant. Without that reading the grant is
  // given back.
  absl::Status CountTimeLeft(Lease& lease) {
    const TimePoint asked = clock_->Now();
    const absl::StatusOr<TimePoint> store_now = StoreNow();
    if (!store_now.ok()) {
      ReleaseWorkItem(lease).IgnoreError();
      return store_now.status();
    }
    CountFrom(lease, asked, *store_now);
    return absl::OkStatus();
  }

  // The lease's deadline no later than the time left on it at a reading `store_now` of the
  // console's clock (whole milliseconds, rounded down: up to 1 ms further on) taken after
  // `local` on this worker's clock.
  static void CountFrom(Lease& lease, TimePoint local, TimePoint store_now) {
    lease.local_start = std::min(
        lease.local_start, local + (lease.expires_at - (store_now + std::chrono::milliseconds(1))) -
                               std::chrono::duration_cast<TimePoint::duration>(lease.duration));
  }

  absl::Status CheckOwn(const Lease& lease) const {
    if (lease.worker_id != options_.worker_id) {
      return absl::FailedPreconditionError(
          StrCat("work item '", lease.work_item_id, "': lease belongs to worker '", lease.worker_id,
                 "', not to this worker '", options_.worker_id, "'"));
    }
    return absl::OkStatus();
  }

  std::string ItemPath(const Lease& lease, std::string_view action) const {
    return StrCat(base_, "/work-items/", Escape(lease.work_item_id), "/", action);
  }

  json::object LeaseBody(const Lease& lease) const {
    json::object body{
        {"worker_id", options_.worker_id},
        {"lease_generation", lease.generation},
        {"lease_exponent", lease.exponent},
        {"lease_duration_ms",
         std::chrono::duration_cast<std::chrono::milliseconds>(lease.duration).count()}};
    if (options_.back_pressure) {
      const WorkerBackPressure counts = options_.back_pressure();
      body["back_pressure"] = {{"rejected_429", counts.rejected_429}, {"retries", counts.retries}};
    }
    return body;
  }

  // A lease from a console reply's "lease" object; its local start is `sent`.
  absl::Status ReadLease(const json::value& reply, TimePoint sent, Lease& lease) const {
    const json::value* v = reply.is_object() ? reply.as_object().if_contains("lease") : nullptr;
    if (v == nullptr || !v->is_object()) {
      return absl::DataLossError("the console's reply has no lease object");
    }
    const json::object& l = v->as_object();
    lease.work_item_id = String(l, "work_item_id");
    lease.worker_id = options_.worker_id;
    lease.generation = Int(l, "generation");
    lease.exponent = static_cast<int>(Int(l, "exponent"));
    lease.duration = std::chrono::milliseconds(Int(l, "duration_ms"));
    lease.acquired_at = FromMillis(Int(l, "acquired_at_ms"));
    lease.expires_at = FromMillis(Int(l, "expires_at_ms"));
    lease.local_start = sent;
    lease.recorded_progress = ReadProgress(l.if_contains("recorded_progress"));
    return absl::OkStatus();
  }

  // `fixed`: lease_growth=fixed, and `*granted_fixed` set when the console says it granted so.
  absl::StatusOr<AcquireOutcome> Acquire(const std::string& path, Duration initial_lease,
                                         bool fixed = false, bool* granted_fixed = nullptr) {
    const int64_t initial_ms = std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(initial_lease).count());
    const std::string target =
        StrCat(path, "?worker_id=", Escape(options_.worker_id), "&initial_lease_ms=", initial_ms,
               fixed ? "&lease_growth=fixed" : "");
    const TimePoint sent = clock_->Now();
    auto reply = Call("POST", target, "", /*not_found_is_answer=*/true);
    const TimePoint received = clock_->Now();
    RFS_RETURN_IF_ERROR(reply.status());
    if (!reply->is_object())
      return absl::DataLossError("the console's acquisition reply is not an object");
    const json::object& body = reply->as_object();
    const std::string outcome = String(body, "outcome");
    // The clock guard, on the store time the console read for this acquisition.
    std::optional<TimePoint> store_now;
    if (const json::value* store = body.if_contains("store_time_ms"); store != nullptr) {
      const TimePoint worker_mid = sent + (received - sent) / 2;
      store_now = FromMillis(Int(body, "store_time_ms"));
      absl::Status skew =
          CheckClockSkew(worker_mid, *store_now, options_.max_clock_skew + (received - sent));
      if (!skew.ok()) {
        if (outcome == "acquired") {
          Lease granted;
          if (ReadLease(*reply, sent, granted).ok()) ReleaseWorkItem(granted).IgnoreError();
        }
        return skew;
      }
    }
    if (outcome == "acquired") {
      Lease lease;
      RFS_RETURN_IF_ERROR(ReadLease(*reply, sent, lease));
      // A lease this worker held already has only part of its length left, counted from the
      // request. For a new grant, about the whole lease.
      if (store_now) CountFrom(lease, sent, *store_now);
      if (granted_fixed != nullptr) {
        const json::value* growth = body.if_contains("lease_growth");
        *granted_fixed = growth != nullptr && growth->is_string() && growth->as_string() == "fixed";
      }
      Observe(lease);
      return Acquired{std::move(lease)};
    }
    if (outcome == "already_completed") return AlreadyCompleted{};
    if (outcome == "no_available_work") return NoAvailableWork{};
    if (outcome == "all_leased_elsewhere") {
      AllLeasedElsewhere busy;
      busy.earliest_expiry = FromMillis(Int(body, "earliest_lease_expiry_ms"));
      busy.retry_after = std::chrono::milliseconds(Int(body, "retry_after_ms"));
      return busy;
    }
    return absl::DataLossError(
        StrCat("the console answered an acquisition with outcome '", outcome, "'"));
  }

  // The observer hears each grant once (an acquisition that hands back a lease the worker holds
  // already is not a new grant).
  void Observe(const Lease& lease) {
    if (!options_.lease_observer) return;
    {
      std::lock_guard lock(mu_);
      if (!observed_.insert({lease.work_item_id, lease.generation}).second) return;
    }
    options_.lease_observer(lease);
  }

  // One request; the reply's JSON for 2xx (and for 404 when `not_found_is_answer`), else the
  // error the status code means.
  absl::StatusOr<json::value> Call(std::string_view method, const std::string& target,
                                   const std::string& body, bool not_found_is_answer = false) {
    net::HttpRequest request;
    request.method = std::string(method);
    request.target = target;
    request.headers = {{"Authorization", StrCat("Bearer ", options_.token)},
                       {"Accept", "application/json"}};
    if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
    request.body = body;
    request.timeout = options_.request_timeout;
    RFS_ASSIGN_OR_RETURN(net::HttpResponse response, transport_->Send(request));
    boost::system::error_code ec;
    json::value parsed =
        response.body.empty() ? json::value(nullptr) : json::parse(response.body, ec);
    std::string detail;
    if (!ec && parsed.is_object()) detail = String(parsed.as_object(), "detail");
    if (detail.empty()) detail = response.body.substr(0, 300);
    const std::string what = StrCat("console ", method, " ", target.substr(0, target.find('?')),
                                    ": HTTP ", response.status, ": ", detail);
    if ((response.status >= 200 && response.status < 300) ||
        (response.status == 404 && not_found_is_answer && !ec && parsed.is_object() &&
         parsed.as_object().contains("outcome"))) {
      if (ec)
        return absl::DataLossError(
            StrCat("console ", method, " ", target, ": the reply is not JSON"));
      return parsed;
    }
    // The work API answers 409 and 410 for a lease that is no longer this worker's.
    return net::StatusFromHttp(response.status, what,
                               {{409, absl::StatusCode::kFailedPrecondition},
                                {410, absl::StatusCode::kFailedPrecondition},
                                {401, absl::StatusCode::kPermissionDenied}});
  }

  const ConsoleWorkCoordinatorOptions options_;
  core::IClock* const clock_;
  const std::shared_ptr<net::IHttpTransport> transport_;
  const std::string base_;
  std::mutex mu_;
  std::set<std::pair<std::string, int64_t>> observed_;
  // Set once a fixed acquisition was granted without the console saying so (AcquireFixedLease).
  std::atomic<bool> console_before_lease_growth_{false};
};

}  // namespace

absl::StatusOr<std::unique_ptr<IWorkCoordinator>> ConsoleWorkCoordinator::Open(
    ConsoleWorkCoordinatorOptions options) {
  if (options.worker_id.empty()) return absl::InvalidArgumentError("a worker id is required");
  if (options.session.empty()) {
    return absl::InvalidArgumentError("--session-name is required with --console-url");
  }
  if (options.space != "backfill" && options.space != "workflow" &&
      !VerifyConsoleSpaceRound(options.space)) {
    return absl::InvalidArgumentError(
        "a console item space is 'backfill', 'workflow' or 'verify-N' (a verification round)");
  }
  if (options.token.empty()) {
    return absl::InvalidArgumentError(
        "a console token is required with --console-url (--console-token or RFS_CONSOLE_TOKEN)");
  }
  std::shared_ptr<net::IHttpTransport> transport = options.transport;
  if (!transport) {
    net::HttpTransportOptions http;
    http.endpoint = options.url;
    http.sends_bearer_token = true;
    http.tls.ca_cert_file = options.ca_cert_file;
    http.response_timeout = options.request_timeout;
    RFS_ASSIGN_OR_RETURN(auto opened, net::BeastHttpTransport::Open(std::move(http)));
    transport = std::move(opened);
  }
  // Backoff sleeps on the real clock whatever the worker's clock is (a test's fake clock must
  // not move because a request was resent).
  auto retrying = std::make_shared<net::RetryingHttpTransport>(
      std::move(transport), core::SystemClock::Instance(), net::TransportRetryPolicy{});
  return std::unique_ptr<IWorkCoordinator>(
      new ConsoleCoordinator(std::move(options), std::move(retrying)));
}

}  // namespace rfs::coordination
