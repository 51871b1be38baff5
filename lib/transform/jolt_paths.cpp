// Jolt's paths: see jolt_paths.hpp.
#include "jolt_paths.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "rfs/core/java_number.hpp"

namespace rfs::transform::internal::jolt {

namespace json = boost::json;
using core::StrCat;

// --- References: &(path, group), $(path, group), #path (common/reference) ---

// Parses "&", "&2", "&(1,2)" (or with '$'); `with_group` false for '#' references ("#2").
Reference ParseReference(std::string_view text, char token, bool with_group) {
  if (text.empty() || text[0] != token) {
    throw SpecError(
        StrCat("invalid reference key ", text, ": it should start with ", std::string(1, token)));
  }
  Reference ref;
  const std::string_view meat = text.substr(1);
  auto number = [&](std::string_view digits) {
    int value = 0;
    // Java's Integer.parseInt: an optional sign and decimal digits.
    std::string_view body = digits;
    bool negative = false;
    if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
      negative = body[0] == '-';
      body.remove_prefix(1);
    }
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
    if (body.empty() || ec != std::errc() || end != body.data() + body.size()) {
      throw SpecError(StrCat("unable to parse '", text.substr(0, 1), "' reference key: ", text));
    }
    return negative ? -value : value;
  };
  if (!meat.empty()) {
    if (with_group && meat.size() >= 3 && meat.front() == '(' && meat.back() == ')') {
      // Java splits "(1,2)" on ',' and drops trailing empty parts: "(1,)" is "(1,0)".
      std::vector<std::string_view> parts;
      std::string_view inner = meat.substr(1, meat.size() - 2);
      for (size_t comma = inner.find(','); comma != std::string_view::npos;
           comma = inner.find(',')) {
        parts.push_back(inner.substr(0, comma));
        inner.remove_prefix(comma + 1);
      }
      parts.push_back(inner);
      while (!parts.empty() && parts.back().empty()) parts.pop_back();
      if (parts.empty() || parts.size() > 2) throw SpecError(StrCat("invalid reference ", text));
      ref.path = number(parts[0]);
      if (parts.size() == 2) ref.group = number(parts[1]);
    } else {
      ref.path = number(meat);
    }
  }
  if (ref.path < 0 || ref.group < 0) {
    throw SpecError(StrCat("reference ", text, " cannot have a negative value"));
  }
  return ref;
}

std::string RefCanonical(char token, const Reference& ref) {
  return StrCat(std::string(1, token), "(", ref.path, ",", ref.group, ")");
}

// --- The walked path (common/tree) ---

const std::string& SubKey(const Matched& m, int group) {
  if (group < 0 || static_cast<size_t>(group) >= m.keys.size()) {
    throw RunError(StrCat("a reference asks for the key's part ", group, " of the key \"",
                          m.keys[0], "\", which has ", m.keys.size() - 1, " captured part(s)"));
  }
  return m.keys[static_cast<size_t>(group)];
}

// Java's Integer.parseInt for a non-negative index: the text when it is one, else nullopt.
std::optional<int64_t> NonNegativeInt(std::string_view text) {
  std::string_view body = text;
  if (!body.empty() && body[0] == '+') body.remove_prefix(1);
  int32_t value = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (body.empty() || ec != std::errc() || end != body.data() + body.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// --- Values as Java prints them (ExecutionStrategy.processScalar's toString) ---

std::optional<std::string> ScalarKeyText(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return std::string(v.get_string());
    case json::kind::bool_:
      return std::string(v.get_bool() ? "true" : "false");
    case json::kind::int64:
      return std::to_string(v.get_int64());
    case json::kind::uint64:
      return std::to_string(v.get_uint64());
    case json::kind::double_:
      return core::JavaDoubleString(v.get_double());
    default:
      return std::nullopt;
  }
}

// Java's Number.intValue(): doubles truncate toward zero and saturate, longs keep their low bits.
int32_t JavaIntValue(const json::value& v) {
  if (v.is_int64()) return static_cast<int32_t>(static_cast<uint32_t>(v.get_int64()));
  if (v.is_uint64()) return static_cast<int32_t>(static_cast<uint32_t>(v.get_uint64()));
  const double d = v.get_double();
  if (std::isnan(d)) return 0;
  if (d >= 2147483647.0) return std::numeric_limits<int32_t>::max();
  if (d <= -2147483648.0) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(d);
}

// --- Keys of a write or read path (EvaluatablePathElement) ---

std::vector<AmpToken> ParseAmpTokens(std::string_view key, std::string* canonical) {
  std::vector<AmpToken> tokens;
  std::string literal;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] != '&') {
      literal += key[i];
      continue;
    }
    if (!literal.empty()) {
      *canonical += literal;
      tokens.emplace_back(std::move(literal));
      literal.clear();
    }
    size_t end = i + 1;
    while (end < key.size() && (std::isdigit(static_cast<unsigned char>(key[end])) ||
                                key[end] == '(' || key[end] == ')' || key[end] == ',')) {
      ++end;
    }
    const Reference ref = ParseReference(key.substr(i, end - i), '&', /*with_group=*/true);
    *canonical += RefCanonical('&', ref);
    tokens.emplace_back(ref);
    i = end - 1;
  }
  if (!literal.empty()) {
    *canonical += literal;
    tokens.emplace_back(std::move(literal));
  }
  return tokens;
}

