// Positional reads over files and blobs, and named sets of them.
//
// IRandomAccessFile is one readable byte sequence (a local file, a snapshot
// blob, a Lucene file assembled from several `.partN` blobs or held inline in
// shard metadata). IDirectory is a named set of such files: a plain Lucene
// index folder, or a shard of a snapshot viewed as the Lucene directory it was
// taken from. The Lucene reader works on IDirectory, so it reads snapshot blobs
// in place without restoring files.
//
// Thread safety: every method of both interfaces may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::core {

class IRandomAccessFile {
 public:
  virtual ~IRandomAccessFile() = default;

  /// The name used in errors (a path, blob name or Lucene file name).
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;

  /// Fills `out` with the bytes at [offset, offset + out.size()). A range past
  /// the end is DataLoss naming the file and offset; I/O failures are
  /// Unavailable or Internal.
  virtual absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const = 0;

  /// The whole content as one contiguous view when it is already in memory
  /// (memory-mapped or inline); std::nullopt otherwise. The view lives as long
  /// as this object.
  virtual std::optional<std::span<const uint8_t>> ContiguousView() const { return std::nullopt; }

  /// Bytes from `offset` on, at least `min_length` and at most `max_length` of them, as a view
  /// of memory the file holds already (a block a remote file fetched), so that a caller does
  /// not copy them out; the file picks the length within those bounds (up to the end of the
  /// piece that holds them). `owner` keeps the bytes alive (null: they live as long as the
  /// file). std::nullopt when no piece holds that many from `offset`: the caller reads them
  /// with ReadAt. A range past the end is DataLoss, as for ReadAt. Not overridden by files
  /// that are contiguous (ContiguousView) or that keep nothing.
  struct HeldBytes {
    std::span<const uint8_t> bytes;
    std::shared_ptr<const void> owner;
  };
  virtual absl::StatusOr<std::optional<HeldBytes>> ViewAt(uint64_t offset, uint64_t min_length,
                                                          uint64_t max_length) const {
    (void)offset;
    (void)min_length;
    (void)max_length;
    return std::nullopt;
  }

  /// A hint that [offset, offset + length) will not be read again soon: a
  /// memory-mapped file lets the kernel drop those pages from the process's
  /// resident set (they are read back from the file if touched again), so a
  /// sequential reader of a large mapped file does not pin all of it; a
  /// remote file drops the blocks it keeps of that range. No-op by default;
  /// never changes what ReadAt or ContiguousView return.
  virtual void DropCachedPages(uint64_t offset, uint64_t length) const {
    (void)offset;
    (void)length;
  }
};

/// Reads [offset, offset + length) of `file` into a new buffer
/// (bounds-checked).
absl::StatusOr<std::vector<uint8_t>> ReadRange(const IRandomAccessFile& file, uint64_t offset,
                                               uint64_t length);

/// A file whose bytes live in memory (owned). Useful for inline content and for
/// tests.
class MemoryFile final : public IRandomAccessFile {
 public:
  MemoryFile(std::string name, std::vector<uint8_t> bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override;
  std::optional<std::span<const uint8_t>> ContiguousView() const override { return bytes_; }

 private:
  std::string name_;
  std::vector<uint8_t> bytes_;
};

/// "a FIFO", "a directory", ... for a stat() st_mode, for messages.
const char* FileTypeName(unsigned mode);

/// A read-only memory-mapped local file. Open() fails with NotFound when the
/// file is missing and with FailedPrecondition when it is not a regular file
/// (a FIFO, socket or device is refused without blocking).
class MappedFile final : public IRandomAccessFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path,
                                                          std::string display_name = "");
  ~MappedFile() override;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override;
  std::optional<std::span<const uint8_t>> ContiguousView() const override {
    return std::span<const uint8_t>(data_, size_);
  }
  void DropCachedPages(uint64_t offset, uint64_t length) const override;

 private:
  MappedFile(std::string name, const uint8_t* data, uint64_t size)
      : name_(std::move(name)), data_(data), size_(size) {}
  std::string name_;
  const uint8_t* data_;
  uint64_t size_;
};

/// A named set of files.
class IDirectory {
 public:
  virtual ~IDirectory() = default;
  /// A description for errors, e.g. "index posts shard 0 of snapshot s1".
  virtual const std::string& description() const = 0;
  /// The names of all files, sorted.
  virtual std::vector<std::string> ListFiles() const = 0;
  /// Opens a file; NotFound when there is no such file.
  virtual absl::StatusOr<std::shared_ptr<const IRandomAccessFile>> OpenFile(
      std::string_view name) const = 0;
  /// A hint that the files named will be opened soon, roughly in this order (names the
  /// directory does not hold are ignored): a remote directory may start fetching them in
  /// parallel, so that the opens that follow do not each wait for a round trip. Does nothing by
  /// default.
  virtual void Prefetch(std::span<const std::string> names) const { (void)names; }
};

/// A local folder, each file memory-mapped on open. Open() fails with NotFound
/// when the folder does not exist.
class LocalDirectory final : public IDirectory {
 public:
  static absl::StatusOr<std::unique_ptr<LocalDirectory>> Open(const std::string& path);
  const std::string& description() const override { return path_; }
  std::vector<std::string> ListFiles() const override;
  absl::StatusOr<std::shared_ptr<const IRandomAccessFile>> OpenFile(
      std::string_view name) const override;

 private:
  explicit LocalDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace rfs::core
