// segments_N (docs/formats.md C.2) and .si (C.3) parsing, Lucene 5.0 and later formats. Which
// files reach these parsers, and which go to the Lucene 4 ones, dispatch.cpp decides.
#include "rfs/lucene/segment_infos.hpp"

#include <algorithm>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/format_util_internal.hpp"
#include "lucene/codecs/segment_infos_internal.hpp"

namespace rfs::lucene {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;
using internal::FileBytes;
using internal::HeaderSpec;

namespace {

// SegmentInfos.java: VERSION_53 = 6 (Lucene 6.x), VERSION_70 = 7,
// VERSION_72 = 8 (counter becomes a VLong), VERSION_74 = 9 (softDelCount),
// VERSION_86 = 10 (SegmentCommitInfo id).
constexpr int32_t kSegmentsFormatMin = 6;
constexpr int32_t kSegmentsFormatMax = 10;
constexpr std::string_view kSegmentsPrefix = "segments_";

// SegmentInfo.YES / NO, written as a byte.
constexpr uint8_t kYes = 1;
constexpr uint8_t kNo = 0xFF;

absl::StatusOr<LuceneVersion> ReadVIntVersion(ByteReader& in) {
  LuceneVersion v;
  RFS_ASSIGN_OR_RETURN(uint32_t major, in.ReadVInt());
  RFS_ASSIGN_OR_RETURN(uint32_t minor, in.ReadVInt());
  RFS_ASSIGN_OR_RETURN(uint32_t bugfix, in.ReadVInt());
  v.major = static_cast<int32_t>(major);
  v.minor = static_cast<int32_t>(minor);
  v.bugfix = static_cast<int32_t>(bugfix);
  return v;
}

absl::StatusOr<LuceneVersion> ReadIntVersion(ByteReader& in, ByteOrder order) {
  LuceneVersion v;
  RFS_ASSIGN_OR_RETURN(uint32_t major, in.ReadU32(order));
  RFS_ASSIGN_OR_RETURN(uint32_t minor, in.ReadU32(order));
  RFS_ASSIGN_OR_RETURN(uint32_t bugfix, in.ReadU32(order));
  v.major = static_cast<int32_t>(major);
  v.minor = static_cast<int32_t>(minor);
  v.bugfix = static_cast<int32_t>(bugfix);
  return v;
}

absl::StatusOr<bool> ReadYesNo(ByteReader& in, std::string_view what) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint8_t b, in.ReadByte());
  if (b == kYes) return true;
  if (b == kNo) return false;
  return in.ErrorAt(at, StrCat("invalid ", what, " flag ", int{b}));
}

absl::StatusOr<std::array<uint8_t, 16>> ReadId(ByteReader& in) {
  RFS_ASSIGN_OR_RETURN(auto bytes, in.ReadBytes(16));
  std::array<uint8_t, 16> id;
  std::copy(bytes.begin(), bytes.end(), id.begin());
  return id;
}

// Everything after the index header of a .si file, for the codec `which`
// (index into kSiNames).
constexpr std::string_view kSiNames[] = {"Lucene50SegmentInfo", "Lucene62SegmentInfo",
                                         "Lucene70SegmentInfo", "Lucene86SegmentInfo",
                                         "Lucene90SegmentInfo"};

absl::Status ParseSegmentInfoBody(ByteReader& in, size_t which, int32_t header_version,
                                  SegmentInfo& out) {
  const bool lucene90 = which == 4;
  const ByteOrder order = lucene90 ? ByteOrder::kLittle : ByteOrder::kBig;
  RFS_ASSIGN_OR_RETURN(out.version, ReadIntVersion(in, order));
  if (which >= 2) {  // Lucene70+: optional minVersion
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(uint8_t has_min, in.ReadByte());
    if (has_min == 1) {
      RFS_ASSIGN_OR_RETURN(out.min_version, ReadIntVersion(in, order));
    } else if (has_min != 0) {
      return in.ErrorAt(at, StrCat("invalid hasMinVersion byte ", int{has_min}));
    }
  }
  const size_t max_doc_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t max_doc, in.ReadU32(order));
  out.max_doc = static_cast<int32_t>(max_doc);
  if (out.max_doc < 0) {
    return in.ErrorAt(max_doc_at, StrCat("invalid maxDoc ", out.max_doc));
  }
  RFS_ASSIGN_OR_RETURN(out.is_compound, ReadYesNo(in, "isCompound"));
  // Lucene99SegmentInfoFormat (9.9+) writes hasBlocks right after isCompound
  // under the unchanged codec name Lucene90SegmentInfo: decide by the
  // segment's version (docs/formats.md C.3).
  if (lucene90 && out.version >= LuceneVersion{9, 9, 0}) {
    RFS_ASSIGN_OR_RETURN(bool has_blocks, ReadYesNo(in, "hasBlocks"));
    out.has_blocks = has_blocks;
  }
  // Lucene50SegmentInfo version 0 wrote i32-counted maps ("unsafe maps");
  // every later format uses VInt counts.
  const bool int_counts = which == 0 && header_version == 0;
  RFS_ASSIGN_OR_RETURN(out.diagnostics, internal::ReadStringMap(in, order, int_counts));
  RFS_ASSIGN_OR_RETURN(out.files, internal::ReadStringSet(in, order, int_counts));
  RFS_ASSIGN_OR_RETURN(out.attributes, internal::ReadStringMap(in, order, int_counts));
  if (which >= 1) {
    // The index sort (Lucene62+) comes last; only its presence is kept. The
    // CRC over the whole file already vouches for the remaining bytes.
    RFS_ASSIGN_OR_RETURN(uint32_t num_sort_fields, in.ReadVInt());
    out.has_index_sort = num_sort_fields > 0;
  }
  return absl::OkStatus();
}

