// SqliteWorkCoordinator: the embedded default IWorkCoordinator, keeping work items in one SQLite
// file that several worker processes on one machine share.
//
// Every read-modify-write of an item, acquisition included, runs in one `BEGIN IMMEDIATE`
// transaction, which takes SQLite's write lock up front; two workers can therefore never both see
// an item as free and both lease it, and no transaction can fail half-way on a lock upgrade. The
// file is in WAL mode (readers never block the writer, and a process SIGKILLed mid-transaction
// leaves nothing behind but an uncommitted WAL tail) with a busy timeout, so contended workers
// wait (with short jittered sleeps, up to `busy_timeout`) instead of failing. Since acquisitions
// are serialised anyway, "random" here means random among the 16 longest-expired available
// items, which an index serves without scanning the table. The file must be on a local file
// system (WAL needs shared memory).
//
// The store's clock is the SQLite host's, which is the workers' host: by default both are
// core::SystemClock. Tests inject a FakeClock as `store_clock` (and as the worker clock).
//
// Thread safety: as IWorkCoordinator; each instance owns one SQLite connection, serialised by a
// mutex.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "rfs/coordination/work_coordinator.hpp"

#include "absl/status/statusor.h"

namespace rfs::coordination {

struct SqliteWorkCoordinatorOptions : WorkCoordinatorOptions {
  /// The database file; created if missing.
  std::string path;
  /// The table of work items (letters, digits and '_'): one file can hold several sessions.
  std::string table = "work_items";
  /// The store's clock; nullptr means core::SystemClock. Must outlive the coordinator.
  core::IClock* store_clock = nullptr;
  /// How long to wait for another worker's transaction before failing with Unavailable.
  std::chrono::milliseconds busy_timeout{30'000};
};

class SqliteWorkCoordinator {
 public:
  /// Opens (creating if needed) the database at options.path. InvalidArgument for missing
  /// options, Unavailable if the file cannot be opened. Call Setup() on the result before use.
  static absl::StatusOr<std::unique_ptr<IWorkCoordinator>> Open(
      SqliteWorkCoordinatorOptions options);

  SqliteWorkCoordinator() = delete;
};

}  // namespace rfs::coordination
