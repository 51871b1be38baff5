// ConsoleStore: where the migration console keeps its sessions and their work items.
//
// One store holds every session: a sessions table (name, the SHA-256 of the session's bearer
// token, the name of the session's work-item table), a table of what the seed API records about
// each work item besides its lease state (index, shard, the shard's document count and size,
// failed documents), and one work-item table per session, driven by the coordination layer's
// SQLite or PostgreSQL IWorkCoordinator so that the console applies exactly the lease rules the
// workers' own stores apply.
//
// Two kinds of store behind one interface: "sqlite:PATH" (the default; one file) and
// "postgresql://..." (libpq URI), which several console instances can share. The console serves
// many workers; the coordinators it drives for them are pooled per (session, worker), so a
// worker's calls find their coordinator open.
//
// Thread safety: every method may be called concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/coordination/work_coordinator.hpp"
#include "rfs/core/clock.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::console {

using TimePoint = core::IClock::TimePoint;

struct SessionRecord {
  std::string name;
  /// Lowercase hex SHA-256 of the session's bearer token (the token itself is never stored).
  std::string token_sha256;
  /// The session's work-item table.
  std::string work_table;
  TimePoint created_at{};
};

/// What a work item's creator said about it (the seed's CreateWorkItemRequest), and the failed
/// documents its holders reported.
struct WorkItemInfo {
  std::string id;
  std::optional<std::string> index_name;
  std::optional<int64_t> shard_number;
  /// The whole shard's documents and bytes (a successor item inherits its shard's totals).
  std::optional<int64_t> document_count;
  std::optional<int64_t> total_size_bytes;
  int64_t documents_failed = 0;
  TimePoint created_at{};
  /// What became of the item's documents, as rfs workers report it with their progress (the
  /// per-index account); nullopt until one does.
  std::optional<coordination::ItemOutcomes> outcomes = std::nullopt;
};

/// Session names: 1 to 64 of letters, digits, '-', '_' and '.', not starting with '.' or '-'.
absl::Status ValidateSessionName(std::string_view name);

struct ConsoleStoreOptions {
  /// "sqlite:PATH" or "postgresql://..." / "postgres://...".
  std::string uri;
  /// The console's clock (the worker clock of the coordinators it drives); nullptr: the system's.
  core::IClock* clock = nullptr;
  /// Tests: the store's clock instead of the database's.
  core::IClock* store_clock = nullptr;
  /// How many (session, worker) coordinators stay open; the least recently used close first.
  size_t max_open_coordinators = 256;
};

class ConsoleStore {
 public:
  /// Opens (creating its tables if needed) the store `options.uri` names. InvalidArgument for a
  /// URI of another kind, Unavailable when the database cannot be reached.
  static absl::StatusOr<std::unique_ptr<ConsoleStore>> Open(ConsoleStoreOptions options);
  virtual ~ConsoleStore() = default;

  /// "sqlite:PATH" or the PostgreSQL URI without its password.
  virtual std::string description() const = 0;

  /// Creates the session and its work-item table. False (and nothing changed) if the name is
  /// taken; InvalidArgument for a bad name.
  virtual absl::StatusOr<bool> CreateSession(std::string_view name,
                                             std::string_view token_sha256) = 0;
  virtual absl::StatusOr<std::optional<SessionRecord>> GetSession(std::string_view name) = 0;
  virtual absl::StatusOr<std::vector<SessionRecord>> ListSessions() = 0;
  /// Drops the session, its items and their records. False if there was no such session.
  virtual absl::StatusOr<bool> DeleteSession(std::string_view name) = 0;

  /// Records `info` for its item unless a record exists.
  virtual absl::Status PutWorkItemInfo(const SessionRecord& session, const WorkItemInfo& info) = 0;
  /// Sets the failed documents its holders reported for item `id` (creating the record).
  virtual absl::Status SetDocumentsFailed(const SessionRecord& session, std::string_view id,
                                          int64_t documents_failed) = 0;
  /// Sets the outcomes reported for item `id`, and its failed documents to theirs.
  virtual absl::Status SetItemOutcomes(const SessionRecord& session, std::string_view id,
                                       const coordination::ItemOutcomes& outcomes) = 0;
  virtual absl::StatusOr<std::vector<WorkItemInfo>> ListWorkItemInfo(
      const SessionRecord& session) = 0;
  /// The record of item `id`, or nullopt.
  virtual absl::StatusOr<std::optional<WorkItemInfo>> GetWorkItemInfo(const SessionRecord& session,
                                                                      std::string_view id) = 0;

  /// The session's work items as `worker_id` sees them: an open coordinator from the pool, or a
  /// new one. Its CreateSuccessorsAndComplete honours ScopedSuccessorStop.
  virtual absl::StatusOr<std::shared_ptr<coordination::IWorkCoordinator>> Coordinator(
      const SessionRecord& session, std::string_view worker_id) = 0;
};

/// While alive, CreateSuccessorsAndComplete called on this thread on a coordinator from
/// ConsoleStore::Coordinator stops before `step` with Aborted, leaving the earlier steps done:
/// how the console lets a client take the three checkpoint steps one at a time.
class ScopedSuccessorStop {
 public:
  explicit ScopedSuccessorStop(coordination::SuccessorStep step);
  ~ScopedSuccessorStop();
  ScopedSuccessorStop(const ScopedSuccessorStop&) = delete;
  ScopedSuccessorStop& operator=(const ScopedSuccessorStop&) = delete;

 private:
  int previous_;
};

}  // namespace rfs::console
