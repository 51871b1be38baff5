// The Lucene 5.0+ parsers of segments_N (docs/formats.md C.2, formats 6..10) and `.si` (C.3);
// ReadSegmentInfos and ReadSegmentInfo (dispatch.cpp) hand them the files Lucene 4 did not write.
//
// Internal to rfs::lucene. Stateless functions; thread-safe.
#pragma once

#include <string_view>

#include "rfs/core/byte_reader.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lucene/codecs/format_util_internal.hpp"

namespace rfs::lucene::internal {

/// Parses the `.si` of segment `segment_name` (the whole file), checking its header's id.
absl::StatusOr<SegmentInfo> ParseModernSegmentInfo(const FileBytes& bytes,
                                                   std::string_view segment_name,
                                                   const SegmentId& segment_id);

/// Parses a segments_N of format 6..10 from its index header (whose suffix must be
/// `out.generation` in base 36) to its footer, filling `out` but for the segments' infos.
absl::Status ParseModernSegments(core::ByteReader& in, SegmentInfos& out);

}  // namespace rfs::lucene::internal
