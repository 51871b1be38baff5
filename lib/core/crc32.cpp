#include "rfs/core/crc32.hpp"

#include <zlib.h>

#include <libdeflate.h>

namespace rfs::core {

// libdeflate's CRC-32 uses carry-less multiplication (PCLMUL/VPCLMUL) where the CPU has it:
// several times zlib's table-driven crc32 on the gigabytes of Lucene files whose footers are
// checked before their bytes are trusted. Same polynomial and conventions as zlib.
uint32_t Crc32(std::span<const uint8_t> bytes, uint32_t crc) {
  return libdeflate_crc32(crc, bytes.data(), bytes.size());
}

// libdeflate has no combine; zlib's is O(log length).
uint32_t Crc32Combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) {
  return static_cast<uint32_t>(::crc32_combine64(crc_a, crc_b, static_cast<z_off64_t>(length_b)));
}

}  // namespace rfs::core