std::string EvaluateAmp(const std::vector<AmpToken>& tokens, const Walk& walk) {
  std::string out;
  for (const auto& token : tokens) {
    if (const auto* text = std::get_if<std::string>(&token)) {
      out += *text;
    } else {
      const auto& ref = std::get<Reference>(token);
      out += SubKey(*walk.FromEnd(ref.path).match, ref.group);
    }
  }
  return out;
}

std::vector<PathKey> ParseDotPath(std::string_view dot_path);

std::shared_ptr<const Transpose> ParseTranspose(std::string_view key) {
  if (key.size() < 2 || key[0] != '@') {
    throw SpecError(StrCat("'Transpose Input' key must start with '@' and have more: ", key));
  }
  std::string_view meat = key.substr(1);
  if (meat.find('@') != std::string_view::npos) {
    throw SpecError(StrCat("@ path element cannot contain a nested @: ", key));
  }
  if (meat.find('*') != std::string_view::npos || meat.find("[]") != std::string_view::npos) {
    throw SpecError(StrCat("'Transpose Input' cannot contain * or []: ", key));
  }
  if (meat.front() == '(') {
    if (meat.back() != ')') throw SpecError(StrCat("@( without a matching ): ", key));
    meat = meat.substr(1, meat.size() - 2);
  }
  auto t = std::make_shared<Transpose>();
  std::string_view sub = meat;
  if (!meat.empty() && std::isdigit(static_cast<unsigned char>(meat[0]))) {
    const size_t comma = meat.find(',');
    const std::string_view digits = meat.substr(0, comma);
    for (char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        throw SpecError(StrCat("@ path element with a non-numeric level: ", key));
      }
    }
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), t->up);
    if (ec != std::errc()) throw SpecError(StrCat("@ path element level too large: ", key));
    sub = comma == std::string_view::npos ? std::string_view() : meat.substr(comma + 1);
  }
  if (sub.empty()) {
    t->canonical = StrCat("@(", t->up, ",)");
  } else {
    t->path = ParseDotPath(sub);
    std::string path_canonical;
    for (const auto& k : *t->path) {
      path_canonical += (path_canonical.empty() ? "" : ".") + k.canonical;
    }
    t->canonical = StrCat("@(", t->up, ",", path_canonical, ")");
  }
  return t;
}

// StringTools.countMatches.
size_t Count(std::string_view text, char c) { return std::count(text.begin(), text.end(), c); }

// SpecStringParser.removeEscapedValues / removeEscapeChars.
std::string RemoveEscapedValues(std::string_view key) {
  std::string out;
  bool escaped = false;
  for (char c : key) {
    if (c == '\\') {
      escaped = !escaped;
    } else {
      if (!escaped) out += c;
      escaped = false;
    }
  }
  return out;
}
std::string RemoveEscapeChars(std::string_view key) {
  std::string out;
  bool escaped = false;
  for (char c : key) {
    if (c == '\\' && !escaped) {
      escaped = true;
    } else {
      out += c;
      escaped = false;
    }
  }
  return out;
}

// "@..." or "..@(...": a transpose key (PathElementBuilder); any other '@' is refused.
bool IsTransposeKey(const std::string& inspect, const std::string& key) {
  if ((!inspect.empty() && inspect[0] == '@') || inspect.find("@(") != std::string::npos) {
    return true;
  }
  if (inspect.find('@') != std::string::npos) {
    throw SpecError(StrCat("invalid key ", key, ": an @ only at the front"));
  }
  return false;
}

