// PgBouncer: Debian's PgBouncer (installed by scripts/install-deps) started for a test in front
// of a PostgresServer, on a loopback port, in transaction pooling mode: each transaction a client
// runs may be given to another of the pool's server connections, and a server connection serves
// many clients in turn. That is how managed and Kubernetes deployments often put a pooler in
// front of PostgreSQL, and it loses whatever a client set for its session. Stopped (SIGTERM, an
// immediate shutdown) with the object.
#pragma once

#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rfs/coordination/postgres_connection.hpp"

#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include <unistd.h>

namespace rfs::test {

class PgBouncer {
 public:
  /// `server_connections` is the pool's size: with fewer server connections than clients, the
  /// clients' transactions necessarily share them. Throws (failing the test) when PgBouncer is
  /// missing or does not start: a missing pooler is an install-deps bug, not a reason to skip.
  PgBouncer(const PostgresServer& server, int server_connections) {
    const std::string binary = "/usr/sbin/pgbouncer";
    if (::access(binary.c_str(), X_OK) != 0) {
      throw std::runtime_error("PgBouncer is not installed: run scripts/install-deps");
    }
    port_ = FreeLoopbackPort();
    {
      // Trust authentication still needs the user listed.
      std::ofstream users(dir_.File("userlist.txt"));
      users << "\"postgres\" \"\"\n";
    }
    {
      std::ofstream ini(dir_.File("pgbouncer.ini"));
      ini << "[databases]\n"
          << "postgres = host=127.0.0.1 port=" << server.port() << " dbname=postgres\n"
          << "[pgbouncer]\n"
          << "listen_addr = 127.0.0.1\n"
          << "listen_port = " << port_ << "\n"
          << "unix_socket_dir =\n"
          << "auth_type = trust\n"
          << "auth_file = " << dir_.File("userlist.txt") << "\n"
          << "pool_mode = transaction\n"
          << "default_pool_size = " << server_connections << "\n"
          << "max_client_conn = 500\n";
    }
    std::vector<std::string> argv = {binary};
    // PgBouncer refuses to run as root; told a user, it changes to it after reading its files.
    if (::geteuid() == 0) argv.insert(argv.end(), {"-u", "postgres"});
    argv.push_back(dir_.File("pgbouncer.ini"));
    process_ = std::make_unique<ChildProcess>(argv, dir_.File("pgbouncer.out"),
                                              dir_.File("pgbouncer.err"));
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
      if (rfs::coordination::PostgresConnection::Open(uri()).ok()) break;
      if (process_->Exited() || std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error("pgbouncer did not start: " +
                                 ReadTextFile(dir_.File("pgbouncer.err")));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~PgBouncer() {
    if (!process_->Exited()) {
      ::kill(process_->pid(), SIGTERM);
      process_->Wait();
    }
  }
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;

  /// "postgresql://postgres@127.0.0.1:PORT/postgres", the pooler's own port.
  std::string uri() const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
  }

 private:
  TempDir dir_{"rfs-pgbouncer"};
  int port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace rfs::test
