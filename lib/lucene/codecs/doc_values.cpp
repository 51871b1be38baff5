// Doc values (Lucene70/80/90DocValuesProducer.java, IndexedDISI.java,
// DirectReader.java, LegacyDirectReader.java, DirectMonotonicReader.java; Elasticsearch's
// ES87TSDBDocValuesProducer.java, ES819TSDBDocValuesProducer.java).
#include <algorithm>
#include <bit>
#include <cstring>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/compression_internal.hpp"
#include "lucene/codecs/doc_values_internal.hpp"

namespace rfs::lucene::internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

// By DvCodec.
constexpr std::string_view kMetaNames[] = {
    "Lucene70DocValuesMetadata", "Lucene80DocValuesMetadata", "Lucene90DocValuesMetadata",
    "ES819TSDBDocValuesMetadata", "ES87TSDBDocValuesMetadata"};
constexpr std::string_view kDataNames[] = {"Lucene70DocValuesData", "Lucene80DocValuesData",
                                           "Lucene90DocValuesData", "ES819TSDBDocValuesData",
                                           "ES87TSDBDocValuesData"};
// Highest .dvm version read: Lucene70 0; Lucene80 2 (VERSION_CONFIGURABLE_COMPRESSION); Lucene90 2
// (VERSION_SKIPPER_MAX_VALUE_COUNT; 1 = skip index in its own .dvs file); ES819TSDB 0; ES87TSDB 0.
constexpr int32_t kMaxMetaVersion[] = {0, 2, 2, 0, 0};

class MetaParser {
 public:
  MetaParser(ByteReader& in, DvCodec codec, int32_t version, const FieldInfos& fields)
      : in_(in),
        codec_(codec),
        version_(version),
        fields_(fields),
        order_(DocValuesByteOrder(codec)) {}

