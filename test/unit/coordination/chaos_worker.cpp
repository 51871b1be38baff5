// chaos_worker: one worker process of the coordination chaos test (chaos_test.cpp).
//
//   chaos_worker <sqlite-db | postgresql://...> <audit-log> <worker-id> <initial-lease-ms> <seed>
//
// Loops: acquire a work item (a shard range of kDocsPerShard "documents" from the item's
// cursor), "set up" (sleep), then "migrate" batches of documents (sleep), sometimes checkpointing
// into a successor item at the current cursor (always once the early-checkpoint time has come),
// and complete the item when the shard is done. Every lease grant and every write is appended to
// the audit log (a file of this worker process's own) as one line with one write(). A SIGKILL
// inside that write() can still cut the line (at a page boundary, under load); as no other
// process writes to the file, nothing is glued to it, and the test sets such a last line aside:
//
//   ACQUIRE <worker> <item> <generation> <lease start ms> <lease end ms> <exponent>
//           <lease start ms on the worker's clock>
//   WORK <worker> <item> <generation> <ms> <from cursor> <to cursor>
//   CHECKPOINT <worker> <item> <generation> <ms> <successor item>
//   COMPLETE <worker> <item> <generation> <ms> <end cursor>
//
// Writes happen only while the worker's lease is valid (checked against the lease's local
// deadline right before each write); a worker whose lease is lost or has run out exits at once
// with status 2, as the RFS design demands. Exit 0: no work left. Exit 1: bad usage or a
// non-retryable error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include "rfs/coordination/console_work_coordinator.hpp"
#include "rfs/coordination/postgres_work_coordinator.hpp"
#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
using rfs::coordination::Acquired;
using rfs::coordination::AllLeasedElsewhere;
using rfs::coordination::Lease;
using rfs::coordination::NoAvailableWork;
using rfs::coordination::WorkItemId;
using rfs::core::StrCat;

constexpr uint64_t kDocsPerShard = 1000;
constexpr uint64_t kBatch = 25;

