#include <algorithm>
#include <bit>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/points_internal.hpp"

namespace rfs::lucene::internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

// Lucene90PointsFormat first (little-endian; version 0 in Lucene 9, 1 in Lucene 10, whose BKD
// version 10 encodes document ids differently), then Lucene86PointsFormat (big-endian, Lucene
// 8.6-8.11, version 0).
constexpr std::string_view kMetaNames[] = {"Lucene90PointsFormatMeta", "Lucene86PointsFormatMeta"};
constexpr std::string_view kDataNames[] = {"Lucene90PointsFormatData", "Lucene86PointsFormatData"};
// Lucene60PointsFormat (Lucene 6.0-8.5, big-endian): `.dii` gives each field's offset in `.dim`,
// where its BKD header follows its leaves.
constexpr std::string_view kLucene60IndexNames[] = {"Lucene60PointsFormatMeta"};
constexpr std::string_view kLucene60DataNames[] = {"Lucene60PointsFormatData"};

// BKDWriter versions: 4 is Lucene 7.0's, 6 added index dimensions, 9 wrote the metadata file
// (Lucene 8.6), 10 the 21-bit and reordered 24-bit document ids (Lucene 10). Low-cardinality
// leaves date from 7.
constexpr int32_t kBkdVersionStart = 4;  // Lucene 7.0
constexpr int32_t kBkdVersionSelectiveIndexing = 6;
constexpr int32_t kBkdVersionMetaFile = 9;
constexpr int32_t kBkdVersionBpv21 = 10;

// DocIdsWriter's encodings (the first byte of a leaf's documents).
constexpr int8_t kContinuousIds = -2;
constexpr int8_t kBitsetIds = -1;
constexpr int8_t kDeltaVInts = 0;
constexpr int8_t kDelta16 = 16;
constexpr int8_t kBpv21 = 21;
constexpr int8_t kBpv24 = 24;
constexpr int8_t kBpv32 = 32;

absl::StatusOr<int32_t> Int(ByteReader& in, ByteOrder order) {
  RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadU32(order));
  return static_cast<int32_t>(v);
}

absl::StatusOr<int32_t> VIntAsInt(ByteReader& in) {
  RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadVInt());
  return static_cast<int32_t>(v);
}

// `count` ints of the format's order.
absl::Status ReadInts(ByteReader& in, ByteOrder order, std::span<uint32_t> out) {
  for (uint32_t& v : out) {
    RFS_ASSIGN_OR_RETURN(v, in.ReadU32(order));
  }
  return absl::OkStatus();
}

// A short then a byte: the 24- and 21-bit encodings' last few ids.
absl::StatusOr<int32_t> ShortAndByte(ByteReader& in, ByteOrder order, int shift) {
  RFS_ASSIGN_OR_RETURN(uint16_t low, in.ReadU16(order));
  RFS_ASSIGN_OR_RETURN(uint8_t high, in.ReadByte());
  return shift == 8 ? static_cast<int32_t>((uint32_t{low} << 8) | high)
                    : static_cast<int32_t>(uint32_t{low} | (uint32_t{high} << 16));
}

