// Point values of one segment (docs/sourceless.md): the fallback for a field that keeps neither
// doc values nor a stored value, as Lucene indexes numbers, dates and addresses as points.
//
// The Lucene60 (Lucene 6.0-8.5, big-endian: `.dii` gives each field's offset in `.dim`, where its
// BKD header follows its leaves; Lucene60PointsReader.java), Lucene86 (Lucene 8.6-8.11,
// big-endian) and Lucene90 (Lucene 9 and 10, little-endian) points formats: `.kdm` holds each
// field's BKD metadata (BKDReader.java, Lucene90PointsReader.java), `.kdd` its leaf blocks. A
// field's leaves lie one after the other from its first leaf's offset, each self-delimiting
// (BKDWriter.writeLeafBlockDocs, writeCommonPrefixes and writeLeafBlockPackedValues;
// DocIdsWriter.java for the documents), so every point is read by walking the leaves in order
// without the `.kdi` index tree. Only one-dimensional fields (numbers, dates, addresses) are read.
//
// Internal to rfs::lucene.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/byte_reader.hpp"
#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/statusor.h"
#include "lucene/codecs/field_infos_internal.hpp"
#include "lucene/codecs/format_util_internal.hpp"

namespace rfs::lucene::internal {

/// One field's BKD metadata (the parts a full scan needs).
struct PointsFieldMeta {
  int32_t field_number = -1;
  int32_t bkd_version = 0;
  int32_t num_dims = 0;
  int32_t bytes_per_dim = 0;
  int32_t max_points_in_leaf = 0;
  int32_t num_leaves = 0;
  int64_t point_count = 0;
  int64_t first_leaf_offset = 0;  ///< in `.kdd`
};

/// The field entries of a points metadata file, read from just after its header (`order`: the
/// format's byte order) to the end marker, by field number.
absl::StatusOr<std::map<int32_t, PointsFieldMeta>> ParsePointsMeta(core::ByteReader& in,
                                                                   core::ByteOrder order,
                                                                   const FieldInfos& fields);

/// The fields of the Lucene60 format (Lucene 6.0-8.5): `index` is `.dii` after its header (each
/// field's offset in `data`, the whole `.dim`, where its BKD header lies), by field number.
absl::StatusOr<std::map<int32_t, PointsFieldMeta>> ParseLucene60Points(
    core::ByteReader& index, std::span<const uint8_t> data, std::string_view data_name,
    const FieldInfos& fields);

/// Calls `visit(doc, value)` for every point of one field, leaf by leaf from the field's first
/// leaf in `data` (the whole `.kdd`, named `name` in errors); `value` is bytes_per_dim bytes.
absl::Status ScanPoints(std::span<const uint8_t> data, std::string_view name, core::ByteOrder order,
                        const PointsFieldMeta& meta, int32_t max_doc,
                        const std::function<void(int32_t, std::span<const uint8_t>)>& visit);

/// Every point of each field of one segment, read on first use and kept by document.
class SegmentPoints {
 public:
  SegmentPoints(std::shared_ptr<const core::IDirectory> segment_dir,
                const SegmentCommitInfo& segment, const FieldInfos& fields);
  ~SegmentPoints();

  /// The values of `doc` in field `name` (each bytes_per_dim bytes, in the order Lucene sorted
  /// them: ascending), appended to `out`; false when the segment keeps no points for the field.
  absl::StatusOr<bool> Values(std::string_view name, int32_t doc,
                              std::vector<std::vector<uint8_t>>& out);

 private:
  struct FieldPoints;
  absl::StatusOr<FieldPoints*> Field(std::string_view name);
  absl::Status OpenFiles();
  absl::Status OpenLucene60Files();
  absl::Status OpenData(std::string_view extension, std::span<const std::string_view> codec);

  std::shared_ptr<const core::IDirectory> segment_dir_;
  const SegmentCommitInfo& segment_;
  const FieldInfos& fields_;
  bool opened_ = false;
  core::ByteOrder order_ = core::ByteOrder::kLittle;
  std::map<int32_t, PointsFieldMeta> metas_;
  std::optional<FileBytes> data_;
  std::map<std::string, std::unique_ptr<FieldPoints>, std::less<>> by_field_;
};

}  // namespace rfs::lucene::internal