// One segment's entry of a segments_N of `format` (6..10).
absl::Status ParseSegmentEntry(ByteReader& in, int32_t format, SegmentCommitInfo& seg) {
  RFS_ASSIGN_OR_RETURN(std::string_view name, in.ReadString());
  seg.name = std::string(name);
  if (format == 6) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(uint8_t has_id, in.ReadByte());
    if (has_id == 0) {
      // A segment written by Lucene 4.x (no segment id).
      return absl::UnimplementedError(
          StrCat(in.source(), ": segment ", seg.name,
                 " was written by Lucene 4.x (no segment id); unsupported"));
    }
    if (has_id != 1) {
      return in.ErrorAt(at, StrCat("invalid hasID byte ", int{has_id}));
    }
  }
  RFS_ASSIGN_OR_RETURN(seg.id, ReadId(in));
  RFS_ASSIGN_OR_RETURN(std::string_view codec, in.ReadString());
  seg.codec = std::string(codec);
  RFS_ASSIGN_OR_RETURN(uint64_t del_gen, in.ReadBeU64());
  seg.del_gen = static_cast<int64_t>(del_gen);
  RFS_ASSIGN_OR_RETURN(uint32_t del_count, in.ReadBeU32());
  seg.del_count = static_cast<int32_t>(del_count);
  RFS_ASSIGN_OR_RETURN(uint64_t fi_gen, in.ReadBeU64());
  seg.field_infos_gen = static_cast<int64_t>(fi_gen);
  RFS_ASSIGN_OR_RETURN(uint64_t dv_gen, in.ReadBeU64());
  seg.doc_values_gen = static_cast<int64_t>(dv_gen);
  if (format >= 9) {
    RFS_ASSIGN_OR_RETURN(uint32_t soft, in.ReadBeU32());
    seg.soft_del_count = static_cast<int32_t>(soft);
  }
  if (format >= 10) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(uint8_t marker, in.ReadByte());
    if (marker == 1) {
      RFS_ASSIGN_OR_RETURN(seg.commit_info_id, ReadId(in));
    } else if (marker != 0) {
      return in.ErrorAt(at, StrCat("invalid SegmentCommitInfo id marker ", int{marker}));
    }
  }
  RFS_ASSIGN_OR_RETURN(seg.field_infos_files, internal::ReadStringSet(in, ByteOrder::kBig, false));
  const size_t dv_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t num_dv_raw, in.ReadBeU32());
  const auto num_dv = static_cast<int32_t>(num_dv_raw);
  if (num_dv < 0 || static_cast<uint64_t>(num_dv) * 5 > in.remaining()) {
    return in.ErrorAt(dv_at, StrCat("invalid doc-values update field count ", num_dv));
  }
  for (int32_t j = 0; j < num_dv; ++j) {
    RFS_ASSIGN_OR_RETURN(uint32_t field, in.ReadBeU32());
    RFS_ASSIGN_OR_RETURN(auto files, internal::ReadStringSet(in, ByteOrder::kBig, false));
    seg.doc_values_update_files[static_cast<int32_t>(field)] = std::move(files);
  }
  if (seg.del_gen < -1 || seg.field_infos_gen < -1 || seg.doc_values_gen < -1 ||
      seg.del_count < 0 || seg.soft_del_count < 0) {
    return in.ErrorAt(dv_at, StrCat("invalid generations or counts of segment ", seg.name));
  }
  return absl::OkStatus();
}

