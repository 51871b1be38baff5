#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "coordination/coordinator_base_internal.hpp"

namespace rfs::coordination::internal {
namespace {

using core::StrCat;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr int64_t kNanosPerMilli = 1'000'000;

}  // namespace

std::string JoinWorkItemIds(std::span<const std::string> ids) {
  std::string out;
  for (const auto& id : ids) {
    if (!out.empty()) out.push_back(',');
    out.append(id);
  }
  return out;
}

std::vector<std::string> SplitWorkItemIds(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

absl::Status ValidateTableName(std::string_view table) {
  const bool valid =
      !table.empty() && table.size() <= 63 && !std::isdigit(static_cast<unsigned char>(table[0])) &&
      std::all_of(table.begin(), table.end(),
                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat("'", table, "' is not a usable table name (letters, digits, '_')"));
}

int64_t FloorMillis(TimePoint t) {
  const int64_t nanos = duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return nanos >= 0 ? nanos / kNanosPerMilli : -((-nanos + kNanosPerMilli - 1) / kNanosPerMilli);
}

int64_t CeilMillis(TimePoint t) { return -FloorMillis(TimePoint{} - t.time_since_epoch()); }

TimePoint FromMillis(int64_t millis) { return TimePoint{} + milliseconds(millis); }

absl::Status CoordinatorBase::ValidateOptions(const WorkCoordinatorOptions& options) {
  if (options.worker_id.empty()) return absl::InvalidArgumentError("worker_id is required");
  if (options.max_clock_skew < Duration::zero()) {
    return absl::InvalidArgumentError("max_clock_skew must not be negative");
  }
  return absl::OkStatus();
}

CoordinatorBase::CoordinatorBase(WorkCoordinatorOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &core::SystemClock::Instance()) {}

absl::Status CoordinatorBase::CheckClock(const StoreTime& now) const {
  // The store time closest to the worker's own reading: refuse only when the worker is off by more
  // than the tolerance whatever the estimate's uncertainty.
  const TimePoint closest = std::clamp(now.local, now.earliest, now.latest);
  return CheckClockSkew(now.local, closest, options_.max_clock_skew);
}

bool CoordinatorBase::IsAvailable(const WorkItemState& state, const StoreTime& now) {
  return !state.completed() && state.lease_expires_at < FromMillis(FloorMillis(now.earliest));
}

Lease CoordinatorBase::BeginLease(WorkItemState& state, const StoreTime& now,
                                  Duration initial_lease, bool fixed) const {
  Lease lease;
  lease.work_item_id = state.id;
  lease.worker_id = options_.worker_id;
  lease.exponent = fixed ? 0 : std::clamp(state.next_lease_exponent, 0, kMaxLeaseExponent);
  lease.duration = LeaseDurationFor(initial_lease, lease.exponent);
  // Stores keep whole milliseconds: round the expiry up so that the stored value is never earlier
  // than the instant the holder's local deadline corresponds to.
  lease.expires_at = FromMillis(CeilMillis(now.latest + lease.duration));
  lease.acquired_at = lease.expires_at - duration_cast<TimePoint::duration>(lease.duration);
  lease.local_start = now.local;
  lease.generation = state.lease_generation + 1;
  lease.recorded_progress = state.progress;

  state.lease_holder = options_.worker_id;
  state.lease_expires_at = lease.expires_at;
  state.lease_generation = lease.generation;
  state.next_lease_exponent = fixed ? 0 : std::min(lease.exponent + 1, kMaxLeaseExponent);
  return lease;
}

bool CoordinatorBase::HoldsLiveLease(const WorkItemState& state, const StoreTime& now) const {
  return !state.completed() && state.lease_holder == options_.worker_id &&
         state.lease_expires_at > now.latest;
}

Lease CoordinatorBase::ResumeLease(const WorkItemState& state, const StoreTime& now,
                                   Duration initial_lease) const {
  Lease lease;
  lease.work_item_id = state.id;
  lease.worker_id = options_.worker_id;
  lease.exponent = std::max(state.next_lease_exponent - 1, 0);
  lease.duration = LeaseDurationFor(initial_lease, lease.exponent);
  lease.expires_at = state.lease_expires_at;
  lease.acquired_at = lease.expires_at - duration_cast<TimePoint::duration>(lease.duration);
  // The local deadline comes from the same conservative reading as for a fresh grant: the worker
  // clock now, plus the least time that can be left before the store reaches the expiry.
  lease.local_start = now.local + (state.lease_expires_at - now.latest) -
                      duration_cast<TimePoint::duration>(lease.duration);
  lease.generation = state.lease_generation;
  lease.recorded_progress = state.progress;
  return lease;
}

AllLeasedElsewhere CoordinatorBase::LeasedUntil(TimePoint expiry, const StoreTime& now) {
  // Past `expiry - earliest` of worker time, the earliest possible store time has passed expiry.
  const Duration wait = expiry - now.earliest + milliseconds(1);
  return AllLeasedElsewhere{expiry, std::max(wait, Duration::zero())};
}

WorkItemState CoordinatorBase::NewItem(std::string_view id, int lease_exponent) const {
  WorkItemState state;
  state.id = std::string(id);
  state.next_lease_exponent = lease_exponent;
  state.creator_id = options_.worker_id;
  return state;
}

absl::StatusOr<StoreTime> CoordinatorBase::ReadCheckedStoreTime() {
  RFS_ASSIGN_OR_RETURN(StoreTime now, ReadStoreTime());
  RFS_RETURN_IF_ERROR(CheckClock(now));
  return now;
}

absl::StatusOr<TimePoint> CoordinatorBase::StoreNow() {
  RFS_ASSIGN_OR_RETURN(StoreTime now, ReadStoreTime());
  return now.midpoint();
}

absl::StatusOr<bool> CoordinatorBase::CreateUnassignedWorkItem(std::string_view id,
                                                               int lease_exponent) {
  RFS_RETURN_IF_ERROR(ValidateWorkItemId(id));
  if (lease_exponent < 0 || lease_exponent > kMaxLeaseExponent) {
    return absl::InvalidArgumentError(
        StrCat("lease exponent ", lease_exponent, " outside [0, ", kMaxLeaseExponent, "]"));
  }
  return InsertItem(NewItem(id, lease_exponent));
}

absl::StatusOr<AcquireOutcome> CoordinatorBase::AcquireNextWorkItem(Duration initial_lease) {
  if (initial_lease <= Duration::zero()) {
    return absl::InvalidArgumentError("initial lease must be positive");
  }
  while (true) {
    RFS_ASSIGN_OR_RETURN(TryOutcome outcome, TryAcquireNext(initial_lease));
    if (auto* grant = std::get_if<Grant>(&outcome)) {
      Observe(grant->lease);
      if (grant->state.successor_ids.empty()) return Acquired{std::move(grant->lease)};
      // Its previous holder died mid-checkpoint: finish the handoff, then look again. Every pass
      // through here completes an item, so the loop ends.
      RFS_RETURN_IF_ERROR(FinishHandoff(grant->lease, grant->state));
      continue;
    }
    if (std::holds_alternative<NoAvailableWork>(outcome)) return NoAvailableWork{};
    return std::get<AllLeasedElsewhere>(outcome);
  }
}

absl::StatusOr<AcquireOutcome> CoordinatorBase::AcquireWorkItem(std::string_view id,
                                                                Duration initial_lease) {
  return Acquire(id, initial_lease, /*fixed=*/false);
}

absl::StatusOr<AcquireOutcome> CoordinatorBase::AcquireFixedLease(std::string_view id,
                                                                  Duration lease) {
  return Acquire(id, lease, /*fixed=*/true);
}

absl::StatusOr<AcquireOutcome> CoordinatorBase::Acquire(std::string_view id, Duration initial_lease,
                                                        bool fixed) {
  RFS_RETURN_IF_ERROR(ValidateWorkItemId(id));
  if (initial_lease <= Duration::zero()) {
    return absl::InvalidArgumentError("initial lease must be positive");
  }
  AcquireOutcome outcome = NoAvailableWork{};
  WorkItemState granted;
  const ItemMutation acquire = [&](WorkItemState& state,
                                   const StoreTime& now) -> absl::StatusOr<bool> {
    granted = WorkItemState{};  // Only the last attempt counts.
    RFS_RETURN_IF_ERROR(CheckClock(now));
    if (state.completed()) {
      outcome = AlreadyCompleted{};
      return false;
    }
    if (HoldsLiveLease(state, now)) {
      // This worker already holds a live lease on it (a retried call): that lease again.
      outcome = Acquired{ResumeLease(state, now, initial_lease)};
      return false;
    }
    if (!IsAvailable(state, now)) {
      outcome = LeasedUntil(state.lease_expires_at, now);
      return false;
    }
    outcome = Acquired{BeginLease(state, now, initial_lease, fixed)};
    granted = state;
    return true;
  };
  absl::Status status = MutateItem(id, acquire);
  if (absl::IsNotFound(status)) {
    // First use of this item: create it (if a racing worker did first, fine) and try again.
    RFS_RETURN_IF_ERROR(InsertItem(NewItem(id, 0)).status());
    status = MutateItem(id, acquire);
  }
  RFS_RETURN_IF_ERROR(status);
  if (!granted.id.empty()) Observe(std::get<Acquired>(outcome).lease);
  if (auto* acquired = std::get_if<Acquired>(&outcome);
      acquired != nullptr && !granted.successor_ids.empty()) {
    // A checkpointed item whose holder died before completing it: its work lives on in the
    // successors, so finishing the handoff completes it.
    RFS_RETURN_IF_ERROR(FinishHandoff(acquired->lease, granted));
    return AlreadyCompleted{};
  }
  return outcome;
}

absl::Status CoordinatorBase::CheckHolds(const WorkItemState& state, const Lease& lease) const {
  if (lease.worker_id != options_.worker_id) {
    return absl::FailedPreconditionError(
        StrCat("work item '", lease.work_item_id, "': lease belongs to worker '", lease.worker_id,
               "', not to this worker '", options_.worker_id, "'"));
  }
  if (state.lease_holder != lease.worker_id || state.lease_generation != lease.generation) {
    return absl::FailedPreconditionError(
        StrCat("work item '", lease.work_item_id, "': lease ", lease.generation,
               " was lost; the item's current lease is ", state.lease_generation, " held by '",
               state.lease_holder, "'"));
  }
  return absl::OkStatus();
}

absl::Status CoordinatorBase::CompleteWorkItem(const Lease& lease) {
  return MutateItem(lease.work_item_id,
                    [&](WorkItemState& state, const StoreTime& now) -> absl::StatusOr<bool> {
                      RFS_RETURN_IF_ERROR(CheckHolds(state, lease));
                      if (state.completed())
                        return false;  // Completed by this very lease already: idempotent.
                      state.completed_at = FromMillis(FloorMillis(now.midpoint()));
                      return true;
                    });
}

absl::Status CoordinatorBase::RecordSuccessors(const Lease& lease,
                                               std::span<const std::string> successor_ids,
                                               int successor_lease_exponent) {
  return MutateItem(
      lease.work_item_id, [&](WorkItemState& state, const StoreTime&) -> absl::StatusOr<bool> {
        RFS_RETURN_IF_ERROR(CheckHolds(state, lease));
        const bool same = std::equal(state.successor_ids.begin(), state.successor_ids.end(),
                                     successor_ids.begin(), successor_ids.end());
        if (same && !state.successor_ids.empty()) return false;  // Step 1 done already.
        if (!state.successor_ids.empty() || state.completed()) {
          return absl::InvalidArgumentError(
              StrCat("work item '", lease.work_item_id, "' already has successors [",
                     JoinWorkItemIds(state.successor_ids), "] (or is complete); cannot record [",
                     JoinWorkItemIds(successor_ids), "]"));
        }
        state.successor_ids.assign(successor_ids.begin(), successor_ids.end());
        state.successor_lease_exponent = successor_lease_exponent;
        return true;
      });
}

absl::Status CoordinatorBase::CreateSuccessors(std::span<const std::string> successor_ids,
                                               int successor_lease_exponent) {
  for (const auto& id : successor_ids) {
    // Created before (by this worker before it died, or by another finishing the handoff): fine.
    RFS_RETURN_IF_ERROR(InsertItem(NewItem(id, successor_lease_exponent)).status());
  }
  return absl::OkStatus();
}

absl::Status CoordinatorBase::FinishHandoff(const Lease& lease, const WorkItemState& state) {
  RFS_RETURN_IF_ERROR(CreateSuccessors(state.successor_ids, state.successor_lease_exponent));
  return CompleteWorkItem(lease);
}

void CoordinatorBase::Observe(const Lease& lease) const {
  if (options_.lease_observer) options_.lease_observer(lease);
}

absl::Status CoordinatorBase::RunHook(SuccessorStep step) const {
  return options_.successor_step_hook ? options_.successor_step_hook(step) : absl::OkStatus();
}

absl::Status CoordinatorBase::CreateSuccessorsAndComplete(
    const Lease& lease, std::span<const std::string> successor_ids, int successor_lease_exponent) {
  if (successor_ids.empty()) {
    return absl::InvalidArgumentError("no successor ids: use CompleteWorkItem");
  }
  if (successor_lease_exponent < 0 || successor_lease_exponent > kMaxLeaseExponent) {
    return absl::InvalidArgumentError(StrCat("successor lease exponent ", successor_lease_exponent,
                                             " outside [0, ", kMaxLeaseExponent, "]"));
  }
  std::set<std::string_view> seen;
  for (const auto& id : successor_ids) {
    RFS_RETURN_IF_ERROR(ValidateWorkItemId(id));
    if (id == lease.work_item_id) {
      return absl::InvalidArgumentError(StrCat("work item '", id, "' cannot be its own successor"));
    }
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(StrCat("successor '", id, "' listed twice"));
    }
  }
  // The order makes every crash point recoverable: once the ids are on the parent, whoever holds
  // the parent next can finish; the parent completes only after all successors exist.
  RFS_RETURN_IF_ERROR(RunHook(SuccessorStep::kRecordSuccessors));
  RFS_RETURN_IF_ERROR(RecordSuccessors(lease, successor_ids, successor_lease_exponent));
  RFS_RETURN_IF_ERROR(RunHook(SuccessorStep::kCreateSuccessors));
  RFS_RETURN_IF_ERROR(CreateSuccessors(successor_ids, successor_lease_exponent));
  RFS_RETURN_IF_ERROR(RunHook(SuccessorStep::kCompleteParent));
  return CompleteWorkItem(lease);
}

absl::StatusOr<Lease> CoordinatorBase::RenewLease(const Lease& lease,
                                                  const ItemProgress& progress) {
  Lease renewed;
  RFS_RETURN_IF_ERROR(MutateItem(
      lease.work_item_id, [&](WorkItemState& state, const StoreTime& now) -> absl::StatusOr<bool> {
        RFS_RETURN_IF_ERROR(CheckHolds(state, lease));
        if (state.completed()) {
          return absl::FailedPreconditionError(
              StrCat("work item '", lease.work_item_id, "' is complete; its lease ended"));
        }
        if (!state.progress || progress.next_cursor > state.progress->next_cursor) {
          // The item moved under this grant: its next holder needs no longer lease than this one.
          state.next_lease_exponent = std::min(state.next_lease_exponent, lease.exponent);
        }
        renewed = lease;
        // As for a grant: the expiry from the latest possible store time, the local deadline from
        // the worker clock at that reading, so the holder stops before anyone can take over.
        renewed.expires_at = FromMillis(CeilMillis(now.latest + lease.duration));
        renewed.acquired_at =
            renewed.expires_at - duration_cast<TimePoint::duration>(lease.duration);
        renewed.local_start = now.local;
        state.lease_expires_at = renewed.expires_at;
        state.progress = progress;
        state.progress_at = FromMillis(FloorMillis(now.midpoint()));
        return true;
      }));
  return renewed;
}

absl::Status CoordinatorBase::RecordProgress(const Lease& lease, const ItemProgress& progress) {
  return MutateItem(
      lease.work_item_id, [&](WorkItemState& state, const StoreTime& now) -> absl::StatusOr<bool> {
        RFS_RETURN_IF_ERROR(CheckHolds(state, lease));
        if (state.completed()) {
          return absl::FailedPreconditionError(
              StrCat("work item '", lease.work_item_id, "' is complete; its lease ended"));
        }
        // Only acknowledged progress moves forward: a report that arrives late (resent, or
        // overtaken by a renewal) must not take the recorded cursor back.
        if (state.progress && progress.next_cursor < state.progress->next_cursor) return false;
        state.progress = progress;
        state.progress_at = FromMillis(FloorMillis(now.midpoint()));
        return true;
      });
}

absl::Status CoordinatorBase::ReleaseWorkItem(const Lease& lease,
                                              std::optional<ItemProgress> progress) {
  return MutateItem(lease.work_item_id,
                    [&](WorkItemState& state, const StoreTime& now) -> absl::StatusOr<bool> {
                      if (lease.worker_id == options_.worker_id && state.lease_holder.empty() &&
                          state.lease_generation == lease.generation) {
                        return false;  // Released by this lease already.
                      }
                      RFS_RETURN_IF_ERROR(CheckHolds(state, lease));
                      if (state.completed()) return false;
                      state.lease_holder.clear();
                      state.lease_expires_at = TimePoint{};
                      // The lease was given back, not exhausted: the next holder gets the same
                      // length this one had.
                      state.next_lease_exponent = lease.exponent;
                      if (progress) {
                        state.progress = *progress;
                        state.progress_at = FromMillis(FloorMillis(now.midpoint()));
                      }
                      return true;
                    });
}

}  // namespace rfs::coordination::internal
