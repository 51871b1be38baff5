#include "rfs/console/console_store.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <sqlite3.h>

#include "rfs/coordination/postgres_connection.hpp"
#include "rfs/coordination/postgres_work_coordinator.hpp"
#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/coordination/verify_records.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/core/url_redaction.hpp"
#include "rfs/net/aws_sigv4.hpp"

namespace rfs::console {
namespace {

using core::StrCat;

// The one SQL dialect both databases speak for the console's own tables: '?' placeholders (turned
// into $n for PostgreSQL), BIGINT and TEXT columns, INSERT ... ON CONFLICT DO NOTHING RETURNING.
using SqlParam = std::optional<std::string>;
using SqlRow = std::vector<std::optional<std::string>>;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS console_sessions (name TEXT PRIMARY KEY, token_sha256 TEXT NOT "
    "NULL, work_table TEXT NOT NULL, created_at_ms BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS console_work_item_info (session TEXT NOT NULL, id TEXT NOT NULL, "
    "index_name TEXT, shard_number BIGINT, document_count BIGINT, total_size_bytes BIGINT, "
    "documents_failed BIGINT NOT NULL DEFAULT 0, created_at_ms BIGINT NOT NULL, "
    "PRIMARY KEY (session, id))",
    // Added after console_work_item_info, so a table of its own rather than new columns there.
    "CREATE TABLE IF NOT EXISTS console_item_outcomes (session TEXT NOT NULL, id TEXT NOT NULL, "
    "rejected BIGINT NOT NULL, not_convertible BIGINT NOT NULL, transform_failed BIGINT NOT "
    "NULL, transform_dropped BIGINT NOT NULL, rebuilt BIGINT NOT NULL, rebuilt_inexact BIGINT "
    "NOT NULL, already_newer BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (session, id))",
};

// Columns added to a table after its first release: a store created before has the table without
// them, so each is added when missing (CREATE TABLE IF NOT EXISTS leaves an old table as it is).
struct AddedColumn {
  const char* table;
  const char* column;
  const char* definition;
};
constexpr AddedColumn kAddedColumns[] = {
    {"console_item_outcomes", "already_newer", "BIGINT NOT NULL DEFAULT 0"},
};

class SqlDatabase {
 public:
  virtual ~SqlDatabase() = default;
  virtual absl::StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                                    const std::vector<SqlParam>& params) = 0;
  /// Runs the schema statements once, safely against other console instances doing the same.
  virtual absl::Status CreateSchema() = 0;
};

class SqliteDatabase final : public SqlDatabase {
 public:
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& path) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(
        path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
        nullptr);
    auto database = std::unique_ptr<SqliteDatabase>(new SqliteDatabase(db, path));
    if (rc != SQLITE_OK) return database->Error(rc, "open");
    sqlite3_busy_timeout(db, 30'000);
    RFS_RETURN_IF_ERROR(database->Query("PRAGMA journal_mode=WAL", {}).status());
    return database;
  }
  ~SqliteDatabase() override { sqlite3_close_v2(db_); }

  absl::StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                            const std::vector<SqlParam>& params) override {
    std::lock_guard lock(mu_);
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc, sql);
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> owned(stmt, &sqlite3_finalize);
    for (size_t i = 0; i < params.size(); ++i) {
      rc = params[i] ? sqlite3_bind_text(stmt, static_cast<int>(i + 1), params[i]->data(),
                                         static_cast<int>(params[i]->size()), SQLITE_TRANSIENT)
                     : sqlite3_bind_null(stmt, static_cast<int>(i + 1));
      if (rc != SQLITE_OK) return Error(rc, sql);
    }
    std::vector<SqlRow> rows;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      SqlRow& row = rows.emplace_back();
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        if (sqlite3_column_type(stmt, c) == SQLITE_NULL) {
          row.emplace_back();
        } else {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
          row.emplace_back(std::string(text, sqlite3_column_bytes(stmt, c)));
        }
      }
    }
    if (rc != SQLITE_DONE) return Error(rc, sql);
    return rows;
  }

  absl::Status CreateSchema() override {
    for (const char* statement : kSchema) RFS_RETURN_IF_ERROR(Query(statement, {}).status());
    for (const AddedColumn& added : kAddedColumns) {
      auto has_column = [&]() -> absl::StatusOr<bool> {
        RFS_ASSIGN_OR_RETURN(auto rows,
                             Query("SELECT 1 FROM pragma_table_info(?) WHERE name = ?",
                                   {std::string(added.table), std::string(added.column)}));
        return !rows.empty();
      };
      RFS_ASSIGN_OR_RETURN(const bool present, has_column());
      if (present) continue;
      absl::Status altered = Query(StrCat("ALTER TABLE ", added.table, " ADD COLUMN ", added.column,
                                          " ", added.definition),
                                   {})
                                 .status();
      // Another console may have added it between the look and the change.
      if (!altered.ok()) {
        RFS_ASSIGN_OR_RETURN(const bool added_meanwhile, has_column());
        if (!added_meanwhile) return altered;
      }
    }
    return absl::OkStatus();
  }

 private:
  SqliteDatabase(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  absl::Status Error(int rc, std::string_view what) const {
    const std::string message = StrCat("console store sqlite:", path_, ": ", what, ": ",
                                       db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    const int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_CANTOPEN ||
        primary == SQLITE_IOERR || primary == SQLITE_FULL) {
      return absl::UnavailableError(message);
    }
    return absl::InternalError(message);
  }

  std::mutex mu_;
  sqlite3* db_;
  std::string path_;
};

