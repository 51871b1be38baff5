#include <algorithm>
#include <array>
#include <bit>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/compression_internal.hpp"
#include "lucene/codecs/terms_internal.hpp"

namespace rfs::lucene::internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

// BlockTreeTermsReader versions (Lucene 6.2-8.11): 3 dropped the auto-prefix byte, 4 the
// postings "longs", 5 compressed suffixes and singleton statistics runs, 6 moved the field
// entries to `.tmd`. The Lucene90 writer restarted at 0 (1: MSB-first root codes); Lucene103's
// is 0 with a trie index.
enum class DictFamily : uint8_t { kBlockTree, kLucene90, kLucene103 };
constexpr int32_t kBlockTreeAutoPrefixRemoved = 3;
constexpr int32_t kBlockTreeLongsRemoved = 4;
constexpr int32_t kBlockTreeCompressedSuffixes = 5;
constexpr int32_t kBlockTreeMetaFile = 6;
constexpr int32_t kLucene90MsbRootCode = 1;
constexpr int kOutputFlagsBits = 2;
// IndexOptions.DOCS as FieldInfos stores it.
constexpr uint8_t kIndexDocsOnly = 1;

struct PostingsSpec {
  std::string_view doc_codec;
  int block_size;
  ByteOrder order;    // of the packed blocks' words
  bool inline_skips;  // Lucene912+: skip data before each block, level-1 headers every 32
  bool group_varint_tail;
  bool singleton_deltas;   // term metadata may give a singleton doc as a delta (84 v1+)
  bool skip_offset;        // term metadata holds a skip offset when docFreq > block size
  int32_t first_doc_base;  // the doc deltas of a term start from it
};

PostingsSpec SpecOf(PostingsFormat format) {
  switch (format) {
    case PostingsFormat::kLucene50:
      return {"Lucene50PostingsWriterDoc", 128, ByteOrder::kBig, false, false, false, true, 0};
    case PostingsFormat::kLucene84:
      // ForUtil wrote its longs byte-reversed: little-endian, as from Lucene 9.
      return {"Lucene84PostingsWriterDoc", 128, ByteOrder::kLittle, false, false, true, true, 0};
    case PostingsFormat::kLucene90:
      return {"Lucene90PostingsWriterDoc", 128, ByteOrder::kLittle, false, false, true, true, 0};
    case PostingsFormat::kLucene99:
      return {"Lucene99PostingsWriterDoc", 128, ByteOrder::kLittle, false, true, true, true, 0};
    case PostingsFormat::kLucene912:
      return {"Lucene912PostingsWriterDoc", 128, ByteOrder::kLittle, true, true, true, false, -1};
    case PostingsFormat::kLucene101:
      return {"Lucene101PostingsWriterDoc", 128, ByteOrder::kLittle, true, true, true, false, -1};
    case PostingsFormat::kLucene103:
      return {"Lucene103PostingsWriterDoc", 128, ByteOrder::kLittle, true, true, true, false, -1};
    case PostingsFormat::kLucene104:
      return {"Lucene104PostingsWriterDoc", 256, ByteOrder::kLittle, true, true, true, false, -1};
  }
  return {};
}

// The postings writer's header at the start of the terms metadata (or of `.tim` before 8.6).
constexpr std::string_view kPostingsTermsCodecs[] = {
    "Lucene50PostingsWriterTerms",  "Lucene84PostingsWriterTerms",  "Lucene90PostingsWriterTerms",
    "Lucene103PostingsWriterTerms", "Lucene104PostingsWriterTerms",
};

absl::StatusOr<int32_t> ReadPostingsTermsHeader(ByteReader& in, const PostingsSpec& spec,
                                                const SegmentId& id, std::string_view suffix) {
  const size_t at = in.position();
  for (std::string_view codec : kPostingsTermsCodecs) {
    RFS_RETURN_IF_ERROR(in.Seek(at));
    auto header = codec::ReadIndexHeader(in, codec, 0, 1);
    if (!header.ok()) continue;
    if (header->id != id || header->suffix != suffix) {
      return in.ErrorAt(at, "postings header of another segment");
    }
    RFS_ASSIGN_OR_RETURN(uint32_t block_size, in.ReadVInt());
    if (static_cast<int>(block_size) != spec.block_size) {
      return in.ErrorAt(at, StrCat("postings block size ", block_size, ", not ", spec.block_size));
    }
    return header->header.version;
  }
  RFS_RETURN_IF_ERROR(in.Seek(at));
  return in.Error("no postings header");
}

// Lane masks: `bits` low bits set in every `lane_bits` lane of a word.
uint64_t LaneMask(int word_bits, int lane_bits, int bits) {
  if (bits <= 0) return 0;
  const uint64_t one = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  uint64_t mask = 0;
  for (int lane = 0; lane < word_bits; lane += lane_bits) mask |= one << lane;
  return mask;
}

// DataInput.readGroupVInts (Lucene 9.9+ postings tails): groups of four little-endian values of
// 1-4 bytes each after a byte of their lengths, then plain vInts for the last up to three.
absl::Status ReadGroupVInts(ByteReader& in, std::span<uint32_t> out) {
  size_t i = 0;
  for (; out.size() - i >= 4; i += 4) {
    RFS_ASSIGN_OR_RETURN(uint8_t flags, in.ReadByte());
    for (int k = 0; k < 4; ++k) {
      const int length = ((flags >> (6 - 2 * k)) & 3) + 1;
      RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(static_cast<size_t>(length)));
      uint32_t value = 0;
      for (int b = length - 1; b >= 0; --b) value = (value << 8) | bytes[static_cast<size_t>(b)];
      out[i + static_cast<size_t>(k)] = value;
    }
  }
  for (; i < out.size(); ++i) {
    RFS_ASSIGN_OR_RETURN(out[i], in.ReadVInt());
  }
  return absl::OkStatus();
}

// PackedInts.Format.PACKED (Lucene50's ForUtil): values back to back, most significant bit
// first.
absl::Status UnpackPackedBigEndian(ByteReader& in, int bits, std::span<uint32_t> out) {
  const size_t bytes_needed = (out.size() * static_cast<size_t>(bits) + 7) / 8;
  RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(bytes_needed));
  size_t bit = 0;
  for (uint32_t& value : out) {
    uint64_t v = 0;
    for (int b = 0; b < bits; ++b, ++bit) {
      v = (v << 1) | ((bytes[bit / 8] >> (7 - bit % 8)) & 1);
    }
    value = static_cast<uint32_t>(v);
  }
  return absl::OkStatus();
}

