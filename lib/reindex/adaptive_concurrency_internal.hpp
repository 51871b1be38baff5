// AdaptiveConcurrency: how many bulk requests a worker keeps in flight, and how large it cuts
// them, adjusted to what the target takes (AIMD, as TCP's congestion control): each request that
// the target answers without pushing back adds 1/limit to the limit (about one more request in
// flight per round trip of the whole window), and a request that meets a 429 (or a "busy" item
// error), or whose latency climbs past `latency_factor` x the best seen, halves it. Once a single
// request is still too much, the batch size halves instead (down to `min_batch_bytes`); recovery
// restores the batch size first, then the concurrency, so a struggling target gets fewer, then
// smaller requests, and a recovered one the full load again. Decreases count once per window:
// responses to requests sent before the last decrease do not decrease it again.
//
// Thread safety: every method may be called concurrently.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace rfs::reindex {

struct AdaptiveConcurrencyOptions {
  /// The most requests in flight (`--max-connections`); also where the limit starts.
  size_t max_in_flight = 10;
  /// The configured batch size; 0 means the batch size is not adapted.
  size_t max_batch_bytes = 0;
  size_t min_batch_bytes = 256 * 1024;
  /// A latency this many times the best seen counts as pushback (0 turns the rule off).
  double latency_factor = 4.0;
  /// Latencies under this never count as pushback (a fast target's noise).
  std::chrono::milliseconds latency_floor{500};
};

class AdaptiveConcurrency {
 public:
  explicit AdaptiveConcurrency(AdaptiveConcurrencyOptions options);

  /// Waits for a slot under the current limit; returns the number of the decrease epoch at send
  /// time (pass it to Release).
  uint64_t Acquire();
  /// Gives the slot back with what the request met: `pushed_back` for 429s and busy item errors.
  void Release(uint64_t epoch, bool pushed_back, std::chrono::nanoseconds latency);

  /// The current limit (whole requests).
  size_t limit() const;
  /// The batch size to cut now (the configured one when not adapted).
  size_t batch_bytes() const;
  /// How often the limit was cut, and the lowest it went.
  uint64_t decreases() const;
  size_t lowest_limit() const;
  /// Acquire calls held until a request returns.
  size_t waiting() const;

 private:
  const AdaptiveConcurrencyOptions options_;
  mutable std::mutex mu_;
  std::condition_variable slot_;
  double limit_;
  double batch_share_ = 1.0;  // of max_batch_bytes, cut once the limit is down to 1
  size_t in_flight_ = 0;
  size_t waiting_ = 0;
  uint64_t epoch_ = 0;
  uint64_t decreases_ = 0;
  size_t lowest_;
  std::chrono::nanoseconds best_latency_ = std::chrono::nanoseconds::max();
};

}  // namespace rfs::reindex
