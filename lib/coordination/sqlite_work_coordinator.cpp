#include "rfs/coordination/sqlite_work_coordinator.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sqlite3.h>

#include "rfs/core/retry.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "coordination/coordinator_base_internal.hpp"

namespace rfs::coordination {
namespace {

using core::StrCat;
using internal::FloorMillis;
using internal::FromMillis;
using internal::StoreTime;

// Times are whole milliseconds since the Unix epoch on the store's clock; `completed_at_ms` is NULL
// while the item is incomplete; `successors` is comma-separated (ids never hold ','); the
// progress_* columns are NULL until a holder records progress (heartbeat leases; files created
// before them get them from kProgressColumns). The partial index serves both "available items" and
// "incomplete count".
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS work_items (
  id                 TEXT PRIMARY KEY NOT NULL,
  next_exponent      INTEGER NOT NULL DEFAULT 0,
  holder             TEXT NOT NULL DEFAULT '',
  expiration_ms      INTEGER NOT NULL DEFAULT 0,
  generation         INTEGER NOT NULL DEFAULT 0,
  completed_at_ms    INTEGER,
  successors         TEXT NOT NULL DEFAULT '',
  successor_exponent INTEGER NOT NULL DEFAULT 0,
  creator            TEXT NOT NULL DEFAULT '',
  progress_cursor    INTEGER,
  progress_docs      INTEGER,
  progress_bytes     INTEGER,
  progress_at_ms     INTEGER
);
CREATE INDEX IF NOT EXISTS work_items_incomplete ON work_items (expiration_ms)
  WHERE completed_at_ms IS NULL;
)sql";

constexpr const char* kColumns =
    "id, next_exponent, holder, expiration_ms, generation, completed_at_ms, successors, "
    "successor_exponent, creator, progress_cursor, progress_docs, progress_bytes, progress_at_ms";

// Added after the first schema: Setup adds them to older files.
constexpr const char* kProgressColumns[] = {"progress_cursor", "progress_docs", "progress_bytes",
                                            "progress_at_ms"};

// Maps a SQLite result code to the rfs error model: lock contention that outlasted the busy
// timeout is transient; a corrupt file is data loss; a full disk is resource exhaustion.
absl::Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  const std::string message =
      StrCat("sqlite work coordinator: ", what, ": ", db != nullptr ? sqlite3_errmsg(db) : "", " (",
             sqlite3_errstr(rc), ")");
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
      return absl::UnavailableError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::ResourceExhaustedError(message);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

// `sql` with `table` in place of "work_items" (statements are written for the default table).
std::string ForTable(std::string_view sql, std::string_view table) {
  std::string out;
  for (size_t at = 0;;) {
    const size_t next = sql.find("work_items", at);
    out.append(sql.substr(at, next - at));
    if (next == std::string_view::npos) return out;
    out.append(table);
    at = next + std::string_view("work_items").size();
  }
}

// Prepared statements of one connection, prepared on first use and kept: preparing costs more
// than running these one-row statements. Not thread-safe (the coordinator's mutex guards it).
class StatementCache {
 public:
  StatementCache(sqlite3* db, std::string table) : db_(db), table_(std::move(table)) {}
  ~StatementCache() {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  }
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  sqlite3* db() const { return db_; }
  /// The statement for `sql`, or nullptr with `*rc` set.
  sqlite3_stmt* Get(const std::string& sql, int* rc) {
    *rc = SQLITE_OK;
    auto it = statements_.find(sql);
    if (it != statements_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    *rc = sqlite3_prepare_v3(db_, ForTable(sql, table_).c_str(), -1, SQLITE_PREPARE_PERSISTENT,
                             &stmt, nullptr);
    if (*rc != SQLITE_OK) return nullptr;
    statements_.emplace(sql, stmt);
    return stmt;
  }

 private:
  sqlite3* db_;
  std::string table_;
  std::map<std::string, sqlite3_stmt*> statements_;
};

// One use of a cached statement; resets it and clears its bindings when done.
class Statement {
 public:
  Statement(StatementCache& cache, const std::string& sql)
      : db_(cache.db()), stmt_(cache.Get(sql, &rc_)) {}
  ~Statement() {
    if (stmt_ != nullptr) {
      sqlite3_reset(stmt_);
      sqlite3_clear_bindings(stmt_);
    }
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  absl::Status status(std::string_view what) const {
    return rc_ == SQLITE_OK ? absl::OkStatus() : SqliteError(db_, rc_, what);
  }
  void Bind(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void BindNull(int index) { sqlite3_bind_null(stmt_, index); }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  /// True for a row, false when done.
  absl::StatusOr<bool> Step(std::string_view what) {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(db_, rc, what);
  }
  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string Text(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return text != nullptr ? std::string(text, sqlite3_column_bytes(stmt_, column)) : "";
  }

 private:
  sqlite3* db_;
  int rc_ = SQLITE_OK;
  sqlite3_stmt* stmt_;
};

WorkItemState ReadRow(const Statement& row) {
  WorkItemState state;
  state.id = row.Text(0);
  state.next_lease_exponent = static_cast<int>(row.Int(1));
  state.lease_holder = row.Text(2);
  state.lease_expires_at = FromMillis(row.Int(3));
  state.lease_generation = row.Int(4);
  if (!row.IsNull(5)) state.completed_at = FromMillis(row.Int(5));
  state.successor_ids = internal::SplitWorkItemIds(row.Text(6));
  state.successor_lease_exponent = static_cast<int>(row.Int(7));
  state.creator_id = row.Text(8);
  if (!row.IsNull(9)) {
    state.progress =
        ItemProgress{static_cast<uint64_t>(row.Int(9)), static_cast<uint64_t>(row.Int(10)),
                     static_cast<uint64_t>(row.Int(11))};
    state.progress_at = FromMillis(row.Int(12));
  }
  return state;
}

// How many of the longest-expired available items an acquisition picks from at random.
constexpr int64_t kPickWindow = 16;

// Waits for another connection's lock with short, jittered sleeps until `timeout` has passed
// since the first try. SQLite's own busy_timeout handler sleeps up to 100 ms per try, leaving
// the lock idle long after its holder commits; coordination transactions last microseconds.
struct BusyWait {
  explicit BusyWait(std::chrono::milliseconds t) : timeout(t) {}

  std::chrono::milliseconds timeout;
  std::chrono::steady_clock::time_point first_try;
  std::minstd_rand rng{std::random_device{}()};

  static int Handler(void* arg, int tries) {
    auto* wait = static_cast<BusyWait*>(arg);
    const auto now = std::chrono::steady_clock::now();
    if (tries == 0) wait->first_try = now;
    if (now - wait->first_try >= wait->timeout) return 0;  // Give up: SQLITE_BUSY.
    const int max_us = std::min(50 << std::min(tries, 6), 2000);
    std::this_thread::sleep_for(std::chrono::microseconds(
        std::uniform_int_distribution<int>(max_us / 2, max_us)(wait->rng)));
    return 1;
  }
};

class SqliteCoordinator final : public internal::CoordinatorBase {
 public:
  SqliteCoordinator(SqliteWorkCoordinatorOptions options, sqlite3* db)
      : CoordinatorBase(options),
        db_(db),
        statements_(db, options.table),
        store_clock_(options.store_clock != nullptr ? options.store_clock
                                                    : &core::SystemClock::Instance()),
        path_(options.path),
        table_(options.table),
        busy_(options.busy_timeout),
        rng_(std::random_device{}() ^ std::hash<std::string>{}(options.worker_id)) {}
  ~SqliteCoordinator() override { sqlite3_close_v2(db_); }

  // Connection settings; run once before use.
  absl::Status Configure() {
    sqlite3_extended_result_codes(db_, 1);
    if (const int rc = sqlite3_busy_handler(db_, &BusyWait::Handler, &busy_); rc != SQLITE_OK) {
      return SqliteError(db_, rc, StrCat("set busy handler on ", path_));
    }
    // WAL: readers never block the writer and a killed writer leaves the database consistent.
    // synchronous=NORMAL syncs at checkpoints only: a committed transaction survives any process
    // crash (the concern here); only an OS crash or power loss can lose the last few.
    // Changing the journal mode, and a first read after another process was killed mid-write
    // (WAL recovery), take locks SQLite does not wait for through the busy handler: retry here
    // for up to the busy timeout.
    core::ExponentialBackoff backoff(std::chrono::milliseconds(2), std::chrono::milliseconds(50));
    for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"}) {
      RFS_RETURN_IF_ERROR(core::RetryTransient(
          core::SystemClock::Instance(), backoff,
          {.max_attempts = busy_.timeout.count() > 0 ? 0 : 1, .within = busy_.timeout},
          [&] { return Exec(pragma, StrCat("'", pragma, "' on ", path_)); },
          [](const absl::Status& status) { return absl::IsUnavailable(status); }));
    }
    return absl::OkStatus();
  }

  absl::Status Setup() override {
    std::lock_guard lock(mu_);
    RFS_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "begin setup"));
    absl::Status status = Exec(ForTable(kSchema, table_).c_str(), "create schema");
    if (status.ok()) status = AddMissingColumns();
    if (!status.ok()) {
      Exec("ROLLBACK", "rollback").IgnoreError();
      return status;
    }
    return Exec("COMMIT", "commit setup");
  }

