// ConsoleWorkCoordinator: an IWorkCoordinator over the migration console's HTTP API (README
// "Console API"), for workers that coordinate through a console instead of a store of their own.
//
// The console applies the lease rules (it drives the coordination layer's SQLite or PostgreSQL
// coordinators); this client turns each IWorkCoordinator call into one request, or three for a
// checkpoint taken step by step when a successor-step hook stops it part-way. RecordProgress is
// PUT .../progress: progress between renewals, the lease left as it is. Leases come back
// with their store-clock times; the client starts each lease's local deadline at the moment it
// *sent* the request, which is never later than the grant, so the holder stops before the
// console can hand the item to anyone else. The clock guard compares the worker's clock with the
// console store's time reported in each acquisition (an acquisition granted to a skewed worker is
// released again at once).
//
// Requests that fail in transit or meet 429/502/503/504 are resent with backoff
// (net::RetryingHttpTransport); 4xx answers are never retried: 404 is NotFound, 409/410 are
// FailedPrecondition (the lease is lost), 401/403 PermissionDenied, 422 InvalidArgument.
//
// Thread safety: as IWorkCoordinator.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/net/http_transport.hpp"

#include "absl/status/statusor.h"

namespace rfs::coordination {

/// What a worker knows about the shard of a work item it creates (the seed's document_count and
/// total_size_bytes), for the console's progress report.
struct WorkItemTotals {
  std::optional<uint64_t> document_count;
  std::optional<uint64_t> total_size_bytes;
};

/// The back-pressure a worker has met at its target so far, for the console's status: sent with
/// every renewal, progress report and release ("back_pressure" in their bodies).
struct WorkerBackPressure {
  /// 429 answers (whole bulk requests and items).
  uint64_t rejected_429 = 0;
  /// Bulk requests or items sent again (any cause).
  uint64_t retries = 0;
};

struct ConsoleWorkCoordinatorOptions : WorkCoordinatorOptions {
  /// The console's base URL, e.g. "http://console:8080" (https with the system's CAs).
  std::string url;
  std::string session;
  /// The session's item space: "backfill" (the seed's work items), "workflow" (RfsWorker's
  /// phase records, kept apart from the work items) or "verify-N" (the work items of RfsWorker's
  /// verification round N, --verify-all).
  std::string space = "backfill";
  /// The session's bearer token (or the admin token). Never logged.
  std::string token;
  /// PEM CA certificates to trust for an https:// console (default: the system's).
  std::string ca_cert_file;
  /// Tests: the transport to use instead of one opened from `url` (retries are still added).
  std::shared_ptr<net::IHttpTransport> transport;
  std::chrono::milliseconds request_timeout{30'000};
  /// Called for each item this worker creates, to declare its shard's totals; may be empty.
  std::function<WorkItemTotals(std::string_view id)> item_totals;
  /// Read for each renewal, progress report and release; may be empty (nothing sent).
  std::function<WorkerBackPressure()> back_pressure;
};

class ConsoleWorkCoordinator {
 public:
  /// Validates the options and prepares the connection (no request yet). InvalidArgument for
  /// a bad URL or a missing session or token.
  static absl::StatusOr<std::unique_ptr<IWorkCoordinator>> Open(
      ConsoleWorkCoordinatorOptions options);

  ConsoleWorkCoordinator() = delete;
};

}  // namespace rfs::coordination
