#include "rfs/coordination/postgres_connection.hpp"

#include <charconv>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"

#include <dlfcn.h>
#include <libpq-fe.h>  // declarations only: the functions are called through Libpq()'s table

namespace rfs::coordination {
namespace {

using core::StrCat;

// The soname of libpq since PostgreSQL 8.2 (Debian's libpq5).
constexpr const char* kLibpq = "libpq.so.5";

// How long connecting to each address may take (libpq's connect_timeout; PGCONNECT_TIMEOUT, when
// set, wins).
constexpr const char* kConnectTimeoutSeconds = "10";
// A server gone silent under an open connection is given up after about a minute: keepalives
// from 30 s idle, every 10 s, 3 unanswered; data unacknowledged for 60 s ends the connection.
// tcp_user_timeout came with libpq 12; an older one refuses a keyword it does not know.
struct ConnectionDefault {
  const char* keyword;
  const char* value;
  int since_version;  // PQlibVersion()
};
constexpr ConnectionDefault kConnectionDefaults[] = {
    {"keepalives_idle", "30", 0},
    {"keepalives_interval", "10", 0},
    {"keepalives_count", "3", 0},
    {"tcp_user_timeout", "60000", 120000},
};

struct LibpqApi {
  std::string error;  // why loading failed; empty once every function was found
  decltype(&::PQlibVersion) lib_version = nullptr;
  decltype(&::PQconninfoParse) conninfo_parse = nullptr;
  decltype(&::PQconninfoFree) conninfo_free = nullptr;
  decltype(&::PQconnectdbParams) connectdb_params = nullptr;
  decltype(&::PQstatus) status = nullptr;
  decltype(&::PQerrorMessage) error_message = nullptr;
  decltype(&::PQfinish) finish = nullptr;
  decltype(&::PQsetNoticeProcessor) set_notice_processor = nullptr;
  decltype(&::PQexec) exec = nullptr;
  decltype(&::PQexecParams) exec_params = nullptr;
  decltype(&::PQtransactionStatus) transaction_status = nullptr;
  decltype(&::PQresultStatus) result_status = nullptr;
  decltype(&::PQresultErrorField) result_error_field = nullptr;
  decltype(&::PQresultErrorMessage) result_error_message = nullptr;
  decltype(&::PQntuples) ntuples = nullptr;
  decltype(&::PQnfields) nfields = nullptr;
  decltype(&::PQgetisnull) getisnull = nullptr;
  decltype(&::PQgetvalue) getvalue = nullptr;
  decltype(&::PQgetlength) getlength = nullptr;
  decltype(&::PQcmdTuples) cmd_tuples = nullptr;
  decltype(&::PQclear) clear = nullptr;
};

LibpqApi LoadLibpq() {
  LibpqApi api;
  // Never closed: connections may be opened again at any time, and libpq keeps global state.
  void* handle = ::dlopen(kLibpq, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    api.error = why != nullptr ? why : "not found";
    return api;
  }
  auto bind = [&](auto& function, const char* name) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(::dlsym(handle, name));
    if (function == nullptr && api.error.empty()) api.error = StrCat("it has no ", name);
  };
  bind(api.lib_version, "PQlibVersion");
  bind(api.conninfo_parse, "PQconninfoParse");
  bind(api.conninfo_free, "PQconninfoFree");
  bind(api.connectdb_params, "PQconnectdbParams");
  bind(api.status, "PQstatus");
  bind(api.error_message, "PQerrorMessage");
  bind(api.finish, "PQfinish");
  bind(api.set_notice_processor, "PQsetNoticeProcessor");
  bind(api.exec, "PQexec");
  bind(api.exec_params, "PQexecParams");
  bind(api.transaction_status, "PQtransactionStatus");
  bind(api.result_status, "PQresultStatus");
  bind(api.result_error_field, "PQresultErrorField");
  bind(api.result_error_message, "PQresultErrorMessage");
  bind(api.ntuples, "PQntuples");
  bind(api.nfields, "PQnfields");
  bind(api.getisnull, "PQgetisnull");
  bind(api.getvalue, "PQgetvalue");
  bind(api.getlength, "PQgetlength");
  bind(api.cmd_tuples, "PQcmdTuples");
  bind(api.clear, "PQclear");
  return api;
}

const LibpqApi& Libpq() {
  // Never destroyed: a connection may be closed by a static's destructor at exit.
  static const LibpqApi* const api = new LibpqApi(LoadLibpq());
  return *api;
}

bool IsSet(const char* value) { return value != nullptr && *value != '\0'; }

// Whether `connection` names a service of pg_service.conf, or PGSERVICE does.
bool UsesService(const LibpqApi& api, const std::string& connection) {
  if (IsSet(std::getenv("PGSERVICE"))) return true;
  // A plain database name is no connection string: libpq does not parse it either.
  PQconninfoOption* options = api.conninfo_parse(connection.c_str(), nullptr);
  if (options == nullptr) return false;
  bool service = false;
  for (const PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
    if (std::string_view(option->keyword) == "service" && IsSet(option->val)) service = true;
  }
  api.conninfo_free(options);
  return service;
}

// libpq writes the server's notices ("relation ... already exists, skipping") to stderr by
// default; the stores' statements expect them.
void IgnoreNotice(void*, const char*) {}

// libpq's messages end with a newline, some span several lines (the statement's position).
std::string OneLine(std::string_view message) {
  std::string out(message);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return out;
}

absl::Status StatusForSqlState(std::string_view state, std::string message) {
  if (state.starts_with("40") || state.starts_with("08") || state.starts_with("57P") ||
      state == "55P03") {
    return absl::UnavailableError(std::move(message));
  }
  if (state.starts_with("28") || state == "42501") {
    return absl::PermissionDeniedError(std::move(message));
  }
  if (state.starts_with("53")) return absl::ResourceExhaustedError(std::move(message));
  return absl::InternalError(std::move(message));
}

}  // namespace

