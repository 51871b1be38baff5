// The records a migration keeps about the target indices it tunes for the load (RfsWorker's
// --tune-target): completed items of the workers' record space, each naming its index by
// base64url (as WorkItemId does), so that any reader of the store (a worker, the console's
// status) tells which indices are tuned and not yet restored.
//
//   created_empty__<index>   the run created the index empty (phase 3, or found it empty at the
//                            shard setup): it may be tuned
//   tuned__<index>           tuned before its first bulk; its one successor is the completed
//                            record tuned_original__<base64url of the original settings as JSON>
//   restored__<index>        its original settings were put back and the index refreshed
//   tuning_lock__<index>     leased (never completed) while a worker tunes or restores it
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "rfs/core/base64.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::coordination {

inline constexpr std::string_view kCreatedEmptyPrefix = "created_empty__";
inline constexpr std::string_view kTunedPrefix = "tuned__";
inline constexpr std::string_view kTunedOriginalPrefix = "tuned_original__";
inline constexpr std::string_view kRestoredPrefix = "restored__";
inline constexpr std::string_view kTuningLockPrefix = "tuning_lock__";

/// `prefix` + base64url(`index`).
inline std::string TuningRecordId(std::string_view prefix, std::string_view index) {
  return core::StrCat(prefix, core::Base64UrlEncode(index));
}

/// The index a record of `prefix` names; nullopt for another record or a name that does not
/// decode.
inline std::optional<std::string> TuningRecordIndex(std::string_view prefix, std::string_view id) {
  if (!id.starts_with(prefix)) return std::nullopt;
  auto decoded = core::Base64Decode(id.substr(prefix.size()));
  if (!decoded.ok()) return std::nullopt;
  return std::string(decoded->begin(), decoded->end());
}

}  // namespace rfs::coordination
