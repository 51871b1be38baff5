// IWorkCoordinator: many identical workers, any of which may die at any instant, share a pool of
// work items (one per shard range to migrate) through a coordination store, so that every item is
// completed at least once and progress survives deaths.
//
// The model is the RFS design's (opensearch-migrations `IWorkCoordinator`): a worker acquires an
// item under a lease; nobody else may acquire it until the lease expires or the item completes;
// each acquisition doubles the next lease (initial x 2^exponent), so an item that keeps killing
// its workers gets ever longer to finish (records used as locks take fixed leases instead). A
// worker that cannot finish in time checkpoints early: it creates successor items (the same shard
// from a later cursor) and completes its item, in three idempotent steps that any later holder of
// the item finishes if the worker dies part-way.
//
// Times. A lease's expiry is a time on the *store's* clock (the SQLite host's, or the OpenSearch
// cluster's), because workers on different hosts compare it. Each lease also carries the
// worker-clock deadline by which the holder must stop writing; it is computed conservatively from
// the uncertainty of the store-time estimate, so that a holder always stops before anyone else can
// take the item over. A clock guard refuses acquisitions when the worker's clock is more than
// `max_clock_skew` (15 s) off the store's.
//
// Expected alternatives are values, not errors (STYLE 2.4): acquisition returns an AcquireOutcome
// variant. Errors follow the rfs error model: Aborted/FailedPrecondition mean the caller's lease is
// lost (stop writing, drop the item), Unavailable/DeadlineExceeded/ResourceExhausted are transient
// (retry with backoff), InvalidArgument is a caller bug, NotFound a missing item or store.
//
// Thread safety: every IWorkCoordinator method may be called concurrently. One instance stands for
// one worker (one worker id); run several workers by opening several instances, in one process or
// many. The value types and free functions here are plain values / pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "rfs/core/clock.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::coordination {

using TimePoint = core::IClock::TimePoint;
using Duration = core::IClock::Duration;

// ---------------------------------------------------------------------------------------------
// Work item ids
// ---------------------------------------------------------------------------------------------

/// The id of the one-time "shard setup" item (the Java tool's name): whoever leases it creates
/// the shard work items while the other workers wait.
inline constexpr std::string_view kShardSetupWorkItemId = "shard_setup";

/// The bookkeeping items a document migration keeps beside its shard items, created completed:
/// what the store was set up for (a hash of the snapshot and the settings that shape the items,
/// kept as the item's recorded progress), and one item per selection of indices set up in it
/// (kSetupIndicesPrefix + a hash of the index names). They never parse as WorkItemIds.
inline constexpr std::string_view kSetupForWorkItemId = "setup_for";
inline constexpr std::string_view kSetupIndicesPrefix = "setup_indices__";
/// A trial run's record: "setup_trial__<documents per shard at most>" (a console shows it).
inline constexpr std::string_view kSetupTrialPrefix = "setup_trial__";
/// What a store was set up for in words, beside its hash (RecordSetupDescription).
inline constexpr std::string_view kSetupDescribedPrefix = "setup_described__";
inline constexpr std::string_view kSetupDescriptionPrefix = "setup_description__";

/// True for kShardSetupWorkItemId and the setup records: items that are not shard ranges.
inline bool IsBookkeepingItem(std::string_view id) {
  return id == kShardSetupWorkItemId || id == kSetupForWorkItemId ||
         id.starts_with(kSetupIndicesPrefix) || id.starts_with(kSetupTrialPrefix) ||
         id.starts_with(kSetupDescribedPrefix) || id.starts_with(kSetupDescriptionPrefix);
}

/// The longest id a store accepts (OpenSearch limits `_id` to 512 bytes).
inline constexpr size_t kMaxWorkItemIdLength = 512;

