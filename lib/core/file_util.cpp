// Durable file writes (see file_util.hpp). POSIX calls directly: std::filesystem has no
// fsync, and error codes must map to retryable and permanent Status codes.
#include "rfs/core/file_util.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include <fcntl.h>
#include <signal.h>
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
      // Not transient for a worker: its lease runs out long before anyone frees space.
      return NotRetryable(absl::ResourceExhaustedError(message));
    case EFBIG:
      // Not OutOfRange: the reindexer reads that as a request too large and splits it.
      return NotRetryable(absl::ResourceExhaustedError(message));
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

namespace {

// Direct I/O wants the buffer's address, the file offset and the length aligned to the device's
// logical block; 4096 covers every common device (statx's STATX_DIOALIGN is too new to rely on,
// and a device wanting more makes the write fail with EINVAL, which falls back to the cache).
constexpr size_t kDirectAlignment = 4096;
// Large enough that the device, not the system call, sets the pace; small enough for one per
// concurrent bulk.
constexpr size_t kDirectBufferBytes = size_t{1} << 20;
// Shorter pieces are copied: writing one in place costs an extra write of the buffer.
constexpr size_t kInPlaceMinBytes = size_t{256} << 10;

size_t BlockOffset(uint64_t position) { return static_cast<size_t>(position % kDirectAlignment); }
size_t BlockOffset(const void* p) { return BlockOffset(reinterpret_cast<uintptr_t>(p)); }

}  // namespace

void AtomicFileWriter::FreeDeleter::operator()(char* p) const { std::free(p); }

namespace {

constexpr std::string_view kTempMarker = ".tmp-";

// This host's name as temporary names carry it: '-' and anything unusual become '_', so that
// `<host>-<pid>-<n>` splits at its dashes.
const std::string& TempHostToken() {
  static const std::string token = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return std::string("host");
    std::string out(name);
    for (char& c : out) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') c = '_';
    }
    return out;
  }();
  return token;
}

bool ProcessRuns(uint64_t pid) {
  if (pid == 0 || pid > static_cast<uint64_t>(INT32_MAX)) return true;  // not a pid: keep
  if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno != ESRCH;  // EPERM: it runs, as another user
}

}  // namespace

std::string AtomicTempPath(std::string_view path, uint64_t pid, uint64_t n) {
  return StrCat(path, kTempMarker, TempHostToken(), "-", pid, "-", n);
}

absl::StatusOr<StaleTempFiles> RemoveStaleTempFiles(const std::string& directory) {
  StaleTempFiles out;
  std::error_code error;
  std::filesystem::recursive_directory_iterator it(directory, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) return out;
    return ErrnoStatus("list", directory, error.value());
  }
  for (; it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (error) return ErrnoStatus("list", directory, error.value());
    const std::string name = it->path().filename().string();
    const size_t marker = name.rfind(kTempMarker);
    if (marker == std::string::npos || !it->is_regular_file(error)) continue;
    // <host>-<pid>-<n>: the host has no dashes (TempHostToken).
    const std::string_view rest = std::string_view(name).substr(marker + kTempMarker.size());
    const size_t first = rest.find('-');
    const size_t last = rest.rfind('-');
    if (first == std::string_view::npos || first == last) {
      ++out.kept_other_hosts;  // an older name without the host
      continue;
    }
    if (rest.substr(0, first) != TempHostToken()) {
      ++out.kept_other_hosts;
      continue;
    }
    uint64_t pid = 0;
    const std::string_view pid_text = rest.substr(first + 1, last - first - 1);
    if (std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid).ptr !=
            pid_text.data() + pid_text.size() ||
        ProcessRuns(pid)) {
      continue;
    }
    if (::unlink(it->path().c_str()) == 0) {
      ++out.removed;
    } else if (errno != ENOENT) {
      return ErrnoStatus("remove", it->path().string(), errno);
    }
  }
  return out;
}

