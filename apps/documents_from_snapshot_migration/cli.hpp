// The usage text of DocumentsFromSnapshotMigration.
#pragma once

namespace rfs::apps::documents {

extern const char* const kUsage;

}  // namespace rfs::apps::documents
