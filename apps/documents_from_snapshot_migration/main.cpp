// DocumentsFromSnapshotMigration: one worker of a fleet that moves every live document of a
// snapshot into a target, reading each shard's Lucene files in place. Start as many as you like,
// anywhere that sees the repository and the coordination store; each takes shards under a lease
// and exits with the Java tool's codes.
#include <iostream>
#include <string>

#include "rfs/migration/tools.hpp"

#include "cli.hpp"
#include "common/connection.hpp"
#include "common/document_options.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
#include "common/signals.hpp"
#include "common/text.hpp"
#include <unistd.h>

namespace {
constexpr const char* kProgram = "DocumentsFromSnapshotMigration";
}  // namespace

int main(int raw_argc, char** raw_argv) {
  // First: a pod may be told to stop while it is still starting.
  const std::atomic<bool>& stop_requested = rfs::apps::InstallStopHandlers();
  namespace cli = rfs::apps::documents;
  const auto options = rfs::apps::DocumentOptions();
  auto line = rfs::apps::ArgumentList::Expand(raw_argc, raw_argv, options, kProgram);
  if (!line.ok()) return rfs::apps::UsageError(kProgram, line.status().message());
  const int argc = line->argc();
  char** argv = line->argv();
  boost::program_options::variables_map vm;
  if (auto done = rfs::apps::ParseCommandLine(argc, argv, 0, options, cli::kUsage, kProgram, vm))
    return *done;
  rfs::apps::ApplyPlainHttpOption(vm, [](const std::string& warning) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  });
  auto run = rfs::apps::DocumentsToolOptionsFrom(vm);
  if (!run.ok()) return rfs::apps::UsageError(kProgram, run.status().message());

  run->migration.stop_requested = &stop_requested;
  rfs::apps::ExitIfStopOverruns(run->migration.shutdown_timeout);
  rfs::apps::WorkerProgress progress(run->worker_id, isatty(STDERR_FILENO) == 1);
  run->migration.on_event = [&](const rfs::migration::WorkerEvent& e) { progress.OnEvent(e); };
  run->on_redrive_progress = [](const std::string& line) {
    std::cerr << kProgram << ": " << line << "\n";
  };
  run->on_warning = [](const std::string& warning) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  };
  run->on_tuning = [](const std::string& kind, const std::string& index, const std::string& what) {
    std::cerr << kProgram << ": index " << index << " " << kind << ": " << what << "\n";
  };
  const rfs::migration::DocumentsToolResult result =
      rfs::migration::RunDocumentsFromSnapshotMigration(*std::move(run));
  if (!result.redrive && result.exit_code != rfs::core::kExitUsage) {
    progress.Account(result.summary, result.status.ok());
  }
  progress.Finish();
  if (result.exit_code == rfs::core::kExitUsage) {
    return rfs::apps::UsageError(kProgram, result.status.message());
  }
  rfs::apps::PrintWorkerSummary(kProgram, result);
  if (!result.status.ok())
    return rfs::apps::ReportFailure(kProgram, result.status, result.exit_code);
  return result.exit_code;
}
