// VerifyingSink: the sink of RfsWorker's full verification (--verify-all). It receives the
// batches exactly as the migration would send them (index, id, routing, `_source` after rebuild
// and transforms), fetches the same ids from the target (`_mget` with routing; a data stream,
// which serves no GET by `_id`, is searched by `ids`) and compares each `_source` as a JSON value.
// Every document not equal is an item failure the reindexer records, with its action and source as
// sent, in the round's failed-document sink, where `--redrive-failed-documents` takes it:
//
//   verify_missing         404  not on the target (or its index is not)
//   verify_different       409  on the target with another `_source`
//   verify_not_comparable  422  its target index keeps no `_source`, or leaves fields out of it
//
// None of these statuses is retried (reindex::IsRetryableItemFailure). With `preserve_version`, a
// document the target holds in a higher `_version` than the source's is answered as the bulk
// sink's 409 version_conflict_engine_exception: the reindexer counts it as already newer.
//
// Thread safety: Write may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/document_sink.hpp"

namespace rfs::migration::internal {

inline constexpr std::string_view kVerifyMissing = "verify_missing";
inline constexpr std::string_view kVerifyDifferent = "verify_different";
inline constexpr std::string_view kVerifyNotComparable = "verify_not_comparable";
inline constexpr int kVerifyMissingStatus = 404;
inline constexpr int kVerifyDifferentStatus = 409;
inline constexpr int kVerifyNotComparableStatus = 422;

/// What one process's verifying sinks found, per target index (a report of the whole round is
/// read from the store and the round's failed-document records instead: other workers share it).
struct VerifyTally {
  struct Counts {
    std::atomic<uint64_t> equal{0}, missing{0}, different{0}, not_comparable{0}, already_newer{0};
  };
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Counts>> by_index;
  Counts& For(const std::string& index);
};

struct VerifyingSinkOptions {
  /// The round, named in every reason ("verify round 3: not on the target").
  int round = 1;
  bool preserve_version = false;
  /// The bulk sink's action options, so that a record shows the action the migration sends.
  reindex::BulkActionOptions action_options;
  /// A batch is fetched from the target and compared this many bytes of its sources at a time
  /// (at least one document): the target's answer, parsed, takes several times its text, and a
  /// whole batch's on each connection at once took a worker past its memory bound.
  size_t compare_bytes = size_t{1} << 20;
};

class VerifyingSink final : public reindex::IDocumentSink {
 public:
  /// `client` (its transport resends reads on passing faults) and `tally` must outlive the sink.
  VerifyingSink(opensearch::OpenSearchClient& client, VerifyTally& tally,
                VerifyingSinkOptions options)
      : client_(client), tally_(tally), options_(std::move(options)) {}
  absl::StatusOr<std::vector<reindex::ItemFailure>> Write(
      std::span<const reindex::SourceDocument* const> docs) override;
  reindex::BulkActionOptions action_options() const override { return options_.action_options; }
  std::string description() const override;

 private:
  // How a target index is kept, looked at once per name.
  struct Target {
    bool exists = false;
    bool data_stream = false;
    // Why its documents cannot be compared; empty when they can.
    std::string not_comparable;
  };
  // One document of the target, found or not.
  struct Stored {
    bool found = false;
    boost::json::value source;
    int64_t version = 0;
  };
  using Docs = std::span<const reindex::SourceDocument* const>;
  absl::StatusOr<Target> LookAt(const std::string& index);
  // Fetches and judges docs[positions] of one target index, compare_bytes of sources at a time.
  absl::Status Compare(const std::string& index, Docs docs, std::span<const size_t> positions,
                       VerifyTally::Counts& tally, std::vector<reindex::ItemFailure>& failures);
  // The target's copies of docs[positions[k]] into stored[k]. A data stream serves no GET by
  // _id (its documents are in backing indices), so it is searched; false when it is gone.
  absl::StatusOr<bool> SearchDataStream(const std::string& index, Docs docs,
                                        std::span<const size_t> positions,
                                        std::vector<Stored>& stored);
  absl::Status MultiGet(const std::string& index, Docs docs, std::span<const size_t> positions,
                        std::vector<Stored>& stored);
  // Each document against its copy: the tally counted, the failures recorded.
  void Judge(Docs docs, std::span<const size_t> positions, const std::vector<Stored>& stored,
             VerifyTally::Counts& tally, const std::string& round,
             std::vector<reindex::ItemFailure>& failures);

  opensearch::OpenSearchClient& client_;
  VerifyTally& tally_;
  const VerifyingSinkOptions options_;
  std::mutex mu_;
  std::map<std::string, Target> targets_;  // guarded by mu_
};

}  // namespace rfs::migration::internal
