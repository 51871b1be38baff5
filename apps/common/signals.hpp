// Graceful stop on SIGTERM (Kubernetes scale-down, node drain) and SIGINT (Ctrl-C): the first
// signal sets a flag the library polls; a second one ends the process at once.
#pragma once

#include <atomic>
#include <chrono>

namespace rfs::apps {

/// The flag the first SIGTERM/SIGINT sets (lock-free, so a signal handler may store to it).
std::atomic<bool>& StopRequested();

/// Installs the handlers; returns the flag to pass to the library.
const std::atomic<bool>& InstallStopHandlers();

/// The last resort of a stop: once one is requested, if the process is still running `grace`
/// plus 10 s later (a transform looping where nothing can interrupt it), it ends with 128 +
/// SIGTERM. What the leases recorded stands; the next worker resumes from there.
void ExitIfStopOverruns(std::chrono::milliseconds grace);

}  // namespace rfs::apps
