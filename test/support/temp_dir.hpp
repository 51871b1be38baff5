// TempDir: a fresh folder under the system temp dir, removed with everything in it on
// destruction. Not thread-safe (one owner).
#pragma once

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include <unistd.h>

namespace rfs::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "rfs-test") {
    static std::atomic<int> counter{0};
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
             std::to_string(random()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    // RFS_KEEP_TEST_DIRS=1 keeps the folders (worker logs, outputs) for a post-mortem.
    if (std::getenv("RFS_KEEP_TEST_DIRS") != nullptr) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace rfs::test
