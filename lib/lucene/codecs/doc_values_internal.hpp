// Doc values of one segment (Lucene70/80/90DocValuesProducer.java,
// IndexedDISI.java, DirectReader.java, DirectMonotonicReader.java): the `.dvm` metadata of every
// field parsed once, and per-field readers that give a document's values, reading the `.dvd` in
// place.
//
// A segment may hold several `.dvm`/`.dvd` pairs: one per doc-values format and suffix named by
// the fields' PerFieldDocValuesFormat attributes, and one per doc-values update generation.
// SegmentDocValues opens each pair on first use; each is checksummed whole before any value of it
// is read.
//
// Readers go forward: asking for a doc before the previous one restarts the docs-with-field walk
// from the start (correct, only slower). Internal to rfs::lucene; not thread-safe (one per
// cursor).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rfs/core/byte_reader.hpp"
#include "rfs/core/random_access.hpp"

#include "absl/status/statusor.h"
#include "lucene/codecs/field_infos_internal.hpp"
#include "lucene/codecs/format_util_internal.hpp"
#include "lucene/codecs/tsdb_doc_values_internal.hpp"

namespace rfs::lucene::internal {

/// `.dvm` type codes (they differ from the `.fnm` ones).
enum class DvmType : uint8_t {
  kNumeric = 0,
  kBinary = 1,
  kSorted = 2,
  kSortedSet = 3,
  kSortedNumeric = 4,
};

/// kES87TSDB, kES819TSDB: Elasticsearch's TSDB formats (time_series and logsdb indices; 8.7-8.18
/// and 8.19 on), Lucene90's terms dictionary and IndexedDISI with numbers and ordinals in blocks
/// of their own.
enum class DvCodec : uint8_t {
  kLucene70 = 0,
  kLucene80 = 1,
  kLucene90 = 2,
  kES819TSDB = 3,
  kES87TSDB = 4
};

/// Lucene 9's and Elasticsearch's formats write little-endian numbers, Lucene 7's and 8's
/// big-endian.
inline core::ByteOrder DocValuesByteOrder(DvCodec codec) {
  return codec == DvCodec::kLucene70 || codec == DvCodec::kLucene80 ? core::ByteOrder::kBig
                                                                    : core::ByteOrder::kLittle;
}

/// DirectMonotonicReader metadata: one record per block of 2^shift values.
struct MonotonicMeta {
  struct Block {
    int64_t min = 0;
    float avg_increment = 0;
    int64_t offset = 0;
    uint8_t bits_per_value = 0;
  };
  int32_t shift = 0;
  int64_t count = 0;
  std::vector<Block> blocks;
};

struct DocsWithFieldMeta {
  int64_t offset = -2;  ///< -2: no doc has a value; -1: every doc has one
  int64_t length = 0;
  int8_t dense_rank_power = -1;
};

/// Where each doc-with-value's run of values (or ords) starts: DirectMonotonic addresses.
struct AddressesMeta {
  int64_t offset = 0;
  int64_t length = 0;
  MonotonicMeta meta;
};

struct NumericMeta {
  DocsWithFieldMeta docs;
  int64_t num_values = 0;
  std::vector<int64_t> table;  ///< values by table index, when table-encoded
  bool table_encoded = false;
  int32_t block_shift = -1;  ///< >= 0: values in blocks of 2^shift, each with its own header
  uint8_t bits_per_value = 0;
  int64_t min = 0;
  int64_t gcd = 1;
  int64_t values_offset = 0;
  int64_t values_length = 0;
  int64_t jump_table_offset = -1;
  /// kES87TSDB, kES819TSDB: blocks of 128 values (ordinals when `tsdb_bits_per_ord` > 0), block b
  /// at values_offset + the monotonic `tsdb_blocks`[b]; with `tsdb_single_ordinal`, no blocks and
  /// every value is ordinal 0.
  bool tsdb = false;
  bool tsdb_single_ordinal = false;
  int tsdb_bits_per_ord = 0;
  AddressesMeta tsdb_blocks;
};

struct TermsDictMeta {
  int64_t size = 0;  ///< number of terms
  int32_t block_shift = 6;
  bool lz4 = false;
  AddressesMeta block_addresses;
  int32_t max_term_length = 0;
  int32_t max_block_length = 0;
  int64_t data_offset = 0;
  int64_t data_length = 0;
};

struct BinaryMeta {
  int64_t data_offset = 0;
  int64_t data_length = 0;
  DocsWithFieldMeta docs;
  int32_t num_docs_with_field = 0;
  int32_t min_length = 0;
  int32_t max_length = 0;
  bool compressed = false;  ///< Lucene80 BEST_COMPRESSION: LZ4 chunks of 2^docs_per_chunk_shift
  std::optional<AddressesMeta> addresses;
  uint32_t num_chunks = 0;
  uint32_t docs_per_chunk_shift = 0;
  uint32_t max_chunk_size = 0;
};

/// One field's `.dvm` entry.
struct DocValuesEntry {
  int32_t field_number = -1;
  DvmType type = DvmType::kNumeric;
  /// NUMERIC values; SORTED_NUMERIC values; SORTED and single-valued SORTED_SET ords (Lucene90,
  /// or Lucene70/80 SORTED whose ords are read with `numeric`'s offset and bits per value);
  /// multi-valued SORTED_SET ords.
  NumericMeta numeric;
  /// SORTED_NUMERIC and multi-valued SORTED_SET: docs with a value, and where each one's run
  /// starts (absent when every doc with a value has exactly one).
  int32_t num_docs_with_field = 0;
  std::optional<AddressesMeta> addresses;
  bool multi_valued = false;  ///< SORTED_SET only
  TermsDictMeta terms;        ///< SORTED and SORTED_SET
  BinaryMeta binary;          ///< BINARY
};

/// One `.dvm`/`.dvd` pair.
class DocValuesFile {
 public:
  /// Opens `<segment>_<suffix>.dvm/.dvd` in `dir`, parses every entry and verifies both files'
  /// checksums.
  static absl::StatusOr<std::unique_ptr<DocValuesFile>> Open(const core::IDirectory& dir,
                                                             const SegmentCommitInfo& segment,
                                                             const std::string& suffix,
                                                             const FieldInfos& fields);