// '?' -> $1, $2, ... (the console's statements hold no '?' inside literals).
std::string ToPostgresPlaceholders(std::string_view sql) {
  std::string out;
  int n = 0;
  for (char c : sql) {
    if (c == '?') {
      out += StrCat("$", ++n);
    } else {
      out += c;
    }
  }
  return out;
}

class PostgresDatabase final : public SqlDatabase {
 public:
  explicit PostgresDatabase(std::string uri) : session_(std::move(uri)) {}

  absl::StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                            const std::vector<SqlParam>& params) override {
    std::vector<SqlRow> rows;
    RFS_RETURN_IF_ERROR(Run(sql, [&]() -> absl::Status {
      RFS_ASSIGN_OR_RETURN(coordination::PostgresResult result,
                           session_.connection().Exec(ToPostgresPlaceholders(sql), params));
      for (int r = 0; r < result.rows(); ++r) {
        SqlRow& row = rows.emplace_back();
        for (int c = 0; c < result.columns(); ++c) {
          row.push_back(result.IsNull(r, c) ? std::nullopt
                                            : std::optional<std::string>(result.Text(r, c)));
        }
      }
      return absl::OkStatus();
    }));
    return rows;
  }

  absl::Status CreateSchema() override {
    // Concurrent CREATE TABLE IF NOT EXISTS can collide in the catalog: serialise on a lock.
    return Run("create schema", [&]() -> absl::Status {
      RFS_RETURN_IF_ERROR(
          session_.connection().Exec("SELECT pg_advisory_xact_lock(7240017)").status());
      for (const char* statement : kSchema) {
        RFS_RETURN_IF_ERROR(session_.connection().Exec(statement).status());
      }
      for (const AddedColumn& added : kAddedColumns) {
        RFS_RETURN_IF_ERROR(
            session_.connection()
                .Exec(StrCat("ALTER TABLE ", added.table, " ADD COLUMN IF NOT EXISTS ",
                             added.column, " ", added.definition))
                .status());
      }
      return absl::OkStatus();
    });
  }

 private:
  // One transaction on the session's connection. Errors keep the connection's status
  // (Unavailable for a lost connection or a serialization failure: retry).
  absl::Status Run(std::string_view what, absl::FunctionRef<absl::Status()> body) {
    std::lock_guard lock(mu_);
    return InContext(session_.InTransaction(body), what);
  }

  static absl::Status InContext(const absl::Status& status, std::string_view what) {
    if (status.ok()) return status;
    return absl::Status(status.code(),
                        StrCat("console store postgresql: ", what, ": ", status.message()));
  }

  std::mutex mu_;
  coordination::PostgresSession session_;  // guarded by mu_
};

int64_t Millis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
TimePoint FromMillis(int64_t millis) { return TimePoint(std::chrono::milliseconds(millis)); }

std::optional<int64_t> ToInt(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return value;
}

SqlParam Text(std::string_view s) { return std::string(s); }
SqlParam Int(std::optional<int64_t> v) { return v ? SqlParam(std::to_string(*v)) : std::nullopt; }

// A session's table: "wi_" and 24 hex digits of the name's SHA-256, so that any valid session name
// gives a valid, distinct table name.
std::string WorkTableFor(std::string_view session) {
  return StrCat("wi_", net::Sha256Hex(session).substr(0, 24));
}

thread_local int successor_stop_step = -1;

