#include <bit>
#include <cstring>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/format_util_internal.hpp"
#include "lucene/vectors_internal.hpp"

namespace rfs::lucene::internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

constexpr std::string_view kMetaName[] = {"Lucene99FlatVectorsFormatMeta"};
constexpr std::string_view kDataName[] = {"Lucene99FlatVectorsFormatData"};

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

// One field of `.vemf` (Lucene99FlatVectorsReader.FieldEntry): encoding, similarity, data offset
// and length, dimension, size, then the ord-to-doc configuration.
absl::Status ReadEntry(ByteReader& in, const FieldInfo& info, VectorFieldEntry& entry) {
  const size_t at = in.position();
  RFS_ASSIGN_OR_RETURN(int32_t encoding, Int(in));
  if (encoding != 0 && encoding != 1) {
    return in.ErrorAt(at, StrCat("field '", info.name, "': unknown vector encoding ", encoding));
  }
  entry.encoding = static_cast<VectorEncoding>(encoding);
  RFS_RETURN_IF_ERROR(Int(in).status());  // similarity function
  RFS_ASSIGN_OR_RETURN(entry.data_offset, VLong(in));
  RFS_ASSIGN_OR_RETURN(entry.data_length, VLong(in));
  RFS_ASSIGN_OR_RETURN(uint32_t dimension, in.ReadVInt());
  RFS_ASSIGN_OR_RETURN(entry.size, Int(in));
  if (dimension == 0 || dimension > (1u << 16) || entry.size < 0 || entry.data_offset < 0) {
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
  // OrdToDocDISIReaderConfiguration: docs-with-field offset (-1 dense, -2 empty, -3 dense and
  // reordered, else sparse), its length, jump table entries, dense rank power; when sparse, the
  // ord-to-doc addresses (monotonic with doc ids unless their block shift is 0: reordered).
  const size_t docs_at = in.position();
  RFS_ASSIGN_OR_RETURN(entry.docs.offset, Long(in));
  RFS_ASSIGN_OR_RETURN(entry.docs.length, Long(in));
  RFS_RETURN_IF_ERROR(in.ReadLeU16().status());
  RFS_ASSIGN_OR_RETURN(uint8_t rank_power, in.ReadByte());
  entry.docs.dense_rank_power = static_cast<int8_t>(rank_power);
  if (entry.docs.offset == -3) {
    return in.ErrorAt(docs_at, StrCat("field '", info.name,
                                      "': reordered vectors (an index sorted for vector search) "
                                      "are not read yet"));
  }
  if (entry.docs.offset >= 0) {
    RFS_RETURN_IF_ERROR(Long(in).status());  // addresses offset
    RFS_ASSIGN_OR_RETURN(uint32_t shift, in.ReadVInt());
    if (shift == 0) {
      return in.ErrorAt(docs_at, StrCat("field '", info.name,
                                        "': reordered vectors (an index sorted for vector "
                                        "search) are not read yet"));
    }
    if (shift > 30) return in.ErrorAt(docs_at, StrCat("invalid block shift ", shift));
    // DirectMonotonicReader.loadMeta: one 21-byte record per block of 2^shift ordinals; the
    // ordinal of a document is its index among the documents with a vector, so they are not
    // needed.
    const uint64_t blocks =
        (static_cast<uint64_t>(entry.size) + (uint64_t{1} << shift) - 1) >> shift;
    if (blocks > in.remaining() / 21) {
      return in.Error(StrCat("monotonic metadata of ", blocks, " blocks runs past the end"));
    }
    RFS_RETURN_IF_ERROR(in.Skip(static_cast<size_t>(blocks) * 21));
    RFS_RETURN_IF_ERROR(Long(in).status());  // addresses length
  } else if (entry.docs.offset != -1 && entry.docs.offset != -2) {
    return in.ErrorAt(docs_at, StrCat("field '", info.name, "': invalid docs-with-field offset ",
                                      entry.docs.offset));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<VectorsFile>> VectorsFile::Open(const core::IDirectory& dir,
                                                               const SegmentCommitInfo& segment,
                                                               const std::string& suffix,
                                                               const FieldInfos& fields) {
  std::unique_ptr<VectorsFile> out(new VectorsFile());
  const std::string meta_name = SegmentFileName(segment.name, suffix, "vemf");
  RFS_ASSIGN_OR_RETURN(FileBytes meta, FileBytes::Open(dir, meta_name));
  ByteReader in = meta.Reader();
  RFS_ASSIGN_OR_RETURN(auto header, ReadFileHeader(in, {kMetaName, 0, 0}, &segment.id, suffix,
                                                   /*verify_crc=*/true));
  (void)header;
  for (;;) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(int32_t number, Int(in));
    if (number == -1) break;
    const FieldInfo* info = fields.ByNumber(number);
    if (info == nullptr) return in.ErrorAt(at, StrCat("unknown field number ", number));
    VectorFieldEntry entry;
    entry.field_number = number;
    RFS_RETURN_IF_ERROR(ReadEntry(in, *info, entry));
    if (info->vector_dimension != entry.dimension) {
      return in.ErrorAt(at, StrCat("field '", info->name, "': dimension ", entry.dimension,
                                   " differs from the field infos' ", info->vector_dimension));
    }
    out->entries_[number] = entry;
  }
  const std::string data_name = SegmentFileName(segment.name, suffix, "vec");
  RFS_ASSIGN_OR_RETURN(out->data_, dir.OpenFile(data_name));
  // The data file is read in place, vector by vector: checksum it whole once, in pieces.
  RFS_RETURN_IF_ERROR(VerifyFileChecksum(*out->data_));
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(out->data_->size(), 256)));
  RFS_RETURN_IF_ERROR(out->data_->ReadAt(0, head));
  ByteReader data_in(head, data_name);
  RFS_ASSIGN_OR_RETURN(auto data_header, codec::ReadIndexHeader(data_in, kDataName[0], 0, 0));
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
  RFS_ASSIGN_OR_RETURN(bool has, docs_.AdvanceExact(doc));
  if (!has) return false;
  const int64_t ord = docs_.index();
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
    auto opened = VectorsFile::Open(*segment_dir_, segment_, file_suffix, fields_);
    if (absl::IsNotFound(opened.status())) {
      return absl::UnimplementedError(
          StrCat(context, ": vectors format ", format->second,
                 " (only formats of Lucene 9.9+ keeping raw vectors in .vemf/.vec are read)"));
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