/// One shard range to migrate: documents of `shard` of `index_name` from shard-global document
/// number `starting_cursor` on, up to `ending_cursor` (exclusive) for the parts of a shard split
/// among several workers, else to the shard's end. Its string form, the store's key, is
/// base64url-without-padding(index name) "__" shard "__" starting cursor, then "-" ending cursor
/// for a part (decimal); encoding the index name keeps the "__" separators unambiguous whatever
/// characters the name holds, and a '-' never precedes the last digits of an unsplit id.
struct WorkItemId {
  std::string index_name;
  uint32_t shard = 0;
  uint64_t starting_cursor = 0;
  std::optional<uint64_t> ending_cursor;

  std::string ToString() const;
  /// InvalidArgument unless `id` is exactly the format ToString() writes.
  static absl::StatusOr<WorkItemId> Parse(std::string_view id);
  /// Parse, for ids whose index name is UTF-8: what a JSON answer or request may quote (an id's
  /// base64url name may decode to any bytes). nullopt for any other id.
  static std::optional<WorkItemId> ParseForJson(std::string_view id);
  /// The same range from a later cursor: the id of a checkpoint successor (a part keeps its end).
  WorkItemId WithCursor(uint64_t cursor) const {
    return {index_name, shard, cursor, ending_cursor};
  }

  friend bool operator==(const WorkItemId&, const WorkItemId&) = default;
};

/// OK when `id` can name a work item in every store: 1 to kMaxWorkItemIdLength bytes, none of them
/// a ',' (successor lists are comma-separated) or a control character.
absl::Status ValidateWorkItemId(std::string_view id);

// ---------------------------------------------------------------------------------------------
// Lease policy (RFS design: lease backoff, early checkpoint, clock guard)
// ---------------------------------------------------------------------------------------------

/// Exponents above this lease no longer (2^10 x the initial lease), as in the Java tool.
inline constexpr int kMaxLeaseExponent = 10;
/// No lease is longer than this, whatever the exponent.
inline constexpr Duration kMaxLeaseDuration = std::chrono::hours(24 * 7);
/// The clock guard's default tolerance between a worker's clock and the store's.
inline constexpr Duration kDefaultMaxClockSkew = std::chrono::seconds(15);

/// initial_lease x 2^exponent, the exponent clamped to [0, kMaxLeaseExponent] and the result to
/// kMaxLeaseDuration.
Duration LeaseDurationFor(Duration initial_lease, int exponent);

/// How long after acquiring a lease of `lease` the holder should checkpoint (create a successor
/// from its current cursor and complete): max(0.75 x lease, lease - 4 min 30 s). Long leases keep a
/// fixed 4.5-minute margin for the checkpoint itself; short ones keep a quarter of the lease.
Duration EarlyCheckpointDelay(Duration lease);

/// The lease exponent to give a successor of an item leased at `lease_exponent` for `lease`, when
/// the holder spent `setup_time` of it on setup (downloading and opening the shard) before its
/// first document: setup under 2.5% of the lease means leases are more than long enough (one less,
/// never below 0); over 10% means setup eats too much of it (one more); otherwise the same.
int SuccessorLeaseExponent(int lease_exponent, Duration setup_time, Duration lease);

/// The clock guard: FailedPrecondition when `worker_now` and `store_now` are more than
/// `tolerance` apart (a worker with a wrong clock would misjudge its lease).
absl::Status CheckClockSkew(TimePoint worker_now, TimePoint store_now,
                            Duration tolerance = kDefaultMaxClockSkew);

/// True for the codes that mean "your lease is gone: stop writing and drop the item".
inline bool IsLeaseLost(const absl::Status& status) {
  return absl::IsAborted(status) || absl::IsFailedPrecondition(status);
}

// ---------------------------------------------------------------------------------------------
// Leases, outcomes, item state
// ---------------------------------------------------------------------------------------------

/// What became of an item's documents besides being accepted, over all its holders: the
/// per-index account a console shows. Only the console keeps it (its work-item side table); the
/// other stores record the cursor, documents and bytes alone.
struct ItemOutcomes {
  uint64_t rejected = 0;           ///< refused by the target after retries
  uint64_t not_convertible = 0;    ///< no `_source`, undecodable, refused by a data stream
  uint64_t transform_failed = 0;   ///< a user transform failed on them
  uint64_t transform_dropped = 0;  ///< a user transform dropped them, as configured
  uint64_t rebuilt = 0;            ///< rebuilt without a stored `_source`
  uint64_t rebuilt_inexact = 0;    ///< of those, with a value that may differ from the indexed one
  /// --preserve-version: the target holds them in an equal or higher version, left as they are
  /// there (not a failure).
  uint64_t already_newer = 0;