class SqlConsoleStore final : public ConsoleStore {
 public:
  SqlConsoleStore(ConsoleStoreOptions options, std::unique_ptr<SqlDatabase> db, bool postgres,
                  std::string location)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock : &core::SystemClock::Instance()),
        db_(std::move(db)),
        postgres_(postgres),
        location_(std::move(location)) {}

  std::string description() const override { return location_; }

  absl::StatusOr<bool> CreateSession(std::string_view name,
                                     std::string_view token_sha256) override {
    RFS_RETURN_IF_ERROR(ValidateSessionName(name));
    const std::string table = WorkTableFor(name);
    // The table first: a session row always has its table (a crash in between leaves an unused
    // table that the next creation of that name takes over).
    SessionRecord record{std::string(name), std::string(token_sha256), table, clock_->Now()};
    RFS_ASSIGN_OR_RETURN(auto coordinator, Open(record, "console"));
    RFS_RETURN_IF_ERROR(coordinator->Setup());
    RFS_ASSIGN_OR_RETURN(
        auto rows,
        db_->Query("INSERT INTO console_sessions (name, token_sha256, work_table, created_at_ms) "
                   "VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING name",
                   {Text(name), Text(token_sha256), Text(table), Int(Millis(record.created_at))}));
    return !rows.empty();
  }

  absl::StatusOr<std::optional<SessionRecord>> GetSession(std::string_view name) override {
    RFS_ASSIGN_OR_RETURN(auto rows,
                         db_->Query("SELECT name, token_sha256, work_table, created_at_ms FROM "
                                    "console_sessions WHERE name = ?",
                                    {Text(name)}));
    if (rows.empty()) return std::nullopt;
    return ToSession(rows[0]);
  }

  absl::StatusOr<std::vector<SessionRecord>> ListSessions() override {
    RFS_ASSIGN_OR_RETURN(auto rows,
                         db_->Query("SELECT name, token_sha256, work_table, created_at_ms FROM "
                                    "console_sessions ORDER BY name",
                                    {}));
    std::vector<SessionRecord> sessions;
    for (const auto& row : rows) sessions.push_back(ToSession(row));
    return sessions;
  }

  absl::StatusOr<bool> DeleteSession(std::string_view name) override {
    RFS_ASSIGN_OR_RETURN(std::optional<SessionRecord> session, GetSession(name));
    if (!session) return false;
    {
      // Every space's coordinators (the work table and its "_wf" twin): a session created again
      // under the same name gets the same tables, which must be set up anew.
      auto of_session = [&](const Key& key) { return key.first.starts_with(session->work_table); };
      std::lock_guard lock(pool_mu_);
      for (auto it = pool_.begin(); it != pool_.end();) {
        it = of_session(it->first) ? pool_.erase(it) : std::next(it);
      }
      lru_.remove_if(of_session);
    }
    // The session row last: until it is gone the session is visible and a retry finishes this.
    // The verification rounds' tables ("_vN") are named by the rounds begun in the "_wf" table
    // (which may not exist: a session without RfsWorker).
    std::vector<std::string> suffixes{"", "_wf"};
    auto rounds = db_->Query(StrCat("SELECT id FROM ", session->work_table, "_wf WHERE id LIKE '",
                                    coordination::kVerifyRoundPrefix, "%'"),
                             {});
    if (rounds.ok()) {
      for (const SqlRow& row : *rounds) {
        const std::string id = row[0].value_or("");
        const std::string round = id.substr(coordination::kVerifyRoundPrefix.size());
        if (!round.empty() && round.find_first_not_of("0123456789") == std::string::npos) {
          suffixes.push_back(StrCat("_v", round));
        }
      }
    }
    for (const std::string& suffix : suffixes) {
      RFS_RETURN_IF_ERROR(
          db_->Query(StrCat("DROP TABLE IF EXISTS ", session->work_table, suffix), {}).status());
    }
    RFS_RETURN_IF_ERROR(
        db_->Query("DELETE FROM console_work_item_info WHERE session = ?", {Text(name)}).status());
    RFS_RETURN_IF_ERROR(
        db_->Query("DELETE FROM console_item_outcomes WHERE session = ?", {Text(name)}).status());
    RFS_RETURN_IF_ERROR(
        db_->Query("DELETE FROM console_sessions WHERE name = ?", {Text(name)}).status());
    return true;
  }

  absl::Status PutWorkItemInfo(const SessionRecord& session, const WorkItemInfo& info) override {
    return db_
        ->Query(
            "INSERT INTO console_work_item_info (session, id, index_name, shard_number, "
            "document_count, total_size_bytes, documents_failed, created_at_ms) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session, id) DO NOTHING",
            {Text(session.name), Text(info.id), info.index_name, Int(info.shard_number),
             Int(info.document_count), Int(info.total_size_bytes), Int(info.documents_failed),
             Int(Millis(info.created_at))})
        .status();
  }

  absl::Status SetDocumentsFailed(const SessionRecord& session, std::string_view id,
                                  int64_t documents_failed) override {
    return db_
        ->Query(
            "INSERT INTO console_work_item_info (session, id, documents_failed, "
            "created_at_ms) VALUES (?, ?, ?, ?) ON CONFLICT (session, id) DO UPDATE SET "
            "documents_failed = excluded.documents_failed",
            {Text(session.name), Text(id), Int(documents_failed), Int(Millis(clock_->Now()))})
        .status();
  }

  absl::Status SetItemOutcomes(const SessionRecord& session, std::string_view id,
                               const coordination::ItemOutcomes& o) override {
    RFS_RETURN_IF_ERROR(SetDocumentsFailed(session, id, static_cast<int64_t>(o.failed())));
    auto n = [](uint64_t v) { return Int(static_cast<int64_t>(v)); };
    return db_
        ->Query(
            "INSERT INTO console_item_outcomes (session, id, rejected, not_convertible, "
            "transform_failed, transform_dropped, rebuilt, rebuilt_inexact, already_newer) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session, id) DO UPDATE SET rejected = "
            "excluded.rejected, not_convertible = excluded.not_convertible, transform_failed = "
            "excluded.transform_failed, transform_dropped = excluded.transform_dropped, rebuilt = "
            "excluded.rebuilt, rebuilt_inexact = excluded.rebuilt_inexact, already_newer = "
            "excluded.already_newer",
            {Text(session.name), Text(id), n(o.rejected), n(o.not_convertible),
             n(o.transform_failed), n(o.transform_dropped), n(o.rebuilt), n(o.rebuilt_inexact),
             n(o.already_newer)})
        .status();
  }

  absl::StatusOr<std::vector<WorkItemInfo>> ListWorkItemInfo(
      const SessionRecord& session) override {
    return ReadInfo("WHERE i.session = ? ORDER BY i.id", {Text(session.name)});
  }

  absl::StatusOr<std::optional<WorkItemInfo>> GetWorkItemInfo(const SessionRecord& session,
                                                              std::string_view id) override {
    RFS_ASSIGN_OR_RETURN(
        auto infos, ReadInfo("WHERE i.session = ? AND i.id = ?", {Text(session.name), Text(id)}));
    if (infos.empty()) return std::nullopt;
    return std::move(infos[0]);
  }

  absl::StatusOr<std::vector<WorkItemInfo>> ReadInfo(std::string_view where,
                                                     const std::vector<SqlParam>& params) {
    RFS_ASSIGN_OR_RETURN(auto rows,
                         db_->Query(StrCat("SELECT i.id, i.index_name, i.shard_number, "
                                           "i.document_count, i.total_size_bytes, "
                                           "i.documents_failed, i.created_at_ms, o.rejected, "
                                           "o.not_convertible, o.transform_failed, "
                                           "o.transform_dropped, o.rebuilt, o.rebuilt_inexact, "
                                           "o.already_newer "
                                           "FROM console_work_item_info i LEFT JOIN "
                                           "console_item_outcomes o ON o.session = i.session AND "
                                           "o.id = i.id ",
                                           where),
                                    params));
    std::vector<WorkItemInfo> infos;
    for (const auto& row : rows) {
      WorkItemInfo& info = infos.emplace_back();
      info.id = row[0].value_or("");
      info.index_name = row[1];
      info.shard_number = ToInt(row[2]);
      info.document_count = ToInt(row[3]);
      info.total_size_bytes = ToInt(row[4]);
      info.documents_failed = ToInt(row[5]).value_or(0);
      info.created_at = FromMillis(ToInt(row[6]).value_or(0));
      if (row[7]) {
        coordination::ItemOutcomes& o = info.outcomes.emplace();
        // The SELECT's outcome columns, one per field and in the fields' order.
        static_assert(std::size(coordination::kItemOutcomeFields) == 7);
        size_t column = 7;
        for (const auto& [name, field] : coordination::kItemOutcomeFields) {
          o.*field = static_cast<uint64_t>(std::max<int64_t>(0, ToInt(row[column++]).value_or(0)));
        }
      }
    }
    return infos;
  }

  absl::StatusOr<std::shared_ptr<coordination::IWorkCoordinator>> Coordinator(
      const SessionRecord& session, std::string_view worker_id) override {
    const Key key{session.work_table, std::string(worker_id)};
    {
      std::lock_guard lock(pool_mu_);
      if (auto it = pool_.find(key); it != pool_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.position);
        return it->second.coordinator;
      }
    }
    // Opening may take a connection round trip: outside the pool's lock.
    RFS_ASSIGN_OR_RETURN(std::shared_ptr<coordination::IWorkCoordinator> opened,
                         Open(session, worker_id));
    // Idempotent: creates the table of a space used for the first time.
    RFS_RETURN_IF_ERROR(opened->Setup());
    std::lock_guard lock(pool_mu_);
    if (auto it = pool_.find(key); it != pool_.end()) return it->second.coordinator;
    lru_.push_front(key);
    pool_.emplace(key, Entry{opened, lru_.begin()});
    while (pool_.size() > std::max<size_t>(options_.max_open_coordinators, 1)) {
      pool_.erase(lru_.back());
      lru_.pop_back();
    }
    return opened;
  }

 private:
  using Key = std::pair<std::string, std::string>;  // (work table, worker id)
  struct Entry {
    std::shared_ptr<coordination::IWorkCoordinator> coordinator;
    std::list<Key>::iterator position;
  };

  static SessionRecord ToSession(const SqlRow& row) {
    return SessionRecord{row[0].value_or(""), row[1].value_or(""), row[2].value_or(""),
                         FromMillis(ToInt(row[3]).value_or(0))};
  }

  absl::StatusOr<std::unique_ptr<coordination::IWorkCoordinator>> Open(
      const SessionRecord& session, std::string_view worker_id) const {
    coordination::WorkCoordinatorOptions common;
    common.worker_id = std::string(worker_id);
    common.clock = clock_;
    common.successor_step_hook = [](coordination::SuccessorStep step) {
      if (successor_stop_step >= 0 && static_cast<int>(step) >= successor_stop_step) {
        return absl::AbortedError("stopped before this checkpoint step, as the client asked");
      }
      return absl::OkStatus();
    };
    if (postgres_) {
      coordination::PostgresWorkCoordinatorOptions options;
      static_cast<coordination::WorkCoordinatorOptions&>(options) = common;
      options.connection = options_.uri;
      options.table = session.work_table;
      options.store_clock = options_.store_clock;
      return coordination::PostgresWorkCoordinator::Open(std::move(options));
    }
    coordination::SqliteWorkCoordinatorOptions options;
    static_cast<coordination::WorkCoordinatorOptions&>(options) = common;
    options.path = location_.substr(std::string_view("sqlite:").size());
    options.table = session.work_table;
    options.store_clock = options_.store_clock;
    return coordination::SqliteWorkCoordinator::Open(std::move(options));
  }

  const ConsoleStoreOptions options_;
  core::IClock* const clock_;
  const std::unique_ptr<SqlDatabase> db_;
  const bool postgres_;
  const std::string location_;

  std::mutex pool_mu_;
  std::map<Key, Entry> pool_;
  std::list<Key> lru_;  // Most recently used first.
};

}  // namespace

