// What the document migration worker's tests run a worker on: the snapshot repository in a local
// folder, and a SQLite work-item store in a fresh folder, both on a fake clock.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/temp_dir.hpp"

namespace rfs::test {

struct WorkerFixture {
  TempDir dir;
  core::FakeClock clock;
  std::unique_ptr<snapshot::SnapshotRepository> repository;

  /// The repository in the folder `repo`; the store in a folder named from `dir_prefix`.
  WorkerFixture(const std::filesystem::path& repo, const std::string& dir_prefix)
      : dir(dir_prefix) {
    auto source = snapshot::FileSystemRepo::Open(repo.string());
    REQUIRE(source.ok());
    auto opened = snapshot::SnapshotRepository::Open(*source);
    REQUIRE(opened.ok());
    repository = std::move(opened).value();
  }

  /// The work-item store (coordination.sqlite in `dir`) as the worker `worker_id` uses it.
  std::unique_ptr<coordination::IWorkCoordinator> Coordinator(const std::string& worker_id = "w1") {
    coordination::SqliteWorkCoordinatorOptions options;
    options.worker_id = worker_id;
    options.path = dir.File("coordination.sqlite");
    options.clock = &clock;
    options.store_clock = &clock;
    auto coordinator = coordination::SqliteWorkCoordinator::Open(std::move(options));
    REQUIRE(coordinator.ok());
    return std::move(coordinator).value();
  }
};

}  // namespace rfs::test