  const DocValuesEntry* Entry(int32_t field_number) const;
  DvCodec codec() const { return codec_; }
  core::ByteOrder order() const { return DocValuesByteOrder(codec_); }
  std::span<const uint8_t> data() const { return data_.bytes(); }
  const std::string& data_name() const { return data_name_; }
  const std::string& meta_name() const { return meta_name_; }

 private:
  DocValuesFile() = default;
  DvCodec codec_ = DvCodec::kLucene90;
  std::map<int32_t, DocValuesEntry> entries_;
  FileBytes data_;
  std::string meta_name_, data_name_;
};

/// Value `index` of a packed array of `bpv`-bit values at `base` of `data` (DirectReader in
/// little-endian, LegacyDirectReader in big-endian order).
absl::StatusOr<uint64_t> DirectRead(std::span<const uint8_t> data, std::string_view name,
                                    uint64_t base, int bpv, uint64_t index, core::ByteOrder order);

/// Parses `.dvm` entries from `in` (just past the header) until field `stop_at` (or the end
/// marker when -1). Used by the soft-deletes reader as well.
absl::StatusOr<std::map<int32_t, DocValuesEntry>> ParseDocValuesMeta(core::ByteReader& in,
                                                                     DvCodec codec, int32_t version,
                                                                     const FieldInfos& fields,
                                                                     int32_t stop_at = -1);

/// The `.dvm` header names and the highest version read, by codec.
absl::StatusOr<std::pair<DvCodec, int32_t>> ReadDocValuesMetaHeader(
    core::ByteReader& in, const SegmentCommitInfo& segment, const std::string& suffix);
absl::Status ReadDocValuesDataHeader(core::ByteReader& in, DvCodec codec,
                                     const SegmentCommitInfo& segment, const std::string& suffix);

/// The file suffix of `field`'s doc values (`[<gen36>_]<Format>_<n>`), and whether it lives in
/// the index directory (a doc-values update generation) rather than the segment's.
struct DocValuesLocation {
  std::string suffix;
  bool generation = false;
};
absl::StatusOr<DocValuesLocation> LocateDocValues(const FieldInfo& field,
                                                  const SegmentCommitInfo& segment);

/// Walks an IndexedDISI forward: which docs have a value and each one's index among them.
class DocsWithFieldReader {
 public:
  DocsWithFieldReader() = default;
  DocsWithFieldReader(const DocsWithFieldMeta& meta, std::span<const uint8_t> data,
                      std::string_view name, core::ByteOrder order, bool has_rank, int32_t max_doc);
  /// Whether `doc` has a value; if so, index() is its index among the docs with a value.
  absl::StatusOr<bool> AdvanceExact(int32_t doc);
  int64_t index() const { return index_; }

