// The worker's look at the target's indices (TargetIndexGuard, DocumentMigrationOptions::
// target_indices) against a scripted target: documents of a data stream that is not on the target
// fail and none is sent; an index the target creates itself is reported once, or refused with
// no_auto_create_indices; an index replaced while an item sent documents to it ends the run with
// an error and the item goes back to its start; lookups that fail fail the batch, not documents.
// Real nodes show the same through the tools (test/real, "[target-index]").
#include <map>
#include <mutex>
#include <set>

#include <catch2/catch.hpp>

#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/core/clock.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "migration/data_stream_internal.hpp"
#include "support/generated_repo.hpp"
#include "support/temp_dir.hpp"
#include "support/worker_fixture.hpp"

namespace {

using rfs::migration::WorkerEvent;
using rfs::reindex::ItemFailure;
using rfs::reindex::SourceDocument;

// The target's names: indices (uuids) and data streams (backing uuids), changed by the test or
// by the sink as a cluster would change them.
class ScriptedTarget final : public rfs::migration::ITargetIndices {
 public:
  absl::StatusOr<std::vector<std::string>> IndexUuids(std::string_view name) override {
    std::lock_guard lock(mu);
    ++lookups;
    if (failures_left > 0) {
      --failures_left;
      return absl::UnavailableError("503 from the target");
    }
    if (auto it = streams.find(std::string(name)); it != streams.end()) return it->second;
    auto it = indices.find(std::string(name));
    return it == indices.end() ? std::vector<std::string>() : it->second;
  }
  absl::StatusOr<std::optional<std::vector<std::string>>> DataStreamIndexUuids(
      std::string_view name) override {
    std::lock_guard lock(mu);
    ++lookups;
    if (failures_left > 0) {
      --failures_left;
      return absl::UnavailableError("503 from the target");
    }
    auto it = streams.find(std::string(name));
    if (it == streams.end()) return std::nullopt;
    return it->second;
  }

  std::mutex mu;
  std::map<std::string, std::vector<std::string>> indices;
  std::map<std::string, std::vector<std::string>> streams;
  int failures_left = 0;
  int lookups = 0;
};

// Accepts every document; a write into a missing index creates it on the target, as a cluster
// with auto-creation does; `after_write` runs after each batch.
class TargetSink final : public rfs::reindex::IDocumentSink {
 public:
  explicit TargetSink(ScriptedTarget& target) : target_(target) {}
  absl::StatusOr<std::vector<ItemFailure>> Write(
      std::span<const SourceDocument* const> docs) override {
    std::lock_guard lock(mu_);
    ++batches;
    for (const SourceDocument* doc : docs) {
      written.insert({doc->index, doc->id});
      std::lock_guard target_lock(target_.mu);
      if (!target_.indices.contains(doc->index) && !target_.streams.contains(doc->index)) {
        target_.indices[doc->index] = {"auto-" + doc->index};
      }
    }
    if (after_write) after_write(batches);
    return std::vector<ItemFailure>();
  }
  std::string description() const override { return "scripted target"; }

  // With `prepares`, batches go as copies (as a bulk sink's bodies do), through the guard's
  // Prepare: what it counts must be what its Write counts.
  class Copies final : public rfs::reindex::IPreparedBatch {
   public:
    Copies(TargetSink& sink, std::span<const SourceDocument* const> docs) : sink_(sink) {
      for (const SourceDocument* doc : docs) copies_.push_back(*doc);
    }
    size_t size() const override { return copies_.size(); }
    size_t held_bytes() const override { return 0; }
    uint64_t cursor(size_t i) const override { return copies_[i].cursor; }
    size_t source_bytes(size_t i) const override { return copies_[i].source.size(); }
    bool has_version(size_t) const override { return false; }
    absl::StatusOr<std::vector<ItemFailure>> Write(std::span<const size_t> positions) override {
      std::vector<const SourceDocument*> part;
      for (size_t i : positions) part.push_back(&copies_[i]);
      return sink_.Write(part);
    }
    absl::StatusOr<std::vector<rfs::reindex::FailedDocument>> Describe(
        std::span<const size_t> positions) const override {
      std::vector<rfs::reindex::FailedDocument> out;
      for (size_t i : positions) {
        out.push_back(
            {.index = copies_[i].index, .id = copies_[i].id, .cursor = copies_[i].cursor});
      }
      return out;
    }

   private:
    TargetSink& sink_;
    std::vector<SourceDocument> copies_;
  };
  absl::StatusOr<std::unique_ptr<rfs::reindex::IPreparedBatch>> Prepare(
      std::span<const SourceDocument* const> docs) override {
    if (!prepares) return nullptr;
    std::lock_guard lock(mu_);
    ++prepared;
    return std::unique_ptr<rfs::reindex::IPreparedBatch>(new Copies(*this, docs));
  }

