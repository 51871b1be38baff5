// Durable file writes (see file_util.hpp). POSIX calls directly: std::filesystem has no
// fsync, and error codes must map to retryable and permanent Status codes.
#include "rfs/core/file_util.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace rfs::core {

using core::StrCat;

absl::Status ErrnoStatus(std::string_view what, std::string_view path, int error) {
  const std::string message = StrCat(what, " ", path, ": ", std::strerror(error));
  switch (error) {
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case EIO:
    case EAGAIN:
    case EINTR:
      return absl::UnavailableError(message);
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status WriteAll(int fd, std::string_view data, std::string_view path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status SyncDirectory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open folder", path, errno);
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus("fsync folder", path, error);
  return absl::OkStatus();
}

absl::Status CreateDirectories(const std::string& path, bool sync) {
  std::vector<std::filesystem::path> created;
  for (std::filesystem::path p = path; !p.empty() && !std::filesystem::exists(p);
       p = p.parent_path()) {
    created.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    if (::mkdir(it->c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus("create folder", it->string(), errno);
    }
    if (sync) {
      const std::filesystem::path parent = it->parent_path().empty() ? "." : it->parent_path();
      if (absl::Status s = SyncDirectory(parent.string()); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view data, bool sync) {
  auto writer = AtomicFileWriter::Create(path, sync);
  if (!writer.ok()) return writer.status();
  if (absl::Status status = writer->Append(data); !status.ok()) return status;
  return writer->Commit();
}

absl::StatusOr<AtomicFileWriter> AtomicFileWriter::Create(std::string path, bool sync) {
  static std::atomic<uint64_t> counter{0};
  std::string temp =
      StrCat(path, ".tmp-", static_cast<uint64_t>(::getpid()), "-", counter.fetch_add(1));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("create", temp, errno);
  return AtomicFileWriter(std::move(path), std::move(temp), fd, sync);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      temp_(std::move(other.temp_)),
      fd_(std::exchange(other.fd_, -1)),
      sync_(other.sync_),
      written_(other.written_),
      writeback_started_(other.writeback_started_) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

absl::Status AtomicFileWriter::Append(std::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  RFS_RETURN_IF_ERROR(WriteAll(fd_, data, temp_));
  written_ += data.size();
  StartWriteback();
  return absl::OkStatus();
}

void AtomicFileWriter::StartWriteback() {
  constexpr uint64_t kStep = uint64_t{1} << 20;
  if (!sync_ || written_ - writeback_started_ < kStep) return;
  // A hint only: errors surface at the fsync in Commit.
  (void)::sync_file_range(fd_, static_cast<off_t>(writeback_started_),
                          static_cast<off_t>(written_ - writeback_started_), SYNC_FILE_RANGE_WRITE);
  writeback_started_ = written_;
}

absl::Status AtomicFileWriter::AppendAll(std::span<const std::string_view> pieces) {
  if (fd_ < 0) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  constexpr size_t kMaxIov = 1024;  // IOV_MAX on Linux
  iovec iov[kMaxIov];
  size_t next = 0;
  while (next < pieces.size()) {
    size_t count = 0;
    for (; next + count < pieces.size() && count < kMaxIov; ++count) {
      const std::string_view piece = pieces[next + count];
      iov[count].iov_base = const_cast<char*>(piece.data());
      iov[count].iov_len = piece.size();
    }
    const ssize_t n = ::writev(fd_, iov, static_cast<int>(count));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", temp_, errno);
    }
    // Skip the pieces written whole; a piece written in part is finished with write().
    size_t written = static_cast<size_t>(n);
    size_t i = 0;
    written_ += written;
    for (; i < count && written >= iov[i].iov_len; ++i) written -= iov[i].iov_len;
    next += i;
    if (i < count && written > 0) {
      const std::string_view rest = pieces[next].substr(written);
      RFS_RETURN_IF_ERROR(WriteAll(fd_, rest, temp_));
      written_ += rest.size();
      ++next;
    }
    StartWriteback();
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  absl::Status status;
  if (sync_ && ::fdatasync(fd_) != 0) status = ErrnoStatus("fsync", temp_, errno);
  if (::close(std::exchange(fd_, -1)) != 0 && status.ok()) {
    status = ErrnoStatus("close", temp_, errno);
  }
  if (status.ok() && ::rename(temp_.c_str(), path_.c_str()) != 0) {
    status = ErrnoStatus("rename into", path_, errno);
  }
  if (!status.ok()) {
    ::unlink(temp_.c_str());
    return status;
  }
  if (sync_) {
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    return SyncDirectory(parent.empty() ? "." : parent.string());
  }
  return absl::OkStatus();
}

}  // namespace rfs::core
