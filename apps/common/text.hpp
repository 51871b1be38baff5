// Small text helpers shared by the tools' option handling and progress output.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace rfs::apps {

/// The current UTC time as "2026-01-31T12:34:56.789Z", for JSON log lines.
std::string NowIso8601();

/// Prints the error that ends a run on stderr and returns `exit_code`: "<program>: message" on a
/// terminal, else one JSON line like the progress events, so log pipelines parse every line.
int ReportFailure(const char* program, const absl::Status& status, int exit_code);

/// The entries of a multitoken option, each possibly a comma list (as the Java tools take them),
/// trimmed, empty ones left out.
std::vector<std::string> CommaList(const std::vector<std::string>& entries);

}  // namespace rfs::apps
