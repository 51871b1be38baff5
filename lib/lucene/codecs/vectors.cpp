#include <algorithm>
#include <bit>
#include <cstring>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/format_util_internal.hpp"
#include "lucene/codecs/vectors_internal.hpp"

namespace rfs::lucene::internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

// The raw-vector layouts of Lucene 9 and 10: the Lucene 9.0-9.8 HNSW formats each keep their
// vectors in `.vec` beside a `.vem` of their own; every later format keeps them in the Lucene99
// flat files (`.vemf`/`.vec`). Codec names as the formats spell them (Lucene92 and Lucene94 in
// lower case).
struct VectorLayout {
  std::string_view format;  ///< PerFieldKnnVectorsFormat.format; empty: any other (flat files)
  int lucene;               ///< 90, 91, 92, 94, 95 or 99
  std::string_view meta_extension;
  std::string_view meta_codec;
  std::string_view data_codec;
  int32_t max_version;
};

constexpr VectorLayout kLayouts[] = {
    {"Lucene90HnswVectorsFormat", 90, "vem", "Lucene90HnswVectorsFormatMeta",
     "Lucene90HnswVectorsFormatData", 0},
    {"Lucene91HnswVectorsFormat", 91, "vem", "Lucene91HnswVectorsFormatMeta",
     "Lucene91HnswVectorsFormatData", 0},
    {"lucene92HnswVectorsFormat", 92, "vem", "lucene92HnswVectorsFormatMeta",
     "lucene92HnswVectorsFormatData", 0},
    {"Lucene94HnswVectorsFormat", 94, "vem", "lucene94HnswVectorsFormatMeta",
     "lucene94HnswVectorsFormatData", 1},
    {"Lucene95HnswVectorsFormat", 95, "vem", "Lucene95HnswVectorsFormatMeta",
     "Lucene95HnswVectorsFormatData", 1},
    {"", 99, "vemf", "Lucene99FlatVectorsFormatMeta", "Lucene99FlatVectorsFormatData", 0},
};

const VectorLayout& LayoutOf(std::string_view format) {
  for (const VectorLayout& layout : kLayouts) {
    if (!layout.format.empty() && layout.format == format) return layout;
  }
  return kLayouts[std::size(kLayouts) - 1];
}

absl::StatusOr<int64_t> Long(ByteReader& in) {
  RFS_ASSIGN_OR_RETURN(uint64_t v, in.ReadLeU64());
  return static_cast<int64_t>(v);
}

absl::StatusOr<int32_t> Int(ByteReader& in) {
  RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadLeU32());
  return static_cast<int32_t>(v);
}

absl::StatusOr<int64_t> VLong(ByteReader& in) {
  RFS_ASSIGN_OR_RETURN(uint64_t v, in.ReadVLong());
  return static_cast<int64_t>(v);
}

// A count read from the file, bounded by what is left of it at `min_bytes` bytes per item.
absl::StatusOr<uint64_t> CheckedCount(ByteReader& in, int64_t count, size_t min_bytes,
                                      std::string_view what) {
  if (count < 0 || static_cast<uint64_t>(count) > in.remaining() / min_bytes) {
    return in.Error(StrCat("invalid count of ", what, ": ", count));
  }
  return static_cast<uint64_t>(count);
}

// DirectMonotonicReader.loadMeta of `values` values in blocks of 2^shift (the shift read at
// `at`): one 21-byte record per block (min, average increment, offset, bits per value), none of
// which the raw vectors need.
absl::Status SkipMonotonicBlocks(ByteReader& in, uint64_t values, uint32_t shift, size_t at) {
  if (shift == 0 || shift > 30) return in.ErrorAt(at, StrCat("invalid block shift ", shift));
  const uint64_t blocks = (values + (uint64_t{1} << shift) - 1) >> shift;
  if (blocks > in.remaining() / 21) {
    return in.Error(StrCat("monotonic metadata of ", blocks, " blocks runs past the end"));
  }
  return in.Skip(static_cast<size_t>(blocks) * 21);
}

