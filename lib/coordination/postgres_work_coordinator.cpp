#include "rfs/coordination/postgres_work_coordinator.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rfs/coordination/postgres_connection.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "coordination/coordinator_base_internal.hpp"

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

// The pick of an acquisition must walk the partial index in expiration order whatever the table's
// statistics say. A table filled by workers one item at a time is analyzed late, if at all before
// the run: estimating 15 rows of 20,000, the planner read every available item through a bitmap
// scan and sorted them (10-20 ms an acquisition, growing with the table). Every statement of the
// coordinator is served by an index. Set in each transaction, not once per session: a pooler that
// hands each transaction another server connection (PgBouncer in transaction mode) keeps no
// session's settings, and would pass these on to its other clients.
constexpr const char* kPlannerSettings =
    "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; "
    "SET LOCAL enable_seqscan = off";

// How many of the longest-expired available items an acquisition picks from at random.
constexpr int64_t kPickWindow = 16;

absl::StatusOr<WorkItemState> ReadRow(const PostgresResult& result, int row) {
  WorkItemState state;
  auto integer = [&](int column) { return result.Int(row, column); };
  state.id = std::string(result.Text(row, 0));
  RFS_ASSIGN_OR_RETURN(const int64_t next_exponent, integer(1));
  state.next_lease_exponent = static_cast<int>(next_exponent);
  state.lease_holder = std::string(result.Text(row, 2));
  RFS_ASSIGN_OR_RETURN(const int64_t expires, integer(3));
  state.lease_expires_at = FromMillis(expires);
  RFS_ASSIGN_OR_RETURN(state.lease_generation, integer(4));
  if (!result.IsNull(row, 5)) {
    RFS_ASSIGN_OR_RETURN(const int64_t completed, integer(5));
    state.completed_at = FromMillis(completed);
  }
  state.successor_ids = internal::SplitWorkItemIds(result.Text(row, 6));
  RFS_ASSIGN_OR_RETURN(const int64_t successor_exponent, integer(7));
  state.successor_lease_exponent = static_cast<int>(successor_exponent);
  state.creator_id = std::string(result.Text(row, 8));
  if (!result.IsNull(row, 9)) {
    RFS_ASSIGN_OR_RETURN(const int64_t cursor, integer(9));
    RFS_ASSIGN_OR_RETURN(const int64_t docs, integer(10));
    RFS_ASSIGN_OR_RETURN(const int64_t bytes, integer(11));
    RFS_ASSIGN_OR_RETURN(const int64_t at, integer(12));
    state.progress = ItemProgress{static_cast<uint64_t>(cursor), static_cast<uint64_t>(docs),
                                  static_cast<uint64_t>(bytes)};
    state.progress_at = FromMillis(at);
  }
  return state;
}

// Names the store and the step in an error of the connection (its status kept: Unavailable for
// lost connections and serialization failures, to retry; see postgres_connection.hpp).
absl::Status InContext(const absl::Status& status, std::string_view what) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      StrCat("postgres work coordinator: ", what, ": ", status.message()));
}

class PostgresCoordinator final : public internal::CoordinatorBase {
 public:
  explicit PostgresCoordinator(PostgresWorkCoordinatorOptions options)
      : CoordinatorBase(options),
        session_(options.connection),
        table_(options.table),
        store_clock_(options.store_clock),
        rng_(std::random_device{}() ^ std::hash<std::string>{}(options.worker_id)) {}

  absl::Status Connect() {
    std::lock_guard lock(mu_);
    return InContext(session_.Connect(), "connect");
  }

  absl::Status Setup() override {
    return Run("set up", [&]() -> absl::Status {
      // Concurrent CREATE TABLE IF NOT EXISTS may both try to create the table's row type.
      RFS_RETURN_IF_ERROR(Exec("SELECT pg_advisory_xact_lock(hashtext($1))", {table_}).status());
      RFS_RETURN_IF_ERROR(Exec(StrCat("CREATE TABLE IF NOT EXISTS ", table_, R"sql( (
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
          progress_at_ms     BIGINT))sql"))
                              .status());
      return Exec(StrCat("CREATE INDEX IF NOT EXISTS ", table_, "_incomplete ON ", table_,
                         " (expiration_ms) WHERE completed_at_ms IS NULL"))
          .status();
    });
  }