PathKey ParseArrayKey(std::string_view key) {
  PathKey k;
  if (key.size() == 2) {
    k.kind = PathKey::Kind::kAppend;
    k.canonical = "[]";
    return k;
  }
  const std::string_view meat = key.substr(1, key.size() - 2);
  if (meat[0] == '&') {
    k.kind = PathKey::Kind::kIndexRef;
    k.ref = ParseReference(meat, '&', /*with_group=*/true);
    k.canonical = "[" + RefCanonical('&', k.ref) + "]";
  } else if (meat[0] == '#') {
    k.kind = PathKey::Kind::kIndexHash;
    k.ref = ParseReference(meat, '#', /*with_group=*/false);
    k.canonical = StrCat("[#", k.ref.path, "]");
  } else if (meat[0] == '@') {
    k.kind = PathKey::Kind::kIndexTranspose;
    k.transpose = ParseTranspose(meat);
    k.canonical = "[" + k.transpose->canonical + "]";
  } else if (NonNegativeInt(meat)) {
    k.kind = PathKey::Kind::kIndex;
    k.text = std::string(meat);
    k.canonical = "[" + k.text + "]";
  } else {
    throw SpecError(StrCat("bad explicit array index ", meat, " in key ", key));
  }
  return k;
}

// One key of a write path (PathElementBuilder.parseSingleKeyLHS, as parseList uses it).
PathKey ParseWriteKey(const std::string& key, std::string_view whole) {
  const bool has_escape = key.find('\\') != std::string::npos;
  const std::string inspect = has_escape ? RemoveEscapedValues(key) : key;
  const std::string element = has_escape ? RemoveEscapeChars(key) : key;
  PathKey k;
  if (inspect == "@") throw SpecError(StrCat("'.@.' is not valid on the right: ", whole));
  if (inspect == "*") throw SpecError(StrCat("a write path cannot contain '*': ", whole));
  if (!inspect.empty() && inspect[0] == '[') {
    if (Count(inspect, '[') != 1 || Count(inspect, ']') != 1) {
      throw SpecError(StrCat("invalid key ", key, ": too many [] references"));
    }
    return ParseArrayKey(element);
  }
  if (IsTransposeKey(inspect, key)) {
    k.kind = PathKey::Kind::kTranspose;
    k.transpose = ParseTranspose(key);
    k.canonical = k.transpose->canonical;
    return k;
  }
  if (inspect.find('$') != std::string::npos) {
    throw SpecError(StrCat("a write path cannot contain '$': ", whole));
  }
  if (inspect.find('[') != std::string::npos) {
    throw SpecError(StrCat("invalid key ", key, ": [] only as a key of its own"));
  }
  if (inspect.find('&') != std::string::npos) {
    if (inspect.find('*') != std::string::npos) {
      throw SpecError(StrCat("invalid key ", key, ": can't mix * with &"));
    }
    k.kind = PathKey::Kind::kAmp;
    k.amp = ParseAmpTokens(element, &k.canonical);
    return k;
  }
  if (inspect.find('*') != std::string::npos) {
    throw SpecError(StrCat("a write path cannot contain '*': ", whole));
  }
  if (inspect.find('#') != std::string::npos) {
    throw SpecError(StrCat("write key ", key, " is not a valid write key (#)"));
  }
  k.text = element;
  for (char c : element) k.canonical += c == '.' ? std::string("\\.") : std::string(1, c);
  return k;
}

// SpecStringParser.parseAtPathElement: the text after an '@' in a dot path.
std::string ParseAtElement(std::string_view text, size_t& i, std::string_view whole) {
  if (i >= text.size()) return "";
  std::string out;
  char c = text[i++];
  const bool parens = c == '(';
  int depth = parens ? 1 : 0;
  if (c == '.') throw SpecError(StrCat("invalid @ in the dot path ", whole));
  out += c;
  while (i < text.size()) {
    c = text[i++];
    out += c;
    if (parens) {
      if (c == '(') throw SpecError(StrCat("too many '(' in ", whole));
      if (c == ')') --depth;
      if (depth == 0) return out;
    } else if (c == '.') {
      return "(" + out.substr(0, out.size() - 1) + ")";
    }
  }
  if (parens && depth != 0) throw SpecError(StrCat("invalid @() in ", whole));
  return out;
}

