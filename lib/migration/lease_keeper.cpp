#include <utility>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "migration/lease_keeper_internal.hpp"

namespace rfs::migration::internal {

absl::Status LeaseKeeper::OnAcknowledged(const reindex::AcknowledgedProgress& acked) {
  std::lock_guard lock(mu_);
  acknowledged_.next_cursor = acked.cursor + 1;
  acknowledged_.docs = recorded_.docs + acked.docs;
  acknowledged_.bytes = recorded_.bytes + acked.bytes;
  const auto now = clock_.Now();
  // The first acknowledgment renews at once: it marks the item as moving (its exponent is taken
  // back) before a death can double the next lease; then one renewal per interval.
  if (interval_ <= coordination::Duration::zero() ||
      (last_renewal_ && now - *last_renewal_ < interval_)) {
    if (now >= lease_.local_deadline()) return Expired();
    return MaybeReportLocked(now);
  }
  RFS_ASSIGN_OR_RETURN(const bool renewed, HeartbeatLocked(now));
  if (renewed) last_renewal_ = now;
  return absl::OkStatus();
}

absl::Status LeaseKeeper::KeepAlive() {
  std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  if (lost_) {
    return absl::AbortedError(core::StrCat("lease on ", lease_.work_item_id, " lost"));
  }
  // A renewal restarts the lease at local_start: at most one per interval, whoever renewed.
  if (interval_ <= coordination::Duration::zero() || now - lease_.local_start < interval_) {
    return absl::OkStatus();
  }
  return HeartbeatLocked(now).status();
}

absl::StatusOr<bool> LeaseKeeper::HeartbeatLocked(core::IClock::TimePoint now) {
  absl::Status renewed = RenewLocked();
  if (renewed.ok()) {
    last_report_ = now;
    return true;
  }
  if (coordination::IsLeaseLost(renewed)) {
    return absl::AbortedError(
        core::StrCat("lease on ", lease_.work_item_id, " lost: ", renewed.message()));
  }
  // A transient store failure: keep going on the current lease and try again next time.
  if (now >= lease_.local_deadline()) return Expired();
  return false;
}

absl::Status LeaseKeeper::MaybeReportLocked(core::IClock::TimePoint now) {
  if (progress_interval_ <= coordination::Duration::zero() ||
      now - last_report_ < progress_interval_ || acknowledged_ == recorded_now_) {
    return absl::OkStatus();
  }
  // A failed report waits for the next interval too: the store is not asked again at once.
  last_report_ = now;
  absl::Status reported = coordinator_.RecordProgress(lease_, acknowledged_);
  if (reported.ok()) {
    recorded_now_ = acknowledged_;
    progress_reports_.fetch_add(1);
    return absl::OkStatus();
  }
  if (absl::IsUnimplemented(reported)) {
    progress_interval_ = coordination::Duration::zero();  // only with the heartbeats, then
    return absl::OkStatus();
  }
  if (coordination::IsLeaseLost(reported)) {
    lost_ = true;
    return absl::AbortedError(
        core::StrCat("lease on ", lease_.work_item_id, " lost: ", reported.message()));
  }
  return absl::OkStatus();  // transient: the next report or heartbeat records it
}

absl::Status LeaseKeeper::RecordFinalProgress() {
  std::lock_guard lock(mu_);
  if (acknowledged_ == recorded_now_ || clock_.Now() >= lease_.local_deadline()) {
    return absl::OkStatus();
  }
  absl::Status renewed = RenewLocked();
  return coordination::IsLeaseLost(renewed) ? renewed : absl::OkStatus();
}

absl::Status LeaseKeeper::RenewLocked() {
  auto renewed = coordinator_.RenewLease(lease_, acknowledged_);
  if (!renewed.ok()) {
    if (coordination::IsLeaseLost(renewed.status())) lost_ = true;
    return renewed.status();
  }
  lease_ = *std::move(renewed);
  recorded_now_ = acknowledged_;
  renewals_.fetch_add(1);
  Publish();
  return absl::OkStatus();
}

void HealthGuard::Loop() {
  std::unique_lock lock(mu_);
  while (!done_) {
    const auto interval =
        std::chrono::duration_cast<std::chrono::milliseconds>(lease_.duration / 4);
    wake_.wait_for(lock, std::max(interval, std::chrono::milliseconds(10)), [&] { return done_; });
    if (done_) return;
    coordination::Lease current = lease_;
    lock.unlock();
    auto renewed = records_.RenewLease(current, progress_);
    lock.lock();
    if (renewed.ok()) {
      lease_ = *std::move(renewed);
      continue;
    }
    if (coordination::IsLeaseLost(renewed.status()) || clock_.Now() >= current.local_deadline()) {
      const std::string reason = core::StrCat("the lease on record ", current.work_item_id,
                                              " is lost: ", renewed.status().message());
      done_ = true;
      lock.unlock();
      if (on_lost_) on_lost_(reason);
      return;
    }
  }
}

}  // namespace rfs::migration::internal