  absl::StatusOr<int64_t> CountIncompleteWorkItems() override {
    int64_t count = 0;
    RFS_RETURN_IF_ERROR(Run("count", [&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(PostgresResult r, Exec(StrCat("SELECT COUNT(*) FROM ", table_,
                                                         " WHERE completed_at_ms IS NULL")));
      RFS_ASSIGN_OR_RETURN(count, r.Int(0, 0));
      return absl::OkStatus();
    }));
    return count;
  }

  absl::StatusOr<std::optional<WorkItemState>> GetWorkItem(std::string_view id) override {
    std::optional<WorkItemState> state;
    RFS_RETURN_IF_ERROR(Run(StrCat("read '", id, "'"), [&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(state, Get(id, /*lock=*/false));
      return absl::OkStatus();
    }));
    return state;
  }

  absl::StatusOr<std::vector<WorkItemState>> ListWorkItems() override {
    std::vector<WorkItemState> items;
    RFS_RETURN_IF_ERROR(Run("list work items", [&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(PostgresResult r,
                           Exec(StrCat("SELECT ", kColumns, " FROM ", table_, " ORDER BY id")));
      for (int row = 0; row < r.rows(); ++row) {
        RFS_ASSIGN_OR_RETURN(items.emplace_back(), ReadRow(r, row));
      }
      return absl::OkStatus();
    }));
    return items;
  }

 protected:
  absl::StatusOr<StoreTime> ReadStoreTime() override {
    StoreTime now;
    RFS_RETURN_IF_ERROR(Run("read the server's clock", [&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(now, ReadTime());
      return absl::OkStatus();
    }));
    return now;
  }

  absl::StatusOr<bool> InsertItem(const WorkItemState& state) override {
    bool created = false;
    RFS_RETURN_IF_ERROR(Run(StrCat("create '", state.id, "'"), [&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(
          PostgresResult r,
          Exec(StrCat("INSERT INTO ", table_,
                      " (id, next_exponent, creator) VALUES ($1, $2, $3) ON CONFLICT (id) DO "
                      "NOTHING"),
               {state.id, PostgresInt(state.next_lease_exponent), state.creator_id}));
      created = r.affected_rows() == 1;
      return absl::OkStatus();
    }));
    return created;
  }

  absl::Status MutateItem(std::string_view id, const internal::ItemMutation& mutation) override {
    return Run(StrCat("update '", id, "'"), [&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(std::optional<WorkItemState> state, Get(id, /*lock=*/true));
      if (!state) return absl::NotFoundError(StrCat("no work item '", id, "' in ", table_));
      // Read the time after the row lock: waiting for it must not age the reading.
      RFS_ASSIGN_OR_RETURN(const StoreTime now, ReadTime());
      RFS_ASSIGN_OR_RETURN(bool write, mutation(*state, now));
      if (write) RFS_RETURN_IF_ERROR(Put(*state));
      return absl::OkStatus();
    });
  }

  absl::StatusOr<internal::TryOutcome> TryAcquireNext(Duration initial_lease) override {
    internal::TryOutcome outcome = NoAvailableWork{};
    RFS_RETURN_IF_ERROR(Run("acquire", [&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(const StoreTime now, ReadTime());
      RFS_RETURN_IF_ERROR(CheckClock(now));
      const std::string pick = StrCat("SELECT ", kColumns, " FROM ", table_,
                                      " WHERE completed_at_ms IS NULL AND expiration_ms < $1 "
                                      "ORDER BY expiration_ms LIMIT 1 OFFSET $2 "
                                      "FOR UPDATE SKIP LOCKED");
      const PostgresParam earliest = PostgresInt(FloorMillis(now.earliest));
      RFS_ASSIGN_OR_RETURN(PostgresResult r, Exec(pick, {earliest, PostgresInt(RandomOffset())}));
      if (r.rows() == 0) {
        RFS_ASSIGN_OR_RETURN(r, Exec(pick, {earliest, PostgresInt(0)}));
      }
      if (r.rows() > 0) {
        RFS_ASSIGN_OR_RETURN(WorkItemState state, ReadRow(r, 0));
        Lease lease = BeginLease(state, now, initial_lease);
        RFS_RETURN_IF_ERROR(Put(state));
        outcome = internal::Grant{std::move(lease), std::move(state)};
        return absl::OkStatus();
      }
      RFS_ASSIGN_OR_RETURN(PostgresResult summary,
                           Exec(StrCat("SELECT COUNT(*), MIN(expiration_ms) FROM ", table_,
                                       " WHERE completed_at_ms IS NULL")));
      RFS_ASSIGN_OR_RETURN(const int64_t incomplete, summary.Int(0, 0));
      if (incomplete > 0) {
        RFS_ASSIGN_OR_RETURN(const int64_t soonest, summary.Int(0, 1));
        outcome = LeasedUntil(FromMillis(soonest), now);
      }
      return absl::OkStatus();
    }));
    return outcome;
  }

