// The command line of MigrationConsole: its usage text and options, and its three commands
// (serve, create-session, status) over the console library.
#pragma once

#include <boost/program_options.hpp>

namespace rfs::apps::console {

extern const char* const kUsage;

boost::program_options::options_description Options();

/// Each command: its options in, the tool's exit code out (messages on standard error).
int Serve(const boost::program_options::variables_map& vm);
int CreateSessionCommand(const boost::program_options::variables_map& vm);
int StatusCommand(const boost::program_options::variables_map& vm);

}  // namespace rfs::apps::console
