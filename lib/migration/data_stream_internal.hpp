// What the document migration checks of a data stream's documents, and of every name on the
// target its documents go to, before and after it sends them.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/reindex/document_sink.hpp"

#include "absl/status/statusor.h"

namespace rfs::migration::internal {

/// Whether `source` (JSON) holds the data stream's timestamp field `path` with one value, not
/// null: written as nested objects ({"event":{"created":..}}), as a dotted key
/// ({"event.created":..}) or a mix, as the engines map all of them to one field. A one-element
/// array counts as one value; a source that is not JSON has none.
bool HasTimestampField(std::string_view source, std::string_view path);

/// The failed-document error types of documents refused for their target.
inline constexpr std::string_view kDataStreamNotOnTarget = "data_stream_not_on_target";
inline constexpr std::string_view kIndexNotOnTarget = "index_not_on_target";

/// The sink of one grant of an item, in front of the target's: before the first documents of
/// each target name go, it looks the name up (ITargetIndices), and fails the documents of a data
/// stream that is not on the target, or of a missing index when the target must not create it;
/// Recheck, once the documents are sent, looks at every name again. Whatever a transform made
/// of a document, its index is the one looked at. A lookup that fails fails the batch as a
/// whole, which the reindexer retries as it retries a bulk.
class TargetIndexGuard final : public reindex::IDocumentSink {
 public:
  /// `data_stream`: the stream the item's documents are meant for (a name the documents go to
  /// that is this one must be that data stream). `refuse_missing`: --no-auto-create-indices.
  TargetIndexGuard(std::shared_ptr<reindex::IDocumentSink> inner, ITargetIndices& target,
                   std::optional<std::string> data_stream, bool refuse_missing);

  absl::StatusOr<std::vector<reindex::ItemFailure>> Write(
      std::span<const reindex::SourceDocument* const> docs) override;
  reindex::BulkActionOptions action_options() const override { return inner_->action_options(); }
  std::string description() const override { return inner_->description(); }
  bool reports_target_load() const override { return inner_->reports_target_load(); }
  bool writes_rendered_lines() const override { return inner_->writes_rendered_lines(); }
  bool copies_batches() const override { return inner_->copies_batches(); }
  bool copies_rendered_lines() const override { return inner_->copies_rendered_lines(); }
  /// The inner sink's prepared batch, once every name its documents go to has been looked up;
  /// nullptr (written through Write) when one of them is refused.
  absl::StatusOr<std::unique_ptr<reindex::IPreparedBatch>> Prepare(
      std::span<const reindex::SourceDocument* const> docs) override;

  struct Finding {
    enum class Kind {
      kCreatedByTarget,  // not there at the first documents, there now
      kRefused,          // documents failed, `message` says why and how many
      kReplaced,         // an index there at the first documents is gone (deleted, re-created)
    };
    Kind kind;
    std::string name;
    std::string message;
  };
  /// Looks at every name documents went to again (call once every Write has returned).
  absl::StatusOr<std::vector<Finding>> Recheck();

 private:
  struct Target {
    bool data_stream = false;
    /// Not there when first looked at: the target creates it at its first documents, unless
    /// `refusal` is set.
    bool absent = false;
    /// The uuids at the first documents (for a name the target created, once it had).
    std::vector<std::string> uuids;
    std::optional<reindex::ItemFailure> refusal;
    uint64_t refused = 0;
    uint64_t accepted = 0;
  };
  absl::StatusOr<Target*> Look(const std::string& name);  // mu_ held
  /// Counts documents the target accepted, by the name each went to; takes mu_.
  void Accepted(std::span<const std::string* const> names);
  absl::StatusOr<std::vector<std::string>> Uuids(const Target& target, const std::string& name,
                                                 bool* exists);

  const std::shared_ptr<reindex::IDocumentSink> inner_;
  ITargetIndices& target_;
  const std::optional<std::string> data_stream_;
  const bool refuse_missing_;
  std::mutex mu_;
  std::map<std::string, Target> targets_;  // guarded by mu_
};

}  // namespace rfs::migration::internal