PostgresParam PostgresInt(std::optional<int64_t> value) {
  if (!value) return std::nullopt;
  return std::to_string(*value);
}

void PostgresResult::Clear::operator()(pg_result* result) const { Libpq().clear(result); }

int PostgresResult::rows() const { return Libpq().ntuples(result_.get()); }

int PostgresResult::columns() const { return Libpq().nfields(result_.get()); }

bool PostgresResult::IsNull(int row, int column) const {
  return Libpq().getisnull(result_.get(), row, column) != 0;
}

std::string_view PostgresResult::Text(int row, int column) const {
  const LibpqApi& api = Libpq();
  return std::string_view(api.getvalue(result_.get(), row, column),
                          static_cast<size_t>(api.getlength(result_.get(), row, column)));
}

absl::StatusOr<int64_t> PostgresResult::Int(int row, int column) const {
  if (row < 0 || row >= rows() || column < 0 || column >= columns()) {
    return absl::InternalError(
        StrCat("postgresql: no value at row ", row, ", column ", column, " of the result"));
  }
  if (IsNull(row, column)) {
    return absl::InternalError(StrCat("postgresql: column ", column, " is NULL, not an integer"));
  }
  const std::string_view text = Text(row, column);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return absl::InternalError(
        StrCat("postgresql: column ", column, " holds '", text.substr(0, 64), "', not an integer"));
  }
  return value;
}

