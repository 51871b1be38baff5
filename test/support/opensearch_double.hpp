// OpenSearchDouble: an in-process stand-in for an OpenSearch (or Elasticsearch) cluster, for
// tests and manual runs (the `opensearch-double` binary), since no real cluster can run here.
//
// A Boost.Beast HTTP/1.1 server on 127.0.0.1 (ephemeral port by default, optional TLS and basic
// auth) that answers the endpoints rfs uses with the status codes and bodies OpenSearch documents
// (the OpenSearch REST API specification, opensearch-api-specification): GET /, cluster settings,
// index exists/create/get/delete, legacy/component/index templates, `_bulk` (gzip bodies, per-item
// results, `errors`), `_refresh`, `_count`, documents with `_seq_no`/`_primary_term`, `if_seq_no`
// and `op_type=create`, and a `_search` subset (match_all, term(s), ids, range, exists, bool;
// size/from/sort/seq_no_primary_term), and snapshot repositories and snapshots (`/_snapshot`:
// register/get/delete a repository, create/get/status/delete a snapshot that progresses over
// polls; see OpenSearchDoubleOptions). Indices have one shard; documents of indices whose mapping
// says `"dynamic":"strict"` are checked against it, and mapped numeric/boolean fields against
// their type. Deviations: writes are visible to search at once (as if refreshed), and analysis
// is exact-match only.
//
// Fault injection (FaultOptions) applies to requests whose path contains `path_contains`: whole
// request 429 or 503, connection resets before or after the request is applied, slow responses
// and per-item bulk failures, drawn by probability from a seeded generator or taken from a
// schedule keyed by request number.
//
// Thread safety: every method may be called concurrently with requests being served.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rfs/core/clock.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/statusor.h"
#include "sigv4_verifier.hpp"