// PackedInts.Format.PACKED_SINGLE_BLOCK (Lucene50's ForUtil for some widths): as many values as
// fit in each big-endian long, from its low bits up.
absl::Status UnpackSingleBlocks(ByteReader& in, int bits, std::span<uint32_t> out) {
  const size_t per_long = static_cast<size_t>(64 / bits);
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (size_t i = 0; i < out.size();) {
    RFS_ASSIGN_OR_RETURN(uint64_t block, in.ReadBeU64());
    for (size_t j = 0; j < per_long && i < out.size(); ++j, block >>= bits) {
      out[i++] = static_cast<uint32_t>(block & mask);
    }
  }
  return absl::OkStatus();
}

// Lane size each format's delta encoder picked for a number of bits.
int DeltaLaneBits(PostingsFormat format, int bits) {
  switch (format) {
    case PostingsFormat::kLucene912:
      return bits <= 4 ? 8 : bits <= 11 ? 16 : 32;
    case PostingsFormat::kLucene101:
    case PostingsFormat::kLucene103:
      return bits <= 3 ? 8 : bits <= 10 ? 16 : 32;
    default:
      return bits <= 8 ? 8 : bits <= 16 ? 16 : 32;
  }
}

struct TermState {
  int64_t doc_freq = 0;
  uint64_t doc_start_fp = 0;
  int64_t singleton_doc = -1;
};

// One block of the terms dictionary, parsed (SegmentTermsEnumFrame.loadBlock).
struct Block {
  uint64_t fp = 0;
  uint64_t fp_end = 0;
  size_t prefix_length = 0;
  uint32_t entry_count = 0;
  uint32_t next_entry = 0;
  bool leaf = false;
  bool last_in_floor = false;
  std::vector<uint8_t> suffix_bytes;
  std::vector<uint8_t> length_bytes;
  std::span<const uint8_t> stats_bytes, meta_bytes;
  size_t suffix_pos = 0, length_pos = 0, stats_pos = 0, meta_pos = 0;
  uint32_t singleton_run = 0;
  bool first_term = true;
  TermState state;
};

}  // namespace

std::optional<PostingsFormat> PostingsFormatByName(std::string_view name) {
  static constexpr std::pair<std::string_view, PostingsFormat> kNames[] = {
      {"Lucene50", PostingsFormat::kLucene50},   {"Lucene84", PostingsFormat::kLucene84},
      {"Lucene90", PostingsFormat::kLucene90},   {"Lucene99", PostingsFormat::kLucene99},
      {"Lucene912", PostingsFormat::kLucene912}, {"Lucene101", PostingsFormat::kLucene101},
      {"Lucene103", PostingsFormat::kLucene103}, {"Lucene104", PostingsFormat::kLucene104},
  };
  for (const auto& [n, format] : kNames) {
    if (n == name) return format;
  }
  return std::nullopt;
}

