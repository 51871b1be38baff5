// OpenSearchBulkSink: one `_bulk` request per batch (see document_sink.hpp).
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/core/string_pool.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/bulk_format.hpp"
#include "rfs/reindex/document_sink.hpp"

namespace rfs::reindex {
namespace {

using core::StrCat;

// The longest `_id` OpenSearch (and Elasticsearch 5+) accepts, in UTF-8 bytes
// (IndexRequest.validate: "id ... is too long, must be no longer than 512 bytes").
constexpr size_t kMaxIdBytes = 512;

}  // namespace

OpenSearchBulkSink::OpenSearchBulkSink(opensearch::OpenSearchClient& client) : client_(client) {}

BulkActionOptions OpenSearchBulkSink::action_options() const {
  auto version = client_.GetVersion();
  return {.include_type = version.ok() && version->RequiresDocumentType()};
}

bool OpenSearchBulkSink::copies_rendered_lines() const { return client_.compression_allowed(); }

std::string OpenSearchBulkSink::description() const {
  return core::StrCat("OpenSearch bulk to ", client_.transport().endpoint());
}

namespace {

// Batches from this size (a huge document's) are gzipped as they are laid out.
constexpr size_t kStreamedBodyBytes = size_t{16} << 20;

// Bodies kept for the next batches (core::StringPool), laid out and gzipped bodies apart: a ~10
// MB body allocated afresh each time had its pages faulted in and zeroed again, which cost more
// CPU than laying the documents out, or than sending them without gzip. A huge document's body
// is not kept, and empties the pools first. Never destroyed: sender threads may outlive main.
core::StringPool& LaidOutBodies() {
  static auto* pool = new core::StringPool(kStreamedBodyBytes, size_t{32} << 20);
  return *pool;
}
core::StringPool& GzippedBodies() {
  static auto* pool = new core::StringPool(kStreamedBodyBytes, size_t{12} << 20);
  return *pool;
}

// Where one document's lines are in a prepared batch, and what the answer to it needs. Offsets
// count the lines of the batch's documents in order (the body before gzip).
struct PreparedLines {
  uint64_t begin = 0;   // the action line
  uint64_t source = 0;  // the source line (the end of the action line)
  uint64_t end = 0;     // past the source line's '\n'
  uint64_t cursor = 0;
  const char* data = nullptr;  // without gzip: where the byte at `begin` lies
  BulkOp op = BulkOp::kIndex;
  bool has_version = false;
  bool refused = false;  // not sent (PreparedBulk::Refused)
};

// Bytes of the lines of one document, [from, to) in the batch's offsets.
struct LineRange {
  size_t position;
  uint64_t from;
  uint64_t to;
};

// Inflated bodies are read back a piece of this size at a time.
constexpr size_t kInflatePieceBytes = size_t{256} << 10;

// A batch laid out for `_bulk` (see IPreparedBatch), so that only its lines and a few words per
// document are held while it is in flight:
// - with gzip, as its gzipped body; a part sent again is copied out of it (inflated a piece at
//   a time) and gzipped on its own;
// - without gzip, as the lines where the reader laid them out (the buffers they share are kept,
//   the documents and their ranges are not) and a copy of the other documents' lines; any part
//   goes as those pieces, never copied into one body.
class PreparedBulk final : public IPreparedBatch {
 public:
  PreparedBulk(opensearch::OpenSearchClient& client, bool gzipped)
      : client_(client), gzipped_(gzipped) {}
  ~PreparedBulk() override {
    if (body_pool_ != nullptr) body_pool_->Give(std::move(body_));
  }

  size_t size() const override { return lines_.size(); }
  size_t held_bytes() const override {
    size_t bytes = body_.capacity() + lines_.capacity() * sizeof(PreparedLines) + refused_bytes_;
    // With gzip, a part sent again is a second body at most as large, inflated a piece at a time.
    if (gzipped_) bytes += body_.capacity() + kInflatePieceBytes;
    for (const auto& owner : owners_) bytes += owner->bytes.capacity();
    return bytes;
  }
  uint64_t cursor(size_t position) const override { return lines_[position].cursor; }
  size_t source_bytes(size_t position) const override {
    const PreparedLines& l = lines_[position];
    if (l.refused) return refused_.at(position).source_bytes;
    return l.end > l.source ? l.end - 1 - l.source : 0;  // a delete has no source line
  }
  bool has_version(size_t position) const override { return lines_[position].has_version; }

