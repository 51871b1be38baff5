// PostgresWorkCoordinator: an IWorkCoordinator over a PostgreSQL table, for stores that several
// hosts share (several console instances serving one migration, or workers pointed at a database
// directly).
//
// Each read-modify-write of an item runs in one transaction that locks the item's row
// (SELECT ... FOR UPDATE); an acquisition locks one available row among the 16 longest-expired
// with FOR UPDATE SKIP LOCKED, so concurrent workers take different items without waiting on each
// other. Setup creates the table under an advisory lock (concurrent CREATE TABLE IF NOT EXISTS can
// otherwise collide). Times are the database server's clock (clock_timestamp()), read inside each
// transaction; the round trip bounds the uncertainty of the worker's estimate. Connection errors
// are Unavailable and the next call reconnects; serialization failures and deadlocks are
// Unavailable (retry).
//
// Thread safety: as IWorkCoordinator; each instance owns one connection, serialised by a mutex.
#pragma once

#include <memory>
#include <string>

#include "rfs/coordination/work_coordinator.hpp"

#include "absl/status/statusor.h"

namespace rfs::coordination {

struct PostgresWorkCoordinatorOptions : WorkCoordinatorOptions {
  /// A libpq connection string or URI, e.g. "postgresql://rfs@db:5432/migrations".
  std::string connection;
  /// The table of work items; one per session (letters, digits and '_', up to 63 bytes).
  std::string table = "work_items";
  /// Tests: the store's clock instead of the server's (so a FakeClock drives lease expiry).
  core::IClock* store_clock = nullptr;
};

class PostgresWorkCoordinator {
 public:
  /// Validates the options and connects. InvalidArgument for bad options, Unavailable when the
  /// server cannot be reached. Call Setup() on the result before use.
  static absl::StatusOr<std::unique_ptr<IWorkCoordinator>> Open(
      PostgresWorkCoordinatorOptions options);

  PostgresWorkCoordinator() = delete;
};

}  // namespace rfs::coordination