absl::Status UnpackForBlock(ByteReader& in, ByteOrder order, int word_bits, int lane_bits, int bits,
                            std::span<uint32_t> out) {
  const int count = static_cast<int>(out.size());
  if (bits < 1 || bits > lane_bits || bits > 32 || (word_bits != 32 && word_bits != 64) ||
      count % word_bits != 0) {
    return in.Error(StrCat("invalid packed block: ", bits, " bits in ", lane_bits, "-bit lanes"));
  }
  // ForUtil.encode collapses the values into lanes (word i holds values i, i + words, ... from
  // its high lane down), then packs each word's lanes `bits` at a time: whole values first, from
  // the high end of each lane, then the values split over the low bits the lanes have left.
  const int lanes = word_bits / lane_bits;
  const int words = count / lanes;
  const int words_per_shift = bits * count / word_bits;
  std::array<uint64_t, 256> packed{};
  std::array<uint64_t, 256> collapsed{};
  for (int i = 0; i < words_per_shift; ++i) {
    if (word_bits == 64) {
      RFS_ASSIGN_OR_RETURN(packed[static_cast<size_t>(i)], in.ReadU64(order));
    } else {
      RFS_ASSIGN_OR_RETURN(uint32_t w, in.ReadU32(order));
      packed[static_cast<size_t>(i)] = w;
    }
  }
  const uint64_t value_mask = LaneMask(word_bits, lane_bits, bits);
  int idx = 0;
  int shift = lane_bits - bits;
  for (; shift >= 0; shift -= bits) {
    for (int i = 0; i < words_per_shift; ++i) {
      collapsed[static_cast<size_t>(idx++)] =
          (packed[static_cast<size_t>(i)] >> shift) & value_mask;
    }
  }
  const int left_per_word = shift + bits;  // low bits of each lane not yet taken
  const uint64_t left_mask = LaneMask(word_bits, lane_bits, left_per_word);
  int packed_idx = 0;
  int value_bits_left = bits;
  while (idx < words) {
    if (packed_idx >= words_per_shift) return in.Error("packed block overrun");
    const uint64_t word = packed[static_cast<size_t>(packed_idx)];
    if (value_bits_left >= left_per_word) {
      value_bits_left -= left_per_word;
      collapsed[static_cast<size_t>(idx)] |= (word & left_mask) << value_bits_left;
      ++packed_idx;
      if (value_bits_left == 0) {
        ++idx;
        value_bits_left = bits;
      }
    } else {
      const int high = left_per_word - value_bits_left;
      collapsed[static_cast<size_t>(idx++)] |=
          (word >> high) & LaneMask(word_bits, lane_bits, value_bits_left);
      value_bits_left = bits - high;
      collapsed[static_cast<size_t>(idx)] |= (word & LaneMask(word_bits, lane_bits, high))
                                             << value_bits_left;
      ++packed_idx;
    }
  }
  const uint64_t lane_mask = LaneMask(lane_bits, lane_bits, lane_bits);
  for (int lane = 0; lane < lanes; ++lane) {
    const int lane_shift = word_bits - lane_bits * (lane + 1);
    for (int i = 0; i < words; ++i) {
      out[static_cast<size_t>(lane * words + i)] =
          static_cast<uint32_t>((collapsed[static_cast<size_t>(i)] >> lane_shift) & lane_mask);
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// One postings format's files of a segment: the terms dictionary with its field entries, and
// `.doc`.

struct SegmentTerms::Files {
  TermsSource source;
  std::optional<FileBytes> tim, doc;
  std::map<int32_t, FieldTermsMeta> fields;
};

struct SegmentTerms::FieldTerms {
  std::vector<std::string> terms;
  // (document, term index), by document then term.
  std::vector<std::pair<int32_t, uint32_t>> by_doc;
};

namespace {

absl::StatusOr<std::string_view> BytesRef(ByteReader& in) {
  RFS_ASSIGN_OR_RETURN(uint32_t length, in.ReadVInt());
  RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(length));
  return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// FST.readMetadata: skipped, the walk needs no index.
absl::Status SkipFstMetadata(ByteReader& in) {
  RFS_RETURN_IF_ERROR(codec::ReadCodecHeader(in, "FST", 0, 100).status());
  RFS_ASSIGN_OR_RETURN(uint8_t has_empty_output, in.ReadByte());
  if (has_empty_output == 1) {
    RFS_ASSIGN_OR_RETURN(uint32_t n, in.ReadVInt());
    RFS_RETURN_IF_ERROR(in.Skip(n));
  }
  RFS_ASSIGN_OR_RETURN(uint8_t input_type, in.ReadByte());
  if (input_type > 2) return in.Error(StrCat("invalid FST input type ", int{input_type}));
  RFS_RETURN_IF_ERROR(in.ReadVLong().status());  // start node
  return in.ReadVLong().status();                // bytes
}

absl::StatusOr<uint64_t> RootBlockFromCode(std::string_view code, std::string_view source,
                                           bool msb_first) {
  ByteReader in(std::span(reinterpret_cast<const uint8_t*>(code.data()), code.size()), source);
  uint64_t value = 0;
  if (msb_first) {
    for (int i = 0;; ++i) {
      if (i == 10) return in.Error("root code too long");
      RFS_ASSIGN_OR_RETURN(uint8_t b, in.ReadByte());
      value = (value << 7) | (b & 0x7f);
      if ((b & 0x80) == 0) break;
    }
  } else {
    RFS_ASSIGN_OR_RETURN(value, in.ReadVLong());
  }
  return value >> kOutputFlagsBits;
}

// Lucene103's trie index: the output (root block) of the field's root node (TrieReader.load).
absl::StatusOr<uint64_t> TrieRootOutput(std::span<const uint8_t> tip, std::string_view name,
                                        uint64_t index_start, uint64_t index_end,
                                        uint64_t root_fp) {
  if (index_start > index_end || index_end > tip.size() || root_fp >= index_end - index_start) {
    return core::DataLossAt(name, index_start, "trie index out of the file");
  }
  const std::span<const uint8_t> trie = tip.subspan(index_start, index_end - index_start);
  auto read_long = [&](uint64_t at) {
    uint64_t v = 0;
    for (uint64_t b = 0; b < 8 && at + b < trie.size(); ++b) v |= uint64_t{trie[at + b]} << (8 * b);
    return v;
  };
  auto masked = [](uint64_t v, int bytes) {
    return bytes >= 8 ? v : v & ((uint64_t{1} << (8 * bytes)) - 1);
  };
  const uint64_t flags = read_long(root_fp);
  const int sign = static_cast<int>(flags & 3);
  switch (sign) {
    case 0: {  // leaf: output fp bytes in bits 2-4
      const int fp_bytes = static_cast<int>((flags >> 2) & 7) + 1;
      return fp_bytes <= 7 ? masked(flags >> 8, fp_bytes) : read_long(root_fp + 1);
    }
    case 1: {  // one child, with output
      const int child_bytes = static_cast<int>((flags >> 2) & 7) + 1;
      const int output_bytes = static_cast<int>((flags >> 5) & 7) + 1;
      return masked(read_long(root_fp + static_cast<uint64_t>(child_bytes) + 2), output_bytes) >> 2;
    }
    case 3: {  // several children
      if ((flags & 0x20) == 0) break;
      const int output_bytes = static_cast<int>((flags >> 6) & 7) + 1;
      const uint64_t l = output_bytes <= 5 ? flags >> 24 : read_long(root_fp + 3);
      return masked(l, output_bytes) >> 2;
    }
    default:
      break;
  }
  return core::DataLossAt(name, index_start + root_fp, "trie root without an output");
}

DictFamily FamilyOf(PostingsFormat format) {
  switch (format) {
    case PostingsFormat::kLucene50:
    case PostingsFormat::kLucene84:
      return DictFamily::kBlockTree;
    case PostingsFormat::kLucene103:
    case PostingsFormat::kLucene104:
      return DictFamily::kLucene103;
    default:
      return DictFamily::kLucene90;
  }
}

// Field entries: `.tmd` (BlockTree 6, Lucene90, Lucene103) or `.tim`'s directory (BlockTree
// 2-5).
absl::Status ParseFieldEntries(ByteReader& in, DictFamily family, int32_t version,
                               const FieldInfos& infos, int32_t max_doc,
                               std::span<const uint8_t> tip, std::string_view tip_name,
                               std::map<int32_t, FieldTermsMeta>& out) {
  if (family == DictFamily::kBlockTree && (version < 2 || version > kBlockTreeMetaFile)) {
    return in.Error(StrCat("terms dictionary version ", version));
  }
  RFS_ASSIGN_OR_RETURN(uint32_t count, in.ReadVInt());
  RFS_RETURN_IF_ERROR(CheckCount(in, count, 4, "terms fields"));
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = in.position();
    FieldTermsMeta meta;
    RFS_ASSIGN_OR_RETURN(uint32_t number, in.ReadVInt());
    meta.field_number = static_cast<int32_t>(number);
    RFS_ASSIGN_OR_RETURN(uint64_t num_terms, in.ReadVLong());
    meta.num_terms = static_cast<int64_t>(num_terms);
    std::string_view root_code;
    if (family != DictFamily::kLucene103) {
      RFS_ASSIGN_OR_RETURN(root_code, BytesRef(in));
    }
    const FieldInfo* info = infos.ByNumber(meta.field_number);
    if (info == nullptr || num_terms == 0) {
      return in.ErrorAt(at, StrCat("terms of unknown field ", number));
    }
    RFS_RETURN_IF_ERROR(in.ReadVLong().status());  // sum of total term frequencies
    if (info->index_options != kIndexDocsOnly) {
      RFS_RETURN_IF_ERROR(in.ReadVLong().status());  // sum of document frequencies
    }
    RFS_ASSIGN_OR_RETURN(uint32_t doc_count, in.ReadVInt());
    if (doc_count > static_cast<uint32_t>(max_doc)) {
      return in.ErrorAt(at, StrCat("terms in ", doc_count, " of ", max_doc, " documents"));
    }
    meta.doc_count = static_cast<int32_t>(doc_count);
    if (family == DictFamily::kBlockTree && version < kBlockTreeLongsRemoved) {
      RFS_ASSIGN_OR_RETURN(uint32_t longs, in.ReadVInt());  // postings longs per term
      if (longs > 3) return in.ErrorAt(at, StrCat("invalid postings longs ", longs));
      meta.longs_size = static_cast<int32_t>(longs);
    }
    RFS_RETURN_IF_ERROR(BytesRef(in).status());  // smallest term
    RFS_RETURN_IF_ERROR(BytesRef(in).status());  // largest term
    if (family == DictFamily::kLucene103) {
      RFS_ASSIGN_OR_RETURN(uint64_t index_start, in.ReadVLong());
      RFS_ASSIGN_OR_RETURN(uint64_t root_fp, in.ReadVLong());
      RFS_ASSIGN_OR_RETURN(uint64_t index_end, in.ReadVLong());
      RFS_ASSIGN_OR_RETURN(meta.root_block_fp,
                           TrieRootOutput(tip, tip_name, index_start, index_end, root_fp));
    } else {
      if (family == DictFamily::kLucene90 || version >= kBlockTreeMetaFile) {
        RFS_RETURN_IF_ERROR(in.ReadVLong().status());  // index start
        RFS_RETURN_IF_ERROR(SkipFstMetadata(in));
      }
      RFS_ASSIGN_OR_RETURN(
          meta.root_block_fp,
          RootBlockFromCode(root_code, in.source(),
                            family == DictFamily::kLucene90 && version >= kLucene90MsbRootCode));
    }
    if (!out.emplace(meta.field_number, meta).second) {
      return in.ErrorAt(at, StrCat("field ", number, " has terms twice"));
    }
  }
  return absl::OkStatus();
}

// Walks the blocks of one field (SegmentTermsEnum.next over SegmentTermsEnumFrame).
class DictWalker {
 public:
  DictWalker(const TermsSource& source, const FieldInfo& info, int32_t longs_size)
      : source_(source),
        family_(FamilyOf(source.format)),
        spec_(SpecOf(source.format)),
        info_(info),
        longs_size_(longs_size),
        tim_(source.tim),
        name_(source.tim_name) {}

  // Calls `visit(term, state)` for every term in order.
  absl::Status Walk(uint64_t root_fp,
                    const std::function<absl::Status(std::string_view, const TermState&)>& visit);

 private:
  absl::Status Load(Block& block, uint64_t fp, size_t prefix_length);
  absl::Status DecodeTerm(Block& block);
  absl::Status ReadSuffixes(ByteReader& in, Block& block, uint64_t code);

  const TermsSource& source_;
  const DictFamily family_;
  const PostingsSpec spec_;
  const FieldInfo& info_;
  int32_t longs_size_;
  std::span<const uint8_t> tim_;
  std::string_view name_;
};

absl::Status DictWalker::ReadSuffixes(ByteReader& in, Block& block, uint64_t code) {
  const size_t length = static_cast<size_t>(code >> 3);
  if (length > in.remaining() * 8 + 64) return in.Error("suffix bytes beyond the file");
  block.suffix_bytes.assign(length + kLz4Slack, 0);
  switch (code & 3) {
    case 0: {
      RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(length));
      std::copy(bytes.begin(), bytes.end(), block.suffix_bytes.begin());
      break;
    }
    case 1: {  // LowercaseAsciiCompression
      const size_t saved = length >> 2;
      const size_t packed = length - saved;
      RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(packed));
      auto& out = block.suffix_bytes;
      std::copy(bytes.begin(), bytes.end(), out.begin());
      for (size_t i = 0; i < saved; ++i) {
        out[packed + i] =
            static_cast<uint8_t>(((out[i] & 0xC0) >> 2) | ((out[saved + i] & 0xC0) >> 4) |
                                 ((out[2 * saved + i] & 0xC0) >> 6));
      }
      for (size_t i = 0; i < length; ++i) {
        const uint8_t b = out[i];
        out[i] = static_cast<uint8_t>(((b & 0x1F) | 0x20 | ((b & 0x20) << 1)) - 1);
      }
      RFS_ASSIGN_OR_RETURN(uint32_t exceptions, in.ReadVInt());
      size_t i = 0;
      for (uint32_t e = 0; e < exceptions; ++e) {
        RFS_ASSIGN_OR_RETURN(uint8_t step, in.ReadByte());
        i += step;
        RFS_ASSIGN_OR_RETURN(uint8_t value, in.ReadByte());
        if (i >= length) return in.Error("suffix exception beyond the suffixes");
        out[i] = value;
      }
      break;
    }
    case 2:
      RFS_RETURN_IF_ERROR(Lz4Decompress(in, block.suffix_bytes, 0, 0, length));
      break;
    default:
      return in.Error(StrCat("unknown suffix compression ", code & 3));
  }
  block.suffix_bytes.resize(length);
  return absl::OkStatus();
}

absl::Status DictWalker::Load(Block& block, uint64_t fp, size_t prefix_length) {
  if (fp >= tim_.size()) return core::DataLossAt(name_, fp, "terms block beyond the file");
  ByteReader in(tim_, name_);
  RFS_RETURN_IF_ERROR(in.Seek(fp));
  block.fp = fp;
  block.prefix_length = prefix_length;
  RFS_ASSIGN_OR_RETURN(uint32_t code, in.ReadVInt());
  block.entry_count = code >> 1;
  block.last_in_floor = (code & 1) != 0;
  if (block.entry_count == 0) return in.ErrorAt(fp, "empty terms block");
  const bool compressed =
      family_ != DictFamily::kBlockTree || source_.dict_version >= kBlockTreeCompressedSuffixes;
  if (compressed) {
    RFS_ASSIGN_OR_RETURN(uint64_t suffix_code, in.ReadVLong());
    block.leaf = (suffix_code & 4) != 0;
    RFS_RETURN_IF_ERROR(ReadSuffixes(in, block, suffix_code));
    RFS_ASSIGN_OR_RETURN(uint32_t lengths_code, in.ReadVInt());
    const size_t lengths = lengths_code >> 1;
    if ((lengths_code & 1) != 0) {
      RFS_ASSIGN_OR_RETURN(uint8_t value, in.ReadByte());
      if (lengths > tim_.size()) return in.Error("suffix lengths beyond the file");
      block.length_bytes.assign(lengths, value);
    } else {
      RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(lengths));
      block.length_bytes.assign(bytes.begin(), bytes.end());
    }
  } else {
    RFS_ASSIGN_OR_RETURN(uint32_t suffix_code, in.ReadVInt());
    block.leaf = (suffix_code & 1) != 0;
    RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(suffix_code >> 1));
    block.suffix_bytes.assign(bytes.begin(), bytes.end());
    block.length_bytes.clear();
  }
  RFS_ASSIGN_OR_RETURN(uint32_t stats_length, in.ReadVInt());
  RFS_ASSIGN_OR_RETURN(block.stats_bytes, in.ReadBytes(stats_length));
  RFS_ASSIGN_OR_RETURN(uint32_t meta_length, in.ReadVInt());
  RFS_ASSIGN_OR_RETURN(block.meta_bytes, in.ReadBytes(meta_length));
  block.fp_end = in.position();
  block.next_entry = 0;
  block.suffix_pos = block.length_pos = block.stats_pos = block.meta_pos = 0;
  block.singleton_run = 0;
  block.first_term = true;
  return absl::OkStatus();
}

