#include "documents.hpp"

#include <algorithm>
#include <utility>

#include "rfs/content/source_json.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/parallel_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"

namespace rfs::python {

using core::StrCat;

absl::StatusOr<std::unique_ptr<IndexDocumentReader>> IndexDocumentReader::Open(
    DocumentRequest request) {
  if (request.from_cursor > 0 && !request.shard) {
    return absl::InvalidArgumentError("from_cursor needs a shard");
  }
  if (request.reader_threads < 0 || request.reader_threads > 256) {
    return absl::InvalidArgumentError(
        StrCat("reader_threads takes 0 to 256, not ", request.reader_threads));
  }
  auto reader = std::unique_ptr<IndexDocumentReader>(new IndexDocumentReader(std::move(request)));
  const auto& repository = reader->request_.repository->repository();
  const auto& snapshot = *reader->request_.snapshot;
  RFS_ASSIGN_OR_RETURN(reader->metadata_,
                       repository.ReadIndexMetadata(snapshot, reader->request_.index));
  const auto& metadata = reader->metadata_;
  if (!reader->request_.rebuild_sourceless) {
    const lucene::SourceStorage storage = lucene::DescribeIndexSource(metadata).storage;
    if (storage.incomplete()) {
      return absl::FailedPreconditionError(
          StrCat("index ", metadata.name, " keeps no complete _source (", storage.Describe(),
                 "): pass rebuild_sourceless=True to rebuild its documents from doc values and "
                 "stored fields"));
    }
  }
  reader->next_shard_ = 0;
  reader->last_shard_ = metadata.number_of_shards - 1;
  if (reader->request_.shard) {
    const int shard = *reader->request_.shard;
    if (shard < 0 || shard >= metadata.number_of_shards) {
      return absl::InvalidArgumentError(StrCat("shard ", shard, " is out of range: index ",
                                               metadata.name, " has ", metadata.number_of_shards,
                                               " shard(s)"));
    }
    reader->next_shard_ = reader->last_shard_ = shard;
  }
  // As the tools open a shard: SMILE, CBOR and YAML sources come through as they are and are
  // converted per document.
  reader->reader_options_.pass_through_non_json_source = true;
  if (reader->request_.rebuild_sourceless) {
    RFS_ASSIGN_OR_RETURN(reader->reader_options_.rebuild_plan,
                         lucene::RebuildPlanForIndex(metadata));
  }
  reader->mapping_type_ = lucene::IndexMappingType(metadata);
  return reader;
}

IndexDocumentReader::~IndexDocumentReader() { Close(); }

void IndexDocumentReader::Close() {
  closed_ = true;
  documents_.reset();  // joins the decoding threads
  scan_.reset();
  shard_reader_.reset();
}

absl::Status IndexDocumentReader::OpenShardReader(int shard) {
  // What reads through the old shard reader goes first.
  documents_.reset();
  scan_.reset();
  shard_reader_.reset();
  RFS_ASSIGN_OR_RETURN(shard_reader_, lucene::OpenSnapshotShard(request_.repository->repository(),
                                                                *request_.snapshot, metadata_.name,
                                                                shard, reader_options_));
  return absl::OkStatus();
}

absl::Status IndexDocumentReader::OpenShard(int shard, uint64_t cursor) {
  RFS_RETURN_IF_ERROR(OpenShardReader(shard));
  if (request_.reader_threads > 0) {
    lucene::ParallelReadOptions parallel;
    parallel.threads = request_.reader_threads;
    RFS_ASSIGN_OR_RETURN(documents_,
                         lucene::ParallelDocumentReader::Open(*shard_reader_, cursor, parallel));
  } else {
    RFS_ASSIGN_OR_RETURN(documents_, shard_reader_->OpenAt(cursor));
  }
  current_shard_ = shard;
  return absl::OkStatus();
}

namespace {

// Appends `doc`'s source to `out` as one line of JSON (SMILE, CBOR and YAML converted); false,
// `out` as it was, for a source that has no JSON form.
absl::StatusOr<bool> AppendJsonSource(const lucene::Document& doc, std::string& out) {
  if (doc.source_format == content::SourceFormat::kJson) {
    core::AppendJsonOneLine(
        std::string_view(reinterpret_cast<const char*>(doc.source.data()), doc.source.size()), out);
    return true;
  }
  const size_t start = out.size();
  auto converted = content::AppendSourceAsJson(doc.source, doc.source_format, out,
                                               StrCat("_source of ", doc.id));
  if (converted.ok()) return true;
  out.resize(start);
  if (!absl::IsUnimplemented(converted)) return converted;
  return false;
}

// Formats `doc` as a row of `range` (on a decoding thread).
absl::Status FormatRow(lucene::Document& doc, lucene::ScannedRange& scanned) {
  auto& range = static_cast<RowRange&>(scanned);
  if (!doc.has_source) {
    ++range.without_source;
    return absl::OkStatus();
  }
  const size_t start = range.sources.size();
  if (start == 0) {
    // Room for a range of documents like the first one (ParallelReadOptions' range_docs): the
    // buffer grows in place instead of doubling through copies.
    range.sources.reserve(std::min<size_t>(doc.source.size() * 2048 + 4096, size_t{8} << 20));
  }
  RFS_ASSIGN_OR_RETURN(const bool appended, AppendJsonSource(doc, range.sources));
  if (!appended) {
    ++range.unconvertible;
    return absl::OkStatus();
  }
  range.source_ends.push_back(range.sources.size());
  range.ids.append(doc.id);
  range.id_ends.push_back(range.ids.size());
  range.routed.push_back(doc.routing ? 1 : 0);
  if (doc.routing) range.routings.append(*doc.routing);
  range.routing_ends.push_back(range.routings.size());
  range.bytes = range.sources.size() + range.ids.size() + range.routings.size();
  return absl::OkStatus();
}

// After a range's last document: the Arrow batches keep the range's buffers, so a source buffer
// reserved far beyond what it holds (a first document much larger than the rest) is trimmed.
bool TrimRange(lucene::ScannedRange& scanned) {
  auto& range = static_cast<RowRange&>(scanned);
  if (range.sources.capacity() > 2 * range.sources.size() + (size_t{1} << 20)) {
    range.sources.shrink_to_fit();
  }
  return false;  // the thread's cursor stays open for its next range
}

}  // namespace

absl::Status IndexDocumentReader::OpenShardScan(int shard, uint64_t cursor) {
  RFS_RETURN_IF_ERROR(OpenShardReader(shard));
  lucene::ParallelReadOptions parallel;
  parallel.threads = std::max(1, request_.reader_threads);
  RFS_ASSIGN_OR_RETURN(
      scan_, lucene::ParallelShardScan::Open(
                 *shard_reader_, cursor, parallel, [] { return std::make_unique<RowRange>(); },
                 FormatRow, TrimRange));
  current_shard_ = shard;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RowRange>> IndexDocumentReader::NextRange() {
  while (!closed_) {
    if (scan_ == nullptr) {
      if (next_shard_ > last_shard_) return nullptr;
      const int shard = next_shard_++;
      RFS_RETURN_IF_ERROR(OpenShardScan(shard, request_.shard ? request_.from_cursor : 0));
    }
    auto next = scan_->Next();
    if (!next.ok()) {
      const absl::Status status = next.status();
      Close();
      return status;
    }
    if (*next == nullptr) {
      scan_.reset();
      shard_reader_.reset();
      continue;
    }
    std::unique_ptr<RowRange> range(static_cast<RowRange*>(next->release()));
    skipped_.without_source += range->without_source;
    skipped_.unconvertible += range->unconvertible;
    return range;
  }
  return nullptr;
}

absl::StatusOr<bool> IndexDocumentReader::FillRow(const lucene::Document& doc, DocumentRow& row) {
  if (!doc.has_source) {
    ++skipped_.without_source;
    return false;
  }
  row.source.clear();
  RFS_ASSIGN_OR_RETURN(const bool appended, AppendJsonSource(doc, row.source));
  if (!appended) {
    ++skipped_.unconvertible;
    return false;
  }
  row.shard = current_shard_;
  row.cursor = doc.cursor;
  row.id.assign(doc.id);
  if (doc.type) {
    row.type = doc.type;
  } else {
    row.type = mapping_type_;
  }
  row.routing = doc.routing;
  return true;
}

absl::Status IndexDocumentReader::ReadBatch(size_t max_rows, size_t max_bytes,
                                            std::vector<DocumentRow>& rows) {
  size_t added = 0;
  size_t bytes = 0;
  while (!closed_ && added < max_rows && bytes < max_bytes) {
    if (documents_ == nullptr) {
      if (next_shard_ > last_shard_) return absl::OkStatus();
      const int shard = next_shard_++;
      RFS_RETURN_IF_ERROR(OpenShard(shard, request_.shard ? request_.from_cursor : 0));
    }
    auto more = documents_->Next(doc_);
    if (!more.ok()) {
      const absl::Status status = more.status();
      Close();
      return status;
    }
    if (!*more) {
      documents_.reset();
      shard_reader_.reset();
      continue;
    }
    DocumentRow row;
    RFS_ASSIGN_OR_RETURN(const bool filled, FillRow(doc_, row));
    if (filled) {
      ++added;
      bytes += row.source.size() + row.id.size();
      rows.push_back(std::move(row));
    }
  }
  return absl::OkStatus();
}

}  // namespace rfs::python
