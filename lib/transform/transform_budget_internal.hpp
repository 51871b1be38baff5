// A call of a user program (jq, JavaScript) under TransformLimits: one process-wide watchdog
// thread looks at every running call about every 20 ms and interrupts those past their time, past
// a stop's grace period, or whose process grew by more than their memory bound since they began.
#pragma once

#include <functional>
#include <mutex>

#include "rfs/core/status_payloads.hpp"
#include "rfs/transform/json_transformer.hpp"

#include "absl/status/status.h"

namespace rfs::transform::internal {

class BudgetedCall {
 public:
  /// Registers the call; `interrupt` is run (on the watchdog's thread, at most once, never after
  /// this object is destroyed) to make the program stop as soon as it can.
  BudgetedCall(const TransformLimits& limits, std::function<void()> interrupt);
  ~BudgetedCall();
  BudgetedCall(const BudgetedCall&) = delete;
  BudgetedCall& operator=(const BudgetedCall&) = delete;

  /// OK while the call is within its limits; otherwise why it was interrupted (ResourceExhausted
  /// with core::payload::kTransformBudget, or Aborted for a stop).
  absl::Status verdict() const;
  /// Marks the call as over its memory bound from the calling thread (a program's own allocator
  /// or output counter noticed first).
  void ExceededMemory();

 private:
  friend class TransformWatchdog;
  void Interrupt(absl::Status why);  // with the watchdog's lock held

  const TransformLimits limits_;
  std::function<void()> interrupt_;
  std::chrono::steady_clock::time_point started_;
  size_t rss_at_start_ = 0;
  mutable std::mutex mu_;
  absl::Status verdict_;
  bool interrupted_ = false;
};

/// The budget error for `what` ("time", "memory").
absl::Status BudgetExceeded(const TransformLimits& limits, std::string_view what);

}  // namespace rfs::transform::internal