// OrdToDocDISIReaderConfiguration (Lucene 9.2+): docs-with-field offset (-1 dense, -2 empty, -3
// dense and reordered, else sparse), its length, jump table entries, dense rank power; when
// sparse, the ord-to-doc addresses (monotonic with doc ids unless their block shift is 0:
// reordered). The ordinal of a document is its index among the documents with a vector, so the
// addresses are not needed.
absl::Status ReadDocsWithField(ByteReader& in, const FieldInfo& info, VectorFieldEntry& entry) {
  const size_t docs_at = in.position();
  RFS_ASSIGN_OR_RETURN(entry.docs.offset, Long(in));
  RFS_ASSIGN_OR_RETURN(entry.docs.length, Long(in));
  RFS_RETURN_IF_ERROR(in.ReadLeU16().status());
  RFS_ASSIGN_OR_RETURN(uint8_t rank_power, in.ReadByte());
  entry.docs.dense_rank_power = static_cast<int8_t>(rank_power);
  const std::string reordered =
      StrCat("field '", info.name,
             "': reordered vectors (an index sorted for vector search) are not read yet");
  if (entry.docs.offset == -3) return in.ErrorAt(docs_at, reordered);
  if (entry.docs.offset >= 0) {
    RFS_RETURN_IF_ERROR(Long(in).status());  // addresses offset
    const size_t shift_at = in.position();
    RFS_ASSIGN_OR_RETURN(uint32_t shift, in.ReadVInt());
    if (shift == 0) return in.ErrorAt(docs_at, reordered);
    RFS_RETURN_IF_ERROR(
        SkipMonotonicBlocks(in, static_cast<uint64_t>(entry.size), shift, shift_at));
    RFS_RETURN_IF_ERROR(Long(in).status());  // addresses length
  } else if (entry.docs.offset != -1 && entry.docs.offset != -2) {
    return in.ErrorAt(docs_at, StrCat("field '", info.name, "': invalid docs-with-field offset ",
                                      entry.docs.offset));
  }
  return absl::OkStatus();
}

// Lucene 9.0 and 9.1 list the document of every ordinal; kept increasing, as written.
absl::Status ReadOrdToDoc(ByteReader& in, const FieldInfo& info, bool vints,
                          VectorFieldEntry& entry) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(uint64_t size, CheckedCount(in, entry.size, vints ? 1 : 4, "documents"));
  entry.ord_to_doc.resize(static_cast<size_t>(size));
  int64_t previous = -1;
  for (int32_t& doc : entry.ord_to_doc) {
    if (vints) {
      RFS_ASSIGN_OR_RETURN(uint32_t value, in.ReadVInt());
      doc = static_cast<int32_t>(value);
    } else {
      RFS_ASSIGN_OR_RETURN(doc, Int(in));
    }
    if (doc <= previous) {
      return in.ErrorAt(at,
                        StrCat("field '", info.name, "': documents with a vector out of order"));
    }
    previous = doc;
  }
  entry.explicit_docs = true;
  return absl::OkStatus();
}

// The HNSW graph's metadata after the vectors' (Lucene 9.1-9.8): levels and their nodes, skipped.
absl::Status SkipGraphMeta(ByteReader& in, const VectorLayout& layout,
                           const VectorFieldEntry& entry) {
  const bool vints = layout.lucene == 95;
  // Numbers are ints before Lucene 9.5, vints after.
  auto read_int = [&]() -> absl::StatusOr<int32_t> {
    if (!vints) return Int(in);
    RFS_ASSIGN_OR_RETURN(uint32_t v, in.ReadVInt());
    return static_cast<int32_t>(v);
  };
  RFS_RETURN_IF_ERROR(read_int().status());  // M, the graph's connections per node
  RFS_ASSIGN_OR_RETURN(int32_t levels_read, read_int());
  // Every level above 0 takes at least a byte.
  RFS_ASSIGN_OR_RETURN(uint64_t levels, CheckedCount(in, levels_read, 1, "graph levels"));
  uint64_t offsets = levels > 0 ? static_cast<uint64_t>(entry.size) : 0;
  for (uint64_t level = 0; level < levels; ++level) {
    if (level == 0) {
      // Level 0 holds every node and lists none; Lucene95 does not even count them.
      if (!vints) RFS_RETURN_IF_ERROR(read_int().status());
      continue;
    }
    RFS_ASSIGN_OR_RETURN(int32_t nodes, read_int());
    RFS_ASSIGN_OR_RETURN(uint64_t count, CheckedCount(in, nodes, vints ? 1 : 4, "graph nodes"));
    offsets += count;
    if (vints) {
      for (uint64_t i = 0; i < count; ++i) RFS_RETURN_IF_ERROR(in.ReadVInt().status());
    } else {
      RFS_RETURN_IF_ERROR(in.Skip(static_cast<size_t>(count) * 4));
    }
  }
  if (vints && offsets > 0) {
    RFS_RETURN_IF_ERROR(Long(in).status());  // offsets offset
    const size_t shift_at = in.position();
    RFS_ASSIGN_OR_RETURN(uint32_t shift, in.ReadVInt());
    RFS_RETURN_IF_ERROR(SkipMonotonicBlocks(in, offsets, shift, shift_at));
    RFS_RETURN_IF_ERROR(Long(in).status());  // offsets length
  }
  return absl::OkStatus();
}

