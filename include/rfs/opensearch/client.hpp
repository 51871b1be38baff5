// OpenSearchClient: the REST calls rfs makes to a target cluster, over any net::IHttpTransport.
//
// Targets OpenSearch 1.x-3.x and Elasticsearch 5.x-8.x. The first call detects the cluster
// (GET /) and whether it accepts gzip request bodies; bulk bodies are then compressed unless
// compression is disabled. Responses that say "no" in an expected way are values (an index that
// exists, a version conflict, a missing document); everything else maps to a Status by what the
// caller should do next: 429 -> ResourceExhausted, 5xx and transport failures -> Unavailable /
// DeadlineExceeded (retry), 400 -> InvalidArgument, 401 -> Unauthenticated, 403 ->
// PermissionDenied (but a 403 cluster_block_exception, a block until it is lifted, ->
// Unavailable), 404 -> NotFound, 408 -> DeadlineExceeded, 409 -> AlreadyExists, 413 ->
// OutOfRange (the request is too large: split it), other 4xx -> InvalidArgument. Never
// FailedPrecondition or Aborted, which the worker reads as a lost lease. Messages carry the
// endpoint, the request line and OpenSearch's error type and reason, never credentials.
// Requests are never retried here: DocumentReindexer and the apps retry.
//
// Thread safety: every method may be called concurrently. The transport must outlive the client.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "rfs/core/version.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::opensearch {

/// Parses the body of GET / ("version.number", "version.distribution"). InvalidArgument when the
/// body is not a cluster's root response.
absl::StatusOr<core::ClusterVersion> ParseClusterVersion(std::string_view body);

struct OpenSearchClientOptions {
  /// Gzip bulk bodies when the target accepts them (`--disable-compression` turns this off).
  bool compression = true;
  /// Timeout of each request; zero uses the transport's default.
  std::chrono::milliseconds request_timeout{0};
};

/// One item of a `_bulk` response, in request order.
struct BulkItemResult {
  int status = 0;
  /// Empty on success; otherwise OpenSearch's error type, e.g. "mapper_parsing_exception".
  std::string error_type;
  std::string error_reason;
  bool ok() const { return status >= 200 && status < 300; }
};

struct BulkResponse {
  bool errors = false;
  /// One per action when `errors` is true; empty when every item succeeded (the response is
  /// then not parsed item by item, which matters at hundreds of MB/s).
  std::vector<BulkItemResult> items;
};

/// Parses a `_bulk` response body; `expected_items` is the number of actions sent. DataLoss
/// when the body is malformed or the item count differs.
absl::StatusOr<BulkResponse> ParseBulkResponse(std::string_view body, size_t expected_items);

/// Compare-and-set coordinates of a stored document.
struct DocumentVersion {
  int64_t seq_no = 0;
  int64_t primary_term = 0;
  int64_t version = 0;
};

struct StoredDocument {
  std::string id;
  /// `_source` as JSON text.
  std::string source;
  DocumentVersion version;
};

struct PutDocumentOptions {
  /// Both set: write only if the stored document still has this seq_no and primary term.
  std::optional<int64_t> if_seq_no;
  std::optional<int64_t> if_primary_term;
  /// `op_type=create`: fail with a conflict when the id exists.
  bool create_only = false;
  /// `refresh` parameter: "", "true", "false" or "wait_for".
  std::string refresh;
};

struct PutDocumentResult {
  enum class Outcome { kCreated, kUpdated, kVersionConflict };
  Outcome outcome = Outcome::kCreated;
  /// The new version (not set on a conflict).
  DocumentVersion version;
};

struct SearchResult {
  uint64_t total = 0;
  /// Hits with seq_no/primary_term filled in (the client always asks for them).
  std::vector<StoredDocument> hits;
  /// Index of each hit, parallel to `hits`.
  std::vector<std::string> hit_indices;
};

/// One document asked for by MultiGet.
struct MultiGetRequest {
  std::string index;
  std::string id;
  std::optional<std::string> routing;
};

/// One answer of MultiGet, in request order.
struct MultiGetResult {
  bool found = false;
  /// `_source` as the node returned it (null when not found or kept without one).
  boost::json::value source;
  int64_t version = 0;
  /// The item's own error (e.g. index_not_found_exception), empty when none.
  std::string error_type;
  std::string error_reason;
};

