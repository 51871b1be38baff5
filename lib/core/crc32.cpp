#include "rfs/core/crc32.hpp"

#include <algorithm>
#include <limits>

#include <zlib.h>

namespace rfs::core {

uint32_t Crc32(std::span<const uint8_t> bytes, uint32_t crc) {
  uLong value = crc;
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  // crc32() takes a uInt length; feed very large spans in slices.
  while (left > 0) {
    const size_t n = std::min<size_t>(left, std::numeric_limits<uInt>::max());
    value = ::crc32(value, p, static_cast<uInt>(n));
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(value);
}

}  // namespace rfs::core
