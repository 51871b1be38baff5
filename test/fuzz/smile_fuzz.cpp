// libFuzzer entry point for the SMILE decoder: any input must decode or fail
// with a clean status, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "rfs/content/smile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  (void)rfs::content::DecodeSmile(bytes, "fuzz.smile", 17);
  return 0;
}
