#include "rfs/net/xml.hpp"

#include <cstdint>

#include "rfs/core/json_string.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::net {

// XML's five named entities and numeric references; false for anything else.
bool XmlDecodeText(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '&') {
      out.push_back(in[i]);
      continue;
    }
    const size_t semi = in.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) return false;
    const std::string_view entity = in.substr(i + 1, semi - i - 1);
    if (entity == "amp") {
      out.push_back('&');
    } else if (entity == "lt") {
      out.push_back('<');
    } else if (entity == "gt") {
      out.push_back('>');
    } else if (entity == "quot") {
      out.push_back('"');
    } else if (entity == "apos") {
      out.push_back('\'');
    } else if (entity.size() > 1 && entity[0] == '#') {
      const bool hex = entity[1] == 'x';
      uint32_t cp = 0;
      for (char c : entity.substr(hex ? 2 : 1)) {
        const int digit = c >= '0' && c <= '9'          ? c - '0'
                          : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                        : -1;
        if (digit < 0) return false;
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(digit);
        if (cp > 0x10FFFF) return false;
      }
      core::AppendUtf8(cp, out);
    } else {
      return false;
    }
    i = semi;
  }
  return true;
}

std::optional<std::string> XmlElementText(std::string_view xml, std::string_view name) {
  const std::string open = core::StrCat("<", name, ">");
  const std::string close = core::StrCat("</", name, ">");
  const size_t start = xml.find(open);
  if (start == std::string_view::npos) return std::nullopt;
  const size_t content = start + open.size();
  const size_t stop = xml.find(close, content);
  if (stop == std::string_view::npos) return std::nullopt;
  std::string out;
  if (!XmlDecodeText(xml.substr(content, stop - content), out)) return std::nullopt;
  return out;
}

}  // namespace rfs::net
