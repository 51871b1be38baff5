// Option parsing shared by the rfs tools: kebab-case options on the command line, each also
// settable through an RFS_-prefixed environment variable (RFS_SNAPSHOT_LOCAL_DIR for
// --snapshot-local-dir); the command line wins.
#pragma once

#include <algorithm>
#include <cctype>
#include <iostream>
#include <string>

#include <boost/program_options.hpp>

namespace rfs::apps {

namespace po = boost::program_options;

/// "RFS_SNAPSHOT_LOCAL_DIR" -> "snapshot-local-dir" when that option exists, else "".
inline std::string EnvironmentToOption(const po::options_description& options,
                                       const std::string& variable) {
  if (variable.rfind("RFS_", 0) != 0) return "";
  std::string name = variable.substr(4);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
    return c == '_' ? '-' : static_cast<char>(std::tolower(c));
  });
  return options.find_nothrow(name, false) != nullptr ? name : "";
}

/// Parses argv (from `first`) then the environment into `vm`. Returns false after printing the
/// error and a hint when the options are invalid.
inline bool ParseOptions(int argc, char** argv, int first, const po::options_description& options,
                         po::variables_map& vm, const char* program) {
  try {
    po::store(po::command_line_parser(argc - first, argv + first).options(options).run(), vm);
    po::store(po::parse_environment(options,
                                    [&](const std::string& variable) {
                                      return EnvironmentToOption(options, variable);
                                    }),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\nTry '" << program << " --help'.\n";
    return false;
  }
  return true;
}

}  // namespace rfs::apps
