// .fnm parsing (docs/formats.md C.6; Lucene60FieldInfosFormat.java,
// Lucene90FieldInfosFormat.java, Lucene94FieldInfosFormat.java). Lucene 4's `.fnm` goes to
// lucene4.cpp instead (dispatch.cpp).
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/field_infos_internal.hpp"
#include "lucene/codecs/format_util_internal.hpp"

namespace rfs::lucene {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

enum Codec : size_t { kLucene50 = 0, kLucene60, kLucene90, kLucene94 };
constexpr std::string_view kNames[] = {"Lucene50FieldInfos", "Lucene60FieldInfos",
                                       "Lucene90FieldInfos", "Lucene94FieldInfos"};
// Lucene 4.0-4.1 field infos; not read. Lucene42/46FieldInfos (4.2-4.10) go
// to lucene4.cpp.
constexpr std::string_view kLegacyNames[] = {"Lucene40FieldInfos"};
// Highest header version read per codec: Lucene50 1 (safe maps); Lucene60 2
// (FORMAT_SELECTIVE_INDEXING); Lucene90 0; Lucene94 2
// (FORMAT_DOCVALUE_SKIPPER).
constexpr int32_t kMaxVersion[] = {1, 2, 0, 2};

constexpr uint8_t kStoreTermVectors = 0x1;
constexpr uint8_t kOmitNorms = 0x2;
constexpr uint8_t kStorePayloads = 0x4;
constexpr uint8_t kSoftDeletes = 0x8;
constexpr uint8_t kParentField = 0x10;

absl::StatusOr<int32_t> ReadNonNegativeVInt(ByteReader& in, std::string_view what) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadVInt());
  if (static_cast<int32_t>(v) < 0) {
    return in.ErrorAt(at, StrCat("invalid ", what, " ", v));
  }
  return static_cast<int32_t>(v);
}

absl::Status ParseField(ByteReader& in, Codec codec, int32_t version, FieldInfo& f) {
  const ByteOrder order = codec >= kLucene90 ? ByteOrder::kLittle : ByteOrder::kBig;
  RFS_ASSIGN_OR_RETURN(std::string_view name, in.ReadString());
  f.name = std::string(name);
  RFS_ASSIGN_OR_RETURN(f.number, ReadNonNegativeVInt(in, "field number"));
  RFS_ASSIGN_OR_RETURN(uint8_t bits, in.ReadByte());
  f.store_term_vectors = bits & kStoreTermVectors;
  f.omit_norms = bits & kOmitNorms;
  f.store_payloads = bits & kStorePayloads;
  f.soft_deletes = bits & kSoftDeletes;
  f.parent_field = bits & kParentField;
  const size_t options_at = in.position();
  RFS_ASSIGN_OR_RETURN(f.index_options, in.ReadByte());
  if (f.index_options > 4) {
    return in.ErrorAt(options_at, StrCat("invalid index options byte ", f.index_options));
  }
  const size_t dv_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint8_t dv, in.ReadByte());
  // Lucene50/60 pack norms type in the high nibble of this byte in 4.x; from
  // 5.0 on the byte is the doc-values type alone (0..5).
  if (dv > 5) {
    return in.ErrorAt(dv_at, StrCat("invalid doc values type byte ", int{dv}));
  }
  f.doc_values_type = static_cast<DocValuesType>(dv);
  if (codec == kLucene94 && version >= 2) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(f.doc_values_skip_index, in.ReadByte());
    if (f.doc_values_skip_index > 1) {
      return in.ErrorAt(
          at, StrCat("invalid doc values skip index type ", int{f.doc_values_skip_index}));
    }
  }
  RFS_ASSIGN_OR_RETURN(uint64_t dv_gen, in.ReadU64(order));
  f.doc_values_gen = static_cast<int64_t>(dv_gen);
  RFS_ASSIGN_OR_RETURN(f.attributes,
                       internal::ReadStringMap(in, order,
                                               /*int_count=*/codec == kLucene50 && version == 0));
  if (codec == kLucene50) return absl::OkStatus();
  RFS_ASSIGN_OR_RETURN(f.point_dimension_count, ReadNonNegativeVInt(in, "point dimension count"));
  if (f.point_dimension_count != 0) {
    f.point_index_dimension_count = f.point_dimension_count;
    if (codec != kLucene60 || version >= 2) {
      RFS_ASSIGN_OR_RETURN(f.point_index_dimension_count,
                           ReadNonNegativeVInt(in, "point index dimension count"));
    }
    RFS_ASSIGN_OR_RETURN(f.point_num_bytes, ReadNonNegativeVInt(in, "point num bytes"));
  }
  if (codec == kLucene90) {
    RFS_ASSIGN_OR_RETURN(f.vector_dimension, ReadNonNegativeVInt(in, "vector dimension"));
    RFS_ASSIGN_OR_RETURN(f.vector_similarity, in.ReadByte());
  } else if (codec == kLucene94) {
    RFS_ASSIGN_OR_RETURN(f.vector_dimension, ReadNonNegativeVInt(in, "vector dimension"));
    RFS_ASSIGN_OR_RETURN(f.vector_encoding, in.ReadByte());
    RFS_ASSIGN_OR_RETURN(f.vector_similarity, in.ReadByte());
  }
  return absl::OkStatus();
}

}  // namespace