// DocIdsWriter.readInts: the documents of one leaf, in the leaf's (value) order.
absl::Status ReadDocIds(ByteReader& in, ByteOrder order, int32_t version, int32_t count,
                        std::vector<int32_t>& docs) {
  docs.resize(static_cast<size_t>(count));
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint8_t type_byte, in.ReadByte());
  const auto type = static_cast<int8_t>(type_byte);
  std::vector<uint32_t> scratch;
  switch (type) {
    case kContinuousIds: {
      RFS_ASSIGN_OR_RETURN(int32_t start, VIntAsInt(in));
      if (start < 0 || int64_t{start} + count - 1 > INT32_MAX) {
        return in.ErrorAt(at, StrCat("invalid first document ", start, " of ", count));
      }
      for (int32_t i = 0; i < count; ++i) docs[static_cast<size_t>(i)] = start + i;
      return absl::OkStatus();
    }
    case kBitsetIds: {
      RFS_ASSIGN_OR_RETURN(int32_t offset_words, VIntAsInt(in));
      RFS_ASSIGN_OR_RETURN(int32_t words, VIntAsInt(in));
      // 2^25 words of 64 bits cover every int32 document id.
      if (offset_words < 0 || words < 0 || static_cast<size_t>(words) > in.remaining() / 8 ||
          int64_t{offset_words} + words > (int64_t{1} << 25)) {
        return in.ErrorAt(at, StrCat("invalid document bit set of ", words, " words"));
      }
      size_t found = 0;
      for (int32_t w = 0; w < words; ++w) {
        RFS_ASSIGN_OR_RETURN(uint64_t bits, in.ReadU64(order));
        while (bits != 0) {
          if (found == docs.size()) return in.ErrorAt(at, "more documents than the leaf's count");
          docs[found++] = (offset_words + w) * 64 + std::countr_zero(bits);
          bits &= bits - 1;
        }
      }
      if (found != docs.size()) return in.ErrorAt(at, "fewer documents than the leaf's count");
      return absl::OkStatus();
    }
    case kDeltaVInts: {
      int64_t doc = 0;
      for (int32_t& d : docs) {
        RFS_ASSIGN_OR_RETURN(uint32_t delta, in.ReadVInt());
        doc += delta;
        d = static_cast<int32_t>(std::min<int64_t>(doc, INT32_MAX));
      }
      return absl::OkStatus();
    }
    case kDelta16: {
      RFS_ASSIGN_OR_RETURN(int32_t min, VIntAsInt(in));
      if (min < 0 || min > INT32_MAX - 0xffff) {
        return in.ErrorAt(at, StrCat("invalid smallest document ", min));
      }
      const size_t half = docs.size() / 2;
      scratch.resize(half);
      RFS_RETURN_IF_ERROR(ReadInts(in, order, scratch));
      for (size_t i = 0; i < half; ++i) {
        docs[i] = static_cast<int32_t>(scratch[i] >> 16) + min;
        docs[half + i] = static_cast<int32_t>(scratch[i] & 0xffff) + min;
      }
      if (docs.size() % 2 == 1) {
        RFS_ASSIGN_OR_RETURN(uint16_t last, in.ReadU16(order));
        docs.back() = last + min;
      }
      return absl::OkStatus();
    }
    case kBpv21: {
      if (version < kBkdVersionBpv21) break;
      // Two thirds (rounded down to 16) as ints of 21 high bits, whose 11 low bits make up the
      // last third; then three per long; then a short and a byte each.
      const size_t third = (docs.size() / 3) & ~size_t{15};
      const size_t ints = third * 2;
      scratch.resize(ints);
      RFS_RETURN_IF_ERROR(ReadInts(in, order, scratch));
      for (size_t i = 0; i < ints; ++i) docs[i] = static_cast<int32_t>(scratch[i] >> 11);
      for (size_t i = 0; i < third; ++i) {
        docs[ints + i] =
            static_cast<int32_t>((scratch[i] & 0x7ff) | ((scratch[i + third] & 0x7ff) << 11));
      }
      size_t i = third * 3;
      for (; i + 2 < docs.size(); i += 3) {
        RFS_ASSIGN_OR_RETURN(uint64_t l, in.ReadU64(order));
        docs[i] = static_cast<int32_t>(l & 0x1fffff);
        docs[i + 1] = static_cast<int32_t>((l >> 21) & 0x1fffff);
        docs[i + 2] = static_cast<int32_t>(l >> 42);
      }
      for (; i < docs.size(); ++i) {
        RFS_ASSIGN_OR_RETURN(docs[i], ShortAndByte(in, order, 16));
      }
      return absl::OkStatus();
    }
    case kBpv24: {
      if (version >= kBkdVersionBpv21) {
        // Three quarters as ints of 24 high bits, whose low bytes make up the last quarter.
        const size_t quarter = docs.size() / 4;
        const size_t ints = quarter * 3;
        scratch.resize(ints);
        RFS_RETURN_IF_ERROR(ReadInts(in, order, scratch));
        for (size_t i = 0; i < ints; ++i) docs[i] = static_cast<int32_t>(scratch[i] >> 8);
        for (size_t i = 0; i < quarter; ++i) {
          docs[ints + i] =
              static_cast<int32_t>((scratch[i] & 0xff) | ((scratch[i + quarter] & 0xff) << 8) |
                                   ((scratch[i + quarter * 2] & 0xff) << 16));
        }
        for (size_t i = quarter * 4; i < docs.size(); ++i) {
          RFS_ASSIGN_OR_RETURN(docs[i], ShortAndByte(in, order, 16));
        }
        return absl::OkStatus();
      }
      // Eight ids in three longs, then a short and a byte each.
      size_t i = 0;
      for (; i + 7 < docs.size(); i += 8) {
        RFS_ASSIGN_OR_RETURN(uint64_t l1, in.ReadU64(order));
        RFS_ASSIGN_OR_RETURN(uint64_t l2, in.ReadU64(order));
        RFS_ASSIGN_OR_RETURN(uint64_t l3, in.ReadU64(order));
        docs[i] = static_cast<int32_t>(l1 >> 40);
        docs[i + 1] = static_cast<int32_t>((l1 >> 16) & 0xffffff);
        docs[i + 2] = static_cast<int32_t>(((l1 & 0xffff) << 8) | (l2 >> 56));
        docs[i + 3] = static_cast<int32_t>((l2 >> 32) & 0xffffff);
        docs[i + 4] = static_cast<int32_t>((l2 >> 8) & 0xffffff);
        docs[i + 5] = static_cast<int32_t>(((l2 & 0xff) << 16) | (l3 >> 48));
        docs[i + 6] = static_cast<int32_t>((l3 >> 24) & 0xffffff);
        docs[i + 7] = static_cast<int32_t>(l3 & 0xffffff);
      }
      for (; i < docs.size(); ++i) {
        RFS_ASSIGN_OR_RETURN(docs[i], ShortAndByte(in, order, 8));
      }
      return absl::OkStatus();
    }
    case kBpv32: {
      scratch.resize(docs.size());
      RFS_RETURN_IF_ERROR(ReadInts(in, order, scratch));
      for (size_t i = 0; i < docs.size(); ++i) docs[i] = static_cast<int32_t>(scratch[i]);
      return absl::OkStatus();
    }
    default:
      break;
  }
  return in.ErrorAt(
      at, StrCat("unknown document id encoding ", int{type}, " (BKD version ", version, ")"));
}

}  // namespace

