// What the files of DocumentMigrationWorker share: how one grant of an item ended.
#pragma once

#include "rfs/migration/document_migration_worker.hpp"

namespace rfs::migration {

struct DocumentMigrationWorker::ItemResult {
  enum class Kind { kCompleted, kCheckpointed, kNoProgress, kLeaseLost, kStopped };
  Kind kind = Kind::kCompleted;
};

}  // namespace rfs::migration