absl::Status DictWalker::DecodeTerm(Block& block) {
  ByteReader stats(block.stats_bytes, name_, block.fp);
  RFS_RETURN_IF_ERROR(stats.Seek(block.stats_pos));
  TermState& state = block.state;
  const bool docs_only = info_.index_options == kIndexDocsOnly;
  const bool runs =
      family_ != DictFamily::kBlockTree || source_.dict_version >= kBlockTreeCompressedSuffixes;
  if (runs) {
    if (block.singleton_run > 0) {
      state.doc_freq = 1;
      --block.singleton_run;
    } else {
      RFS_ASSIGN_OR_RETURN(uint32_t token, stats.ReadVInt());
      if ((token & 1) != 0) {
        state.doc_freq = 1;
        block.singleton_run = token >> 1;
      } else {
        state.doc_freq = token >> 1;
        if (!docs_only) RFS_RETURN_IF_ERROR(stats.ReadVLong().status());
      }
    }
  } else {
    RFS_ASSIGN_OR_RETURN(uint32_t doc_freq, stats.ReadVInt());
    state.doc_freq = doc_freq;
    if (!docs_only) RFS_RETURN_IF_ERROR(stats.ReadVLong().status());
  }
  block.stats_pos = stats.position();
  if (state.doc_freq <= 0) return stats.Error("term without documents");

  ByteReader meta(block.meta_bytes, name_, block.fp);
  RFS_RETURN_IF_ERROR(meta.Seek(block.meta_pos));
  if (block.first_term) {
    state.doc_start_fp = 0;
    block.first_term = false;
  }
  const PostingsSpec& spec = spec_;
  const bool singleton_deltas =
      spec.singleton_deltas &&
      (source_.format != PostingsFormat::kLucene84 || source_.postings_version >= 1);
  if (family_ == DictFamily::kBlockTree && source_.dict_version < kBlockTreeLongsRemoved) {
    // The postings writer's "longs" first (the doc start is the first), then its own bytes.
    for (int32_t k = 0; k < longs_size_; ++k) {
      RFS_ASSIGN_OR_RETURN(uint64_t value, meta.ReadVLong());
      if (k == 0) state.doc_start_fp += value;
    }
  } else if (!singleton_deltas) {
    RFS_ASSIGN_OR_RETURN(uint64_t delta, meta.ReadVLong());
    state.doc_start_fp += delta;
  } else {
    RFS_ASSIGN_OR_RETURN(uint64_t l, meta.ReadVLong());
    if ((l & 1) == 0) {
      state.doc_start_fp += l >> 1;
      state.singleton_doc = -1;
    } else {
      if (state.singleton_doc < 0) return meta.Error("singleton delta without a singleton");
      const uint64_t zz = l >> 1;
      state.singleton_doc += static_cast<int64_t>(zz >> 1) ^ -static_cast<int64_t>(zz & 1);
      block.meta_pos = meta.position();
      return absl::OkStatus();
    }
  }
  if (state.doc_freq == 1) {
    RFS_ASSIGN_OR_RETURN(uint32_t doc, meta.ReadVInt());
    state.singleton_doc = doc;
  } else {
    state.singleton_doc = -1;
  }
  if (spec.skip_offset && state.doc_freq > spec.block_size) {
    RFS_RETURN_IF_ERROR(meta.ReadVLong().status());
  }
  block.meta_pos = meta.position();
  return absl::OkStatus();
}

