// Durable file writes: the NDJSON directory sink, the failed-document sink, metadata output.
// Thread-safe (no shared state; callers pick distinct file names).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::core {

/// Maps an errno from a file operation to a Status: ENOSPC/EDQUOT/EFBIG -> ResourceExhausted
/// marked NotRetryable (a run ends at once rather than retry until its lease runs out),
/// EIO/EAGAIN/EINTR -> Unavailable, ENOENT -> NotFound, EACCES/EPERM/EROFS -> PermissionDenied,
/// anything else -> Internal. The message names the path.
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

/// What RemoveStaleTempFiles did.
struct StaleTempFiles {
  uint64_t removed = 0;
  /// Temporary files of writers on other hosts (or of an unknown host): their liveness cannot be
  /// told from here, so they stay.
  uint64_t kept_other_hosts = 0;
};

/// The temporary name an atomic write of `path` by process `pid` on this host uses, its `n`th:
/// `<path>.tmp-<host>-<pid>-<n>`, the host's name with '-' made '_'.
std::string AtomicTempPath(std::string_view path, uint64_t pid, uint64_t n);

/// Removes, under `directory` (recursively), the temporary files of atomic writes whose writer
/// is gone: named `<file>.tmp-<host>-<pid>-<n>` for this host and a process that no longer runs.
/// A live writer's file, and any file of another host, is never touched. A folder that does not
/// exist holds none. For the next worker of a killed one (bulk files, metadata, records).
absl::StatusOr<StaleTempFiles> RemoveStaleTempFiles(const std::string& directory);

/// How an AtomicFileWriter hands its bytes to the disk.
enum class FileCaching {
  /// Through the page cache (write, then fsync on Commit when `sync`).
  kPageCache,
  /// Direct I/O (O_DIRECT) from an aligned buffer of its own, when the file system allows it, and
  /// the page cache where it does not. For large files that are written once and not read back
  /// soon: the kernel neither copies them into its cache nor writes them back on fsync, which
  /// costs several times the CPU of the copy made here.
  kDirect,
};

/// WriteFileAtomically in pieces, for content too large to hold at once: Append as it is made,
/// then Commit. Destroyed without Commit, it removes its temporary file. Not thread-safe.
class AtomicFileWriter {
 public:
  static absl::StatusOr<AtomicFileWriter> Create(std::string path, bool sync,
                                                 FileCaching caching = FileCaching::kPageCache);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  ~AtomicFileWriter();

  absl::Status Append(std::string_view data);
  /// Appends the pieces in order with as few system calls as the kernel allows (writev), so
  /// callers need not copy them into one buffer first.
  absl::Status AppendAll(std::span<const std::string_view> pieces);
  /// fsync (when `sync`), rename over the path, fsync of the folder.
  absl::Status Commit();

  /// True while the file is written with direct I/O (false after a fallback to the cache).
  bool direct() const { return direct_buffer_ != nullptr; }

  /// Direct I/O copies what is appended into an aligned buffer, except a long piece that sits at
  /// the same place within a disk block as the file's end: its whole blocks go to the disk from
  /// where they are. Returns how many bytes to append first so that `piece`, appended after
  /// `bytes_before` more bytes, is written in place; std::nullopt when it would be copied anyway
  /// (writes through the cache, or a piece too short to be worth it). Callers whose format can
  /// pad (spaces at the end of a JSON line) use it to spare the copy of their large pieces.
  std::optional<size_t> PaddingForInPlace(std::string_view piece, uint64_t bytes_before) const;
  /// Bytes written to the disk from where the caller had them, without a copy.
  uint64_t in_place_bytes() const { return in_place_bytes_; }

 private:
  struct FreeDeleter {
    void operator()(char* p) const;
  };
  AtomicFileWriter(std::string path, std::string temp, int fd, bool sync,
                   std::unique_ptr<char, FreeDeleter> direct_buffer)
      : path_(std::move(path)),
        temp_(std::move(temp)),
        fd_(fd),
        sync_(sync),
        direct_buffer_(std::move(direct_buffer)) {}
  // With `sync`, writeback of each MiB written starts at once, so Commit's fsync waits for
  // little more than the last one.
  void StartWriteback();
  absl::Status AppendDirect(std::string_view data);
  // Writes `size` bytes (a multiple of the alignment, from aligned memory) at the file's end with
  // direct I/O. Returns how many were written: fewer when direct I/O was refused part way, and
  // the caller writes the rest through the cache.
  absl::StatusOr<size_t> WriteDirect(const char* data, size_t size);
  // Writes the buffer's first `size` bytes (a multiple of the alignment) at the file's end.
  absl::Status WriteDirectBuffer(size_t size);
  // Appends the head of `data` up to its first block boundary to the buffer, writes the buffer,
  // then writes the whole blocks of `data` from where they are. `data` must be in place (see
  // PaddingForInPlace); what is left of it is returned.
  absl::StatusOr<std::string_view> AppendInPlace(std::string_view data);
  // Direct I/O refused (EINVAL: the device wants a larger alignment): go on through the cache.
  absl::Status FallBackToPageCache();

  std::string path_;
  std::string temp_;
  int fd_ = -1;
  bool sync_ = false;
  uint64_t written_ = 0;  // bytes appended (with direct I/O, some may still be buffered)
  uint64_t writeback_started_ = 0;
  std::unique_ptr<char, FreeDeleter> direct_buffer_;
  size_t direct_buffered_ = 0;  // bytes waiting in direct_buffer_
  uint64_t in_place_bytes_ = 0;
};

}  // namespace rfs::core
