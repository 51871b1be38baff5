// Field infos of a segment: the `.fnm` file (docs/formats.md C.6), mapping field
// numbers used by stored fields and doc values to names, doc-values types and
// per-field attributes.
//
// Lucene42FieldInfos v0 and Lucene46FieldInfos v0-v2 (Lucene 4.x) are read
// by lucene4_internal.hpp, the rest here: Lucene50FieldInfos v0-v1,
// Lucene60FieldInfos v0-v2 (big-endian), Lucene90FieldInfos v0 and
// Lucene94FieldInfos v0-v2 (little-endian). When a segment's field infos
// generation is > 0 the generation file `_N_<gen>.fnm` (outside any compound
// file) replaces the segment's own. ParseFieldInfos and ReadFieldInfos
// (dispatch_internal.hpp) read either kind.
//
// FieldInfos is an immutable value; thread-safe to share.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/statusor.h"

namespace rfs::lucene {

/// `.fnm` doc-values type byte (Lucene60/90/94FieldInfosFormat).
enum class DocValuesType : uint8_t {
  kNone = 0,
  kNumeric = 1,
  kBinary = 2,
  kSorted = 3,
  kSortedSet = 4,
  kSortedNumeric = 5,
};

struct FieldInfo {
  std::string name;
  int32_t number = 0;
  bool store_term_vectors = false;  ///< bit 0x01
  bool omit_norms = false;          ///< bit 0x02
  bool store_payloads = false;      ///< bit 0x04
  bool soft_deletes = false;        ///< bit 0x08
  bool parent_field = false;        ///< bit 0x10 (Lucene94 v1+)
  uint8_t index_options = 0;        ///< 0 NONE .. 4 with offsets
  DocValuesType doc_values_type = DocValuesType::kNone;
  uint8_t doc_values_skip_index = 0;  ///< Lucene94 v2+: 0 NONE, 1 RANGE
  int64_t doc_values_gen = -1;
  std::map<std::string, std::string> attributes;
  int32_t point_dimension_count = 0;
  int32_t point_index_dimension_count = 0;
  int32_t point_num_bytes = 0;
  int32_t vector_dimension = 0;
  uint8_t vector_encoding = 0;
  uint8_t vector_similarity = 0;
};

class FieldInfos {
 public:
  FieldInfos() = default;
  FieldInfos(std::string codec, int32_t version, std::vector<FieldInfo> fields);

  const std::string& codec() const { return codec_; }
  int32_t version() const { return version_; }
  /// In file order.
  const std::vector<FieldInfo>& fields() const { return fields_; }
  const FieldInfo* ByNumber(int32_t number) const;
  const FieldInfo* ByName(std::string_view name) const;
  /// The field flagged as the soft-deletes field (bit 0x08), if any.
  const FieldInfo* SoftDeletesField() const;

 private:
  std::string codec_;
  int32_t version_ = 0;
  std::vector<FieldInfo> fields_;
  std::unordered_map<int32_t, size_t> by_number_;
};

namespace internal {

/// Parses the bytes of one Lucene 5.0+ `.fnm` file named `name`, checking the header id and
/// suffix. DataLoss/Unimplemented as documented in errors.hpp.
absl::StatusOr<FieldInfos> ParseModernFieldInfos(std::span<const uint8_t> bytes,
                                                 std::string_view name,
                                                 const std::array<uint8_t, 16>& segment_id,
                                                 std::string_view suffix);

}  // namespace internal

}  // namespace rfs::lucene
