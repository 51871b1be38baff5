// Text codecs (see encoding_internal.hpp).
#include "rfs/net/encoding.hpp"

#include <cctype>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>

namespace rfs::net {
namespace {

// A boost::json::basic_parser handler that keeps nothing: the parser alone checks the grammar.
struct NullHandler {
  using error_code = boost::system::error_code;
  using string_view = boost::json::string_view;
  static constexpr size_t max_object_size = static_cast<size_t>(-1);
  static constexpr size_t max_array_size = static_cast<size_t>(-1);
  static constexpr size_t max_key_size = static_cast<size_t>(-1);
  static constexpr size_t max_string_size = static_cast<size_t>(-1);
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(size_t, error_code&) { return true; }
  bool on_object_begin(error_code&) { return true; }
  bool on_object_end(size_t, error_code&) { return true; }
  bool on_string_part(string_view, size_t, error_code&) { return true; }
  bool on_string(string_view, size_t, error_code&) { return true; }
  bool on_key_part(string_view, size_t, error_code&) { return true; }
  bool on_key(string_view, size_t, error_code&) { return true; }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(int64_t, string_view, error_code&) { return true; }
  bool on_uint64(uint64_t, string_view, error_code&) { return true; }
  bool on_double(double, string_view, error_code&) { return true; }
  bool on_bool(bool, error_code&) { return true; }
  bool on_null(error_code&) { return true; }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<boost::json::value> ParseJson(std::string_view text, size_t max_depth) {
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = max_depth;
  boost::json::value v =
      boost::json::parse(boost::json::string_view(text.data(), text.size()), ec, {}, options);
  if (ec) return std::nullopt;
  return v;
}

bool IsJson(std::string_view text, size_t max_depth) {
  boost::json::parse_options options;
  options.max_depth = max_depth;
  boost::json::basic_parser<NullHandler> parser(options);
  boost::system::error_code ec;
  const size_t used = parser.write_some(false, text.data(), text.size(), ec);
  return !ec && used == text.size();
}

std::string PercentEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
        HexValue(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace rfs::net