  absl::StatusOr<std::map<int32_t, DocValuesEntry>> Parse(int32_t stop_at) {
    std::map<int32_t, DocValuesEntry> entries;
    for (;;) {
      const size_t at = in_.position();
      RFS_ASSIGN_OR_RETURN(int32_t number, Int());
      if (number == -1) {
        if (stop_at != -1) {
          return in_.ErrorAt(at, StrCat("no doc values entry for field ", stop_at));
        }
        return entries;
      }
      const FieldInfo* info = fields_.ByNumber(number);
      if (info == nullptr) return in_.ErrorAt(at, StrCat("invalid field number ", number));
      DocValuesEntry entry;
      entry.field_number = number;
      const size_t type_at = in_.position();
      RFS_ASSIGN_OR_RETURN(uint8_t type, in_.ReadByte());
      if (type > static_cast<uint8_t>(DvmType::kSortedNumeric)) {
        return in_.ErrorAt(type_at, StrCat("invalid doc values type ", int{type}));
      }
      entry.type = static_cast<DvmType>(type);
      if (codec_ == DvCodec::kLucene90 && info->doc_values_skip_index != 0) {
        // Skipper record: offset, length, maxValue, minValue (i64), docCount, maxDocId (i32),
        // and from version 2 maxValueCount (i32). Only used to skip ranges in queries.
        RFS_RETURN_IF_ERROR(in_.Skip(version_ >= 2 ? 44 : 40));
      } else if (tsdb() && info->doc_values_skip_index != 0) {
        RFS_RETURN_IF_ERROR(in_.Skip(40));  // the same record, without maxValueCount
      }
      switch (entry.type) {
        case DvmType::kNumeric:
          RFS_RETURN_IF_ERROR(NumericBody(entry.numeric));
          break;
        case DvmType::kBinary:
          RFS_RETURN_IF_ERROR(Binary(*info, entry.binary));
          break;
        case DvmType::kSorted:
          RFS_RETURN_IF_ERROR(Sorted(entry));
          break;
        case DvmType::kSortedSet:
          RFS_RETURN_IF_ERROR(SortedSet(entry));
          break;
        case DvmType::kSortedNumeric:
          RFS_RETURN_IF_ERROR(SortedNumeric(entry));
          break;
      }
      entries.emplace(number, std::move(entry));
      if (number == stop_at) return entries;
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

  // DirectMonotonicReader.loadMeta: ceil(n / 2^shift) records (i64 min, f32 avg, i64 offset,
  // u8 bitsPerValue).
  absl::Status Monotonic(int64_t n, int32_t shift, MonotonicMeta& out) {
    if (shift < 0 || shift > 62 || n < 0) {
      return in_.Error(StrCat("invalid monotonic block shift ", shift, " for ", n, " values"));
    }
    const uint64_t blocks = (static_cast<uint64_t>(n) + (uint64_t{1} << shift) - 1) >> shift;
    if (blocks > in_.remaining() / 21) {
      return in_.Error(StrCat("monotonic metadata of ", blocks, " blocks runs past the end"));
    }
    out.shift = shift;
    out.count = n;
    out.blocks.resize(blocks);
    for (auto& block : out.blocks) {
      RFS_ASSIGN_OR_RETURN(block.min, Long());
      RFS_ASSIGN_OR_RETURN(uint32_t bits, in_.ReadU32(order_));
      block.avg_increment = std::bit_cast<float>(bits);
      RFS_ASSIGN_OR_RETURN(block.offset, Long());
      const size_t bpv_at = in_.position();
      RFS_ASSIGN_OR_RETURN(block.bits_per_value, in_.ReadByte());
      if (block.bits_per_value > 64) {
        return in_.ErrorAt(bpv_at, StrCat("invalid bits per value ", int{block.bits_per_value}));
      }
    }
    return absl::OkStatus();
  }

  // i64 offset; VInt blockShift (or i32 for the terms dict); monotonic meta; i64 length.
  absl::Status Addresses(int64_t n, AddressesMeta& out) {
    RFS_ASSIGN_OR_RETURN(out.offset, Long());
    RFS_ASSIGN_OR_RETURN(uint32_t shift, in_.ReadVInt());
    RFS_RETURN_IF_ERROR(Monotonic(n, static_cast<int32_t>(shift), out.meta));
    RFS_ASSIGN_OR_RETURN(out.length, Long());
    return absl::OkStatus();
  }

  absl::Status DocsWithField(DocsWithFieldMeta& dwf) {
    RFS_ASSIGN_OR_RETURN(dwf.offset, Long());
    RFS_ASSIGN_OR_RETURN(dwf.length, Long());
    if (codec_ != DvCodec::kLucene70) {
      RFS_RETURN_IF_ERROR(in_.Skip(2));  // jumpTableEntryCount
      RFS_ASSIGN_OR_RETURN(uint8_t power, in_.ReadByte());
      dwf.dense_rank_power = static_cast<int8_t>(power);
    }
    return absl::OkStatus();
  }

  bool tsdb() const { return codec_ == DvCodec::kES819TSDB || codec_ == DvCodec::kES87TSDB; }

  // ES819TSDB's numeric entry: i64 numValues, i32 numDocsWithField; when there are values, i32
  // blocks' offsets shift (-1: a single ordinal, no blocks) and their monotonic meta, i64
  // offsets' offset and length, i64 values' offset and length; then the docs with a value.
  // ES87TSDB's has the docs with a value first, and no numDocsWithField.
  absl::Status TsdbNumericBody(NumericMeta& out, int32_t& num_docs_with_field) {
    out.tsdb = true;
    const bool es87 = codec_ == DvCodec::kES87TSDB;
    if (es87) RFS_RETURN_IF_ERROR(DocsWithField(out.docs));
    RFS_ASSIGN_OR_RETURN(out.num_values, Long());
    if (!es87) {
      RFS_ASSIGN_OR_RETURN(num_docs_with_field, Int());
    }
    if (out.num_values < 0 || num_docs_with_field < 0) {
      return in_.Error(StrCat("invalid numeric entry (", out.num_values, " values, ",
                              num_docs_with_field, " docs)"));
    }
    if (out.num_values > 0) {
      const size_t at = in_.position();
      RFS_ASSIGN_OR_RETURN(int32_t shift, Int());
      if (shift == -1) {
        out.tsdb_single_ordinal = true;
      } else if (shift == -2) {
        return absl::UnimplementedError(
            StrCat(in_.source(), " at offset ", at,
                   ": ordinals stored as ranges of documents are not read yet"));
      } else {
        const int64_t blocks = 1 + ((out.num_values - 1) >> kTsdbBlockShift);
        RFS_RETURN_IF_ERROR(Monotonic(blocks, shift, out.tsdb_blocks.meta));
      }
      RFS_ASSIGN_OR_RETURN(out.tsdb_blocks.offset, Long());
      RFS_ASSIGN_OR_RETURN(out.tsdb_blocks.length, Long());
      RFS_ASSIGN_OR_RETURN(out.values_offset, Long());
      RFS_ASSIGN_OR_RETURN(out.values_length, Long());
    }
    return es87 ? absl::OkStatus() : DocsWithField(out.docs);
  }

  // An ordinal takes the bits of the largest one (at least 1).
  static int BitsPerOrd(int64_t max_ord) {
    return max_ord <= 1 ? 1 : 64 - std::countl_zero(static_cast<uint64_t>(max_ord - 1));
  }

  absl::Status NumericBody(NumericMeta& out) {
    if (tsdb()) {
      int32_t ignored = 0;
      return TsdbNumericBody(out, ignored);
    }
    RFS_RETURN_IF_ERROR(DocsWithField(out.docs));
    RFS_ASSIGN_OR_RETURN(out.num_values, Long());
    const size_t at = in_.position();
    RFS_ASSIGN_OR_RETURN(int32_t table_size, Int());
    if (table_size > 256) return in_.ErrorAt(at, StrCat("invalid table size ", table_size));
    if (table_size >= 0) {
      out.table_encoded = true;
      out.table.resize(table_size);
      for (auto& v : out.table) {
        RFS_ASSIGN_OR_RETURN(v, Long());
      }
    } else if (table_size < -1) {
      if (codec_ == DvCodec::kLucene70 || table_size < -2 - 62) {
        return in_.ErrorAt(at, StrCat("invalid table size ", table_size));
      }
      out.block_shift = -2 - table_size;
    }
    const size_t bpv_at = in_.position();
    RFS_ASSIGN_OR_RETURN(out.bits_per_value, in_.ReadByte());
    // Values in blocks carry their own widths; the entry then says 0xFF.
    if (out.bits_per_value > 64 && !(out.block_shift >= 0 && out.bits_per_value == 0xFF)) {
      return in_.ErrorAt(bpv_at, StrCat("invalid bits per value ", int{out.bits_per_value}));
    }
    RFS_ASSIGN_OR_RETURN(out.min, Long());
    RFS_ASSIGN_OR_RETURN(out.gcd, Long());
    RFS_ASSIGN_OR_RETURN(out.values_offset, Long());
    RFS_ASSIGN_OR_RETURN(out.values_length, Long());
    if (codec_ != DvCodec::kLucene70) {
      RFS_ASSIGN_OR_RETURN(out.jump_table_offset, Long());
    }
    return absl::OkStatus();
  }

  absl::Status Binary(const FieldInfo& info, BinaryMeta& out) {
    RFS_ASSIGN_OR_RETURN(out.data_offset, Long());
    RFS_ASSIGN_OR_RETURN(out.data_length, Long());
    RFS_RETURN_IF_ERROR(DocsWithField(out.docs));
    RFS_ASSIGN_OR_RETURN(out.num_docs_with_field, Int());
    RFS_ASSIGN_OR_RETURN(out.min_length, Int());
    RFS_ASSIGN_OR_RETURN(out.max_length, Int());
    if (out.num_docs_with_field < 0 || out.min_length < 0 || out.max_length < out.min_length) {
      return in_.Error(StrCat("invalid binary entry (", out.num_docs_with_field, " docs, lengths ",
                              out.min_length, "..", out.max_length, ")"));
    }
    if (codec_ == DvCodec::kLucene80) {
      auto it = info.attributes.find("Lucene80DocValuesFormat.mode");
      out.compressed = version_ == 1 || (version_ >= 2 && it != info.attributes.end() &&
                                         it->second == "BEST_COMPRESSION");
    }
    if (out.compressed) {
      if (out.num_docs_with_field > 0) {
        AddressesMeta addresses;
        RFS_ASSIGN_OR_RETURN(addresses.offset, Long());
        RFS_ASSIGN_OR_RETURN(out.num_chunks, in_.ReadVInt());
        RFS_ASSIGN_OR_RETURN(out.docs_per_chunk_shift, in_.ReadVInt());
        RFS_ASSIGN_OR_RETURN(out.max_chunk_size, in_.ReadVInt());
        RFS_ASSIGN_OR_RETURN(uint32_t shift, in_.ReadVInt());
        RFS_RETURN_IF_ERROR(Monotonic(out.num_chunks, static_cast<int32_t>(shift), addresses.meta));
        RFS_ASSIGN_OR_RETURN(addresses.length, Long());
        out.addresses = std::move(addresses);
      }
    } else if (out.min_length < out.max_length) {
      AddressesMeta addresses;
      RFS_RETURN_IF_ERROR(Addresses(int64_t{out.num_docs_with_field} + 1, addresses));
      out.addresses = std::move(addresses);
    }
    return absl::OkStatus();
  }

  absl::Status TermsDict(TermsDictMeta& out) {
    RFS_ASSIGN_OR_RETURN(uint64_t size, in_.ReadVLong());
    out.size = static_cast<int64_t>(size);
    out.block_shift = 6;  // TERMS_DICT_BLOCK_LZ4_SHIFT
    out.lz4 = codec_ == DvCodec::kLucene90 || tsdb();
    if (codec_ == DvCodec::kLucene70 || codec_ == DvCodec::kLucene80) {
      RFS_ASSIGN_OR_RETURN(int32_t code, Int());
      // Lucene80: TERMS_DICT_BLOCK_LZ4_SHIFT << 16 | LZ4 code 1.
      if (codec_ == DvCodec::kLucene80 && code == ((6 << 16) | 1)) {
        out.lz4 = true;
      } else {
        out.block_shift = code;
      }
    }
    if (out.block_shift < 0 || out.block_shift > 30) {
      return in_.Error(StrCat("invalid terms dict block shift ", out.block_shift));
    }
    RFS_ASSIGN_OR_RETURN(int32_t address_shift, Int());
    const int64_t blocks =
        static_cast<int64_t>((size + (uint64_t{1} << out.block_shift) - 1) >> out.block_shift);
    RFS_RETURN_IF_ERROR(Monotonic(blocks, address_shift, out.block_addresses.meta));
    RFS_ASSIGN_OR_RETURN(out.max_term_length, Int());
    if (out.lz4) {
      RFS_ASSIGN_OR_RETURN(out.max_block_length, Int());
    }
    RFS_ASSIGN_OR_RETURN(out.data_offset, Long());
    RFS_ASSIGN_OR_RETURN(out.data_length, Long());
    RFS_ASSIGN_OR_RETURN(out.block_addresses.offset, Long());
    RFS_ASSIGN_OR_RETURN(out.block_addresses.length, Long());
    if (out.max_term_length < 0 || out.max_block_length < 0) {
      return in_.Error("invalid terms dict lengths");
    }
    // The reverse index used by seekCeil: not needed to look up terms by ord.
    RFS_ASSIGN_OR_RETURN(int32_t index_shift, Int());
    if (index_shift < 0 || index_shift > 62) {
      return in_.Error(StrCat("invalid terms index shift ", index_shift));
    }
    const int64_t index_size =
        static_cast<int64_t>((size + (uint64_t{1} << index_shift) - 1) >> index_shift);
    MonotonicMeta ignored;
    RFS_RETURN_IF_ERROR(Monotonic(1 + index_size, address_shift, ignored));
    return in_.Skip(4 * 8);
  }

  absl::Status Sorted(DocValuesEntry& entry) {
    if (tsdb()) {
      RFS_RETURN_IF_ERROR(TsdbNumericBody(entry.numeric, entry.num_docs_with_field));
      RFS_RETURN_IF_ERROR(TermsDict(entry.terms));
      entry.numeric.tsdb_bits_per_ord = BitsPerOrd(entry.terms.size);
      return absl::OkStatus();
    }
    if (codec_ == DvCodec::kLucene90) {
      RFS_RETURN_IF_ERROR(NumericBody(entry.numeric));
    } else {
      NumericMeta& ords = entry.numeric;
      RFS_RETURN_IF_ERROR(DocsWithField(ords.docs));
      RFS_ASSIGN_OR_RETURN(entry.num_docs_with_field, Int());
      RFS_ASSIGN_OR_RETURN(ords.bits_per_value, in_.ReadByte());
      if (ords.bits_per_value > 64) return in_.Error("invalid bits per value of ords");
      RFS_ASSIGN_OR_RETURN(ords.values_offset, Long());
      RFS_ASSIGN_OR_RETURN(ords.values_length, Long());
      ords.num_values = entry.num_docs_with_field;
    }
    return TermsDict(entry.terms);
  }

  absl::Status SortedNumeric(DocValuesEntry& entry) {
    if (codec_ == DvCodec::kES819TSDB) {
      RFS_RETURN_IF_ERROR(TsdbNumericBody(entry.numeric, entry.num_docs_with_field));
    } else {
      RFS_RETURN_IF_ERROR(NumericBody(entry.numeric));
      RFS_ASSIGN_OR_RETURN(entry.num_docs_with_field, Int());
    }
    if (entry.num_docs_with_field != entry.numeric.num_values) {
      AddressesMeta addresses;
      RFS_RETURN_IF_ERROR(Addresses(int64_t{entry.num_docs_with_field} + 1, addresses));
      entry.addresses = std::move(addresses);
    }
    return absl::OkStatus();
  }

  absl::Status SortedSet(DocValuesEntry& entry) {
    const size_t at = in_.position();
    RFS_ASSIGN_OR_RETURN(uint8_t multi, in_.ReadByte());
    if (multi == 0) return Sorted(entry);
    if (multi != 1) return in_.ErrorAt(at, StrCat("invalid multiValued byte ", int{multi}));
    entry.multi_valued = true;
    if (tsdb()) {
      RFS_RETURN_IF_ERROR(SortedNumeric(entry));
      RFS_RETURN_IF_ERROR(TermsDict(entry.terms));
      entry.numeric.tsdb_bits_per_ord = BitsPerOrd(entry.terms.size);
      return absl::OkStatus();
    }
    if (codec_ == DvCodec::kLucene90) {
      RFS_RETURN_IF_ERROR(SortedNumeric(entry));
    } else {
      NumericMeta& ords = entry.numeric;
      RFS_RETURN_IF_ERROR(DocsWithField(ords.docs));
      RFS_ASSIGN_OR_RETURN(ords.bits_per_value, in_.ReadByte());
      if (ords.bits_per_value > 64) return in_.Error("invalid bits per value of ords");
      RFS_ASSIGN_OR_RETURN(ords.values_offset, Long());
      RFS_ASSIGN_OR_RETURN(ords.values_length, Long());
      // values_length comes from the file: length * 8 / bits without overflowing (saturated).
      const uint64_t length = static_cast<uint64_t>(std::max<int64_t>(ords.values_length, 0));
      const uint64_t bits = ords.bits_per_value;
      if (bits == 0 || length / bits > static_cast<uint64_t>(INT64_MAX / 16)) {
        ords.num_values = INT64_MAX;
      } else {
        ords.num_values = static_cast<int64_t>(length / bits * 8 + length % bits * 8 / bits);
      }
      RFS_ASSIGN_OR_RETURN(entry.num_docs_with_field, Int());
      AddressesMeta addresses;
      RFS_RETURN_IF_ERROR(Addresses(int64_t{entry.num_docs_with_field} + 1, addresses));
      entry.addresses = std::move(addresses);
    }
    return TermsDict(entry.terms);
  }

  ByteReader& in_;
  DvCodec codec_;
  int32_t version_;
  const FieldInfos& fields_;
  ByteOrder order_;
};

// Reads `n` (<= 8) bytes at `pos` of `data` as an unsigned integer in `order`; bytes past the end
// read as zero (writers pad so a full-width read never needs them, but a damaged file must not
// make us read outside the buffer).
inline uint64_t ReadUnsigned(std::span<const uint8_t> data, uint64_t pos, int n, ByteOrder order) {
  uint8_t buf[8] = {};
  const uint64_t available = pos < data.size() ? data.size() - pos : 0;
  std::memcpy(buf, data.data() + std::min<uint64_t>(pos, data.size()),
              std::min<uint64_t>(n, available));
  uint64_t v = 0;
  if (order == ByteOrder::kLittle) {
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | buf[i];
  } else {
    for (int i = 0; i < n; ++i) v = (v << 8) | buf[i];
  }
  return v;
}

inline uint64_t Mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

// Java's long arithmetic wraps; so does the writer's, and so must ours (signed overflow is
// undefined in C++). Values come from the file and may be anything.
inline int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

}  // namespace

// DirectReader (Lucene90, little-endian) and LegacyDirectReader (Lucene70/80, big-endian): value
// `index` of a packed array of `bpv`-bit values starting at `base`. Lucene only writes the widths
// 1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 56 and 64.
absl::StatusOr<uint64_t> DirectRead(std::span<const uint8_t> data, std::string_view name,
                                    uint64_t base, int bpv, uint64_t index, ByteOrder order) {
  if (bpv == 0) return 0;
  const uint64_t bit = index * static_cast<uint64_t>(bpv);
  const uint64_t byte = base + (bit >> 3);
  if (byte >= data.size()) {
    return core::DataLossAt(
        name, base,
        StrCat("packed value ", index, " (", bpv, " bits) lies beyond the end of the file"));
  }
  switch (bpv) {
    case 1:
    case 2:
    case 4: {
      const uint64_t b = data[byte];
      const int within = static_cast<int>(bit & 7);
      const int shift = order == ByteOrder::kLittle ? within : 8 - bpv - within;
      return (b >> shift) & Mask(bpv);
    }
    case 8:
    case 16:
    case 24:
    case 32:
    case 40:
    case 48:
    case 56:
    case 64:
      return ReadUnsigned(data, byte, bpv / 8, order);
    case 12:
    case 20:
    case 28: {
      // An odd value starts mid-byte: in little-endian its bits are the high ones of the read,
      // in big-endian the low ones.
      const int width = (bpv + 4 + 7) / 8;  // 2, 3 or 4 bytes
      const uint64_t v = ReadUnsigned(data, byte, width, order);
      const bool odd = (index & 1) != 0;
      const int spare = width * 8 - bpv;  // 4
      const int shift = order == ByteOrder::kLittle ? (odd ? 4 : 0) : (odd ? 0 : spare);
      return (v >> shift) & Mask(bpv);
    }
    default:
      return core::DataLossAt(name, base, StrCat("unsupported bits per value ", bpv));
  }
}

absl::StatusOr<std::map<int32_t, DocValuesEntry>> ParseDocValuesMeta(ByteReader& in, DvCodec codec,
                                                                     int32_t version,
                                                                     const FieldInfos& fields,
                                                                     int32_t stop_at) {
  MetaParser parser(in, codec, version, fields);
  return parser.Parse(stop_at);
}

absl::StatusOr<std::pair<DvCodec, int32_t>> ReadDocValuesMetaHeader(
    ByteReader& in, const SegmentCommitInfo& segment, const std::string& suffix) {
  size_t which = 0;
  RFS_ASSIGN_OR_RETURN(auto header, ReadFileHeader(in, {kMetaNames, 0, 2}, &segment.id, suffix,
                                                   /*verify_crc=*/true, &which));
  if (header.header.version > kMaxMetaVersion[which]) {
    return absl::UnimplementedError(StrCat(in.source(), ": unsupported version ",
                                           header.header.version, " of codec '",
                                           header.header.codec, "' in segment ", segment.name));
  }
  return std::pair{static_cast<DvCodec>(which), header.header.version};
}

absl::Status ReadDocValuesDataHeader(ByteReader& in, DvCodec codec,
                                     const SegmentCommitInfo& segment, const std::string& suffix) {
  const auto which = static_cast<size_t>(codec);
  return ReadFileHeader(
             in,
             {std::span<const std::string_view>(&kDataNames[which], 1), 0, kMaxMetaVersion[which]},
             &segment.id, suffix, /*verify_crc=*/true)
      .status();
}

absl::StatusOr<DocValuesLocation> LocateDocValues(const FieldInfo& field,
                                                  const SegmentCommitInfo& segment) {
  auto format = field.attributes.find("PerFieldDocValuesFormat.format");
  auto suffix = field.attributes.find("PerFieldDocValuesFormat.suffix");
  if (format == field.attributes.end() || suffix == field.attributes.end()) {
    return absl::DataLossError(StrCat("segment ", segment.name, " field '", field.name,
                                      "': doc values without PerFieldDocValuesFormat attributes"));
  }
  if (format->second.starts_with("ES") && format->second.find("TSDB") != std::string::npos &&
      format->second != "ES819TSDB" && format->second != "ES87TSDB") {
    // A TSDB format newer than those read (docs/sourceless.md, "Not done yet").
    return absl::UnimplementedError(StrCat(
        "segment ", segment.name, " field '", field.name, "': doc values in ", format->second,
        ", Elasticsearch's format for time_series and logsdb indices, are not read yet"));
  }
  DocValuesLocation out;
  out.suffix = StrCat(format->second, "_", suffix->second);
  // A doc-values update generation lives outside the compound file (C.5).
  if (field.doc_values_gen > 0) {
    out.suffix = StrCat(Base36(field.doc_values_gen), "_", out.suffix);
    out.generation = true;
  }
  return out;
}

absl::StatusOr<std::unique_ptr<DocValuesFile>> DocValuesFile::Open(const core::IDirectory& dir,
                                                                   const SegmentCommitInfo& segment,
                                                                   const std::string& suffix,
                                                                   const FieldInfos& fields) {
  std::unique_ptr<DocValuesFile> out(new DocValuesFile());
  out->meta_name_ = SegmentFileName(segment.name, suffix, "dvm");
  out->data_name_ = SegmentFileName(segment.name, suffix, "dvd");
  RFS_ASSIGN_OR_RETURN(FileBytes meta, FileBytes::Open(dir, out->meta_name_));
  ByteReader in = meta.Reader();
  RFS_ASSIGN_OR_RETURN(auto codec_version, ReadDocValuesMetaHeader(in, segment, suffix));
  out->codec_ = codec_version.first;
  RFS_ASSIGN_OR_RETURN(out->entries_,
                       ParseDocValuesMeta(in, out->codec_, codec_version.second, fields));
  RFS_ASSIGN_OR_RETURN(out->data_, FileBytes::Open(dir, out->data_name_));
  ByteReader data_in = out->data_.Reader();
  RFS_RETURN_IF_ERROR(ReadDocValuesDataHeader(data_in, out->codec_, segment, suffix));
  return out;
}

const DocValuesEntry* DocValuesFile::Entry(int32_t field_number) const {
  auto it = entries_.find(field_number);
  return it == entries_.end() ? nullptr : &it->second;
}

// ---- IndexedDISI (C.12) ----

DocsWithFieldReader::DocsWithFieldReader(const DocsWithFieldMeta& meta,
                                         std::span<const uint8_t> data, std::string_view name,
                                         ByteOrder order, bool has_rank, int32_t max_doc)
    : meta_(meta),
      data_(data),
      name_(name),
      order_(order),
      has_rank_(has_rank),
      max_doc_(max_doc) {}

absl::Status DocsWithFieldReader::Restart() {
  block_loaded_ = false;
  exhausted_ = false;
  next_block_pos_ = static_cast<size_t>(meta_.offset);
  block_index_base_ = 0;
  cardinality_ = 0;
  last_doc_ = -1;
  return absl::OkStatus();
}

absl::Status DocsWithFieldReader::LoadBlock() {
  const uint64_t end = static_cast<uint64_t>(meta_.offset) + static_cast<uint64_t>(meta_.length);
  if (meta_.offset < 0 || meta_.length < 0 || end > data_.size()) {
    return core::DataLossAt(
        name_, static_cast<uint64_t>(std::max<int64_t>(meta_.offset, 0)),
        StrCat("docs-with-field range [", meta_.offset, ", +", meta_.length, ") outside the file"));
  }
  ByteReader in(data_.subspan(0, end), name_);
  RFS_RETURN_IF_ERROR(in.Seek(next_block_pos_));
  const size_t at = in.position();
  const int64_t previous_base = block_loaded_ ? block_base_doc_ : -65536;
  if (block_loaded_) block_index_base_ += cardinality_;
  RFS_ASSIGN_OR_RETURN(uint16_t block, in.ReadU16(order_));
  RFS_ASSIGN_OR_RETURN(uint16_t card_minus_1, in.ReadU16(order_));
  block_pos_ = at;
  block_loaded_ = true;
  if (block == 0x7FFF) {  // the sentinel block of NO_MORE_DOCS
    exhausted_ = true;
    cardinality_ = 0;
    return absl::OkStatus();
  }
  block_base_doc_ = int64_t{block} << 16;
  if (block_base_doc_ <= previous_base || block_base_doc_ >= max_doc_) {
    return in.ErrorAt(
        at, StrCat("IndexedDISI block ", block, " out of order or beyond maxDoc ", max_doc_));
  }
  cardinality_ = uint32_t{card_minus_1} + 1;
  if (cardinality_ <= 4095) {  // IndexedDISI.MAX_ARRAY_LENGTH: SPARSE
    kind_ = Kind::kSparse;
    sparse_.resize(cardinality_);
    for (auto& low : sparse_) {
      RFS_ASSIGN_OR_RETURN(low, in.ReadU16(order_));
    }
    if (!std::is_sorted(sparse_.begin(), sparse_.end()) ||
        std::adjacent_find(sparse_.begin(), sparse_.end()) != sparse_.end()) {
      return in.ErrorAt(at, "IndexedDISI sparse block not strictly ascending");
    }
  } else if (cardinality_ == 65536) {
    kind_ = Kind::kAll;
  } else {
    kind_ = Kind::kDense;
    if (has_rank_ && meta_.dense_rank_power != -1) {
      if (meta_.dense_rank_power < 7 || meta_.dense_rank_power > 15) {
        return in.ErrorAt(at, StrCat("invalid dense rank power ", int{meta_.dense_rank_power}));
      }
      RFS_RETURN_IF_ERROR(in.Skip(size_t{2} * (65536 >> meta_.dense_rank_power)));
    }
    words_.resize(1024);
    word_ranks_.resize(1024);
    uint32_t seen = 0;
    for (int w = 0; w < 1024; ++w) {
      RFS_ASSIGN_OR_RETURN(words_[w], in.ReadU64(order_));
      word_ranks_[w] = seen;
      seen += std::popcount(words_[w]);
    }
    if (seen != cardinality_) {
      return in.ErrorAt(at,
                        StrCat("DENSE block holds ", seen, " docs, header says ", cardinality_));
    }
  }
  next_block_pos_ = in.position();
  return absl::OkStatus();
}

absl::StatusOr<bool> DocsWithFieldReader::AdvanceExact(int32_t doc) {
  if (meta_.offset == -2) return false;
  if (meta_.offset == -1) {
    index_ = doc;
    return true;
  }
  if (doc < last_doc_ || last_doc_ == -1) RFS_RETURN_IF_ERROR(Restart());
  last_doc_ = doc;
  if (!block_loaded_) RFS_RETURN_IF_ERROR(LoadBlock());
  const int64_t target_block = int64_t{doc} >> 16 << 16;
  while (!exhausted_ && block_base_doc_ < target_block) RFS_RETURN_IF_ERROR(LoadBlock());
  if (exhausted_ || block_base_doc_ != target_block) return false;
  const auto low = static_cast<uint32_t>(doc & 0xFFFF);
  switch (kind_) {
    case Kind::kAll:
      index_ = block_index_base_ + low;
      return true;
    case Kind::kSparse: {
      auto it = std::lower_bound(sparse_.begin(), sparse_.end(), low);
      if (it == sparse_.end() || *it != low) return false;
      index_ = block_index_base_ + (it - sparse_.begin());
      return true;
    }
    case Kind::kDense: {
      const uint64_t word = words_[low >> 6];
      const uint64_t bit = uint64_t{1} << (low & 63);
      if ((word & bit) == 0) return false;
      index_ = block_index_base_ + word_ranks_[low >> 6] + std::popcount(word & (bit - 1));
      return true;
    }
  }
  return false;
}

// ---- Field values ----

FieldDocValues::FieldDocValues(const DocValuesFile& file, const DocValuesEntry& entry,
                               int32_t max_doc)
    : file_(file), entry_(entry) {
  const DocsWithFieldMeta& docs =
      entry.type == DvmType::kBinary ? entry.binary.docs : entry.numeric.docs;
  docs_ = DocsWithFieldReader(docs, file.data(), file.data_name(), file.order(),
                              file.codec() != DvCodec::kLucene70, max_doc);
}

absl::StatusOr<int64_t> FieldDocValues::Monotonic(const AddressesMeta& addresses, int64_t index) {
  const MonotonicMeta& meta = addresses.meta;
  if (index < 0 || index >= meta.count) {
    return core::DataLossAt(file_.data_name(), addresses.offset,
                            StrCat("monotonic index ", index, " out of ", meta.count));
  }
  const auto& block = meta.blocks[static_cast<size_t>(index >> meta.shift)];
  const int64_t within = index & ((int64_t{1} << meta.shift) - 1);
  RFS_ASSIGN_OR_RETURN(
      uint64_t delta,
      DirectRead(file_.data(), file_.data_name(),
                 static_cast<uint64_t>(addresses.offset) + static_cast<uint64_t>(block.offset),
                 block.bits_per_value, static_cast<uint64_t>(within), file_.order()));
  // DirectMonotonicReader.get: min + (long) (avg * index) + delta, the product in float.
  const float product = block.avg_increment * static_cast<float>(within);
  // Java's (long) cast saturates; C++'s is undefined out of range.
  const int64_t scaled = !(product == product)                ? 0
                         : product >= 9.2233720368547758e18f  ? INT64_MAX
                         : product <= -9.2233720368547758e18f ? INT64_MIN
                                                              : static_cast<int64_t>(product);
  return WrapAdd(WrapAdd(block.min, scaled), static_cast<int64_t>(delta));
}

absl::StatusOr<int64_t> FieldDocValues::NumericValue(const NumericMeta& meta, int64_t index) {
  if (index < 0 || index >= meta.num_values) {
    return core::DataLossAt(file_.data_name(), meta.values_offset,
                            StrCat("value index ", index, " out of ", meta.num_values));
  }
  if (meta.tsdb) return TsdbValue(meta, index);
  const std::span<const uint8_t> data = file_.data();
  if (meta.block_shift >= 0) {
    // Blocks of 2^shift values, each: u8 bitsPerValue, i64 min, [i32 length, packed values].
    // Lucene80/90 end them with a jump table of each block's absolute file pointer; Lucene70's
    // are walked from the first.
    const int64_t wanted = index >> meta.block_shift;
    uint64_t pos = static_cast<uint64_t>(meta.values_offset);
    const uint64_t end = pos + static_cast<uint64_t>(meta.values_length);
    if (end > data.size()) {
      return core::DataLossAt(file_.data_name(), pos, "numeric blocks run past the end");
    }
    int64_t first_block = 0;
    if (meta.jump_table_offset >= 0) {
      const uint64_t entry = static_cast<uint64_t>(meta.jump_table_offset) + 8 * wanted;
      if (entry + 8 > end) {
        return core::DataLossAt(file_.data_name(), meta.jump_table_offset,
                                StrCat("jump table entry of block ", wanted, " past its range"));
      }
      const uint64_t start = ReadUnsigned(data, entry, 8, file_.order());
      if (start < pos || start >= end) {
        return core::DataLossAt(file_.data_name(), entry,
                                StrCat("block ", wanted, " at ", start, " outside its range"));
      }
      pos = start;
      first_block = wanted;
    }
    for (int64_t block = first_block;; ++block) {
      if (pos + 9 > end) {
        return core::DataLossAt(file_.data_name(), pos, "numeric block header past its range");
      }
      const int bpv = data[pos];
      const auto min = static_cast<int64_t>(ReadUnsigned(data, pos + 1, 8, file_.order()));
      pos += 9;
      uint64_t length = 0;
      if (bpv != 0) {
        if (pos + 4 > end) {
          return core::DataLossAt(file_.data_name(), pos, "numeric block length past its range");
        }
        length = ReadUnsigned(data, pos, 4, file_.order());
        pos += 4;
      }
      if (bpv > 64 || length > end - pos) {
        return core::DataLossAt(file_.data_name(), pos - 4, "invalid numeric block");
      }
      if (block == wanted) {
        RFS_ASSIGN_OR_RETURN(
            uint64_t packed,
            DirectRead(data.first(pos + length), file_.data_name(), pos, bpv,
                       static_cast<uint64_t>(index & ((int64_t{1} << meta.block_shift) - 1)),
                       file_.order()));
        return WrapAdd(WrapMul(meta.gcd, static_cast<int64_t>(packed)), min);
      }
      pos += length;
    }
  }
  const uint64_t end = static_cast<uint64_t>(meta.values_offset) + meta.values_length;
  if (meta.values_offset < 0 || meta.values_length < 0 || end > data.size()) {
    return core::DataLossAt(file_.data_name(), static_cast<uint64_t>(meta.values_offset),
                            "numeric values outside the file");
  }
  RFS_ASSIGN_OR_RETURN(uint64_t packed, DirectRead(data.first(end), file_.data_name(),
                                                   meta.values_offset, meta.bits_per_value,
                                                   static_cast<uint64_t>(index), file_.order()));
  if (meta.table_encoded) {
    if (packed >= meta.table.size()) {
      return core::DataLossAt(file_.data_name(), meta.values_offset,
                              StrCat("table index ", packed, " out of ", meta.table.size()));
    }
    return meta.table[packed];
  }
  return WrapAdd(meta.min, WrapMul(meta.gcd, static_cast<int64_t>(packed)));
}

absl::StatusOr<int64_t> FieldDocValues::TsdbValue(const NumericMeta& meta, int64_t index) {
  if (meta.tsdb_single_ordinal) return 0;
  const int64_t block = index >> kTsdbBlockShift;
  if (block != tsdb_block_) {
    tsdb_block_ = -1;
    RFS_ASSIGN_OR_RETURN(int64_t start, Monotonic(meta.tsdb_blocks, block));
    const std::span<const uint8_t> data = file_.data();
    const uint64_t end = static_cast<uint64_t>(meta.values_offset) + meta.values_length;
    if (meta.values_offset < 0 || meta.values_length < 0 || end > data.size() || start < 0 ||
        static_cast<uint64_t>(start) >= static_cast<uint64_t>(meta.values_length)) {
      return core::DataLossAt(file_.data_name(), static_cast<uint64_t>(meta.values_offset),
                              StrCat("block ", block, " at ", start, " outside the values"));
    }
    const uint64_t pos = static_cast<uint64_t>(meta.values_offset) + static_cast<uint64_t>(start);
    ByteReader in(data.subspan(pos, end - pos), file_.data_name(), pos);
    RFS_RETURN_IF_ERROR(meta.tsdb_bits_per_ord > 0
                            ? DecodeTsdbOrdinals(in, meta.tsdb_bits_per_ord, tsdb_values_)
                            : DecodeTsdbNumbers(in, tsdb_values_));
    tsdb_block_ = block;
  }
  return tsdb_values_[static_cast<size_t>(index & (kTsdbBlockSize - 1))];
}

absl::Status FieldDocValues::Numbers(int32_t doc, std::vector<int64_t>& out) {
  if (entry_.type != DvmType::kNumeric && entry_.type != DvmType::kSortedNumeric) {
    out.clear();
    return absl::FailedPreconditionError("not a numeric doc-values field");
  }
  return DocNumbers(doc, out);
}

absl::Status FieldDocValues::DocNumbers(int32_t doc, std::vector<int64_t>& out) {
  out.clear();
  RFS_ASSIGN_OR_RETURN(bool has, docs_.AdvanceExact(doc));
  if (!has) return absl::OkStatus();
  const int64_t index = docs_.index();
  if (!entry_.addresses) {
    RFS_ASSIGN_OR_RETURN(int64_t v, NumericValue(entry_.numeric, index));
    out.push_back(v);
    return absl::OkStatus();
  }
  RFS_ASSIGN_OR_RETURN(int64_t start, Monotonic(*entry_.addresses, index));
  RFS_ASSIGN_OR_RETURN(int64_t end, Monotonic(*entry_.addresses, index + 1));
  if (start < 0 || end < start || end > entry_.numeric.num_values || end - start > (1 << 20)) {
    return core::DataLossAt(file_.data_name(), entry_.addresses->offset,
                            StrCat("invalid value range [", start, ", ", end, ") of doc ", doc));
  }
  for (int64_t i = start; i < end; ++i) {
    RFS_ASSIGN_OR_RETURN(int64_t v, NumericValue(entry_.numeric, i));
    out.push_back(v);
  }
  return absl::OkStatus();
}

absl::Status FieldDocValues::Ords(int32_t doc, std::vector<int64_t>& ords) {
  // SORTED ords are a numeric entry of one value per doc, SORTED_SET ords a sorted-numeric one
  // (Lucene70/80 multi-valued ords: plain packed values with addresses, read the same way).
  return DocNumbers(doc, ords);
}

absl::Status FieldDocValues::LookupTerm(int64_t ord, std::string& out) {
  const TermsDictMeta& terms = entry_.terms;
  if (ord < 0 || ord >= terms.size) {
    return core::DataLossAt(file_.data_name(), terms.data_offset,
                            StrCat("term ord ", ord, " out of ", terms.size));
  }
  const int64_t block = ord >> terms.block_shift;
  if (block != block_) {
    block_ = -1;
    RFS_ASSIGN_OR_RETURN(int64_t address, Monotonic(terms.block_addresses, block));
    const uint64_t end = static_cast<uint64_t>(terms.data_offset) + terms.data_length;
    if (terms.data_offset < 0 || terms.data_length < 0 || end > file_.data().size() ||
        address < 0 || static_cast<uint64_t>(address) > static_cast<uint64_t>(terms.data_length)) {
      return core::DataLossAt(file_.data_name(), terms.data_offset,
                              StrCat("terms block ", block, " outside the terms data"));
    }
    ByteReader in(file_.data().first(end), file_.data_name());
    RFS_RETURN_IF_ERROR(in.Seek(terms.data_offset + address));
    const int64_t in_block = std::min<int64_t>(int64_t{1} << terms.block_shift,
                                               terms.size - (block << terms.block_shift));
    block_terms_.clear();
    block_text_.clear();
    RFS_ASSIGN_OR_RETURN(uint32_t first_length, in.ReadVInt());
    if (first_length > static_cast<uint32_t>(terms.max_term_length)) {
      return in.Error(StrCat("term of ", first_length, " bytes, max ", terms.max_term_length));
    }
    RFS_ASSIGN_OR_RETURN(auto first, in.ReadBytes(first_length));
    block_text_.assign(first.begin(), first.end());
    block_terms_.emplace_back(0, first_length);
    // The terms after the first: prefix-coded against the previous term, LZ4-compressed as one
    // piece with the first term as the dictionary when `lz4`.
    std::optional<ByteReader> compressed_reader;
    ByteReader* rest = &in;
    if (terms.lz4 && in_block > 1) {
      RFS_ASSIGN_OR_RETURN(uint32_t length, in.ReadVInt());
      // maxBlockLength bounds what the writer produced; a damaged length must not make us
      // allocate more.
      if (length > (uint32_t{1} << 24)) {
        return in.Error(StrCat("terms block of ", length, " bytes"));
      }
      block_bytes_.assign(first_length + length + kLz4Slack, 0);
      std::copy(first.begin(), first.end(), block_bytes_.begin());
      RFS_RETURN_IF_ERROR(Lz4Decompress(in, block_bytes_, 0, first_length, length));
      compressed_reader.emplace(
          std::span<const uint8_t>(block_bytes_).subspan(first_length, length), file_.data_name());
      rest = &*compressed_reader;
    }
    std::string previous = block_text_;
    for (int64_t i = 1; i < in_block; ++i) {
      RFS_ASSIGN_OR_RETURN(uint8_t token, rest->ReadByte());
      uint32_t prefix = token & 0x0F;
      uint32_t suffix = 1 + (token >> 4);
      if (prefix == 15) {
        RFS_ASSIGN_OR_RETURN(uint32_t more, rest->ReadVInt());
        prefix += more;
      }
      if (suffix == 16) {
        RFS_ASSIGN_OR_RETURN(uint32_t more, rest->ReadVInt());
        suffix += more;
      }
      if (prefix > previous.size() || uint64_t{prefix} + suffix > uint64_t(terms.max_term_length)) {
        return rest->Error(StrCat("invalid prefix-coded term (prefix ", prefix, ", suffix ", suffix,
                                  ") in terms block ", block));
      }
      RFS_ASSIGN_OR_RETURN(auto tail, rest->ReadBytes(suffix));
      previous.resize(prefix);
      previous.append(tail.begin(), tail.end());
      block_terms_.emplace_back(static_cast<uint32_t>(block_text_.size()),
                                static_cast<uint32_t>(previous.size()));
      block_text_ += previous;
    }
    block_ = block;
  }
  const auto& [offset, length] =
      block_terms_[static_cast<size_t>(ord & ((int64_t{1} << terms.block_shift) - 1))];
  out.assign(block_text_, offset, length);
  return absl::OkStatus();
}

absl::Status FieldDocValues::Terms(int32_t doc, std::vector<std::string>& out) {
  out.clear();
  if (entry_.type != DvmType::kSorted && entry_.type != DvmType::kSortedSet) {
    return absl::FailedPreconditionError("not a sorted doc-values field");
  }
  RFS_RETURN_IF_ERROR(Ords(doc, ords_));
  out.resize(ords_.size());
  for (size_t i = 0; i < ords_.size(); ++i) RFS_RETURN_IF_ERROR(LookupTerm(ords_[i], out[i]));
  return absl::OkStatus();
}

absl::StatusOr<bool> FieldDocValues::Binary(int32_t doc, std::string& out) {
  out.clear();
  if (entry_.type != DvmType::kBinary) {
    return absl::FailedPreconditionError("not a binary doc-values field");
  }
  RFS_ASSIGN_OR_RETURN(bool has, docs_.AdvanceExact(doc));
  if (!has) return false;
  const BinaryMeta& meta = entry_.binary;
  const int64_t index = docs_.index();
  if (meta.compressed) return CompressedBinary(index, out);
  int64_t start = 0, end = 0;
  if (!meta.addresses) {
    start = index * meta.max_length;
    end = start + meta.max_length;
  } else {
    RFS_ASSIGN_OR_RETURN(start, Monotonic(*meta.addresses, index));
    RFS_ASSIGN_OR_RETURN(end, Monotonic(*meta.addresses, index + 1));
  }
  if (start < 0 || end < start || end > meta.data_length || meta.data_offset < 0 ||
      meta.data_length < 0 ||
      static_cast<uint64_t>(meta.data_offset) + static_cast<uint64_t>(meta.data_length) >
          file_.data().size()) {
    return core::DataLossAt(
        file_.data_name(), meta.data_offset,
        StrCat("binary value [", start, ", ", end, ") of doc ", doc, " outside the field's data"));
  }
  const auto bytes = file_.data().subspan(meta.data_offset + start, end - start);
  out.assign(bytes.begin(), bytes.end());
  return true;
}

// Lucene80 BEST_COMPRESSION binary values: chunks of 2^docs_per_chunk_shift docs, each: VInt v
// (v >> 1 = the first length; v & 1: every length is that one, else the other lengths as VInts),
// then the values LZ4-compressed as one piece. The addresses are absolute file pointers.
absl::StatusOr<bool> FieldDocValues::CompressedBinary(int64_t index, std::string& out) {
  const BinaryMeta& meta = entry_.binary;
  if (!meta.addresses || meta.docs_per_chunk_shift > 16) {
    return core::DataLossAt(file_.meta_name(), 0, "compressed binary entry without chunks");
  }
  const int64_t chunk = index >> meta.docs_per_chunk_shift;
  const uint32_t per_chunk = uint32_t{1} << meta.docs_per_chunk_shift;
  if (chunk != chunk_) {
    chunk_ = -1;
    RFS_ASSIGN_OR_RETURN(int64_t address, Monotonic(*meta.addresses, chunk));
    ByteReader in(file_.data(), file_.data_name());
    if (address < 0) return in.Error(StrCat("binary chunk ", chunk, " at ", address));
    RFS_RETURN_IF_ERROR(in.Seek(static_cast<size_t>(address)));
    RFS_ASSIGN_OR_RETURN(uint32_t first, in.ReadVInt());
    std::vector<uint32_t> lengths(per_chunk, first >> 1);
    if ((first & 1) == 0) {
      for (uint32_t i = 1; i < per_chunk; ++i) {
        RFS_ASSIGN_OR_RETURN(lengths[i], in.ReadVInt());
      }
    }
    chunk_offsets_.assign(1, 0);
    uint64_t total = 0;
    for (uint32_t length : lengths) {
      total += length;
      chunk_offsets_.push_back(static_cast<uint32_t>(std::min<uint64_t>(total, UINT32_MAX)));
    }
    // 2^docs_per_chunk_shift values of at most 32766 bytes each (Lucene's limit for one binary
    // doc value); a damaged length must not make us allocate more than a chunk can hold.
    if (total > meta.max_chunk_size || total > uint64_t{32766} * per_chunk) {
      return in.Error(StrCat("binary chunk of ", total, " bytes, max ", meta.max_chunk_size));
    }
    chunk_bytes_.assign(total + kLz4Slack, 0);
    if (total > 0) RFS_RETURN_IF_ERROR(Lz4Decompress(in, chunk_bytes_, 0, 0, total));
    chunk_ = chunk;
  }
  const auto within = static_cast<size_t>(index & (per_chunk - 1));
  out.assign(reinterpret_cast<const char*>(chunk_bytes_.data()) + chunk_offsets_[within],
             chunk_offsets_[within + 1] - chunk_offsets_[within]);
  return true;
}

// ---- Segment ----

SegmentDocValues::SegmentDocValues(std::shared_ptr<const core::IDirectory> index_dir,
                                   std::shared_ptr<const core::IDirectory> segment_dir,
                                   const SegmentCommitInfo& segment, const FieldInfos& fields)
    : index_dir_(std::move(index_dir)),
      segment_dir_(std::move(segment_dir)),
      segment_(segment),
      fields_(fields) {}

SegmentDocValues::~SegmentDocValues() = default;

absl::StatusOr<FieldDocValues*> SegmentDocValues::Field(std::string_view name) {
  if (auto it = readers_.find(name); it != readers_.end()) return it->second.get();
  const FieldInfo* info = fields_.ByName(name);
  if (info == nullptr || info->doc_values_type == DocValuesType::kNone) {
    readers_.emplace(std::string(name), nullptr);
    return nullptr;
  }
  const std::string context = StrCat("segment ", segment_.name, " field '", name, "'");
  auto location = LocateDocValues(*info, segment_);
  if (!location.ok()) return core::WithContext(location.status(), context);
  auto file_it = files_.find(location->suffix);
  if (file_it == files_.end()) {
    const core::IDirectory& dir = location->generation ? *index_dir_ : *segment_dir_;
    auto opened = DocValuesFile::Open(dir, segment_, location->suffix, fields_);
    if (!opened.ok()) return core::WithContext(opened.status(), context);
    file_it = files_.emplace(location->suffix, *std::move(opened)).first;
  }
  const DocValuesEntry* entry = file_it->second->Entry(info->number);
  if (entry == nullptr) {
    return absl::DataLossError(StrCat(context, ": no entry in ", file_it->second->meta_name()));
  }
  auto reader = std::make_unique<FieldDocValues>(*file_it->second, *entry, segment_.max_doc());
  FieldDocValues* out = reader.get();
  readers_.emplace(std::string(name), std::move(reader));
  return out;
}

}  // namespace rfs::lucene::internal
