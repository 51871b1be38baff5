// libFuzzer entry point for doc values (`.dvm` metadata of the Lucene 7/8/9-10 formats and
// Elasticsearch's ES87TSDB and ES819TSDB, the IndexedDISI and packed readers over `.dvd` bytes, and
// the TSDB block decoders): any input must read or fail with a clean status, never crash, hang or
// read out of bounds. Checksums are not in the way: the parsers are called on the bytes directly.
//
// Input: byte 0 picks the codec and the metadata version (0-8: Lucene70, 80, 90 × versions 0-2;
// 9 and above: ES819TSDB when odd, ES87TSDB when even), byte 1 max_doc / 8 (and the bits of TSDB
// ordinals), bytes 2-3 where the metadata ends; the rest after it is the data.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rfs/core/byte_reader.hpp"

#include "lucene/codecs/doc_values_internal.hpp"

namespace {

using rfs::lucene::DocValuesType;
using rfs::lucene::FieldInfo;
using rfs::lucene::FieldInfos;
namespace internal = rfs::lucene::internal;

// One field of every doc-values type, numbered 0-4.
const FieldInfos& Fields() {
  static const FieldInfos fields = [] {
    std::vector<FieldInfo> list;
    const DocValuesType types[] = {DocValuesType::kNumeric, DocValuesType::kBinary,
                                   DocValuesType::kSorted, DocValuesType::kSortedSet,
                                   DocValuesType::kSortedNumeric};
    for (int32_t i = 0; i < 5; ++i) {
      FieldInfo field;
      field.name = "f" + std::to_string(i);
      field.number = i;
      field.doc_values_type = types[i];
      list.push_back(field);
    }
    return FieldInfos("Lucene94FieldInfos", 2, std::move(list));
  }();
  return fields;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const bool tsdb = data[0] >= 9;
  const internal::DvCodec codec =
      tsdb ? (data[0] % 2 == 1 ? internal::DvCodec::kES819TSDB : internal::DvCodec::kES87TSDB)
           : static_cast<internal::DvCodec>(data[0] % 3);
  const int32_t version = tsdb ? 0 : (data[0] / 3) % 3;
  const int32_t max_doc = data[1] * 8;
  const size_t meta_end = std::min<size_t>(size, 4 + ((size_t{data[2]} << 8) | data[3]));
  const std::span<const uint8_t> meta(data + 4, meta_end - 4);
  const std::span<const uint8_t> values(data + meta_end, size - meta_end);
  if (tsdb) {
    // The block decoders over the data, block after block until one fails.
    internal::TsdbBlock block;
    rfs::core::ByteReader numbers(values, "fuzz.dvd");
    while (numbers.remaining() > 0 && internal::DecodeTsdbNumbers(numbers, block).ok()) {
    }
    rfs::core::ByteReader ordinals(values, "fuzz.dvd");
    const int bits_per_ord = data[1] % 64 + 1;
    while (ordinals.remaining() > 0 &&
           internal::DecodeTsdbOrdinals(ordinals, bits_per_ord, block).ok()) {
    }
  }
  rfs::core::ByteReader in(meta, "fuzz.dvm");
  auto entries = internal::ParseDocValuesMeta(in, codec, version, Fields());
  if (!entries.ok()) return 0;
  const rfs::core::ByteOrder order = internal::DocValuesByteOrder(codec);
  for (const auto& [number, entry] : *entries) {
    // Which documents have a value, then the packed values of a numeric field.
    internal::DocsWithFieldReader docs(entry.numeric.docs, values, "fuzz.dvd", order,
                                       codec != internal::DvCodec::kLucene70, max_doc);
    for (int32_t doc = 0; doc < max_doc; ++doc) {
      auto has = docs.AdvanceExact(doc);
      if (!has.ok()) break;
      if (*has && entry.numeric.bits_per_value > 0 && entry.numeric.bits_per_value <= 64) {
        if (!internal::DirectRead(values, "fuzz.dvd", entry.numeric.values_offset,
                                  entry.numeric.bits_per_value, docs.index(), order)
                 .ok()) {
          break;
        }
      }
    }
  }
  return 0;
}
