// libFuzzer entry point for the zstd stream decoder of OpenSearch's ZSTD\0
// metadata blob bodies (snapshot/compression_internal.hpp): any input must
// decode or fail with DataLoss, never crash, hang or grow past its cap.
#include <cstddef>
#include <cstdint>
#include <span>

#include "snapshot/compression_internal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A small cap keeps highly compressible inputs from spending the fuzzer's memory.
  (void)rfs::snapshot::internal::ZstdDecompressStream(std::span<const uint8_t>(data, size),
                                                      "fuzz.dat", 0, size_t{64} << 20);
  return 0;
}
