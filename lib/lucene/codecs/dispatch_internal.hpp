// Where a segment's files go: to the Lucene 4.x readers (lucene4_internal.hpp) or the Lucene 5.0+
// ones (segment_infos_internal.hpp, field_infos_internal.hpp, live_docs_internal.hpp), by the
// codec header each file starts with or, for `.del`/`.liv`, by the segment's `.si`. The one place
// that knows both; ReadSegmentInfos and ReadSegmentInfo (rfs/lucene/segment_infos.hpp) choose
// here too.
//
// Internal to rfs::lucene. Stateless functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/statusor.h"
#include "lucene/codecs/field_infos_internal.hpp"
#include "lucene/codecs/live_docs_internal.hpp"

namespace rfs::lucene {

/// Parses the bytes of one `.fnm` file named `name` of any version read, checking the header id
/// and suffix where the format has them. DataLoss/Unimplemented as documented in errors.hpp.
absl::StatusOr<FieldInfos> ParseFieldInfos(std::span<const uint8_t> bytes, std::string_view name,
                                           const std::array<uint8_t, 16>& segment_id,
                                           std::string_view suffix);

/// Reads the current field infos of `segment`: `<seg>.fnm` from
/// `segment_dir` (the compound view when the segment is compound) or, when
/// field_infos_gen > 0, `<seg>_<gen>.fnm` from `index_dir`.
absl::StatusOr<FieldInfos> ReadFieldInfos(const core::IDirectory& index_dir,
                                          const core::IDirectory& segment_dir,
                                          const SegmentCommitInfo& segment);

/// Hard deletes only: the segment's `.liv` or, for a Lucene 4 segment, `.del` (from
/// `index_dir`; never inside a compound file), or all live when del_gen == -1. Checks that the
/// number of deleted docs equals del_count.
absl::StatusOr<LiveDocs> ReadHardLiveDocs(const core::IDirectory& index_dir,
                                          const SegmentCommitInfo& segment);

/// ReadHardLiveDocs followed by ApplySoftDeletes.
absl::StatusOr<LiveDocs> ReadLiveDocs(const core::IDirectory& index_dir,
                                      const core::IDirectory& segment_dir,
                                      const SegmentCommitInfo& segment, const FieldInfos& fields);

}  // namespace rfs::lucene
