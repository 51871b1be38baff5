// MigrationConsole: the work-coordination service workers lease shards from, with a live
// progress page, and the commands that talk to it (cli.hpp).
//
//   MigrationConsole serve --port P [--store sqlite:PATH | postgresql://...] [--admin-token T]
//                          [--metrics-port M]
//   MigrationConsole create-session --url URL --name S [--admin-token T]
//   MigrationConsole status --url URL --session S [--token T] [--json] [--watch SECONDS]
#include <iostream>
#include <string>

#include "common/options.hpp"
#include "migration_console/cli.hpp"

namespace {
constexpr const char* kProgram = "MigrationConsole";
}  // namespace

int main(int argc, char** argv) {
  const auto options = rfs::apps::console::Options();
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << rfs::apps::console::kUsage << "\n" << options << "\n";
    return 0;
  }
  if (command != "serve" && command != "create-session" && command != "status") {
    return rfs::apps::UsageError(
        kProgram, command.empty() ? "a command is required: serve, create-session or status"
                                  : "unknown command '" + command + "'");
  }
  boost::program_options::variables_map vm;
  if (auto done = rfs::apps::ParseCommandLine(argc, argv, 1, options, rfs::apps::console::kUsage,
                                              kProgram, vm)) {
    return *done;
  }
  if (command == "serve") return rfs::apps::console::Serve(vm);
  if (command == "create-session") return rfs::apps::console::CreateSessionCommand(vm);
  return rfs::apps::console::StatusCommand(vm);
}