  absl::StatusOr<std::vector<ItemFailure>> Write(std::span<const size_t> positions) override;
  absl::StatusOr<std::vector<FailedDocument>> Describe(
      std::span<const size_t> positions) const override;

  // Building (OpenSearchBulkSink::Prepare).
  std::string& body() { return body_; }
  void set_body_pool(core::StringPool* pool) { body_pool_ = pool; }
  std::vector<PreparedLines>& lines() { return lines_; }
  // Keeps the lines a document was laid out in (without gzip).
  void Keep(const std::shared_ptr<const RenderedLines>& owner) {
    if (owners_.empty() || owners_.back() != owner) owners_.push_back(owner);
  }
  // A document not sent (an `_id` too long): rare, so kept apart, whole.
  struct Refused {
    ItemFailure failure;
    std::string action;  // the lines it would have been sent with
    std::string source;
    size_t source_bytes = 0;
  };
  void Refuse(size_t position, Refused refused) {
    refused_bytes_ += sizeof(Refused) + refused.action.size() + refused.source.size() +
                      refused.failure.reason.size();
    refused_.emplace(position, std::move(refused));
  }

 private:
  // Hands `take(k, piece)` the bytes of ranges[k] (in increasing order of the batch's offsets,
  // not overlapping), in order, a range in one or more pieces.
  absl::Status ForEachRange(
      std::span<const LineRange> ranges,
      const std::function<absl::Status(size_t, std::string_view)>& take) const;

