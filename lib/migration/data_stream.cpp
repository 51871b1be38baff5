#include <algorithm>
#include <functional>
#include <span>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "migration/data_stream_internal.hpp"

namespace rfs::migration::internal {

namespace {

namespace json = boost::json;

bool HasValueAt(const json::value& value, std::string_view path) {
  const json::object* object = value.if_object();
  if (object == nullptr) return false;
  if (const json::value* direct = object->if_contains(path)) {
    const json::array* array = direct->if_array();
    return array != nullptr ? array->size() == 1 && !array->front().is_null() : !direct->is_null();
  }
  for (size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.', dot + 1)) {
    const json::value* child = object->if_contains(path.substr(0, dot));
    if (child != nullptr && HasValueAt(*child, path.substr(dot + 1))) return true;
  }
  return false;
}

}  // namespace

bool HasTimestampField(std::string_view source, std::string_view path) {
  boost::system::error_code ec;
  const json::value parsed = json::parse(source, ec);
  return !ec && HasValueAt(parsed, path);
}

}  // namespace rfs::migration::internal

namespace rfs::migration::internal {

namespace {

using core::StrCat;
using reindex::ItemFailure;
using reindex::SourceDocument;

std::string Join(const std::vector<std::string>& uuids) {
  if (uuids.empty()) return "none";
  std::string out;
  for (const std::string& uuid : uuids) out += StrCat(out.empty() ? "" : ", ", uuid);
  return out;
}

}  // namespace

TargetIndexGuard::TargetIndexGuard(std::shared_ptr<reindex::IDocumentSink> inner,
                                   ITargetIndices& target, std::optional<std::string> data_stream,
                                   bool refuse_missing)
    : inner_(std::move(inner)),
      target_(target),
      data_stream_(std::move(data_stream)),
      refuse_missing_(refuse_missing) {}

absl::StatusOr<std::vector<std::string>> TargetIndexGuard::Uuids(const Target& target,
                                                                 const std::string& name,
                                                                 bool* exists) {
  if (target.data_stream) {
    RFS_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> stream,
                         target_.DataStreamIndexUuids(name));
    *exists = stream.has_value();
    return stream.value_or(std::vector<std::string>());
  }
  RFS_ASSIGN_OR_RETURN(std::vector<std::string> uuids, target_.IndexUuids(name));
  *exists = !uuids.empty();
  return uuids;
}

absl::StatusOr<TargetIndexGuard::Target*> TargetIndexGuard::Look(const std::string& name) {
  if (auto it = targets_.find(name); it != targets_.end()) return &it->second;
  Target target;
  target.data_stream = data_stream_.has_value() && name == *data_stream_;
  bool exists = false;
  RFS_ASSIGN_OR_RETURN(target.uuids, Uuids(target, name, &exists));
  target.absent = !exists;
  if (target.absent && target.data_stream) {
    // A bulk `create` into a name that is no data stream makes the target create a plain index
    // of that name (with dynamic mappings), which then keeps the stream from ever being created:
    // OpenSearch's TransportBulkAction auto-creates the missing name, and AutoCreateAction
    // (server/.../action/admin/indices/create/AutoCreateAction.java) makes it a data stream only
    // when an index template with data_stream matches it.
    RFS_ASSIGN_OR_RETURN(std::vector<std::string> plain, target_.IndexUuids(name));
    target.refusal = ItemFailure{
        0, 404, std::string(kDataStreamNotOnTarget),
        StrCat("data stream ", name, " is not on the target",
               plain.empty() ? "" : " (an index of that name is, which the stream cannot replace)",
               ": its documents are not sent, as the target would make a plain index of that "
               "name. Run MetadataMigration migrate first (it creates the stream's index template "
               "and the stream), or create an index template with data_stream that matches it "
               "and PUT _data_stream/",
               name, "; then send these documents again (--redrive-failed-documents)")};
  } else if (target.absent && refuse_missing_) {
    target.refusal = ItemFailure{
        0, 404, std::string(kIndexNotOnTarget),
        StrCat("index ", name,
               " is not on the target and --no-auto-create-indices is set: create it first "
               "(MetadataMigration migrate), then send these documents again "
               "(--redrive-failed-documents)")};
  }
  return &targets_.emplace(name, std::move(target)).first->second;
}

