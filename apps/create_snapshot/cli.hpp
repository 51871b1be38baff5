// The command line of CreateSnapshot: its usage text, its options (the Java tool's names) and
// their conversion into the library's CreateSnapshotToolOptions.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "rfs/migration/tools.hpp"

#include "absl/status/statusor.h"

namespace rfs::apps::create_snapshot {

extern const char* const kUsage;

boost::program_options::options_description Options();

/// The run described by parsed options; InvalidArgument names the bad option.
absl::StatusOr<migration::CreateSnapshotToolOptions> ToolOptions(
    const boost::program_options::variables_map& vm);

/// Options given that the run does not use, each with the reason: warnings.
std::vector<std::string> IgnoredOptions(const boost::program_options::variables_map& vm);

}  // namespace rfs::apps::create_snapshot