  // Files written before a column existed get it (NULL for every item), inside Setup's transaction.
  absl::Status AddMissingColumns() {
    for (const char* column : kProgressColumns) {
      Statement find(statements_, "SELECT 1 FROM pragma_table_info('work_items') WHERE name = ?1");
      RFS_RETURN_IF_ERROR(find.status("read schema"));
      find.Bind(1, column);
      RFS_ASSIGN_OR_RETURN(bool present, find.Step("read schema"));
      if (present) continue;
      RFS_RETURN_IF_ERROR(
          Exec(ForTable(StrCat("ALTER TABLE work_items ADD COLUMN ", column, " INTEGER"), table_)
                   .c_str(),
               StrCat("add column ", column)));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> CountIncompleteWorkItems() override {
    std::lock_guard lock(mu_);
    Statement count(statements_, "SELECT COUNT(*) FROM work_items WHERE completed_at_ms IS NULL");
    RFS_RETURN_IF_ERROR(count.status("count"));
    RFS_ASSIGN_OR_RETURN(bool row, count.Step("count"));
    return row ? count.Int(0) : 0;
  }

  absl::StatusOr<std::optional<WorkItemState>> GetWorkItem(std::string_view id) override {
    std::lock_guard lock(mu_);
    return Get(id);
  }

  absl::StatusOr<std::vector<WorkItemState>> ListWorkItems() override {
    std::lock_guard lock(mu_);
    Statement list(statements_, StrCat("SELECT ", kColumns, " FROM work_items ORDER BY id"));
    RFS_RETURN_IF_ERROR(list.status("list"));
    std::vector<WorkItemState> items;
    while (true) {
      RFS_ASSIGN_OR_RETURN(bool row, list.Step("list work items"));
      if (!row) break;
      items.push_back(ReadRow(list));
    }
    return items;
  }

 protected:
  absl::StatusOr<StoreTime> ReadStoreTime() override {
    // The SQLite host's clock is exact for every process on it: no uncertainty interval.
    const TimePoint store = store_clock_->Now();
    return StoreTime{store, store, clock().Now()};
  }

  absl::StatusOr<bool> InsertItem(const WorkItemState& state) override {
    std::lock_guard lock(mu_);
    // One statement is its own transaction; ON CONFLICT DO NOTHING keeps an existing item as is.
    Statement insert(statements_,
                     "INSERT INTO work_items (id, next_exponent, creator) VALUES (?1, ?2, ?3) "
                     "ON CONFLICT (id) DO NOTHING");
    RFS_RETURN_IF_ERROR(insert.status("insert"));
    insert.Bind(1, state.id);
    insert.Bind(2, int64_t{state.next_lease_exponent});
    insert.Bind(3, state.creator_id);
    RFS_RETURN_IF_ERROR(insert.Step(StrCat("create '", state.id, "'")).status());
    return sqlite3_changes(db_) == 1;
  }

  absl::Status MutateItem(std::string_view id, const internal::ItemMutation& mutation) override {
    std::lock_guard lock(mu_);
    return InTransaction([&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(std::optional<WorkItemState> state, Get(id));
      if (!state) return absl::NotFoundError(StrCat("no work item '", id, "' in ", path_));
      // Read the time inside the transaction: waiting for the lock must not age the reading.
      RFS_ASSIGN_OR_RETURN(StoreTime now, ReadStoreTime());
      RFS_ASSIGN_OR_RETURN(bool write, mutation(*state, now));
      return write ? Put(*state) : absl::OkStatus();
    });
  }

  absl::StatusOr<internal::TryOutcome> TryAcquireNext(Duration initial_lease) override {
    std::lock_guard lock(mu_);
    internal::TryOutcome outcome = NoAvailableWork{};
    RFS_RETURN_IF_ERROR(InTransaction([&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(StoreTime now, ReadCheckedStoreTime());
      // Random among the kPickWindow longest-expired available items (the partial index serves
      // them in expiry order without a scan); if fewer are available, the offset finds none and
      // the first is taken. Cheap at any table size, unlike ORDER BY random().
      Statement pick(statements_, StrCat("SELECT ", kColumns,
                                         " FROM work_items WHERE completed_at_ms IS NULL AND "
                                         "expiration_ms < ?1 ORDER BY expiration_ms LIMIT 1 "
                                         "OFFSET ?2"));
      RFS_RETURN_IF_ERROR(pick.status("pick"));
      pick.Bind(1, FloorMillis(now.earliest));
      pick.Bind(2, RandomOffset());
      RFS_ASSIGN_OR_RETURN(bool found, pick.Step("pick an available item"));
      if (!found) {
        pick.Reset();
        pick.Bind(1, FloorMillis(now.earliest));
        pick.Bind(2, int64_t{0});
        RFS_ASSIGN_OR_RETURN(found, pick.Step("pick an available item"));
      }
      if (found) {
        WorkItemState state = ReadRow(pick);
        Lease lease = BeginLease(state, now, initial_lease);
        RFS_RETURN_IF_ERROR(Put(state));
        outcome = internal::Grant{std::move(lease), std::move(state)};
        return absl::OkStatus();
      }
      Statement summary(statements_,
                        "SELECT COUNT(*), MIN(expiration_ms) FROM work_items "
                        "WHERE completed_at_ms IS NULL");
      RFS_RETURN_IF_ERROR(summary.status("summary"));
      RFS_ASSIGN_OR_RETURN(bool row, summary.Step("summarise incomplete items"));
      if (row && summary.Int(0) > 0) outcome = LeasedUntil(FromMillis(summary.Int(1)), now);
      return absl::OkStatus();
    }));
    return outcome;
  }

 private:
  absl::Status Exec(const char* sql, std::string_view what) {
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? absl::OkStatus() : SqliteError(db_, rc, what);
  }

  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT. IMMEDIATE takes the write lock before the
  // first read, so the read-decide-write of `body` is atomic against every other process, and no
  // transaction can deadlock upgrading a read lock (which DEFERRED transactions can).
  template <typename Body>
  absl::Status InTransaction(Body&& body) {
    RFS_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "begin transaction"));
    absl::Status status = body();
    if (status.ok()) status = Exec("COMMIT", "commit");
    if (!status.ok() && !sqlite3_get_autocommit(db_)) Exec("ROLLBACK", "rollback").IgnoreError();
    return status;
  }