 private:
  absl::Status LoadBlock();  // the block at block_pos_
  absl::Status Restart();

  DocsWithFieldMeta meta_;
  std::span<const uint8_t> data_;
  std::string name_;
  core::ByteOrder order_ = core::ByteOrder::kLittle;
  bool has_rank_ = false;
  int32_t max_doc_ = 0;
  // The loaded block.
  bool block_loaded_ = false;
  bool exhausted_ = false;
  size_t block_pos_ = 0;       // where the block's header sits in data_
  size_t next_block_pos_ = 0;  // where the next block's header sits
  int64_t block_base_doc_ = 0;
  int64_t block_index_base_ = 0;  // docs with a value before this block
  uint32_t cardinality_ = 0;
  enum class Kind { kSparse, kDense, kAll } kind_ = Kind::kAll;
  std::vector<uint16_t> sparse_;
  std::vector<uint64_t> words_;
  std::vector<uint32_t> word_ranks_;  // docs with a value before each word (dense)
  int32_t last_doc_ = -1;
  int64_t index_ = -1;
};

/// One field's values, doc by doc (documents in increasing doc order are fastest).
class FieldDocValues {
 public:
  FieldDocValues(const DocValuesFile& file, const DocValuesEntry& entry, int32_t max_doc);

  DvmType type() const { return entry_.type; }
  /// NUMERIC / SORTED_NUMERIC values of `doc` (empty when none), in the stored (ascending for
  /// SORTED_NUMERIC) order.
  absl::Status Numbers(int32_t doc, std::vector<int64_t>& out);
  /// SORTED / SORTED_SET terms of `doc`, ascending and without duplicates (as Lucene keeps them).
  absl::Status Terms(int32_t doc, std::vector<std::string>& out);
  /// BINARY value of `doc`; false when it has none.
  absl::StatusOr<bool> Binary(int32_t doc, std::string& out);

 private:
  absl::StatusOr<int64_t> NumericValue(const NumericMeta& meta, int64_t index);
  absl::StatusOr<int64_t> TsdbValue(const NumericMeta& meta, int64_t index);
  absl::StatusOr<int64_t> Monotonic(const AddressesMeta& addresses, int64_t index);
  absl::Status Ords(int32_t doc, std::vector<int64_t>& ords);
  // The doc's run of numeric values (one, or those its addresses give).
  absl::Status DocNumbers(int32_t doc, std::vector<int64_t>& out);
  absl::Status LookupTerm(int64_t ord, std::string& out);
  absl::StatusOr<bool> CompressedBinary(int64_t index, std::string& out);

  const DocValuesFile& file_;
  const DocValuesEntry& entry_;
  DocsWithFieldReader docs_;
  std::vector<int64_t> ords_;
  // The terms block decoded last (LZ4 blocks are decoded whole).
  int64_t block_ = -1;
  std::vector<uint8_t> block_bytes_;
  std::vector<std::pair<uint32_t, uint32_t>> block_terms_;  // (offset, length) in block_text_
  std::string block_text_;
  // The TSDB block decoded last.
  int64_t tsdb_block_ = -1;
  TsdbBlock tsdb_values_{};
  // The Lucene80 compressed-binary chunk decoded last.
  int64_t chunk_ = -1;
  std::vector<uint8_t> chunk_bytes_;
  std::vector<uint32_t> chunk_offsets_;
};

/// Every doc-values field of one segment.
class SegmentDocValues {
 public:
  SegmentDocValues(std::shared_ptr<const core::IDirectory> index_dir,
                   std::shared_ptr<const core::IDirectory> segment_dir,
                   const SegmentCommitInfo& segment, const FieldInfos& fields);
  ~SegmentDocValues();

  /// The reader of field `name`; nullptr when it has no doc values (or no such field).
  absl::StatusOr<FieldDocValues*> Field(std::string_view name);

 private:
  std::shared_ptr<const core::IDirectory> index_dir_, segment_dir_;
  const SegmentCommitInfo& segment_;
  const FieldInfos& fields_;
  std::map<std::string, std::unique_ptr<DocValuesFile>, std::less<>> files_;
  std::map<std::string, std::unique_ptr<FieldDocValues>, std::less<>> readers_;
};

}  // namespace rfs::lucene::internal
