#include "rfs/core/crc32.hpp"

#include <zlib.h>

#include <isa-l/crc.h>

namespace rfs::core {

// ISA-L's CRC-32 (the gzip one: zlib's polynomial and conventions) folds with carry-less
// multiplication, 64 bytes at a time with AVX-512 VPCLMULQDQ where the CPU has it: on the
// gigabytes of Lucene files whose checksums are checked before their bytes are trusted, about
// twice libdeflate 1.14's speed (whose folding stops at PCLMULQDQ) and 6x zlib's tables.
uint32_t Crc32(std::span<const uint8_t> bytes, uint32_t crc) {
  if (bytes.empty()) return crc;
  return crc32_gzip_refl(crc, bytes.data(), bytes.size());
}

// ISA-L has no CRC-32 combine; zlib's is O(log length).
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) {
  return static_cast<uint32_t>(::crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(length_b)));
}

}  // namespace rfs::core
