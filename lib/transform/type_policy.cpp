#include "rfs/transform/type_policy.hpp"

#include <algorithm>
#include <cctype>

#include "rfs/core/str_cat.hpp"

namespace rfs::transform {

absl::StatusOr<MultiTypePolicy> ParseMultiTypePolicy(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "union") return MultiTypePolicy::kUnion;
  if (lower == "split") return MultiTypePolicy::kSplit;
  return absl::InvalidArgumentError(
      core::StrCat("multi-type behavior '", text, "' is not one of: union, split"));
}

std::string_view ToString(MultiTypePolicy policy) {
  return policy == MultiTypePolicy::kSplit ? "split" : "union";
}

size_t CountMappingTypes(const boost::json::object& mappings) {
  return mappings.size() - (mappings.contains("_default_") ? 1 : 0);
}

std::string TargetIndexForType(std::string_view index, std::string_view type, size_t type_count,
                               MultiTypePolicy policy) {
  if (policy == MultiTypePolicy::kSplit && type_count > 1 && !type.empty()) {
    return core::StrCat(index, "_", type);
  }
  return std::string(index);
}

}  // namespace rfs::transform
