// PostgresConnection against a real PostgreSQL server started for the test
// (support/postgres_server.hpp): values and NULLs both ways, the SQLSTATE classes each status
// stands for, transactions rolled back on failure, a lost connection, and a refused one.
#include "rfs/coordination/postgres_connection.hpp"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <catch2/catch.hpp>

#include "support/postgres_server.hpp"
#include "support/temp_dir.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using rfs::coordination::PostgresConnection;
using rfs::coordination::PostgresInt;
using rfs::coordination::PostgresResult;

namespace {

// Sets (or with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A loopback socket that listens and never accepts.
class SilentServer {
 public:
  SilentServer() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t length = sizeof(address);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~SilentServer() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

rfs::test::PostgresServer& ConnectionServer() {
  static rfs::test::PostgresServer server;
  return server;
}

std::unique_ptr<PostgresConnection> ConnectToServer() {
  auto connection = PostgresConnection::Open(ConnectionServer().uri());
  REQUIRE(connection.ok());
  return *std::move(connection);
}

// Raises an error with the given SQLSTATE on the server.
absl::Status Raise(PostgresConnection& connection, const std::string& state) {
  return connection
      .Exec("DO $$ BEGIN RAISE EXCEPTION 'raised for the test' USING ERRCODE = '" + state +
            "'; END $$")
      .status();
}

int64_t CountRows(PostgresConnection& connection, const std::string& table) {
  auto count = connection.Exec("SELECT COUNT(*) FROM " + table);
  REQUIRE(count.ok());
  return count->Int(0, 0).value();
}

}  // namespace

TEST_CASE("PostgresConnection sends parameters as text and NULL, and reads values back",
          "[coordination][postgres]") {
  auto connection = ConnectToServer();
  auto result = connection->Exec("SELECT $1::text, $2::bigint, $3::text, 'it''s', NULL::bigint",
                                 {"héllo\tworld", PostgresInt(-9007199254740993), std::nullopt});
  REQUIRE(result.ok());
  REQUIRE(result->rows() == 1);
  REQUIRE(result->columns() == 5);
  CHECK(result->Text(0, 0) == "héllo\tworld");
  CHECK(result->Int(0, 1).value() == -9007199254740993);
  CHECK(result->IsNull(0, 2));
  CHECK_FALSE(result->IsNull(0, 3));
  CHECK(result->Text(0, 3) == "it's");
  // NULL, text and a missing column are not integers: errors, never a made-up value.
  CHECK(absl::IsInternal(result->Int(0, 4).status()));
  CHECK(absl::IsInternal(result->Int(0, 0).status()));
  CHECK(absl::IsInternal(result->Int(0, 5).status()));
  CHECK(absl::IsInternal(result->Int(1, 0).status()));

  // Without parameters, several statements run and the last one's rows come back.
  auto last = connection->Exec("SELECT 1; SELECT 2, 3");
  REQUIRE(last.ok());
  CHECK(last->Int(0, 1).value() == 3);

  REQUIRE(connection->Exec("CREATE TEMPORARY TABLE counted (n BIGINT PRIMARY KEY)").ok());
  auto inserted = connection->Exec("INSERT INTO counted SELECT generate_series(1, $1::bigint)",
                                   {PostgresInt(7)});
  REQUIRE(inserted.ok());
  CHECK(inserted->affected_rows() == 7);
  CHECK(connection->Exec("SELECT n FROM counted")->affected_rows() == 7);
  CHECK(connection->Exec("DELETE FROM counted WHERE n > $1", {PostgresInt(5)})->affected_rows() ==
        2);
}

TEST_CASE("PostgresConnection maps each SQLSTATE class to the status a caller acts on",
          "[coordination][postgres]") {
  auto connection = ConnectToServer();
  const absl::Status syntax = connection->Exec("SELEKT 1").status();
  CHECK(absl::IsInternal(syntax));
  CHECK(syntax.message().find("SQLSTATE 42601") != std::string_view::npos);
  CHECK(syntax.message().find('\n') == std::string_view::npos);
  // To retry: serialization failure, deadlock, lock not available, the server shutting down.
  for (const char* state : {"40001", "40P01", "55P03", "57P01"}) {
    INFO(state);
    const absl::Status status = Raise(*connection, state);
    CHECK(absl::IsUnavailable(status));
    CHECK(status.message().find(state) != std::string_view::npos);
  }
  CHECK(absl::IsPermissionDenied(Raise(*connection, "42501")));
  CHECK(absl::IsPermissionDenied(Raise(*connection, "28P01")));
  CHECK(absl::IsResourceExhausted(Raise(*connection, "53200")));
  CHECK(absl::IsInternal(Raise(*connection, "23505")));
  // A constraint's failure says which row, from the server's detail.
  REQUIRE(connection->Exec("CREATE TEMPORARY TABLE keyed (n BIGINT PRIMARY KEY)").ok());
  REQUIRE(connection->Exec("INSERT INTO keyed VALUES (1)").ok());
  const absl::Status duplicate = connection->Exec("INSERT INTO keyed VALUES (1)").status();
  CHECK(absl::IsInternal(duplicate));
  CHECK(duplicate.message().find("SQLSTATE 23505") != std::string_view::npos);
  CHECK(duplicate.message().find("Key (n)=(1) already exists") != std::string_view::npos);
  // None of them lost the connection.
  CHECK(connection->is_open());
  CHECK(connection->Exec("SELECT 1").ok());
}

TEST_CASE("PostgresConnection commits a transaction only when all of it succeeded",
          "[coordination][postgres]") {
  auto connection = ConnectToServer();
  REQUIRE(connection->Exec("CREATE TEMPORARY TABLE kept (n BIGINT PRIMARY KEY)").ok());
  auto insert = [&](int64_t n) {
    return connection->Exec("INSERT INTO kept VALUES ($1)", {PostgresInt(n)}).status();
  };

  CHECK(connection->InTransaction([&] { return insert(1); }).ok());
  CHECK(CountRows(*connection, "kept") == 1);

  // The body's own error rolls back what it did.
  const absl::Status refused = connection->InTransaction([&]() -> absl::Status {
    if (absl::Status done = insert(2); !done.ok()) return done;
    return absl::NotFoundError("the body's own error");
  });
  CHECK(absl::IsNotFound(refused));
  CHECK(CountRows(*connection, "kept") == 1);

  // A failed statement the body let pass is not committed as if the rest had been.
  const absl::Status ignored = connection->InTransaction([&] {
    (void)insert(3);
    (void)insert(1);  // a duplicate key: the transaction is aborted from here on
    return absl::OkStatus();
  });
  CHECK(absl::IsInternal(ignored));
  CHECK(CountRows(*connection, "kept") == 1);

  // A statement's failure passed on keeps its status.
  CHECK(
      absl::IsUnavailable(connection->InTransaction([&] { return Raise(*connection, "40001"); })));
  CHECK(connection->InTransaction([&] { return insert(4); }).ok());
  CHECK(CountRows(*connection, "kept") == 2);

  // A body that throws: its insert is rolled back, not committed with the next transaction.
  CHECK_THROWS_AS(connection->InTransaction([&]() -> absl::Status {
    if (absl::Status done = insert(5); !done.ok()) return done;
    throw std::runtime_error("thrown by the body");
  }),
                  std::runtime_error);
  CHECK(connection->InTransaction([&] { return insert(6); }).ok());
  auto kept = connection->Exec("SELECT n FROM kept ORDER BY n");
  REQUIRE(kept.ok());
  REQUIRE(kept->rows() == 3);
  CHECK(kept->Text(2, 0) == "6");

  // A transaction found open (as a throwing body left it) is rolled back before the next begins.
  REQUIRE(connection->Exec("BEGIN").ok());
  REQUIRE(insert(7).ok());
  CHECK(connection->InTransaction([&] { return insert(8); }).ok());
  auto after = connection->Exec("SELECT n FROM kept WHERE n >= 7 ORDER BY n");
  REQUIRE(after.ok());
  REQUIRE(after->rows() == 1);
  CHECK(after->Text(0, 0) == "8");
}

TEST_CASE("PostgresConnection applies settings to one transaction only, in its BEGIN",
          "[coordination][postgres]") {
  auto connection = ConnectToServer();
  auto setting = [&] {
    auto shown = connection->Exec("SHOW enable_seqscan");
    REQUIRE(shown.ok());
    return std::string(shown->Text(0, 0));
  };
  REQUIRE(setting() == "on");
  std::string inside;
  CHECK(connection
            ->InTransaction(
                [&] {
                  inside = setting();
                  return absl::OkStatus();
                },
                "SET LOCAL enable_seqscan = off")
            .ok());
  CHECK(inside == "off");
  CHECK(setting() == "on");  // as a pooler's next client would find the server connection

  // A setting the server refuses fails the transaction before the body runs, and leaves none open.
  bool ran = false;
  const absl::Status refused = connection->InTransaction(
      [&] {
        ran = true;
        return absl::OkStatus();
      },
      "SET LOCAL no_such_setting_at_all = 1");
  CHECK_FALSE(refused.ok());
  CHECK_FALSE(ran);
  // Rolled back at once: a statement now runs outside any transaction (an aborted one refuses it).
  CHECK(setting() == "on");
  CHECK(connection->InTransaction([] { return absl::OkStatus(); }).ok());
  CHECK(setting() == "on");
}

TEST_CASE("PostgresConnection reports a lost connection as Unavailable and a refused one the same",
          "[coordination][postgres]") {
  auto connection = ConnectToServer();
  auto pid = connection->Exec("SELECT pg_backend_pid()");
  REQUIRE(pid.ok());
  auto other = ConnectToServer();
  // Waits (up to 10 s) until the backend has exited.
  auto terminated =
      other->Exec("SELECT pg_terminate_backend($1::int, 10000)", {std::string(pid->Text(0, 0))});
  REQUIRE(terminated.ok());
  REQUIRE(terminated->Text(0, 0) == "t");
  const absl::Status lost = connection->Exec("SELECT 1").status();
  CHECK(absl::IsUnavailable(lost));
  CHECK_FALSE(connection->is_open());
  CHECK(absl::IsUnavailable(connection->InTransaction([] { return absl::OkStatus(); })));

  // A port nothing listens on; the password in the connection string never reaches the message.
  const int port = rfs::test::FreeLoopbackPort();
  auto refused =
      PostgresConnection::Open("postgresql://postgres:s3cr3t-pw@127.0.0.1:" + std::to_string(port) +
                               "/postgres?connect_timeout=5");
  REQUIRE_FALSE(refused.ok());
  CHECK(absl::IsUnavailable(refused.status()));
  CHECK(refused.status().message().find("s3cr3t-pw") == std::string_view::npos);
  CHECK(refused.status().message().find("cannot connect") != std::string_view::npos);
}

TEST_CASE("PostgresConnection gives up on a server that never answers, after its timeout",
          "[coordination][postgres]") {
  // What the process's environment would say instead of the defaults, put aside for the test.
  ScopedEnv no_timeout("PGCONNECT_TIMEOUT", nullptr);
  ScopedEnv no_service("PGSERVICE", nullptr);
  // A socket that listens and never accepts: the kernel completes the handshake, libpq sends its
  // startup packet, and nothing ever answers (as a server behind a dead proxy).
  SilentServer silent;
  const std::string uri =
      "postgresql://postgres@127.0.0.1:" + std::to_string(silent.port()) + "/postgres";
  auto seconds_to_fail = [](const std::string& connection) {
    const auto start = std::chrono::steady_clock::now();
    auto opened = PostgresConnection::Open(connection);
    CHECK(absl::IsUnavailable(opened.status()));
    CHECK(opened.status().message().find("timeout") != std::string_view::npos);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // The connection string's own timeout wins over the default.
  CHECK(seconds_to_fail(uri + "?connect_timeout=2") < 8);
  // So does a service's, from its file (whose settings libpq uses only where none is given).
  rfs::test::TempDir dir("rfs-pg-service");
  {
    std::ofstream file(dir.File("pg_service.conf"));
    file << "[silent]\nhost=127.0.0.1\nport=" << silent.port()
         << "\nuser=postgres\ndbname=postgres\nconnect_timeout=2\n";
  }
  {
    ScopedEnv service_file("PGSERVICEFILE", dir.File("pg_service.conf").c_str());
    CHECK(seconds_to_fail("service=silent") < 8);
  }
  // Without either, the default: 10 s, never for ever.
  const double waited = seconds_to_fail(uri);
  CHECK(waited >= 9);
  CHECK(waited < 30);
}
