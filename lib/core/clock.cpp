#include "rfs/core/clock.hpp"

#include <thread>

#include <time.h>

namespace rfs::core {

IClock::TimePoint SystemClock::CoarseNow() const {
  timespec now{};
  if (::clock_gettime(CLOCK_REALTIME_COARSE, &now) != 0) return Now();
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(
      std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec)));
}

void SystemClock::SleepFor(Duration duration) {
  if (duration > Duration::zero()) std::this_thread::sleep_for(duration);
}

SystemClock& SystemClock::Instance() {
  static SystemClock clock;
  return clock;
}

}  // namespace rfs::core
