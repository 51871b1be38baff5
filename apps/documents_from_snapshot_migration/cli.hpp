// The command line of DocumentsFromSnapshotMigration: its usage text, its options (the Java
// tool's names) and their conversion into the library's DocumentsToolOptions.
#pragma once

#include <boost/program_options.hpp>

#include "rfs/migration/tools.hpp"

#include "absl/status/statusor.h"

namespace rfs::apps::documents {

extern const char* const kUsage;

boost::program_options::options_description Options();

/// The run described by parsed options; InvalidArgument names the bad option.
absl::StatusOr<migration::DocumentsToolOptions> ToolOptions(
    const boost::program_options::variables_map& vm);

}  // namespace rfs::apps::documents