  opensearch::OpenSearchClient& client_;
  const bool gzipped_;
  // With gzip: the body. Without: the lines of documents not laid out by the reader (or with
  // other action options), which `data` points into.
  std::string body_;
  core::StringPool* body_pool_ = nullptr;  // where body_ goes back to, when pooled
  std::vector<std::shared_ptr<const RenderedLines>> owners_;  // without gzip
  std::vector<PreparedLines> lines_;
  std::map<size_t, Refused> refused_;
  size_t refused_bytes_ = 0;
};

absl::Status PreparedBulk::ForEachRange(
    std::span<const LineRange> ranges,
    const std::function<absl::Status(size_t, std::string_view)>& take) const {
  if (ranges.empty()) return absl::OkStatus();
  if (!gzipped_) {
    for (size_t k = 0; k < ranges.size(); ++k) {
      const PreparedLines& l = lines_[ranges[k].position];
      RFS_RETURN_IF_ERROR(take(
          k, std::string_view(l.data + (ranges[k].from - l.begin), ranges[k].to - ranges[k].from)));
    }
    return absl::OkStatus();
  }
  size_t k = 0;
  uint64_t offset = 0;  // of the piece's first byte
  const absl::Status status = net::GzipInflatePieces(
      body_, kInflatePieceBytes, [&](std::string_view piece) -> absl::Status {
        const uint64_t piece_end = offset + piece.size();
        while (k < ranges.size()) {
          if (ranges[k].from == ranges[k].to) {  // a delete's source line: nothing
            ++k;
            continue;
          }
          if (ranges[k].from >= piece_end) break;
          const uint64_t from = std::max(ranges[k].from, offset);
          const uint64_t to = std::min(ranges[k].to, piece_end);
          if (to > from) RFS_RETURN_IF_ERROR(take(k, piece.substr(from - offset, to - from)));
          if (ranges[k].to > piece_end) break;  // goes on in the next piece
          ++k;
        }
        offset = piece_end;
        // Nothing more is wanted: the rest is not inflated.
        if (k == ranges.size()) return absl::CancelledError();
        return absl::OkStatus();
      });
  if (k == ranges.size()) return absl::OkStatus();
  if (!status.ok()) return status;
  return absl::InternalError(core::StrCat("a prepared bulk body ends at ", offset,
                                          " before the lines it holds at ", ranges[k].from));
}

absl::StatusOr<std::vector<ItemFailure>> PreparedBulk::Write(std::span<const size_t> positions) {
  std::vector<ItemFailure> failures;
  std::vector<size_t> sent;  // indices into `positions` of the documents in the request
  sent.reserve(positions.size());
  for (size_t k = 0; k < positions.size(); ++k) {
    if (lines_[positions[k]].refused) {
      failures.push_back(refused_.at(positions[k]).failure);
      failures.back().position = k;
    } else {
      sent.push_back(k);
    }
  }
  if (sent.empty()) return failures;
  absl::StatusOr<opensearch::BulkResponse> response;
  if (!gzipped_) {
    // The lines where they lie, a run of them laid out together in one piece.
    std::vector<std::string_view> pieces;
    for (size_t k : sent) {
      const PreparedLines& l = lines_[positions[k]];
      const std::string_view lines(l.data, l.end - l.begin);
      if (!pieces.empty() && pieces.back().data() + pieces.back().size() == lines.data()) {
        pieces.back() = std::string_view(pieces.back().data(), pieces.back().size() + lines.size());
      } else {
        pieces.push_back(lines);
      }
    }
    response = client_.BulkPieces(pieces, sent.size());
  } else if (sent.size() == lines_.size() - refused_.size()) {
    response = client_.BulkKeepingBody(body_, /*gzipped=*/true, sent.size());
  } else {
    // A part of the batch (sent again, or half of one too large): its lines copied out of the
    // body into a body of its own.
    std::vector<LineRange> ranges;
    ranges.reserve(sent.size());
    uint64_t bytes = 0;
    for (size_t k : sent) {
      const PreparedLines& l = lines_[positions[k]];
      ranges.push_back({positions[k], l.begin, l.end});
      bytes += l.end - l.begin;
    }
    net::GzipStream gzip(bytes / 4);
    RFS_RETURN_IF_ERROR(ForEachRange(
        ranges, [&gzip](size_t, std::string_view piece) { return gzip.Append(piece); }));
    RFS_ASSIGN_OR_RETURN(std::string part, gzip.Finish());
    response = client_.BulkKeepingBody(part, /*gzipped=*/true, sent.size());
  }
  if (!response.ok()) return response.status();
  for (size_t i = 0; i < response->items.size() && i < sent.size(); ++i) {
    opensearch::BulkItemResult& item = response->items[i];
    // Deleting a document the target does not hold leaves it as wanted; a data stream's
    // document the target holds already (409 to `create`) was written by an earlier attempt.
    const BulkOp op = lines_[positions[sent[i]]].op;
    if (item.ok() || (op == BulkOp::kDelete && item.status == 404) ||
        (op == BulkOp::kCreate && item.status == 409)) {
      continue;
    }
    failures.push_back(
        {sent[i], item.status, std::move(item.error_type), std::move(item.error_reason)});
  }
  std::sort(failures.begin(), failures.end(),
            [](const ItemFailure& a, const ItemFailure& b) { return a.position < b.position; });
  return failures;
}

// The index and `_id` an action line of ours names ({"<op>":{"_index":..,"_id":..,..}}, made by
// AppendBulkAction), read without a JSON parser: the names may hold any bytes AppendJsonString
// left as they were, valid UTF-8 or not, and come back exactly.
absl::Status ReadActionNames(std::string_view action, FailedDocument& out) {
  size_t pos = action.find(":{");
  bool have_index = false;
  if (pos != std::string_view::npos) {
    pos += 2;
    std::string key;
    while (pos < action.size() && core::ReadJsonString(action, pos, key)) {
      if (pos >= action.size() || action[pos] != ':') break;
      ++pos;
      if (pos < action.size() && action[pos] == '"') {
        std::string value;
        if (!core::ReadJsonString(action, pos, value)) break;
        if (key == "_index") {
          out.index = std::move(value);
          have_index = true;
        } else if (key == "_id") {
          out.id = std::move(value);
        }
      } else {
        pos = std::min(action.find_first_of(",}", pos), action.size());  // a number
      }
      if (pos >= action.size() || action[pos] != ',') break;
      ++pos;
    }
  }
  if (!have_index) {
    return absl::InternalError(core::StrCat(
        "a prepared bulk holds an action line that names no index: ", action.substr(0, 200)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<FailedDocument>> PreparedBulk::Describe(
    std::span<const size_t> positions) const {
  std::vector<FailedDocument> out(positions.size());
  std::vector<LineRange> ranges;  // action and source line of each
  std::vector<size_t> of_range;   // the index into `out` of each pair of ranges
  for (size_t k = 0; k < positions.size(); ++k) {
    out[k].cursor = lines_[positions[k]].cursor;
    if (lines_[positions[k]].refused) {
      const Refused& refused = refused_.at(positions[k]);
      out[k].action = refused.action;
      out[k].source = refused.source;
      continue;
    }
    const PreparedLines& l = lines_[positions[k]];
    ranges.push_back({positions[k], l.begin, l.source});
    ranges.push_back({positions[k], l.source, l.end});
    of_range.push_back(k);
  }
  RFS_RETURN_IF_ERROR(ForEachRange(ranges, [&](size_t r, std::string_view piece) {
    FailedDocument& doc = out[of_range[r / 2]];
    (r % 2 == 0 ? doc.action : doc.source).append(piece);
    return absl::OkStatus();
  }));
  for (FailedDocument& doc : out) {
    // Without their newlines, as records keep them.
    if (!doc.action.empty() && doc.action.back() == '\n') doc.action.pop_back();
    if (!doc.source.empty() && doc.source.back() == '\n') doc.source.pop_back();
    RFS_RETURN_IF_ERROR(ReadActionNames(doc.action, doc));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<IPreparedBatch>> OpenSearchBulkSink::Prepare(
    std::span<const SourceDocument* const> docs) {
  auto version = client_.GetVersion();
  if (!version.ok()) return version.status();
  RFS_ASSIGN_OR_RETURN(const bool compress, client_.CompressionActive());
  const BulkActionOptions options{.include_type = version->RequiresDocumentType()};
  size_t bytes = 0;
  for (const SourceDocument* doc : docs) bytes += EstimateBulkBytes(*doc);
  const bool huge = bytes >= kStreamedBodyBytes;
  if (huge) {
    // Pooled bodies are not kept resident beside a huge document's.
    LaidOutBodies().Clear();
    GzippedBodies().Clear();
  }
  // Rounded up, so a pooled body fits the next batch too (batches differ by a document or so).
  constexpr size_t kStep = size_t{4} << 20;
  auto pooled_size = [](size_t n) { return n < kStreamedBodyBytes ? (n / kStep + 1) * kStep : n; };
  auto prepared = std::make_unique<PreparedBulk>(client_, compress);
  std::vector<PreparedLines>& lines = prepared->lines();
  lines.resize(docs.size());

  // The batch's lines in order: runs of lines the reader laid out (SourceDocument::rendered)
  // where they lie, the other documents' lines laid out here, in `laid_out`. With gzip they go
  // into igzip, in one call for a body of the usual size, as they come for a huge one (its
  // uncompressed bytes are never held in one buffer). Without gzip they stay where they are.
  struct Piece {
    const std::string* bytes;
    size_t begin;
    size_t end;
  };
  std::vector<Piece> pieces;
  std::unique_ptr<net::GzipStream> stream;
  if (compress && huge) stream = std::make_unique<net::GzipStream>(bytes / 4);
  size_t others = 0;  // bytes of the documents not laid out
  for (const SourceDocument* doc : docs) {
    if (!HasRenderedLines(*doc, options)) others += EstimateBulkBytes(*doc);
  }
  std::string laid_out;
  if (others > 0 && !stream) laid_out = LaidOutBodies().Take(pooled_size(others));
  std::vector<std::pair<size_t, size_t>> in_laid_out;  // without gzip: position, offset
  uint64_t offset = 0;                                 // in the batch's lines
  // With gzip: [begin, end) of `bytes`, next in the body.
  auto add = [&](const std::string& bytes_in, size_t begin, size_t end) -> absl::Status {
    offset += end - begin;
    if (stream) return stream->Append(std::string_view(bytes_in).substr(begin, end - begin));
    if (!pieces.empty() && pieces.back().bytes == &bytes_in && pieces.back().end == begin) {
      pieces.back().end = end;
    } else {
      pieces.push_back({&bytes_in, begin, end});
    }
    return absl::OkStatus();
  };
  std::string piece;  // one document's lines, laid out here for a huge gzipped body
  for (size_t i = 0; i < docs.size(); ++i) {
    const SourceDocument& doc = *docs[i];
    PreparedLines& l = lines[i];
    l.cursor = doc.cursor;
    l.op = doc.op;
    l.has_version = doc.version.has_value();
    // An _id over 512 bytes (which sources before Elasticsearch 5 allowed) makes OpenSearch
    // refuse the whole bulk request (action_request_validation_exception, HTTP 400), so such a
    // document is not sent: it fails alone, with the node's own words.
    if (doc.id.size() > kMaxIdBytes) {
      l.refused = true;
      PreparedBulk::Refused refused;
      refused.failure = {
          i, 400, "action_request_validation_exception",
          StrCat("Validation Failed: 1: id [", doc.id,
                 "] is too long, must be no longer than 512 bytes but was: ", doc.id.size(), ";")};
      AppendBulkAction(doc, options, refused.action);
      AppendSourceLine(doc, refused.source);
      refused.source_bytes = SourceSize(doc);
      prepared->Refuse(i, std::move(refused));
      continue;
    }
    l.begin = offset;
    if (HasRenderedLines(doc, options)) {
      l.source = offset + (doc.rendered_source - doc.rendered_begin);
      if (compress) {
        RFS_RETURN_IF_ERROR(add(doc.rendered->bytes, doc.rendered_begin, doc.rendered_end));
      } else {
        prepared->Keep(doc.rendered);
        l.data = doc.rendered->bytes.data() + doc.rendered_begin;
        offset += doc.rendered_end - doc.rendered_begin;
      }
    } else if (stream) {
      piece.clear();
      AppendBulkAction(doc, options, piece);
      l.source = offset + piece.size();
      if (doc.op != BulkOp::kDelete && doc.one_line && !SourceBytes(doc).empty()) {
        // A huge source goes in from where it is, not copied into `piece` first.
        RFS_RETURN_IF_ERROR(add(piece, 0, piece.size()));
        offset += SourceBytes(doc).size() + 1;
        RFS_RETURN_IF_ERROR(stream->Append(SourceBytes(doc)));
        RFS_RETURN_IF_ERROR(stream->Append("\n"));
      } else {
        AppendSourceLine(doc, piece);
        RFS_RETURN_IF_ERROR(add(piece, 0, piece.size()));
      }
    } else {
      const size_t at = laid_out.size();
      AppendBulkAction(doc, options, laid_out);
      l.source = offset + (laid_out.size() - at);
      AppendSourceLine(doc, laid_out);
      if (compress) {
        RFS_RETURN_IF_ERROR(add(laid_out, at, laid_out.size()));
      } else {
        in_laid_out.emplace_back(i, at);  // pointed at once `laid_out` stops growing
        offset += laid_out.size() - at;
      }
    }
    l.end = offset;
  }
  std::string& body = prepared->body();
  if (stream) {
    RFS_ASSIGN_OR_RETURN(body, stream->Finish());
  } else if (compress) {
    std::vector<std::string_view> views;
    views.reserve(pieces.size());
    for (const Piece& p : pieces) {
      views.push_back(std::string_view(*p.bytes).substr(p.begin, p.end - p.begin));
    }
    body = GzippedBodies().Take(0);
    prepared->set_body_pool(&GzippedBodies());
    const absl::Status compressed = net::GzipCompressInto(views, body);
    if (others > 0) LaidOutBodies().Give(std::move(laid_out));
    RFS_RETURN_IF_ERROR(compressed);
  } else {
    body = std::move(laid_out);
    if (others > 0) prepared->set_body_pool(&LaidOutBodies());
    for (const auto& [position, at] : in_laid_out) lines[position].data = body.data() + at;
  }
  return std::unique_ptr<IPreparedBatch>(std::move(prepared));
}

absl::StatusOr<std::vector<ItemFailure>> OpenSearchBulkSink::Write(
    std::span<const SourceDocument* const> docs) {
  RFS_ASSIGN_OR_RETURN(std::unique_ptr<IPreparedBatch> prepared, Prepare(docs));
  std::vector<size_t> all(docs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return prepared->Write(all);
}

}  // namespace rfs::reindex