absl::Status DictWalker::Walk(
    uint64_t root_fp,
    const std::function<absl::Status(std::string_view, const TermState&)>& visit) {
  const bool separate_lengths =
      family_ != DictFamily::kBlockTree || source_.dict_version >= kBlockTreeCompressedSuffixes;
  // An intact dictionary loads each block once; a damaged one must not loop.
  size_t loads_left = tim_.size() / 4 + 1;
  std::vector<std::unique_ptr<Block>> stack;
  std::string term;
  auto load = [&](Block& block, uint64_t fp, size_t prefix_length) -> absl::Status {
    if (loads_left-- == 0) return core::DataLossAt(name_, fp, "terms blocks form a loop");
    return Load(block, fp, prefix_length);
  };
  stack.push_back(std::make_unique<Block>());
  RFS_RETURN_IF_ERROR(load(*stack.back(), root_fp, 0));
  while (!stack.empty()) {
    Block& block = *stack.back();
    if (block.next_entry == block.entry_count) {
      if (block.last_in_floor) {
        stack.pop_back();
      } else {
        RFS_RETURN_IF_ERROR(load(block, block.fp_end, block.prefix_length));
      }
      continue;
    }
    ++block.next_entry;
    ByteReader suffixes(block.suffix_bytes, name_, block.fp);
    RFS_RETURN_IF_ERROR(suffixes.Seek(block.suffix_pos));
    ByteReader separate(block.length_bytes, name_, block.fp);
    if (separate_lengths) RFS_RETURN_IF_ERROR(separate.Seek(block.length_pos));
    ByteReader& lengths = separate_lengths ? separate : suffixes;
    RFS_ASSIGN_OR_RETURN(uint32_t code, lengths.ReadVInt());
    const uint32_t suffix_length = block.leaf ? code : code >> 1;
    const bool sub_block = !block.leaf && (code & 1) != 0;
    RFS_ASSIGN_OR_RETURN(auto suffix, suffixes.ReadBytes(suffix_length));
    term.resize(block.prefix_length);
    term.append(reinterpret_cast<const char*>(suffix.data()), suffix.size());
    uint64_t child_fp = 0;
    if (sub_block) {
      RFS_ASSIGN_OR_RETURN(uint64_t sub_code, lengths.ReadVLong());
      if (sub_code == 0 || sub_code > block.fp) {
        return lengths.Error(StrCat("sub-block ", sub_code, " bytes before block at ", block.fp));
      }
      child_fp = block.fp - sub_code;
    }
    block.suffix_pos = suffixes.position();
    block.length_pos = separate_lengths ? separate.position() : suffixes.position();
    if (sub_block) {
      stack.push_back(std::make_unique<Block>());
      RFS_RETURN_IF_ERROR(load(*stack.back(), child_fp, term.size()));
      continue;
    }
    RFS_RETURN_IF_ERROR(DecodeTerm(block));
    RFS_RETURN_IF_ERROR(visit(term, block.state));
  }
  return absl::OkStatus();
}