  /// The documents recorded as failed (rejected, not convertible, failed by a transform).
  uint64_t failed() const { return rejected + not_convertible + transform_failed; }
  bool any() const { return *this != ItemOutcomes{}; }
  ItemOutcomes& operator+=(const ItemOutcomes& other) {
    rejected += other.rejected;
    not_convertible += other.not_convertible;
    transform_failed += other.transform_failed;
    transform_dropped += other.transform_dropped;
    rebuilt += other.rebuilt;
    rebuilt_inexact += other.rebuilt_inexact;
    already_newer += other.already_newer;
    return *this;
  }
  friend bool operator==(const ItemOutcomes&, const ItemOutcomes&) = default;
};

/// ItemOutcomes' counts by the names the console's API and status give them.
inline constexpr std::pair<std::string_view, uint64_t ItemOutcomes::*> kItemOutcomeFields[] = {
    {"rejected", &ItemOutcomes::rejected},
    {"not_convertible", &ItemOutcomes::not_convertible},
    {"transform_failed", &ItemOutcomes::transform_failed},
    {"transform_dropped", &ItemOutcomes::transform_dropped},
    {"rebuilt", &ItemOutcomes::rebuilt},
    {"rebuilt_inexact", &ItemOutcomes::rebuilt_inexact},
    {"already_newer", &ItemOutcomes::already_newer},
};

/// What the holder of an item has done so far, recorded in the store by RenewLease (the heartbeat)
/// and ReleaseWorkItem, so that the next holder resumes where it stopped.
struct ItemProgress {
  ItemProgress() = default;
  ItemProgress(uint64_t next_cursor, uint64_t docs, uint64_t bytes, ItemOutcomes outcomes = {})
      : next_cursor(next_cursor), docs(docs), bytes(bytes), outcomes(outcomes) {}

  /// The first position not yet acknowledged: the next holder starts reading here. For shard
  /// items, a shard-global document number (after the item's starting cursor).
  uint64_t next_cursor = 0;
  /// Documents and `_source` bytes acknowledged under this item, over all its holders.
  uint64_t docs = 0;
  uint64_t bytes = 0;
  /// Recorded when the holder ends its part (completion, hand-on, release).
  ItemOutcomes outcomes;

  friend bool operator==(const ItemProgress&, const ItemProgress&) = default;
};

/// A lease on one work item, as granted to one worker.
struct Lease {
  std::string work_item_id;
  std::string worker_id;
  /// The exponent this lease was granted at: duration = LeaseDurationFor(initial, exponent).
  int exponent = 0;
  Duration duration{0};
  /// On the store's clock: when the lease began and when others may take the item over.
  TimePoint acquired_at;
  TimePoint expires_at;
  /// On the worker's clock: the conservative start of the lease. The holder must stop writing by
  /// local_deadline() and should checkpoint at early_checkpoint_at().
  TimePoint local_start;
  /// Identifies this grant among all grants of the item (it grows with every acquisition; a
  /// renewal keeps it).
  int64_t generation = 0;
  /// The progress recorded on the item when it was granted (by earlier holders' heartbeats):
  /// resume from its next_cursor. nullopt when none was recorded.
  std::optional<ItemProgress> recorded_progress;

  TimePoint local_deadline() const {
    return local_start + std::chrono::duration_cast<TimePoint::duration>(duration);
  }
  TimePoint early_checkpoint_at() const {
    return local_start +
           std::chrono::duration_cast<TimePoint::duration>(EarlyCheckpointDelay(duration));
  }
};

