// The per-cursor side of source rebuilding (source_rebuild.hpp): renders one document of a
// segment from its doc values and stored fields through a plan. Internal to rfs::lucene; not
// thread-safe (one per cursor).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rfs/lucene/source_rebuild.hpp"

#include "absl/status/status.h"

namespace rfs::lucene::internal {

class SegmentDocValues;

/// A stored field of the document other than the metadata ones, copied out of its chunk.
struct StoredValue {
  std::string name;
  std::string text;  ///< strings and bytes
  int64_t long_value = 0;
  double double_value = 0;
  bool is_number = false;
};

class SourceRebuilder {
 public:
  explicit SourceRebuilder(std::shared_ptr<const SourceRebuildPlan> plan);

  const SourceRebuildPlan& plan() const { return *plan_; }
  /// The JSON source of `doc` (its fields in name order; "{}" when none has a value).
  absl::Status Rebuild(int32_t doc, SegmentDocValues& doc_values,
                       const std::vector<StoredValue>& stored, std::string& out);

 private:
  struct Node {
    std::map<std::string, size_t> children;
    int field = -1;
  };
  absl::Status FieldValues(const RebuildField& field, int32_t doc, SegmentDocValues& doc_values,
                           const std::vector<StoredValue>& stored, std::vector<std::string>& out);
  bool Write(size_t node, std::string& out);

  std::shared_ptr<const SourceRebuildPlan> plan_;
  std::vector<Node> nodes_;
  std::vector<std::vector<std::string>> values_;  // JSON texts by field
  std::vector<std::string> terms_;
  std::vector<int64_t> numbers_;
  std::string binary_, scratch_;
};

}  // namespace rfs::lucene::internal
