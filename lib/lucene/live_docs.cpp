// Live docs (FORMATS.md C.9) and soft deletes through NUMERIC doc values
// (C.10-C.12; Lucene70/80/90DocValuesProducer.java, IndexedDISI.java,
// DirectMonotonicReader.java).
#include <bit>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/format_util_internal.hpp"
#include "lucene/live_docs_internal.hpp"
#include "lucene/lucene4_internal.hpp"

namespace rfs::lucene {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;
using internal::FileBytes;

LiveDocs LiveDocs::AllLive(int32_t max_doc) {
  LiveDocs out;
  out.max_doc_ = max_doc;
  out.words_.assign((static_cast<size_t>(max_doc) + 63) / 64, ~uint64_t{0});
  if (max_doc % 64 != 0) {
    out.words_.back() = (uint64_t{1} << (max_doc % 64)) - 1;
  }
  return out;
}

LiveDocs LiveDocs::FromWords(int32_t max_doc, std::vector<uint64_t> words) {
  LiveDocs out;
  out.max_doc_ = max_doc;
  out.words_ = std::move(words);
  out.words_.resize((static_cast<size_t>(max_doc) + 63) / 64);
  if (max_doc % 64 != 0) {
    out.words_.back() &= (uint64_t{1} << (max_doc % 64)) - 1;
  }
  return out;
}

int32_t LiveDocs::CountLive() const {
  int64_t n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return static_cast<int32_t>(n);
}

absl::StatusOr<LiveDocs> ReadHardLiveDocs(const core::IDirectory& index_dir,
                                          const SegmentCommitInfo& segment) {
  const int32_t max_doc = segment.max_doc();
  if (segment.del_gen == -1) return LiveDocs::AllLive(max_doc);
  // Lucene 4 segments keep deletions in a `.del` BitVector.
  if (internal::IsLucene4Segment(segment)) return internal::ReadLucene4LiveDocs(index_dir, segment);
  const std::string suffix = internal::Base36(segment.del_gen);
  const std::string name = internal::SegmentFileName(segment.name, suffix, "liv");
  auto status_context = StrCat("segment ", segment.name);
  auto bytes = FileBytes::Open(index_dir, name);
  if (!bytes.ok()) return core::WithContext(bytes.status(), status_context);
  ByteReader in = bytes->Reader();
  static constexpr std::string_view kNames[] = {"Lucene50LiveDocs", "Lucene90LiveDocs"};
  static constexpr std::string_view kLegacy[] = {"Lucene40LiveDocs"};
  size_t which = 0;
  auto header =
      internal::ReadFileHeader(in, {kNames, 0, 0, kLegacy}, &segment.id, suffix, true, &which);
  if (!header.ok()) return core::WithContext(header.status(), status_context);
  const ByteOrder order = which == 0 ? ByteOrder::kBig : ByteOrder::kLittle;
  const size_t num_words = (static_cast<size_t>(max_doc) + 63) / 64;
  if (in.remaining() != num_words * 8 + codec::kFooterLength) {
    return in.Error(StrCat("live docs of ", in.remaining() - 16, " bytes, expected ", num_words * 8,
                           " for ", max_doc, " docs"));
  }
  std::vector<uint64_t> words(num_words);
  for (auto& w : words) {
    RFS_ASSIGN_OR_RETURN(w, in.ReadU64(order));
  }
  LiveDocs live = LiveDocs::FromWords(max_doc, std::move(words));
  const int32_t deleted = max_doc - live.CountLive();
  if (deleted != segment.del_count) {
    return core::DataLossAt(
        name, 0,
        StrCat(deleted, " deleted docs in the bit set but segments_N says ", segment.del_count));
  }
  return live;
}

namespace {

// ---- .dvm entries (FORMATS.md C.11) ----

enum DvCodec : size_t { kLucene70 = 0, kLucene80, kLucene90 };
constexpr std::string_view kMetaNames[] = {"Lucene70DocValuesMetadata", "Lucene80DocValuesMetadata",
                                           "Lucene90DocValuesMetadata"};
constexpr std::string_view kDataNames[] = {"Lucene70DocValuesData", "Lucene80DocValuesData",
                                           "Lucene90DocValuesData"};
// Highest .dvm version read: Lucene70 0; Lucene80 2
// (VERSION_CONFIGURABLE_COMPRESSION); Lucene90 2
// (VERSION_SKIPPER_MAX_VALUE_COUNT; 1 = skip index in its own .dvs file).
constexpr int32_t kMaxMetaVersion[] = {0, 2, 2};

// .dvm type codes (different from the .fnm ones).
constexpr uint8_t kNumeric = 0, kBinary = 1, kSorted = 2, kSortedSet = 3, kSortedNumeric = 4;

struct DocsWithField {
  int64_t offset = -2;
  int64_t length = 0;
  int8_t dense_rank_power = -1;
};

class MetaParser {
 public:
  MetaParser(ByteReader& in, DvCodec codec, int32_t version, const FieldInfos& fields)
      : in_(in),
        codec_(codec),
        version_(version),
        fields_(fields),
        order_(codec == kLucene90 ? ByteOrder::kLittle : ByteOrder::kBig) {}

