// Compound file reader (docs/formats.md C.4; Lucene50CompoundReader.java,
// Lucene90CompoundReader.java).
#include <algorithm>
#include <cstring>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/compound_internal.hpp"
#include "lucene/codecs/format_util_internal.hpp"

namespace rfs::lucene {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

// A window [offset, offset + length) of another file, named as the sub-file.
class SliceFile final : public core::IRandomAccessFile {
 public:
  SliceFile(std::string name, std::shared_ptr<const core::IRandomAccessFile> base, uint64_t offset,
            uint64_t length)
      : name_(std::move(name)), base_(std::move(base)), offset_(offset), length_(length) {
    if (auto view = base_->ContiguousView(); view.has_value()) {
      view_ = view->subspan(offset_, length_);
      has_view_ = true;
    }
  }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return length_; }
  absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    if (offset > length_ || out.size() > length_ - offset) {
      return core::DataLossAt(
          name_, offset,
          StrCat("read of ", out.size(), " bytes past the end (size ", length_, ")"));
    }
    if (has_view_) {
      if (!out.empty()) std::memcpy(out.data(), view_.data() + offset, out.size());
      return absl::OkStatus();
    }
    return base_->ReadAt(offset_ + offset, out);
  }
  std::optional<std::span<const uint8_t>> ContiguousView() const override {
    if (has_view_) return view_;
    return std::nullopt;
  }
  absl::StatusOr<std::optional<HeldBytes>> ViewAt(uint64_t offset, uint64_t min_length,
                                                  uint64_t max_length) const override {
    if (offset > length_ || min_length > length_ - offset) {
      return core::DataLossAt(
          name_, offset,
          StrCat("read of ", min_length, " bytes past the end (size ", length_, ")"));
    }
    max_length = std::min(max_length, length_ - offset);
    if (has_view_) return HeldBytes{view_.subspan(offset, max_length), nullptr};
    return base_->ViewAt(offset_ + offset, min_length, max_length);
  }
  void DropCachedPages(uint64_t offset, uint64_t length) const override {
    if (offset < length_)
      base_->DropCachedPages(offset_ + offset, std::min(length, length_ - offset));
  }

 private:
  std::string name_;
  std::shared_ptr<const core::IRandomAccessFile> base_;
  uint64_t offset_;
  uint64_t length_;
  std::span<const uint8_t> view_;
  bool has_view_ = false;
};

// Lucene 4.x CompoundFileWriter (store/CompoundFileWriter.java, branch_4x):
// plain codec headers; VERSION_START = 0, VERSION_CHECKSUM = 1 adds footers.
constexpr std::string_view kLucene4Entries = "CompoundFileWriterEntries";
constexpr std::string_view kLucene4Data = "CompoundFileWriterData";
constexpr int32_t kLucene4Checksum = 1;

constexpr std::string_view kEntriesNames[] = {"Lucene50CompoundEntries", "Lucene90CompoundEntries"};
constexpr std::string_view kDataNames[] = {"Lucene50CompoundData", "Lucene90CompoundData"};

using EntryMap = std::map<std::string, CompoundDirectory::Entry, std::less<>>;

// The entry table after the `.cfe` header: VInt count, then per sub-file its
// id, offset and length (u64 in `order`). Every entry must lie within
// [header_len, data_end) of the `.cfs`.
absl::Status ReadEntryTable(ByteReader& in, ByteOrder order, std::string_view segment,
                            uint64_t header_len, uint64_t data_end, std::string_view cfs_name,
                            EntryMap& entries) {
  const size_t count_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t count, in.ReadVInt());
  // An entry takes at least a 1-byte id and two longs.
  if (static_cast<uint64_t>(count) * 17 > in.remaining()) {
    return in.ErrorAt(count_at, StrCat("invalid entry count ", count));
  }
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(std::string_view id, in.ReadString());
    RFS_ASSIGN_OR_RETURN(uint64_t offset, in.ReadU64(order));
    RFS_ASSIGN_OR_RETURN(uint64_t length, in.ReadU64(order));
    if (offset < header_len || offset > data_end || length > data_end - offset) {
      return in.ErrorAt(at, StrCat("entry '", id, "' [", offset, ", +", length,
                                   ") lies outside the data of ", cfs_name));
    }
    if (!entries.emplace(StrCat(segment, id), CompoundDirectory::Entry{offset, length}).second) {
      return in.ErrorAt(at, StrCat("duplicate entry '", id, "'"));
    }
  }
  return absl::OkStatus();
}

