// IClock: the time source for leases, backoff and progress reporting.
//
// Code that waits or compares times takes an IClock& so tests can substitute
// FakeClock and run lease expiry or exponential backoff deterministically,
// without sleeping. Implementations are thread-safe.
#pragma once

#include <chrono>
#include <mutex>

namespace rfs::core {

class IClock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  using Duration = std::chrono::nanoseconds;

  virtual ~IClock() = default;
  /// Wall-clock time (leases are compared with the coordination store's wall
  /// clock).
  virtual TimePoint Now() const = 0;
  /// Now() give or take a few milliseconds, for checks made once per document, where reading
  /// the precise clock each time shows in profiles. Defaults to Now().
  virtual TimePoint CoarseNow() const { return Now(); }
  /// Blocks the calling thread for `duration` (a fake clock advances instead).
  virtual void SleepFor(Duration duration) = 0;
  void SleepUntil(TimePoint deadline) {
    const TimePoint now = Now();
    if (deadline > now) SleepFor(deadline - now);
  }
};

/// The real clock. Stateless; `Instance()` is shared process-wide.
class SystemClock final : public IClock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
  /// The kernel's last timer tick (CLOCK_REALTIME_COARSE): no hardware counter is read.
  TimePoint CoarseNow() const override;
  void SleepFor(Duration duration) override;
  static SystemClock& Instance();
};

/// A clock that only moves when told to. SleepFor advances it by the requested
/// duration (so code under test that sleeps never blocks) and records the total
/// slept time.
class FakeClock final : public IClock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{} + std::chrono::hours(24 * 365 * 50))
      : now_(start) {}

  TimePoint Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  void SleepFor(Duration duration) override {
    std::lock_guard lock(mu_);
    if (duration > Duration::zero()) {
      now_ += std::chrono::duration_cast<TimePoint::duration>(duration);
      slept_ += duration;
    }
  }
  void Advance(Duration duration) {
    std::lock_guard lock(mu_);
    now_ += std::chrono::duration_cast<TimePoint::duration>(duration);
  }
  void Set(TimePoint time) {
    std::lock_guard lock(mu_);
    now_ = time;
  }
  /// Sum of all durations passed to SleepFor.
  Duration total_slept() const {
    std::lock_guard lock(mu_);
    return slept_;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_;
  Duration slept_{0};
};

}  // namespace rfs::core