// One field of the vectors metadata (the FieldEntry of Lucene90..95HnswVectorsReader and
// Lucene99FlatVectorsReader): encoding (Lucene 9.4+), similarity function, data offset and length,
// the graph's offset and length (before Lucene 9.9), dimension, size, then which documents have a
// vector and the graph's levels.
absl::Status ReadEntry(ByteReader& in, const FieldInfo& info, const VectorLayout& layout,
                       VectorFieldEntry& entry) {
  const size_t at = in.position();
  if (layout.lucene >= 94) {
    RFS_ASSIGN_OR_RETURN(int32_t encoding, Int(in));
    if (encoding != 0 && encoding != 1) {
      return in.ErrorAt(at, StrCat("field '", info.name, "': unknown vector encoding ", encoding));
    }
    entry.encoding = static_cast<VectorEncoding>(encoding);
  }
  RFS_RETURN_IF_ERROR(Int(in).status());  // similarity function
  RFS_ASSIGN_OR_RETURN(entry.data_offset, VLong(in));
  RFS_ASSIGN_OR_RETURN(entry.data_length, VLong(in));
  if (layout.lucene < 99) {
    RFS_RETURN_IF_ERROR(VLong(in).status());  // graph offset
    RFS_RETURN_IF_ERROR(VLong(in).status());  // graph length
  }
  int64_t dimension = 0;
  if (layout.lucene >= 95) {
    RFS_ASSIGN_OR_RETURN(uint32_t value, in.ReadVInt());
    dimension = value;
  } else {
    RFS_ASSIGN_OR_RETURN(int32_t value, Int(in));
    dimension = value;
  }
  RFS_ASSIGN_OR_RETURN(entry.size, Int(in));
  if (dimension <= 0 || dimension > (1 << 16) || entry.size < 0 || entry.data_offset < 0) {
    return in.ErrorAt(at, StrCat("field '", info.name, "': invalid vector dimension ", dimension,
                                 " or count ", entry.size));
  }
  entry.dimension = static_cast<int32_t>(dimension);
  const int64_t width = entry.encoding == VectorEncoding::kFloat32 ? 4 : 1;
  if (entry.data_length != int64_t{entry.size} * entry.dimension * width) {
    return in.ErrorAt(
        at, StrCat("field '", info.name, "': vector data length ", entry.data_length, " is not ",
                   entry.size, " vectors of ", entry.dimension, " x ", width, " bytes"));
  }
  switch (layout.lucene) {
    case 90: {
      RFS_RETURN_IF_ERROR(ReadOrdToDoc(in, info, /*vints=*/true, entry));
      // The graph's offset of every ordinal, delta-coded.
      for (int32_t i = 0; i < entry.size; ++i) RFS_RETURN_IF_ERROR(in.ReadVLong().status());
      return absl::OkStatus();
    }
    case 91: {
      RFS_ASSIGN_OR_RETURN(uint8_t marker, in.ReadByte());
      if (marker == 0) {
        RFS_RETURN_IF_ERROR(ReadOrdToDoc(in, info, /*vints=*/false, entry));
      } else if (marker != 0xff) {
        return in.Error(StrCat("field '", info.name, "': invalid dense/sparse marker ", marker));
      } else {
        entry.docs.offset = -1;  // every document has a vector
      }
      return SkipGraphMeta(in, layout, entry);
    }
    case 99:
      return ReadDocsWithField(in, info, entry);
    default:
      RFS_RETURN_IF_ERROR(ReadDocsWithField(in, info, entry));
      return SkipGraphMeta(in, layout, entry);
  }
}

}  // namespace

