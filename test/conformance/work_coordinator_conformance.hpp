// The IWorkCoordinator conformance suite: the whole contract of work_coordinator.hpp, run against
// any backend through a factory, on a FakeClock (Arrow's GenericFileSystemTest pattern).
//
// Call RunWorkCoordinatorConformance(env) from a Catch2 TEST_CASE whose body builds a fresh, empty
// store each time it runs (Catch2 re-enters the test case once per leaf SECTION). The store's
// clock and every worker's clock default to env.clock; nothing sleeps for real.
//
// What it checks: setup and creation are idempotent; acquisition hands each item to one worker,
// picks only available items, and reports NoAvailableWork / AllLeasedElsewhere with the earliest
// expiry; leases expire and double (fixed leases do not); completion by a non-holder is refused, by
// the holder is idempotent; release; successors are recorded, created and the parent completed, and
// a crash between any two of those steps is recovered either by a retry or by the next holder; a
// randomized schedule of many workers never grants an item while another lease on it is valid;
// concurrent threads never share an item; the one-time setup runs once while others back off;
// the clock guard refuses skewed workers; counts are right throughout; a setup description
// (RecordSetupDescription) is kept and read back.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/coordination/target_tuning_records.hpp"
#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/clock.hpp"

namespace rfs::coordination::conformance {

using namespace std::chrono_literals;

/// What the suite asks of a backend's factory for one worker.
struct WorkerSpec {
  std::string worker_id;
  /// The worker's clock (the store's clock, env.clock, is unaffected).
  core::IClock* clock = nullptr;
  std::function<absl::Status(SuccessorStep)> successor_step_hook;
};

/// Copies a spec into a backend's options; the worker's clock defaults to `store_clock`.
inline void ApplySpec(const WorkerSpec& spec, core::IClock* store_clock,
                      WorkCoordinatorOptions& options) {
  options.worker_id = spec.worker_id;
  options.clock = spec.clock != nullptr ? spec.clock : store_clock;
  options.successor_step_hook = spec.successor_step_hook;
}

/// The coordinator a backend's Open returned, failing the test if it returned an error.
inline std::unique_ptr<IWorkCoordinator> RequireOpened(
    absl::StatusOr<std::unique_ptr<IWorkCoordinator>> opened) {
  INFO(opened.status().ToString());
  REQUIRE(opened.ok());
  return *std::move(opened);
}

struct ConformanceEnv {
  /// The store's clock, and every worker's unless a spec says otherwise.
  core::FakeClock* clock = nullptr;
  /// Opens a worker on the shared store (Setup is called by the suite).
  std::function<std::unique_ptr<IWorkCoordinator>(const WorkerSpec&)> make_worker;
  /// Knob: how far past a lease's store-clock expiry the clock must move before every worker
  /// sees the lease as expired (the uncertainty of the backend's store-time estimate).
  Duration expiry_slack = 1ms;
  /// Knob: run the multi-threaded section.
  bool threads = true;
  /// Called at the end of every section (e.g. "the fake saw no malformed request").
  std::function<void()> check_store;
};

/// A clock running `offset` ahead of (or behind) another; sleeping advances the base clock.
class OffsetClock final : public core::IClock {
 public:
  OffsetClock(core::IClock& base, Duration offset) : base_(base), offset_(offset) {}
  TimePoint Now() const override {
    return base_.Now() + std::chrono::duration_cast<TimePoint::duration>(offset_);
  }
  void SleepFor(Duration duration) override { base_.SleepFor(duration); }