  // Parses entries until `target`'s, returning its docs-with-field.
  absl::StatusOr<DocsWithField> FindField(int32_t target) {
    for (;;) {
      const size_t at = in_.position();
      RFS_ASSIGN_OR_RETURN(uint32_t raw, in_.ReadU32(order_));
      const auto number = static_cast<int32_t>(raw);
      if (number == -1) {
        return in_.ErrorAt(at, StrCat("no doc values entry for field ", target));
      }
      const FieldInfo* info = fields_.ByNumber(number);
      if (info == nullptr) {
        return in_.ErrorAt(at, StrCat("invalid field number ", number));
      }
      const size_t type_at = in_.position();
      RFS_ASSIGN_OR_RETURN(uint8_t type, in_.ReadByte());
      if (codec_ == kLucene90 && info->doc_values_skip_index != 0) {
        // Skipper record: offset, length, maxValue, minValue (i64), docCount,
        // maxDocId (i32), and from version 2 maxValueCount (i32).
        RFS_RETURN_IF_ERROR(in_.Skip(version_ >= 2 ? 44 : 40));
      }
      DocsWithField dwf;
      switch (type) {
        case kNumeric: {
          RFS_ASSIGN_OR_RETURN(dwf, Numeric());
          break;
        }
        case kBinary:
          RFS_RETURN_IF_ERROR(Binary(*info));
          break;
        case kSorted:
          RFS_RETURN_IF_ERROR(Sorted());
          break;
        case kSortedSet:
          RFS_RETURN_IF_ERROR(SortedSet());
          break;
        case kSortedNumeric:
          RFS_RETURN_IF_ERROR(SortedNumeric().status());
          break;
        default:
          return in_.ErrorAt(type_at, StrCat("invalid doc values type ", int{type}));
      }
      if (number == target) {
        if (type != kNumeric) {
          return in_.ErrorAt(type_at, StrCat("soft-deletes field ", number,
                                             " is not NUMERIC (type ", int{type}, ")"));
        }
        return dwf;
      }
    }
  }

 private:
  absl::StatusOr<int64_t> Long() {
    RFS_ASSIGN_OR_RETURN(uint64_t v, in_.ReadU64(order_));
    return static_cast<int64_t>(v);
  }
  absl::StatusOr<int32_t> Int() {
    RFS_ASSIGN_OR_RETURN(uint32_t v, in_.ReadU32(order_));
    return static_cast<int32_t>(v);
  }
  absl::Status SkipLongs(int n) { return in_.Skip(size_t(n) * 8); }

  // DirectMonotonicReader.loadMeta: ceil(n / 2^shift) records of 21 bytes.
  absl::Status SkipMonotonic(int64_t n, int32_t shift) {
    if (shift < 0 || shift > 62 || n < 0) {
      return in_.Error(StrCat("invalid monotonic block shift ", shift));
    }
    const uint64_t blocks = (static_cast<uint64_t>(n) + (uint64_t{1} << shift) - 1) >> shift;
    if (blocks > in_.remaining() / 21) {
      return in_.Error(StrCat("monotonic metadata of ", blocks, " blocks runs past the end"));
    }
    return in_.Skip(blocks * 21);
  }