  absl::StatusOr<std::optional<WorkItemState>> Get(std::string_view id) {
    Statement get(statements_, StrCat("SELECT ", kColumns, " FROM work_items WHERE id = ?1"));
    RFS_RETURN_IF_ERROR(get.status("get"));
    get.Bind(1, id);
    RFS_ASSIGN_OR_RETURN(bool found, get.Step(StrCat("read '", id, "'")));
    if (!found) return std::nullopt;
    return ReadRow(get);
  }

  absl::Status Put(const WorkItemState& state) {
    Statement put(statements_,
                  "UPDATE work_items SET next_exponent = ?2, holder = ?3, expiration_ms = ?4, "
                  "generation = ?5, completed_at_ms = ?6, successors = ?7, "
                  "successor_exponent = ?8, progress_cursor = ?9, progress_docs = ?10, "
                  "progress_bytes = ?11, progress_at_ms = ?12 WHERE id = ?1");
    RFS_RETURN_IF_ERROR(put.status("update"));
    put.Bind(1, state.id);
    put.Bind(2, int64_t{state.next_lease_exponent});
    put.Bind(3, state.lease_holder);
    put.Bind(4, FloorMillis(state.lease_expires_at));
    put.Bind(5, state.lease_generation);
    if (state.completed_at) {
      put.Bind(6, FloorMillis(*state.completed_at));
    } else {
      put.BindNull(6);
    }
    put.Bind(7, internal::JoinWorkItemIds(state.successor_ids));
    put.Bind(8, int64_t{state.successor_lease_exponent});
    if (state.progress) {
      put.Bind(9, static_cast<int64_t>(state.progress->next_cursor));
      put.Bind(10, static_cast<int64_t>(state.progress->docs));
      put.Bind(11, static_cast<int64_t>(state.progress->bytes));
      put.Bind(12, FloorMillis(state.progress_at));
    } else {
      for (int column = 9; column <= 12; ++column) put.BindNull(column);
    }
    return put.Step(StrCat("update '", state.id, "'")).status();
  }