/// How an index keeps `_source`, from its mapping (GetSourceMapping).
struct SourceMapping {
  /// `_source.enabled: false`.
  bool disabled = false;
  /// `_source.includes` or `_source.excludes` (or the older `includes`/`excludes` spelled as
  /// `include`/`exclude`) are set: the stored `_source` leaves fields out.
  bool filtered = false;
  /// The mapping's words for it, e.g. "_source.excludes [secret]", for messages.
  std::string described;
};

enum class TemplateKind { kLegacy, kComponent, kIndex };

class OpenSearchClient {
 public:
  explicit OpenSearchClient(net::IHttpTransport& transport, OpenSearchClientOptions options = {});

  /// GET /; cached after the first success.
  absl::StatusOr<core::ClusterVersion> GetVersion();
  /// True once detection has run and found that bulk bodies will be gzipped.
  absl::StatusOr<bool> CompressionActive();
  /// Whether bulk bodies may be gzipped (the option; detection may still say no). Never blocks.
  bool compression_allowed() const { return options_.compression; }

  /// GET /_cluster/settings (flat keys, e.g. "persistent" -> {"cluster.routing...": ...}).
  absl::StatusOr<boost::json::object> GetClusterSettings(bool include_defaults);
  absl::Status PutClusterSettings(const boost::json::object& body);

  absl::StatusOr<bool> IndexExists(std::string_view index);
  /// Creates an index with `body` (settings, mappings, aliases). Returns false when it already
  /// existed (resource_already_exists_exception), which callers usually treat as success.
  absl::StatusOr<bool> CreateIndex(std::string_view index, const boost::json::object& body);

  absl::StatusOr<bool> TemplateExists(TemplateKind kind, std::string_view name);
  /// Legacy (`_template`), component (`_component_template`) or index (`_index_template`).
  absl::Status PutTemplate(TemplateKind kind, std::string_view name,
                           const boost::json::object& body);

  /// GET /_data_stream/<name>: whether a data stream of that name exists (an index or alias of
  /// that name is not one; nor is any name on a target without data streams).
  absl::StatusOr<bool> DataStreamExists(std::string_view name);
  /// PUT /_data_stream/<name>; an index template with `data_stream` must match the name. Returns
  /// false when it already existed.
  absl::StatusOr<bool> CreateDataStream(std::string_view name);

  /// The uuids of the indices `name` is on the target, sorted: the index's own, or those of an
  /// alias's indices (GET /<name>, the index.uuid setting of each index it answers for); empty
  /// when no index or alias has that name.
  absl::StatusOr<std::vector<std::string>> IndexUuids(std::string_view name);
  /// The uuids of the backing indices of data stream `name` (GET /_data_stream/<name>), sorted;
  /// nullopt when no data stream has that name, or the target has none at all (Elasticsearch
  /// before 7.9).
  absl::StatusOr<std::optional<std::vector<std::string>>> DataStreamIndexUuids(
      std::string_view name);

  /// POST /_bulk with an NDJSON body (compressed here when active); one item per action.
  absl::StatusOr<BulkResponse> Bulk(std::string body, size_t action_count);
  /// POST /_bulk with a body the caller gzipped already (net::GzipStream, for bodies too large to
  /// hold uncompressed as well); only while CompressionActive().
  absl::StatusOr<BulkResponse> BulkGzipped(std::string gzipped_body, size_t action_count);
  /// POST /_bulk with `body` as it is (gzipped by the caller when `gzipped`, which needs
  /// CompressionActive()), left with the caller afterwards: its buffer can carry the next batch.
  absl::StatusOr<BulkResponse> BulkKeepingBody(std::string& body, bool gzipped,
                                               size_t action_count);
  /// POST /_bulk with an uncompressed body in pieces, sent from where they lie (no copy into
  /// one buffer); they must outlive the call.
  absl::StatusOr<BulkResponse> BulkPieces(std::span<const std::string_view> pieces,
                                          size_t action_count);

  /// POST /<index>/_refresh ("" refreshes every index).
  absl::Status Refresh(std::string_view index = "");
  /// GET /<index>/_settings/<names>?flat_settings=true ("" index: every index; "" names: every
  /// setting): {"<index>": {"settings": {"index.x": "..."}}, ...}, only settings set explicitly.
  /// NotFound when the index does not exist.
  absl::StatusOr<boost::json::object> GetIndexSettings(std::string_view index,
                                                       std::string_view names = "");
  /// PUT /<index>/_settings with `settings` (e.g. {"index": {"refresh_interval": null}}: a null
  /// puts the default back). NotFound when the index does not exist.
  absl::Status UpdateIndexSettings(std::string_view index, const boost::json::object& settings);
  /// Documents matching `query` (a query DSL object; match_all when empty).
  absl::StatusOr<uint64_t> Count(std::string_view index, const boost::json::object& query = {});

