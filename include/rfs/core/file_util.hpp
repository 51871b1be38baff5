// Durable file writes: the NDJSON directory sink, the failed-document sink, metadata output.
// Thread-safe (no shared state; callers pick distinct file names).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace rfs::core {

/// Maps an errno from a file operation to a Status: ENOSPC/EDQUOT -> ResourceExhausted (worth
/// retrying once space is freed), EIO/EAGAIN/EINTR -> Unavailable, ENOENT -> NotFound,
/// EACCES/EPERM -> PermissionDenied, anything else -> Internal. The message names the path.
absl::Status ErrnoStatus(std::string_view what, std::string_view path, int error);

/// Writes all of `data` to `fd`, retrying short writes and EINTR.
absl::Status WriteAll(int fd, std::string_view data, std::string_view path);

/// fsyncs a folder so that entries created or renamed in it survive a crash.
absl::Status SyncDirectory(const std::string& path);

/// Creates `path` and missing parents; when `sync`, fsyncs each new folder's parent.
absl::Status CreateDirectories(const std::string& path, bool sync);

/// Writes `data` to `path` atomically: a temporary file in the same folder, fsync (when `sync`),
/// rename over `path`, then fsync of the folder. Readers see the old file or the whole new one.
absl::Status WriteFileAtomically(const std::string& path, std::string_view data, bool sync);

}  // namespace rfs::core
