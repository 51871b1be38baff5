#include "signals.hpp"

#include <csignal>
#include <thread>

#include <unistd.h>

namespace rfs::apps {

std::atomic<bool>& StopRequested() {
  static std::atomic<bool> requested{false};
  static_assert(std::atomic<bool>::is_always_lock_free);
  return requested;
}

const std::atomic<bool>& InstallStopHandlers() {
  struct sigaction action {};
  action.sa_handler = [](int signal) {
    if (StopRequested().exchange(true)) _exit(128 + signal);  // The second signal: now.
    static constexpr char kNote[] =
        "stopping: finishing in-flight requests and recording the cursor (signal again to exit "
        "at once)\n";
    [[maybe_unused]] auto written = write(STDERR_FILENO, kNote, sizeof(kNote) - 1);
  };
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  return StopRequested();
}

void ExitIfStopOverruns(std::chrono::milliseconds grace) {
  std::thread([grace] {
    while (!StopRequested().load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::this_thread::sleep_for(grace + std::chrono::seconds(10));
    static constexpr char kNote[] =
        "stopping: the shutdown timeout has passed and work is still running; exiting now\n";
    [[maybe_unused]] auto written = write(STDERR_FILENO, kNote, sizeof(kNote) - 1);
    _exit(128 + SIGTERM);
  }).detach();
}

}  // namespace rfs::apps
