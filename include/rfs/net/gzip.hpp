// Gzip for request bodies and failed-document files (libdeflate). Not installed.
// Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace rfs::net {

/// Compresses `data` into one gzip member. Level 1 by default: bulk bodies are large and
/// compressed on the hot path, and level 1 already shrinks JSON several times over.
absl::StatusOr<std::string> GzipCompress(std::string_view data, int level = 1);

/// Inflates gzip data (one or more concatenated members). DataLoss on corrupt input.
absl::StatusOr<std::string> GzipDecompress(std::string_view data);

}  // namespace rfs::net
