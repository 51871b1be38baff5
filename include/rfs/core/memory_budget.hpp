// One byte budget shared by the stages of a document pipeline that hold documents: the bulk
// requests in flight charge it, and a reader about to decode a large chunk waits for room in it.
// So a worker's memory is bounded by configuration, not by the mix of document sizes: a document
// too large for the budget is decoded only once nothing else is charged (it travels alone).
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>

namespace rfs::core {

class MemoryBudget {
 public:
  /// `limit` 0: no limit (WaitForRoom never waits).
  explicit MemoryBudget(size_t limit) : limit_(limit) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  size_t limit() const { return limit_; }
  size_t used() const;
  /// The most ever charged at once.
  size_t peak() const;

  /// Counts `bytes` as held until Release; never waits.
  void Charge(size_t bytes);
  void Release(size_t bytes);

  /// Whether `bytes` more fit now, or nothing is charged (what is larger than the budget goes
  /// alone).
  bool HasRoomFor(size_t bytes) const;
  /// Waits until HasRoomFor(bytes), or until `cancelled` (polled every few milliseconds) returns
  /// true. Returns false when cancelled.
  bool WaitForRoom(size_t bytes, const std::function<bool()>& cancelled = {});

  /// A huge document (a stored-fields chunk of megabytes) being decoded and converted, after
  /// WaitForRoom admitted it: not charged (it is not in flight yet, and a charge would make the
  /// bulk that carries it wait for itself), but known, so that memory held by choice elsewhere (a
  /// remote source's read-ahead) shrinks while it is in memory. The hold ends when the returned
  /// object goes; it must not outlive the budget.
  using LargeDocumentHold = std::shared_ptr<void>;
  LargeDocumentHold HoldLargeDocument();
  bool large_document_held() const { return large_held_.load(std::memory_order_relaxed) > 0; }

 private:
  bool HasRoomLocked(size_t bytes) const {
    return limit_ == 0 || used_ == 0 || used_ + bytes <= limit_;
  }

  const size_t limit_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  size_t used_ = 0;
  size_t peak_ = 0;
  std::atomic<int> large_held_{0};
};

}  // namespace rfs::core
