// Whether a folder's file system takes O_DIRECT writes, found independently of the code under
// test: where it does, a test requires the fast path to have been taken, instead of accepting
// the fallback with a warning.
#pragma once

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fcntl.h>
#include <unistd.h>

namespace rfs::test {

inline bool DirectIoAvailable(const std::filesystem::path& dir) {
  const std::filesystem::path probe = dir / ".direct-io-probe";
  const int fd = ::open(probe.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  constexpr size_t kBlock = 4096;
  std::unique_ptr<void, decltype(&std::free)> block(std::aligned_alloc(kBlock, kBlock), &std::free);
  bool ok = false;
  if (block) {
    std::memset(block.get(), 'x', kBlock);
    ok = ::write(fd, block.get(), kBlock) == static_cast<ssize_t>(kBlock);
  }
  ::close(fd);
  std::filesystem::remove(probe);
  return ok;
}

}  // namespace rfs::test
