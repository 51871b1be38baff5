#include <cstdint>
#include <tuple>

#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"

#include "s3/xml_internal.hpp"

namespace rfs::s3::internal {
namespace {

// XML's five named entities and numeric references; false for anything else.
bool DecodeText(std::string_view in, std::string& out) {
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
      // UTF-8 encode.
      if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
      } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
    } else {
      return false;
    }
    i = semi;
  }
  return true;
}

// The element <name> at or after `from`: its content's [begin, end) and the offset after its
// closing tag. nullopt when there is none; `bad` set when one opens but never closes.
struct Element {
  size_t begin = 0;
  size_t end = 0;
  size_t after = 0;
};
std::optional<Element> Find(std::string_view xml, std::string_view name, size_t from, size_t limit,
                            bool& bad, size_t& bad_at) {
  const std::string open = core::StrCat("<", name, ">");
  const std::string close = core::StrCat("</", name, ">");
  const size_t start = xml.substr(0, limit).find(open, from);
  if (start == std::string_view::npos) return std::nullopt;
  const size_t content = start + open.size();
  const size_t stop = xml.substr(0, limit).find(close, content);
  if (stop == std::string_view::npos) {
    bad = true;
    bad_at = start;
    return std::nullopt;
  }
  return Element{content, stop, stop + close.size()};
}

}  // namespace

std::optional<std::string> XmlFirst(std::string_view xml, std::string_view name) {
  bool bad = false;
  size_t at = 0;
  auto e = Find(xml, name, 0, xml.size(), bad, at);
  if (!e) return std::nullopt;
  std::string out;
  if (!DecodeText(xml.substr(e->begin, e->end - e->begin), out)) return std::nullopt;
  return out;
}

absl::StatusOr<ListPage> ParseListPage(std::string_view xml, std::string_view source) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) {
    return core::DataLossAt(source, 0, "not a ListObjectsV2 result");
  }
  ListPage page;
  bool bad = false;
  size_t bad_at = 0;
  std::string text;
  // Each <Contents> holds one <Key>; each <CommonPrefixes> one <Prefix>.
  for (const auto& [outer, inner, into] :
       {std::tuple{std::string_view("Contents"), std::string_view("Key"), &page.keys},
        std::tuple{std::string_view("CommonPrefixes"), std::string_view("Prefix"),
                   &page.prefixes}}) {
    size_t from = 0;
    while (auto block = Find(xml, outer, from, xml.size(), bad, bad_at)) {
      auto value = Find(xml, inner, block->begin, block->end, bad, bad_at);
      if (!value || !DecodeText(xml.substr(value->begin, value->end - value->begin), text)) {
        return core::DataLossAt(source, block->begin,
                                core::StrCat("<", outer, "> without a readable <", inner, ">"));
      }
      into->push_back(text);
      from = block->after;
    }
    if (bad) return core::DataLossAt(source, bad_at, "unterminated element");
  }
  page.truncated = XmlFirst(xml, "IsTruncated").value_or("false") == "true";
  page.next_token = XmlFirst(xml, "NextContinuationToken").value_or("");
  return page;
}

}  // namespace rfs::s3::internal
