// libFuzzer entry point for vector metadata (the `.vem` of Lucene 9.0-9.8's HNSW formats and the
// `.vemf` of the Lucene99 flat format that Lucene 9.9 to 10 write) and the docs-with-field
// bitsets over `.vec` bytes: any input must read or fail with a clean status, never crash, hang or
// read out of bounds. Checksums are not in the way: the parser is called on the bytes directly.
//
// Input: byte 0 picks the format, byte 1 max_doc / 8, bytes 2-3 where the metadata ends, bytes 4-11
// the vector dimensions of fields 0-7 (0: not a vector field); the metadata follows from byte 12,
// and the rest after it is the data.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rfs/core/byte_reader.hpp"

#include "lucene/codecs/vectors_internal.hpp"

namespace {

using rfs::lucene::FieldInfo;
using rfs::lucene::FieldInfos;
namespace internal = rfs::lucene::internal;

constexpr const char* kFormats[] = {"Lucene90HnswVectorsFormat", "Lucene91HnswVectorsFormat",
                                    "lucene92HnswVectorsFormat", "Lucene94HnswVectorsFormat",
                                    "Lucene95HnswVectorsFormat", "Lucene99HnswVectorsFormat"};

constexpr size_t kFields = 8;

// Fields numbered 0-7 of the given vector dimensions.
FieldInfos Fields(const uint8_t* dimensions) {
  std::vector<FieldInfo> list;
  for (size_t i = 0; i < kFields; ++i) {
    FieldInfo field;
    field.name = "v" + std::to_string(i);
    field.number = static_cast<int32_t>(i);
    field.vector_dimension = dimensions[i];
    list.push_back(field);
  }
  return FieldInfos("Lucene94FieldInfos", 2, std::move(list));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kHead = 4 + kFields;
  if (size < kHead) return 0;
  const char* format = kFormats[data[0] % std::size(kFormats)];
  const int32_t max_doc = data[1] * 8;
  const size_t meta_end = std::min<size_t>(size, kHead + ((size_t{data[2]} << 8) | data[3]));
  const FieldInfos fields = Fields(data + 4);
  const std::span<const uint8_t> meta(data + kHead, meta_end - kHead);
  const std::span<const uint8_t> values(data + meta_end, size - meta_end);
  rfs::core::ByteReader in(meta, "fuzz.vem");
  auto entries = internal::ParseVectorsMeta(in, format, fields);
  if (!entries.ok()) return 0;
  for (const auto& [number, entry] : *entries) {
    if (entry.explicit_docs) continue;  // a list checked while parsing
    internal::DocsWithFieldReader docs(entry.docs, values, "fuzz.vec",
                                       rfs::core::ByteOrder::kLittle, /*has_rank=*/true, max_doc);
    for (int32_t doc = 0; doc < max_doc; ++doc) {
      auto has = docs.AdvanceExact(doc);
      if (!has.ok()) break;
    }
  }
  return 0;
}
