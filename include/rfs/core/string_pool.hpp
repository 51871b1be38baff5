// Strings kept for reuse with their buffers. A buffer of megabytes allocated afresh has its pages
// faulted in and zeroed by the kernel again whenever the allocator gave them back meanwhile
// (jemalloc returns allocations of 8 MiB and more at once): a buffer taken back from a pool keeps
// them resident. A pool holds only what was given back, so no more than was in use together,
// within its caps (its bytes are outside any memory budget).
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rfs::core {

class StringPool {
 public:
  /// Keeps strings whose buffers hold at most `max_each` bytes: at most `max_count` of them, and
  /// `max_bytes` bytes in all.
  StringPool(size_t max_each, size_t max_bytes, size_t max_count = SIZE_MAX)
      : max_each_(max_each), max_bytes_(max_bytes), max_count_(max_count) {}
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  /// An empty string with room for `capacity` bytes: a kept one (grown if it is smaller), else
  /// a new one.
  std::string Take(size_t capacity);
  /// Keeps `s`'s buffer for a later Take, or frees it when it is too large or the pool is full.
  void Give(std::string s);
  /// Frees every kept buffer.
  void Clear();

 private:
  const size_t max_each_;
  const size_t max_bytes_;
  const size_t max_count_;
  std::mutex mu_;
  std::vector<std::string> free_;  // guarded by mu_
  size_t bytes_ = 0;               // the capacity of free_'s strings; guarded by mu_
};

}  // namespace rfs::core