/// The worker now holds `lease`.
struct Acquired {
  Lease lease;
};
/// Every work item is complete: nothing is left to do.
struct NoAvailableWork {};
/// The specific item asked for is complete.
struct AlreadyCompleted {};
/// Incomplete items exist but other workers hold all of them (or the specific one asked for).
struct AllLeasedElsewhere {
  /// The earliest expiry among those leases, on the store's clock.
  TimePoint earliest_expiry;
  /// Worker-clock time from now after which that lease has surely expired.
  Duration retry_after{0};
};
using AcquireOutcome =
    std::variant<Acquired, NoAvailableWork, AlreadyCompleted, AllLeasedElsewhere>;

/// A snapshot of one item's record in the store (for inspection, tests and tools).
struct WorkItemState {
  std::string id;
  /// The exponent the next acquisition will lease at.
  int next_lease_exponent = 0;
  /// The worker of the latest grant; empty if never leased or released.
  std::string lease_holder;
  /// Store-clock expiry of the latest grant; the epoch if never leased or released.
  TimePoint lease_expires_at{};
  int64_t lease_generation = 0;
  std::optional<TimePoint> completed_at;
  /// Recorded by step 1 of CreateSuccessorsAndComplete; empty otherwise.
  std::vector<std::string> successor_ids;
  int successor_lease_exponent = 0;
  std::string creator_id;
  /// The latest progress recorded by a holder (RenewLease, ReleaseWorkItem) and when, on the
  /// store's clock.
  std::optional<ItemProgress> progress;
  TimePoint progress_at{};

  bool completed() const { return completed_at.has_value(); }
};

// ---------------------------------------------------------------------------------------------
// The interface
// ---------------------------------------------------------------------------------------------

/// The steps of CreateSuccessorsAndComplete, in order (for the test hook below).
enum class SuccessorStep { kRecordSuccessors, kCreateSuccessors, kCompleteParent };

/// Options every backend takes.
struct WorkCoordinatorOptions {
  /// Unique per worker process run (e.g. host + pid + start time); required.
  std::string worker_id;
  /// The worker's clock; nullptr means core::SystemClock. Must outlive the coordinator.
  core::IClock* clock = nullptr;
  /// The clock guard's tolerance.
  Duration max_clock_skew = kDefaultMaxClockSkew;
  /// Called with every lease granted to this worker, including the grants an acquisition takes
  /// internally to finish another worker's handoff (never for a lease merely handed back again).
  /// For audit logs and metrics; must be thread-safe and must not call the coordinator.
  std::function<void(const Lease&)> lease_observer;
  /// Test hook: called before each step of CreateSuccessorsAndComplete; a non-OK status stops the
  /// call right there and is returned, as if the worker had died between two steps.
  std::function<absl::Status(SuccessorStep)> successor_step_hook;
};

class IWorkCoordinator {
 public:
  virtual ~IWorkCoordinator() = default;

  virtual const std::string& worker_id() const = 0;

  /// Creates the store's schema (tables, index with mappings) if missing. Idempotent and safe to
  /// call from many workers at once; call it before anything else.
  virtual absl::Status Setup() = 0;

  /// Creates an unassigned, incomplete item whose first lease will be at `lease_exponent`. True if
  /// this call created it, false if it already existed (left untouched). InvalidArgument for a bad
  /// id (ValidateWorkItemId).
  virtual absl::StatusOr<bool> CreateUnassignedWorkItem(std::string_view id,
                                                        int lease_exponent) = 0;

  /// Leases an incomplete item whose lease has expired (or never began), picked at random among the
  /// available ones (or a backend-defined subset of them) so that concurrent workers rarely
  /// collide. The lease lasts
  /// LeaseDurationFor(initial_lease, the item's exponent), and the item's exponent grows by one.
  /// An item found with recorded successors (its holder died mid-checkpoint) is handed off first:
  /// its successors are created and it is completed, then the search goes on.
  /// Returns Acquired, NoAvailableWork (everything complete) or AllLeasedElsewhere. The clock guard
  /// may fail it with FailedPrecondition. Blocks for store round trips.
  virtual absl::StatusOr<AcquireOutcome> AcquireNextWorkItem(Duration initial_lease) = 0;

