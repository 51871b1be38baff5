#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

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