// PathElementBuilder.parseDotNotationRHS: "a.&1[&2].@(1,id)" -> its keys.
std::vector<PathKey> ParseDotPath(std::string_view dot_path) {
  // fixLeadingBracketSugar: "a[0]" -> "a.[0]".
  std::string fixed;
  for (size_t i = 0; i < dot_path.size(); ++i) {
    const char c = dot_path[i];
    if (i > 0 && c == '[' && dot_path[i - 1] != '\\' && dot_path[i - 1] != '@' &&
        dot_path[i - 1] != '.') {
      fixed += '.';
    }
    fixed += c;
  }
  std::vector<std::string> pieces;
  std::string piece;
  bool prev_escape = false;
  for (size_t i = 0; i < fixed.size();) {
    const char c = fixed[i++];
    bool escape = false;
    if (c == '\\' && !prev_escape) escape = true;
    if (prev_escape && c != '.' && c != '\\') {
      piece += '\\';
      piece += c;
    } else if (c == '@') {
      piece += '@';
      piece += ParseAtElement(fixed, i, dot_path);
      const bool in_array =
          piece.find('[') != std::string::npos && piece.find(']') == std::string::npos;
      if (!in_array) {
        pieces.push_back(std::move(piece));
        piece.clear();
      }
    } else if (c == '.') {
      if (prev_escape) {
        piece += '.';
      } else if (!piece.empty()) {
        pieces.push_back(std::move(piece));
        piece.clear();
      }
    } else if (!escape) {
      piece += c;
    }
    prev_escape = escape;
  }
  if (!piece.empty()) pieces.push_back(std::move(piece));
  std::vector<PathKey> keys;
  keys.reserve(pieces.size());
  for (const auto& p : pieces) keys.push_back(ParseWriteKey(p, dot_path));
  return keys;
}

std::optional<std::string> PathKey::Evaluate(const Walk& walk) const {
  switch (kind) {
    case Kind::kLiteral:
    case Kind::kIndex:
      return text;
    case Kind::kAppend:
      return std::string("[]");
    case Kind::kAmp:
      return EvaluateAmp(amp, walk);
    case Kind::kIndexRef: {
      std::string key = SubKey(*walk.FromEnd(ref.path).match, ref.group);
      if (!NonNegativeInt(key)) return std::nullopt;
      return key;
    }
    case Kind::kIndexHash:
      return std::to_string(walk.FromEnd(ref.path).match->hash_count);
    case Kind::kIndexTranspose: {
      auto key = transpose->Evaluate(walk);
      if (!key || !NonNegativeInt(*key)) return std::nullopt;
      return key;
    }
    case Kind::kTranspose:
      return transpose->Evaluate(walk);
  }
  return std::nullopt;
}

std::optional<const json::value*> Transpose::Read(const Walk& walk) const {
  const json::value* tree = walk.FromEnd(up).tree;
  if (!path) return tree;
  std::vector<std::string> keys;
  for (const auto& k : *path) {
    auto key = k.Evaluate(walk);
    if (!key) return std::nullopt;
    keys.push_back(*std::move(key));
  }
  // SimpleTraversr's GET: a missing step, or a container of the other kind, finds nothing.
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool last = i + 1 == keys.size();
    const json::value* next = nullptr;
    if ((*path)[i].Step() == StepKind::kMap) {
      if (!tree->is_object()) return std::nullopt;
      next = tree->get_object().if_contains(keys[i]);
    } else {
      if (!tree->is_array()) return std::nullopt;
      const auto index = NonNegativeInt(keys[i]);
      if (index && static_cast<size_t>(*index) < tree->get_array().size()) {
        next = &tree->get_array()[static_cast<size_t>(*index)];
      }
    }
    if (next == nullptr) return std::nullopt;
    if (!last && next->is_null()) return std::nullopt;
    tree = next;
  }
  return tree;
}

// A string as Java holds it: see jolt_internal.hpp.
std::u16string ToUtf16(std::string_view s) {
  std::u16string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    size_t len = 1;
    if (c >= 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else if (c >= 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xC0) {
      len = 2;
      cp = c & 0x1F;
    }
    for (size_t k = 1; k < len && i + k < s.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
  }
  return out;
}

size_t ApproxBytes(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return v.get_string().size() + 8;
    case json::kind::array: {
      size_t n = 16;
      for (const auto& e : v.get_array()) n += ApproxBytes(e);
      return n;
    }
    case json::kind::object: {
      size_t n = 16;
      for (const auto& [k, e] : v.get_object()) n += k.size() + 8 + ApproxBytes(e);
      return n;
    }
    default:
      return 8;
  }
}

bool ComputedKeyBefore(int a_order, std::string_view a_canonical, int b_order,
                       std::string_view b_canonical) {
  if (a_order != b_order) return a_order < b_order;
  const std::u16string a = ToUtf16(a_canonical);
  const std::u16string b = ToUtf16(b_canonical);
  if (a.size() != b.size()) return a.size() > b.size();  // the most specific first
  return a < b;
}

}  // namespace rfs::transform::internal::jolt
