// PostgresConnection: one connection to a PostgreSQL server through libpq, the client library
// the PostgreSQL stores share (the work-item store here, the console's own tables).
//
// libpq is loaded when the first connection is opened, not when a program starts: it brings about
// twenty libraries with it (Kerberos, LDAP, GnuTLS), and every tool paid for loading them on each
// start, whatever store it used (about 3 ms here, a third of a tool's start). A host without libpq
// can run every tool but the PostgreSQL stores, which then fail with the library's name.
//
// Errors: the server's SQLSTATE chooses the status. Lost connections, serialization failures,
// deadlocks, lock timeouts and the server shutting down (classes 08 and 40, 57P, 55P03) are
// Unavailable, to retry on a new connection once is_open() is false; authorization (28, 42501)
// on an open connection is PermissionDenied; insufficient resources (53) ResourceExhausted;
// anything else Internal.
//
// Thread safety: none; a connection is used by one thread at a time (the stores hold a mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct pg_conn;
struct pg_result;

namespace rfs::coordination {

/// A statement's parameter in text form ($1, $2, ... in the statement); nullopt is SQL NULL.
using PostgresParam = std::optional<std::string>;

/// A parameter from an integer, or NULL.
PostgresParam PostgresInt(std::optional<int64_t> value);

/// The rows of one statement, every value in text form.
class PostgresResult {
 public:
  int rows() const;
  int columns() const;
  bool IsNull(int row, int column) const;
  /// The value as the server sent it ("" for NULL).
  std::string_view Text(int row, int column) const;
  /// The value as a 64-bit integer; Internal when it is NULL or not one.
  absl::StatusOr<int64_t> Int(int row, int column) const;
  /// Rows an INSERT, UPDATE or DELETE touched, or a SELECT returned (0 for other statements).
  int64_t affected_rows() const;

 private:
  friend class PostgresConnection;
  struct Clear {
    void operator()(pg_result* result) const;
  };
  explicit PostgresResult(pg_result* result) : result_(result) {}
  std::unique_ptr<pg_result, Clear> result_;
};

class PostgresConnection {
 public:
  /// Loads libpq if no connection has yet, and connects with a libpq connection string or URI.
  /// Unless the string sets them or names a service (whose file then decides): connecting to
  /// each of the host's addresses times out after 10 s (or PGCONNECT_TIMEOUT), and a server gone
  /// silent under the connection is given up after about a minute (TCP keepalives, and with
  /// libpq 12 or later tcp_user_timeout), so that no call waits for ever.
  /// FailedPrecondition when libpq cannot be loaded; Unavailable when the server cannot be
  /// reached or refuses the connection, a failed login included (libpq does not say which; the
  /// message is libpq's, which never quotes the password).
  static absl::StatusOr<std::unique_ptr<PostgresConnection>> Open(const std::string& connection);
  ~PostgresConnection();
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  /// Runs one statement with its parameters, or, without parameters, one or more statements
  /// separated by ';' (the last one's rows are returned).
  absl::StatusOr<PostgresResult> Exec(std::string_view sql,
                                      const std::vector<PostgresParam>& params = {});

  /// BEGIN, `body`, COMMIT. When `body` or the COMMIT fails, the transaction is rolled back and
  /// that status returned (a statement that failed while `body` went on counts as failed); when
  /// `body` throws, it is rolled back and the exception goes on. `body` runs its statements
  /// through Exec on this connection. `begin_with`, if any, runs right after BEGIN in the same
  /// round trip (settings for this transaction only: SET LOCAL ...).
  absl::Status InTransaction(absl::FunctionRef<absl::Status()> body,
                             std::string_view begin_with = {});

  /// False once the connection to the server is lost: open a new one.
  bool is_open() const;

 private:
  explicit PostgresConnection(pg_conn* connection) : connection_(connection) {}
  absl::Status ConnectionError() const;

  pg_conn* connection_;
};

/// A store's connection: opened when first needed, and again after it was lost (a lost one is
/// let go, so that the next call opens a new one). Not thread-safe, as PostgresConnection.
class PostgresSession {
 public:
  explicit PostgresSession(std::string connection) : connection_string_(std::move(connection)) {}

  /// Opens the connection unless an open one is held; PostgresConnection::Open's errors.
  absl::Status Connect();
  /// Connect, then PostgresConnection::InTransaction.
  absl::Status InTransaction(absl::FunctionRef<absl::Status()> body,
                             std::string_view begin_with = {});
  /// The connection, for the statements of a body; valid while InTransaction runs.
  PostgresConnection& connection() { return *connection_; }

 private:
  const std::string connection_string_;
  std::unique_ptr<PostgresConnection> connection_;
};

}  // namespace rfs::coordination
