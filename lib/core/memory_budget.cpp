#include "rfs/core/memory_budget.hpp"

#include <algorithm>

namespace rfs::core {

size_t MemoryBudget::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

size_t MemoryBudget::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

void MemoryBudget::Charge(size_t bytes) {
  std::lock_guard lock(mu_);
  used_ += bytes;
  peak_ = std::max(peak_, used_);
}

void MemoryBudget::Release(size_t bytes) {
  {
    std::lock_guard lock(mu_);
    used_ -= std::min(used_, bytes);
  }
  released_.notify_all();
}

bool MemoryBudget::HasRoomFor(size_t bytes) const {
  std::lock_guard lock(mu_);
  return HasRoomLocked(bytes);
}

bool MemoryBudget::WaitForRoom(size_t bytes, const std::function<bool()>& cancelled) {
  std::unique_lock lock(mu_);
  while (!HasRoomLocked(bytes)) {
    if (cancelled && cancelled()) return false;
    // Cancellation comes from another object's state: poll it rather than couple the two.
    released_.wait_for(lock, std::chrono::milliseconds(5));
  }
  return true;
}

MemoryBudget::LargeDocumentHold MemoryBudget::HoldLargeDocument() {
  large_held_.fetch_add(1, std::memory_order_relaxed);
  return LargeDocumentHold(nullptr,
                           [this](void*) { large_held_.fetch_sub(1, std::memory_order_relaxed); });
}

}  // namespace rfs::core
