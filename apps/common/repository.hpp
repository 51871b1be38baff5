// The snapshot repository options shared by the tools that read snapshots:
//   --snapshot-local-dir DIR   (the Java tools' --file-system-repo-path is an alias)
//   --repo-uri URI             (file:///path or a plain path)
// S3 repositories are read through a local copy for now (`aws s3 sync`), which the error says.
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "rfs/core/str_cat.hpp"

#include "absl/status/statusor.h"

namespace rfs::apps {

namespace po = boost::program_options;

inline void AddRepositoryOptions(po::options_description& options) {
  options.add_options()("snapshot-local-dir", po::value<std::string>(),
                        "folder of the snapshot repository (an `fs` repository, or a local copy "
                        "of an S3 one)")("file-system-repo-path", po::value<std::string>(),
                                         "alias of --snapshot-local-dir")(
      "repo-uri", po::value<std::string>(), "the repository as file:///path or a path");
}

/// The repository folder named by the options; InvalidArgument when none or several are given
/// or the URI scheme is not supported.
inline absl::StatusOr<std::string> RepositoryFolder(const po::variables_map& vm) {
  std::string folder;
  int given = 0;
  for (const char* name : {"snapshot-local-dir", "file-system-repo-path", "repo-uri"}) {
    if (!vm.count(name)) continue;
    ++given;
    folder = vm[name].as<std::string>();
  }
  if (given == 0) {
    return absl::InvalidArgumentError(
        "the snapshot repository is missing: give --snapshot-local-dir DIR (or --repo-uri URI)");
  }
  if (given > 1) {
    return absl::InvalidArgumentError(
        "give only one of --snapshot-local-dir, --file-system-repo-path, --repo-uri");
  }
  if (folder.starts_with("file://")) {
    folder = folder.substr(7);
  } else if (folder.find("://") != std::string::npos) {
    return absl::InvalidArgumentError(core::StrCat(
        "repository URI '", folder,
        "' is not supported: copy the repository to a local folder (for S3: aws s3 sync "
        "s3://bucket/path DIR) and pass --snapshot-local-dir DIR"));
  }
  if (folder.empty()) return absl::InvalidArgumentError("the repository folder is empty");
  return folder;
}

}  // namespace rfs::apps