// The documents of one term, read from its start in `.doc` block by block (the skip data
// stepped over).
class PostingsReader {
 public:
  PostingsReader(const TermsSource& source, int32_t max_doc)
      : source_(source),
        spec_(SpecOf(source.format)),
        max_doc_(max_doc),
        buffer_(static_cast<size_t>(spec_.block_size)) {}

  absl::Status Read(const TermState& state, std::vector<int32_t>& docs);

 private:
  absl::Status FullBlock(ByteReader& in, int64_t& previous, std::vector<int32_t>& docs);
  absl::Status AddDeltas(ByteReader& in, size_t at, std::span<const uint32_t> deltas,
                         int64_t& previous, std::vector<int32_t>& docs);

  const TermsSource& source_;
  const PostingsSpec spec_;
  int32_t max_doc_;
  std::vector<uint32_t> buffer_;
};

absl::Status PostingsReader::AddDeltas(ByteReader& in, size_t at, std::span<const uint32_t> deltas,
                                       int64_t& previous, std::vector<int32_t>& docs) {
  for (uint32_t delta : deltas) {
    const int64_t doc = previous + delta;
    if ((delta == 0 && !docs.empty()) || doc < 0 || doc >= max_doc_) {
      return in.ErrorAt(
          at, StrCat("postings document ", doc, " after ", previous, " (of ", max_doc_, ")"));
    }
    docs.push_back(static_cast<int32_t>(doc));
    previous = doc;
  }
  return absl::OkStatus();
}

absl::Status PostingsReader::FullBlock(ByteReader& in, int64_t& previous,
                                       std::vector<int32_t>& docs) {
  const size_t at = in.position();
  const std::span<uint32_t> deltas(buffer_);
  RFS_ASSIGN_OR_RETURN(uint8_t token, in.ReadByte());
  const PostingsFormat format = source_.format;
  switch (format) {
    case PostingsFormat::kLucene50: {
      if (token > 32) return in.ErrorAt(at, StrCat("invalid block width ", int{token}));
      if (token == 0) {
        RFS_ASSIGN_OR_RETURN(uint32_t value, in.ReadVInt());
        std::fill(deltas.begin(), deltas.end(), value);
      } else {
        const int bits = source_.lucene50_bits[token];
        RFS_RETURN_IF_ERROR(source_.lucene50_single_block[token]
                                ? UnpackSingleBlocks(in, bits, deltas)
                                : UnpackPackedBigEndian(in, bits, deltas));
      }
      break;
    }
    case PostingsFormat::kLucene84:
    case PostingsFormat::kLucene99:
    case PostingsFormat::kLucene912:
      if (token > 32) return in.ErrorAt(at, StrCat("invalid block width ", int{token}));
      if (token == 0) {
        std::fill(deltas.begin(), deltas.end(), 1u);
      } else {
        RFS_RETURN_IF_ERROR(
            UnpackForBlock(in, spec_.order, 64, DeltaLaneBits(format, token), token, deltas));
      }
      break;
    case PostingsFormat::kLucene90: {  // PForUtil: width and exception count in one byte
      const int bits = token & 0x1f;
      const int exceptions = token >> 5;
      if (bits == 0) {
        RFS_ASSIGN_OR_RETURN(uint64_t value, in.ReadVLong());
        if (value > UINT32_MAX) return in.ErrorAt(at, "document delta out of range");
        std::fill(deltas.begin(), deltas.end(), static_cast<uint32_t>(value));
      } else {
        RFS_RETURN_IF_ERROR(
            UnpackForBlock(in, spec_.order, 64, DeltaLaneBits(format, bits), bits, deltas));
      }
      for (int e = 0; e < exceptions; ++e) {
        RFS_ASSIGN_OR_RETURN(uint8_t index, in.ReadByte());
        RFS_ASSIGN_OR_RETURN(uint8_t high, in.ReadByte());
        if (index >= deltas.size() || bits > 24) return in.ErrorAt(at, "invalid block exception");
        deltas[index] |= uint32_t{high} << bits;
      }
      break;
    }
    case PostingsFormat::kLucene101:
    case PostingsFormat::kLucene103:
    case PostingsFormat::kLucene104: {
      const auto width = static_cast<int8_t>(token);
      if (width > 32) return in.ErrorAt(at, StrCat("invalid block width ", int{width}));
      if (width > 0) {
        RFS_RETURN_IF_ERROR(
            UnpackForBlock(in, spec_.order, 32, DeltaLaneBits(format, width), width, deltas));
        break;
      }
      // Dense blocks as a bit set of the documents after the previous one (0: all consecutive).
      if (width == 0) {
        std::fill(deltas.begin(), deltas.end(), 1u);
        break;
      }
      const int words = -width;
      size_t n = 0;
      int64_t last = previous;
      for (int w = 0; w < words; ++w) {
        RFS_ASSIGN_OR_RETURN(uint64_t bits, in.ReadU64(ByteOrder::kLittle));
        while (bits != 0) {
          const int bit = std::countr_zero(bits);
          bits &= bits - 1;
          const int64_t doc = previous + 1 + int64_t{w} * 64 + bit;
          if (n == deltas.size()) return in.ErrorAt(at, "bit set holds more than a block");
          deltas[n++] = static_cast<uint32_t>(doc - last);
          last = doc;
        }
      }
      if (n != deltas.size()) return in.ErrorAt(at, "bit set holds less than a block");
      break;
    }
  }
  return AddDeltas(in, at, deltas, previous, docs);
}

absl::Status PostingsReader::Read(const TermState& state, std::vector<int32_t>& docs) {
  docs.clear();
  ByteReader in(source_.doc, source_.doc_name);
  if (state.doc_freq == 1) {
    if (state.singleton_doc < 0 || state.singleton_doc >= max_doc_) {
      return in.Error(StrCat("singleton document ", state.singleton_doc, " of ", max_doc_));
    }
    docs.push_back(static_cast<int32_t>(state.singleton_doc));
    return absl::OkStatus();
  }
  const int64_t block = spec_.block_size;
  if (state.doc_freq > static_cast<int64_t>(max_doc_)) {
    return in.Error(StrCat("term in ", state.doc_freq, " of ", max_doc_, " documents"));
  }
  RFS_RETURN_IF_ERROR(in.Seek(state.doc_start_fp));
  docs.reserve(static_cast<size_t>(state.doc_freq));
  int64_t left = state.doc_freq;
  int64_t previous = spec_.first_doc_base;
  int64_t full_blocks = 0;
  while (left >= block) {
    if (spec_.inline_skips) {
      if (full_blocks % 32 == 0 && left >= 32 * block) {
        RFS_RETURN_IF_ERROR(in.ReadVInt().status());   // last document delta
        RFS_RETURN_IF_ERROR(in.ReadVLong().status());  // bytes of the 32 blocks
      }
      RFS_ASSIGN_OR_RETURN(uint64_t skip, in.ReadVLong());
      if (skip > in.remaining()) return in.Error("skip data beyond the file");
      RFS_RETURN_IF_ERROR(in.Skip(static_cast<size_t>(skip)));
    }
    RFS_RETURN_IF_ERROR(FullBlock(in, previous, docs));
    left -= block;
    ++full_blocks;
  }
  if (left > 0) {
    const size_t at = in.position();
    const std::span<uint32_t> tail(buffer_.data(), static_cast<size_t>(left));
    if (spec_.group_varint_tail) {
      RFS_RETURN_IF_ERROR(ReadGroupVInts(in, tail));
    } else {
      for (uint32_t& delta : tail) {
        RFS_ASSIGN_OR_RETURN(delta, in.ReadVInt());
      }
    }
    RFS_RETURN_IF_ERROR(AddDeltas(in, at, tail, previous, docs));
  }
  return absl::OkStatus();
}

