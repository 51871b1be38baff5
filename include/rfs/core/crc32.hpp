// CRC-32 (the zlib / IEEE 802.3 polynomial), as used by Lucene codec footers
// and Elasticsearch blob envelopes. Backed by libdeflate, which stays out of
// this header.
#pragma once

#include <cstdint>
#include <span>

namespace rfs::core {

/// CRC-32 of `bytes`, continuing from `crc` (0 to start).
uint32_t Crc32(std::span<const uint8_t> bytes, uint32_t crc = 0);

/// Incremental CRC-32 for data that arrives in pieces. Not thread-safe.
class Crc32Accumulator {
 public:
  void Update(std::span<const uint8_t> bytes) { crc_ = Crc32(bytes, crc_); }
  uint32_t value() const { return crc_; }

 private:
  uint32_t crc_ = 0;
};

}  // namespace rfs::core
