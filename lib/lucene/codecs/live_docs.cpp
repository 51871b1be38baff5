// Live docs (docs/formats.md C.9) and soft deletes through NUMERIC doc values
// (C.10-C.12; Lucene70/80/90DocValuesProducer.java, IndexedDISI.java,
// DirectMonotonicReader.java).
#include <bit>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/doc_values_internal.hpp"
#include "lucene/codecs/format_util_internal.hpp"
#include "lucene/codecs/live_docs_internal.hpp"

namespace rfs::lucene {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;
using internal::FileBytes;

LiveDocs LiveDocs::AllLive(int32_t max_doc) {
  LiveDocs out;
  out.max_doc_ = max_doc;
  out.words_.assign((static_cast<size_t>(max_doc) + 63) / 64, ~uint64_t{0});
  if (max_doc % 64 != 0) {
    out.words_.back() = (uint64_t{1} << (max_doc % 64)) - 1;
  }
  return out;
}

LiveDocs LiveDocs::FromWords(int32_t max_doc, std::vector<uint64_t> words) {
  LiveDocs out;
  out.max_doc_ = max_doc;
  out.words_ = std::move(words);
  out.words_.resize((static_cast<size_t>(max_doc) + 63) / 64);
  if (max_doc % 64 != 0) {
    out.words_.back() &= (uint64_t{1} << (max_doc % 64)) - 1;
  }
  return out;
}

int32_t LiveDocs::CountLive() const {
  int64_t n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return static_cast<int32_t>(n);
}

absl::StatusOr<LiveDocs> internal::ReadModernLiveDocs(const core::IDirectory& index_dir,
                                                      const SegmentCommitInfo& segment) {
  const int32_t max_doc = segment.max_doc();
  const std::string suffix = internal::Base36(segment.del_gen);
  const std::string name = internal::SegmentFileName(segment.name, suffix, "liv");
  auto status_context = StrCat("segment ", segment.name);
  auto bytes = FileBytes::Open(index_dir, name);
  if (!bytes.ok()) return core::WithContext(bytes.status(), status_context);
  ByteReader in = bytes->Reader();
  static constexpr std::string_view kNames[] = {"Lucene50LiveDocs", "Lucene90LiveDocs"};
  static constexpr std::string_view kLegacy[] = {"Lucene40LiveDocs"};
  size_t which = 0;
  auto header =
      internal::ReadFileHeader(in, {kNames, 0, 0, kLegacy}, &segment.id, suffix, true, &which);
  if (!header.ok()) return core::WithContext(header.status(), status_context);
  const ByteOrder order = which == 0 ? ByteOrder::kBig : ByteOrder::kLittle;
  const size_t num_words = (static_cast<size_t>(max_doc) + 63) / 64;
  if (in.remaining() != num_words * 8 + codec::kFooterLength) {
    return in.Error(StrCat("live docs of ", in.remaining() - 16, " bytes, expected ", num_words * 8,
                           " for ", max_doc, " docs"));
  }
  std::vector<uint64_t> words(num_words);
  for (auto& w : words) {
    RFS_ASSIGN_OR_RETURN(w, in.ReadU64(order));
  }
  LiveDocs live = LiveDocs::FromWords(max_doc, std::move(words));
  const int32_t deleted = max_doc - live.CountLive();
  if (deleted != segment.del_count) {
    return core::DataLossAt(
        name, 0,
        StrCat(deleted, " deleted docs in the bit set but segments_N says ", segment.del_count));
  }
  return live;
}

absl::Status ApplySoftDeletes(const core::IDirectory& index_dir,
                              const core::IDirectory& segment_dir, const SegmentCommitInfo& segment,
                              const FieldInfos& fields, LiveDocs& live) {
  const FieldInfo* field = fields.SoftDeletesField();
  if (field == nullptr) {
    field = fields.ByName("__soft_deletes");
    if (field != nullptr && field->doc_values_type != DocValuesType::kNumeric) {
      field = nullptr;
    }
  }
  if (field == nullptr || field->doc_values_type == DocValuesType::kNone) {
    return absl::OkStatus();
  }
  const std::string context =
      StrCat("segment ", segment.name, " soft deletes field '", field->name, "'");
  auto location = internal::LocateDocValues(*field, segment);
  if (!location.ok()) return location.status();
  const std::string& segment_suffix = location->suffix;
  const core::IDirectory& dir = location->generation ? index_dir : segment_dir;
  const std::string meta_name = internal::SegmentFileName(segment.name, segment_suffix, "dvm");
  const std::string data_name = internal::SegmentFileName(segment.name, segment_suffix, "dvd");

  auto meta = FileBytes::Open(dir, meta_name);
  if (!meta.ok()) return core::WithContext(meta.status(), context);
  ByteReader in = meta->Reader();
  auto codec = internal::ReadDocValuesMetaHeader(in, segment, segment_suffix);
  if (!codec.ok()) return core::WithContext(codec.status(), context);
  auto entries =
      internal::ParseDocValuesMeta(in, codec->first, codec->second, fields, field->number);
  if (!entries.ok()) return core::WithContext(entries.status(), context);
  const internal::DocValuesEntry& entry = entries->at(field->number);
  if (entry.type != internal::DvmType::kNumeric) {
    return core::DataLossAt(meta_name, 0,
                            StrCat("soft-deletes field ", field->number, " is not NUMERIC (type ",
                                   static_cast<int>(entry.type), ")"));
  }
  const internal::DocsWithFieldMeta& dwf = entry.numeric.docs;
  if (dwf.offset == -2) return absl::OkStatus();  // no doc has a value
  if (dwf.offset == -1) {                         // every doc has one
    for (int32_t d = 0; d < live.max_doc(); ++d) live.Delete(d);
    return absl::OkStatus();
  }
  auto data = FileBytes::Open(dir, data_name);
  if (!data.ok()) return core::WithContext(data.status(), context);
  ByteReader data_in = data->Reader();
  // The whole .dvd is checksummed before one bit of it decides liveness: a damaged byte here
  // would silently resurrect a deleted document or drop a live one.
  auto data_header =
      internal::ReadDocValuesDataHeader(data_in, codec->first, segment, segment_suffix);
  if (!data_header.ok()) return core::WithContext(data_header, context);
  const uint64_t limit = data->bytes().size() - codec::kFooterLength;
  internal::DocsWithFieldReader docs(
      dwf, data->bytes().first(limit), data_name,
      codec->first == internal::DvCodec::kLucene90 ? ByteOrder::kLittle : ByteOrder::kBig,
      codec->first != internal::DvCodec::kLucene70, live.max_doc());
  for (int32_t d = 0; d < live.max_doc(); ++d) {
    auto has = docs.AdvanceExact(d);
    if (!has.ok()) return core::WithContext(has.status(), context);
    if (*has) live.Delete(d);
  }
  return absl::OkStatus();
}

}  // namespace rfs::lucene
