#include "rfs/coordination/postgres_work_coordinator.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "coordination/coordinator_base_internal.hpp"
#include <pqxx/pqxx>

namespace rfs::coordination {
namespace {

using core::StrCat;
using internal::FloorMillis;
using internal::FromMillis;
using internal::StoreTime;

// The same columns as the SQLite store (sqlite_work_coordinator.cpp), in PostgreSQL types.
constexpr const char* kColumns =
    "id, next_exponent, holder, expiration_ms, generation, completed_at_ms, successors, "
    "successor_exponent, creator, progress_cursor, progress_docs, progress_bytes, progress_at_ms";

// How many of the longest-expired available items an acquisition picks from at random.
constexpr int64_t kPickWindow = 16;

WorkItemState ReadRow(const pqxx::row& row) {
  WorkItemState state;
  state.id = row[0].as<std::string>();
  state.next_lease_exponent = row[1].as<int>();
  state.lease_holder = row[2].as<std::string>();
  state.lease_expires_at = FromMillis(row[3].as<int64_t>());
  state.lease_generation = row[4].as<int64_t>();
  if (!row[5].is_null()) state.completed_at = FromMillis(row[5].as<int64_t>());
  state.successor_ids = internal::SplitWorkItemIds(row[6].as<std::string>());
  state.successor_lease_exponent = row[7].as<int>();
  state.creator_id = row[8].as<std::string>();
  if (!row[9].is_null()) {
    state.progress = ItemProgress{static_cast<uint64_t>(row[9].as<int64_t>()),
                                  static_cast<uint64_t>(row[10].as<int64_t>()),
                                  static_cast<uint64_t>(row[11].as<int64_t>())};
    state.progress_at = FromMillis(row[12].as<int64_t>());
  }
  return state;
}

// Maps libpqxx's exceptions to the rfs error model. SQLSTATE class 40 (serialization failure,
// deadlock) and lost connections are transient; everything else is a bug or a broken server.
absl::Status PostgresError(const std::exception& e, std::string_view what) {
  const std::string message = StrCat("postgres work coordinator: ", what, ": ", e.what());
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr) {
    return absl::UnavailableError(message);
  }
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e); sql != nullptr) {
    const std::string state = sql->sqlstate();
    if (state.starts_with("40") || state.starts_with("08") || state.starts_with("57P") ||
        state == "55P03") {
      return absl::UnavailableError(message);
    }
    if (state.starts_with("28") || state == "42501") return absl::PermissionDeniedError(message);
    if (state.starts_with("53")) return absl::ResourceExhaustedError(message);
  }
  if (dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

class PostgresCoordinator final : public internal::CoordinatorBase {
 public:
  explicit PostgresCoordinator(PostgresWorkCoordinatorOptions options)
      : CoordinatorBase(options),
        connection_string_(options.connection),
        table_(options.table),
        store_clock_(options.store_clock),
        rng_(std::random_device{}() ^ std::hash<std::string>{}(options.worker_id)) {}

  absl::Status Connect() {
    std::lock_guard lock(mu_);
    return EnsureConnected();
  }

  absl::Status Setup() override {
    return Run("set up", [&](pqxx::work& txn) -> absl::Status {
      // Concurrent CREATE TABLE IF NOT EXISTS may both try to create the table's row type.
      txn.exec_params("SELECT pg_advisory_xact_lock(hashtext($1))", table_);
      txn.exec(StrCat("CREATE TABLE IF NOT EXISTS ", table_, R"sql( (
          id                 TEXT PRIMARY KEY,
          next_exponent      INTEGER NOT NULL DEFAULT 0,
          holder             TEXT NOT NULL DEFAULT '',
          expiration_ms      BIGINT NOT NULL DEFAULT 0,
          generation         BIGINT NOT NULL DEFAULT 0,
          completed_at_ms    BIGINT,
          successors         TEXT NOT NULL DEFAULT '',
          successor_exponent INTEGER NOT NULL DEFAULT 0,
          creator            TEXT NOT NULL DEFAULT '',
          progress_cursor    BIGINT,
          progress_docs      BIGINT,
          progress_bytes     BIGINT,
          progress_at_ms     BIGINT))sql"));
      txn.exec(StrCat("CREATE INDEX IF NOT EXISTS ", table_, "_incomplete ON ", table_,
                      " (expiration_ms) WHERE completed_at_ms IS NULL"));
      return absl::OkStatus();
    });
  }

  absl::StatusOr<int64_t> CountIncompleteWorkItems() override {
    int64_t count = 0;
    RFS_RETURN_IF_ERROR(Run("count", [&](pqxx::work& txn) -> absl::Status {
      count =
          txn.exec1(StrCat("SELECT COUNT(*) FROM ", table_, " WHERE completed_at_ms IS NULL"))[0]
              .as<int64_t>();
      return absl::OkStatus();
    }));
    return count;
  }

  absl::StatusOr<std::optional<WorkItemState>> GetWorkItem(std::string_view id) override {
    std::optional<WorkItemState> state;
    RFS_RETURN_IF_ERROR(Run(StrCat("read '", id, "'"), [&](pqxx::work& txn) -> absl::Status {
      state = Get(txn, id, /*lock=*/false);
      return absl::OkStatus();
    }));
    return state;
  }

  absl::StatusOr<std::vector<WorkItemState>> ListWorkItems() override {
    std::vector<WorkItemState> items;
    RFS_RETURN_IF_ERROR(Run("list work items", [&](pqxx::work& txn) -> absl::Status {
      for (const pqxx::row& row :
           txn.exec(StrCat("SELECT ", kColumns, " FROM ", table_, " ORDER BY id"))) {
        items.push_back(ReadRow(row));
      }
      return absl::OkStatus();
    }));
    return items;
  }

 protected:
  absl::StatusOr<StoreTime> ReadStoreTime() override {
    StoreTime now;
    RFS_RETURN_IF_ERROR(Run("read the server's clock", [&](pqxx::work& txn) -> absl::Status {
      now = ReadTime(txn);
      return absl::OkStatus();
    }));
    return now;
  }

  absl::StatusOr<bool> InsertItem(const WorkItemState& state) override {
    bool created = false;
    RFS_RETURN_IF_ERROR(
        Run(StrCat("create '", state.id, "'"), [&](pqxx::work& txn) -> absl::Status {
          const pqxx::result r = txn.exec_params(
              StrCat(
                  "INSERT INTO ", table_,
                  " (id, next_exponent, creator) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING"),
              state.id, state.next_lease_exponent, state.creator_id);
          created = r.affected_rows() == 1;
          return absl::OkStatus();
        }));
    return created;
  }

  absl::Status MutateItem(std::string_view id, const internal::ItemMutation& mutation) override {
    return Run(StrCat("update '", id, "'"), [&](pqxx::work& txn) -> absl::Status {
      std::optional<WorkItemState> state = Get(txn, id, /*lock=*/true);
      if (!state) return absl::NotFoundError(StrCat("no work item '", id, "' in ", table_));
      // Read the time after the row lock: waiting for it must not age the reading.
      const StoreTime now = ReadTime(txn);
      RFS_ASSIGN_OR_RETURN(bool write, mutation(*state, now));
      if (write) Put(txn, *state);
      return absl::OkStatus();
    });
  }

  absl::StatusOr<internal::TryOutcome> TryAcquireNext(Duration initial_lease) override {
    internal::TryOutcome outcome = NoAvailableWork{};
    RFS_RETURN_IF_ERROR(Run("acquire", [&](pqxx::work& txn) -> absl::Status {
      const StoreTime now = ReadTime(txn);
      RFS_RETURN_IF_ERROR(CheckClock(now));
      const std::string pick = StrCat("SELECT ", kColumns, " FROM ", table_,
                                      " WHERE completed_at_ms IS NULL AND expiration_ms < $1 "
                                      "ORDER BY expiration_ms LIMIT 1 OFFSET $2 "
                                      "FOR UPDATE SKIP LOCKED");
      pqxx::result r = txn.exec_params(pick, FloorMillis(now.earliest), RandomOffset());
      if (r.empty()) r = txn.exec_params(pick, FloorMillis(now.earliest), int64_t{0});
      if (!r.empty()) {
        WorkItemState state = ReadRow(r[0]);
        Lease lease = BeginLease(state, now, initial_lease);
        Put(txn, state);
        outcome = internal::Grant{std::move(lease), std::move(state)};
        return absl::OkStatus();
      }
      const pqxx::row summary = txn.exec1(StrCat("SELECT COUNT(*), MIN(expiration_ms) FROM ",
                                                 table_, " WHERE completed_at_ms IS NULL"));
      if (summary[0].as<int64_t>() > 0) {
        outcome = LeasedUntil(FromMillis(summary[1].as<int64_t>()), now);
      }
      return absl::OkStatus();
    }));
    return outcome;
  }

 private:
  absl::Status EnsureConnected() {
    if (connection_ && connection_->is_open()) return absl::OkStatus();
    try {
      connection_ = std::make_unique<pqxx::connection>(connection_string_);
      // The pick of an acquisition must walk the partial index in expiration order whatever the
      // table's statistics say. A table filled by workers one item at a time is analyzed late, if
      // at all before the run: estimating 15 rows of 20,000, the planner read every available
      // item through a bitmap scan and sorted them (10-20 ms an acquisition, growing with the
      // table). This connection runs only the coordinator's statements, each served by an index.
      // (A pooler that hands each transaction another server connection, such as PgBouncer in
      // transaction mode, would drop these settings: the picks would still be right, only slower.)
      pqxx::nontransaction session(*connection_);
      session.exec("SET enable_bitmapscan = off; SET enable_sort = off; SET enable_seqscan = off");
      return absl::OkStatus();
    } catch (const std::exception& e) {
      connection_.reset();
      return PostgresError(e, "connect");
    }
  }

  // Runs `body` in one transaction on the connection (reconnecting first if needed) and commits.
  template <typename Body>
  absl::Status Run(std::string_view what, Body&& body) {
    std::lock_guard lock(mu_);
    RFS_RETURN_IF_ERROR(EnsureConnected());
    try {
      pqxx::work txn(*connection_);
      absl::Status status = body(txn);
      if (!status.ok()) return status;  // the transaction rolls back as it goes
      txn.commit();
      return absl::OkStatus();
    } catch (const std::exception& e) {
      absl::Status status = PostgresError(e, what);
      if (absl::IsUnavailable(status) && !connection_->is_open()) connection_.reset();
      return status;
    }
  }

  // The server's clock, read inside the transaction; the local round trip bounds the estimate.
  StoreTime ReadTime(pqxx::work& txn) {
    const TimePoint sent = clock().Now();
    if (store_clock_ != nullptr) {
      const TimePoint store = store_clock_->Now();
      return StoreTime{store, store, sent};
    }
    const int64_t micros =
        txn.exec1("SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint")[0]
            .as<int64_t>();
    const TimePoint received = clock().Now();
    const TimePoint store{std::chrono::microseconds(micros)};
    // The reading happened somewhere in [sent, received] of the worker's clock: as seen at
    // `received`, the store's clock is in [store, store + round trip].
    return StoreTime{store, store + (received - sent), received};
  }

  std::optional<WorkItemState> Get(pqxx::work& txn, std::string_view id, bool lock) {
    const pqxx::result r = txn.exec_params(
        StrCat("SELECT ", kColumns, " FROM ", table_, " WHERE id = $1", lock ? " FOR UPDATE" : ""),
        std::string(id));
    if (r.empty()) return std::nullopt;
    return ReadRow(r[0]);
  }

  void Put(pqxx::work& txn, const WorkItemState& state) {
    std::optional<int64_t> completed;
    if (state.completed_at) completed = FloorMillis(*state.completed_at);
    std::optional<int64_t> cursor, docs, bytes, at;
    if (state.progress) {
      cursor = static_cast<int64_t>(state.progress->next_cursor);
      docs = static_cast<int64_t>(state.progress->docs);
      bytes = static_cast<int64_t>(state.progress->bytes);
      at = FloorMillis(state.progress_at);
    }
    txn.exec_params(StrCat("UPDATE ", table_,
                           " SET next_exponent = $2, holder = $3, expiration_ms = $4, "
                           "generation = $5, completed_at_ms = $6, successors = $7, "
                           "successor_exponent = $8, progress_cursor = $9, progress_docs = $10, "
                           "progress_bytes = $11, progress_at_ms = $12 WHERE id = $1"),
                    state.id, state.next_lease_exponent, state.lease_holder,
                    FloorMillis(state.lease_expires_at), state.lease_generation, completed,
                    internal::JoinWorkItemIds(state.successor_ids), state.successor_lease_exponent,
                    cursor, docs, bytes, at);
  }

  int64_t RandomOffset() {
    return std::uniform_int_distribution<int64_t>(0, kPickWindow - 1)(rng_);
  }

  std::mutex mu_;  // Guards the connection: one transaction at a time.
  const std::string connection_string_;
  const std::string table_;
  core::IClock* const store_clock_;
  std::unique_ptr<pqxx::connection> connection_;
  std::mt19937_64 rng_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IWorkCoordinator>> PostgresWorkCoordinator::Open(
    PostgresWorkCoordinatorOptions options) {
  RFS_RETURN_IF_ERROR(internal::CoordinatorBase::ValidateOptions(options));
  if (options.connection.empty()) {
    return absl::InvalidArgumentError("a PostgreSQL connection string is required");
  }
  RFS_RETURN_IF_ERROR(internal::ValidateTableName(options.table));
  auto coordinator = std::make_unique<PostgresCoordinator>(std::move(options));
  RFS_RETURN_IF_ERROR(coordinator->Connect());
  return std::unique_ptr<IWorkCoordinator>(std::move(coordinator));
}

}  // namespace rfs::coordination
