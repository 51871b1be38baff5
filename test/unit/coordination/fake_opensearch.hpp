// FakeOpenSearch: a small, strict, in-process model of the OpenSearch document APIs that
// OpenSearchWorkCoordinator uses, behind rfs::net::IHttpTransport.
//
// Modelled (OpenSearch 2.x behaviour, per the REST spec in shared/spec/opensearch-api):
//   HEAD/PUT /{index}                          exists / create with settings + mappings
//   PUT|POST /{index}/_create/{id}             op_type=create: 201, or 409 if the id exists
//   PUT|POST /{index}/_doc/{id}                index, optionally if_seq_no + if_primary_term (409
//                                              version_conflict_engine_exception on mismatch)
//   GET /{index}/_doc/{id}                     real-time get with _seq_no/_primary_term
//   POST /{index}/_search, /{index}/_count     the query subset below, over the last *refreshed*
//                                              view (near-real-time search, as in OpenSearch)
//   POST /{index}/_refresh                     publishes every write to search
//   POST /{index}/_update/{id}                 only the Painless clock-probe script (unused now)
//   GET /_cat/health?format=json               the cluster clock as epoch seconds
// `refresh=true` on a write refreshes before responding. Queries: bool (filter/must/must_not),
// range (lt/lte/gt/gte), exists, term, match_all, function_score with random_score; sort on
// numeric fields; size; track_total_hits; seq_no_primary_term.
//
// Strictness: a body without `Content-Type: application/json` is 406; unknown query parameters,
// body keys, query clauses, or queries/sorts on fields the index mapping lacks are 400 *and* are
// recorded in protocol_errors(), which tests assert empty. Writes to a missing index are 404 and
// recorded (real OpenSearch would auto-create it with guessed mappings: a bug either way).
// The `Date` header (second resolution, from the injected clock) can be switched off, as a plain
// OpenSearch sends none. Thread safety: Send may be called concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rfs/core/clock.hpp"
#include "rfs/net/http.hpp"

namespace rfs::coordination::testing {

class FakeOpenSearch final : public net::IHttpTransport {
 public:
  struct Options {
    core::IClock* clock = nullptr;  // Required: the cluster's clock.
    bool send_date_header = true;
    /// Slept per request, outside the store's lock (benchmarks: a network round trip).
    std::chrono::microseconds latency{0};
  };

  explicit FakeOpenSearch(Options options);
  ~FakeOpenSearch() override;

  absl::StatusOr<net::HttpResponse> Send(const net::HttpRequest& request) override;
  std::string endpoint() const override { return "fake-opensearch"; }

  /// Requests the fake rejected as malformed or unsupported (should stay empty).
  std::vector<std::string> protocol_errors() const;
  int64_t request_count() const;
  int64_t conflict_count() const;
  /// Makes the request `n` requests from now (0: the next one) fail with Unavailable, either
  /// before it reaches the store or, with `after_applying`, after it took effect (a lost
  /// response).
  void FailRequest(int64_t n, bool after_applying);

 private:
  struct Store;  // Indices and documents (fake_opensearch.cpp).

  net::HttpResponse Handle(const net::HttpRequest& request);

  Options options_;
  std::unique_ptr<Store> store_;
};

}  // namespace rfs::coordination::testing