namespace rfs::testing {

enum class Fault {
  kNone,
  kReject429,         // 429 rejected_execution_exception for the whole request
  kUnavailable503,    // 503 for the whole request
  kResetBeforeApply,  // connection reset after reading the request; nothing applied
  kResetAfterApply,   // request applied, then the connection is reset without a response
  kSlowResponse,      // served after `slow_delay`
  kItemFailures,      // bulk items fail with 429 (each with probability max(item_failure, 0.5))
};

struct FaultOptions {
  double reject_429 = 0;
  double unavailable_503 = 0;
  double reset_before_apply = 0;
  double reset_after_apply = 0;
  double slow = 0;
  std::chrono::milliseconds slow_delay{0};
  /// Probability that each item of an otherwise healthy bulk request fails with 429.
  double item_failure = 0;
  /// Fault for the Nth (1-based) eligible request; takes precedence over the probabilities.
  std::map<uint64_t, Fault> schedule;
  /// Requests whose path contains this are eligible ("" = every request).
  std::string path_contains = "_bulk";
  uint64_t seed = 42;
};

struct OpenSearchDoubleOptions {
  /// Reported by GET /; selects version-specific behaviour (`_type` rules, error names).
  std::string version = "2.11.0";
  /// "opensearch" or "elasticsearch".
  std::string distribution = "opensearch";
  /// 0 picks an ephemeral port.
  uint16_t port = 0;
  /// Requests must carry these basic-auth credentials when set (401 otherwise).
  std::optional<std::string> username;
  std::optional<std::string> password;
  /// Requests must carry a valid AWS SigV4 signature for these keys when set, as Amazon
  /// OpenSearch Service checks it (403 {"message": ...} otherwise).
  std::optional<rfs::test::SigV4Expectation> sigv4;
  /// Serve HTTPS with this PEM certificate chain and key when both are set.
  std::string tls_cert_file;
  std::string tls_key_file;
  /// With TLS: ask every client for a certificate signed by this PEM CA, and end the handshake
  /// of one that has none (mutual TLS, as the security plugin's clientauth_mode REQUIRE).
  std::string tls_client_ca_file;
  /// Answers `_bulk` with one success item per action line without parsing or storing anything
  /// (benchmarks).
  bool discard_bulk = false;
  /// OpenSearch's http.max_content_length (100mb by default): larger bodies get 413. As in
  /// OpenSearch's HTTP pipeline (Netty4HttpServerTransport: HttpContentDecompressor before
  /// HttpObjectAggregator), the limit applies to the decompressed body.
  size_t max_content_length = size_t{100} << 20;
  /// The cluster's clock (`_cat/health` epoch, `Date` headers, periodic refresh); nullptr means
  /// the system clock. Must outlive the double.
  core::IClock* clock = nullptr;
  /// Adds a `Date` header to every response, as a load balancer in front of a managed cluster
  /// does. OpenSearch's own HTTP layer sends none.
  bool send_date_header = false;
  /// Value of the `http.compression` setting reported in the cluster-settings defaults.
  bool http_compression = true;
  /// Snapshots (`PUT /_snapshot/<repo>/<snap>` without wait_for_completion) stay IN_PROGRESS
  /// until they have been observed this many times (GET /_snapshot/<repo>/<snap> or its
  /// `_status`), their shard and byte counts growing with each observation; 0 completes them at
  /// once. The double records snapshot metadata only; it writes no repository files.
  int snapshot_polls_to_complete = 3;
  /// How every snapshot ends: "SUCCESS", "PARTIAL" (the first shard fails) or "FAILED" (every
  /// shard fails). Other values are treated as "SUCCESS".
  std::string snapshot_final_state = "SUCCESS";
  FaultOptions faults;
};

struct DoubleStats {
  uint64_t requests = 0;
  uint64_t bulk_requests = 0;
  uint64_t bulk_items = 0;
  /// Write operations applied (index/create/update/delete, bulk or single).
  uint64_t write_operations = 0;
  uint64_t faults_injected = 0;
  /// Responses with status 409 (version conflicts, documents that already exist).
  uint64_t conflicts = 0;
  /// Requests refused for their SigV4 signature.
  uint64_t signature_rejections = 0;
  uint64_t gzip_requests = 0;
  uint64_t connections = 0;
};

struct StoredDocument {
  std::string source;  // as received, one line
  int64_t seq_no = 0;
  int64_t primary_term = 1;
  int64_t version = 1;
  std::optional<std::string> routing;
  /// How many writes hit this id (1 = written once).
  int64_t writes = 1;
};

struct RecordedRequest {
  std::string method;
  std::string target;
  net::HttpHeaders headers;
  size_t body_bytes = 0;  // as received (compressed size for gzip bodies)
};

class OpenSearchDouble {
 public:
  /// Binds 127.0.0.1 and starts serving. InvalidArgument for bad TLS files, Unavailable when the
  /// port cannot be bound.
  static absl::StatusOr<std::unique_ptr<OpenSearchDouble>> Start(
      OpenSearchDoubleOptions options = {});
  /// Stops the server (closes every connection) and joins its threads.
  ~OpenSearchDouble();
  OpenSearchDouble(const OpenSearchDouble&) = delete;
  OpenSearchDouble& operator=(const OpenSearchDouble&) = delete;

  uint16_t port() const;
  /// "http://127.0.0.1:<port>" (https when serving TLS).
  std::string endpoint() const;

  void SetFaults(FaultOptions faults);
  DoubleStats stats() const;
  std::optional<StoredDocument> GetDocument(const std::string& index, const std::string& id) const;
  size_t DocumentCount(const std::string& index) const;
  std::vector<std::string> IndexNames() const;
  /// The most recent requests (up to 1000), oldest first.
  std::vector<RecordedRequest> requests() const;
  /// Requests answered 400, 405, 406 or 413 ("METHOD target: body"): malformed or unsupported
  /// requests that a correct client never sends. Tests assert it empty.
  std::vector<std::string> protocol_errors() const;
  /// A test that provokes such answers on purpose says so; otherwise the check below runs.
  void AllowProtocolErrors();
  /// Called with protocol_errors() when a double is destroyed (unless allowed): test executables
  /// set it to a Catch check (double_checks.cpp), so every test that serves a double asserts it.
  static void SetProtocolErrorCheck(std::function<void(const std::vector<std::string>&)> check);
  /// Creates an index directly (test set-up), e.g. with a strict mapping.
  absl::Status CreateIndex(const std::string& name, const std::string& body_json);

 private:
  struct Impl;
  explicit OpenSearchDouble(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// An HTTP `Date` header's text for `t` (RFC 9110 IMF-fixdate, whole seconds).
std::string HttpDate(core::IClock::TimePoint t);

}  // namespace rfs::testing