absl::StatusOr<AtomicFileWriter> AtomicFileWriter::Create(std::string path, bool sync,
                                                          FileCaching caching) {
  static std::atomic<uint64_t> counter{0};
  std::string temp = AtomicTempPath(path, static_cast<uint64_t>(::getpid()), counter.fetch_add(1));
  constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  std::unique_ptr<char, FreeDeleter> direct_buffer;
  int fd = -1;
  if (caching == FileCaching::kDirect) {
    void* buffer = nullptr;
    if (::posix_memalign(&buffer, kDirectAlignment, kDirectBufferBytes) != 0) {
      return absl::ResourceExhaustedError(StrCat("no memory for the write buffer of ", temp));
    }
    direct_buffer.reset(static_cast<char*>(buffer));
    fd = ::open(temp.c_str(), kFlags | O_DIRECT, 0644);
    // EINVAL: a file system without direct I/O (tmpfs, some FUSE ones); use the cache.
    if (fd < 0 && errno == EINVAL) direct_buffer.reset();
  }
  if (fd < 0) fd = ::open(temp.c_str(), kFlags, 0644);
  if (fd < 0) return ErrnoStatus("create", temp, errno);
  return AtomicFileWriter(std::move(path), std::move(temp), fd, sync, std::move(direct_buffer));
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      temp_(std::move(other.temp_)),
      fd_(std::exchange(other.fd_, -1)),
      sync_(other.sync_),
      written_(other.written_),
      writeback_started_(other.writeback_started_),
      direct_buffer_(std::move(other.direct_buffer_)),
      direct_buffered_(other.direct_buffered_),
      in_place_bytes_(other.in_place_bytes_) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

std::optional<size_t> AtomicFileWriter::PaddingForInPlace(std::string_view piece,
                                                          uint64_t bytes_before) const {
  if (!direct() || piece.size() < kInPlaceMinBytes) return std::nullopt;
  return (kDirectAlignment + BlockOffset(piece.data()) - BlockOffset(written_ + bytes_before)) %
         kDirectAlignment;
}

absl::StatusOr<std::string_view> AtomicFileWriter::AppendInPlace(std::string_view data) {
  const size_t head = (kDirectAlignment - BlockOffset(data.data())) % kDirectAlignment;
  // The buffer ends where `data` is within its block, so it ends on a block boundary after the
  // head (and never past its own end, which is one).
  std::memcpy(direct_buffer_.get() + direct_buffered_, data.data(), head);
  direct_buffered_ += head;
  written_ += head;
  data.remove_prefix(head);
  if (direct_buffered_ > 0) RFS_RETURN_IF_ERROR(WriteDirectBuffer(direct_buffered_));
  if (!direct()) return data;
  const size_t whole = data.size() / kDirectAlignment * kDirectAlignment;
  RFS_ASSIGN_OR_RETURN(const size_t done, WriteDirect(data.data(), whole));
  written_ += done;
  in_place_bytes_ += done;
  data.remove_prefix(done);
  if (done < whole) RFS_RETURN_IF_ERROR(FallBackToPageCache());
  return data;
}

absl::Status AtomicFileWriter::AppendDirect(std::string_view data) {
  if (data.size() >= kInPlaceMinBytes && BlockOffset(data.data()) == BlockOffset(written_)) {
    RFS_ASSIGN_OR_RETURN(data, AppendInPlace(data));
  }
  while (!data.empty() && direct()) {
    const size_t n = std::min(data.size(), kDirectBufferBytes - direct_buffered_);
    std::memcpy(direct_buffer_.get() + direct_buffered_, data.data(), n);
    direct_buffered_ += n;
    written_ += n;
    data.remove_prefix(n);
    if (direct_buffered_ == kDirectBufferBytes) {
      RFS_RETURN_IF_ERROR(WriteDirectBuffer(kDirectBufferBytes));
    }
  }
  if (data.empty()) return absl::OkStatus();
  // Fell back to the cache part way.
  RFS_RETURN_IF_ERROR(WriteAll(fd_, data, temp_));
  written_ += data.size();
  return absl::OkStatus();
}

absl::StatusOr<size_t> AtomicFileWriter::WriteDirect(const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL) break;
      return ErrnoStatus("write", temp_, errno);
    }
    done += static_cast<size_t>(n);
    // A short write that leaves the rest unaligned: finish through the cache.
    if (done % kDirectAlignment != 0) break;
  }
  return done;
}

absl::Status AtomicFileWriter::WriteDirectBuffer(size_t size) {
  RFS_ASSIGN_OR_RETURN(const size_t done, WriteDirect(direct_buffer_.get(), size));
  if (done < size) {
    // Whatever the direct writes did not take is written through the cache.
    // (Zeros of the padding written in excess are cut off by Commit.)
    const size_t left = done < direct_buffered_ ? direct_buffered_ - done : 0;
    std::memmove(direct_buffer_.get(), direct_buffer_.get() + done, left);
    direct_buffered_ = left;
    return FallBackToPageCache();
  }
  direct_buffered_ = 0;
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::FallBackToPageCache() {
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) {
    return ErrnoStatus("turn off direct I/O on", temp_, errno);
  }
  const std::string_view pending(direct_buffer_.get(), direct_buffered_);
  absl::Status status = WriteAll(fd_, pending, temp_);
  direct_buffer_.reset();
  direct_buffered_ = 0;
  writeback_started_ = written_;
  return status;
}

absl::Status AtomicFileWriter::Append(std::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  if (direct()) return AppendDirect(data);
  RFS_RETURN_IF_ERROR(WriteAll(fd_, data, temp_));
  written_ += data.size();
  StartWriteback();
  return absl::OkStatus();
}

void AtomicFileWriter::StartWriteback() {
  constexpr uint64_t kStep = uint64_t{1} << 20;
  if (!sync_ || direct() || written_ - writeback_started_ < kStep) return;
  // A hint only: errors surface at the fsync in Commit.
  (void)::sync_file_range(fd_, static_cast<off_t>(writeback_started_),
                          static_cast<off_t>(written_ - writeback_started_), SYNC_FILE_RANGE_WRITE);
  writeback_started_ = written_;
}

absl::Status AtomicFileWriter::AppendAll(std::span<const std::string_view> pieces) {
  if (fd_ < 0) return absl::FailedPreconditionError(StrCat(path_, ": already committed"));
  if (direct()) {
    for (std::string_view piece : pieces) RFS_RETURN_IF_ERROR(AppendDirect(piece));
    return absl::OkStatus();
  }
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
  if (direct() && direct_buffered_ > 0) {
    // The last block is written padded with zeros, then the file is cut to its length.
    const size_t padded =
        (direct_buffered_ + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
    std::memset(direct_buffer_.get() + direct_buffered_, 0, padded - direct_buffered_);
    status = WriteDirectBuffer(padded);
    if (status.ok() && ::ftruncate(fd_, static_cast<off_t>(written_)) != 0) {
      status = ErrnoStatus("truncate", temp_, errno);
    }
  }
  if (status.ok() && sync_ && ::fdatasync(fd_) != 0) status = ErrnoStatus("fsync", temp_, errno);
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
