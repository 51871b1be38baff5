// Paths built from names that untrusted metadata supplies: index ids and names, snapshot names
// and uuids, blob and file names, shard folders listed by the repository. Every such path is
// built by CheckedPath, for reads (the snapshot repository, the embedded target's verify) and
// writes (the embedded target), so that no name can reach outside the folder it belongs in.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace rfs::core {

/// Why `segment` cannot be one segment of a path - empty, "." or "..", or holding '/', '\',
/// NUL or another control character - or nullopt when it can.
std::optional<std::string> PathSegmentProblem(std::string_view segment);

/// `parts` joined with '/'. A part may hold several segments ("indices/<id>/0"); every segment
/// of every part must pass PathSegmentProblem. InvalidArgument otherwise, naming the path and
/// `source` (the metadata the names came from).
absl::StatusOr<std::string> CheckedPath(std::initializer_list<std::string_view> parts,
                                        std::string_view source);

}  // namespace rfs::core
