// Lucene 4.x segments_N, .si, .fnm and .del parsing (see
// lucene4_internal.hpp). References are to apache/lucene-solr branch_4x:
// index/SegmentInfos.java, codecs/lucene40/Lucene40SegmentInfoReader.java,
// codecs/lucene46/Lucene46SegmentInfoReader.java,
// codecs/lucene42/Lucene42FieldInfosReader.java,
// codecs/lucene46/Lucene46FieldInfosReader.java,
// codecs/lucene40/Lucene40LiveDocsFormat.java and codecs/lucene40/BitVector.java.
#include <algorithm>
#include <bit>
#include <charconv>
#include <unordered_set>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/crc32.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/format_util_internal.hpp"
#include "lucene/codecs/lucene4_internal.hpp"

namespace rfs::lucene::internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

constexpr std::string_view kSi40 = "Lucene40SegmentInfo";
constexpr std::string_view kSi46 = "Lucene46SegmentInfo";
constexpr std::string_view kFnm42 = "Lucene42FieldInfos";
constexpr std::string_view kFnm46 = "Lucene46FieldInfos";
constexpr std::string_view kBitVector = "BitVector";

// Lucene46SegmentInfoFormat: VERSION_START = 0, VERSION_CHECKSUM = 1 (footer).
constexpr int32_t kSi46Checksum = 1;
// Lucene46FieldInfosFormat: FORMAT_START = 0, FORMAT_CHECKSUM = 1 (footer),
// FORMAT_SORTED_NUMERIC = 2 (doc-values type 5 allowed).
constexpr int32_t kFnm46Checksum = 1;
constexpr int32_t kFnm46SortedNumeric = 2;
// BitVector: VERSION_START = 0 (bits mark deleted docs), VERSION_DGAPS_CLEARED
// = 1 (bits mark live docs), VERSION_CHECKSUM = 2 (footer). The codec header
// follows a leading int -2 that told it apart from pre-3.x files.
constexpr int32_t kBitVectorDgapsCleared = 1;
constexpr int32_t kBitVectorChecksum = 2;
constexpr uint32_t kBitVectorMarker = 0xFFFFFFFEu;  // (int) -2

// SegmentInfo.YES / NO as a byte.
constexpr uint8_t kYes = 1;
constexpr uint8_t kNo = 0xFF;

// Lucene42/46FieldInfosFormat field bits.
constexpr uint8_t kIsIndexed = 0x1;
constexpr uint8_t kStoreTermVector = 0x2;
constexpr uint8_t kStoreOffsetsInPostings = 0x4;
constexpr uint8_t kOmitNorms = 0x10;
constexpr uint8_t kStorePayloads = 0x20;
constexpr uint8_t kOmitTermFreqAndPositions = 0x40;
constexpr uint8_t kOmitPositions = 0x80;

absl::StatusOr<int32_t> ReadBeInt(ByteReader& in) {
  RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadBeU32());
  return static_cast<int32_t>(v);
}

absl::StatusOr<int64_t> ReadBeLong(ByteReader& in) {
  RFS_ASSIGN_OR_RETURN(uint64_t v, in.ReadBeU64());
  return static_cast<int64_t>(v);
}

// "4.10.4" (Version.toString) -> {4, 10, 4}; missing parts are 0.
absl::StatusOr<LuceneVersion> ParseVersionString(std::string_view text, const ByteReader& in,
                                                 size_t at) {
  int32_t parts[3] = {0, 0, 0};
  size_t i = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end && i < 3) {
    auto [next, ec] = std::from_chars(p, end, parts[i]);
    if (ec != std::errc() || parts[i] < 0) break;
    ++i;
    p = next;
    if (p < end && *p == '.') ++p;
  }
  if (i == 0) return in.ErrorAt(at, StrCat("invalid Lucene version '", text, "'"));
  return LuceneVersion{parts[0], parts[1], parts[2]};
}

absl::StatusOr<bool> ReadYesNo(ByteReader& in) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint8_t b, in.ReadByte());
  if (b == kYes) return true;
  if (b == kNo) return false;
  return in.ErrorAt(at, StrCat("invalid isCompound flag ", int{b}));
}