 private:
  // Runs `body` in one transaction on the connection (reconnecting first if needed) and commits;
  // a failed `body` rolls it back. The body's statements go through Exec, which names `what`.
  template <typename Body>
  absl::Status Run(std::string_view what, Body&& body) {
    std::lock_guard lock(mu_);
    RFS_RETURN_IF_ERROR(InContext(session_.Connect(), "connect"));
    what_ = what;
    bool body_failed = false;
    absl::Status status = session_.InTransaction(
        [&] {
          absl::Status outcome = body();
          body_failed = !outcome.ok();
          return outcome;
        },
        kPlannerSettings);
    what_ = {};
    // The body's errors are its statements' (named already) or its own (NotFound, a mutation's).
    return body_failed ? status : InContext(status, what);
  }

  absl::StatusOr<PostgresResult> Exec(std::string_view sql,
                                      const std::vector<PostgresParam>& params = {}) {
    absl::StatusOr<PostgresResult> result = session_.connection().Exec(sql, params);
    if (!result.ok()) return InContext(result.status(), what_);
    return result;
  }

  // The server's clock, read inside the transaction; the local round trip bounds the estimate.
  absl::StatusOr<StoreTime> ReadTime() {
    const TimePoint sent = clock().Now();
    if (store_clock_ != nullptr) {
      const TimePoint store = store_clock_->Now();
      return StoreTime{store, store, sent};
    }
    RFS_ASSIGN_OR_RETURN(PostgresResult r,
                         Exec("SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint"));
    RFS_ASSIGN_OR_RETURN(const int64_t micros, r.Int(0, 0));
    const TimePoint received = clock().Now();
    const TimePoint store{std::chrono::microseconds(micros)};
    // The reading happened somewhere in [sent, received] of the worker's clock: as seen at
    // `received`, the store's clock is in [store, store + round trip].
    return StoreTime{store, store + (received - sent), received};
  }

  absl::StatusOr<std::optional<WorkItemState>> Get(std::string_view id, bool lock) {
    RFS_ASSIGN_OR_RETURN(PostgresResult r, Exec(StrCat("SELECT ", kColumns, " FROM ", table_,
                                                       " WHERE id = $1", lock ? " FOR UPDATE" : ""),
                                                {std::string(id)}));
    if (r.rows() == 0) return std::optional<WorkItemState>();
    RFS_ASSIGN_OR_RETURN(WorkItemState state, ReadRow(r, 0));
    return std::optional<WorkItemState>(std::move(state));
  }

  absl::Status Put(const WorkItemState& state) {
    std::optional<int64_t> completed;
    if (state.completed_at) completed = FloorMillis(*state.completed_at);
    std::optional<int64_t> cursor, docs, bytes, at;
    if (state.progress) {
      cursor = static_cast<int64_t>(state.progress->next_cursor);
      docs = static_cast<int64_t>(state.progress->docs);
      bytes = static_cast<int64_t>(state.progress->bytes);
      at = FloorMillis(state.progress_at);
    }
    return Exec(StrCat("UPDATE ", table_,
                       " SET next_exponent = $2, holder = $3, expiration_ms = $4, "
                       "generation = $5, completed_at_ms = $6, successors = $7, "
                       "successor_exponent = $8, progress_cursor = $9, progress_docs = $10, "
                       "progress_bytes = $11, progress_at_ms = $12 WHERE id = $1"),
                {state.id, PostgresInt(state.next_lease_exponent), state.lease_holder,
                 PostgresInt(FloorMillis(state.lease_expires_at)),
                 PostgresInt(state.lease_generation), PostgresInt(completed),
                 internal::JoinWorkItemIds(state.successor_ids),
                 PostgresInt(state.successor_lease_exponent), PostgresInt(cursor),
                 PostgresInt(docs), PostgresInt(bytes), PostgresInt(at)})
        .status();
  }

  int64_t RandomOffset() {
    return std::uniform_int_distribution<int64_t>(0, kPickWindow - 1)(rng_);
  }

  std::mutex mu_;  // Guards the session: one transaction at a time.
  PostgresSession session_;
  const std::string table_;
  core::IClock* const store_clock_;
  std::string_view what_;  // the step Run is in, for Exec's errors
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
