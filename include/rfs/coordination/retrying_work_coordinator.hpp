// RetryingWorkCoordinator: an IWorkCoordinator that retries the calls of another one while they
// fail with a transient code (Unavailable, DeadlineExceeded, ResourceExhausted: a 429 or 503 from
// the cluster, a reset connection, a busy SQLite file), with exponential backoff and jitter.
//
// Every IWorkCoordinator call may be retried: the protocol is idempotent by design (a grant whose
// response was lost is found again by the next acquisition; completion, successors and release
// are idempotent for the holder; CreateUnassignedWorkItem then reports false for an item its first
// attempt created). Lease-lost and caller errors are returned at once.
//
// Thread safety: as the wrapped coordinator (the jitter source is locked).
#pragma once

#include <chrono>
#include <mutex>
#include <random>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/backoff.hpp"
#include "rfs/core/clock.hpp"

namespace rfs::coordination {

struct CoordinatorRetryPolicy {
  /// Attempts per call, the first included.
  int max_attempts = 8;
  Duration initial_backoff = std::chrono::milliseconds(250);
  Duration max_backoff = std::chrono::seconds(8);
};

class RetryingWorkCoordinator final : public IWorkCoordinator {
 public:
  /// `inner` and `clock` must outlive this object; backoff sleeps on `clock`.
  RetryingWorkCoordinator(IWorkCoordinator& inner, core::IClock& clock,
                          CoordinatorRetryPolicy policy = {});

  const std::string& worker_id() const override { return inner_.worker_id(); }
  absl::Status Setup() override;
  absl::StatusOr<bool> CreateUnassignedWorkItem(std::string_view id, int lease_exponent) override;
  absl::StatusOr<AcquireOutcome> AcquireNextWorkItem(Duration initial_lease) override;
  absl::StatusOr<AcquireOutcome> AcquireWorkItem(std::string_view id,
                                                 Duration initial_lease) override;
  absl::StatusOr<AcquireOutcome> AcquireFixedLease(std::string_view id, Duration lease) override;
  absl::Status CompleteWorkItem(const Lease& lease) override;
  absl::Status CreateSuccessorsAndComplete(const Lease& lease,
                                           std::span<const std::string> successor_ids,
                                           int successor_lease_exponent) override;
  absl::StatusOr<Lease> RenewLease(const Lease& lease, const ItemProgress& progress) override;
  absl::Status RecordProgress(const Lease& lease, const ItemProgress& progress) override;
  absl::Status ReleaseWorkItem(const Lease& lease, std::optional<ItemProgress> progress) override;
  using IWorkCoordinator::ReleaseWorkItem;
  absl::StatusOr<int64_t> CountIncompleteWorkItems() override;
  absl::StatusOr<std::optional<WorkItemState>> GetWorkItem(std::string_view id) override;
  absl::StatusOr<std::vector<WorkItemState>> ListWorkItems() override;
  absl::StatusOr<TimePoint> StoreNow() override;

 private:
  template <typename Call>
  auto Retry(Call&& call) -> decltype(call());

  IWorkCoordinator& inner_;
  core::IClock& clock_;
  const CoordinatorRetryPolicy policy_;
  core::ExponentialBackoff backoff_;
};

}  // namespace rfs::coordination
