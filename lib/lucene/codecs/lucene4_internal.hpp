// Lucene 4.x (4.0-4.10, what Elasticsearch 0.90/1.x writes) file formats:
// segments_N formats 0-3, `.si` (Lucene40/46SegmentInfo), `.fnm`
// (Lucene42/46FieldInfos) and `.del` live docs (Lucene40LiveDocs, a
// BitVector). Lucene 4 files carry plain codec headers: no segment id and no
// suffix; footers only from 4.8 on (before that, segments_N ends with a
// CRC-32 long and the other files with nothing).
//
// Stored fields (Lucene41StoredFields) and compound files
// (CompoundFileWriter*) are handled next to their newer counterparts in
// stored_fields.cpp and compound.cpp, which share their decoders.
//
// Only dispatch.cpp calls these: the Lucene 5.0+ parsers know nothing of
// Lucene 4, and this code needs only format_util and the value types
// (SegmentInfos, FieldInfos, LiveDocs) it fills.
//
// Internal to rfs::lucene. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/byte_reader.hpp"
#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lucene/codecs/field_infos_internal.hpp"
#include "lucene/codecs/live_docs_internal.hpp"

namespace rfs::lucene::internal {

/// segments_N header versions written by Lucene 4.x (SegmentInfos.java in
/// branch_4x: VERSION_40 = 0, VERSION_46 = 1, VERSION_48 = 2, VERSION_49 = 3).
inline constexpr int32_t kSegments40 = 0;
inline constexpr int32_t kSegments46 = 1;
inline constexpr int32_t kSegments48 = 2;
inline constexpr int32_t kSegments49 = 3;

/// True when the segment's `.si` was read by the Lucene 4 parser.
bool IsLucene4Segment(const SegmentCommitInfo& segment);

/// True for the codec header of a Lucene 4.x segments_N (formats 0..3).
bool IsLucene4SegmentsHeader(const codec::CodecHeader& header);
/// True for the codec of a Lucene 4.x `.si` (Lucene40/46SegmentInfo).
bool IsLucene4SegmentInfoCodec(std::string_view codec);
/// True for the codec of a Lucene 4.2+ `.fnm` (Lucene42/46FieldInfos).
bool IsLucene4FieldInfosCodec(std::string_view codec);

/// Parses segments_N format 0..3 from just after its codec header to the
/// end (including the trailing checksum or footer, which is verified).
absl::Status ParseLucene4SegmentsBody(core::ByteReader& in, SegmentInfos& out);

/// Parses the `.si` of a Lucene 4 segment (`bytes` is the whole file).
absl::StatusOr<SegmentInfo> ParseLucene4SegmentInfo(std::span<const uint8_t> bytes,
                                                    std::string_view name);

/// Parses a Lucene42FieldInfos / Lucene46FieldInfos `.fnm` (whole file).
absl::StatusOr<FieldInfos> ParseLucene4FieldInfos(std::span<const uint8_t> bytes,
                                                  std::string_view name);

/// Parses a Lucene40LiveDocs `.del` (a BitVector) of a segment with
/// `max_doc` docs and `del_count` deletions.
absl::StatusOr<LiveDocs> ParseLucene4LiveDocs(std::span<const uint8_t> bytes, std::string_view name,
                                              int32_t max_doc, int32_t del_count);

/// Reads `<seg>_<delGen>.del` from `index_dir` (all live when del_gen == -1).
absl::StatusOr<LiveDocs> ReadLucene4LiveDocs(const core::IDirectory& index_dir,
                                             const SegmentCommitInfo& segment);

/// Checks the end of a Lucene 4 file: a codec footer (CRC verified) when
/// `has_footer`, else nothing. Returns the end of the data (size - 16 or
/// size).
absl::StatusOr<size_t> Lucene4DataEnd(std::span<const uint8_t> bytes, std::string_view name,
                                      bool has_footer);

}  // namespace rfs::lucene::internal
