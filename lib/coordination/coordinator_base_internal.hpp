// CoordinatorBase: the lease rules and multi-step protocols every IWorkCoordinator backend shares,
// written once over a handful of storage primitives.
//
// A backend supplies: its view of the store's clock (ReadStoreTime), an insert-if-absent
// (InsertItem), an atomic read-modify-write of one item (MutateItem: a SQLite transaction, or an
// OpenSearch read followed by a write conditional on the read's sequence number), an atomic
// "lease a random available item" (TryAcquireNext), and plain reads. Everything that decides
// *what* to write - who holds a lease, whether it has expired, what a grant looks like, the three
// successor steps and their idempotency, release, the clock guard - lives here, so the backends
// cannot drift apart and the conformance suite tests one set of rules twice.
//
// Thread safety: as IWorkCoordinator; the base holds no mutable state.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rfs/coordination/work_coordinator.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::coordination::internal {

/// The store's clock as one worker knows it: when the worker's clock read `local`, the store's
/// clock read something in [earliest, latest].
struct StoreTime {
  TimePoint earliest;
  TimePoint latest;
  TimePoint local;

  TimePoint midpoint() const { return earliest + (latest - earliest) / 2; }
};

/// Stores keep times as whole milliseconds since the Unix epoch.
int64_t FloorMillis(TimePoint t);
int64_t CeilMillis(TimePoint t);
TimePoint FromMillis(int64_t millis);

/// "a,b,c": how successor lists are stored and shown (ids never hold ',').
std::string JoinWorkItemIds(std::span<const std::string> ids);
/// The inverse of JoinWorkItemIds ("" is no ids).
std::vector<std::string> SplitWorkItemIds(std::string_view text);

/// InvalidArgument unless `table` can name a table of the SQL stores unquoted: 1 to 63 letters,
/// digits and '_', not starting with a digit.
absl::Status ValidateTableName(std::string_view table);

/// What a backend's TryAcquireNext found: a grant (with the item's record after it, which may
/// carry successors left by a dead holder), or one of the no-grant outcomes.
struct Grant {
  Lease lease;
  WorkItemState state;
};
using TryOutcome = std::variant<Grant, NoAvailableWork, AllLeasedElsewhere>;

/// A change to one item, applied by MutateItem to the item's current record at store time `now`.
/// Returns true to write the record back, false to leave the item as it is, or an error that
/// MutateItem returns unchanged. MutateItem may call it more than once (optimistic backends retry
/// on a lost race); only the last call's effects count.
using ItemMutation =
    std::function<absl::StatusOr<bool>(WorkItemState& state, const StoreTime& now)>;

class CoordinatorBase : public IWorkCoordinator {
 public:
  const std::string& worker_id() const final { return options_.worker_id; }
  absl::StatusOr<bool> CreateUnassignedWorkItem(std::string_view id, int lease_exponent) final;
  absl::StatusOr<AcquireOutcome> AcquireNextWorkItem(Duration initial_lease) final;
  absl::StatusOr<AcquireOutcome> AcquireWorkItem(std::string_view id, Duration initial_lease) final;
  absl::StatusOr<AcquireOutcome> AcquireFixedLease(std::string_view id, Duration lease) final;
  absl::Status CompleteWorkItem(const Lease& lease) final;
  absl::Status CreateSuccessorsAndComplete(const Lease& lease,
                                           std::span<const std::string> successor_ids,
                                           int successor_lease_exponent) final;
  absl::StatusOr<Lease> RenewLease(const Lease& lease, const ItemProgress& progress) final;
  absl::Status RecordProgress(const Lease& lease, const ItemProgress& progress) final;
  absl::Status ReleaseWorkItem(const Lease& lease, std::optional<ItemProgress> progress) final;
  using IWorkCoordinator::ReleaseWorkItem;
  absl::StatusOr<TimePoint> StoreNow() final;

  /// InvalidArgument unless the options are usable (a worker id is set).
  static absl::Status ValidateOptions(const WorkCoordinatorOptions& options);

 protected:
  explicit CoordinatorBase(WorkCoordinatorOptions options);

  core::IClock& clock() const { return *clock_; }
  const WorkCoordinatorOptions& options() const { return options_; }

  // Storage primitives.

  /// The store's clock now (may cost a round trip).
  virtual absl::StatusOr<StoreTime> ReadStoreTime() = 0;
  /// Writes `state` as a new item unless one with its id exists. True if written.
  virtual absl::StatusOr<bool> InsertItem(const WorkItemState& state) = 0;
  /// Atomically reads item `id` (NotFound if absent), applies `mutation`, and writes the result
  /// back if the mutation asks to.
  virtual absl::Status MutateItem(std::string_view id, const ItemMutation& mutation) = 0;
  /// Atomically leases one available item picked at random (use CheckClock, IsAvailable and
  /// BeginLease), or reports why none is available (use LeasedUntil).
  virtual absl::StatusOr<TryOutcome> TryAcquireNext(Duration initial_lease) = 0;

  // Shared rules for the backends.

  /// The clock guard on a store-time reading.
  absl::Status CheckClock(const StoreTime& now) const;
  /// ReadStoreTime() passed through the clock guard.
  absl::StatusOr<StoreTime> ReadCheckedStoreTime();
  /// Not complete, and its lease surely over at `now` (expiry before the earliest store time).
  static bool IsAvailable(const WorkItemState& state, const StoreTime& now);
  /// Grants `state` to this worker at `now`: updates the record and returns the lease. The expiry
  /// is taken from the latest possible store time and the local deadline from the worker clock at
  /// the same instant, so the holder stops no later than the store-time expiry.
  /// With `fixed` (AcquireFixedLease), the lease is `initial_lease` itself and the item's exponent
  /// goes back to 0 rather than up by one.
  Lease BeginLease(WorkItemState& state, const StoreTime& now, Duration initial_lease,
                   bool fixed = false) const;
  /// True if this worker holds a lease on `state` that is surely still live at `now`.
  bool HoldsLiveLease(const WorkItemState& state, const StoreTime& now) const;
  /// That lease, rebuilt from the record (for a worker that asks again, or that lost the response
  /// to its own grant); its local deadline is conservative for `now`.
  Lease ResumeLease(const WorkItemState& state, const StoreTime& now, Duration initial_lease) const;
  /// The outcome for an item leased elsewhere until `expiry`.
  static AllLeasedElsewhere LeasedUntil(TimePoint expiry, const StoreTime& now);
  /// A fresh unassigned item.
  WorkItemState NewItem(std::string_view id, int lease_exponent) const;

 private:
  /// AcquireWorkItem and AcquireFixedLease.
  absl::StatusOr<AcquireOutcome> Acquire(std::string_view id, Duration initial_lease, bool fixed);
  /// FailedPrecondition unless `state`'s current grant is `lease`, held by this worker.
  absl::Status CheckHolds(const WorkItemState& state, const Lease& lease) const;
  absl::Status RecordSuccessors(const Lease& lease, std::span<const std::string> successor_ids,
                                int successor_lease_exponent);
  absl::Status CreateSuccessors(std::span<const std::string> successor_ids,
                                int successor_lease_exponent);
  /// Steps 2 and 3 for an item acquired with successors already recorded on it.
  absl::Status FinishHandoff(const Lease& lease, const WorkItemState& state);
  absl::Status RunHook(SuccessorStep step) const;
  void Observe(const Lease& lease) const;

  WorkCoordinatorOptions options_;
  core::IClock* clock_;
};

}  // namespace rfs::coordination::internal