absl::Status ValidateSessionName(std::string_view name) {
  const bool ok =
      !name.empty() && name.size() <= 64 && name[0] != '.' && name[0] != '-' &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat("session names are 1 to 64 letters, digits, '-', '_' or '.', not starting with '-' "
             "or '.'; got '",
             name.substr(0, 80), "'"));
}

ScopedSuccessorStop::ScopedSuccessorStop(coordination::SuccessorStep step)
    : previous_(successor_stop_step) {
  successor_stop_step = static_cast<int>(step);
}
ScopedSuccessorStop::~ScopedSuccessorStop() { successor_stop_step = previous_; }

absl::StatusOr<std::unique_ptr<ConsoleStore>> ConsoleStore::Open(ConsoleStoreOptions options) {
  const std::string uri = options.uri;
  std::unique_ptr<SqlDatabase> db;
  bool postgres = false;
  std::string location;
  if (uri.starts_with("sqlite:")) {
    const std::string path = uri.substr(7);
    if (path.empty()) return absl::InvalidArgumentError("--store sqlite:PATH needs a path");
    RFS_ASSIGN_OR_RETURN(db, SqliteDatabase::Open(path));
    location = uri;
  } else if (uri.starts_with("postgresql://") || uri.starts_with("postgres://")) {
    db = std::make_unique<PostgresDatabase>(uri);
    postgres = true;
    location = core::WithoutPassword(uri);
  } else {
    return absl::InvalidArgumentError(StrCat(
        "a console store is sqlite:PATH or postgresql://[user[:password]@]host[:port]/database; "
        "got '",
        core::WithoutPassword(uri), "'"));
  }
  RFS_RETURN_IF_ERROR(db->CreateSchema());
  return std::unique_ptr<ConsoleStore>(
      new SqlConsoleStore(std::move(options), std::move(db), postgres, std::move(location)));
}

}  // namespace rfs::console
