// The lease on the item a worker migrates (LeaseKeeper), a graceful stop's deadline
// (GracefulStop) and the renewal of a record's lease from a thread of its own while short work
// runs under it (HealthGuard): the workers' lease keeping, in a file of its own.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/reindex/document_reindexer.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::migration::internal {

// The lease on the item being migrated. The heartbeat (called from the reindexer's progress
// callback, in cursor order) renews it and records the acknowledged cursor; between heartbeats,
// progress reports record the cursor alone (RecordProgress) every `progress_interval`. The reader
// and the senders read its deadlines through atomics, once per document or request.
class LeaseKeeper {
 public:
  LeaseKeeper(coordination::IWorkCoordinator& coordinator, core::IClock& clock,
              const coordination::Lease& lease, std::chrono::milliseconds renewal_interval,
              coordination::ItemProgress recorded,
              std::chrono::milliseconds progress_interval = std::chrono::milliseconds(0))
      : coordinator_(coordinator),
        clock_(clock),
        lease_(lease),
        interval_(std::min<coordination::Duration>(renewal_interval, lease.duration / 4)),
        // Reports between heartbeats only: at least a second apart, and none without heartbeats
        // (the Java tool's model records nothing until the lease runs out).
        progress_interval_(
            interval_ > coordination::Duration::zero() &&
                    progress_interval > std::chrono::milliseconds(0)
                ? std::max<coordination::Duration>(progress_interval, std::chrono::seconds(1))
                : coordination::Duration::zero()),
        last_renewal_(),
        recorded_(recorded),
        acknowledged_(recorded) {
    Publish();
  }

  core::IClock::TimePoint deadline() const { return FromNanos(deadline_.load()); }
  core::IClock::TimePoint checkpoint_at() const { return FromNanos(checkpoint_at_.load()); }
  coordination::Lease lease() const {
    std::lock_guard lock(mu_);
    return lease_;
  }
  /// Base (recorded before this grant) plus what this worker has had acknowledged.
  coordination::ItemProgress acknowledged() const {
    std::lock_guard lock(mu_);
    return acknowledged_;
  }
  uint64_t renewals() const { return renewals_.load(); }
  /// Progress reports between heartbeats that the store recorded.
  uint64_t progress_reports() const { return progress_reports_.load(); }

  /// The acknowledged prefix grew to `acked` (counted from this grant's start). Renews when the
  /// interval has passed. Aborted when the lease is lost or over.
  absl::Status OnAcknowledged(const reindex::AcknowledgedProgress& acked);
  /// While requests wait out a transient failure (a blocked index, 429s) with no document
  /// acknowledged: renews the lease once per renewal interval, recording the progress as it is
  /// (a lease that ends without progress still doubles the next one). Aborted when the lease is
  /// lost or over; a transient store failure waits for the next call.
  absl::Status KeepAlive();
  bool lost() const {
    std::lock_guard lock(mu_);
    return lost_;
  }
  /// What became of this grant's documents besides acceptance: recorded with the final progress
  /// (earlier holders' outcomes come with the lease).
  void SetOutcomes(const coordination::ItemOutcomes& outcomes) {
    std::lock_guard lock(mu_);
    acknowledged_.outcomes = recorded_.outcomes;
    acknowledged_.outcomes += outcomes;
  }

  /// Records the acknowledged progress if the store does not hold it yet, so that a completed
  /// item shows every document it moved (progress reports sum what items record). Best effort:
  /// only a lost lease is an error (the completion would fail on it too).
  absl::Status RecordFinalProgress();

 private:
  // Records the acknowledged progress and restarts the lease; a lost lease marks it lost.
  absl::Status RenewLocked();
  // A heartbeat's renewal at `now`: true when renewed, false when the store failed in passing
  // and the lease still runs (the next heartbeat tries again); Aborted when the lease is lost or
  // over.
  absl::StatusOr<bool> HeartbeatLocked(core::IClock::TimePoint now);
  // Between heartbeats: records the acknowledged progress when a report is due.
  absl::Status MaybeReportLocked(core::IClock::TimePoint now);

  absl::Status Expired() const {
    return absl::AbortedError(
        core::StrCat("the lease on ", lease_.work_item_id, " expired before the item finished"));
  }
  static int64_t ToNanos(core::IClock::TimePoint t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  static core::IClock::TimePoint FromNanos(int64_t n) {
    return core::IClock::TimePoint(
        std::chrono::duration_cast<core::IClock::TimePoint::duration>(std::chrono::nanoseconds(n)));
  }
  void Publish() {
    deadline_.store(ToNanos(lease_.local_deadline()));
    checkpoint_at_.store(ToNanos(lease_.early_checkpoint_at()));
  }

  coordination::IWorkCoordinator& coordinator_;
  core::IClock& clock_;
  mutable std::mutex mu_;
  coordination::Lease lease_;
  const coordination::Duration interval_;
  coordination::Duration progress_interval_;  // zero: none (or the store has no RecordProgress)
  std::optional<core::IClock::TimePoint> last_renewal_;
  core::IClock::TimePoint last_report_{};  // the last renewal or progress report
  const coordination::ItemProgress recorded_;
  coordination::ItemProgress acknowledged_;
  coordination::ItemProgress recorded_now_ = recorded_;  // what the store holds
  bool lost_ = false;
  std::atomic<int64_t> deadline_{0};
  std::atomic<int64_t> checkpoint_at_{0};
  std::atomic<uint64_t> renewals_{0};
  std::atomic<uint64_t> progress_reports_{0};
};

// A graceful stop: noticed once, then in-flight work has `timeout` to finish.
class GracefulStop {
 public:
  GracefulStop(const std::atomic<bool>* requested, core::IClock& clock,
               std::chrono::milliseconds timeout)
      : requested_(requested), clock_(clock), timeout_(timeout) {}

  bool requested() const { return requested_ != nullptr && requested_->load(); }
  /// When sending must end: never before a stop is requested, `timeout` after it is noticed.
  std::optional<core::IClock::TimePoint> deadline() {
    if (!requested()) return std::nullopt;
    std::lock_guard lock(mu_);
    if (!noticed_) noticed_ = clock_.Now();
    return *noticed_ + timeout_;
  }

 private:
  const std::atomic<bool>* requested_;
  core::IClock& clock_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::optional<core::IClock::TimePoint> noticed_;
};

// Renews a record's lease while its work runs; reports a lost or expired lease once.
class HealthGuard {
 public:
  HealthGuard(coordination::IWorkCoordinator& records, core::IClock& clock,
              coordination::Lease lease, std::function<void(const std::string&)> on_lost,
              coordination::ItemProgress progress)
      : records_(records),
        clock_(clock),
        lease_(std::move(lease)),
        on_lost_(std::move(on_lost)),
        progress_(progress) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~HealthGuard() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  coordination::Lease lease() const {
    std::lock_guard lock(mu_);
    return lease_;
  }

 private:
  void Loop();

  coordination::IWorkCoordinator& records_;
  core::IClock& clock_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  coordination::Lease lease_;
  bool done_ = false;
  std::function<void(const std::string&)> on_lost_;
  const coordination::ItemProgress progress_;
  std::thread thread_;
};

}  // namespace rfs::migration::internal
