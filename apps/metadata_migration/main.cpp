// MetadataMigration: moves the templates and index definitions of a snapshot to a target, with
// the option names of the Java tool of opensearch-migrations.
//
//   MetadataMigration evaluate|migrate --snapshot-local-dir DIR [--snapshot-name NAME]
//                     (--target-host URL | --output-dir DIR | --target-version V) [options]
#include <iostream>
#include <string>

#include <boost/json.hpp>

#include "rfs/core/json_text.hpp"
#include "rfs/migration/tools.hpp"

#include "cli.hpp"
#include "common/connection.hpp"
#include "common/options.hpp"

namespace {

namespace json = boost::json;
constexpr const char* kProgram = "MetadataMigration";

// Prints an error in the chosen output form and returns `code`.
int Error(bool json_output, const std::string& message, int code) {
  std::cerr << kProgram << ": " << message << "\n";
  if (json_output) {
    std::cout << rfs::core::JsonText(json::object{{"ok", false}, {"error", message}}) << "\n";
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = rfs::apps::metadata;
  const auto options = cli::Options();
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << cli::kUsage << "\n" << options << "\n";
    return 0;
  }
  if (command.empty()) {
    return rfs::apps::UsageError(kProgram, "a command is required: evaluate or migrate");
  }
  boost::program_options::variables_map vm;
  // argv[1] (the command) stands where the parser expects the program name.
  if (auto done = rfs::apps::ParseCommandLine(argc, argv, 1, options, cli::kUsage, kProgram, vm))
    return *done;
  rfs::apps::ApplyPlainHttpOption(vm, [](const std::string& warning) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  });
  auto line = cli::ParseCommand(command, vm);
  if (!line.ok()) return rfs::apps::UsageError(kProgram, line.status().message());

  const bool json_output = line->json_output;
  const rfs::migration::MetadataToolResult result =
      line->solr ? rfs::migration::RunSolrMetadataMigration(std::move(line->run), *line->solr)
                 : rfs::migration::RunMetadataMigration(std::move(line->run));
  if (result.exit_code == rfs::core::kExitUsage) {
    return rfs::apps::UsageError(kProgram, result.status.message());
  }
  if (!result.status.ok())
    return Error(json_output, std::string(result.status.message()), result.exit_code);
  if (json_output) {
    std::cout << rfs::core::JsonText(result.report->ToJson(/*with_bodies=*/true)) << "\n";
  } else {
    std::cout << result.report->ToText();
  }
  return result.exit_code;
}
