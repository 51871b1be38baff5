// Jolt's shift (Shiftr in bazaarvoice/jolt 0.1.8): a parallel walk of the spec and the input that
// copies matched input values to output paths. Behaviour follows the Java library's classes, named
// in the comments (jolt-core: Shiftr, ShiftrCompositeSpec, ShiftrLeafSpec, ExecutionStrategy, the
// path elements under common/pathelement and the traversal under traversr/).
//
// What differs, on purpose: an array index past kMaxArrayIndex in a write path fails the call
// (Java would allocate the list); a value written to two places is copied (Java shares it); keys on
// the left that only array-level transforms use ("[0]") are refused when the spec is built.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rfs/core/str_cat.hpp"

#include "boost/json/serialize.hpp"
#include "jolt_internal.hpp"

namespace rfs::transform::internal::jolt {

namespace json = boost::json;
using core::StrCat;

namespace {

const json::value kNull;

// --- References: &(path, group), $(path, group), #path (common/reference) ---

struct Reference {
  int path = 0;
  int group = 0;
};

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
    throw SpecError(StrCat("reference ", text, " can not have a negative value"));
  }
  return ref;
}

std::string RefCanonical(char token, const Reference& ref) {
  return StrCat(std::string(1, token), "(", ref.path, ",", ref.group, ")");
}

// --- The walked path (common/tree) ---

struct Matched {
  std::vector<std::string> keys;  // [0] the whole key, then what each '*' captured
  int hash_count = 0;             // siblings matched so far, for "[#n]"
};

struct PathStep {
  const json::value* tree;
  Matched* match;
};

struct Walk {
  std::vector<PathStep> steps;

  const PathStep& FromEnd(int index) const {
    if (index < 0 || static_cast<size_t>(index) >= steps.size()) {
      throw RunError(StrCat("a reference goes ", index, " levels up, above the input's root"));
    }
    return steps[steps.size() - 1 - static_cast<size_t>(index)];
  }
};

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

}  // namespace

std::string JavaDoubleText(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char digits[32];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, d, std::chars_format::scientific);
  std::string sci(digits, end);  // "-1.2345e+07"
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  std::string mantissa = sci.substr(0, e);
  mantissa.erase(std::remove(mantissa.begin(), mantissa.end(), '.'), mantissa.end());
  const double magnitude = std::fabs(d);
  if (magnitude >= 1e-3 && magnitude < 1e7) {
    std::string out;
    if (exponent >= 0) {
      const size_t int_digits = static_cast<size_t>(exponent) + 1;
      if (mantissa.size() <= int_digits) {
        out = mantissa + std::string(int_digits - mantissa.size(), '0') + ".0";
      } else {
        out = mantissa.substr(0, int_digits) + "." + mantissa.substr(int_digits);
      }
    } else {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + mantissa;
    }
    return sign + out;
  }
  std::string out = mantissa.substr(0, 1) + "." + (mantissa.size() > 1 ? mantissa.substr(1) : "0");
  return StrCat(sign, out, "E", exponent);
}

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
      return JavaDoubleText(v.get_double());
    default:
      return std::nullopt;
  }
}

namespace {

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

struct Transpose;

// "&1-&(2,1)" and the like (AmpPathElement): literal text and references.
using AmpToken = std::variant<std::string, Reference>;

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

// How a write path steps into its container (traversr/traversal).
enum class StepKind { kMap, kArray, kAppend };

struct PathKey {
  enum class Kind {
    kLiteral,
    kAmp,
    kAppend,
    kIndex,
    kIndexRef,
    kIndexHash,
    kIndexTranspose,
    kTranspose
  };
  Kind kind = Kind::kLiteral;
  std::string text;       // a literal, or an explicit index
  std::string canonical;  // for a transpose key's canonical form
  std::vector<AmpToken> amp;
  Reference ref;
  std::shared_ptr<const Transpose> transpose;

