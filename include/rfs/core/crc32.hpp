// CRC-32 (the zlib / IEEE 802.3 polynomial), as used by Lucene codec footers
// and Elasticsearch blob envelopes. Backed by ISA-L, which stays out of this
// header.
#pragma once

#include <cstdint>
#include <span>

namespace rfs::core {

/// CRC-32 of `bytes`, continuing from `crc` (0 to start).
uint32_t Crc32(std::span<const uint8_t> bytes, uint32_t crc = 0);

/// The CRC-32 of A followed by B, from the CRC-32 of A, that of B and B's length: pieces of a
/// file hashed out of order (by several threads) give the file's CRC.
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b);

/// Incremental CRC-32 for data that arrives in pieces. Not thread-safe.
class Crc32Accumulator {
 public:
  void Update(std::span<const uint8_t> bytes) { crc_ = Crc32(bytes, crc_); }
  uint32_t value() const { return crc_; }

 private:
  uint32_t crc_ = 0;
};

}  // namespace rfs::core