  /// Leases the item `id`, creating it first if it does not exist (for one-off items such as
  /// kShardSetupWorkItemId). Returns Acquired (also when this worker already holds a live lease on
  /// it: that lease again), AlreadyCompleted, or AllLeasedElsewhere with that lease's expiry.
  virtual absl::StatusOr<AcquireOutcome> AcquireWorkItem(std::string_view id,
                                                         Duration initial_lease) = 0;

  /// Leases the item `id` as AcquireWorkItem does, but for exactly `lease`, and the grant leaves
  /// the next one's lease as short: for records used as locks or written once (an index's tuning
  /// lock, a completed record), where a holder's death says nothing about how long the next
  /// holder needs. (A doubling grant there would make every later wait twice as long.) The
  /// item's exponent is reset to 0. A worker that already holds a live lease on the item gets that
  /// lease back, whatever its length. A store that cannot tell the grants apart leases as
  /// AcquireWorkItem does (the console's client makes up for a console from before
  /// `lease_growth`).
  virtual absl::StatusOr<AcquireOutcome> AcquireFixedLease(std::string_view id, Duration lease) {
    return AcquireWorkItem(id, lease);
  }

  /// Marks the leased item complete; it is never leased again. Only the holder of `lease` may:
  /// FailedPrecondition once another grant has replaced it (the lease was lost). A lease that
  /// merely expired, with nobody having taken the item over, still completes it. Idempotent for
  /// the holder.
  virtual absl::Status CompleteWorkItem(const Lease& lease) = 0;

  /// Checkpoints: (1) records `successor_ids` (and their exponent) on the leased item, (2) creates
  /// them as unassigned items, (3) completes the leased item. Each step is idempotent, so the call
  /// may be retried after any failure; if the worker dies after step 1, the next worker to acquire
  /// the item finishes steps 2 and 3. FailedPrecondition if the lease was lost; InvalidArgument if
  /// the ids are invalid, include the item itself, or differ from successors already recorded.
  virtual absl::Status CreateSuccessorsAndComplete(const Lease& lease,
                                                   std::span<const std::string> successor_ids,
                                                   int successor_lease_exponent) = 0;

  /// The heartbeat: records `progress` on the leased item and restarts its lease (the same
  /// duration, from now on the store's clock). When `progress` moves past the progress recorded
  /// before, the exponent this grant added is taken back, so an item that keeps moving keeps
  /// short leases; the doubling stays for grants that end without progress. Returns the renewed
  /// lease (same generation, new expiry and local deadline). FailedPrecondition if the lease was
  /// lost (another grant replaced it) or the item is complete. A lease that merely expired, with
  /// nobody having taken the item over, may still be renewed.
  virtual absl::StatusOr<Lease> RenewLease(const Lease& lease, const ItemProgress& progress) = 0;

  /// Records `progress` on the leased item like RenewLease, but leaves the lease as it is (its
  /// expiry and local deadline): progress reports between heartbeats, so that a progress report
  /// reads a steady rate. FailedPrecondition as RenewLease; Unimplemented for a store without it
  /// (the holder then reports progress only with its renewals).
  virtual absl::Status RecordProgress(const Lease& lease, const ItemProgress& progress) {
    (void)lease;
    (void)progress;
    return absl::UnimplementedError(
        "this work-coordination store records progress only on renewal");
  }

  /// Gives the leased item back before its lease ends (e.g. on a graceful shutdown or an error):
  /// it becomes available at once, and the exponent this lease added is taken back. With
  /// `progress`, records it first, so the next holder resumes there. FailedPrecondition if the
  /// lease was already lost; OK if the item is already released or complete by this lease.
  virtual absl::Status ReleaseWorkItem(const Lease& lease,
                                       std::optional<ItemProgress> progress) = 0;
  absl::Status ReleaseWorkItem(const Lease& lease) { return ReleaseWorkItem(lease, std::nullopt); }

