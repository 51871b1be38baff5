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
#include "jolt_paths.hpp"

namespace rfs::transform::internal::jolt {

namespace json = boost::json;
using core::StrCat;

namespace {

const json::value kNull;

// --- Writing (ShiftrWriter, ShiftrTraversr) ---

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
    slot = Matched{std::move(keys), 0, std::nullopt};
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
  if (key_.kind == KeyKind::kAt) throw SpecError("the shift key @ cannot have children");
  if (key_.kind == KeyKind::kDollar) throw SpecError("a shift $ key cannot have children");
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
    return ComputedKeyBefore(a->key_.order, a->key_.canonical, b->key_.order, b->key_.canonical);
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
    Matched root{{"root"}, 0, std::nullopt};
    walk.steps.push_back({&input, &root});
    try {
      root_->Apply("root", &input, walk, out);
    } catch (const BoundError& e) {
      return absl::ResourceExhaustedError(e.what());
    } catch (const RunError& e) {
      return absl::InvalidArgumentError(e.what());
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
