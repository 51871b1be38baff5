// libFuzzer entry point for points (the `.kdm` BKD metadata of the Lucene86 and Lucene90 formats
// and the leaf blocks of `.kdd`): any input must read or fail with a clean status, never crash,
// hang or read out of bounds. Checksums are not in the way: the parsers are called on the bytes
// directly.
//
// Input: byte 0 the byte order (even: little-endian, Lucene 9-10; odd: big-endian, Lucene 8),
// byte 1 max_doc / 8 (times 256 when byte 0 has bit 1 set), bytes 2-3 where the metadata ends;
// the metadata follows from byte 4, the rest after it is the data. With bit 2 of byte 0 set the
// metadata is a Lucene60 `.dii` (field offsets into the data, where the BKD headers lie).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rfs/core/byte_reader.hpp"

#include "lucene/codecs/points_internal.hpp"

namespace {

using rfs::lucene::FieldInfo;
using rfs::lucene::FieldInfos;
namespace internal = rfs::lucene::internal;

// Fields numbered 0-7, each a one-dimensional point field.
const FieldInfos& Fields() {
  static const FieldInfos fields = [] {
    std::vector<FieldInfo> list;
    for (int32_t i = 0; i < 8; ++i) {
      FieldInfo field;
      field.name = "p" + std::to_string(i);
      field.number = i;
      field.point_dimension_count = 1;
      field.point_index_dimension_count = 1;
      field.point_num_bytes = 8;
      list.push_back(field);
    }
    return FieldInfos("Lucene94FieldInfos", 2, std::move(list));
  }();
  return fields;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const auto order = data[0] % 2 == 0 ? rfs::core::ByteOrder::kLittle : rfs::core::ByteOrder::kBig;
  const int32_t max_doc = data[1] * 8 * ((data[0] & 2) != 0 ? 256 : 1);
  const size_t meta_end = std::min<size_t>(size, 4 + ((size_t{data[2]} << 8) | data[3]));
  const std::span<const uint8_t> meta(data + 4, meta_end - 4);
  const std::span<const uint8_t> values(data + meta_end, size - meta_end);
  const bool lucene60 = (data[0] & 4) != 0;
  rfs::core::ByteReader in(meta, lucene60 ? "fuzz.dii" : "fuzz.kdm");
  auto entries = lucene60 ? internal::ParseLucene60Points(in, values, "fuzz.dim", Fields())
                          : internal::ParsePointsMeta(in, order, Fields());
  if (!entries.ok()) return 0;
  for (const auto& [number, entry] : *entries) {
    uint64_t seen = 0;
    (void)internal::ScanPoints(values, "fuzz.kdd", order, entry, max_doc,
                               [&](int32_t, std::span<const uint8_t>) { ++seen; });
  }
  return 0;
}
