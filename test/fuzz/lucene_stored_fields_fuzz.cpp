// libFuzzer entry point for the stored-fields chunk decoder (docs/formats.md
// C.7-C.8): any input must decode or fail with a clean status, never crash,
// hang or read out of bounds.
//
// Input: byte 0 picks the format (bits 0-1 compression: LZ4, DEFLATE, LZ4 and
// DEFLATE with preset dictionary; bit 2 Lucene90 framing, little-endian; bit 3
// the v4 dirty bit; bits 4-6 chunk size 1 KiB << n), byte 1 maxDoc - 1, the
// rest is the `.fdt` body after its header.
#include <cstddef>
#include <cstdint>
#include <span>

#include "lucene/codecs/stored_fields_internal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  using rfs::lucene::internal::Compression;
  rfs::lucene::internal::StoredFieldsFormat format;
  format.compression = static_cast<Compression>(data[0] & 3);
  format.lucene90_ints = (data[0] & 4) != 0;
  format.order = format.lucene90_ints ? rfs::core::ByteOrder::kLittle : rfs::core::ByteOrder::kBig;
  format.token_dirty_bit = format.lucene90_ints || (data[0] & 8) != 0;
  format.chunk_size = 1024 << ((data[0] >> 4) & 7);
  const int32_t max_doc = int32_t{data[1]} + 1;
  (void)rfs::lucene::internal::DecodeAllChunksForFuzzing(
      std::span<const uint8_t>(data + 2, size - 2), format, max_doc);
  return 0;
}
