// Raw vectors of one segment (Lucene99FlatVectorsReader.java, OrdToDocDISIReaderConfiguration.java,
// and the Lucene90..95HnswVectorsReader.java of lucene/backward-codecs; docs/sourceless.md): the
// metadata of every vector field, and each document's vector read in place from the `.vec` data.
//
// Every HNSW and quantized format of Lucene 9.9+ keeps the raw vectors in the Lucene99 flat files
// (`.vemf`/`.vec`) beside its graph (Lucene99Hnsw*, Elasticsearch's ES813/ES814/ES815 formats,
// OpenSearch k-NN's native engine format), so one reader serves them all. The HNSW formats of
// Lucene 9.0-9.8 (Lucene90, 91, 92, 94, 95: Elasticsearch 8.0-8.11, OpenSearch 2.0-2.11) keep
// their own `.vem` metadata and the same ordinal-ordered `.vec` data; the format's name picks the
// layout. Other formats without `.vemf` are Unimplemented, naming the format.
//
// Internal to rfs::lucene; not thread-safe (one per cursor).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/byte_reader.hpp"
#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/statusor.h"
#include "lucene/codecs/doc_values_internal.hpp"
#include "lucene/codecs/field_infos_internal.hpp"

namespace rfs::lucene::internal {

/// VectorEncoding ordinals (`.fnm` and `.vemf`).
enum class VectorEncoding : int32_t { kByte = 0, kFloat32 = 1 };

struct VectorFieldEntry {
  int32_t field_number = -1;
  VectorEncoding encoding = VectorEncoding::kFloat32;
  int64_t data_offset = 0;
  int64_t data_length = 0;
  int32_t dimension = 0;
  int32_t size = 0;  ///< documents with a vector
  /// Which documents have one: offset -1 every document, -2 none, else an IndexedDISI in `.vec`
  /// whose index of a document is its vector's ordinal.
  DocsWithFieldMeta docs;
  /// Lucene 9.0, and 9.1 when sparse: the document of each ordinal, increasing (then `docs` is
  /// unused).
  bool explicit_docs = false;
  std::vector<int32_t> ord_to_doc;
};

/// The entries of a vectors metadata file of format `format` (PerFieldKnnVectorsFormat.format),
/// read from just after its header to the end marker, by field number.
absl::StatusOr<std::map<int32_t, VectorFieldEntry>> ParseVectorsMeta(core::ByteReader& in,
                                                                     std::string_view format,
                                                                     const FieldInfos& fields);

/// One metadata/`.vec` pair.
class VectorsFile {
 public:
  /// Opens the files of vectors format `format` (PerFieldKnnVectorsFormat.format):
  /// `<segment>_<suffix>.vem/.vec` for the HNSW formats of Lucene 9.0-9.8, else `.vemf/.vec`;
  /// parses every entry and verifies both files' checksums.
  static absl::StatusOr<std::unique_ptr<VectorsFile>> Open(const core::IDirectory& dir,
                                                           const SegmentCommitInfo& segment,
                                                           std::string_view format,
                                                           const std::string& suffix,
                                                           const FieldInfos& fields);

  const VectorFieldEntry* Entry(int32_t field_number) const;
  const core::IRandomAccessFile& data() const { return *data_; }

 private:
  VectorsFile() = default;
  std::map<int32_t, VectorFieldEntry> entries_;
  std::shared_ptr<const core::IRandomAccessFile> data_;
  // The IndexedDISI blocks of sparse fields, read once (they are small: 1 bit per document at
  // most).
  friend class FieldVectors;
  std::map<int32_t, std::vector<uint8_t>> disi_bytes_;
};

/// One field's vectors, doc by doc (increasing doc order is fastest).
class FieldVectors {
 public:
  FieldVectors(const VectorsFile& file, const VectorFieldEntry& entry, int32_t max_doc);

  const VectorFieldEntry& entry() const { return entry_; }
  /// The vector of `doc` as floats (byte vectors as their integer values); false when it has
  /// none.
  absl::StatusOr<bool> Vector(int32_t doc, std::vector<float>& out);

 private:
  const VectorsFile& file_;
  const VectorFieldEntry& entry_;
  int32_t max_doc_;
  DocsWithFieldReader docs_;
  std::vector<uint8_t> scratch_;
};

/// Every vector field of one segment, opened on first use.
class SegmentVectors {
 public:
  SegmentVectors(std::shared_ptr<const core::IDirectory> segment_dir,
                 const SegmentCommitInfo& segment, const FieldInfos& fields);
  ~SegmentVectors();

  /// The reader of field `name`; nullptr when the segment keeps no vectors for it.
  absl::StatusOr<FieldVectors*> Field(std::string_view name);

 private:
  std::shared_ptr<const core::IDirectory> segment_dir_;
  const SegmentCommitInfo& segment_;
  const FieldInfos& fields_;
  std::map<std::string, std::unique_ptr<VectorsFile>, std::less<>> files_;
  std::map<std::string, std::unique_ptr<FieldVectors>, std::less<>> readers_;
};

}  // namespace rfs::lucene::internal