namespace {

// One field's BKD header (BKDReader's constructor): from BKD version 9 (Lucene 8.6) in the
// metadata file, with the first leaf's and the index's offsets as longs; before that at the
// field's offset in `.dim`, with the first leaf's offset opening the packed index.
absl::Status ParseBkdHeader(ByteReader& in, ByteOrder order, int32_t min_version,
                            int32_t max_version, const FieldInfo& info, PointsFieldMeta& meta) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(auto header, codec::ReadCodecHeader(in, "BKD", min_version, max_version));
  meta.bkd_version = header.version;
  RFS_ASSIGN_OR_RETURN(meta.num_dims, VIntAsInt(in));
  int32_t index_dims = meta.num_dims;
  if (meta.bkd_version >= kBkdVersionSelectiveIndexing) {
    RFS_ASSIGN_OR_RETURN(index_dims, VIntAsInt(in));
  }
  RFS_ASSIGN_OR_RETURN(meta.max_points_in_leaf, VIntAsInt(in));
  RFS_ASSIGN_OR_RETURN(meta.bytes_per_dim, VIntAsInt(in));
  RFS_ASSIGN_OR_RETURN(meta.num_leaves, VIntAsInt(in));
  if (meta.num_dims < 1 || meta.num_dims > 16 || index_dims < 1 || index_dims > meta.num_dims ||
      meta.bytes_per_dim < 1 || meta.bytes_per_dim > 16 || meta.max_points_in_leaf < 1 ||
      meta.num_leaves < 1) {
    return in.ErrorAt(
        at, StrCat("field '", info.name, "': invalid BKD configuration (", meta.num_dims,
                   " dimensions of ", meta.bytes_per_dim, " bytes, ", meta.num_leaves, " leaves)"));
  }
  // Minimum and maximum packed values, then counts and where the index and leaves begin.
  RFS_RETURN_IF_ERROR(in.Skip(static_cast<size_t>(2 * index_dims * meta.bytes_per_dim)));
  RFS_ASSIGN_OR_RETURN(uint64_t points, in.ReadVLong());
  meta.point_count = static_cast<int64_t>(points);
  RFS_RETURN_IF_ERROR(in.ReadVInt().status());  // documents with a point
  RFS_RETURN_IF_ERROR(in.ReadVInt().status());  // index bytes
  uint64_t first_leaf = 0;
  if (meta.bkd_version >= kBkdVersionMetaFile) {
    RFS_ASSIGN_OR_RETURN(first_leaf, in.ReadU64(order));
    RFS_RETURN_IF_ERROR(in.ReadU64(order).status());  // index start
  } else {
    RFS_ASSIGN_OR_RETURN(first_leaf, in.ReadVLong());
  }
  meta.first_leaf_offset = static_cast<int64_t>(first_leaf);
  if (meta.point_count < 0 || meta.first_leaf_offset < 0) {
    return in.ErrorAt(at, StrCat("field '", info.name, "': invalid point count or offset"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<int32_t, PointsFieldMeta>> ParsePointsMeta(ByteReader& in, ByteOrder order,
                                                                   const FieldInfos& fields) {
  std::map<int32_t, PointsFieldMeta> out;
  for (;;) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(int32_t number, Int(in, order));
    if (number == -1) break;
    const FieldInfo* info = fields.ByNumber(number);
    if (info == nullptr) return in.ErrorAt(at, StrCat("unknown field number ", number));
    PointsFieldMeta meta;
    meta.field_number = number;
    RFS_RETURN_IF_ERROR(
        ParseBkdHeader(in, order, kBkdVersionMetaFile, kBkdVersionBpv21, *info, meta));
    out[number] = meta;
  }
  return out;
}

absl::StatusOr<std::map<int32_t, PointsFieldMeta>> ParseLucene60Points(
    ByteReader& index, std::span<const uint8_t> data, std::string_view data_name,
    const FieldInfos& fields) {
  std::map<int32_t, PointsFieldMeta> out;
  RFS_ASSIGN_OR_RETURN(uint32_t count, index.ReadVInt());
  RFS_RETURN_IF_ERROR(CheckCount(index, count, 2, "points fields"));
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = index.position();
    RFS_ASSIGN_OR_RETURN(int32_t number, VIntAsInt(index));
    RFS_ASSIGN_OR_RETURN(uint64_t fp, index.ReadVLong());
    const FieldInfo* info = fields.ByNumber(number);
    if (info == nullptr) return index.ErrorAt(at, StrCat("unknown field number ", number));
    ByteReader in(data, data_name);
    if (fp >= data.size()) return index.ErrorAt(at, StrCat("field offset ", fp, " past the data"));
    RFS_RETURN_IF_ERROR(in.Seek(static_cast<size_t>(fp)));
    PointsFieldMeta meta;
    meta.field_number = number;
    RFS_RETURN_IF_ERROR(ParseBkdHeader(in, ByteOrder::kBig, kBkdVersionStart,
                                       kBkdVersionMetaFile - 1, *info, meta));
    out[number] = meta;
  }
  return out;
}

absl::Status ScanPoints(std::span<const uint8_t> data, std::string_view name, ByteOrder order,
                        const PointsFieldMeta& meta, int32_t max_doc,
                        const std::function<void(int32_t, std::span<const uint8_t>)>& visit) {
  if (meta.num_dims != 1) {
    return absl::UnimplementedError(StrCat(name, ": points of ", meta.num_dims,
                                           " dimensions (only one-dimensional points are read)"));
  }
  if (static_cast<uint64_t>(meta.first_leaf_offset) > data.size()) {
    return core::DataLossAt(name, static_cast<uint64_t>(meta.first_leaf_offset),
                            "first leaf past the end");
  }
  ByteReader in(data, name);
  RFS_RETURN_IF_ERROR(in.Seek(static_cast<size_t>(meta.first_leaf_offset)));
  const size_t width = static_cast<size_t>(meta.bytes_per_dim);
  std::vector<int32_t> docs;
  std::vector<uint8_t> value(width);
  int64_t seen = 0;
  for (int32_t leaf = 0; leaf < meta.num_leaves; ++leaf) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(int32_t count, VIntAsInt(in));
    if (count < 1 || count > meta.max_points_in_leaf || seen + count > meta.point_count) {
      return in.ErrorAt(at, StrCat("leaf ", leaf, " holds ", count, " points"));
    }
    seen += count;
    RFS_RETURN_IF_ERROR(ReadDocIds(in, order, meta.bkd_version, count, docs));
    for (int32_t doc : docs) {
      if (doc < 0 || doc >= max_doc) {
        return in.ErrorAt(at, StrCat("leaf ", leaf, ": document ", doc, " of ", max_doc));
      }
    }
    // The common prefix of the leaf's values, then how the rest is stored.
    RFS_ASSIGN_OR_RETURN(int32_t prefix, VIntAsInt(in));
    if (prefix < 0 || static_cast<size_t>(prefix) > width) {
      return in.ErrorAt(at, StrCat("leaf ", leaf, ": common prefix of ", prefix, " bytes"));
    }
    RFS_ASSIGN_OR_RETURN(auto prefix_bytes, in.ReadBytes(static_cast<size_t>(prefix)));
    std::copy(prefix_bytes.begin(), prefix_bytes.end(), value.begin());
    const size_t suffix = width - static_cast<size_t>(prefix);
    RFS_ASSIGN_OR_RETURN(uint8_t compressed_byte, in.ReadByte());
    const auto compressed = static_cast<int8_t>(compressed_byte);
    if (compressed == -1) {  // every value equals the prefix
      for (int32_t doc : docs) visit(doc, value);
      continue;
    }
    size_t i = 0;
    if (compressed == -2) {
      // Low cardinality: runs of one value, each a count then the value's suffix.
      while (i < docs.size()) {
        RFS_ASSIGN_OR_RETURN(int32_t run, VIntAsInt(in));
        if (run < 1 || static_cast<size_t>(run) > docs.size() - i) {
          return in.ErrorAt(at, StrCat("leaf ", leaf, ": runs exceed its ", count, " points"));
        }
        RFS_ASSIGN_OR_RETURN(auto rest, in.ReadBytes(suffix));
        std::copy(rest.begin(), rest.end(), value.begin() + prefix);
        for (int32_t r = 0; r < run; ++r) visit(docs[i++], value);
      }
      continue;
    }
    if (compressed != 0 || suffix == 0) {
      return in.ErrorAt(at,
                        StrCat("leaf ", leaf, ": invalid compressed dimension ", int{compressed}));
    }
    // High cardinality: the first byte after the prefix run-length coded, the rest verbatim.
    while (i < docs.size()) {
      RFS_ASSIGN_OR_RETURN(uint8_t lead, in.ReadByte());
      RFS_ASSIGN_OR_RETURN(uint8_t run, in.ReadByte());
      if (run == 0 || run > docs.size() - i) {
        return in.ErrorAt(at, StrCat("leaf ", leaf, ": runs exceed its ", count, " points"));
      }
      value[static_cast<size_t>(prefix)] = lead;
      for (int r = 0; r < run; ++r) {
        RFS_ASSIGN_OR_RETURN(auto rest, in.ReadBytes(suffix - 1));
        std::copy(rest.begin(), rest.end(), value.begin() + prefix + 1);
        visit(docs[i++], value);
      }
    }
  }
  if (seen != meta.point_count) {
    return core::DataLossAt(name, static_cast<uint64_t>(meta.first_leaf_offset),
                            StrCat("leaves hold ", seen, " points, not ", meta.point_count));
  }
  return absl::OkStatus();
}

struct SegmentPoints::FieldPoints {
  size_t width = 0;
  // (document, index of its value in `values`), by document; a document's values in leaf order.
  std::vector<std::pair<int32_t, uint32_t>> by_doc;
  std::vector<uint8_t> values;
};

SegmentPoints::SegmentPoints(std::shared_ptr<const core::IDirectory> segment_dir,
                             const SegmentCommitInfo& segment, const FieldInfos& fields)
    : segment_dir_(std::move(segment_dir)), segment_(segment), fields_(fields) {}

SegmentPoints::~SegmentPoints() = default;

absl::Status SegmentPoints::OpenFiles() {
  if (opened_) return absl::OkStatus();
  const std::string meta_name = SegmentFileName(segment_.name, "", "kdm");
  auto meta = FileBytes::Open(*segment_dir_, meta_name);
  if (absl::IsNotFound(meta.status())) return OpenLucene60Files();
  RFS_RETURN_IF_ERROR(meta.status());
  ByteReader in = meta->Reader();
  size_t which = 0;
  RFS_ASSIGN_OR_RETURN(auto header, ReadFileHeader(in, {kMetaNames, 0, 1}, &segment_.id, "",
                                                   /*verify_crc=*/true, &which));
  (void)header;
  order_ = which == 0 ? ByteOrder::kLittle : ByteOrder::kBig;
  RFS_ASSIGN_OR_RETURN(metas_, ParsePointsMeta(in, order_, fields_));
  const std::string_view data_codec[] = {kDataNames[which]};
  RFS_RETURN_IF_ERROR(OpenData("kdd", data_codec));
  opened_ = true;
  return absl::OkStatus();
}

absl::Status SegmentPoints::OpenData(std::string_view extension,
                                     std::span<const std::string_view> codec) {
  const std::string data_name = SegmentFileName(segment_.name, "", extension);
  RFS_ASSIGN_OR_RETURN(FileBytes data, FileBytes::Open(*segment_dir_, data_name));
  RFS_RETURN_IF_ERROR(VerifyFileChecksum(data.file()));
  ByteReader data_in = data.Reader();
  RFS_RETURN_IF_ERROR(
      ReadFileHeader(data_in, {codec, 0, 1}, &segment_.id, "", /*verify_crc=*/false).status());
  data_ = std::move(data);
  return absl::OkStatus();
}

absl::Status SegmentPoints::OpenLucene60Files() {
  const std::string index_name = SegmentFileName(segment_.name, "", "dii");
  RFS_ASSIGN_OR_RETURN(FileBytes index, FileBytes::Open(*segment_dir_, index_name));
  ByteReader in = index.Reader();
  RFS_RETURN_IF_ERROR(ReadFileHeader(in, {kLucene60IndexNames, 0, 0}, &segment_.id, "",
                                     /*verify_crc=*/true)
                          .status());
  RFS_RETURN_IF_ERROR(OpenData("dim", kLucene60DataNames));
  order_ = ByteOrder::kBig;
  RFS_ASSIGN_OR_RETURN(metas_, ParseLucene60Points(in, data_->bytes(), data_->name(), fields_));
  opened_ = true;
  return absl::OkStatus();
}

absl::StatusOr<SegmentPoints::FieldPoints*> SegmentPoints::Field(std::string_view name) {
  if (auto it = by_field_.find(name); it != by_field_.end()) return it->second.get();
  const FieldInfo* info = fields_.ByName(name);
  if (info == nullptr || info->point_dimension_count == 0) {
    by_field_.emplace(std::string(name), nullptr);
    return nullptr;
  }
  const std::string context = StrCat("segment ", segment_.name, " field '", name, "'");
  if (auto opened = OpenFiles(); !opened.ok()) return core::WithContext(opened, context);
  auto meta = metas_.find(info->number);
  if (meta == metas_.end()) {
    return absl::DataLossError(StrCat(context, ": no entry in the points metadata"));
  }
  auto field = std::make_unique<FieldPoints>();
  field->width = static_cast<size_t>(meta->second.bytes_per_dim);
  RFS_RETURN_IF_ERROR(core::WithContext(
      ScanPoints(data_->bytes(), data_->name(), order_, meta->second, segment_.max_doc(),
                 [&](int32_t doc, std::span<const uint8_t> value) {
                   field->by_doc.emplace_back(
                       doc, static_cast<uint32_t>(field->values.size() / field->width));
                   field->values.insert(field->values.end(), value.begin(), value.end());
                 }),
      context));
  std::stable_sort(field->by_doc.begin(), field->by_doc.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  FieldPoints* out = field.get();
  by_field_.emplace(std::string(name), std::move(field));
  return out;
}

absl::StatusOr<bool> SegmentPoints::Values(std::string_view name, int32_t doc,
                                           std::vector<std::vector<uint8_t>>& out) {
  RFS_ASSIGN_OR_RETURN(FieldPoints * field, Field(name));
  if (field == nullptr) return false;
  auto it = std::lower_bound(field->by_doc.begin(), field->by_doc.end(),
                             std::pair<int32_t, uint32_t>{doc, 0});
  for (; it != field->by_doc.end() && it->first == doc; ++it) {
    const auto* begin = field->values.data() + size_t{it->second} * field->width;
    out.emplace_back(begin, begin + field->width);
  }
  return true;
}

}  // namespace rfs::lucene::internal
