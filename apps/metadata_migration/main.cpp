// MetadataMigration: moves the templates and index definitions of a snapshot to a target, with
// the option names of the Java tool of opensearch-migrations.
//
//   MetadataMigration evaluate|migrate (--snapshot-local-dir DIR [--snapshot-name NAME] |
//                     --source-host URL)
//                     (--target-host URL | --output-dir DIR | --target-version V) [options]
#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

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

// The Java tool takes its global options (--otel-*) before the command:
// `MetadataMigration --otel-metrics-collector-endpoint URL migrate ...`. The command (the first
// word that is neither an option nor an option's value) goes first here, the rest keeps its
// order.
std::vector<char*> CommandFirst(int argc, char** argv,
                                const boost::program_options::options_description& options) {
  std::vector<char*> args(argv, argv + argc);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("-")) {
      std::rotate(args.begin() + 1, args.begin() + i, args.begin() + i + 1);
      break;
    }
    if (arg == "--help" || arg == "-h") break;
    if (arg.find('=') == std::string_view::npos && rfs::apps::OptionTakesValue(options, arg)) {
      ++i;  // its value
    }
  }
  return args;
}

}  // namespace

int main(int raw_argc, char** raw_argv) {
  namespace cli = rfs::apps::metadata;
  const auto options = cli::Options();
  auto words = rfs::apps::ArgumentList::Expand(raw_argc, raw_argv, options, kProgram,
                                               {"evaluate", "migrate"});
  if (!words.ok()) return rfs::apps::UsageError(kProgram, words.status().message());
  const int argc = words->argc();
  std::vector<char*> args = CommandFirst(argc, words->argv(), options);
  char** argv = args.data();
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << cli::kUsage << "\n" << options << "\n";
    return 0;
  }
  // No word but options: the first is no command (and not echoed: it may hold a password).
  if (command.empty() || command.starts_with("-")) {
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
  for (const std::string& warning : line->warnings) {
    std::cerr << kProgram << ": warning: " << warning << "\n";
  }
  if (vm.count("otel-metrics-collector-endpoint")) {
    std::cerr << kProgram
              << ": warning: --otel-metrics-collector-endpoint is ignored: MetadataMigration "
                 "exports no metrics\n";
  }
  // Opened before any work, so that a path that cannot be written stops the run at once.
  std::ofstream output_file;
  if (!line->output_file.empty()) {
    output_file.open(line->output_file, std::ios::binary | std::ios::trunc);
    if (!output_file) {
      return rfs::apps::UsageError(kProgram, "--output-file: cannot write " + line->output_file);
    }
  }
  // The output on stdout, and in the --output-file when there is one.
  auto emit = [&](const std::string& text) {
    std::cout << text;
    if (output_file.is_open()) output_file << text;
  };

  const bool json_output = line->json_output;
  const rfs::migration::MetadataToolResult result =
      line->solr ? rfs::migration::RunSolrMetadataMigration(std::move(line->run), *line->solr)
                 : rfs::migration::RunMetadataMigration(std::move(line->run));
  if (!result.status.ok() && output_file.is_open()) {
    // The file says why the run failed, in the form asked for, rather than staying empty.
    const std::string message(result.status.message());
    output_file << (json_output
                        ? rfs::core::JsonText(json::object{{"ok", false}, {"error", message}})
                        : std::string(kProgram) + ": " + message)
                << "\n";
  }
  if (result.exit_code == rfs::core::kExitUsage) {
    return rfs::apps::UsageError(kProgram, result.status.message());
  }
  if (!result.status.ok()) {
    return Error(json_output, std::string(result.status.message()), result.exit_code);
  }
  if (json_output) {
    emit(rfs::core::JsonText(result.report->ToJson(/*with_bodies=*/true)) + "\n");
  } else {
    emit(result.report->ToText());
  }
  if (output_file.is_open()) output_file.close();
  if (!line->output_file.empty() && output_file.fail()) {
    std::cerr << kProgram << ": --output-file: writing " << line->output_file << " failed\n";
    return rfs::core::kExitFailure;
  }
  return result.exit_code;
}
