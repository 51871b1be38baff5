// java.util.Properties.load's grammar (the JDK's Properties.java, LineReader and
// loadConvert), over UTF-8 text: Solr writes its backup properties through a UTF-8 Writer
// (BackupProperties.store), so characters outside ASCII arrive unescaped.
#include <cstdint>

#include "rfs/core/json_string.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/solr/backup.hpp"

namespace rfs::solr {

using core::StrCat;

namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\f'; }

// One logical line: physical lines joined where one ends in an odd number of backslashes, the
// next one's leading blanks dropped (LineReader.readLine).
struct LogicalLine {
  std::string text;
  size_t first_line = 0;  // 1-based, for messages
};

std::vector<LogicalLine> LogicalLines(std::string_view text) {
  std::vector<std::string_view> physical;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = pos;
    while (end < text.size() && text[end] != '\n' && text[end] != '\r') ++end;
    physical.push_back(text.substr(pos, end - pos));
    // "\r\n" ends one line.
    if (end + 1 < text.size() && text[end] == '\r' && text[end + 1] == '\n') ++end;
    pos = end + 1;
  }
  std::vector<LogicalLine> lines;
  LogicalLine current;
  bool continuing = false;
  for (size_t i = 0; i < physical.size(); ++i) {
    std::string_view line = physical[i];
    while (!line.empty() && IsBlank(line.front())) line.remove_prefix(1);
    if (!continuing) {
      // Blank and comment lines are dropped whole (a comment line does not continue).
      if (line.empty() || line[0] == '#' || line[0] == '!') continue;
      current = LogicalLine{"", i + 1};
    }
    size_t backslashes = 0;
    while (backslashes < line.size() && line[line.size() - 1 - backslashes] == '\\') {
      ++backslashes;
    }
    continuing = backslashes % 2 == 1;
    if (continuing) line.remove_suffix(1);
    current.text.append(line);
    if (!continuing) lines.push_back(std::move(current));
  }
  if (continuing) lines.push_back(std::move(current));
  return lines;
}

// loadConvert: backslash escapes.
absl::StatusOr<std::string> Unescape(std::string_view in, std::string_view source, size_t line) {
  std::string out;
  out.reserve(in.size());
  uint32_t high_surrogate = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i == in.size()) break;  // a lone trailing backslash is dropped, as Java does
    c = in[i];
    if (c == 'u') {
      if (in.size() - i - 1 < 4) {
        return absl::DataLossError(
            StrCat(source, ": line ", line, ": malformed \\uXXXX escape (fewer than 4 digits)"));
      }
      uint32_t cp = 0;
      for (size_t k = 1; k <= 4; ++k) {
        const char h = in[i + k];
        cp <<= 4;
        if (h >= '0' && h <= '9') {
          cp |= h - '0';
        } else if (h >= 'a' && h <= 'f') {
          cp |= h - 'a' + 10;
        } else if (h >= 'A' && h <= 'F') {
          cp |= h - 'A' + 10;
        } else {
          return absl::DataLossError(StrCat(source, ": line ", line, ": malformed \\uXXXX escape (",
                                            in.substr(i - 1, 6), ")"));
        }
      }
      i += 4;
      // UTF-16 surrogate pairs arrive as two escapes.
      if (cp >= 0xD800 && cp < 0xDC00) {
        high_surrogate = cp;
        continue;
      }
      if (cp >= 0xDC00 && cp < 0xE000 && high_surrogate != 0) {
        cp = 0x10000 + ((high_surrogate - 0xD800) << 10) + (cp - 0xDC00);
      }
      high_surrogate = 0;
      core::AppendUtf8(cp, out);
      continue;
    }
    switch (c) {
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'f':
        out.push_back('\f');
        break;
      default:
        out.push_back(c);
        break;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseJavaProperties(std::string_view text,
                                                                       std::string_view source) {
  std::map<std::string, std::string> properties;
  for (const LogicalLine& line : LogicalLines(text)) {
    const std::string& s = line.text;
    // The key ends at the first unescaped '=', ':' or blank (Properties.load).
    size_t key_end = 0;
    bool escaped = false;
    for (; key_end < s.size(); ++key_end) {
      const char c = s[key_end];
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '=' || c == ':' || IsBlank(c)) {
        break;
      }
    }
    size_t value_start = key_end;
    while (value_start < s.size() && IsBlank(s[value_start])) ++value_start;
    if (value_start < s.size() && (s[value_start] == '=' || s[value_start] == ':')) {
      ++value_start;
      while (value_start < s.size() && IsBlank(s[value_start])) ++value_start;
    }
    auto key = Unescape(std::string_view(s).substr(0, key_end), source, line.first_line);
    if (!key.ok()) return key.status();
    auto value = Unescape(std::string_view(s).substr(value_start), source, line.first_line);
    if (!value.ok()) return value.status();
    properties[*std::move(key)] = *std::move(value);
  }
  return properties;
}

}  // namespace rfs::solr