int64_t PostgresResult::affected_rows() const {
  const std::string_view text = Libpq().cmd_tuples(result_.get());
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

absl::StatusOr<std::unique_ptr<PostgresConnection>> PostgresConnection::Open(
    const std::string& connection) {
  const LibpqApi& api = Libpq();
  if (!api.error.empty()) {
    return absl::FailedPreconditionError(
        StrCat("the PostgreSQL client library ", kLibpq,
               " (Debian and Ubuntu package libpq5) cannot be loaded: ", api.error));
  }
  // Defaults the connection string may override (an entry before the expanded "dbname" yields to
  // the string's own). libpq waits for ever by default: for a server that accepts connections
  // but never answers, and for one that vanished under an open connection (the kernel's
  // keepalives start after two hours). A worker stuck there would hold its lease until it
  // expires and never see why.
  std::vector<const char*> keywords;
  std::vector<const char*> values;
  // A service file's settings fill only what is unset, so they would yield to these defaults:
  // with a service, the file decides (as PGCONNECT_TIMEOUT does for the timeout).
  if (!UsesService(api, connection)) {
    if (!IsSet(std::getenv("PGCONNECT_TIMEOUT"))) {
      keywords.push_back("connect_timeout");
      values.push_back(kConnectTimeoutSeconds);
    }
    for (const ConnectionDefault& setting : kConnectionDefaults) {
      if (api.lib_version() < setting.since_version) continue;
      keywords.push_back(setting.keyword);
      values.push_back(setting.value);
    }
  }
  keywords.push_back("dbname");
  values.push_back(connection.c_str());
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  pg_conn* conn = api.connectdb_params(keywords.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr) return absl::ResourceExhaustedError("postgresql: no memory to connect");
  if (api.status(conn) != CONNECTION_OK) {
    const std::string detail = OneLine(api.error_message(conn));
    std::string message = StrCat("cannot connect to the server: ", detail);
    // PgBouncer's answer to a startup parameter it does not pass on, `options` most often.
    api.finish(conn);
    if (detail.find("unsupported startup parameter") != std::string::npos) {
      // The same answer on every attempt.
      return core::NotRetryable(absl::UnavailableError(StrCat(
          message,
          " (a pooler such as PgBouncer refuses startup parameters it does not know: set such "
          "settings on the database role, ALTER ROLE ... SET, rather than in the connection "
          "string, or list them in PgBouncer's ignore_startup_parameters)")));
    }
    return absl::UnavailableError(std::move(message));
  }
  api.set_notice_processor(conn, IgnoreNotice, nullptr);
  return std::unique_ptr<PostgresConnection>(new PostgresConnection(conn));
}

PostgresConnection::~PostgresConnection() { Libpq().finish(connection_); }

bool PostgresConnection::is_open() const { return Libpq().status(connection_) == CONNECTION_OK; }

absl::Status PostgresConnection::ConnectionError() const {
  return absl::UnavailableError(
      StrCat("postgresql: the connection was lost: ", OneLine(Libpq().error_message(connection_))));
}

absl::StatusOr<PostgresResult> PostgresConnection::Exec(std::string_view sql,
                                                        const std::vector<PostgresParam>& params) {
  const LibpqApi& api = Libpq();
  const std::string statement(sql);
  pg_result* raw = nullptr;
  if (params.empty()) {
    raw = api.exec(connection_, statement.c_str());
  } else {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const PostgresParam& param : params) values.push_back(param ? param->c_str() : nullptr);
    // Types left to the server (it infers each from its use, as for a literal); text results.
    raw = api.exec_params(connection_, statement.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0);
  }
  if (raw == nullptr) {
    if (!is_open()) return ConnectionError();
    return absl::ResourceExhaustedError(
        StrCat("postgresql: no result: ", OneLine(api.error_message(connection_))));
  }
  PostgresResult result(raw);
  const ExecStatusType status = api.result_status(raw);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
  const char* state = api.result_error_field(raw, PG_DIAG_SQLSTATE);
  const char* primary = api.result_error_field(raw, PG_DIAG_MESSAGE_PRIMARY);
  std::string message = OneLine(primary != nullptr ? primary : api.result_error_message(raw));
  // The detail says which key was duplicated, which row failed a constraint.
  if (const char* detail = api.result_error_field(raw, PG_DIAG_MESSAGE_DETAIL); detail != nullptr) {
    message = StrCat(message, ": ", OneLine(detail));
  }
  if (state == nullptr) {
    // Errors libpq makes itself (a lost connection, a protocol error) have no SQLSTATE.
    if (!is_open()) return ConnectionError();
    return absl::InternalError(StrCat("postgresql: ", message));
  }
  return StatusForSqlState(state, StrCat(message, " (SQLSTATE ", state, ")"));
}

absl::Status PostgresConnection::InTransaction(absl::FunctionRef<absl::Status()> body,
                                               std::string_view begin_with) {
  if (Libpq().transaction_status(connection_) != PQTRANS_IDLE) {
    // Left open by a body that threw: its statements must not be committed with the next.
    if (absl::Status rolled_back = Exec("ROLLBACK").status(); !rolled_back.ok()) {
      return rolled_back;
    }
  }
  // One round trip: the statements after BEGIN go in the same message.
  absl::Status status = Exec(begin_with.empty() ? "BEGIN" : StrCat("BEGIN; ", begin_with)).status();
  if (!status.ok()) {
    if (is_open() && Libpq().transaction_status(connection_) != PQTRANS_IDLE) {
      (void)Exec("ROLLBACK");
    }
    return status;
  }
  try {
    status = body();
  } catch (...) {
    if (is_open()) (void)Exec("ROLLBACK");
    throw;
  }
  if (status.ok() && Libpq().transaction_status(connection_) == PQTRANS_INERROR) {
    // A failed statement whose status `body` did not return: COMMIT would roll back silently.
    status = absl::InternalError("postgresql: a statement of the transaction failed");
  }
  if (status.ok()) {
    // COMMIT answers "ROLLBACK" for an aborted transaction; the check above has ruled that out.
    status = Exec("COMMIT").status();
    if (status.ok() || !is_open()) return status;
  }
  if (is_open()) (void)Exec("ROLLBACK");
  return status;
}

absl::Status PostgresSession::Connect() {
  if (connection_ && connection_->is_open()) return absl::OkStatus();
  connection_.reset();
  absl::StatusOr<std::unique_ptr<PostgresConnection>> opened =
      PostgresConnection::Open(connection_string_);
  if (!opened.ok()) return opened.status();
  connection_ = *std::move(opened);
  return absl::OkStatus();
}

absl::Status PostgresSession::InTransaction(absl::FunctionRef<absl::Status()> body,
                                            std::string_view begin_with) {
  if (absl::Status connected = Connect(); !connected.ok()) return connected;
  absl::Status status = connection_->InTransaction(body, begin_with);
  if (!status.ok() && !connection_->is_open()) connection_.reset();
  return status;
}

}  // namespace rfs::coordination