 private:
  core::IClock& base_;
  Duration offset_;
};

namespace detail {

#define RFS_CONFORMANCE_REQUIRE_OK(expr)                  \
  do {                                                    \
    const ::absl::Status rfs_conformance_status = (expr); \
    INFO(rfs_conformance_status.ToString());              \
    REQUIRE(rfs_conformance_status.ok());                 \
  } while (false)

inline constexpr Duration kLease = 10min;

inline std::unique_ptr<IWorkCoordinator> Worker(
    const ConformanceEnv& env, std::string id, core::IClock* clock = nullptr,
    std::function<absl::Status(SuccessorStep)> hook = nullptr) {
  auto worker = env.make_worker(WorkerSpec{std::move(id), clock, std::move(hook)});
  REQUIRE(worker != nullptr);
  RFS_CONFORMANCE_REQUIRE_OK(worker->Setup());
  return worker;
}

inline AcquireOutcome Outcome(absl::StatusOr<AcquireOutcome> outcome) {
  INFO(outcome.status().ToString());
  REQUIRE(outcome.ok());
  return *std::move(outcome);
}

inline Lease MustAcquire(absl::StatusOr<AcquireOutcome> outcome) {
  AcquireOutcome o = Outcome(std::move(outcome));
  REQUIRE(std::holds_alternative<Acquired>(o));
  return std::get<Acquired>(std::move(o)).lease;
}

inline WorkItemState MustGet(IWorkCoordinator& worker, std::string_view id) {
  auto state = worker.GetWorkItem(id);
  INFO(state.status().ToString());
  REQUIRE(state.ok());
  REQUIRE(state->has_value());
  return **state;
}

inline int64_t Count(IWorkCoordinator& worker) {
  auto count = worker.CountIncompleteWorkItems();
  INFO(count.status().ToString());
  REQUIRE(count.ok());
  return *count;
}

inline void Create(IWorkCoordinator& worker, std::string_view id, int exponent = 0) {
  auto created = worker.CreateUnassignedWorkItem(id, exponent);
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  REQUIRE(*created);
}

inline std::string ItemId(std::string_view index, uint32_t shard, uint64_t cursor = 0) {
  return WorkItemId{std::string(index), shard, cursor}.ToString();
}

// --- Sections ----------------------------------------------------------------------------------

inline void SetupAndCreation(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  RFS_CONFORMANCE_REQUIRE_OK(w1->Setup());  // Again: idempotent.
  CHECK(Count(*w1) == 0);
  const std::string a = ItemId("logs-2024", 3);
  auto first = w1->CreateUnassignedWorkItem(a, 0);
  REQUIRE(first.ok());
  CHECK(*first);
  auto again = w2->CreateUnassignedWorkItem(a, 5);
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
  const WorkItemState state = MustGet(*w2, a);
  CHECK(state.id == a);
  CHECK(state.next_lease_exponent == 0);  // The second create left it untouched.
  CHECK(state.creator_id == "w1");
  CHECK(state.lease_holder.empty());
  CHECK_FALSE(state.completed());
  CHECK(state.successor_ids.empty());
  CHECK(Count(*w2) == 1);
  auto missing = w1->GetWorkItem("no_such_item");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
  CHECK(absl::IsInvalidArgument(w1->CreateUnassignedWorkItem("a,b", 0).status()));
  CHECK(absl::IsInvalidArgument(w1->CreateUnassignedWorkItem("", 0).status()));
  CHECK(absl::IsInvalidArgument(w1->CreateUnassignedWorkItem(std::string(513, 'x'), 0).status()));
  CHECK(absl::IsInvalidArgument(w1->CreateUnassignedWorkItem("b", -1).status()));
  CHECK(absl::IsInvalidArgument(w1->CreateUnassignedWorkItem("b", kMaxLeaseExponent + 1).status()));
  CHECK(Count(*w1) == 1);
}

inline void AcquisitionAndOutcomes(const ConformanceEnv& env) {
  auto creator = Worker(env, "creator");
  std::set<std::string> ids;
  for (uint32_t shard = 0; shard < 3; ++shard) {
    ids.insert(ItemId("idx", shard));
    Create(*creator, ItemId("idx", shard));
  }
  std::vector<std::unique_ptr<IWorkCoordinator>> workers;
  std::vector<Lease> leases;
  for (int i = 0; i < 3; ++i) {
    workers.push_back(Worker(env, "w" + std::to_string(i)));
    const TimePoint before = env.clock->Now();
    Lease lease = MustAcquire(workers.back()->AcquireNextWorkItem(kLease));
    CHECK(ids.contains(lease.work_item_id));
    CHECK(lease.worker_id == "w" + std::to_string(i));
    CHECK(lease.exponent == 0);
    CHECK(lease.duration == kLease);
    CHECK(lease.expires_at - lease.acquired_at == kLease);
    CHECK(lease.expires_at >= before + kLease);
    CHECK(lease.expires_at <= before + kLease + env.expiry_slack);
    // Worker and store share one clock here: the holder must stop no later than the expiry.
    CHECK(lease.local_deadline() <= lease.expires_at);
    CHECK(lease.early_checkpoint_at() < lease.local_deadline());
    const WorkItemState state = MustGet(*creator, lease.work_item_id);
    CHECK(state.lease_holder == lease.worker_id);
    CHECK(state.lease_generation == lease.generation);
    CHECK(state.lease_expires_at == lease.expires_at);
    CHECK(state.next_lease_exponent == 1);
    leases.push_back(lease);
    env.clock->Advance(1s);
  }
  std::set<std::string> leased;
  for (const auto& l : leases) leased.insert(l.work_item_id);
  CHECK(leased == ids);  // Three workers, three different items.

  auto late = Worker(env, "late");
  AcquireOutcome busy = Outcome(late->AcquireNextWorkItem(kLease));
  REQUIRE(std::holds_alternative<AllLeasedElsewhere>(busy));
  const auto& elsewhere = std::get<AllLeasedElsewhere>(busy);
  TimePoint earliest = leases[0].expires_at;
  for (const auto& l : leases) earliest = std::min(earliest, l.expires_at);
  CHECK(elsewhere.earliest_expiry == earliest);
  CHECK(elsewhere.retry_after > 0s);
  CHECK(elsewhere.retry_after <= kLease);
  CHECK(Count(*late) == 3);

  for (size_t i = 0; i < leases.size(); ++i) {
    RFS_CONFORMANCE_REQUIRE_OK(workers[i]->CompleteWorkItem(leases[i]));
  }
  CHECK(std::holds_alternative<NoAvailableWork>(Outcome(late->AcquireNextWorkItem(kLease))));
  CHECK(Count(*late) == 0);
  for (const auto& id : ids) CHECK(MustGet(*late, id).completed());
}

inline void LeasesExpireAndDouble(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  auto w3 = Worker(env, "w3");
  const std::string x = ItemId("idx", 0);
  Create(*w1, x);
  const Lease first = MustAcquire(w1->AcquireNextWorkItem(kLease));
  CHECK(first.exponent == 0);
  CHECK(first.generation == 1);

  // One millisecond before the expiry the item is still taken...
  env.clock->Set(first.expires_at - 1ms);
  AcquireOutcome busy = Outcome(w2->AcquireNextWorkItem(kLease));
  REQUIRE(std::holds_alternative<AllLeasedElsewhere>(busy));
  CHECK(std::get<AllLeasedElsewhere>(busy).earliest_expiry == first.expires_at);
  // ...and also through AcquireWorkItem.
  CHECK(std::holds_alternative<AllLeasedElsewhere>(Outcome(w2->AcquireWorkItem(x, kLease))));

  // Past the expiry it goes to the next worker, for twice as long.
  env.clock->Set(first.expires_at + env.expiry_slack);
  const Lease second = MustAcquire(w2->AcquireNextWorkItem(kLease));
  CHECK(second.work_item_id == x);
  CHECK(second.exponent == 1);
  CHECK(second.duration == 2 * kLease);
  CHECK(second.generation == 2);
  CHECK(second.acquired_at > first.expires_at);

  env.clock->Set(second.expires_at + env.expiry_slack);
  const Lease third = MustAcquire(w3->AcquireWorkItem(x, kLease));
  CHECK(third.exponent == 2);
  CHECK(third.duration == 4 * kLease);
  CHECK(third.generation == 3);
  CHECK(MustGet(*w1, x).next_lease_exponent == 3);
  CHECK(MustGet(*w1, x).lease_holder == "w3");

  // The holder asking again gets its own live lease back, not a new grant.
  const Lease again = MustAcquire(w3->AcquireWorkItem(x, kLease));
  CHECK(again.generation == third.generation);
  CHECK(again.expires_at == third.expires_at);
  CHECK(again.local_deadline() <= third.expires_at);
  CHECK(MustGet(*w1, x).next_lease_exponent == 3);
  // Later too (a retry after a lost answer): with only the time left on it.
  env.clock->Advance(kLease);
  const Lease later = MustAcquire(w3->AcquireWorkItem(x, kLease));
  CHECK(later.generation == third.generation);
  CHECK(later.expires_at == third.expires_at);
  CHECK(later.local_deadline() <= third.expires_at);
}

inline void FixedLeases(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  auto w3 = Worker(env, "w3");
  // A record used as a lock, its holders dying in it: every grant lasts the lease asked for.
  const std::string lock = TuningRecordId(kTuningLockPrefix, "idx");
  const Lease first = MustAcquire(w1->AcquireFixedLease(lock, kLease));
  CHECK(first.exponent == 0);
  CHECK(first.duration == kLease);
  CHECK(MustGet(*w1, lock).next_lease_exponent == 0);
  // Held until it runs out, as any lease.
  env.clock->Set(first.expires_at - 1ms);
  CHECK(std::holds_alternative<AllLeasedElsewhere>(Outcome(w2->AcquireFixedLease(lock, kLease))));
  env.clock->Set(first.expires_at + env.expiry_slack);
  const Lease second = MustAcquire(w2->AcquireFixedLease(lock, kLease));
  CHECK(second.duration == kLease);
  CHECK(second.generation == first.generation + 1);
  // The holder asking again gets its own live lease back.
  const Lease again = MustAcquire(w2->AcquireFixedLease(lock, kLease));
  CHECK(again.generation == second.generation);
  CHECK(again.expires_at == second.expires_at);
  CHECK(again.duration == kLease);
  // Renewed, then given back: the next grant is as short.
  auto renewed = w2->RenewLease(again, ItemProgress{1, 0, 0});
  RFS_CONFORMANCE_REQUIRE_OK(renewed.status());
  CHECK(renewed->duration == kLease);
  RFS_CONFORMANCE_REQUIRE_OK(w2->ReleaseWorkItem(*renewed));
  CHECK(MustGet(*w1, lock).next_lease_exponent == 0);
  const Lease after_release = MustAcquire(w3->AcquireFixedLease(lock, kLease));
  CHECK(after_release.duration == kLease);
  RFS_CONFORMANCE_REQUIRE_OK(w3->ReleaseWorkItem(after_release));

  // An item whose doubling grants ran out (exponent 2 by now): a fixed grant lasts the lease
  // asked for, and the next doubling grant starts again from it.
  const std::string x = ItemId("idx", 11);
  Create(*w1, x);
  const Lease doubling = MustAcquire(w1->AcquireWorkItem(x, kLease));
  env.clock->Set(doubling.expires_at + env.expiry_slack);
  const Lease doubled = MustAcquire(w2->AcquireWorkItem(x, kLease));
  CHECK(doubled.duration == 2 * kLease);
  CHECK(MustGet(*w1, x).next_lease_exponent == 2);
  env.clock->Set(doubled.expires_at + env.expiry_slack);
  const Lease fixed = MustAcquire(w3->AcquireFixedLease(x, kLease));
  CHECK(fixed.exponent == 0);
  CHECK(fixed.duration == kLease);
  CHECK(MustGet(*w1, x).next_lease_exponent == 0);
  env.clock->Set(fixed.expires_at + env.expiry_slack);
  const Lease after = MustAcquire(w1->AcquireWorkItem(x, kLease));
  CHECK(after.exponent == 0);
  CHECK(after.duration == kLease);
  // Completed as any grant.
  RFS_CONFORMANCE_REQUIRE_OK(w1->CompleteWorkItem(after));
  CHECK(std::holds_alternative<AlreadyCompleted>(Outcome(w2->AcquireFixedLease(x, kLease))));
}

inline void CompletionRules(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  const std::string x = ItemId("idx", 7);
  Create(*w1, x);
  const Lease lease1 = MustAcquire(w1->AcquireNextWorkItem(kLease));

  // Another worker can neither use the holder's lease nor forge one.
  CHECK(absl::IsFailedPrecondition(w2->CompleteWorkItem(lease1)));
  Lease forged = lease1;
  forged.worker_id = "w2";
  CHECK(absl::IsFailedPrecondition(w2->CompleteWorkItem(forged)));
  CHECK_FALSE(MustGet(*w1, x).completed());

  // Once the lease is lost to w2, w1 is refused.
  env.clock->Set(lease1.expires_at + env.expiry_slack);
  const Lease lease2 = MustAcquire(w2->AcquireNextWorkItem(kLease));
  const absl::Status lost = w1->CompleteWorkItem(lease1);
  CHECK(IsLeaseLost(lost));
  CHECK(absl::IsFailedPrecondition(
      w1->CreateSuccessorsAndComplete(lease1, std::vector<std::string>{ItemId("idx", 7, 5)}, 0)));
  CHECK_FALSE(MustGet(*w1, x).completed());
  CHECK(Count(*w1) == 1);

  RFS_CONFORMANCE_REQUIRE_OK(w2->CompleteWorkItem(lease2));
  RFS_CONFORMANCE_REQUIRE_OK(w2->CompleteWorkItem(lease2));  // Idempotent for the holder.
  CHECK(MustGet(*w1, x).completed());
  CHECK(absl::IsFailedPrecondition(w1->CompleteWorkItem(lease1)));
  CHECK(std::holds_alternative<AlreadyCompleted>(Outcome(w1->AcquireWorkItem(x, kLease))));
  CHECK(Count(*w1) == 0);

  // A lease that merely expired, with nobody taking over, still completes its item.
  const std::string y = ItemId("idx", 8);
  Create(*w1, y);
  const Lease slow = MustAcquire(w1->AcquireNextWorkItem(kLease));
  env.clock->Advance(10 * kLease);
  RFS_CONFORMANCE_REQUIRE_OK(w1->CompleteWorkItem(slow));
  CHECK(MustGet(*w2, y).completed());
}

inline void Release(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  const std::string x = ItemId("idx", 1);
  Create(*w1, x);
  const Lease lease1 = MustAcquire(w1->AcquireNextWorkItem(kLease));
  CHECK(absl::IsFailedPrecondition(w2->ReleaseWorkItem(lease1)));
  RFS_CONFORMANCE_REQUIRE_OK(w1->ReleaseWorkItem(lease1));
  RFS_CONFORMANCE_REQUIRE_OK(w1->ReleaseWorkItem(lease1));  // Idempotent.
  const WorkItemState released = MustGet(*w2, x);
  CHECK(released.lease_holder.empty());
  CHECK(released.next_lease_exponent == 0);  // The released lease's doubling is taken back.
  CHECK(Count(*w2) == 1);

  // Available at once, at the same lease length.
  const Lease lease2 = MustAcquire(w2->AcquireNextWorkItem(kLease));
  CHECK(lease2.work_item_id == x);
  CHECK(lease2.exponent == 0);
  CHECK(lease2.generation == lease1.generation + 1);
  CHECK(absl::IsFailedPrecondition(w1->ReleaseWorkItem(lease1)));
  CHECK(absl::IsFailedPrecondition(w1->CompleteWorkItem(lease1)));
  RFS_CONFORMANCE_REQUIRE_OK(w2->CompleteWorkItem(lease2));
  RFS_CONFORMANCE_REQUIRE_OK(w2->ReleaseWorkItem(lease2));  // Complete: nothing to give back.
  CHECK(MustGet(*w1, x).completed());
}

inline void HeartbeatLeases(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  const std::string x = ItemId("idx", 3);
  Create(*w1, x);
  const Lease first = MustAcquire(w1->AcquireNextWorkItem(kLease));
  CHECK_FALSE(first.recorded_progress.has_value());
  CHECK(MustGet(*w1, x).next_lease_exponent == 1);

  // A renewal records the progress and restarts the lease from now, at the same length.
  env.clock->Advance(kLease / 2);
  CHECK(absl::IsFailedPrecondition(w2->RenewLease(first, ItemProgress{10, 10, 100}).status()));
  auto renewed = w1->RenewLease(first, ItemProgress{100, 90, 9000});
  RFS_CONFORMANCE_REQUIRE_OK(renewed.status());
  CHECK(renewed->generation == first.generation);
  CHECK(renewed->duration == first.duration);
  CHECK(renewed->expires_at >= first.expires_at + kLease / 2 - 1ms);
  CHECK(renewed->local_deadline() <= renewed->expires_at);
  CHECK(renewed->local_deadline() > first.local_deadline());
  WorkItemState state = MustGet(*w2, x);
  REQUIRE(state.progress.has_value());
  CHECK(*state.progress == ItemProgress{100, 90, 9000});
  CHECK(state.lease_expires_at == renewed->expires_at);
  // Progress was made under this grant: its doubling is taken back.
  CHECK(state.next_lease_exponent == 0);

  // Heartbeats go on from the renewed lease.
  env.clock->Advance(1s);
  auto again = w1->RenewLease(*renewed, ItemProgress{120, 110, 11000});
  RFS_CONFORMANCE_REQUIRE_OK(again.status());
  CHECK(again->expires_at > renewed->expires_at);
  CHECK(MustGet(*w2, x).progress->next_cursor == 120);
  renewed = again;

  // Past the old expiry the item is still held (the renewal moved it).
  env.clock->Set(first.expires_at + env.expiry_slack);
  CHECK(std::holds_alternative<AllLeasedElsewhere>(Outcome(w2->AcquireNextWorkItem(kLease))));

  // The holder dies: the next holder gets the same lease length and the recorded progress.
  env.clock->Set(renewed->expires_at + env.expiry_slack);
  const Lease second = MustAcquire(w2->AcquireNextWorkItem(kLease));
  CHECK(second.exponent == 0);
  REQUIRE(second.recorded_progress.has_value());
  CHECK(second.recorded_progress->next_cursor == 120);
  CHECK(absl::IsFailedPrecondition(w1->RenewLease(*renewed, ItemProgress{200, 1, 1}).status()));

  // A renewal without new progress keeps the lease alive but not the exponent short.
  auto idle = w2->RenewLease(second, ItemProgress{120, 110, 11000});
  RFS_CONFORMANCE_REQUIRE_OK(idle.status());
  CHECK(MustGet(*w1, x).next_lease_exponent == 1);

  // Released with progress: available at once, resuming from it.
  RFS_CONFORMANCE_REQUIRE_OK(w2->ReleaseWorkItem(*idle, ItemProgress{150, 140, 14000}));
  const Lease third = MustAcquire(w1->AcquireNextWorkItem(kLease));
  CHECK(third.exponent == 0);
  REQUIRE(third.recorded_progress.has_value());
  CHECK(*third.recorded_progress == ItemProgress{150, 140, 14000});

  // A completed item cannot be renewed.
  RFS_CONFORMANCE_REQUIRE_OK(w1->CompleteWorkItem(third));
  CHECK(absl::IsFailedPrecondition(w1->RenewLease(third, ItemProgress{151, 1, 1}).status()));
}

inline void SuccessorsHappyPath(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  const std::string parent = ItemId("idx", 2, 0);
  const std::string successor = ItemId("idx", 2, 1500);
  Create(*w1, parent);
  const Lease lease = MustAcquire(w1->AcquireNextWorkItem(kLease));
  const std::vector<std::string> successors{successor};

  CHECK(absl::IsInvalidArgument(
      w1->CreateSuccessorsAndComplete(lease, std::vector<std::string>{}, 0)));
  CHECK(absl::IsInvalidArgument(
      w1->CreateSuccessorsAndComplete(lease, std::vector<std::string>{parent}, 0)));
  CHECK(absl::IsInvalidArgument(
      w1->CreateSuccessorsAndComplete(lease, std::vector<std::string>{successor, successor}, 0)));
  CHECK(absl::IsInvalidArgument(
      w1->CreateSuccessorsAndComplete(lease, std::vector<std::string>{"bad,id"}, 0)));
  CHECK(absl::IsInvalidArgument(w1->CreateSuccessorsAndComplete(lease, successors, -1)));
  CHECK(Count(*w1) == 1);

  RFS_CONFORMANCE_REQUIRE_OK(w1->CreateSuccessorsAndComplete(lease, successors, 3));
  const WorkItemState done = MustGet(*w2, parent);
  CHECK(done.completed());
  CHECK(done.successor_ids == successors);
  CHECK(done.successor_lease_exponent == 3);
  const WorkItemState next = MustGet(*w2, successor);
  CHECK_FALSE(next.completed());
  CHECK(next.next_lease_exponent == 3);
  CHECK(next.creator_id == "w1");
  CHECK(Count(*w2) == 1);

  // Retrying the whole call is harmless; asking for different successors is a caller bug.
  RFS_CONFORMANCE_REQUIRE_OK(w1->CreateSuccessorsAndComplete(lease, successors, 3));
  CHECK(absl::IsInvalidArgument(
      w1->CreateSuccessorsAndComplete(lease, std::vector<std::string>{ItemId("idx", 2, 9)}, 3)));
  CHECK(Count(*w2) == 1);

  const Lease child = MustAcquire(w2->AcquireNextWorkItem(kLease));
  CHECK(child.work_item_id == successor);
  CHECK(child.exponent == 3);
  CHECK(child.duration == 8 * kLease);
  RFS_CONFORMANCE_REQUIRE_OK(w2->CompleteWorkItem(child));
  CHECK(Count(*w2) == 0);
}

// A worker dies right before `crash_before` (or never, for kCompleteParent + 1): whoever comes
// next must end with the parent complete and each successor existing exactly once.
inline void SuccessorCrashRecovery(const ConformanceEnv& env, int crash_before, bool same_worker) {
  const std::string parent = ItemId("orders", 4, 0);
  const std::vector<std::string> successors{ItemId("orders", 4, 100), ItemId("orders", 4, 200)};
  auto dying = Worker(env, "dying", nullptr, [crash_before](SuccessorStep step) {
    return static_cast<int>(step) == crash_before ? absl::UnavailableError("injected crash")
                                                  : absl::OkStatus();
  });
  auto other = Worker(env, "other");
  Create(*other, parent);
  const Lease lease = MustAcquire(dying->AcquireNextWorkItem(kLease));
  const absl::Status crashed = dying->CreateSuccessorsAndComplete(lease, successors, 2);
  CHECK(absl::IsUnavailable(crashed));
  const bool recorded = crash_before > static_cast<int>(SuccessorStep::kRecordSuccessors);
  CHECK(MustGet(*other, parent).successor_ids.empty() == !recorded);
  CHECK_FALSE(MustGet(*other, parent).completed());

  if (same_worker) {
    // The same worker (a fresh instance, as after a restart within its lease) retries the call.
    auto retry = Worker(env, "dying");
    RFS_CONFORMANCE_REQUIRE_OK(retry->CreateSuccessorsAndComplete(lease, successors, 2));
  } else {
    // The worker is gone; once its lease expires the next acquirer finishes the handoff (or,
    // if nothing was recorded, simply gets the parent again).
    env.clock->Set(lease.expires_at + env.expiry_slack);
    if (!recorded) {
      const Lease next = MustAcquire(other->AcquireNextWorkItem(kLease));
      CHECK(next.work_item_id == parent);
      CHECK(next.exponent == 1);
      CHECK(Count(*other) == 1);
      RFS_CONFORMANCE_REQUIRE_OK(other->CreateSuccessorsAndComplete(next, successors, 2));
    } else {
      // Acquisitions pick at random: the parent may come up only after successors that exist
      // already (crash before step 3). Either way it is handed off, never leased for work.
      for (int i = 0; i < 4; ++i) {
        AcquireOutcome o = Outcome(other->AcquireNextWorkItem(kLease));
        if (!std::holds_alternative<Acquired>(o)) break;
        const Lease& next = std::get<Acquired>(o).lease;
        CHECK(std::find(successors.begin(), successors.end(), next.work_item_id) !=
              successors.end());
        CHECK(next.exponent == 2);
      }
    }
    CHECK(IsLeaseLost(dying->CompleteWorkItem(lease)));
  }
  const WorkItemState done = MustGet(*other, parent);
  CHECK(done.completed());
  CHECK(done.successor_ids == successors);
  for (const auto& id : successors) {
    const WorkItemState s = MustGet(*other, id);
    CHECK_FALSE(s.completed());
    CHECK(s.successor_ids.empty());
  }
  CHECK(Count(*other) == 2);
  // Re-creating successors after the fact never duplicates or resets them.
  auto again = other->CreateUnassignedWorkItem(successors[0], 0);
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
}

// A parent with recorded successors, reached through AcquireWorkItem, is handed off too.
inline void SpecificAcquireFinishesHandoff(const ConformanceEnv& env) {
  const std::string parent = ItemId("orders", 5, 0);
  const std::vector<std::string> successors{ItemId("orders", 5, 77)};
  auto dying = Worker(env, "dying", nullptr, [](SuccessorStep step) {
    return step == SuccessorStep::kCreateSuccessors ? absl::UnavailableError("injected crash")
                                                    : absl::OkStatus();
  });
  auto other = Worker(env, "other");
  Create(*other, parent);
  const Lease lease = MustAcquire(dying->AcquireNextWorkItem(kLease));
  CHECK(absl::IsUnavailable(dying->CreateSuccessorsAndComplete(lease, successors, 1)));
  env.clock->Set(lease.expires_at + env.expiry_slack);
  CHECK(std::holds_alternative<AlreadyCompleted>(Outcome(other->AcquireWorkItem(parent, kLease))));
  CHECK(MustGet(*other, parent).completed());
  CHECK(MustGet(*other, successors[0]).next_lease_exponent == 1);
  CHECK(Count(*other) == 1);
}

// Random schedules over several workers and items; every grant is checked against the previous
// grant of the same item.
inline void RandomizedExclusivity(const ConformanceEnv& env, uint64_t seed) {
  constexpr int kWorkers = 5;
  constexpr int kItems = 8;
  constexpr Duration kShortLease = 60s;
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  std::vector<std::unique_ptr<IWorkCoordinator>> workers;
  for (int i = 0; i < kWorkers; ++i) workers.push_back(Worker(env, "r" + std::to_string(i)));
  std::set<std::string> created;
  for (int i = 0; i < kItems; ++i) {
    created.insert(ItemId("rand", i));
    Create(*workers[0], ItemId("rand", i));
  }
  std::map<std::string, Lease> last_grant;  // Item -> latest grant.
  std::set<std::string> completed;
  std::vector<std::vector<Lease>> held(kWorkers);
  auto on_grant = [&](const Lease& lease) {
    INFO("grant of " << lease.work_item_id << " to " << lease.worker_id);
    CHECK_FALSE(completed.contains(lease.work_item_id));
    auto prev = last_grant.find(lease.work_item_id);
    if (prev != last_grant.end()) {
      // The previous lease had surely expired (or was released) before this one began.
      CHECK(lease.generation > prev->second.generation);
      const WorkItemState state = MustGet(*workers[0], lease.work_item_id);
      CHECK(state.lease_generation == lease.generation);
      if (prev->second.worker_id != "released") {
        CHECK(prev->second.expires_at < lease.acquired_at);
      }
    }
    CHECK(lease.local_deadline() <= lease.expires_at);
    last_grant[lease.work_item_id] = lease;
  };
  for (int step = 0; step < 300; ++step) {
    const int w = pick(kWorkers);
    const int action = pick(10);
    if (action < 4) {
      AcquireOutcome o = Outcome(workers[w]->AcquireNextWorkItem(kShortLease));
      if (auto* a = std::get_if<Acquired>(&o)) {
        on_grant(a->lease);
        held[w].push_back(a->lease);
      }
    } else if (action < 6 && !held[w].empty()) {
      const Lease lease = held[w].back();
      held[w].pop_back();
      const absl::Status s = workers[w]->CompleteWorkItem(lease);
      const Lease& current = last_grant.at(lease.work_item_id);
      if (current.generation == lease.generation && current.worker_id == lease.worker_id) {
        RFS_CONFORMANCE_REQUIRE_OK(s);
        completed.insert(lease.work_item_id);
      } else {
        CHECK(IsLeaseLost(s));
      }
    } else if (action == 6 && !held[w].empty()) {
      const Lease lease = held[w].back();
      held[w].pop_back();
      auto parsed = WorkItemId::Parse(lease.work_item_id);
      REQUIRE(parsed.ok());
      const std::string next = parsed->WithCursor(parsed->starting_cursor + 10).ToString();
      const absl::Status s =
          workers[w]->CreateSuccessorsAndComplete(lease, std::vector<std::string>{next}, pick(3));
      const Lease& current = last_grant.at(lease.work_item_id);
      if (current.generation == lease.generation && current.worker_id == lease.worker_id) {
        RFS_CONFORMANCE_REQUIRE_OK(s);
        completed.insert(lease.work_item_id);
        created.insert(next);
      } else {
        CHECK(IsLeaseLost(s));
      }
    } else if (action == 7 && !held[w].empty()) {
      const Lease lease = held[w].back();
      held[w].pop_back();
      const absl::Status s = workers[w]->ReleaseWorkItem(lease);
      Lease& current = last_grant.at(lease.work_item_id);
      if (current.generation == lease.generation && current.worker_id == lease.worker_id) {
        RFS_CONFORMANCE_REQUIRE_OK(s);
        current.worker_id = "released";
      } else {
        CHECK(IsLeaseLost(s));
      }
    } else {
      env.clock->Advance(std::chrono::seconds(pick(90)));
    }
    if (step % 50 == 0) {
      CHECK(Count(*workers[0]) == static_cast<int64_t>(created.size() - completed.size()));
    }
  }
  CHECK(Count(*workers[0]) == static_cast<int64_t>(created.size() - completed.size()));
  // Drain: everything left completes.
  env.clock->Advance(24h);
  while (true) {
    AcquireOutcome o = Outcome(workers[0]->AcquireNextWorkItem(kShortLease));
    if (std::holds_alternative<NoAvailableWork>(o)) break;
    REQUIRE(std::holds_alternative<Acquired>(o));
    const Lease& lease = std::get<Acquired>(o).lease;
    on_grant(lease);
    RFS_CONFORMANCE_REQUIRE_OK(workers[0]->CompleteWorkItem(lease));
    completed.insert(lease.work_item_id);
  }
  CHECK(completed == created);
  CHECK(Count(*workers[0]) == 0);
}

inline void ConcurrentWorkers(const ConformanceEnv& env) {
  constexpr int kThreads = 8;
  constexpr int kItems = 40;
  std::vector<std::unique_ptr<IWorkCoordinator>> workers;
  for (int i = 0; i < kThreads; ++i) workers.push_back(Worker(env, "t" + std::to_string(i)));
  for (int i = 0; i < kItems; ++i) Create(*workers[0], ItemId("conc", i));
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> grants;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (true) {
        auto o = workers[t]->AcquireNextWorkItem(1h);
        if (!o.ok()) {
          std::lock_guard lock(mu);
          errors.push_back(o.status().ToString());
          return;
        }
        if (!std::holds_alternative<Acquired>(*o)) return;
        const Lease lease = std::get<Acquired>(*o).lease;
        {
          std::lock_guard lock(mu);
          grants[lease.work_item_id].push_back(lease.worker_id);
        }
        if (absl::Status s = workers[t]->CompleteWorkItem(lease); !s.ok()) {
          std::lock_guard lock(mu);
          errors.push_back(s.ToString());
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  INFO((errors.empty() ? "" : errors.front()));
  CHECK(errors.empty());
  CHECK(grants.size() == static_cast<size_t>(kItems));
  for (const auto& [id, holders] : grants) {
    INFO(id);
    CHECK(holders.size() == 1);  // Leases never expire here: one grant per item, ever.
  }
  CHECK(Count(*workers[0]) == 0);
}

inline void OneTimeSetup(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  auto w3 = Worker(env, "w3");
  // w1 takes the setup lease and dies without finishing.
  const Lease dead = MustAcquire(w1->AcquireWorkItem(kShardSetupWorkItemId, kLease));
  CHECK(dead.work_item_id == kShardSetupWorkItemId);
  CHECK(Count(*w1) == 1);
  int runs = 0;
  const TimePoint start = env.clock->Now();
  OneTimeSetupOptions options;
  options.initial_lease = kLease;
  options.initial_backoff = 1s;
  options.max_backoff = 2min;
  RFS_CONFORMANCE_REQUIRE_OK(RunOneTimeSetup(
      *w2, *env.clock, kShardSetupWorkItemId,
      [&](const Lease& lease) {
        ++runs;
        CHECK(lease.worker_id == "w2");
        CHECK(lease.exponent == 1);  // The second grant of the item.
        return absl::OkStatus();
      },
      options));
  CHECK(runs == 1);
  // w2 waited (with backoff, on the fake clock) until w1's lease ran out, and no longer than
  // one backoff step after it.
  CHECK(env.clock->Now() > dead.expires_at);
  CHECK(env.clock->Now() - start <= kLease + options.max_backoff + env.expiry_slack);
  // Everyone after that finds it done without running it.
  RFS_CONFORMANCE_REQUIRE_OK(
      RunOneTimeSetup(*w3, *env.clock, kShardSetupWorkItemId, [&](const Lease&) {
        ++runs;
        return absl::OkStatus();
      }));
  CHECK(runs == 1);
  CHECK(Count(*w3) == 0);

  // A failing setup gives the lease back, so the next worker retries at once.
  const std::string other = "index_setup";
  const absl::Status failed = RunOneTimeSetup(
      *w1, *env.clock, other, [](const Lease&) { return absl::UnavailableError("target down"); });
  CHECK(absl::IsUnavailable(failed));
  const TimePoint before_retry = env.clock->Now();
  RFS_CONFORMANCE_REQUIRE_OK(RunOneTimeSetup(*w2, *env.clock, other, [&](const Lease&) {
    ++runs;
    return absl::OkStatus();
  }));
  CHECK(runs == 2);
  CHECK(env.clock->Now() - before_retry < 1s);
}

inline void ClockGuard(const ConformanceEnv& env) {
  auto creator = Worker(env, "creator");
  Create(*creator, ItemId("clock", 0));
  OffsetClock ahead(*env.clock, 20s);
  OffsetClock behind(*env.clock, -20s);
  OffsetClock slightly(*env.clock, 10s);
  auto fast = Worker(env, "fast", &ahead);
  auto slow = Worker(env, "slow", &behind);
  CHECK(absl::IsFailedPrecondition(fast->AcquireNextWorkItem(kLease).status()));
  CHECK(absl::IsFailedPrecondition(slow->AcquireNextWorkItem(kLease).status()));
  CHECK(absl::IsFailedPrecondition(fast->AcquireWorkItem(ItemId("clock", 0), kLease).status()));
  CHECK(MustGet(*creator, ItemId("clock", 0)).lease_holder.empty());
  // Within the tolerance: fine, and the local deadline is on the worker's own clock.
  auto ok = Worker(env, "ok", &slightly);
  const Lease lease = MustAcquire(ok->AcquireNextWorkItem(kLease));
  CHECK(lease.local_deadline() - 10s <= lease.expires_at);
  CHECK(lease.local_deadline() - 10s >= lease.expires_at - env.expiry_slack);
}

inline void Counts(const ConformanceEnv& env) {
  auto w = Worker(env, "w");
  for (uint32_t i = 0; i < 5; ++i) Create(*w, ItemId("count", i));
  CHECK(Count(*w) == 5);
  for (int i = 0; i < 2; ++i) {
    RFS_CONFORMANCE_REQUIRE_OK(w->CompleteWorkItem(MustAcquire(w->AcquireNextWorkItem(kLease))));
  }
  CHECK(Count(*w) == 3);
  const Lease lease = MustAcquire(w->AcquireNextWorkItem(kLease));
  auto parsed = WorkItemId::Parse(lease.work_item_id);
  REQUIRE(parsed.ok());
  RFS_CONFORMANCE_REQUIRE_OK(
      w->CreateSuccessorsAndComplete(lease,
                                     std::vector<std::string>{parsed->WithCursor(10).ToString(),
                                                              parsed->WithCursor(20).ToString()},
                                     0));
  CHECK(Count(*w) == 4);  // 3 - the parent + 2 successors; leased items count too.
  const Lease leased = MustAcquire(w->AcquireNextWorkItem(kLease));
  CHECK(Count(*w) == 4);

  // A store that lists its items lists every one, in id order, as GetWorkItem reads it.
  auto listed = w->ListWorkItems();
  if (absl::IsUnimplemented(listed.status())) return;
  RFS_CONFORMANCE_REQUIRE_OK(listed.status());
  REQUIRE(listed->size() == 7);
  int completed = 0;
  for (size_t i = 0; i < listed->size(); ++i) {
    const WorkItemState& item = (*listed)[i];
    if (i > 0) CHECK((*listed)[i - 1].id < item.id);
    const WorkItemState read = MustGet(*w, item.id);
    CHECK(read.completed() == item.completed());
    CHECK(read.lease_holder == item.lease_holder);
    CHECK(read.lease_generation == item.lease_generation);
    CHECK(read.successor_ids == item.successor_ids);
    if (item.id == leased.work_item_id) CHECK(item.lease_holder == "w");
    completed += item.completed() ? 1 : 0;
  }
  CHECK(completed == 3);
}

inline void SetupDescriptions(const ConformanceEnv& env) {
  auto w1 = Worker(env, "w1");
  auto w2 = Worker(env, "w2");
  // Words no item id could hold (a comma), kept beside their hash.
  const std::string words = "snapshot 'snap, 1' (uuid abc), --split-shard-bytes 10";
  const uint64_t hash = SettingsHash(words);
  auto none = ReadSetupDescription(*w1, hash);
  RFS_CONFORMANCE_REQUIRE_OK(none.status());
  CHECK_FALSE(none->has_value());
  RFS_CONFORMANCE_REQUIRE_OK(RecordSetupDescription(*w1, *env.clock, hash, words, kLease));
  // The first to record a hash decides; the same call again changes nothing.
  RFS_CONFORMANCE_REQUIRE_OK(RecordSetupDescription(*w2, *env.clock, hash, "other", kLease));
  RFS_CONFORMANCE_REQUIRE_OK(RecordSetupDescription(*w1, *env.clock, hash, words, kLease));
  auto read = ReadSetupDescription(*w2, hash);
  RFS_CONFORMANCE_REQUIRE_OK(read.status());
  REQUIRE(read->has_value());
  CHECK(**read == words);
  // Long words are kept up to kMaxSetupDescriptionBytes.
  const std::string long_words(1000, 'x');
  RFS_CONFORMANCE_REQUIRE_OK(RecordSetupDescription(*w1, *env.clock, hash + 1, long_words, kLease));
  auto long_read = ReadSetupDescription(*w1, hash + 1);
  RFS_CONFORMANCE_REQUIRE_OK(long_read.status());
  REQUIRE(long_read->has_value());
  CHECK(**long_read == long_words.substr(0, kMaxSetupDescriptionBytes));
  // Records only: nothing is left to work on.
  CHECK(Count(*w1) == 0);
  auto next = w2->AcquireNextWorkItem(kLease);
  RFS_CONFORMANCE_REQUIRE_OK(next.status());
  CHECK(std::holds_alternative<NoAvailableWork>(*next));
}

}  // namespace detail

/// Runs the whole suite; see the file comment.
inline void RunWorkCoordinatorConformance(const ConformanceEnv& env) {
  using namespace detail;
  auto check = [&] {
    if (env.check_store) env.check_store();
  };
  SECTION("setup and creation are idempotent") {
    SetupAndCreation(env);
    check();
  }
  SECTION("acquisition leases each item to one worker and reports what is left") {
    AcquisitionAndOutcomes(env);
    check();
  }
  SECTION("leases expire and double") {
    LeasesExpireAndDouble(env);
    check();
  }
  SECTION("fixed leases do not lengthen the next grant") {
    FixedLeases(env);
    check();
  }
  SECTION("completion by a non-holder is refused") {
    CompletionRules(env);
    check();
  }
  SECTION("release hands the item back at once") {
    Release(env);
    check();
  }
  SECTION("heartbeats renew leases, record progress and keep moving items on short leases") {
    HeartbeatLeases(env);
    check();
  }
  SECTION("successors are recorded, created and the parent completed") {
    SuccessorsHappyPath(env);
    check();
  }
  for (int crash = 0; crash <= 2; ++crash) {
    for (bool same_worker : {true, false}) {
      DYNAMIC_SECTION("successor creation survives a crash before step "
                      << crash + 1 << (same_worker ? " (retry)" : " (takeover)")) {
        SuccessorCrashRecovery(env, crash, same_worker);
        check();
      }
    }
  }
  SECTION("a specific acquisition finishes a pending handoff") {
    SpecificAcquireFinishesHandoff(env);
    check();
  }
  for (uint64_t seed : {1, 2, 3}) {
    DYNAMIC_SECTION("random schedules never grant a held item (seed " << seed << ")") {
      RandomizedExclusivity(env, seed);
      check();
    }
  }
  if (env.threads) {
    SECTION("concurrent workers never share an item") {
      ConcurrentWorkers(env);
      check();
    }
  }
  SECTION("one-time setup runs once while the others back off") {
    OneTimeSetup(env);
    check();
  }
  SECTION("the clock guard refuses skewed workers") {
    ClockGuard(env);
    check();
  }
  SECTION("counts are right") {
    Counts(env);
    check();
  }
  SECTION("a setup description is kept in words beside its hash") {
    SetupDescriptions(env);
    check();
  }
}

}  // namespace rfs::coordination::conformance
