// The options of a documents migration, with the Java tool's names, and their conversion into the
// library's DocumentsToolOptions: the whole command line of DocumentsFromSnapshotMigration, and
// the documents part of RfsWorker's.
#pragma once

#include <boost/program_options.hpp>

#include "rfs/migration/tools.hpp"

#include "absl/status/statusor.h"

namespace rfs::apps {

boost::program_options::options_description DocumentOptions();

/// The run described by parsed options; InvalidArgument names the bad option.
absl::StatusOr<migration::DocumentsToolOptions> DocumentsToolOptionsFrom(
    const boost::program_options::variables_map& vm);

}  // namespace rfs::apps
