// RfsWorker: one process that runs the whole migration (snapshot, templates, indices,
// documents, verification), any number of copies at once, any of which may die. See
// rfs/migration/rfs_worker.hpp for the phases and records, cli.hpp for the options.
#include <csignal>
#include <iostream>
#include <string>

#include "rfs/migration/rfs_worker.hpp"

#include "common/connection.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
#include "common/signals.hpp"
#include "rfs_worker/cli.hpp"
#include <unistd.h>

namespace {
constexpr const char* kProgram = "RfsWorker";
}  // namespace

int main(int raw_argc, char** raw_argv) {
  const std::atomic<bool>& stop_requested = rfs::apps::InstallStopHandlers();
  const auto options = rfs::apps::worker::Options();
  auto line = rfs::apps::ArgumentList::Expand(raw_argc, raw_argv, options, kProgram);
  if (!line.ok()) return rfs::apps::UsageError(kProgram, line.status().message());
  const int argc = line->argc();
  char** argv = line->argv();
  boost::program_options::variables_map vm;
  if (auto done = rfs::apps::ParseCommandLine(argc, argv, 0, options, rfs::apps::worker::kUsage,
                                              kProgram, vm)) {
    return *done;
  }
  rfs::apps::ApplyPlainHttpOption(vm, [](const std::string& warning) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  });
  auto run = rfs::apps::worker::WorkerOptions(vm);
  if (!run.ok()) return rfs::apps::UsageError(kProgram, run.status().message());
  const bool live = isatty(STDERR_FILENO) == 1;
  const std::string worker_id = run->documents.worker_id.empty() ? rfs::migration::DefaultWorkerId()
                                                                 : run->documents.worker_id;
  run->documents.worker_id = worker_id;
  run->documents.migration.stop_requested = &stop_requested;
  rfs::apps::ExitIfStopOverruns(run->documents.migration.shutdown_timeout);
  rfs::apps::WorkerProgress progress(worker_id, live);
  run->documents.migration.on_event = [&](const rfs::migration::WorkerEvent& e) {
    progress.OnEvent(e);
  };
  run->on_event = rfs::apps::worker::EventPrinter(worker_id, live);
  if (std::getenv("RFS_TEST_KILL_BEFORE_SETTINGS_RESTORE") != nullptr) {
    // A test hook: the worker dies between an index's last bulk and the restore of its settings.
    run->documents.before_settings_restore = [](const std::string&) { ::raise(SIGKILL); };
  }
  run->on_lease_lost = [](const std::string& reason) {
    // The library stops the work under the lost lease itself (its requests are refused from
    // here) and ends the run with exit 2.
    std::cerr << kProgram << ": " << reason << "; stopping\n";
  };
  const bool verify_only = run->verify_only;
  const bool restore_only = run->restore_target_settings;
  const uint64_t trial_limit = run->documents.migration.max_docs_per_shard;
  const std::string trial_prefix = run->documents.migration.target_index_prefix;
  rfs::migration::RfsWorkerResult result = rfs::migration::RunWorker(*std::move(run));
  if (result.exit_code != rfs::core::kExitUsage) {
    progress.Account(result.documents, result.status.ok());
  }
  progress.Finish();
  if (result.exit_code == rfs::core::kExitUsage) {
    return rfs::apps::UsageError(kProgram, result.status.message());
  }
  if (restore_only) {
    // No phase ran: the outcome of the restore alone.
    if (result.status.ok()) {
      std::cout << "target settings restored: no index is left tuned\n";
    } else {
      std::cerr << kProgram << ": " << result.status.message() << "\n";
    }
    return result.exit_code;
  }
  rfs::apps::worker::PrintResult(result, verify_only, trial_limit, trial_prefix);
  return result.exit_code;
}
