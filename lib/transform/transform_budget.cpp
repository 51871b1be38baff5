#include <condition_variable>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "rfs/core/status_payloads.hpp"
#include "rfs/core/str_cat.hpp"

#include "absl/strings/cord.h"
#include "transform_budget_internal.hpp"
#include <unistd.h>

namespace rfs::transform {

bool IsTransformBudgetExceeded(const absl::Status& status) {
  return status.GetPayload(core::payload::kTransformBudget).has_value();
}

namespace {

// ResourceExhausted with `message`, marked as over the budget named by `what`.
absl::Status OverBudget(std::string message, std::string_view what) {
  absl::Status status = absl::ResourceExhaustedError(std::move(message));
  status.SetPayload(core::payload::kTransformBudget, absl::Cord(std::string(what)));
  return status;
}

}  // namespace

absl::Status TooLargeToTransform(size_t source_bytes, size_t needed_bytes, size_t memory_bytes) {
  return OverBudget(
      core::StrCat("a _source of ", source_bytes, " bytes needs about ", needed_bytes >> 20,
                   " MiB to transform, over the transform's memory budget of ", memory_bytes >> 20,
                   " MiB"),
      "memory");
}

namespace internal {

using core::StrCat;

namespace {

// The process's resident set: what the kernel counts against a container's memory limit.
size_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int read = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (read != 2) return 0;
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

std::string Seconds(std::chrono::milliseconds d) {
  const auto ms = d.count();
  return ms % 1000 == 0 ? StrCat(ms / 1000, " s") : StrCat(ms, " ms");
}

}  // namespace

absl::Status BudgetExceeded(const TransformLimits& limits, std::string_view what) {
  return OverBudget(what == "time" ? StrCat("the transform ran past its time budget of ",
                                            Seconds(limits.time_per_call), " for one batch")
                                   : StrCat("the transform went over its memory budget of ",
                                            limits.memory_bytes >> 20, " MiB for one batch"),
                    what);
}

// Sleeps while no call runs; otherwise wakes every 20 ms to look at each.
class TransformWatchdog {
 public:
  static TransformWatchdog& Get() {
    static TransformWatchdog watchdog;
    return watchdog;
  }

  void Add(BudgetedCall* call) {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
    calls_.insert(call);
    wake_.notify_one();
  }
  void Remove(BudgetedCall* call) {
    std::lock_guard lock(mu_);
    calls_.erase(call);
    stop_noticed_.erase(call);
  }

  ~TransformWatchdog() {
    {
      std::lock_guard lock(mu_);
      exiting_ = true;
      wake_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    while (!exiting_) {
      if (calls_.empty()) {
        wake_.wait(lock, [&] { return exiting_ || !calls_.empty(); });
        continue;
      }
      wake_.wait_for(lock, std::chrono::milliseconds(20));
      const auto now = std::chrono::steady_clock::now();
      const size_t resident = ResidentBytes();
      for (BudgetedCall* call : calls_) {
        const TransformLimits& limits = call->limits_;
        if (limits.stop_requested != nullptr && limits.stop_requested->load()) {
          auto [at, fresh] = stop_noticed_.try_emplace(call, now);
          if (now - at->second >= limits.shutdown_grace) {
            call->Interrupt(absl::AbortedError(StrCat("stopped: the transform was still running ",
                                                      Seconds(limits.shutdown_grace),
                                                      " after the stop was requested")));
            continue;
          }
        }
        if (now - call->started_ >= limits.time_per_call) {
          call->Interrupt(BudgetExceeded(limits, "time"));
        } else if (resident > call->rss_at_start_ &&
                   resident - call->rss_at_start_ > limits.memory_bytes) {
          call->Interrupt(BudgetExceeded(limits, "memory"));
        }
      }
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::set<BudgetedCall*> calls_;
  std::map<BudgetedCall*, std::chrono::steady_clock::time_point> stop_noticed_;
  std::thread thread_;
  bool exiting_ = false;
};

BudgetedCall::BudgetedCall(const TransformLimits& limits, std::function<void()> interrupt)
    : limits_(limits),
      interrupt_(std::move(interrupt)),
      started_(std::chrono::steady_clock::now()),
      rss_at_start_(ResidentBytes()) {
  TransformWatchdog::Get().Add(this);
}

BudgetedCall::~BudgetedCall() { TransformWatchdog::Get().Remove(this); }

absl::Status BudgetedCall::verdict() const {
  std::lock_guard lock(mu_);
  return verdict_;
}

void BudgetedCall::ExceededMemory() {
  std::lock_guard lock(mu_);
  if (verdict_.ok()) verdict_ = BudgetExceeded(limits_, "memory");
}

void BudgetedCall::Interrupt(absl::Status why) {
  {
    std::lock_guard lock(mu_);
    if (interrupted_) return;
    interrupted_ = true;
    if (verdict_.ok()) verdict_ = std::move(why);
  }
  interrupt_();
}

}  // namespace internal
}  // namespace rfs::transform
