#include "rfs/coordination/retrying_work_coordinator.hpp"

#include <algorithm>

#include "rfs/core/retry.hpp"

namespace rfs::coordination {

RetryingWorkCoordinator::RetryingWorkCoordinator(IWorkCoordinator& inner, core::IClock& clock,
                                                 CoordinatorRetryPolicy policy)
    : inner_(inner),
      clock_(clock),
      policy_(policy),
      backoff_(policy.initial_backoff, policy.max_backoff) {}

template <typename Call>
auto RetryingWorkCoordinator::Retry(Call&& call) -> decltype(call()) {
  return core::RetryTransient(clock_, backoff_, {.max_attempts = std::max(1, policy_.max_attempts)},
                              std::forward<Call>(call));
}

absl::Status RetryingWorkCoordinator::Setup() {
  return Retry([&] { return inner_.Setup(); });
}
absl::StatusOr<bool> RetryingWorkCoordinator::CreateUnassignedWorkItem(std::string_view id,
                                                                       int lease_exponent) {
  return Retry([&] { return inner_.CreateUnassignedWorkItem(id, lease_exponent); });
}
absl::StatusOr<AcquireOutcome> RetryingWorkCoordinator::AcquireNextWorkItem(
    Duration initial_lease) {
  return Retry([&] { return inner_.AcquireNextWorkItem(initial_lease); });
}
absl::StatusOr<AcquireOutcome> RetryingWorkCoordinator::AcquireWorkItem(std::string_view id,
                                                                        Duration initial_lease) {
  return Retry([&] { return inner_.AcquireWorkItem(id, initial_lease); });
}
absl::StatusOr<AcquireOutcome> RetryingWorkCoordinator::AcquireFixedLease(std::string_view id,
                                                                          Duration lease) {
  return Retry([&] { return inner_.AcquireFixedLease(id, lease); });
}
absl::Status RetryingWorkCoordinator::CompleteWorkItem(const Lease& lease) {
  return Retry([&] { return inner_.CompleteWorkItem(lease); });
}
absl::Status RetryingWorkCoordinator::CreateSuccessorsAndComplete(
    const Lease& lease, std::span<const std::string> successor_ids, int successor_lease_exponent) {
  return Retry([&] {
    return inner_.CreateSuccessorsAndComplete(lease, successor_ids, successor_lease_exponent);
  });
}
absl::StatusOr<Lease> RetryingWorkCoordinator::RenewLease(const Lease& lease,
                                                          const ItemProgress& progress) {
  return Retry([&] { return inner_.RenewLease(lease, progress); });
}
absl::Status RetryingWorkCoordinator::RecordProgress(const Lease& lease,
                                                     const ItemProgress& progress) {
  return Retry([&] { return inner_.RecordProgress(lease, progress); });
}
absl::Status RetryingWorkCoordinator::ReleaseWorkItem(const Lease& lease,
                                                      std::optional<ItemProgress> progress) {
  return Retry([&] { return inner_.ReleaseWorkItem(lease, progress); });
}
absl::StatusOr<int64_t> RetryingWorkCoordinator::CountIncompleteWorkItems() {
  return Retry([&] { return inner_.CountIncompleteWorkItems(); });
}
absl::StatusOr<std::optional<WorkItemState>> RetryingWorkCoordinator::GetWorkItem(
    std::string_view id) {
  return Retry([&] { return inner_.GetWorkItem(id); });
}

absl::StatusOr<std::vector<WorkItemState>> RetryingWorkCoordinator::ListWorkItems() {
  return Retry([&] { return inner_.ListWorkItems(); });
}
absl::StatusOr<TimePoint> RetryingWorkCoordinator::StoreNow() {
  return Retry([&] { return inner_.StoreNow(); });
}

}  // namespace rfs::coordination
