// PostgresServer: a real PostgreSQL server from Debian's packages (installed by
// scripts/install-deps), started for a test in a temporary folder on a loopback port with trust
// authentication, and stopped (fast shutdown) with the object. PostgreSQL refuses to run as root,
// so as root the folder is handed to the `postgres` user the package creates and the server runs
// under runuser.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rfs/coordination/postgres_connection.hpp"

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include <pwd.h>
#include <unistd.h>

namespace rfs::test {

class PostgresServer {
 public:
  /// Throws (failing the test) when PostgreSQL is missing or does not start: a missing server is
  /// an install-deps bug, not a reason to skip.
  PostgresServer() {
    bin_ = FindBinDir();
    if (::geteuid() == 0) {
      const passwd* user = ::getpwnam("postgres");
      if (user == nullptr) throw std::runtime_error("no 'postgres' user: run scripts/install-deps");
      if (::chown(dir_.str().c_str(), user->pw_uid, user->pw_gid) != 0) {
        throw std::runtime_error("cannot hand " + dir_.str() + " to the postgres user");
      }
      as_user_ = {"/usr/sbin/runuser", "-u", "postgres", "--"};
    }
    const std::string data = dir_.File("data");
    const int initdb = RunProcess(Command({bin_ + "/initdb", "-D", data, "-A", "trust", "-U",
                                           "postgres", "-E", "UTF8", "--no-sync"}),
                                  dir_.File("initdb.out"), dir_.File("initdb.err"));
    if (initdb != 0) {
      throw std::runtime_error("initdb failed: " + ReadTextFile(dir_.File("initdb.err")));
    }
    port_ = FreeLoopbackPort();
    server_ = std::make_unique<ChildProcess>(
        Command({bin_ + "/postgres", "-D", data, "-k", dir_.str(), "-h", "127.0.0.1", "-p",
                 std::to_string(port_), "-c", "fsync=off", "-c", "synchronous_commit=off", "-c",
                 "full_page_writes=off", "-c", "max_connections=300"}),
        dir_.File("postgres.out"), dir_.File("postgres.err"));
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (true) {
      if (rfs::coordination::PostgresConnection::Open(uri()).ok()) break;
      if (server_->Exited() || std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error("postgres did not start: " +
                                 ReadTextFile(dir_.File("postgres.err")));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~PostgresServer() {
    RunProcess(Command({bin_ + "/pg_ctl", "-D", dir_.File("data"), "stop", "-m", "fast", "-w"}),
               dir_.File("stop.out"), dir_.File("stop.err"));
    server_->Wait();
  }

  /// "postgresql://postgres@127.0.0.1:PORT/postgres".
  std::string uri() const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
  }
  int port() const { return port_; }

 private:
  static std::string FindBinDir() {
    std::string best;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", error)) {
      const std::string bin = entry.path().string() + "/bin";
      if (std::filesystem::exists(bin + "/initdb") && bin > best) best = bin;
    }
    if (best.empty())
      throw std::runtime_error("PostgreSQL is not installed: run scripts/install-deps");
    return best;
  }
  std::vector<std::string> Command(std::vector<std::string> argv) const {
    std::vector<std::string> out = as_user_;
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

  TempDir dir_{"rfs-postgres"};
  std::string bin_;
  std::vector<std::string> as_user_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> server_;
};

}  // namespace rfs::test
