// Lucene 4 or Lucene 5.0+: the one choice between the two families of readers
// (dispatch_internal.hpp). A file's own codec header decides, as Lucene's
// readers of that time would have accepted it.
#include <algorithm>
#include <optional>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/dispatch_internal.hpp"
#include "lucene/codecs/format_util_internal.hpp"
#include "lucene/codecs/lucene4_internal.hpp"
#include "lucene/codecs/segment_infos_internal.hpp"

namespace rfs::lucene {

using core::ByteReader;
using core::StrCat;
using internal::FileBytes;

namespace {

constexpr std::string_view kSegmentsPrefix = "segments_";

// The codec header `bytes` start with, if they start with one (a Lucene 5.0+ index header starts
// with one too).
std::optional<codec::CodecHeader> PeekCodecHeader(std::span<const uint8_t> bytes,
                                                  std::string_view name) {
  ByteReader peek(bytes, name);
  auto any = codec::ReadCodecHeader(peek, "", INT32_MIN, INT32_MAX);
  if (!any.ok()) return std::nullopt;
  return *std::move(any);
}

// Reads every segment's .si, checks delete counts and sorts by name.
absl::StatusOr<SegmentInfos> FinishSegmentInfos(const core::IDirectory& dir, SegmentInfos out) {
  const std::string& name = out.file_name;
  for (auto& seg : out.segments) {
    RFS_ASSIGN_OR_RETURN(seg.info, ReadSegmentInfo(dir, seg.name, seg.id));
    if (out.format < 6) {
      // Lucene 4 commits name no writer version: use the newest segment's.
      out.written_by = std::max(out.written_by, seg.info.version);
      if (!out.min_segment_version.has_value() || seg.info.version < *out.min_segment_version) {
        out.min_segment_version = seg.info.version;
      }
    }
    if (static_cast<int64_t>(seg.del_count) + seg.soft_del_count > seg.info.max_doc) {
      return absl::DataLossError(StrCat(name, ": segment ", seg.name, " has ", seg.del_count,
                                        " deletes and ", seg.soft_del_count,
                                        " soft deletes but only ", seg.info.max_doc, " docs"));
    }
  }
  std::sort(out.segments.begin(), out.segments.end(),
            [](const SegmentCommitInfo& a, const SegmentCommitInfo& b) { return a.name < b.name; });
  return out;
}

}  // namespace

absl::StatusOr<SegmentInfo> ReadSegmentInfo(const core::IDirectory& dir,
                                            std::string_view segment_name,
                                            const std::array<uint8_t, 16>& segment_id) {
  const std::string file_name = internal::SegmentFileName(segment_name, "", "si");
  auto bytes = FileBytes::Open(dir, file_name);
  if (!bytes.ok()) {
    return core::WithContext(bytes.status(), StrCat("segment ", segment_name));
  }
  const auto header = PeekCodecHeader(bytes->bytes(), file_name);
  if (header.has_value() && internal::IsLucene4SegmentInfoCodec(header->codec)) {
    auto info = internal::ParseLucene4SegmentInfo(bytes->bytes(), file_name);
    if (!info.ok()) return core::WithContext(info.status(), StrCat("segment ", segment_name));
    return info;
  }
  return internal::ParseModernSegmentInfo(*bytes, segment_name, segment_id);
}

absl::StatusOr<SegmentInfos> ReadSegmentInfos(const core::IDirectory& dir,
                                              std::string_view segments_file) {
  std::string name(segments_file);
  if (name.empty()) {
    RFS_ASSIGN_OR_RETURN(name, FindLatestSegmentsFile(dir));
  }
  SegmentInfos out;
  out.file_name = name;
  if (name.rfind(kSegmentsPrefix, 0) == 0) {
    out.generation = internal::ParseBase36(name.substr(kSegmentsPrefix.size()));
  }
  RFS_ASSIGN_OR_RETURN(FileBytes bytes, FileBytes::Open(dir, name));
  ByteReader in = bytes.Reader();
  // Pre-Lucene-4 commits start with a negative int format instead of the
  // codec magic.
  if (bytes.bytes().size() >= 4 && bytes.bytes()[0] == 0xFF && bytes.bytes()[1] == 0xFF &&
      bytes.bytes()[2] == 0xFF) {
    return absl::UnimplementedError(StrCat(name, ": unsupported pre-Lucene-4 segments format"));
  }
  // Lucene 4.x commits (formats 0..3) have a plain codec header.
  if (const auto header = PeekCodecHeader(bytes.bytes(), name);
      header.has_value() && internal::IsLucene4SegmentsHeader(*header)) {
    out.format = header->version;
    RFS_RETURN_IF_ERROR(codec::ReadCodecHeader(in, header->codec, out.format, out.format).status());
    RFS_RETURN_IF_ERROR(internal::ParseLucene4SegmentsBody(in, out));
    return FinishSegmentInfos(dir, std::move(out));
  }
  RFS_RETURN_IF_ERROR(internal::ParseModernSegments(in, out));
  return FinishSegmentInfos(dir, std::move(out));
}

absl::StatusOr<FieldInfos> ParseFieldInfos(std::span<const uint8_t> bytes, std::string_view name,
                                           const std::array<uint8_t, 16>& segment_id,
                                           std::string_view suffix) {
  const auto header = PeekCodecHeader(bytes, name);
  if (header.has_value() && internal::IsLucene4FieldInfosCodec(header->codec)) {
    return internal::ParseLucene4FieldInfos(bytes, name);
  }
  return internal::ParseModernFieldInfos(bytes, name, segment_id, suffix);
}

absl::StatusOr<FieldInfos> ReadFieldInfos(const core::IDirectory& index_dir,
                                          const core::IDirectory& segment_dir,
                                          const SegmentCommitInfo& segment) {
  const bool gen = segment.field_infos_gen > 0;
  const std::string suffix = gen ? internal::Base36(segment.field_infos_gen) : "";
  const std::string name = internal::SegmentFileName(segment.name, suffix, "fnm");
  auto bytes = FileBytes::Open(gen ? index_dir : segment_dir, name);
  if (!bytes.ok()) {
    return core::WithContext(bytes.status(), StrCat("segment ", segment.name));
  }
  auto infos = ParseFieldInfos(bytes->bytes(), name, segment.id, suffix);
  if (!infos.ok()) {
    return core::WithContext(infos.status(), StrCat("segment ", segment.name));
  }
  return infos;
}

absl::StatusOr<LiveDocs> ReadHardLiveDocs(const core::IDirectory& index_dir,
                                          const SegmentCommitInfo& segment) {
  if (segment.del_gen == -1) return LiveDocs::AllLive(segment.max_doc());
  // Lucene 4 segments keep deletions in a `.del` BitVector.
  if (internal::IsLucene4Segment(segment)) return internal::ReadLucene4LiveDocs(index_dir, segment);
  return internal::ReadModernLiveDocs(index_dir, segment);
}

absl::StatusOr<LiveDocs> ReadLiveDocs(const core::IDirectory& index_dir,
                                      const core::IDirectory& segment_dir,
                                      const SegmentCommitInfo& segment, const FieldInfos& fields) {
  RFS_ASSIGN_OR_RETURN(LiveDocs live, ReadHardLiveDocs(index_dir, segment));
  RFS_RETURN_IF_ERROR(ApplySoftDeletes(index_dir, segment_dir, segment, fields, live));
  return live;
}

}  // namespace rfs::lucene
