// OpenSearchBulkSink: one `_bulk` request per batch (see document_sink.hpp).
#include <algorithm>
#include <string>
#include <vector>

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

std::string OpenSearchBulkSink::description() const {
  return core::StrCat("OpenSearch bulk to ", client_.transport().endpoint());
}

namespace {

// Bodies from this size (a huge document's) are gzipped as they are laid out.
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

// A body this large (a huge document's) is compressed as it is laid out, each source read from
// where it is: the uncompressed body, as large as the documents, is never held.
absl::StatusOr<std::string> GzipWhileLaidOut(std::span<const SourceDocument* const> docs,
                                             const std::vector<size_t>& sent,
                                             const BulkActionOptions& options, size_t bytes) {
  net::GzipStream gzip(bytes / 4);
  std::string piece;
  for (size_t i : sent) {
    const SourceDocument& doc = *docs[i];
    if (HasRenderedLines(doc, options)) {
      // As laid out by the reader, like a smaller body's.
      RFS_RETURN_IF_ERROR(
          gzip.Append(std::string_view(doc.rendered->bytes)
                          .substr(doc.rendered_begin, doc.rendered_end - doc.rendered_begin)));
      continue;
    }
    piece.clear();
    AppendBulkAction(doc, options, piece);
    if (doc.op != BulkOp::kDelete && doc.one_line && !SourceBytes(doc).empty()) {
      RFS_RETURN_IF_ERROR(gzip.Append(piece));
      RFS_RETURN_IF_ERROR(gzip.Append(SourceBytes(doc)));
      piece.clear();
      piece.push_back('\n');
    } else {
      AppendSourceLine(doc, piece);
    }
    RFS_RETURN_IF_ERROR(gzip.Append(piece));
  }
  return gzip.Finish();
}

// One request for the documents of `docs` at positions `sent`, about `bytes` long.
absl::StatusOr<opensearch::BulkResponse> SendBody(opensearch::OpenSearchClient& client,
                                                  std::span<const SourceDocument* const> docs,
                                                  const std::vector<size_t>& sent,
                                                  const BulkActionOptions& options, size_t bytes) {
  RFS_ASSIGN_OR_RETURN(const bool compress, client.CompressionActive());
  if (bytes >= kStreamedBodyBytes) {
    // Pooled bodies are not kept resident beside a huge document's.
    LaidOutBodies().Clear();
    GzippedBodies().Clear();
    if (compress) {
      RFS_ASSIGN_OR_RETURN(std::string gzipped, GzipWhileLaidOut(docs, sent, options, bytes));
      return client.BulkGzipped(std::move(gzipped), sent.size());
    }
  }
  // Rounded up, so a pooled body fits the next batch too (batches differ by a document or so).
  constexpr size_t kStep = size_t{4} << 20;
  auto pooled_size = [](size_t n) { return n < kStreamedBodyBytes ? (n / kStep + 1) * kStep : n; };
  if (!compress) {
    // Runs of lines the reader laid out (SourceDocument::rendered) copied as they are, the other
    // documents laid out here, in order.
    std::string body = LaidOutBodies().Take(pooled_size(bytes));
    for (size_t i : sent) {
      const SourceDocument& doc = *docs[i];
      if (HasRenderedLines(doc, options)) {
        body.append(doc.rendered->bytes, doc.rendered_begin, doc.rendered_end - doc.rendered_begin);
        continue;
      }
      AppendBulkAction(doc, options, body);
      AppendSourceLine(doc, body);
    }
    auto response = client.BulkKeepingBody(body, /*gzipped=*/false, sent.size());
    LaidOutBodies().Give(std::move(body));
    return response;
  }
  // Gzipped from pieces, in order: runs of laid-out lines where they lie, and the lines of the
  // other documents laid out here, apart.
  struct Piece {
    const std::string* bytes;
    size_t begin;
    size_t end;
  };
  std::vector<Piece> pieces;
  auto add = [&pieces](const std::string* bytes, size_t begin, size_t end) {
    if (!pieces.empty() && pieces.back().bytes == bytes && pieces.back().end == begin) {
      pieces.back().end = end;
    } else {
      pieces.push_back({bytes, begin, end});
    }
  };
  size_t others = 0;  // bytes of the documents not laid out
  for (size_t i : sent) {
    if (!HasRenderedLines(*docs[i], options)) others += EstimateBulkBytes(*docs[i]);
  }
  std::string laid_out;
  if (others > 0) laid_out = LaidOutBodies().Take(pooled_size(others));
  for (size_t i : sent) {
    const SourceDocument& doc = *docs[i];
    if (HasRenderedLines(doc, options)) {
      add(&doc.rendered->bytes, doc.rendered_begin, doc.rendered_end);
      continue;
    }
    const size_t begin = laid_out.size();
    AppendBulkAction(doc, options, laid_out);
    AppendSourceLine(doc, laid_out);
    add(&laid_out, begin, laid_out.size());
  }
  std::vector<std::string_view> views;
  views.reserve(pieces.size());
  for (const Piece& piece : pieces) {
    views.push_back(std::string_view(*piece.bytes).substr(piece.begin, piece.end - piece.begin));
  }
  std::string gzipped = GzippedBodies().Take(0);
  const absl::Status compressed = net::GzipCompressInto(views, gzipped);
  if (others > 0) LaidOutBodies().Give(std::move(laid_out));
  if (!compressed.ok()) return compressed;
  auto response = client.BulkKeepingBody(gzipped, /*gzipped=*/true, sent.size());
  GzippedBodies().Give(std::move(gzipped));
  return response;
}

}  // namespace

absl::StatusOr<std::vector<ItemFailure>> OpenSearchBulkSink::Write(
    std::span<const SourceDocument* const> docs) {
  auto version = client_.GetVersion();
  if (!version.ok()) return version.status();
  const BulkActionOptions options{.include_type = version->RequiresDocumentType()};
  // An _id over 512 bytes (which sources before Elasticsearch 5 allowed) makes OpenSearch refuse
  // the whole bulk request (action_request_validation_exception, HTTP 400), so such a document
  // is not sent: it fails alone, with the node's own words.
  std::vector<ItemFailure> failures;
  std::vector<size_t> sent;  // positions in `docs` of the documents in the request
  sent.reserve(docs.size());
  size_t bytes = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (docs[i]->id.size() > kMaxIdBytes) {
      failures.push_back({i, 400, "action_request_validation_exception",
                          StrCat("Validation Failed: 1: id [", docs[i]->id,
                                 "] is too long, must be no longer than 512 bytes but was: ",
                                 docs[i]->id.size(), ";")});
      continue;
    }
    sent.push_back(i);
    bytes += EstimateBulkBytes(*docs[i]);
  }
  if (sent.empty()) return failures;
  auto response = SendBody(client_, docs, sent, options, bytes);
  if (!response.ok()) return response.status();
  for (size_t i = 0; i < response->items.size() && i < sent.size(); ++i) {
    opensearch::BulkItemResult& item = response->items[i];
    // Deleting a document the target does not hold leaves it as wanted; a data stream's
    // document the target holds already (409 to `create`) was written by an earlier attempt.
    const BulkOp op = docs[sent[i]]->op;
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

}  // namespace rfs::reindex