int64_t Millis(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

class Audit {
 public:
  explicit Audit(const char* path) : fd_(::open(path, O_WRONLY | O_CREAT | O_APPEND, 0644)) {}
  bool ok() const { return fd_ >= 0; }
  void Line(const std::string& line) {
    const std::string with_newline = line + "\n";
    // One write() per line, into this worker's own file.
    if (::write(fd_, with_newline.data(), with_newline.size()) !=
        static_cast<ssize_t>(with_newline.size())) {
      std::_Exit(1);
    }
  }

 private:
  int fd_;
};

[[noreturn]] void Die(int code, const std::string& why) {
  std::fprintf(stderr, "chaos_worker: %s\n", why.c_str());
  std::_Exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) Die(1, "usage: chaos_worker <db> <audit> <worker-id> <lease-ms> <seed>");
  const std::string worker = argv[3];
  const auto initial_lease = std::chrono::milliseconds(std::atoll(argv[4]));
  std::mt19937_64 rng(std::strtoull(argv[5], nullptr, 10));
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  auto sleep_ms = [&](int lo, int hi) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng)));
  };
  Audit audit(argv[2]);
  if (!audit.ok()) Die(1, "cannot open the audit log");

  rfs::coordination::WorkCoordinatorOptions options;
  options.worker_id = worker;
  // Widen the windows between the three checkpoint steps so that SIGKILLs land there too.
  options.successor_step_hook = [&](rfs::coordination::SuccessorStep step) {
    if (step != rfs::coordination::SuccessorStep::kRecordSuccessors) sleep_ms(0, 6);
    return absl::OkStatus();
  };
  options.lease_observer = [&](const Lease& lease) {
    audit.Line(StrCat("ACQUIRE ", worker, " ", lease.work_item_id, " ", lease.generation, " ",
                      Millis(lease.acquired_at), " ", Millis(lease.expires_at), " ", lease.exponent,
                      " ", Millis(lease.local_start)));
  };
  const std::string store = argv[1];
  absl::StatusOr<std::unique_ptr<rfs::coordination::IWorkCoordinator>> opened;
  if (store.starts_with("console:")) {
    // console:URL|SESSION|TOKEN
    const std::string spec = store.substr(8);
    const size_t bar1 = spec.find('|');
    const size_t bar2 = spec.find('|', bar1 + 1);
    rfs::coordination::ConsoleWorkCoordinatorOptions console;
    static_cast<rfs::coordination::WorkCoordinatorOptions&>(console) = options;
    console.url = spec.substr(0, bar1);
    console.session = spec.substr(bar1 + 1, bar2 - bar1 - 1);
    console.token = spec.substr(bar2 + 1);
    opened = rfs::coordination::ConsoleWorkCoordinator::Open(std::move(console));
  } else if (store.starts_with("postgresql://")) {
    rfs::coordination::PostgresWorkCoordinatorOptions postgres;
    static_cast<rfs::coordination::WorkCoordinatorOptions&>(postgres) = options;
    postgres.connection = store;
    opened = rfs::coordination::PostgresWorkCoordinator::Open(std::move(postgres));
  } else {
    rfs::coordination::SqliteWorkCoordinatorOptions sqlite;
    static_cast<rfs::coordination::WorkCoordinatorOptions&>(sqlite) = options;
    sqlite.path = store;
    opened = rfs::coordination::SqliteWorkCoordinator::Open(std::move(sqlite));
  }
  if (!opened.ok()) Die(1, opened.status().ToString());
  auto& coordinator = **opened;
  if (auto s = coordinator.Setup(); !s.ok()) Die(1, s.ToString());

  auto& clock = rfs::core::SystemClock::Instance();
  while (true) {
    auto outcome = coordinator.AcquireNextWorkItem(initial_lease);
    if (!outcome.ok()) {
      if (rfs::core::IsRetryable(outcome.status())) continue;
      Die(1, outcome.status().ToString());
    }
    if (std::holds_alternative<NoAvailableWork>(*outcome)) return 0;
    if (auto* busy = std::get_if<AllLeasedElsewhere>(&*outcome)) {
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(busy->retry_after, 20ms));
      continue;
    }
    const Lease lease = std::get<Acquired>(*outcome).lease;
    auto id = WorkItemId::Parse(lease.work_item_id);
    if (!id.ok()) Die(1, id.status().ToString());
    // Before each write: is the lease still ours? If not, stop writing and exit.
    // One reading of the clock both checks the lease and dates the write, so a pause between
    // them cannot make a valid write look late (or a late one look valid).
    auto checked_prefix = [&](const char* event) {
      const auto now = clock.Now();
      if (now >= lease.local_deadline()) Die(2, "lease ran out: exiting");
      return StrCat(event, " ", worker, " ", lease.work_item_id, " ", lease.generation, " ",
                    Millis(now), " ");
    };

    sleep_ms(0, 8);  // Shard setup: download and open the shard.
    const auto setup_time = clock.Now() - lease.local_start;
    uint64_t cursor = id->starting_cursor;
    bool checkpointed = false;
    while (cursor < kDocsPerShard) {
      sleep_ms(1, 6);  // Read and transform a batch.
      const uint64_t to = std::min(cursor + kBatch, kDocsPerShard);
      audit.Line(StrCat(checked_prefix("WORK"), cursor, " ", to));
      cursor = to;
      const bool due = clock.Now() >= lease.early_checkpoint_at();
      if (cursor < kDocsPerShard && (due || chance(0.06))) {
        const std::string successor = id->WithCursor(cursor).ToString();
        audit.Line(StrCat(checked_prefix("CHECKPOINT"), successor));
        const int exponent =
            rfs::coordination::SuccessorLeaseExponent(lease.exponent, setup_time, lease.duration);
        auto s = coordinator.CreateSuccessorsAndComplete(lease, std::vector<std::string>{successor},
                                                         exponent);
        if (rfs::coordination::IsLeaseLost(s)) Die(2, s.ToString());
        if (!s.ok()) Die(1, s.ToString());
        checkpointed = true;
        break;
      }
    }
    if (checkpointed) continue;
    audit.Line(StrCat(checked_prefix("COMPLETE"), cursor));
    auto s = coordinator.CompleteWorkItem(lease);
    if (rfs::coordination::IsLeaseLost(s)) Die(2, s.ToString());
    if (!s.ok()) Die(1, s.ToString());
  }
}
