#include "rfs/core/random_access.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rfs::core {
namespace {

absl::Status CheckRange(const std::string& name, uint64_t size, uint64_t offset, uint64_t length) {
  if (offset > size || length > size - offset) {
    return DataLossAt(name, offset,
                      StrCat("read of ", length, " bytes past the end (size ", size, ")"));
  }
  return absl::OkStatus();
}

absl::Status ErrnoStatus(int err, std::string_view what, std::string_view path) {
  std::string message = StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::UnavailableError(message);
}

}  // namespace

const char* FileTypeName(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "a special file";
}

absl::StatusOr<std::vector<uint8_t>> ReadRange(const IRandomAccessFile& file, uint64_t offset,
                                               uint64_t length) {
  if (auto status = CheckRange(file.name(), file.size(), offset, length); !status.ok()) {
    return status;
  }
  std::vector<uint8_t> out(length);
  if (auto status = file.ReadAt(offset, out); !status.ok()) return status;
  return out;
}

absl::Status MemoryFile::ReadAt(uint64_t offset, std::span<uint8_t> out) const {
  if (auto status = CheckRange(name_, bytes_.size(), offset, out.size()); !status.ok()) {
    return status;
  }
  if (!out.empty()) std::memcpy(out.data(), bytes_.data() + offset, out.size());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path,
                                                             std::string display_name) {
  if (display_name.empty()) display_name = path;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever; the flag
  // changes nothing for the regular files accepted below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus(err, "cannot stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(
        StrCat(path, " is ", FileTypeName(st.st_mode), ", not a regular file"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(err, "cannot map", path);
    }
    data = static_cast<const uint8_t*>(mapped);
  }
  ::close(fd);  // The mapping stays valid without the descriptor.
  return std::unique_ptr<MappedFile>(new MappedFile(std::move(display_name), data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::DropCachedPages(uint64_t offset, uint64_t length) const {
  if (data_ == nullptr || offset >= size_) return;
  length = std::min(length, size_ - offset);
  // Only whole pages inside the range: a page shared with bytes still in use stays.
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t base = reinterpret_cast<uintptr_t>(data_);
  const uint64_t first = (base + offset + page - 1) / page * page;
  const uint64_t last = (base + offset + length) / page * page;
  if (last <= first) return;
  // A read-only private file mapping that was never written: MADV_DONTNEED only drops the
  // pages, which read back from the file on the next access.
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

absl::Status MappedFile::ReadAt(uint64_t offset, std::span<uint8_t> out) const {
  if (auto status = CheckRange(name_, size_, offset, out.size()); !status.ok()) return status;
  if (!out.empty()) std::memcpy(out.data(), data_ + offset, out.size());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LocalDirectory>> LocalDirectory::Open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    return absl::NotFoundError(StrCat("not a directory: ", path));
  }
  return std::unique_ptr<LocalDirectory>(new LocalDirectory(path));
}

std::vector<std::string> LocalDirectory::ListFiles() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
    if (entry.is_regular_file(ec)) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::shared_ptr<const IRandomAccessFile>> LocalDirectory::OpenFile(
    std::string_view name) const {
  if (name.empty() || name.find('/') != std::string_view::npos || name == "." || name == "..") {
    return absl::InvalidArgumentError(StrCat("invalid file name '", name, "' in ", path_));
  }
  auto file = MappedFile::Open(StrCat(path_, "/", name), std::string(name));
  if (!file.ok()) return file.status();
  return std::shared_ptr<const IRandomAccessFile>(std::move(file).value());
}

}  // namespace rfs::core