  bool prepares = false;
  int prepared = 0;
  std::function<void(int batch)> after_write;
  std::mutex mu_;
  int batches = 0;
  std::set<std::pair<std::string, std::string>> written;

 private:
  ScriptedTarget& target_;
};

class RecordingFailedSink final : public rfs::reindex::IFailedDocumentSink {
 public:
  absl::Status Record(std::span<const rfs::reindex::FailedDocument> docs) override {
    std::lock_guard lock(mu);
    records.insert(records.end(), docs.begin(), docs.end());
    return absl::OkStatus();
  }
  std::mutex mu;
  std::vector<rfs::reindex::FailedDocument> records;
};

SourceDocument Doc(std::string index, std::string id, uint64_t cursor) {
  SourceDocument doc;
  doc.index = std::move(index);
  doc.id = std::move(id);
  doc.cursor = cursor;
  doc.op = rfs::reindex::BulkOp::kCreate;
  doc.source = R"({"@timestamp":"2024-01-01T00:00:00Z"})";
  return doc;
}

struct Worker : rfs::test::WorkerFixture {
  ScriptedTarget target;
  std::shared_ptr<TargetSink> sink = std::make_shared<TargetSink>(target);
  RecordingFailedSink failed;
  std::vector<WorkerEvent> events;

  explicit Worker(const std::filesystem::path& repo) : WorkerFixture(repo, "rfs-target-index") {}

  absl::StatusOr<rfs::migration::WorkerSummary> Run(bool refuse_missing = false) {
    rfs::migration::DocumentMigrationOptions options;
    options.reindexer.max_docs_per_batch = 25;
    options.reindexer.max_concurrent_batches = 1;
    options.target_indices = &target;
    options.no_auto_create_indices = refuse_missing;
    options.on_event = [this](const WorkerEvent& e) { events.push_back(e); };
    auto coordinator = Coordinator();
    std::shared_ptr<rfs::reindex::IDocumentSink> shared = sink;
    rfs::migration::DocumentMigrationWorker worker(
        *repository, *coordinator,
        [shared](std::string_view, std::string_view)
            -> absl::StatusOr<std::shared_ptr<rfs::reindex::IDocumentSink>> { return shared; },
        &failed, clock, std::move(options));
    return worker.Run();
  }

  size_t Events(WorkerEvent::Kind kind) const {
    return std::count_if(events.begin(), events.end(),
                         [kind](const WorkerEvent& e) { return e.kind == kind; });
  }
  size_t Written(const std::string& index) const {
    return std::count_if(sink->written.begin(), sink->written.end(),
                         [&](const auto& key) { return key.first == index; });
  }
};

}  // namespace

TEST_CASE("documents meant for a data stream that is not on the target fail and are not sent",
          "[migration][target-index]") {
  ScriptedTarget target;
  auto sink = std::make_shared<TargetSink>(target);
  const std::vector<SourceDocument> docs = {Doc("logs-app", "a", 0), Doc("logs-app", "b", 1),
                                            Doc("logs-app", "c", 2)};
  std::vector<const SourceDocument*> batch;
  for (const auto& doc : docs) batch.push_back(&doc);

  SECTION("nothing of that name: the reason says what to do") {
    rfs::migration::internal::TargetIndexGuard guard(sink, target, "logs-app", false);
    auto failures = guard.Write(batch);
    REQUIRE(failures.ok());
    REQUIRE(failures->size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK((*failures)[i].position == i);
      CHECK((*failures)[i].type == "data_stream_not_on_target");
      CHECK((*failures)[i].reason.find("Run MetadataMigration migrate first") != std::string::npos);
    }
    CHECK(sink->batches == 0);
    CHECK(target.indices.empty());  // no plain index of the stream's name was made
    auto findings = guard.Recheck();
    REQUIRE(findings.ok());
    REQUIRE(findings->size() == 1);
    CHECK(findings->front().kind ==
          rfs::migration::internal::TargetIndexGuard::Finding::Kind::kRefused);
    CHECK(findings->front().message.starts_with("3 documents failed: data stream logs-app"));
  }
  SECTION("a plain index of that name (an earlier run's): still refused, and said") {
    target.indices["logs-app"] = {"plain-1"};
    rfs::migration::internal::TargetIndexGuard guard(sink, target, "logs-app", false);
    auto failures = guard.Write(batch);
    REQUIRE(failures.ok());
    REQUIRE(failures->size() == 3);
    CHECK((*failures)[0].reason.find("an index of that name is") != std::string::npos);
    CHECK(sink->batches == 0);
  }
  SECTION("the stream there: documents go, a rollover meanwhile is no replacement") {
    target.streams["logs-app"] = {"ds-1"};
    rfs::migration::internal::TargetIndexGuard guard(sink, target, "logs-app", false);
    auto failures = guard.Write(batch);
    REQUIRE(failures.ok());
    CHECK(failures->empty());
    CHECK(sink->written.size() == 3);
    target.streams["logs-app"] = {"ds-1", "ds-2"};
    auto findings = guard.Recheck();
    REQUIRE(findings.ok());
    CHECK(findings->empty());
    // Deleted and created again: its first backing index is another one.
    target.streams["logs-app"] = {"ds-3"};
    findings = guard.Recheck();
    REQUIRE(findings.ok());
    REQUIRE(findings->size() == 1);
    CHECK(findings->front().message.find("ds-1 at the first documents, ds-3 at the end") !=
          std::string::npos);
  }
  SECTION("a lookup that fails fails the batch, then the retry goes through") {
    target.streams["logs-app"] = {"ds-1"};
    target.failures_left = 1;
    rfs::migration::internal::TargetIndexGuard guard(sink, target, "logs-app", false);
    auto failed = guard.Write(batch);
    CHECK(absl::IsUnavailable(failed.status()));
    CHECK(sink->batches == 0);
    auto retried = guard.Write(batch);
    REQUIRE(retried.ok());
    CHECK(retried->empty());
    CHECK(sink->written.size() == 3);
  }
}