  /// The number of items not yet complete, leased or not (the shard-setup item included until it
  /// completes). Exact: reflects every write acknowledged before the call.
  virtual absl::StatusOr<int64_t> CountIncompleteWorkItems() = 0;

  /// The item's record, or nullopt if there is no such item.
  virtual absl::StatusOr<std::optional<WorkItemState>> GetWorkItem(std::string_view id) = 0;

  /// Every item's record, in id order (for progress reports: the console's status). Stores that
  /// cannot list cheaply (the OpenSearch index) return Unimplemented.
  virtual absl::StatusOr<std::vector<WorkItemState>> ListWorkItems() {
    return absl::UnimplementedError("this work-coordination store cannot list its items");
  }

  /// The store's current time, as this worker estimates it (midpoint of the uncertainty interval).
  virtual absl::StatusOr<TimePoint> StoreNow() = 0;
};

// ---------------------------------------------------------------------------------------------
// One-time setup under its own lease
// ---------------------------------------------------------------------------------------------

struct OneTimeSetupOptions {
  /// The lease for the setup item (doubled on every re-acquisition, as for any item).
  Duration initial_lease = std::chrono::minutes(10);
  /// Waiting workers poll with exponential backoff from `initial_backoff` up to `max_backoff`,
  /// never sleeping past the holder's expiry.
  Duration initial_backoff = std::chrono::milliseconds(500);
  Duration max_backoff = std::chrono::seconds(30);
};

/// Runs `setup` exactly once across all workers, under the lease of item `item_id` (normally
/// kShardSetupWorkItemId): the worker that leases the item runs it and completes the item; the
/// others wait with backoff on `clock` until the item is complete, and take over if the holder's
/// lease expires. Returns OK once the item is complete (whoever ran it). If `setup` fails, the
/// lease is released and its status returned. `setup` receives the lease and must finish before
/// lease.local_deadline().
absl::Status RunOneTimeSetup(IWorkCoordinator& coordinator, core::IClock& clock,
                             std::string_view item_id,
                             const std::function<absl::Status(const Lease&)>& setup,
                             const OneTimeSetupOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Records: completed items that say something by existing (and by a recorded number)
// ---------------------------------------------------------------------------------------------

/// Creates `id` as a completed item whose recorded progress holds `value` (next_cursor), unless
/// it is complete already: idempotent, and the first worker to record it decides the value.
/// Waits (on `clock`) while another worker holds it; its grants are fixed (AcquireFixedLease), so a
/// writer killed part-way does not lengthen the next one's. Callers that acquire items at random
/// must give such items back (IsBookkeepingItem) rather than complete them.
absl::Status RecordCompletedItem(IWorkCoordinator& coordinator, core::IClock& clock,
                                 std::string_view id, Duration lease, uint64_t value = 0);

/// 52 bits of the SHA-256 of `text`: a value every store keeps exactly (JSON numbers, SQLite,
/// PostgreSQL), for RecordCompletedItem.
uint64_t SettingsHash(std::string_view text);

/// Keeps `description` (the text whose SettingsHash is `hash`, at most kMaxSetupDescriptionBytes
/// of it) in the store, so that a run refused for other settings can be told what the store was
/// set up for, not only that it differs. Every store keeps item ids and successor lists, and
/// nothing else of text: the completed record kSetupDescribedPrefix + hash names as its successor
/// the completed record kSetupDescriptionPrefix + base64url(description). Idempotent; the first
/// worker to record a hash decides; one that finds the record held by another leaves it to it.
absl::Status RecordSetupDescription(IWorkCoordinator& coordinator, core::IClock& clock,
                                    uint64_t hash, std::string_view description, Duration lease);
inline constexpr size_t kMaxSetupDescriptionBytes = 360;  // base64url and prefix within 512

/// The description recorded for `hash`; nullopt when there is none (a store an rfs without these
/// records set up, or a worker that died in between).
absl::StatusOr<std::optional<std::string>> ReadSetupDescription(IWorkCoordinator& coordinator,
                                                                uint64_t hash);

}  // namespace rfs::coordination