  StepKind Step() const {
    switch (kind) {
      case Kind::kAppend:
        return StepKind::kAppend;
      case Kind::kIndex:
      case Kind::kIndexRef:
      case Kind::kIndexHash:
      case Kind::kIndexTranspose:
        return StepKind::kArray;
      default:
        return StepKind::kMap;
    }
  }
  // nullopt: this write (or read) does not happen (ArrayPathElement.evaluate's null).
  std::optional<std::string> Evaluate(const Walk& walk) const;
};

// "@(2,a.b)" / "@a.b" / "@1" (TransposePathElement): a value read from the input, `up` levels
// above, along `path`.
struct Transpose {
  int up = 0;
  std::optional<std::vector<PathKey>> path;
  std::string canonical;

  // The value found (it may be null), or nullopt when the path leads nowhere.
  std::optional<const json::value*> Read(const Walk& walk) const;
  // As a key: numbers (their int value) and booleans as text, strings as they are.
  std::optional<std::string> Evaluate(const Walk& walk) const {
    const auto found = Read(walk);
    if (!found) return std::nullopt;
    const json::value& v = **found;
    if (v.is_number()) return std::to_string(JavaIntValue(v));
    if (v.is_bool()) return std::string(v.get_bool() ? "true" : "false");
    if (v.is_string()) return std::string(v.get_string());
    return std::nullopt;
  }
};

std::vector<PathKey> ParseDotPath(std::string_view dot_path);

std::shared_ptr<const Transpose> ParseTranspose(std::string_view key) {
  if (key.size() < 2 || key[0] != '@') {
    throw SpecError(StrCat("'Transpose Input' key must start with '@' and have more: ", key));
  }
  std::string_view meat = key.substr(1);
  if (meat.find('@') != std::string_view::npos) {
    throw SpecError(StrCat("@ path element can not contain a nested @: ", key));
  }
  if (meat.find('*') != std::string_view::npos || meat.find("[]") != std::string_view::npos) {
    throw SpecError(StrCat("'Transpose Input' can not contain * or []: ", key));
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
  if (inspect == "*") throw SpecError(StrCat("a write path can not contain '*': ", whole));
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
    throw SpecError(StrCat("a write path can not contain '$': ", whole));
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
    throw SpecError(StrCat("a write path can not contain '*': ", whole));
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

// --- Writing (ShiftrWriter, ShiftrTraversr) ---

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

// The shift's output, and what it has cost against Bounds::output_bytes.
struct Output {
  json::value root = json::object();
  size_t bytes = 0;
  size_t max_bytes = 0;

  void Charge(size_t more) {
    bytes += more;
    if (bytes > max_bytes) {
      throw BoundError(StrCat("the shift's output is over its bound of ", max_bytes,
                              " bytes (a spec that copies values to many places?)"));
    }
  }
};

struct Writer {
  std::vector<PathKey> keys;  // "root" first

  static json::value NewContainer(StepKind kind) {
    return kind == StepKind::kMap ? json::value(json::object()) : json::value(json::array());
  }

  // The last step's set: a second value at the same place makes (or extends) a list.
  static void FinalSet(json::value& slot, bool absent, const json::value& data) {
    if (absent || slot.is_null()) {
      slot = data;
    } else if (slot.is_array()) {
      slot.get_array().push_back(data);
    } else {
      json::array pair;
      pair.push_back(std::move(slot));
      pair.push_back(data);
      slot = std::move(pair);
    }
  }

  void Write(const json::value& data, Output& out, const Walk& walk) const {
    std::vector<std::string> evaluated;
    evaluated.reserve(keys.size());
    for (const auto& k : keys) {
      auto key = k.Evaluate(walk);
      if (!key) return;
      evaluated.push_back(*std::move(key));
    }
    json::value* tree = &out.root;
    for (size_t i = 0; i < keys.size(); ++i) {
      const bool last = i + 1 == keys.size();
      const StepKind kind = keys[i].Step();
      json::value* slot = nullptr;
      bool absent = false;
      if (kind == StepKind::kMap) {
        if (!tree->is_object()) return;
        auto& object = tree->get_object();
        absent = !object.contains(evaluated[i]);
        slot = &object[evaluated[i]];
      } else {
        if (!tree->is_array()) return;
        auto& array = tree->get_array();
        if (kind == StepKind::kAppend) {
          array.emplace_back(nullptr);
          slot = &array.back();
          absent = true;
        } else {
          const auto index = NonNegativeInt(evaluated[i]);
          if (!index) return;
          if (*index > kMaxArrayIndex) {
            throw RunError(
                StrCat("the write path's array index ", *index, " is over ", kMaxArrayIndex));
          }
          if (array.size() <= static_cast<size_t>(*index)) {
            // Padding costs as much as values do.
            out.Charge((static_cast<size_t>(*index) + 1 - array.size()) * sizeof(json::value));
            array.resize(static_cast<size_t>(*index) + 1);
            absent = true;
          }
          slot = &array[static_cast<size_t>(*index)];
        }
      }
      if (last) {
        FinalSet(*slot, absent, data);
        return;
      }
      if (absent || slot->is_null()) *slot = NewContainer(keys[i + 1].Step());
      tree = slot;
    }
  }
};

Writer MakeWriter(const json::value& rhs) {
  if (!rhs.is_string()) {
    throw SpecError(StrCat("a shift write path must be a string or a list of strings; got ",
                           json::serialize(rhs).substr(0, 100)));
  }
  const std::string_view text = rhs.get_string();
  const bool blank = std::all_of(
      text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  // TraversalBuilder prefixes "root." so that "" writes the whole output.
  const std::string path = blank ? std::string("root") : StrCat("root.", text);
  Writer w;
  w.keys = ParseDotPath(path);
  return w;
}

// --- Keys of the spec's left side (MatchablePathElement) ---

enum class KeyKind { kLiteral, kAt, kStar, kAmp, kDollar, kHash, kTranspose };

struct SpecKey {
  KeyKind kind = KeyKind::kLiteral;
  std::string raw;        // the literal (escapes removed), or the '#' value
  std::string canonical;  // for duplicates and ordering
  std::optional<StarPattern> star;
  int order = 0;  // ComputedKeysComparator's class order: & 1, regex 2, ** 3, * 4, lone * 5
  std::vector<AmpToken> amp;
  Reference ref;
  std::shared_ptr<const Transpose> transpose;

  bool IsStar() const { return kind == KeyKind::kStar; }
};

SpecKey ParseSpecKey(const std::string& key) {
  const bool has_escape = key.find('\\') != std::string::npos;
  const std::string inspect = has_escape ? RemoveEscapedValues(key) : key;
  const std::string element = has_escape ? RemoveEscapeChars(key) : key;
  SpecKey k;
  if (inspect == "@") {
    k.kind = KeyKind::kAt;
    k.canonical = "@";
    return k;
  }
  if (inspect == "*") {
    k.kind = KeyKind::kStar;
    k.star.emplace("*", /*star_double_rules=*/true);
    k.order = 5;
    k.canonical = "*";
    return k;
  }
  if (!inspect.empty() && inspect[0] == '[') {
    throw SpecError(StrCat("the shift key ", key,
                           " is an array index: rfs runs shift without them (they match only "
                           "inside Jolt's modify operations)"));
  }
  if (IsTransposeKey(inspect, key)) {
    k.kind = KeyKind::kTranspose;
    k.transpose = ParseTranspose(key);
    k.canonical = k.transpose->canonical;
    return k;
  }
  if (inspect.find('$') != std::string::npos) {
    k.kind = KeyKind::kDollar;
    k.ref = ParseReference(element, '$', /*with_group=*/true);
    k.canonical = RefCanonical('$', k.ref);
    return k;
  }
  if (inspect.find('[') != std::string::npos) {
    throw SpecError(StrCat("the shift key ", key, " holds an array index: not a shift key"));
  }
  if (inspect.find('&') != std::string::npos) {
    if (inspect.find('*') != std::string::npos) {
      throw SpecError(StrCat("invalid key ", key, ": can't mix * with &"));
    }
    k.kind = KeyKind::kAmp;
    k.amp = ParseAmpTokens(element, &k.canonical);
    k.order = 1;
    return k;
  }
  if (inspect.find('*') != std::string::npos) {
    k.kind = KeyKind::kStar;
    const size_t stars = Count(inspect, '*');
    k.order = stars == 1 ? 4 : stars == 2 ? 3 : 2;
    k.star.emplace(element, /*star_double_rules=*/true);
    k.canonical = element;
    return k;
  }
  if (inspect.find('#') != std::string::npos) {
    if (element.size() <= 1 || element[0] != '#') {
      throw SpecError(StrCat("the shift key ", key, " should start with # and have more"));
    }
    k.kind = KeyKind::kHash;
    if (element[1] == '(') {
      if (element.back() != ')') throw SpecError(StrCat("mismatched parens in ", key));
      k.raw = element.substr(2, element.size() - 3);
    } else {
      k.raw = element.substr(1);
    }
    k.canonical = "#(" + k.raw + ")";
    return k;
  }
  k.raw = element;
  for (char c : element) k.canonical += c == '.' ? std::string("\\.") : std::string(1, c);
  return k;
}

// What a key matched: nullptr when it does not. A new match is made in `slot`, which the caller
// keeps while its step is on the walk.
Matched* MatchKey(const SpecKey& key, const std::string& input_key, Walk& walk, Matched& slot) {
  auto made = [&slot](std::vector<std::string> keys) {
    slot = Matched{std::move(keys), 0};
    return &slot;
  };
  switch (key.kind) {
    case KeyKind::kLiteral:
      return key.raw == input_key ? made({key.raw}) : nullptr;
    case KeyKind::kAt:
    case KeyKind::kTranspose:
      return walk.steps.back().match;  // the parent's, so that &0 and &1 both work
    case KeyKind::kStar: {
      auto captures = key.star->Match(input_key);
      if (!captures) return nullptr;
      std::vector<std::string> keys{input_key};
      keys.insert(keys.end(), captures->begin(), captures->end());
      return made(std::move(keys));
    }
    case KeyKind::kAmp: {
      std::string evaluated = EvaluateAmp(key.amp, walk);
      if (evaluated != input_key) return nullptr;
      return made({std::move(evaluated)});
    }
    case KeyKind::kDollar:
      return made({SubKey(*walk.FromEnd(key.ref.path).match, key.ref.group)});
    case KeyKind::kHash:
      return made({key.raw});
  }
  return nullptr;
}

// --- The spec tree (ShiftrCompositeSpec, ShiftrLeafSpec) ---

enum class Strategy { kAvailableLiterals, kComputed, kConflict, kLiteralsWithComputed };

class Spec {
 public:
  Spec(const std::string& key, const json::value& rhs);

  bool Apply(const std::string& input_key, const json::value* input, Walk& walk, Output& out) const;

 private:
  void Process(const json::value* input, Walk& walk, Output& out) const;
  void ApplyComputed(const std::string& key, const json::value* input, Walk& walk,
                     Output& out) const {
    for (const auto& child : computed_) {
      if (child->Apply(key, input, walk, out)) break;
    }
  }
  const Spec* Literal(const std::string& key) const {
    for (const auto& [k, child] : literals_) {
      if (k == key) return child.get();
    }
    return nullptr;
  }

  SpecKey key_;
  bool leaf_ = false;
  std::vector<Writer> writers_;
  std::vector<std::unique_ptr<Spec>> special_;
  std::vector<std::pair<std::string, std::unique_ptr<Spec>>> literals_;
  std::vector<std::unique_ptr<Spec>> computed_;
  Strategy strategy_ = Strategy::kAvailableLiterals;
};

Spec::Spec(const std::string& key, const json::value& rhs) : key_(ParseSpecKey(key)) {
  if (!rhs.is_object()) {
    leaf_ = true;
    if (rhs.is_string()) {
      writers_.push_back(MakeWriter(rhs));
    } else if (rhs.is_array()) {
      for (const auto& item : rhs.get_array()) writers_.push_back(MakeWriter(item));
    } else if (!rhs.is_null()) {
      throw SpecError(StrCat("invalid shift spec value for \"", key,
                             "\": a map, a string or a list of strings; got ",
                             json::serialize(rhs).substr(0, 100)));
    }
    return;
  }
  if (key_.kind == KeyKind::kAt) throw SpecError("the shift key @ can not have children");
  if (key_.kind == KeyKind::kDollar) throw SpecError("a shift $ key can not have children");
  const auto& object = rhs.get_object();
  if (object.empty()) {
    throw SpecError(StrCat("the shift spec for \"", key, "\" is an empty {}, which is not valid"));
  }
  std::vector<std::string> canonicals;
  for (const auto& [raw, child_rhs] : object) {
    // "a|b": the same child for each alternative (SpecBuilder).
    for (const auto& alternative : SplitOr(raw)) {
      auto child = std::make_unique<Spec>(alternative, child_rhs);
      if (std::find(canonicals.begin(), canonicals.end(), child->key_.canonical) !=
          canonicals.end()) {
        throw SpecError(StrCat("duplicate canonical key found: ", child->key_.canonical));
      }
      canonicals.push_back(child->key_.canonical);
      switch (child->key_.kind) {
        case KeyKind::kLiteral: {
          std::string literal = child->key_.raw;
          literals_.emplace_back(std::move(literal), std::move(child));
          break;
        }
        case KeyKind::kAt:
        case KeyKind::kHash:
        case KeyKind::kDollar:
        case KeyKind::kTranspose:
          special_.push_back(std::move(child));
          break;
        default:
          computed_.push_back(std::move(child));
      }
    }
  }
  std::stable_sort(computed_.begin(), computed_.end(), [](const auto& a, const auto& b) {
    if (a->key_.order != b->key_.order) return a->key_.order < b->key_.order;
    const std::string& ac = a->key_.canonical;
    const std::string& bc = b->key_.canonical;
    if (ac.size() != bc.size()) return ac.size() > bc.size();  // the most specific first
    return ac < bc;
  });
  if (computed_.empty()) {
    strategy_ = Strategy::kAvailableLiterals;
  } else if (literals_.empty()) {
    strategy_ = Strategy::kComputed;
  } else {
    strategy_ = Strategy::kLiteralsWithComputed;
    for (const auto& c : computed_) {
      if (!c->key_.IsStar()) {
        strategy_ = Strategy::kConflict;
        break;
      }
      for (const auto& [literal, unused] : literals_) {
        if (c->key_.star->Matches(literal)) strategy_ = Strategy::kConflict;
      }
    }
  }
}

bool Spec::Apply(const std::string& input_key, const json::value* input, Walk& walk,
                 Output& out) const {
  Matched slot;
  Matched* match = MatchKey(key_, input_key, walk, slot);
  if (match == nullptr) return false;
  if (leaf_) {
    const json::value* data = input;
    json::value text;
    bool real_child = false;
    switch (key_.kind) {
      case KeyKind::kDollar:
      case KeyKind::kHash:
        text = json::string(match->keys[0]);
        data = &text;
        break;
      case KeyKind::kAt:
        break;
      case KeyKind::kTranspose: {
        auto found = key_.transpose->Read(walk);
        if (!found) return false;
        data = *found;
        break;
      }
      default:
        real_child = true;
    }
    walk.steps.push_back({input, match});
    for (const auto& writer : writers_) {
      out.Charge(ApproxBytes(*data));
      writer.Write(*data, out, walk);
    }
    walk.steps.pop_back();
    if (real_child) ++walk.steps.back().match->hash_count;
    return real_child;
  }
  if (key_.kind == KeyKind::kTranspose) {
    auto found = key_.transpose->Read(walk);
    if (!found) return false;
    input = *found;
  }
  walk.steps.push_back({input, match});
  for (const auto& child : special_) child->Apply(input_key, input, walk, out);
  Process(input, walk, out);
  walk.steps.pop_back();
  ++walk.steps.back().match->hash_count;
  return true;
}

// ExecutionStrategy.process.
void Spec::Process(const json::value* input, Walk& walk, Output& out) const {
  const bool literals_first =
      strategy_ == Strategy::kAvailableLiterals || strategy_ == Strategy::kLiteralsWithComputed;
  const bool computed_after =
      strategy_ == Strategy::kComputed || strategy_ == Strategy::kLiteralsWithComputed;
  if (input->is_object()) {
    const auto& object = input->get_object();
    if (literals_first) {
      for (const auto& [key, child] : literals_) {
        if (const json::value* v = object.if_contains(key)) child->Apply(key, v, walk, out);
      }
    }
    if (computed_after || strategy_ == Strategy::kConflict) {
      for (const auto& [k, v] : object) {
        const std::string key(k);
        if (strategy_ == Strategy::kConflict) {
          if (const Spec* literal = Literal(key)) {
            literal->Apply(key, &v, walk, out);
            continue;
          }
        }
        ApplyComputed(key, &v, walk, out);
      }
    }
  } else if (input->is_array()) {
    const auto& array = input->get_array();
    if (literals_first) {
      for (const auto& [key, child] : literals_) {
        const auto index = JavaParseInt(key);
        if (!index) continue;
        if (*index < 0) {
          throw RunError(StrCat("the shift key ", key, " is a negative index into a list"));
        }
        if (static_cast<size_t>(*index) < array.size()) {
          child->Apply(key, &array[static_cast<size_t>(*index)], walk, out);
        }
      }
    }
    if (computed_after || strategy_ == Strategy::kConflict) {
      for (size_t i = 0; i < array.size(); ++i) {
        const std::string key = std::to_string(i);
        if (strategy_ == Strategy::kConflict) {
          if (const Spec* literal = Literal(key)) {
            literal->Apply(key, &array[i], walk, out);
            continue;
          }
        }
        ApplyComputed(key, &array[i], walk, out);
      }
    }
  } else if (auto text = ScalarKeyText(*input)) {
    // A scalar is matched by its text; the child sees no input (null).
    if (strategy_ == Strategy::kConflict) {
      if (const Spec* literal = Literal(*text)) {
        literal->Apply(*text, &kNull, walk, out);
      } else {
        ApplyComputed(*text, &kNull, walk, out);
      }
      return;
    }
    if (literals_first) {
      if (const Spec* literal = Literal(*text)) literal->Apply(*text, &kNull, walk, out);
    }
    if (computed_after) ApplyComputed(*text, &kNull, walk, out);
  }
}

class Shift final : public Operation {
 public:
  Shift(const json::value& spec, const Bounds& bounds)
      : bounds_(bounds), root_(std::make_unique<Spec>("root", MapSpec("shift", spec))) {}

  absl::StatusOr<json::value> Apply(json::value input) override {
    Walk walk;
    Output out;
    out.max_bytes = bounds_.output_bytes;
    Matched root{{"root"}, 0};
    walk.steps.push_back({&input, &root});
    try {
      root_->Apply("root", &input, walk, out);
    } catch (const BoundError& e) {
      return absl::ResourceExhaustedError(StrCat("shift: ", e.what()));
    } catch (const RunError& e) {
      return absl::InvalidArgumentError(StrCat("shift: ", e.what()));
    }
    if (json::value* result = out.root.get_object().if_contains("root")) {
      return std::move(*result);
    }
    return json::value();
  }

 private:
  Bounds bounds_;
  std::unique_ptr<Spec> root_;
};

}  // namespace

std::unique_ptr<Operation> MakeShift(const json::value& spec, const Bounds& bounds) {
  return std::make_unique<Shift>(spec, bounds);
}

}  // namespace rfs::transform::internal::jolt