  /// GET /<index>/_doc/<id>; std::nullopt when the document does not exist. NotFound when the
  /// index does not exist.
  absl::StatusOr<std::optional<StoredDocument>> GetDocument(
      std::string_view index, std::string_view id,
      const std::optional<std::string>& routing = std::nullopt);
  /// POST /_mget: `docs` (with routing each) fetched with their `_source` and `_version`; one
  /// result per document, in order. DataLoss when the answer does not hold one per document.
  absl::StatusOr<std::vector<MultiGetResult>> MultiGet(std::span<const MultiGetRequest> docs);
  /// GET /<index>/_mapping: how the index (every index `index` names: a data stream's backing
  /// indices, an alias's) keeps `_source`. NotFound when nothing has that name.
  absl::StatusOr<SourceMapping> GetSourceMapping(std::string_view index);
  /// PUT /<index>/_doc/<id> with compare-and-set and op_type options. A version conflict (409)
  /// is an outcome, not an error.
  absl::StatusOr<PutDocumentResult> PutDocument(std::string_view index, std::string_view id,
                                                std::string_view source_json,
                                                const PutDocumentOptions& options = {});
  /// POST /<index>/_search with `body` (query, size, sort, ...); seq_no_primary_term is added.
  absl::StatusOr<SearchResult> Search(std::string_view index, boost::json::object body);

  /// GET /_cat/health?format=json: the cluster's clock, as the epoch seconds the elected master
  /// reports (spec: schemas/cat.health.yaml, `epoch`, a string or a number). Needs no scripting.
  absl::StatusOr<int64_t> GetClusterEpochSeconds();

  /// Sends one request as it is (the request timeout filled in). A transport failure keeps its
  /// code and names the request and endpoint; any HTTP response is returned unmapped (see
  /// StatusFromResponse), for callers with an API this client does not wrap.
  absl::StatusOr<net::HttpResponse> Send(net::HttpRequest request);

  net::IHttpTransport& transport() { return transport_; }
  std::string endpoint() const { return transport_.endpoint(); }

 private:
  absl::Status Detect();
  /// Send, with `request` left to the caller (its body kept).
  absl::StatusOr<net::HttpResponse> SendKeeping(net::HttpRequest& request);
  /// Sends a `_bulk` request (its target set here), asking only for what rfs reads of the
  /// answer; without that filter from the first time the target refuses it.
  absl::StatusOr<net::HttpResponse> SendBulk(net::HttpRequest& request);
  /// HEAD `target`: true on 2xx, false on 404.
  /// `method` (HEAD, or GET where HEAD is not served) on `target`: false on a 404.
  absl::StatusOr<bool> Exists(const std::string& target, const char* method = "HEAD");
  /// PUT `body` to `target`: false when the target answers that it exists already.
  absl::StatusOr<bool> Create(const std::string& target, std::string body);

  net::IHttpTransport& transport_;
  OpenSearchClientOptions options_;
  std::mutex mu_;
  std::optional<core::ClusterVersion> version_;  // guarded by mu_
  bool compression_active_ = false;              // guarded by mu_
  std::atomic<bool> bulk_filter_refused_{false};
};

/// OpenSearch's error body, `{"error": {"type", "reason", "caused_by": {...}}, "status"}` or
/// `{"error": "text"}` (spec: schemas/_common.yaml ErrorResponseBase). Empty fields when the body
/// is not one.
struct ErrorInfo {
  std::string type;
  std::string reason;
  /// "type: reason (caused by: type: reason)", for messages.
  std::string detail;
};
ErrorInfo ParseErrorBody(std::string_view body);

/// The Status a non-2xx response maps to (see the file comment); OK for 2xx. `what` names the
/// request; the message adds the HTTP status and the error detail.
absl::Status StatusFromResponse(const net::HttpResponse& response, std::string_view what);

/// A request with a JSON body (Content-Type set when the body is not empty).
net::HttpRequest JsonRequest(std::string method, std::string target, std::string body = "");

/// Percent-encodes one path segment (index name, document id) for a request target.
std::string EncodePathSegment(std::string_view segment);

}  // namespace rfs::opensearch