  absl::StatusOr<DocsWithField> DocsWithFieldHeader() {
    DocsWithField dwf;
    RFS_ASSIGN_OR_RETURN(dwf.offset, Long());
    RFS_ASSIGN_OR_RETURN(dwf.length, Long());
    if (codec_ != kLucene70) {
      RFS_RETURN_IF_ERROR(in_.Skip(2));  // jumpTableEntryCount
      RFS_ASSIGN_OR_RETURN(uint8_t power, in_.ReadByte());
      dwf.dense_rank_power = static_cast<int8_t>(power);
    }
    return dwf;
  }

  struct NumericInfo {
    DocsWithField dwf;
    int64_t num_values = 0;
  };

  absl::StatusOr<NumericInfo> NumericBody() {
    NumericInfo out;
    RFS_ASSIGN_OR_RETURN(out.dwf, DocsWithFieldHeader());
    RFS_ASSIGN_OR_RETURN(out.num_values, Long());
    const size_t at = in_.position();
    RFS_ASSIGN_OR_RETURN(int32_t table_size, Int());
    if (table_size > 256) {
      return in_.ErrorAt(at, StrCat("invalid table size ", table_size));
    }
    if (table_size > 0) RFS_RETURN_IF_ERROR(SkipLongs(table_size));
    RFS_RETURN_IF_ERROR(in_.Skip(1));   // bitsPerValue
    RFS_RETURN_IF_ERROR(SkipLongs(4));  // min, gcd, valuesOffset, valuesLength
    if (codec_ != kLucene70) RFS_RETURN_IF_ERROR(SkipLongs(1));  // jump table
    return out;
  }

  absl::StatusOr<DocsWithField> Numeric() {
    RFS_ASSIGN_OR_RETURN(NumericInfo info, NumericBody());
    return info.dwf;
  }

  absl::Status Binary(const FieldInfo& info) {
    RFS_RETURN_IF_ERROR(SkipLongs(2));  // dataOffset, dataLength
    RFS_RETURN_IF_ERROR(DocsWithFieldHeader().status());
    RFS_ASSIGN_OR_RETURN(int32_t num_docs, Int());
    RFS_ASSIGN_OR_RETURN(int32_t min_length, Int());
    RFS_ASSIGN_OR_RETURN(int32_t max_length, Int());
    bool compressed = false;
    if (codec_ == kLucene80) {
      auto it = info.attributes.find("Lucene80DocValuesFormat.mode");
      compressed = version_ == 1 || (version_ >= 2 && it != info.attributes.end() &&
                                     it->second == "BEST_COMPRESSION");
    }
    if (compressed) {
      if (num_docs > 0) {
        RFS_RETURN_IF_ERROR(SkipLongs(1));  // addressesOffset
        RFS_ASSIGN_OR_RETURN(uint32_t chunks, in_.ReadVInt());
        RFS_RETURN_IF_ERROR(in_.ReadVInt().status());  // docsPerChunkShift
        RFS_RETURN_IF_ERROR(in_.ReadVInt().status());  // maxUncompressedChunkSize
        RFS_ASSIGN_OR_RETURN(uint32_t shift, in_.ReadVInt());
        RFS_RETURN_IF_ERROR(SkipMonotonic(chunks, static_cast<int32_t>(shift)));
        RFS_RETURN_IF_ERROR(SkipLongs(1));  // addressesLength
      }
    } else if (min_length < max_length) {
      RFS_RETURN_IF_ERROR(SkipLongs(1));
      RFS_ASSIGN_OR_RETURN(uint32_t shift, in_.ReadVInt());
      RFS_RETURN_IF_ERROR(SkipMonotonic(int64_t{num_docs} + 1, static_cast<int32_t>(shift)));
      RFS_RETURN_IF_ERROR(SkipLongs(1));
    }
    return absl::OkStatus();
  }

