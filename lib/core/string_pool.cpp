#include "rfs/core/string_pool.hpp"

#include <utility>

namespace rfs::core {

std::string StringPool::Take(size_t capacity) {
  std::string s;
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      s = std::move(free_.back());
      free_.pop_back();
      bytes_ -= s.capacity();
    }
  }
  s.reserve(capacity);
  return s;
}

void StringPool::Give(std::string s) {
  if (s.capacity() > max_each_) return;
  s.clear();
  std::lock_guard lock(mu_);
  if (free_.size() >= max_count_ || bytes_ + s.capacity() > max_bytes_) return;  // freed as it goes
  bytes_ += s.capacity();
  free_.push_back(std::move(s));
}

void StringPool::Clear() {
  std::vector<std::string> dropped;
  std::lock_guard lock(mu_);
  dropped.swap(free_);
  bytes_ = 0;
}

}  // namespace rfs::core
