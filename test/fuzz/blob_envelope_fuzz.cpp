// libFuzzer entry point for metadata blobs: codec envelope, body detection,
// DEFLATE/LZF decompression, SMILE and JSON. Checked and unchecked paths both
// run, so mutations that break the checksum still reach the body decoders.
#include <cstddef>
#include <cstdint>
#include <span>

#include "rfs/snapshot/blob_envelope.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  (void)rfs::snapshot::DecodeMetadataBlob(bytes, "fuzz.dat", "snapshot",
                                          /*verify_checksum=*/true);
  (void)rfs::snapshot::DecodeMetadataBlob(bytes, "fuzz.dat", "",
                                          /*verify_checksum=*/false);
  return 0;
}