  absl::Status TermsDict() {
    RFS_ASSIGN_OR_RETURN(uint64_t size_raw, in_.ReadVLong());
    const auto size = static_cast<int64_t>(size_raw);
    int32_t dict_shift = 6;  // TERMS_DICT_BLOCK_LZ4_SHIFT
    bool compressed = codec_ == kLucene90;
    if (codec_ != kLucene90) {
      RFS_ASSIGN_OR_RETURN(int32_t code, Int());
      // Lucene80: TERMS_DICT_BLOCK_LZ4_SHIFT << 16 | LZ4 code 1.
      if (codec_ == kLucene80 && code == ((6 << 16) | 1)) {
        compressed = true;
      } else {
        dict_shift = code;
      }
    }
    if (dict_shift < 0 || dict_shift > 62) {
      return in_.Error(StrCat("invalid terms dict block shift ", dict_shift));
    }
    RFS_ASSIGN_OR_RETURN(int32_t block_shift, Int());
    const int64_t blocks = static_cast<int64_t>(
        (static_cast<uint64_t>(size) + (uint64_t{1} << dict_shift) - 1) >> dict_shift);
    RFS_RETURN_IF_ERROR(SkipMonotonic(blocks, block_shift));
    RFS_RETURN_IF_ERROR(in_.Skip(4));                  // maxTermLength
    if (compressed) RFS_RETURN_IF_ERROR(in_.Skip(4));  // maxBlockLength
    RFS_RETURN_IF_ERROR(SkipLongs(4));
    RFS_ASSIGN_OR_RETURN(int32_t index_shift, Int());
    if (index_shift < 0 || index_shift > 62) {
      return in_.Error(StrCat("invalid terms index shift ", index_shift));
    }
    const int64_t index_size = static_cast<int64_t>(
        (static_cast<uint64_t>(size) + (uint64_t{1} << index_shift) - 1) >> index_shift);
    RFS_RETURN_IF_ERROR(SkipMonotonic(1 + index_size, block_shift));
    return SkipLongs(4);
  }

  absl::Status Sorted() {
    if (codec_ == kLucene90) {
      RFS_RETURN_IF_ERROR(NumericBody().status());
    } else {
      RFS_RETURN_IF_ERROR(DocsWithFieldHeader().status());
      RFS_RETURN_IF_ERROR(in_.Skip(4 + 1));  // numDocsWithField, bpv
      RFS_RETURN_IF_ERROR(SkipLongs(2));     // ordsOffset, ordsLength
    }
    return TermsDict();
  }

  absl::StatusOr<int64_t> SortedNumeric() {
    RFS_ASSIGN_OR_RETURN(NumericInfo info, NumericBody());
    RFS_ASSIGN_OR_RETURN(int32_t num_docs, Int());
    if (num_docs != info.num_values) {
      RFS_RETURN_IF_ERROR(SkipLongs(1));
      RFS_ASSIGN_OR_RETURN(uint32_t shift, in_.ReadVInt());
      RFS_RETURN_IF_ERROR(SkipMonotonic(int64_t{num_docs} + 1, static_cast<int32_t>(shift)));
      RFS_RETURN_IF_ERROR(SkipLongs(1));
    }
    return num_docs;
  }

  absl::Status SortedSet() {
    const size_t at = in_.position();
    RFS_ASSIGN_OR_RETURN(uint8_t multi, in_.ReadByte());
    if (multi == 0) return Sorted();
    if (multi != 1) {
      return in_.ErrorAt(at, StrCat("invalid multiValued byte ", int{multi}));
    }
    if (codec_ == kLucene90) {
      RFS_RETURN_IF_ERROR(SortedNumeric().status());
    } else {
      RFS_RETURN_IF_ERROR(DocsWithFieldHeader().status());
      RFS_RETURN_IF_ERROR(in_.Skip(1));   // bpv
      RFS_RETURN_IF_ERROR(SkipLongs(2));  // ordsOffset, ordsLength
      RFS_ASSIGN_OR_RETURN(int32_t num_docs, Int());
      RFS_RETURN_IF_ERROR(SkipLongs(1));
      RFS_ASSIGN_OR_RETURN(uint32_t shift, in_.ReadVInt());
      RFS_RETURN_IF_ERROR(SkipMonotonic(int64_t{num_docs} + 1, static_cast<int32_t>(shift)));
      RFS_RETURN_IF_ERROR(SkipLongs(1));
    }
    return TermsDict();
  }

