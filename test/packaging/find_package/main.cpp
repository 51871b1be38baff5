// A consumer of the installed rfs package: exits 0 only if the library works as
// linked.
#include <cstdio>
#include <vector>

#ifdef RFS_CONSUMER_CORE_ONLY
// Linked to one layer: the core headers every layer brings.
#include "rfs/core/byte_reader.hpp"
#include "rfs/core/crc32.hpp"
#else
#include "rfs/rfs.hpp"
#endif

int main() {
  const std::vector<uint8_t> bytes = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  if (rfs::core::Crc32(bytes) != 0xCBF43926u) {
    std::fprintf(stderr, "Crc32 gave a wrong value\n");
    return 1;
  }
  rfs::core::ByteReader reader(bytes, "consumer");
  auto past_end = reader.ReadBytes(10);
  if (past_end.ok() || !absl::IsDataLoss(past_end.status())) {
    std::fprintf(stderr, "ByteReader did not reject a read past the end\n");
    return 1;
  }
  std::printf("rfs consumer OK: %s\n", std::string(past_end.status().message()).c_str());
  return 0;
}
