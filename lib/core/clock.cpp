#include "rfs/core/clock.hpp"

#include <thread>

namespace rfs::core {

void SystemClock::SleepFor(Duration duration) {
  if (duration > Duration::zero()) std::this_thread::sleep_for(duration);
}

SystemClock& SystemClock::Instance() {
  static SystemClock clock;
  return clock;
}

}  // namespace rfs::core