absl::Status CheckHeaderOwner(ByteReader& in, size_t at, const codec::IndexHeader& header,
                              const SegmentId& id, std::string_view suffix) {
  if (header.id != id) return in.ErrorAt(at, "header of another segment");
  if (header.suffix != suffix) {
    return in.ErrorAt(at, StrCat("header suffix '", header.suffix, "', not '", suffix, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseTermsFields(ByteReader& in, const TermsSource& source, const FieldInfos& fields,
                              int32_t max_doc, std::span<const uint8_t> tip,
                              std::string_view tip_name, std::map<int32_t, FieldTermsMeta>& out) {
  return ParseFieldEntries(in, FamilyOf(source.format), source.dict_version, fields, max_doc, tip,
                           tip_name, out);
}

absl::Status ScanTerms(
    const TermsSource& source, const FieldInfo& field, const FieldTermsMeta& meta, int32_t max_doc,
    const std::function<void(std::string_view, std::span<const int32_t>)>& visit) {
  if (meta.root_block_fp >= source.tim.size()) {
    return core::DataLossAt(source.tim_name, meta.root_block_fp, "root block beyond the file");
  }
  DictWalker walker(source, field, meta.longs_size);
  PostingsReader postings(source, max_doc);
  std::vector<int32_t> docs;
  int64_t terms = 0;
  RFS_RETURN_IF_ERROR(walker.Walk(
      meta.root_block_fp, [&](std::string_view term, const TermState& state) -> absl::Status {
        RFS_RETURN_IF_ERROR(postings.Read(state, docs));
        ++terms;
        visit(term, docs);
        return absl::OkStatus();
      }));
  if (terms != meta.num_terms) {
    return core::DataLossAt(source.tim_name, meta.root_block_fp,
                            StrCat(terms, " terms walked, the dictionary says ", meta.num_terms));
  }
  return absl::OkStatus();
}

namespace {

// The `.tmd` (and, for Lucene103, `.tip`) of the dictionary formats that keep their field entries
// outside the `.tim`.
absl::Status ReadTermsMeta(const core::IDirectory& dir, const SegmentCommitInfo& segment,
                           const FieldInfos& fields, std::string_view suffix,
                           const PostingsSpec& spec, TermsSource& source,
                           std::map<int32_t, FieldTermsMeta>& out) {
  const DictFamily family = FamilyOf(source.format);
  const SegmentId& id = segment.id;
  std::optional<FileBytes> tip;
  if (family == DictFamily::kLucene103) {
    RFS_ASSIGN_OR_RETURN(tip, FileBytes::Open(dir, SegmentFileName(segment.name, suffix, "tip")));
    RFS_RETURN_IF_ERROR(VerifyFileChecksum(tip->file()));
  }
  const std::string meta_name = SegmentFileName(segment.name, suffix, "tmd");
  RFS_ASSIGN_OR_RETURN(FileBytes meta, FileBytes::Open(dir, meta_name));
  ByteReader in = meta.Reader();
  const std::string_view meta_codec[] = {"BlockTreeTermsMeta"};
  RFS_RETURN_IF_ERROR(ReadFileHeader(in, {meta_codec, source.dict_version, source.dict_version},
                                     &id, suffix, /*verify_crc=*/true)
                          .status());
  RFS_ASSIGN_OR_RETURN(source.postings_version, ReadPostingsTermsHeader(in, spec, id, suffix));
  RFS_RETURN_IF_ERROR(ParseFieldEntries(in, family, source.dict_version, fields, segment.max_doc(),
                                        tip ? tip->bytes() : std::span<const uint8_t>{},
                                        tip ? tip->name() : "", out));
  return absl::OkStatus();
}

// The postings' `.doc` file of a postings format's files (checksum and header checked), and
// Lucene50's ForUtil setup from its start into `source`.
absl::StatusOr<FileBytes> OpenDocFile(const core::IDirectory& dir, const SegmentCommitInfo& segment,
                                      std::string_view suffix, const PostingsSpec& spec,
                                      TermsSource& source) {
  const SegmentId& id = segment.id;
  const std::string doc_name = SegmentFileName(segment.name, suffix, "doc");
  RFS_ASSIGN_OR_RETURN(FileBytes doc, FileBytes::Open(dir, doc_name));
  RFS_RETURN_IF_ERROR(VerifyFileChecksum(doc.file()));
  ByteReader doc_in = doc.Reader();
  RFS_ASSIGN_OR_RETURN(auto doc_header, codec::ReadIndexHeader(doc_in, spec.doc_codec, 0, 1));
  RFS_RETURN_IF_ERROR(CheckHeaderOwner(doc_in, 0, doc_header, id, suffix));
  if (source.format == PostingsFormat::kLucene50) {
    // ForUtil's setup: the packed-ints version, then how each width 1-32 is stored.
    RFS_RETURN_IF_ERROR(doc_in.ReadVInt().status());
    for (int width = 1; width <= 32; ++width) {
      const size_t at = doc_in.position();
      RFS_ASSIGN_OR_RETURN(uint32_t code, doc_in.ReadVInt());
      const int bits = static_cast<int>(code & 31) + 1;
      if ((code >> 5) > 1 || bits < width) {
        return doc_in.ErrorAt(at, StrCat("block width ", width, " stored as format ", code >> 5,
                                         " with ", bits, " bits"));
      }
      source.lucene50_bits[static_cast<size_t>(width)] = bits;
      source.lucene50_single_block[static_cast<size_t>(width)] = (code >> 5) == 1;
    }
  }
  return doc;
}

}  // namespace

SegmentTerms::SegmentTerms(std::shared_ptr<const core::IDirectory> segment_dir,
                           const SegmentCommitInfo& segment, const FieldInfos& fields)
    : segment_dir_(std::move(segment_dir)), segment_(segment), fields_(fields) {}

SegmentTerms::~SegmentTerms() = default;

absl::StatusOr<SegmentTerms::Files*> SegmentTerms::OpenFiles(const FieldInfo& info) {
  auto format_name = info.attributes.find("PerFieldPostingsFormat.format");
  auto format_suffix = info.attributes.find("PerFieldPostingsFormat.suffix");
  if (format_name == info.attributes.end() || format_suffix == info.attributes.end()) {
    return absl::UnimplementedError("terms without a per-field postings format");
  }
  const std::string suffix = StrCat(format_name->second, "_", format_suffix->second);
  if (auto it = files_.find(suffix); it != files_.end()) return it->second.get();
  const std::optional<PostingsFormat> format = PostingsFormatByName(format_name->second);
  if (!format) {
    return absl::UnimplementedError(
        StrCat("terms of postings format ", format_name->second, " are not read"));
  }
  auto files = std::make_unique<Files>();
  TermsSource& source = files->source;
  source.format = *format;
  const DictFamily family = FamilyOf(*format);
  const PostingsSpec spec = SpecOf(*format);
  const SegmentId& id = segment_.id;

  const std::string tim_name = SegmentFileName(segment_.name, suffix, "tim");
  RFS_ASSIGN_OR_RETURN(FileBytes tim, FileBytes::Open(*segment_dir_, tim_name));
  RFS_RETURN_IF_ERROR(VerifyFileChecksum(tim.file()));
  ByteReader tim_in = tim.Reader();
  const int32_t max_version = family == DictFamily::kBlockTree  ? kBlockTreeMetaFile
                              : family == DictFamily::kLucene90 ? 2
                                                                : 0;
  const int32_t min_version = family == DictFamily::kBlockTree ? 2 : 0;
  RFS_ASSIGN_OR_RETURN(auto tim_header, codec::ReadIndexHeader(tim_in, "BlockTreeTermsDict",
                                                               min_version, max_version));
  RFS_RETURN_IF_ERROR(CheckHeaderOwner(tim_in, 0, tim_header, id, suffix));
  source.dict_version = tim_header.header.version;
  const bool in_tim = family == DictFamily::kBlockTree && source.dict_version < kBlockTreeMetaFile;
  if (in_tim) {
    if (source.dict_version < kBlockTreeAutoPrefixRemoved) {
      RFS_ASSIGN_OR_RETURN(uint8_t auto_prefix, tim_in.ReadByte());
      if (auto_prefix != 0) return tim_in.Error("auto-prefix terms are not read");
    }
    RFS_ASSIGN_OR_RETURN(source.postings_version,
                         ReadPostingsTermsHeader(tim_in, spec, id, suffix));
    const size_t dir_at = tim.bytes().size() - codec::kFooterLength - 8;
    if (tim.bytes().size() < codec::kFooterLength + 8) return tim_in.Error("terms file too short");
    RFS_RETURN_IF_ERROR(tim_in.Seek(dir_at));
    RFS_ASSIGN_OR_RETURN(uint64_t dir, tim_in.ReadBeU64());
    RFS_RETURN_IF_ERROR(tim_in.Seek(dir));
    RFS_RETURN_IF_ERROR(ParseFieldEntries(tim_in, family, source.dict_version, fields_,
                                          segment_.max_doc(), {}, {}, files->fields));
  } else {
    RFS_RETURN_IF_ERROR(
        ReadTermsMeta(*segment_dir_, segment_, fields_, suffix, spec, source, files->fields));
  }
  for (const auto& [number, field] : files->fields) {
    if (field.root_block_fp >= tim.bytes().size()) {
      return core::DataLossAt(tim_name, field.root_block_fp, "root block beyond the file");
    }
  }

  RFS_ASSIGN_OR_RETURN(FileBytes doc, OpenDocFile(*segment_dir_, segment_, suffix, spec, source));
  files->tim = std::move(tim);
  files->doc = std::move(doc);
  source.tim = files->tim->bytes();
  source.tim_name = files->tim->name();
  source.doc = files->doc->bytes();
  source.doc_name = files->doc->name();
  Files* out = files.get();
  files_.emplace(suffix, std::move(files));
  return out;
}

absl::StatusOr<bool> SegmentTerms::ForEachTerm(
    std::string_view name,
    const std::function<void(std::string_view, std::span<const int32_t>)>& visit) {
  const FieldInfo* info = fields_.ByName(name);
  if (info == nullptr || info->index_options == 0) return false;
  const std::string context = StrCat("segment ", segment_.name, " field '", name, "'");
  if (info->index_options != kIndexDocsOnly) {
    return absl::UnimplementedError(
        StrCat(context, ": terms indexed with frequencies or positions are not read"));
  }
  auto files = OpenFiles(*info);
  if (!files.ok()) return core::WithContext(files.status(), context);
  auto meta = (*files)->fields.find(info->number);
  if (meta == (*files)->fields.end()) return true;  // no document of the segment has a term
  RFS_RETURN_IF_ERROR(core::WithContext(
      ScanTerms((*files)->source, *info, meta->second, segment_.max_doc(), visit), context));
  return true;
}

absl::StatusOr<SegmentTerms::FieldTerms*> SegmentTerms::Field(std::string_view name) {
  if (auto it = by_field_.find(name); it != by_field_.end()) return it->second.get();
  auto field = std::make_unique<FieldTerms>();
  RFS_ASSIGN_OR_RETURN(bool has_terms,
                       ForEachTerm(name, [&](std::string_view term, std::span<const int32_t> docs) {
                         const auto index = static_cast<uint32_t>(field->terms.size());
                         field->terms.emplace_back(term);
                         for (int32_t doc : docs) field->by_doc.emplace_back(doc, index);
                       }));
  if (!has_terms) field.reset();
  if (field) {
    std::stable_sort(field->by_doc.begin(), field->by_doc.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  FieldTerms* out = field.get();
  by_field_.emplace(std::string(name), std::move(field));
  return out;
}

absl::StatusOr<bool> SegmentTerms::Values(std::string_view name, int32_t doc,
                                          std::vector<std::string>& out) {
  RFS_ASSIGN_OR_RETURN(FieldTerms * field, Field(name));
  if (field == nullptr) return false;
  auto it = std::lower_bound(field->by_doc.begin(), field->by_doc.end(),
                             std::pair<int32_t, uint32_t>{doc, 0});
  for (; it != field->by_doc.end() && it->first == doc; ++it)
    out.push_back(field->terms[it->second]);
  return true;
}

}  // namespace rfs::lucene::internal
