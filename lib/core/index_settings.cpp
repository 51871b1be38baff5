#include "rfs/core/index_settings.hpp"

#include "rfs/core/str_cat.hpp"

namespace rfs::core {
namespace {

void FlattenInto(const boost::json::object& in, const std::string& prefix,
                 std::vector<std::pair<std::string, const boost::json::value*>>& out) {
  for (const auto& [key, value] : in) {
    std::string name =
        prefix.empty() ? std::string(key) : StrCat(prefix, ".", std::string_view(key));
    if (value.is_object()) {
      FlattenInto(value.get_object(), name, out);
    } else {
      out.emplace_back(std::move(name), &value);
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, const boost::json::value*>> FlattenSettings(
    const boost::json::object& settings) {
  std::vector<std::pair<std::string, const boost::json::value*>> out;
  FlattenInto(settings, "", out);
  return out;
}

}  // namespace rfs::core