absl::Status ExpectEnd(const ByteReader& in, size_t data_end) {
  if (in.position() != data_end) {
    return in.Error(StrCat(data_end - std::min(data_end, in.position()),
                           " unexpected bytes before the end of the data"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsLucene4Segment(const SegmentCommitInfo& segment) {
  return segment.info.codec_header == kSi40 || segment.info.codec_header == kSi46;
}

bool IsLucene4SegmentsHeader(const codec::CodecHeader& header) {
  return header.codec == "segments" && header.version >= kSegments40 &&
         header.version <= kSegments49;
}

bool IsLucene4SegmentInfoCodec(std::string_view codec) { return codec == kSi40 || codec == kSi46; }

bool IsLucene4FieldInfosCodec(std::string_view codec) { return codec == kFnm42 || codec == kFnm46; }

absl::StatusOr<size_t> Lucene4DataEnd(std::span<const uint8_t> bytes, std::string_view name,
                                      bool has_footer) {
  if (!has_footer) return bytes.size();
  RFS_RETURN_IF_ERROR(codec::VerifyFooter(bytes, name).status());
  return bytes.size() - codec::kFooterLength;
}

absl::Status ParseLucene4SegmentsBody(ByteReader& in, SegmentInfos& out) {
  const int32_t format = out.format;
  // Before VERSION_48 the file ends with the CRC-32 of everything before it
  // as a long (ChecksumIndexOutput.finishCommit); from 4.8 on, a codec footer.
  size_t data_end = in.size();
  if (format >= kSegments48) {
    RFS_ASSIGN_OR_RETURN(data_end, Lucene4DataEnd(in.data(), in.source(), true));
  } else {
    if (in.size() < in.position() + 8) return in.Error("segments file too short");
    data_end = in.size() - 8;
    ByteReader tail(in.data().subspan(data_end), in.source(), data_end);
    RFS_ASSIGN_OR_RETURN(uint64_t stored, tail.ReadBeU64());
    const uint32_t actual = core::Crc32(in.data().first(data_end));
    if (stored != actual) {
      return in.ErrorAt(data_end,
                        StrCat("checksum mismatch: stored ", stored, ", computed ", actual));
    }
  }
  RFS_ASSIGN_OR_RETURN(out.version, ReadBeLong(in));
  RFS_ASSIGN_OR_RETURN(int32_t counter, ReadBeInt(in));
  out.counter = counter;
  const size_t num_at = in.position();
  RFS_ASSIGN_OR_RETURN(int32_t num_segments, ReadBeInt(in));
  // Each entry takes at least 2 + 1 + 8 + 4 bytes.
  if (num_segments < 0 || static_cast<uint64_t>(num_segments) * 15 > in.remaining()) {
    return in.ErrorAt(num_at, StrCat("invalid segment count ", num_segments));
  }
  for (int32_t i = 0; i < num_segments; ++i) {
    SegmentCommitInfo seg;
    const size_t seg_at = in.position();
    RFS_ASSIGN_OR_RETURN(std::string_view name, in.ReadString());
    seg.name = std::string(name);
    RFS_ASSIGN_OR_RETURN(std::string_view codec, in.ReadString());
    seg.codec = std::string(codec);
    RFS_ASSIGN_OR_RETURN(seg.del_gen, ReadBeLong(in));
    RFS_ASSIGN_OR_RETURN(seg.del_count, ReadBeInt(in));
    if (format >= kSegments46) {
      RFS_ASSIGN_OR_RETURN(seg.field_infos_gen, ReadBeLong(in));
    }
    if (format >= kSegments49) {
      RFS_ASSIGN_OR_RETURN(seg.doc_values_gen, ReadBeLong(in));
    } else {
      // Before 4.9 one generation covered field infos and doc values.
      seg.doc_values_gen = seg.field_infos_gen;
    }
    if (format >= kSegments49) {
      RFS_ASSIGN_OR_RETURN(seg.field_infos_files, ReadStringSet(in, ByteOrder::kBig, true));
      RFS_ASSIGN_OR_RETURN(int32_t num_dv, ReadBeInt(in));
      RFS_RETURN_IF_ERROR(CheckCount(in, num_dv, 8, "doc-values update field"));
      for (int32_t j = 0; j < num_dv; ++j) {
        RFS_ASSIGN_OR_RETURN(int32_t field, ReadBeInt(in));
        RFS_ASSIGN_OR_RETURN(auto files, ReadStringSet(in, ByteOrder::kBig, true));
        seg.doc_values_update_files[field] = std::move(files);
      }
    } else if (format >= kSegments46) {
      // 4.6-4.8: generation -> files written by updates at that generation.
      // Kept with the field infos files (informational only).
      RFS_ASSIGN_OR_RETURN(int32_t num_gens, ReadBeInt(in));
      RFS_RETURN_IF_ERROR(CheckCount(in, num_gens, 12, "update generation"));
      for (int32_t j = 0; j < num_gens; ++j) {
        RFS_RETURN_IF_ERROR(ReadBeLong(in).status());
        RFS_ASSIGN_OR_RETURN(auto files, ReadStringSet(in, ByteOrder::kBig, true));
        for (auto& f : files) seg.field_infos_files.push_back(std::move(f));
      }
    }
    if (seg.del_gen < -1 || seg.field_infos_gen < -1 || seg.doc_values_gen < -1 ||
        seg.del_count < 0) {
      return in.ErrorAt(seg_at, StrCat("invalid generations or counts of segment ", seg.name));
    }
    if (seg.codec == "Lucene3x") {
      return absl::UnimplementedError(StrCat(in.source(), ": segment ", seg.name,
                                             " uses unsupported codec 'Lucene3x' (Lucene 3.x)"));
    }
    out.segments.push_back(std::move(seg));
  }
  RFS_ASSIGN_OR_RETURN(out.user_data, ReadStringMap(in, ByteOrder::kBig, true));
  return ExpectEnd(in, data_end);
}

absl::StatusOr<SegmentInfo> ParseLucene4SegmentInfo(std::span<const uint8_t> bytes,
                                                    std::string_view name) {
  ByteReader in(bytes, name);
  ByteReader peek = in;
  RFS_ASSIGN_OR_RETURN(codec::CodecHeader any,
                       codec::ReadCodecHeader(peek, "", INT32_MIN, INT32_MAX));
  SegmentInfo out;
  bool lucene46 = false;
  if (any.codec == kSi46) {
    lucene46 = true;
    RFS_ASSIGN_OR_RETURN(any, codec::ReadCodecHeader(in, kSi46, 0, kSi46Checksum));
  } else if (any.codec == kSi40) {
    // Lucene40SegmentInfoFormat: VERSION_START = VERSION_CURRENT = 0.
    RFS_ASSIGN_OR_RETURN(any, codec::ReadCodecHeader(in, kSi40, 0, 0));
  } else {
    return absl::UnimplementedError(
        StrCat(name, ": unsupported codec '", any.codec, "' version ", any.version));
  }
  out.codec_header = any.codec;
  out.header_version = any.version;
  RFS_ASSIGN_OR_RETURN(const size_t data_end,
                       Lucene4DataEnd(bytes, name, lucene46 && any.version >= kSi46Checksum));
  const size_t version_at = in.position();
  RFS_ASSIGN_OR_RETURN(std::string_view version, in.ReadString());
  RFS_ASSIGN_OR_RETURN(out.version, ParseVersionString(version, in, version_at));
  const size_t max_doc_at = in.position();
  RFS_ASSIGN_OR_RETURN(out.max_doc, ReadBeInt(in));
  if (out.max_doc < 0) return in.ErrorAt(max_doc_at, StrCat("invalid docCount ", out.max_doc));
  RFS_ASSIGN_OR_RETURN(out.is_compound, ReadYesNo(in));
  RFS_ASSIGN_OR_RETURN(out.diagnostics, ReadStringMap(in, ByteOrder::kBig, true));
  if (!lucene46) {
    // Lucene40SegmentInfo still carried per-segment attributes before files.
    RFS_ASSIGN_OR_RETURN(out.attributes, ReadStringMap(in, ByteOrder::kBig, true));
  }
  RFS_ASSIGN_OR_RETURN(out.files, ReadStringSet(in, ByteOrder::kBig, true));
  RFS_RETURN_IF_ERROR(ExpectEnd(in, data_end));
  return out;
}

absl::StatusOr<FieldInfos> ParseLucene4FieldInfos(std::span<const uint8_t> bytes,
                                                  std::string_view name) {
  ByteReader in(bytes, name);
  ByteReader peek = in;
  RFS_ASSIGN_OR_RETURN(codec::CodecHeader any,
                       codec::ReadCodecHeader(peek, "", INT32_MIN, INT32_MAX));
  bool lucene46 = false;
  if (any.codec == kFnm46) {
    lucene46 = true;
    RFS_ASSIGN_OR_RETURN(any, codec::ReadCodecHeader(in, kFnm46, 0, kFnm46SortedNumeric));
  } else if (any.codec == kFnm42) {
    // Lucene42FieldInfosFormat: FORMAT_START = FORMAT_CURRENT = 0.
    RFS_ASSIGN_OR_RETURN(any, codec::ReadCodecHeader(in, kFnm42, 0, 0));
  } else {
    return absl::UnimplementedError(
        StrCat(name, ": unsupported codec '", any.codec, "' version ", any.version));
  }
  RFS_ASSIGN_OR_RETURN(const size_t data_end,
                       Lucene4DataEnd(bytes, name, lucene46 && any.version >= kFnm46Checksum));
  const uint8_t max_dv_type = lucene46 && any.version >= kFnm46SortedNumeric ? 5 : 4;
  const size_t count_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t count, in.ReadVInt());
  // A field entry takes at least name(1) + number(1) + bits + dv + map count.
  if (static_cast<uint64_t>(count) * 8 > in.remaining()) {
    return in.ErrorAt(count_at, StrCat("invalid field count ", count));
  }
  std::vector<FieldInfo> fields(count);
  std::unordered_set<int32_t> seen;
  for (auto& f : fields) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(std::string_view field_name, in.ReadString());
    f.name = std::string(field_name);
    RFS_ASSIGN_OR_RETURN(uint32_t number, in.ReadVInt());
    if (static_cast<int32_t>(number) < 0) {
      return in.ErrorAt(at, StrCat("invalid field number ", number));
    }
    f.number = static_cast<int32_t>(number);
    RFS_ASSIGN_OR_RETURN(uint8_t bits, in.ReadByte());
    f.store_term_vectors = bits & kStoreTermVector;
    f.omit_norms = bits & kOmitNorms;
    f.store_payloads = bits & kStorePayloads;
    // IndexOptions as FieldInfo.IndexOptions ordinal + 1 (0 = not indexed):
    // DOCS_ONLY, DOCS_AND_FREQS, ..._AND_POSITIONS, ..._AND_OFFSETS.
    if ((bits & kIsIndexed) == 0) {
      f.index_options = 0;
    } else if (bits & kOmitTermFreqAndPositions) {
      f.index_options = 1;
    } else if (bits & kOmitPositions) {
      f.index_options = 2;
    } else if (bits & kStoreOffsetsInPostings) {
      f.index_options = 4;
    } else {
      f.index_options = 3;
    }
    const size_t dv_at = in.position();
    RFS_ASSIGN_OR_RETURN(uint8_t dv, in.ReadByte());
    // Low nibble: doc-values type; high nibble: norms type (ignored).
    const uint8_t dv_type = dv & 0x0F;
    if (dv_type > max_dv_type || (dv >> 4) > max_dv_type) {
      return in.ErrorAt(dv_at, StrCat("invalid doc values byte ", int{dv}));
    }
    f.doc_values_type = static_cast<DocValuesType>(dv_type);
    if (lucene46) {
      RFS_ASSIGN_OR_RETURN(f.doc_values_gen, ReadBeLong(in));
    }
    RFS_ASSIGN_OR_RETURN(f.attributes, ReadStringMap(in, ByteOrder::kBig, true));
    if (!seen.insert(f.number).second) {
      return in.ErrorAt(at, StrCat("duplicate field number ", f.number));
    }
  }
  RFS_RETURN_IF_ERROR(ExpectEnd(in, data_end));
  return FieldInfos(any.codec, any.version, std::move(fields));
}

absl::StatusOr<LiveDocs> ParseLucene4LiveDocs(std::span<const uint8_t> bytes, std::string_view name,
                                              int32_t max_doc, int32_t del_count) {
  ByteReader in(bytes, name);
  RFS_ASSIGN_OR_RETURN(uint32_t marker, in.ReadBeU32());
  if (marker != kBitVectorMarker) {
    // Files without the marker predate Lucene 3.x and cannot occur in an
    // index Lucene 4 could open.
    return in.ErrorAt(0, StrCat("not a BitVector file (first int ", marker, ")"));
  }
  RFS_ASSIGN_OR_RETURN(codec::CodecHeader header,
                       codec::ReadCodecHeader(in, kBitVector, 0, kBitVectorChecksum));
  RFS_ASSIGN_OR_RETURN(const size_t data_end,
                       Lucene4DataEnd(bytes, name, header.version >= kBitVectorChecksum));
  const size_t size_at = in.position();
  RFS_ASSIGN_OR_RETURN(int32_t size, ReadBeInt(in));
  const bool dgaps = size == -1;
  if (dgaps) {
    RFS_ASSIGN_OR_RETURN(size, ReadBeInt(in));
  }
  if (size != max_doc) {
    return in.ErrorAt(size_at, StrCat("bit vector of ", size, " bits for ", max_doc, " docs"));
  }
  const size_t count_at = in.position();
  RFS_ASSIGN_OR_RETURN(int32_t count, ReadBeInt(in));
  if (count < 0 || count > size) {
    return in.ErrorAt(count_at, StrCat("invalid bit count ", count, " of ", size));
  }
  // Version 0 sets the bits of deleted docs; later versions those of live
  // docs.
  const bool bits_are_live = header.version >= kBitVectorDgapsCleared;
  const size_t num_bytes = (static_cast<size_t>(size) + 7) / 8;
  std::vector<uint8_t> bits(num_bytes, 0);
  if (!dgaps) {
    RFS_ASSIGN_OR_RETURN(auto raw, in.ReadBytes(num_bytes));
    std::copy(raw.begin(), raw.end(), bits.begin());
  } else {
    // D-gaps: (VInt gap to the next byte that differs from the fill, byte)
    // pairs until the bits that differ from the fill are all accounted for.
    // The fill is 0xFF for cleared-dgaps (version >= 1), else 0.
    const uint8_t fill = bits_are_live ? 0xFF : 0x00;
    std::fill(bits.begin(), bits.end(), fill);
    int64_t left = bits_are_live ? int64_t{size} - count : count;
    size_t last = 0;
    while (left > 0) {
      const size_t at = in.position();
      RFS_ASSIGN_OR_RETURN(uint32_t gap, in.ReadVInt());
      last += gap;
      if (last >= num_bytes) return in.ErrorAt(at, StrCat("d-gap past the end (byte ", last, ")"));
      RFS_ASSIGN_OR_RETURN(bits[last], in.ReadByte());
      const int differing =
          bits_are_live ? 8 - std::popcount(bits[last]) : std::popcount(bits[last]);
      if (differing == 0) return in.ErrorAt(at, "d-gap entry changes no bit");
      left -= differing;
    }
    if (bits_are_live && (size & 7) != 0) {
      // The fill set the unused high bits of the last byte; clear them.
      bits[num_bytes - 1] &= static_cast<uint8_t>((1u << (size & 7)) - 1);
    }
  }
  RFS_RETURN_IF_ERROR(ExpectEnd(in, data_end));
  std::vector<uint64_t> words((static_cast<size_t>(size) + 63) / 64, 0);
  int64_t set = 0;
  for (size_t i = 0; i < num_bytes; ++i) {
    uint8_t b = bits_are_live ? bits[i] : static_cast<uint8_t>(~bits[i]);
    if (i == num_bytes - 1 && (size & 7) != 0) {
      b &= static_cast<uint8_t>((1u << (size & 7)) - 1);
    }
    set += std::popcount(b);
    // Bit d of the vector is bit (d & 7) of byte d >> 3, as in LiveDocs
    // words (bit d & 63 of word d >> 6).
    words[i / 8] |= static_cast<uint64_t>(b) << (8 * (i % 8));
  }
  const int64_t live_expected = bits_are_live ? count : int64_t{size} - count;
  if (set != live_expected) {
    return core::DataLossAt(
        name, count_at,
        StrCat("bit vector holds ", set, " live docs, its count says ", live_expected));
  }
  if (int64_t{max_doc} - set != del_count) {
    return core::DataLossAt(
        name, count_at,
        StrCat(int64_t{max_doc} - set, " deleted docs in the bit vector but segments_N says ",
               del_count));
  }
  return LiveDocs::FromWords(max_doc, std::move(words));
}

absl::StatusOr<LiveDocs> ReadLucene4LiveDocs(const core::IDirectory& index_dir,
                                             const SegmentCommitInfo& segment) {
  if (segment.del_gen == -1) return LiveDocs::AllLive(segment.max_doc());
  // Lucene40LiveDocsFormat: IndexFileNames.fileNameFromGeneration(segment,
  // "del", delGen) = "<seg>_<gen36>.del".
  const std::string name = SegmentFileName(segment.name, Base36(segment.del_gen), "del");
  auto bytes = FileBytes::Open(index_dir, name);
  if (!bytes.ok()) return core::WithContext(bytes.status(), StrCat("segment ", segment.name));
  auto live = ParseLucene4LiveDocs(bytes->bytes(), name, segment.max_doc(), segment.del_count);
  if (!live.ok()) return core::WithContext(live.status(), StrCat("segment ", segment.name));
  return live;
}

}  // namespace rfs::lucene::internal
