// libFuzzer entry point for terms dictionaries and postings (the field entries of `.tmd` or of
// `.tim`'s directory, the blocks of `.tim` and the documents of `.doc`, in every postings format
// SegmentTerms reads): any input must read or fail with a clean status, never crash, hang or
// read out of bounds. Checksums are not in the way: the parsers are called on the bytes directly.
//
// Input: byte 0 the postings format (modulo 8, in PostingsFormat's order), byte 1 the dictionary
// version, byte 2 max_doc / 8 (times 256 when byte 1 has bit 7 set), bytes 3-4 the length of the
// field entries, bytes 5-6 the length of `.tim`; then the field entries, `.tim`, and `.doc` (the
// rest). Lucene103's trie roots are looked up in `.tim`'s bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "rfs/core/byte_reader.hpp"

#include "lucene/codecs/terms_internal.hpp"

namespace {

using rfs::lucene::FieldInfo;
using rfs::lucene::FieldInfos;
namespace internal = rfs::lucene::internal;

// Fields numbered 0-3, indexed with documents only.
const FieldInfos& Fields() {
  static const FieldInfos fields = [] {
    std::vector<FieldInfo> list;
    for (int32_t i = 0; i < 4; ++i) {
      FieldInfo field;
      field.name = "t" + std::to_string(i);
      field.number = i;
      field.index_options = 1;
      list.push_back(field);
    }
    return FieldInfos("Lucene94FieldInfos", 2, std::move(list));
  }();
  return fields;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 7) return 0;
  internal::TermsSource source;
  source.format = static_cast<internal::PostingsFormat>(data[0] % 8);
  source.dict_version = data[1] & 0x7f;
  source.postings_version = 1;
  const int32_t max_doc = data[2] * 8 * ((data[1] & 0x80) != 0 ? 256 : 1);
  const size_t meta_end = std::min<size_t>(size, 7 + ((size_t{data[3]} << 8) | data[4]));
  const size_t tim_end = std::min<size_t>(size, meta_end + ((size_t{data[5]} << 8) | data[6]));
  source.tim = std::span<const uint8_t>(data + meta_end, tim_end - meta_end);
  source.doc = std::span<const uint8_t>(data + tim_end, size - tim_end);
  source.tim_name = "fuzz.tim";
  source.doc_name = "fuzz.doc";
  for (int width = 1; width <= 32; ++width) {
    source.lucene50_bits[static_cast<size_t>(width)] = width;
    source.lucene50_single_block[static_cast<size_t>(width)] = width % 5 == 0;
  }
  rfs::core::ByteReader in(std::span<const uint8_t>(data + 7, meta_end - 7), "fuzz.tmd");
  std::map<int32_t, internal::FieldTermsMeta> entries;
  if (!internal::ParseTermsFields(in, source, Fields(), max_doc, source.tim, "fuzz.tip", entries)
           .ok()) {
    return 0;
  }
  for (const auto& [number, entry] : entries) {
    uint64_t seen = 0;
    (void)internal::ScanTerms(
        source, *Fields().ByNumber(number), entry, max_doc,
        [&](std::string_view, std::span<const int32_t> docs) { seen += docs.size(); });
  }
  return 0;
}
