// The commit point of a Lucene index: `segments_N` (docs/formats.md C.2) and the
// per-segment `.si` files it names (C.3).
//
// ReadSegmentInfos parses segments_N formats 6..10 (Lucene 6.x-10.x; its
// fixed-width fields are big-endian in every version) and 0..3 (Lucene 4.x,
// Elasticsearch 1.x: no segment ids, all-zero `id`s; `written_by` is the
// newest segment's version) and, for each segment, its `.si`
// (Lucene40/46/50/62/70/86/90 SegmentInfo; byte order chosen by the codec
// name in the file header). Segments are returned sorted by segment name
// (plain byte-wise string order, as the Java reindexing tool's
// SegmentNameSorter does) so that shard-global document numbers are stable
// across runs and resumable.
//
// The results are plain values: thread-safe to share once built.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/random_access.hpp"

#include "absl/status/statusor.h"

namespace rfs::lucene {

struct LuceneVersion {
  int32_t major = 0;
  int32_t minor = 0;
  int32_t bugfix = 0;
  friend bool operator==(const LuceneVersion&, const LuceneVersion&) = default;
  friend auto operator<=>(const LuceneVersion&, const LuceneVersion&) = default;
};

/// The content of one `.si` file.
struct SegmentInfo {
  std::string codec_header;  ///< e.g. "Lucene90SegmentInfo"
  int32_t header_version = 0;
  LuceneVersion version;  ///< Lucene version that wrote the segment
  std::optional<LuceneVersion> min_version;
  int32_t max_doc = 0;
  bool is_compound = false;
  std::optional<bool> has_blocks;  ///< Lucene 9.9+ only
  std::map<std::string, std::string> diagnostics;
  std::vector<std::string> files;
  std::map<std::string, std::string> attributes;
  bool has_index_sort = false;  ///< an index sort is present (read, skipped)
};

/// One entry of segments_N plus its `.si`.
struct SegmentCommitInfo {
  std::string name;  ///< "_0", "_a", ...
  std::array<uint8_t, 16> id{};
  std::string codec;  ///< "Lucene87", "Elasticsearch816", ... (informational)
  int64_t del_gen = -1;
  int32_t del_count = 0;
  int64_t field_infos_gen = -1;
  int64_t doc_values_gen = -1;
  int32_t soft_del_count = 0;
  std::optional<std::array<uint8_t, 16>> commit_info_id;  ///< format >= 10
  std::vector<std::string> field_infos_files;
  std::map<int32_t, std::vector<std::string>> doc_values_update_files;
  SegmentInfo info;

  int32_t max_doc() const { return info.max_doc; }
};

struct SegmentInfos {
  std::string file_name;  ///< "segments_5"
  int64_t generation = 0;
  int32_t format = 0;  ///< 6..10, or 0..3 for Lucene 4.x
  std::array<uint8_t, 16> id{};
  LuceneVersion written_by;  ///< Lucene version that wrote the commit
  std::optional<int32_t> index_created_major;
  int64_t version = 0;
  int64_t counter = 0;
  std::optional<LuceneVersion> min_segment_version;
  /// Sorted by segment name (see the file comment).
  std::vector<SegmentCommitInfo> segments;
  std::map<std::string, std::string> user_data;

  /// Sum of max_doc over all segments.
  uint64_t total_max_doc() const;
};

/// The name of the newest `segments_N` in `dir` (highest generation, as
/// Lucene's SegmentInfos.getLastCommitGeneration). NotFound when none.
absl::StatusOr<std::string> FindLatestSegmentsFile(const core::IDirectory& dir);

/// Parses `segments_file` (or the newest when empty) and every segment's
/// `.si`. Checksums are verified. DataLoss for corrupt bytes (file + offset),
/// Unimplemented for formats/codec versions not read (naming them and the
/// segment).
absl::StatusOr<SegmentInfos> ReadSegmentInfos(const core::IDirectory& dir,
                                              std::string_view segments_file = "");

/// Parses one `.si` file of `segment_name`, checking its header id.
absl::StatusOr<SegmentInfo> ReadSegmentInfo(const core::IDirectory& dir,
                                            std::string_view segment_name,
                                            const std::array<uint8_t, 16>& segment_id);

}  // namespace rfs::lucene