  ByteReader& in_;
  DvCodec codec_;
  int32_t version_;
  const FieldInfos& fields_;
  ByteOrder order_;
};

// Clears every doc of the IndexedDISI at `in` (FORMATS.md C.12).
absl::Status ClearDisi(ByteReader& in, ByteOrder order, bool has_rank, int8_t rank_power,
                       LiveDocs& live) {
  int64_t last_block = -1;
  for (;;) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(uint16_t block, in.ReadU16(order));
    RFS_ASSIGN_OR_RETURN(uint16_t card_minus_1, in.ReadU16(order));
    // The sentinel block of NO_MORE_DOCS (0x7FFFFFFF >>> 16).
    if (block == 0x7FFF) return absl::OkStatus();
    if (block <= last_block) {
      return in.ErrorAt(at, StrCat("IndexedDISI block ", block, " out of order"));
    }
    last_block = block;
    const int64_t base = int64_t{block} << 16;
    const uint32_t card = uint32_t{card_minus_1} + 1;
    auto clear = [&](int64_t doc) -> absl::Status {
      if (doc >= live.max_doc()) {
        return in.ErrorAt(at, StrCat("IndexedDISI doc ", doc, " beyond maxDoc ", live.max_doc()));
      }
      live.Delete(static_cast<int32_t>(doc));
      return absl::OkStatus();
    };
    if (card <= 4095) {  // IndexedDISI.MAX_ARRAY_LENGTH: SPARSE
      for (uint32_t i = 0; i < card; ++i) {
        RFS_ASSIGN_OR_RETURN(uint16_t low, in.ReadU16(order));
        RFS_RETURN_IF_ERROR(clear(base | low));
      }
    } else if (card == 65536) {  // ALL
      const int64_t end = std::min<int64_t>(base + 65536, live.max_doc());
      if (base >= live.max_doc()) {
        return in.ErrorAt(at, "IndexedDISI ALL block beyond maxDoc");
      }
      for (int64_t doc = base; doc < end; ++doc) live.Delete(static_cast<int32_t>(doc));
    } else {  // DENSE
      if (has_rank && rank_power != -1) {
        if (rank_power < 7 || rank_power > 15) {
          return in.ErrorAt(at, StrCat("invalid dense rank power ", int{rank_power}));
        }
        RFS_RETURN_IF_ERROR(in.Skip(size_t{2} * (65536 >> rank_power)));
      }
      uint32_t seen = 0;
      for (int w = 0; w < 1024; ++w) {
        RFS_ASSIGN_OR_RETURN(uint64_t word, in.ReadU64(order));
        seen += std::popcount(word);
        while (word != 0) {
          const int bit = std::countr_zero(word);
          word &= word - 1;
          RFS_RETURN_IF_ERROR(clear(base + w * 64 + bit));
        }
      }
      if (seen != card) {
        return in.ErrorAt(at, StrCat("DENSE block holds ", seen, " docs, header says ", card));
      }
    }
  }
}

}  // namespace

