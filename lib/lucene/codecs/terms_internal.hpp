// The terms of one segment with the documents that hold them (docs/sourceless.md): the last
// fallback of a sourceless rebuild, for a keyword or boolean field that keeps neither doc values
// nor a stored value, as the Java tool reads its terms enum and postings.
//
// The block-tree terms dictionary (`.tim`, with `.tmd`/`.tip`) is walked from each field's root
// block without the FST or trie index: a block lists its entries' suffixes after the prefix its
// parent gave it, and a non-leaf block's sub-block entries point back to their child blocks
// (Lucene's `SegmentTermsEnumFrame.java`). Floor blocks of one prefix follow each other. Each
// term's statistics and postings metadata give its documents in `.doc`, read in order from the
// term's start without the skip data. Formats:
//  * terms dictionary: BlockTree versions 2-6 (Lucene 6.2-8.11: `BlockTreeTermsReader.java`),
//    Lucene90 (9.0-10.2, `Lucene90BlockTreeTermsReader.java`), Lucene103 (10.3+);
//  * postings: Lucene50 (Lucene 5-8.3), Lucene84 (8.4-8.11), Lucene90 (9.0-9.8), Lucene99
//    (9.9-9.11), Lucene912 (9.12-10.0), Lucene101 (10.1-10.2), Lucene103 (10.3), Lucene104
//    (10.4+), for fields indexed with documents only (IndexOptions.DOCS, as keyword and boolean
//    fields are).
//
// Internal to rfs::lucene.
#pragma once

#include <array>
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

enum class PostingsFormat : uint8_t {
  kLucene50,
  kLucene84,
  kLucene90,
  kLucene99,
  kLucene912,
  kLucene101,
  kLucene103,
  kLucene104,
};

/// The format of a `PerFieldPostingsFormat.format` name ("Lucene912", ...); nullopt for others.
std::optional<PostingsFormat> PostingsFormatByName(std::string_view name);

/// Lucene's ForUtil packing (Lucene 8.4 and later) undone: `out.size()` values (128 or 256) of
/// `bits` bits each, packed in lanes of `lane_bits` (8, 16 or 32) inside words of `word_bits`
/// (64: Lucene 8.4-10.0, 32: Lucene 10.1+) of byte order `order`.
absl::Status UnpackForBlock(core::ByteReader& in, core::ByteOrder order, int word_bits,
                            int lane_bits, int bits, std::span<uint32_t> out);

/// One field's entry in the terms dictionary (the parts a full walk needs).
struct FieldTermsMeta {
  int32_t field_number = -1;
  int64_t num_terms = 0;
  int32_t doc_count = 0;
  uint64_t root_block_fp = 0;  ///< in `.tim`
  int32_t longs_size = 0;      ///< postings "longs" per term (dictionaries before Lucene 8.6)
};

/// One postings format's terms dictionary (`.tim`) and documents (`.doc`) of a segment, as bytes,
/// with what their headers said.
struct TermsSource {
  PostingsFormat format = PostingsFormat::kLucene104;
  int32_t dict_version = 0;      ///< BlockTreeTermsDict's header version
  int32_t postings_version = 0;  ///< the postings writer's terms header version
  std::span<const uint8_t> tim, doc;
  std::string_view tim_name, doc_name;
  /// Lucene50's ForUtil setup (in `.doc`): the bits each block width is stored with, and
  /// whether in single-block form.
  std::array<int, 33> lucene50_bits{};
  std::array<bool, 33> lucene50_single_block{};
};

/// The field entries of a terms dictionary from the cursor (`.tmd` after the postings header, or
/// the directory at the end of `.tim` before Lucene 8.6), by field number. `tip` is the terms
/// index, needed for Lucene103's trie roots only.
absl::Status ParseTermsFields(core::ByteReader& in, const TermsSource& source,
                              const FieldInfos& fields, int32_t max_doc,
                              std::span<const uint8_t> tip, std::string_view tip_name,
                              std::map<int32_t, FieldTermsMeta>& out);

/// Calls `visit(term, docs)` for every term of one field in term order, `docs` ascending.
absl::Status ScanTerms(
    const TermsSource& source, const FieldInfo& field, const FieldTermsMeta& meta, int32_t max_doc,
    const std::function<void(std::string_view, std::span<const int32_t>)>& visit);

/// Every term and its documents of each field of one segment, read on first use and kept by
/// document.
class SegmentTerms {
 public:
  SegmentTerms(std::shared_ptr<const core::IDirectory> segment_dir,
               const SegmentCommitInfo& segment, const FieldInfos& fields);
  ~SegmentTerms();

  /// The terms of `doc` in field `name` (in term order, each once), appended to `out`; false
  /// when the segment has no terms for the field.
  absl::StatusOr<bool> Values(std::string_view name, int32_t doc, std::vector<std::string>& out);

  /// Calls `visit(term, docs)` for every term of field `name` in term order; false when the
  /// segment has no terms for it.
  absl::StatusOr<bool> ForEachTerm(
      std::string_view name,
      const std::function<void(std::string_view, std::span<const int32_t>)>& visit);

  /// The files of one postings format (public for the helpers in terms.cpp).
  struct Files;

 private:
  struct FieldTerms;
  absl::StatusOr<Files*> OpenFiles(const FieldInfo& info);
  absl::StatusOr<FieldTerms*> Field(std::string_view name);

  std::shared_ptr<const core::IDirectory> segment_dir_;
  const SegmentCommitInfo& segment_;
  const FieldInfos& fields_;
  std::map<std::string, std::unique_ptr<Files>, std::less<>> files_;  // by file suffix
  std::map<std::string, std::unique_ptr<FieldTerms>, std::less<>> by_field_;
};

}  // namespace rfs::lucene::internal