TEST_CASE("an index the target creates itself is reported once, or refused when asked",
          "[migration][target-index][generated]") {
  auto generated = rfs::test::Generate("--indices 2 --shards 2 --docs 200 --deletes 10 --seed 91");
  if (!generated) return;
  Worker worker(generated->repo());
  worker.target.indices["index-0"] = {"u0"};
  worker.sink->prepares = GENERATE(false, true);
  INFO("batches prepared: " << worker.sink->prepares);
  SECTION("allowed by default: written, warned about once per index") {
    auto summary = worker.Run();
    REQUIRE(summary.ok());
    CHECK(rfs::migration::ExitCode(*summary) == 3);
    CHECK(summary->docs_failed == 0);
    CHECK(summary->indices_created_by_target == std::vector<std::string>{"index-1"});
    // Two shards of index-1, one warning.
    CHECK(worker.Events(WorkerEvent::Kind::kIndexCreatedByTarget) == 1);
    CHECK(worker.Written("index-1") > 0);
    CHECK(worker.failed.records.empty());
    CHECK((worker.sink->prepared > 0) == worker.sink->prepares);
  }
  SECTION("--no-auto-create-indices: its documents fail, none is sent, exit 6") {
    auto summary = worker.Run(/*refuse_missing=*/true);
    REQUIRE(summary.ok());
    CHECK(rfs::migration::ExitCode(*summary) == 6);
    CHECK(summary->indices_created_by_target.empty());
    CHECK(worker.Written("index-1") == 0);
    CHECK(worker.Written("index-0") > 0);
    CHECK_FALSE(worker.target.indices.contains("index-1"));
    CHECK(summary->docs_failed == worker.failed.records.size());
    REQUIRE_FALSE(worker.failed.records.empty());
    for (const auto& record : worker.failed.records) {
      CHECK(record.index == "index-1");
      CHECK(record.error_type == "index_not_on_target");
      CHECK(record.reason.find("--no-auto-create-indices") != std::string::npos);
    }
    CHECK(summary->by_index.at("index-1").rejected == worker.failed.records.size());
    CHECK(worker.Events(WorkerEvent::Kind::kTargetRefused) == 2);  // one per shard
  }
}

TEST_CASE("an index deleted and created again on the target while an item sends to it fails it",
          "[migration][target-index][generated]") {
  auto generated = rfs::test::Generate("--indices 1 --shards 1 --docs 200 --seed 92");
  if (!generated) return;
  Worker worker(generated->repo());
  worker.target.indices["index-0"] = {"u0"};
  // After the second of eight batches, the index is another one.
  worker.sink->after_write = [&](int batch) {
    if (batch != 2) return;
    std::lock_guard lock(worker.target.mu);
    worker.target.indices["index-0"] = {"u1"};
  };
  auto summary = worker.Run();
  INFO(summary.status());
  REQUIRE(absl::IsFailedPrecondition(summary.status()));
  CHECK(summary.status().message().find("index index-0 on the target was deleted") !=
        std::string::npos);
  CHECK(summary.status().message().find("u0 at the first documents, u1 at the end") !=
        std::string::npos);
  // Not completed: given back from its start, so the next worker sends the item again.
  auto reader = worker.Coordinator();
  auto item = reader->GetWorkItem(rfs::coordination::WorkItemId{"index-0", 0, 0}.ToString());
  REQUIRE(item.ok());
  REQUIRE(item->has_value());
  CHECK_FALSE((*item)->completed());
  REQUIRE((*item)->progress.has_value());
  CHECK((*item)->progress->next_cursor == 0);
  CHECK((*item)->lease_holder.empty());
}