absl::Status ApplySoftDeletes(const core::IDirectory& index_dir,
                              const core::IDirectory& segment_dir, const SegmentCommitInfo& segment,
                              const FieldInfos& fields, LiveDocs& live) {
  const FieldInfo* field = fields.SoftDeletesField();
  if (field == nullptr) {
    field = fields.ByName("__soft_deletes");
    if (field != nullptr && field->doc_values_type != DocValuesType::kNumeric) {
      field = nullptr;
    }
  }
  if (field == nullptr || field->doc_values_type == DocValuesType::kNone) {
    return absl::OkStatus();
  }
  const std::string context =
      StrCat("segment ", segment.name, " soft deletes field '", field->name, "'");
  auto format = field->attributes.find("PerFieldDocValuesFormat.format");
  auto suffix = field->attributes.find("PerFieldDocValuesFormat.suffix");
  if (format == field->attributes.end() || suffix == field->attributes.end()) {
    return absl::DataLossError(StrCat(context, ": missing PerFieldDocValuesFormat attributes"));
  }
  // C.5: <seg>[_<dvGen>]_<Format>_<suffix>.dvm; gen files live outside the
  // compound file.
  std::string segment_suffix = StrCat(format->second, "_", suffix->second);
  const bool gen = field->doc_values_gen > 0;
  if (gen) {
    segment_suffix = StrCat(internal::Base36(field->doc_values_gen), "_", segment_suffix);
  }
  const core::IDirectory& dir = gen ? index_dir : segment_dir;
  const std::string meta_name = internal::SegmentFileName(segment.name, segment_suffix, "dvm");
  const std::string data_name = internal::SegmentFileName(segment.name, segment_suffix, "dvd");

  auto meta = FileBytes::Open(dir, meta_name);
  if (!meta.ok()) return core::WithContext(meta.status(), context);
  ByteReader in = meta->Reader();
  size_t which = 0;
  auto header =
      internal::ReadFileHeader(in, {kMetaNames, 0, 2}, &segment.id, segment_suffix, true, &which);
  if (!header.ok()) return core::WithContext(header.status(), context);
  const auto codec = static_cast<DvCodec>(which);
  if (header->header.version > kMaxMetaVersion[which]) {
    return absl::UnimplementedError(StrCat(meta_name, ": unsupported version ",
                                           header->header.version, " of codec '",
                                           header->header.codec, "' in segment ", segment.name));
  }
  MetaParser parser(in, codec, header->header.version, fields);
  auto dwf = parser.FindField(field->number);
  if (!dwf.ok()) return core::WithContext(dwf.status(), context);
  if (dwf->offset == -2) return absl::OkStatus();  // no doc has a value
  if (dwf->offset == -1) {                         // every doc has one
    for (int32_t d = 0; d < live.max_doc(); ++d) live.Delete(d);
    return absl::OkStatus();
  }
  auto data = FileBytes::Open(dir, data_name);
  if (!data.ok()) return core::WithContext(data.status(), context);
  ByteReader data_in = data->Reader();
  // The whole .dvd is checksummed before one bit of it decides liveness: a damaged byte here
  // would silently resurrect a deleted document or drop a live one.
  auto data_header = internal::ReadFileHeader(
      data_in,
      {std::span<const std::string_view>(&kDataNames[which], 1), 0, kMaxMetaVersion[which]},
      &segment.id, segment_suffix, /*verify_crc=*/true);
  if (!data_header.ok()) return core::WithContext(data_header.status(), context);
  const uint64_t limit = data->bytes().size() - codec::kFooterLength;
  if (dwf->offset < 0 || dwf->length < 0 || static_cast<uint64_t>(dwf->offset) > limit ||
      static_cast<uint64_t>(dwf->length) > limit - dwf->offset) {
    return core::DataLossAt(meta_name, 0,
                            StrCat("docs-with-field range [", dwf->offset, ", +", dwf->length,
                                   ") outside ", data_name));
  }
  ByteReader disi(data->bytes().subspan(dwf->offset, dwf->length), data_name, dwf->offset);
  return core::WithContext(
      ClearDisi(disi, codec == kLucene90 ? ByteOrder::kLittle : ByteOrder::kBig, codec != kLucene70,
                dwf->dense_rank_power, live),
      context);
}

absl::StatusOr<LiveDocs> ReadLiveDocs(const core::IDirectory& index_dir,
                                      const core::IDirectory& segment_dir,
                                      const SegmentCommitInfo& segment, const FieldInfos& fields) {
  RFS_ASSIGN_OR_RETURN(LiveDocs live, ReadHardLiveDocs(index_dir, segment));
  RFS_RETURN_IF_ERROR(ApplySoftDeletes(index_dir, segment_dir, segment, fields, live));
  return live;
}

}  // namespace rfs::lucene