  int64_t RandomOffset() {
    return std::uniform_int_distribution<int64_t>(0, kPickWindow - 1)(rng_);
  }

  std::mutex mu_;  // Guards everything below: one connection, one transaction at a time.
  sqlite3* db_;
  StatementCache statements_;
  core::IClock* store_clock_;
  std::string path_;
  std::string table_;
  BusyWait busy_;
  std::mt19937_64 rng_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IWorkCoordinator>> SqliteWorkCoordinator::Open(
    SqliteWorkCoordinatorOptions options) {
  RFS_RETURN_IF_ERROR(internal::CoordinatorBase::ValidateOptions(options));
  if (options.path.empty()) return absl::InvalidArgumentError("sqlite path is required");
  RFS_RETURN_IF_ERROR(internal::ValidateTableName(options.table));
  sqlite3* db = nullptr;
  // FULLMUTEX is belt and braces: the coordinator serialises its connection anyway.
  const int rc =
      sqlite3_open_v2(options.path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(db, rc, StrCat("open ", options.path));
    sqlite3_close_v2(db);
    return status;
  }
  auto coordinator = std::make_unique<SqliteCoordinator>(std::move(options), db);
  RFS_RETURN_IF_ERROR(coordinator->Configure());
  return std::unique_ptr<IWorkCoordinator>(std::move(coordinator));
}

}  // namespace rfs::coordination
