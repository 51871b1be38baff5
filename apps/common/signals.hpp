// Graceful stop on SIGTERM (Kubernetes scale-down, node drain) and SIGINT (Ctrl-C): the first
// signal sets a flag the library polls; a second one ends the process at once.
#pragma once

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include <unistd.h>

namespace rfs::apps {

/// The flag the first SIGTERM/SIGINT sets (lock-free, so a signal handler may store to it).
inline std::atomic<bool>& StopRequested() {
  static std::atomic<bool> requested{false};
  static_assert(std::atomic<bool>::is_always_lock_free);
  return requested;
}

/// Installs the handlers; returns the flag to pass to the library.
inline const std::atomic<bool>& InstallStopHandlers() {
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

/// The last resort of a stop: once one is requested, if the process is still running `grace`
/// plus 10 s later (a transform looping where nothing can interrupt it), it ends with 128 +
/// SIGTERM. What the leases recorded stands; the next worker resumes from there.
inline void ExitIfStopOverruns(std::chrono::milliseconds grace) {
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
