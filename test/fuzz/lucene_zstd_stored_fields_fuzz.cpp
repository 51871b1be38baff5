// libFuzzer entry point for the zstd stored-fields block layouts in the
// Lucene 9/10 container (Elasticsearch ZstdStoredFields814, OpenSearch
// CustomStoredFieldsZstd and CustomStoredFieldsZstdNoDict): any input must
// decode or fail with a clean status, never crash, hang or read out of bounds.
//
// Input: byte 0 picks the format (bits 0-1: ES zstd, OpenSearch zstd with
// dictionary, OpenSearch zstd_no_dict; bits 2-3 the chunk size: 14 KiB,
// 240 KiB, 480 KiB or 1 KiB), byte 1 maxDoc - 1, the rest is the `.fdt` body
// after its header.
#include <cstddef>
#include <cstdint>
#include <span>

#include "lucene/codecs/stored_fields_internal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  using rfs::lucene::internal::Compression;
  static constexpr Compression kCompressions[] = {Compression::kZstd, Compression::kZstdWithDict,
                                                  Compression::kZstdNoDict,
                                                  Compression::kZstdNoDict};
  static constexpr int32_t kChunkSizes[] = {14 * 1024, 240 * 1024, 480 * 1024, 1024};
  rfs::lucene::internal::StoredFieldsFormat format;
  format.compression = kCompressions[data[0] & 3];
  format.lucene90_ints = true;
  format.order = rfs::core::ByteOrder::kLittle;
  format.token_dirty_bit = true;
  format.chunk_size = kChunkSizes[(data[0] >> 2) & 3];
  const int32_t max_doc = int32_t{data[1]} + 1;
  (void)rfs::lucene::internal::DecodeAllChunksForFuzzing(
      std::span<const uint8_t>(data + 2, size - 2), format, max_doc);
  return 0;
}