absl::StatusOr<std::vector<ItemFailure>> TargetIndexGuard::Write(
    std::span<const SourceDocument* const> docs) {
  std::vector<ItemFailure> failures;
  std::vector<const SourceDocument*> passed;
  std::vector<size_t> positions;
  {
    std::lock_guard lock(mu_);
    // Every name first: a lookup that fails leaves the batch (and the counts) untouched.
    std::vector<Target*> of(docs.size());
    for (size_t i = 0; i < docs.size(); ++i) {
      RFS_ASSIGN_OR_RETURN(of[i], Look(docs[i]->index));
    }
    for (size_t i = 0; i < docs.size(); ++i) {
      if (of[i]->refusal) {
        failures.push_back(*of[i]->refusal);
        failures.back().position = i;
        ++of[i]->refused;
        continue;
      }
      passed.push_back(docs[i]);
      positions.push_back(i);
    }
  }
  if (passed.empty()) return failures;
  auto written = inner_->Write(
      passed.size() == docs.size() ? docs : std::span<const SourceDocument* const>(passed));
  if (!written.ok()) {
    // The refused ones are counted again when the batch is retried.
    std::lock_guard lock(mu_);
    for (const ItemFailure& f : failures) --targets_.at(docs[f.position]->index).refused;
    return written.status();
  }
  std::vector<bool> failed(passed.size());
  for (ItemFailure f : *written) {
    if (f.position < passed.size()) {
      failed[f.position] = true;
      f.position = positions[f.position];
    } else {
      f.position = docs.size();  // out of range, as the sink said: the reindexer reports it
    }
    failures.push_back(std::move(f));
  }
  std::sort(failures.begin(), failures.end(),
            [](const ItemFailure& a, const ItemFailure& b) { return a.position < b.position; });
  std::vector<const std::string*> accepted;
  for (size_t i = 0; i < passed.size(); ++i) {
    // A delete creates no index: OpenSearch's TransportBulkAction (server/.../action/bulk/
    // TransportBulkAction.java) leaves deletes out of the indices it auto-creates.
    if (!failed[i] && passed[i]->op != reindex::BulkOp::kDelete) {
      accepted.push_back(&passed[i]->index);
    }
  }
  Accepted(accepted);
  return failures;
}

void TargetIndexGuard::Accepted(std::span<const std::string* const> names) {
  std::lock_guard lock(mu_);
  for (const std::string* name : names) ++targets_.at(*name).accepted;
  for (auto& [name, target] : targets_) {
    if (!target.absent || target.refusal || !target.uuids.empty() || target.accepted == 0) {
      continue;
    }
    // The target made it with these documents: what it is now is what the end compares with.
    // Best effort (a later batch looks again).
    bool exists = false;
    if (auto uuids = Uuids(target, name, &exists); uuids.ok()) target.uuids = *std::move(uuids);
  }
}

namespace {

// The inner sink's prepared batch, with what the guard counts once it is written: the name each
// document went to (one per batch, as a rule), and whether it is a delete.
class GuardedBatch final : public reindex::IPreparedBatch {
 public:
  GuardedBatch(std::unique_ptr<reindex::IPreparedBatch> inner,
               std::function<void(std::span<const std::string* const>)> accepted)
      : inner_(std::move(inner)), accepted_(std::move(accepted)) {}

  // Building: the document at the next position.
  void Add(const SourceDocument& doc) {
    if (names_.empty() || names_.back() != doc.index) names_.push_back(doc.index);
    // Counted as accepted when written: not a delete (see TargetIndexGuard::Write).
    name_of_.push_back(doc.op == reindex::BulkOp::kDelete
                           ? kNotCounted
                           : static_cast<uint32_t>(names_.size() - 1));
  }

