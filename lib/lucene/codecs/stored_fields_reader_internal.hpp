// Raw stored fields of a Lucene segment (docs/formats.md C.7-C.8): every stored
// field value of any document, for plain Lucene indices and for inspection.
// The Elasticsearch document view (ShardReader) is built on the same
// machinery.
//
// Reads Lucene41StoredFieldsData v0-v2 (Lucene 4.x, LZ4, plain header),
// Lucene50StoredFields{Fast,High}Data v0-v4 (LZ4 / DEFLATE, `.fdt`
// only or with a `Lucene85FieldsIndex` `.fdm`), Lucene87StoredFields v3-v4
// (LZ4 and DEFLATE with preset dictionaries) and Lucene90StoredFields v1
// (little-endian). Chunks are decoded whole and kept, so reading the
// documents of a segment in increasing order decompresses each chunk once.
//
// Thread-safety: a StoredFieldsReader is not thread-safe; use one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::lucene {

/// The type bits of a stored field (Lucene's STRING .. NUMERIC_DOUBLE).
enum class StoredFieldType : uint8_t {
  kString = 0,
  kBytes = 1,
  kInt = 2,
  kFloat = 3,
  kLong = 4,
  kDouble = 5,
};

/// One stored value. `bytes` views the decoded chunk (valid until the reader
/// moves to another chunk).
struct StoredField {
  int32_t number = 0;  ///< field number (see FieldInfos)
  StoredFieldType type = StoredFieldType::kString;
  std::span<const uint8_t> bytes;  ///< kString (UTF-8) and kBytes
  int64_t long_value = 0;          ///< kInt and kLong
  double double_value = 0;         ///< kFloat and kDouble

  std::string_view string_value() const {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
};

namespace internal {
class ChunkCursor;
}

class StoredFieldsReader {
 public:
  /// Opens the stored fields of `segment` in `segment_dir` (the compound view
  /// when the segment is compound). With `verify_checksum` the CRC-32 of the
  /// whole `.fdt` is checked up front, so flipped bytes anywhere are DataLoss.
  static absl::StatusOr<std::unique_ptr<StoredFieldsReader>> Open(
      const core::IDirectory& segment_dir, const SegmentCommitInfo& segment,
      bool verify_checksum = true);
  ~StoredFieldsReader();

  int32_t max_doc() const;
  /// `.fdt` codec name and version, e.g. "Lucene87StoredFieldsFastData", 3.
  const std::string& format_name() const;
  int32_t format_version() const;
  int32_t chunk_size() const;

  /// Replaces `fields` with the stored fields of `doc` (0 <= doc < max_doc),
  /// in stored order. Views stay valid until the next call.
  absl::Status Document(int32_t doc, std::vector<StoredField>& fields);

 private:
  explicit StoredFieldsReader(std::unique_ptr<internal::ChunkCursor> cursor);
  std::unique_ptr<internal::ChunkCursor> cursor_;
};

}  // namespace rfs::lucene