absl::StatusOr<std::map<int32_t, VectorFieldEntry>> ParseVectorsMeta(ByteReader& in,
                                                                     std::string_view format,
                                                                     const FieldInfos& fields) {
  const VectorLayout& layout = LayoutOf(format);
  std::map<int32_t, VectorFieldEntry> entries;
  for (;;) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(int32_t number, Int(in));
    if (number == -1) break;
    const FieldInfo* info = fields.ByNumber(number);
    if (info == nullptr) return in.ErrorAt(at, StrCat("unknown field number ", number));
    VectorFieldEntry entry;
    entry.field_number = number;
    RFS_RETURN_IF_ERROR(ReadEntry(in, *info, layout, entry));
    if (info->vector_dimension != entry.dimension) {
      return in.ErrorAt(at, StrCat("field '", info->name, "': dimension ", entry.dimension,
                                   " differs from the field infos' ", info->vector_dimension));
    }
    entries[number] = std::move(entry);
  }
  return entries;
}

absl::StatusOr<std::unique_ptr<VectorsFile>> VectorsFile::Open(const core::IDirectory& dir,
                                                               const SegmentCommitInfo& segment,
                                                               std::string_view format,
                                                               const std::string& suffix,
                                                               const FieldInfos& fields) {
  std::unique_ptr<VectorsFile> out(new VectorsFile());
  const VectorLayout& layout = LayoutOf(format);
  const std::string meta_name = SegmentFileName(segment.name, suffix, layout.meta_extension);
  RFS_ASSIGN_OR_RETURN(FileBytes meta, FileBytes::Open(dir, meta_name));
  ByteReader in = meta.Reader();
  const std::string_view meta_codec[] = {layout.meta_codec};
  RFS_ASSIGN_OR_RETURN(auto header,
                       ReadFileHeader(in, {meta_codec, 0, layout.max_version}, &segment.id, suffix,
                                      /*verify_crc=*/true));
  RFS_ASSIGN_OR_RETURN(out->entries_, ParseVectorsMeta(in, format, fields));
  const std::string data_name = SegmentFileName(segment.name, suffix, "vec");
  RFS_ASSIGN_OR_RETURN(out->data_, dir.OpenFile(data_name));
  // The data file is read in place, vector by vector: checksum it whole once, in pieces.
  RFS_RETURN_IF_ERROR(VerifyFileChecksum(*out->data_));
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(out->data_->size(), 256)));
  RFS_RETURN_IF_ERROR(out->data_->ReadAt(0, head));
  ByteReader data_in(head, data_name);
  RFS_ASSIGN_OR_RETURN(auto data_header,
                       codec::ReadIndexHeader(data_in, layout.data_codec, header.header.version,
                                              header.header.version));
  if (data_header.id != segment.id || data_header.suffix != suffix) {
    return core::DataLossAt(data_name, 0,
                            StrCat("header names another segment or suffix (", data_header.suffix,
                                   ") than ", segment.name, "_", suffix));
  }
  const uint64_t footer_start = out->data_->size() >= 16 ? out->data_->size() - 16 : 0;
  for (auto& [number, entry] : out->entries_) {
    if (static_cast<uint64_t>(entry.data_offset) + static_cast<uint64_t>(entry.data_length) >
        footer_start) {
      return core::DataLossAt(data_name, static_cast<uint64_t>(entry.data_offset),
                              StrCat("vectors of field ", number, " run past the data"));
    }
    if (entry.docs.offset >= 0) {
      if (entry.docs.length < 0 ||
          static_cast<uint64_t>(entry.docs.offset) + static_cast<uint64_t>(entry.docs.length) >
              footer_start) {
        return core::DataLossAt(
            data_name, static_cast<uint64_t>(entry.docs.offset),
            StrCat("docs with a vector of field ", number, " run past the data"));
      }
      auto& bytes = out->disi_bytes_[number];
      bytes.resize(static_cast<size_t>(entry.docs.length));
      RFS_RETURN_IF_ERROR(out->data_->ReadAt(static_cast<uint64_t>(entry.docs.offset), bytes));
    }
  }
  return out;
}

const VectorFieldEntry* VectorsFile::Entry(int32_t field_number) const {
  auto it = entries_.find(field_number);
  return it == entries_.end() ? nullptr : &it->second;
}

FieldVectors::FieldVectors(const VectorsFile& file, const VectorFieldEntry& entry, int32_t max_doc)
    : file_(file), entry_(entry), max_doc_(max_doc) {
  DocsWithFieldMeta docs = entry.docs;
  std::span<const uint8_t> disi;
  if (docs.offset >= 0) {
    disi = file.disi_bytes_.at(entry.field_number);
    docs.offset = 0;  // relative to the copied blocks
  }
  docs_ = DocsWithFieldReader(docs, disi, file.data().name(), ByteOrder::kLittle,
                              /*has_rank=*/true, max_doc);
}