  size_t size() const override { return inner_->size(); }
  size_t held_bytes() const override {
    return inner_->held_bytes() + name_of_.capacity() * sizeof(uint32_t);
  }
  uint64_t cursor(size_t position) const override { return inner_->cursor(position); }
  size_t source_bytes(size_t position) const override { return inner_->source_bytes(position); }
  bool has_version(size_t position) const override { return inner_->has_version(position); }
  absl::StatusOr<std::vector<ItemFailure>> Write(std::span<const size_t> positions) override {
    RFS_ASSIGN_OR_RETURN(std::vector<ItemFailure> failures, inner_->Write(positions));
    std::vector<const std::string*> accepted;
    size_t next_failure = 0;
    for (size_t k = 0; k < positions.size(); ++k) {
      while (next_failure < failures.size() && failures[next_failure].position < k) ++next_failure;
      if (next_failure < failures.size() && failures[next_failure].position == k) continue;
      const uint32_t name = name_of_[positions[k]];
      if (name != kNotCounted) accepted.push_back(&names_[name]);
    }
    accepted_(accepted);
    return failures;
  }
  absl::StatusOr<std::vector<reindex::FailedDocument>> Describe(
      std::span<const size_t> positions) const override {
    return inner_->Describe(positions);
  }

 private:
  static constexpr uint32_t kNotCounted = UINT32_MAX;
  const std::unique_ptr<reindex::IPreparedBatch> inner_;
  const std::function<void(std::span<const std::string* const>)> accepted_;
  std::vector<std::string> names_;
  std::vector<uint32_t> name_of_;  // per position: into names_, or kNotCounted
};

}  // namespace

absl::StatusOr<std::unique_ptr<reindex::IPreparedBatch>> TargetIndexGuard::Prepare(
    std::span<const SourceDocument* const> docs) {
  {
    std::lock_guard lock(mu_);
    for (const SourceDocument* doc : docs) {
      RFS_ASSIGN_OR_RETURN(Target * target, Look(doc->index));
      // Documents refused here go through Write, which fails them without the inner sink.
      if (target->refusal) return nullptr;
    }
  }
  RFS_ASSIGN_OR_RETURN(std::unique_ptr<reindex::IPreparedBatch> inner, inner_->Prepare(docs));
  if (inner == nullptr) return nullptr;
  auto guarded = std::make_unique<GuardedBatch>(
      std::move(inner), [this](std::span<const std::string* const> names) { Accepted(names); });
  for (const SourceDocument* doc : docs) guarded->Add(*doc);
  return std::unique_ptr<reindex::IPreparedBatch>(std::move(guarded));
}

absl::StatusOr<std::vector<TargetIndexGuard::Finding>> TargetIndexGuard::Recheck() {
  std::vector<Finding> out;
  std::lock_guard lock(mu_);
  for (auto& [name, target] : targets_) {
    if (target.refusal) {
      if (target.refused > 0) {
        out.push_back({Finding::Kind::kRefused, name,
                       StrCat(target.refused, " documents failed: ", target.refusal->reason)});
      }
      continue;
    }
    bool exists = false;
    RFS_ASSIGN_OR_RETURN(std::vector<std::string> now, Uuids(target, name, &exists));
    if (target.absent && exists) {
      out.push_back(
          {Finding::Kind::kCreatedByTarget, name,
           StrCat("index ", name,
                  " was not on the target: the target created it at the first documents, with "
                  "its default settings and the mappings its templates and the documents made, "
                  "not the source's (run MetadataMigration first, or refuse such documents with "
                  "--no-auto-create-indices)")});
    }
    // Every index there at the first documents must still be (a data stream may have rolled
    // over to a new backing index meanwhile; its old ones stay).
    if (!std::includes(now.begin(), now.end(), target.uuids.begin(), target.uuids.end())) {
      out.push_back(
          {Finding::Kind::kReplaced, name,
           StrCat(target.data_stream ? "data stream " : "index ", name,
                  " on the target was deleted (and maybe created again) while documents "
                  "were sent to it: index uuids ",
                  Join(target.uuids), " at the first documents, ", Join(now), " at the end")});
    }
  }
  return out;
}

}  // namespace rfs::migration::internal