FieldInfos::FieldInfos(std::string codec, int32_t version, std::vector<FieldInfo> fields)
    : codec_(std::move(codec)), version_(version), fields_(std::move(fields)) {
  for (size_t i = 0; i < fields_.size(); ++i) {
    by_number_.emplace(fields_[i].number, i);
  }
}

const FieldInfo* FieldInfos::ByNumber(int32_t number) const {
  auto it = by_number_.find(number);
  return it == by_number_.end() ? nullptr : &fields_[it->second];
}

const FieldInfo* FieldInfos::ByName(std::string_view name) const {
  for (const auto& f : fields_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const FieldInfo* FieldInfos::SoftDeletesField() const {
  for (const auto& f : fields_) {
    if (f.soft_deletes) return &f;
  }
  return nullptr;
}

namespace internal {

absl::StatusOr<FieldInfos> ParseModernFieldInfos(std::span<const uint8_t> bytes,
                                                 std::string_view name, const SegmentId& segment_id,
                                                 std::string_view suffix) {
  ByteReader in(bytes, name);
  size_t which = 0;
  RFS_ASSIGN_OR_RETURN(codec::IndexHeader header,
                       internal::ReadFileHeader(in, {kNames, 0, 2, kLegacyNames}, &segment_id,
                                                suffix, true, &which));
  const auto codec = static_cast<Codec>(which);
  const int32_t version = header.header.version;
  if (version > kMaxVersion[which]) {
    return absl::UnimplementedError(StrCat(name, ": unsupported version ", version, " of codec '",
                                           header.header.codec, "' (supported 0..",
                                           kMaxVersion[which], ")"));
  }
  const size_t count_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t count, in.ReadVInt());
  // A field entry takes at least 14 bytes.
  if (static_cast<uint64_t>(count) * 14 > in.remaining()) {
    return in.ErrorAt(count_at, StrCat("invalid field count ", count));
  }
  std::vector<FieldInfo> fields(count);
  std::unordered_map<int32_t, bool> seen;
  for (auto& f : fields) {
    const size_t at = in.position();
    RFS_RETURN_IF_ERROR(ParseField(in, codec, version, f));
    if (!seen.emplace(f.number, true).second) {
      return in.ErrorAt(at, StrCat("duplicate field number ", f.number));
    }
  }
  if (in.remaining() != codec::kFooterLength) {
    return in.Error("unexpected bytes before the footer");
  }
  return FieldInfos(header.header.codec, version, std::move(fields));
}

}  // namespace internal

}  // namespace rfs::lucene
