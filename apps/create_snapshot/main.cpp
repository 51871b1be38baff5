// CreateSnapshot: snapshot the SOURCE cluster into a repository rfs can read (a shared file
// system or S3), as the opensearch-migrations Java tool of the same name does: register the
// repository, start the snapshot, and wait for it while reporting progress.
#include <cstdio>
#include <iostream>
#include <string>

#include "rfs/core/str_cat.hpp"
#include "rfs/migration/tools.hpp"

#include "cli.hpp"
#include "common/connection.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
#include "common/text.hpp"
#include <unistd.h>

namespace {
constexpr const char* kProgram = "CreateSnapshot";
}  // namespace

int main(int raw_argc, char** raw_argv) {
  namespace cli = rfs::apps::create_snapshot;
  const auto options = cli::Options();
  auto line = rfs::apps::ArgumentList::Expand(raw_argc, raw_argv, options, kProgram);
  if (!line.ok()) return rfs::apps::UsageError(kProgram, line.status().message());
  const int argc = line->argc();
  char** argv = line->argv();
  boost::program_options::variables_map vm;
  if (auto done = rfs::apps::ParseCommandLine(argc, argv, 0, options, cli::kUsage, kProgram, vm))
    return *done;
  if (vm.count("otel-metrics-collector-endpoint")) {
    std::cerr << kProgram
              << ": warning: --otel-metrics-collector-endpoint is ignored: CreateSnapshot exports "
                 "no metrics\n";
  }
  rfs::apps::ApplyPlainHttpOption(vm, [](const std::string& warning) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  });
  auto run = cli::ToolOptions(vm);
  if (!run.ok()) return rfs::apps::UsageError(kProgram, run.status().message());
  for (const std::string& ignored : cli::IgnoredOptions(vm)) {
    std::cerr << kProgram << ": warning: " << ignored << "\n";
  }

  const std::string repository_name = run->repository_name;
  const std::string snapshot_name = run->snapshot.name;
  const std::string qualified = rfs::core::StrCat(repository_name, ":", snapshot_name);
  const bool no_wait = run->no_wait;
  rfs::apps::SnapshotProgressReporter reporter(repository_name, snapshot_name,
                                               isatty(STDERR_FILENO) == 1);
  run->wait.on_progress = [&](const rfs::opensearch::SnapshotProgress& p) {
    reporter.OnProgress(p);
  };
  const rfs::migration::CreateSnapshotToolResult result =
      rfs::migration::RunCreateSnapshot(*std::move(run));
  reporter.Finish();
  if (result.exit_code == rfs::core::kExitUsage) {
    return rfs::apps::UsageError(kProgram, result.status.message());
  }
  if (!result.status.ok()) {
    return rfs::apps::ReportFailure(kProgram, result.status, rfs::core::kExitFailure);
  }
  if (no_wait) {
    std::cout << "Snapshot " << qualified << " started on " << result.endpoint
              << " (not waiting; follow it with GET /_snapshot/" << repository_name << "/"
              << snapshot_name << "/_status)\n";
    return 0;
  }
  char summary[128];
  std::snprintf(summary, sizeof(summary), "%zu indices, %lld/%lld shards, in %.1f s",
                result.info->indices.size(), static_cast<long long>(result.info->shards_successful),
                static_cast<long long>(result.info->shards_total), result.elapsed.count());
  std::cout << "Snapshot " << qualified << " SUCCESS: " << summary << "\n";
  return 0;
}
