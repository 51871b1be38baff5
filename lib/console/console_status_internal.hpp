// What the status report and the work-item answers both read from an item (console_status.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rfs/console/console_store.hpp"
#include "rfs/coordination/work_coordinator.hpp"

namespace rfs::console::internal {

struct ItemShard {
  std::optional<std::string> index_name;
  std::optional<int64_t> shard_number;
};

/// The index and shard an item works on: as its info declares (`info` may be null), else as its
/// id encodes; either stays unknown when neither says.
ItemShard ShardOfItem(const coordination::WorkItemState& item, const WorkItemInfo* info);

}  // namespace rfs::console::internal
