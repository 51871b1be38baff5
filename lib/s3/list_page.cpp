#include <cstdint>
#include <tuple>

#include "rfs/core/errors.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/xml.hpp"

#include "s3/list_page_internal.hpp"

namespace rfs::s3::internal {
namespace {

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
      if (!value ||
          !net::XmlDecodeText(xml.substr(value->begin, value->end - value->begin), text)) {
        return core::DataLossAt(source, block->begin,
                                core::StrCat("<", outer, "> without a readable <", inner, ">"));
      }
      into->push_back(text);
      from = block->after;
    }
    if (bad) return core::DataLossAt(source, bad_at, "unterminated element");
  }
  page.truncated = net::XmlElementText(xml, "IsTruncated").value_or("false") == "true";
  page.next_token = net::XmlElementText(xml, "NextContinuationToken").value_or("");
  return page;
}

}  // namespace rfs::s3::internal