absl::Status ParseSegmentsBody(ByteReader& in, SegmentInfos& out) {
  const int32_t format = out.format;
  RFS_ASSIGN_OR_RETURN(out.written_by, ReadVIntVersion(in));
  if (format >= 7) {
    RFS_ASSIGN_OR_RETURN(uint32_t created, in.ReadVInt());
    out.index_created_major = static_cast<int32_t>(created);
  }
  RFS_ASSIGN_OR_RETURN(uint64_t version, in.ReadBeU64());
  out.version = static_cast<int64_t>(version);
  if (format >= 8) {
    RFS_ASSIGN_OR_RETURN(uint64_t counter, in.ReadVLong());
    out.counter = static_cast<int64_t>(counter);
  } else {
    RFS_ASSIGN_OR_RETURN(uint32_t counter, in.ReadBeU32());
    out.counter = static_cast<int32_t>(counter);
  }
  const size_t num_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t num_raw, in.ReadBeU32());
  const auto num_segments = static_cast<int32_t>(num_raw);
  // Each segment entry takes well over 40 bytes.
  if (num_segments < 0 || static_cast<uint64_t>(num_segments) * 40 > in.remaining()) {
    return in.ErrorAt(num_at, StrCat("invalid segment count ", num_segments));
  }
  if (num_segments > 0) {
    RFS_ASSIGN_OR_RETURN(out.min_segment_version, ReadVIntVersion(in));
  }
  out.segments.reserve(num_segments);
  for (int32_t i = 0; i < num_segments; ++i) {
    SegmentCommitInfo seg;
    RFS_RETURN_IF_ERROR(ParseSegmentEntry(in, format, seg));
    out.segments.push_back(std::move(seg));
  }
  RFS_ASSIGN_OR_RETURN(out.user_data, internal::ReadStringMap(in, ByteOrder::kBig, false));
  if (in.remaining() != codec::kFooterLength) {
    return in.Error(StrCat(in.remaining() - std::min<size_t>(in.remaining(), 16),
                           " unexpected bytes before the footer"));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t SegmentInfos::total_max_doc() const {
  uint64_t total = 0;
  for (const auto& seg : segments) total += static_cast<uint64_t>(seg.max_doc());
  return total;
}

absl::StatusOr<std::string> FindLatestSegmentsFile(const core::IDirectory& dir) {
  int64_t best = -1;
  std::string best_name;
  for (const auto& name : dir.ListFiles()) {
    if (name.size() <= kSegmentsPrefix.size() ||
        std::string_view(name).substr(0, kSegmentsPrefix.size()) != kSegmentsPrefix) {
      continue;
    }
    // Only exact "segments_<base36>" names: copies such as segments_2.raw
    // and the legacy segments.gen are not commits.
    const int64_t gen =
        internal::ParseBase36(std::string_view(name).substr(kSegmentsPrefix.size()));
    if (gen > best) {
      best = gen;
      best_name = name;
    }
  }
  if (best < 0) {
    return absl::NotFoundError(StrCat("no segments_N file in ", dir.description()));
  }
  return best_name;
}

namespace internal {

absl::StatusOr<SegmentInfo> ParseModernSegmentInfo(const FileBytes& bytes,
                                                   std::string_view segment_name,
                                                   const SegmentId& segment_id) {
  const std::string file_name = internal::SegmentFileName(segment_name, "", "si");
  ByteReader in = bytes.Reader();
  size_t which = 0;
  // Lucene50: versions 0 (unsafe maps) and 1; Lucene62: 0 and 1 (multi-valued
  // sort); Lucene70/86/90: 0.
  const HeaderSpec spec{kSiNames, 0, 1};
  auto header = internal::ReadFileHeader(in, spec, &segment_id, "", true, &which);
  if (!header.ok()) {
    return core::WithContext(header.status(), StrCat("segment ", segment_name));
  }
  if (which >= 2 && header->header.version != 0) {
    return absl::UnimplementedError(StrCat(file_name, ": unsupported version ",
                                           header->header.version, " of codec '",
                                           header->header.codec, "' in segment ", segment_name));
  }
  SegmentInfo out;
  out.codec_header = header->header.codec;
  out.header_version = header->header.version;
  if (auto status = ParseSegmentInfoBody(in, which, out.header_version, out); !status.ok()) {
    return core::WithContext(status, StrCat("segment ", segment_name));
  }
  return out;
}

absl::Status ParseModernSegments(ByteReader& in, SegmentInfos& out) {
  static constexpr std::string_view kNames[] = {"segments"};
  const HeaderSpec spec{kNames, kSegmentsFormatMin, kSegmentsFormatMax};
  const std::string suffix = out.generation >= 0 ? internal::Base36(out.generation) : "";
  RFS_ASSIGN_OR_RETURN(
      codec::IndexHeader header,
      internal::ReadFileHeader(in, spec, nullptr,
                               out.generation >= 0 ? std::string_view(suffix) : std::string_view(),
                               true));
  out.format = header.header.version;
  out.id = header.id;
  return ParseSegmentsBody(in, out);
}

}  // namespace internal

}  // namespace rfs::lucene
