#include "rfs/core/json_text.hpp"

#include <charconv>
#include <cmath>
#include <string_view>

#include "rfs/core/json_string.hpp"

namespace rfs::core {

namespace json = boost::json;

void AppendJsonText(const json::object& object, std::string& out) {
  out += '{';
  bool first = true;
  for (const auto& [key, e] : object) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(std::string_view(key.data(), key.size()), out);
    out += ':';
    AppendJsonText(e, out);
  }
  out += '}';
}

void AppendJsonText(const json::array& array, std::string& out) {
  out += '[';
  bool first = true;
  for (const auto& e : array) {
    if (!first) out += ',';
    first = false;
    AppendJsonText(e, out);
  }
  out += ']';
}

void AppendJsonText(const json::value& value, std::string& out) {
  char buffer[32];
  switch (value.kind()) {
    case json::kind::null:
      out += "null";
      return;
    case json::kind::bool_:
      out += value.get_bool() ? "true" : "false";
      return;
    case json::kind::int64: {
      auto r = std::to_chars(buffer, buffer + sizeof buffer, value.get_int64());
      out.append(buffer, r.ptr);
      return;
    }
    case json::kind::uint64: {
      auto r = std::to_chars(buffer, buffer + sizeof buffer, value.get_uint64());
      out.append(buffer, r.ptr);
      return;
    }
    case json::kind::double_: {
      const double d = value.get_double();
      if (!std::isfinite(d)) {
        out += "null";
        return;
      }
      auto r = std::to_chars(buffer, buffer + sizeof buffer, d);
      const std::string_view text(buffer, static_cast<size_t>(r.ptr - buffer));
      out += text;
      // Keep it a double for readers that tell 1.0 from 1.
      if (text.find_first_of(".eE") == std::string_view::npos) out += ".0";
      return;
    }
    case json::kind::string: {
      const json::string& s = value.get_string();
      AppendJsonString(std::string_view(s.data(), s.size()), out);
      return;
    }
    case json::kind::array:
      AppendJsonText(value.get_array(), out);
      return;
    case json::kind::object:
      AppendJsonText(value.get_object(), out);
      return;
  }
}

std::string JsonText(const json::value& value) {
  std::string out;
  AppendJsonText(value, out);
  return out;
}

std::string JsonText(const json::object& object) {
  std::string out;
  AppendJsonText(object, out);
  return out;
}

std::string JsonText(const json::array& array) {
  std::string out;
  AppendJsonText(array, out);
  return out;
}

}  // namespace rfs::core
