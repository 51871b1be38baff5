// OpenSearchWorkCoordinator: an IWorkCoordinator whose store is an OpenSearch index
// (`.migrations_working_state`, or `.migrations_working_state_<session>`) on the target cluster or
// on a separate coordination cluster, so workers on many hosts can share the work.
//
// One document per work item. Atomicity comes from optimistic concurrency: every change to an
// item is a whole-document write conditional on the `_seq_no`/`_primary_term` it was read at
// (`if_seq_no`/`if_primary_term`), so of two workers racing for an item exactly one write succeeds
// and the other gets a 409 and moves on. Acquisition searches for available items (lease expired,
// not complete) in random order and tries them one by one. Writes use `refresh=true`, so searches
// and counts see every acknowledged write.
//
// The store's clock: OpenSearch decides nothing by time itself; workers compare lease expiries
// with their estimate of the cluster's clock. The estimate comes from the `Date` header of any
// response (proxies and managed services add one; second resolution), and, when the cluster sends
// none (plain OpenSearch does not), from `GET /_cat/health?format=json`, whose `epoch` is the
// cluster's clock in seconds (no scripting needed). The estimate is an interval
// that accounts for resolution and round-trip time; expiries are written at its late end and
// judged expired only past its early end, so that estimates from different workers never let two
// of them hold one item.
//
// Every request goes through opensearch::OpenSearchClient (one status mapping, one error parser).
// Supported: OpenSearch 1.0-3.x and Elasticsearch 7.x/8.x. Thread safety: as IWorkCoordinator;
// the transport must allow concurrent Send.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/statusor.h"

namespace rfs::coordination {

/// The coordination index of the Java tool and of rfs.
inline constexpr std::string_view kWorkingStateIndex = ".migrations_working_state";

struct OpenSearchWorkCoordinatorOptions : WorkCoordinatorOptions {
  /// The cluster holding the coordination index; required.
  std::shared_ptr<net::IHttpTransport> transport;
  /// Non-empty: use `.migrations_working_state_<session_name>` so that several migrations can
  /// share a cluster. Lowercase letters, digits, '-' and '_' only.
  std::string session_name;
  /// How many available items one search returns to choose from.
  int search_batch_size = 16;
  /// How many search-and-try rounds an acquisition makes before giving up with Unavailable when
  /// every candidate is taken by a racing worker.
  int max_acquire_rounds = 64;
  /// A store-clock estimate older than this is re-sampled before it is used.
  std::chrono::seconds clock_sample_max_age{60};
  /// Sends per request when the cluster is busy or the connection fails (429, 502-504, resets,
  /// timeouts), with short backoff (net::RetryingHttpTransport): every request of the coordinator
  /// is safe to send twice. 1 hands every failure straight to the caller.
  int request_attempts = 4;
};

class OpenSearchWorkCoordinator {
 public:
  /// InvalidArgument for missing or bad options. Performs no request: call Setup() next.
  static absl::StatusOr<std::unique_ptr<IWorkCoordinator>> Open(
      OpenSearchWorkCoordinatorOptions options);

  /// The index name for `session_name` (empty: kWorkingStateIndex).
  static std::string IndexName(std::string_view session_name);

  OpenSearchWorkCoordinator() = delete;
};

}  // namespace rfs::coordination