absl::StatusOr<bool> FieldVectors::Vector(int32_t doc, std::vector<float>& out) {
  out.clear();
  if (doc < 0 || doc >= max_doc_) return false;
  int64_t ord = 0;
  if (entry_.explicit_docs) {
    const auto& docs = entry_.ord_to_doc;
    auto it = std::lower_bound(docs.begin(), docs.end(), doc);
    if (it == docs.end() || *it != doc) return false;
    ord = it - docs.begin();
  } else {
    RFS_ASSIGN_OR_RETURN(bool has, docs_.AdvanceExact(doc));
    if (!has) return false;
    ord = docs_.index();
  }
  if (ord < 0 || ord >= entry_.size) {
    return core::DataLossAt(
        file_.data().name(), static_cast<uint64_t>(entry_.data_offset),
        StrCat("vector ordinal ", ord, " of doc ", doc, " out of ", entry_.size));
  }
  const size_t width = entry_.encoding == VectorEncoding::kFloat32 ? 4 : 1;
  const size_t bytes = static_cast<size_t>(entry_.dimension) * width;
  scratch_.resize(bytes);
  RFS_RETURN_IF_ERROR(file_.data().ReadAt(
      static_cast<uint64_t>(entry_.data_offset) + static_cast<uint64_t>(ord) * bytes, scratch_));
  out.resize(static_cast<size_t>(entry_.dimension));
  for (size_t i = 0; i < out.size(); ++i) {
    if (width == 4) {
      // IEEE floats in little-endian order.
      const uint32_t bits = uint32_t{scratch_[4 * i]} | uint32_t{scratch_[4 * i + 1]} << 8 |
                            uint32_t{scratch_[4 * i + 2]} << 16 |
                            uint32_t{scratch_[4 * i + 3]} << 24;
      out[i] = std::bit_cast<float>(bits);
    } else {
      out[i] = static_cast<float>(static_cast<int8_t>(scratch_[i]));
    }
  }
  return true;
}

SegmentVectors::SegmentVectors(std::shared_ptr<const core::IDirectory> segment_dir,
                               const SegmentCommitInfo& segment, const FieldInfos& fields)
    : segment_dir_(std::move(segment_dir)), segment_(segment), fields_(fields) {}

SegmentVectors::~SegmentVectors() = default;

absl::StatusOr<FieldVectors*> SegmentVectors::Field(std::string_view name) {
  if (auto it = readers_.find(name); it != readers_.end()) return it->second.get();
  const FieldInfo* info = fields_.ByName(name);
  if (info == nullptr || info->vector_dimension == 0) {
    readers_.emplace(std::string(name), nullptr);
    return nullptr;
  }
  const std::string context = StrCat("segment ", segment_.name, " field '", name, "'");
  auto format = info->attributes.find("PerFieldKnnVectorsFormat.format");
  auto suffix = info->attributes.find("PerFieldKnnVectorsFormat.suffix");
  if (format == info->attributes.end() || suffix == info->attributes.end()) {
    return absl::DataLossError(
        StrCat(context, ": vectors without PerFieldKnnVectorsFormat attributes"));
  }
  const std::string file_suffix = StrCat(format->second, "_", suffix->second);
  auto file_it = files_.find(file_suffix);
  if (file_it == files_.end()) {
    auto opened = VectorsFile::Open(*segment_dir_, segment_, format->second, file_suffix, fields_);
    if (absl::IsNotFound(opened.status())) {
      return absl::UnimplementedError(
          StrCat(context, ": vectors format ", format->second,
                 " (read: the HNSW formats of Lucene 9.0-9.8, and formats keeping raw vectors in "
                 "Lucene99 flat files .vemf/.vec)"));
    }
    if (!opened.ok()) return core::WithContext(opened.status(), context);
    file_it = files_.emplace(file_suffix, *std::move(opened)).first;
  }
  const VectorFieldEntry* entry = file_it->second->Entry(info->number);
  if (entry == nullptr) {
    return absl::DataLossError(StrCat(context, ": no entry in the vectors metadata"));
  }
  auto reader = std::make_unique<FieldVectors>(*file_it->second, *entry, segment_.max_doc());
  FieldVectors* out = reader.get();
  readers_.emplace(std::string(name), std::move(reader));
  return out;
}

}  // namespace rfs::lucene::internal