// Checks the footer magic of the `.cfs` (its CRC is not recomputed: the
// sub-files carry their own).
absl::Status CheckFooterMagic(const core::IRandomAccessFile& cfs, std::string_view cfs_name) {
  const uint64_t at = cfs.size() - codec::kFooterLength;
  RFS_ASSIGN_OR_RETURN(std::vector<uint8_t> footer, core::ReadRange(cfs, at, codec::kFooterLength));
  ByteReader fin(footer, cfs_name, at);
  RFS_ASSIGN_OR_RETURN(uint32_t magic, fin.ReadBeU32());
  if (magic != codec::kFooterMagic) return fin.ErrorAt(0, "codec footer magic mismatch");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<CompoundDirectory>> CompoundDirectory::Open(
    std::shared_ptr<const core::IDirectory> dir, std::string_view segment,
    const std::array<uint8_t, 16>& segment_id) {
  const std::string cfe_name = internal::SegmentFileName(segment, "", "cfe");
  const std::string cfs_name = internal::SegmentFileName(segment, "", "cfs");
  RFS_ASSIGN_OR_RETURN(internal::FileBytes cfe, internal::FileBytes::Open(*dir, cfe_name));
  ByteReader in = cfe.Reader();
  {
    ByteReader peek = in;
    auto any = codec::ReadCodecHeader(peek, "", INT32_MIN, INT32_MAX);
    if (any.ok() && any->codec == kLucene4Entries) {
      return OpenLucene4(std::move(dir), segment, cfe.bytes(), cfe_name, cfs_name);
    }
  }
  size_t which = 0;
  RFS_ASSIGN_OR_RETURN(
      codec::IndexHeader header,
      internal::ReadFileHeader(in, {kEntriesNames, 0, 0}, &segment_id, "", true, &which));
  (void)header;
  const ByteOrder order = which == 0 ? ByteOrder::kBig : ByteOrder::kLittle;

  auto out = std::shared_ptr<CompoundDirectory>(new CompoundDirectory());
  out->description_ = StrCat(dir->description(), "/", cfs_name);
  auto cfs = dir->OpenFile(cfs_name);
  if (!cfs.ok()) return cfs.status();
  out->cfs_ = std::move(cfs).value();

  // The .cfs must carry the matching data header and a footer; its CRC is
  // not recomputed here (the sub-files carry their own).
  const uint64_t cfs_size = out->cfs_->size();
  const uint64_t header_len = 9 + kDataNames[which].size() + 16 + 1;
  RFS_ASSIGN_OR_RETURN(std::vector<uint8_t> head,
                       core::ReadRange(*out->cfs_, 0, std::min<uint64_t>(header_len, cfs_size)));
  {
    ByteReader head_in(head, cfs_name);
    RFS_RETURN_IF_ERROR(codec::ReadIndexHeader(head_in, kDataNames[which], 0, 0).status());
    (void)head_in;
  }
  if (cfs_size < header_len + codec::kFooterLength) {
    return core::DataLossAt(cfs_name, 0, "compound data file too short");
  }
  RFS_RETURN_IF_ERROR(CheckFooterMagic(*out->cfs_, cfs_name));
  const uint64_t data_end = cfs_size - codec::kFooterLength;
  RFS_RETURN_IF_ERROR(
      ReadEntryTable(in, order, segment, header_len, data_end, cfs_name, out->entries_));
  if (in.remaining() != codec::kFooterLength) {
    return in.Error("unexpected bytes before the footer");
  }
  return out;
}

absl::StatusOr<std::shared_ptr<CompoundDirectory>> CompoundDirectory::OpenLucene4(
    std::shared_ptr<const core::IDirectory> dir, std::string_view segment,
    std::span<const uint8_t> cfe_bytes, const std::string& cfe_name, const std::string& cfs_name) {
  ByteReader in(cfe_bytes, cfe_name);
  RFS_ASSIGN_OR_RETURN(codec::CodecHeader header,
                       codec::ReadCodecHeader(in, kLucene4Entries, 0, kLucene4Checksum));
  const bool has_footer = header.version >= kLucene4Checksum;
  size_t entries_end = cfe_bytes.size();
  if (has_footer) {
    RFS_RETURN_IF_ERROR(codec::VerifyFooter(cfe_bytes, cfe_name).status());
    entries_end -= codec::kFooterLength;
  }
  auto out = std::shared_ptr<CompoundDirectory>(new CompoundDirectory());
  out->description_ = StrCat(dir->description(), "/", cfs_name);
  RFS_ASSIGN_OR_RETURN(out->cfs_, dir->OpenFile(cfs_name));
  const uint64_t cfs_size = out->cfs_->size();
  // Plain codec header: magic, name length byte, name, version.
  const uint64_t header_len = 4 + 1 + kLucene4Data.size() + 4;
  RFS_ASSIGN_OR_RETURN(std::vector<uint8_t> head,
                       core::ReadRange(*out->cfs_, 0, std::min<uint64_t>(header_len, cfs_size)));
  {
    ByteReader head_in(head, cfs_name);
    RFS_RETURN_IF_ERROR(
        codec::ReadCodecHeader(head_in, kLucene4Data, header.version, header.version).status());
  }
  uint64_t data_end = cfs_size;
  if (has_footer) {
    if (cfs_size < header_len + codec::kFooterLength) {
      return core::DataLossAt(cfs_name, 0, "compound data file too short");
    }
    RFS_RETURN_IF_ERROR(CheckFooterMagic(*out->cfs_, cfs_name));
    data_end -= codec::kFooterLength;
  }
  // Ids are names with the segment stripped (IndexFileNames.stripSegmentName):
  // ".fdt", "_Lucene41_0.doc".
  RFS_RETURN_IF_ERROR(
      ReadEntryTable(in, ByteOrder::kBig, segment, header_len, data_end, cfs_name, out->entries_));
  if (in.position() != entries_end) {
    return in.Error("unexpected bytes after the entries");
  }
  return out;
}

std::vector<std::string> CompoundDirectory::ListFiles() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> CompoundDirectory::OpenFile(
    std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(StrCat("no file '", name, "' in compound file ", description_));
  }
  // Named with the compound file's own name, which names the repository blob holding it, so
  // that an error inside the sub-file says where the bytes are.
  return std::shared_ptr<const core::IRandomAccessFile>(std::make_shared<SliceFile>(
      StrCat(name, " in ", cfs_->name()), cfs_, it->second.offset, it->second.length));
}

}  // namespace rfs::lucene
