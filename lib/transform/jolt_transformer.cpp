// JsonJoltTransformerProvider: a chain of Jolt operations (bazaarvoice/jolt 0.1.8, which the Java
// tool runs) applied to each batch of documents, or to each metadata item. This file holds the
// chain and the operations but shift (jolt_shift.cpp): default (Defaultr), remove (Removr) and
// sort (Sortr), each following the Java class of that name.
//
// Config, as the Java provider takes it: {"script": <operation>} or a list of such objects, where
// an operation is {"operation": "shift" | "default" | "remove" | "sort", "spec": ...}. The Java
// provider's "canned" operations rewrite HTTP messages for the traffic replayer and are refused.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/str_cat.hpp"

#include "boost/json/serialize.hpp"
#include "jolt_internal.hpp"
#include "json_transformers_internal.hpp"

namespace rfs::transform::internal {

namespace json = boost::json;
using core::StrCat;

namespace jolt {
namespace {

// A default key under "[]": Java's Integer.parseInt, or SpecError.
int ParseIndex(std::string_view text) {
  const auto value = JavaParseInt(text);
  if (!value) {
    throw SpecError(StrCat("the default key \"", text, "\" under an array ([]) is not a number"));
  }
  if (*value > kMaxArrayIndex) {
    throw SpecError(StrCat("the default key \"", text, "\" is an index over ", kMaxArrayIndex));
  }
  return *value;
}

// --- default (Defaultr, defaultr/Key, MapKey, ArrayKey, OPS) ---

class DefaultKey {
 public:
  enum class Op { kLiteral, kOr, kStar };

  DefaultKey(std::string_view raw_key, const json::value& spec, bool parent_is_array)
      : array_key_(parent_is_array) {
    std::string raw(raw_key);
    if (raw.size() >= 2 && raw.compare(raw.size() - 2, 2, "[]") == 0) {
      array_output_ = true;
      // Java's replace: every "[]" goes.
      std::string stripped;
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw.compare(i, 2, "[]") == 0) {
          ++i;
          continue;
        }
        stripped += raw[i];
      }
      raw = std::move(stripped);
    }
    raw_ = raw;
    if (raw.find('*') != std::string::npos) {
      if (raw != "*") {
        throw SpecError(StrCat("default key ", raw,
                               " is invalid: * keys can only contain *, and no other characters"));
      }
      op_ = Op::kStar;
    } else if (raw.find('|') != std::string::npos) {
      op_ = Op::kOr;
      keys_ = SplitOr(raw);
    } else {
      op_ = Op::kLiteral;
      keys_ = {raw};
    }
    if (array_key_) {
      if (op_ == Op::kLiteral) index_ = ParseIndex(raw);
      for (const auto& k : keys_) indices_.push_back(ParseIndex(k));
    }
    if (spec.is_object()) {
      has_children_ = true;
      for (const auto& [child_key, child_spec] : spec.get_object()) {
        children_.emplace_back(child_key, child_spec, array_output_);
        if (array_output_ && children_.back().index_ > output_array_size_) {
          output_array_size_ = children_.back().index_;
        }
      }
      // KeyPrecedenceComparator: literals, then alternatives (fewer first), then '*'.
      std::stable_sort(children_.begin(), children_.end(), [](const auto& a, const auto& b) {
        if (a.op_ != b.op_) return Rank(a.op_) < Rank(b.op_);
        if (a.op_ == Op::kOr && a.keys_.size() != b.keys_.size()) {
          return a.keys_.size() < b.keys_.size();
        }
        return a.op_ == Op::kOr && a.raw_ < b.raw_;
      });
    } else {
      value_ = spec;
    }
  }

  bool has_children() const { return has_children_; }

  void ApplyChildren(json::value& defaultee) const {
    if (array_output_ && defaultee.is_array()) {
      auto& list = defaultee.get_array();
      while (static_cast<int64_t>(list.size()) <= output_array_size_) list.emplace_back(nullptr);
    }
    for (const auto& child : children_) child.ApplyChild(defaultee);
  }

 private:
  static int Rank(Op op) { return op == Op::kLiteral ? 0 : op == Op::kOr ? 1 : 2; }

  void ApplyChild(json::value& container) const {
    if (!array_key_) {
      if (!container.is_object()) return;
      auto& object = container.get_object();
      if (op_ == Op::kStar) {
        for (auto& [k, v] : object) ApplyTo(v, /*absent=*/false);
        return;
      }
      for (const auto& key : keys_) {
        // An alternative applies only where its key is there; a literal always.
        json::value* existing = object.if_contains(key);
        if (op_ == Op::kOr && existing == nullptr) continue;
        if (existing == nullptr) {
          json::value fresh;
          if (ApplyTo(fresh, /*absent=*/true)) object[key] = std::move(fresh);
        } else {
          ApplyTo(*existing, false);
        }
      }
      return;
    }
    if (!container.is_array()) return;
    auto& list = container.get_array();
    std::vector<int> targets;
    if (op_ == Op::kStar) {
      for (size_t i = 0; i < list.size(); ++i) targets.push_back(static_cast<int>(i));
    } else if (op_ == Op::kOr) {
      for (int i : indices_) {
        if (i < static_cast<int64_t>(list.size())) targets.push_back(i);
      }
    } else {
      targets.push_back(index_);
    }
    for (int i : targets) {
      if (i < 0 || static_cast<size_t>(i) >= list.size()) {
        throw RunError(
            StrCat("the default spec's index ", i, " is outside a list of ", list.size()));
      }
      ApplyTo(list[static_cast<size_t>(i)], false);
    }
  }

  // Fills `slot` (absent, or null, or holding a value). True when it was written.
  bool ApplyTo(json::value& slot, bool absent) const {
    if (!has_children_) {
      if (absent || slot.is_null()) {
        slot = value_;
        return true;
      }
      return false;
    }
    if (absent || slot.is_null()) {
      slot = array_output_ ? json::value(json::array()) : json::value(json::object());
    }
    ApplyChildren(slot);
    return true;
  }

  bool array_key_ = false;     // an ArrayKey: its keys are indices of its container
  bool array_output_ = false;  // "key[]": its own value is a list
  Op op_ = Op::kLiteral;
  std::string raw_;
  std::vector<std::string> keys_;
  std::vector<int> indices_;
  int index_ = -1;
  int64_t output_array_size_ = -1;
  bool has_children_ = false;
  std::vector<DefaultKey> children_;
  json::value value_;
};

class Default final : public Operation {
 public:
  explicit Default(const json::value& spec) : map_root_("root", MapSpec("default", spec), false) {
    // A spec whose keys are all indices (or '*') also takes a top-level array.
    try {
      array_root_.emplace("root[]", spec, false);
    } catch (const SpecError&) {
    }
  }

  absl::StatusOr<json::value> Apply(json::value input) override {
    try {
      if (input.is_null()) input = json::object();
      if (input.is_array()) {
        if (!array_root_) {
          return absl::InvalidArgumentError(
              "the spec cannot take input that is a top-level JSON array (its keys "
              "are not all indices or *)");
        }
        array_root_->ApplyChildren(input);
      } else {
        map_root_.ApplyChildren(input);
      }
    } catch (const RunError& e) {
      return absl::InvalidArgumentError(e.what());
    }
    return input;
  }

 private:
  DefaultKey map_root_;
  std::optional<DefaultKey> array_root_;
};

// --- remove (Removr, removr/spec) ---

class RemoveSpec {
 public:
  RemoveSpec(std::string key, const json::value& rhs) : key_(std::move(key)) {
    if (key_.find('*') != std::string::npos) star_.emplace(key_, /*star_double_rules=*/true);
    if (rhs.is_object()) {
      composite_ = true;
      for (const auto& [raw, child_rhs] : rhs.get_object()) {
        for (auto& alternative : SplitOr(raw)) children_.emplace_back(alternative, child_rhs);
      }
    } else {
      const bool blank = rhs.is_string() &&
                         std::all_of(rhs.get_string().begin(), rhs.get_string().end(), [](char c) {
                           return std::isspace(static_cast<unsigned char>(c));
                         });
      if (!blank) {
        throw SpecError(StrCat("invalid remove spec value for \"", key_,
                               "\": an empty string or a map; got ",
                               json::serialize(rhs).substr(0, 100)));
      }
    }
  }

  // RemovrCompositeSpec.applyToMap for the root.
  void ApplyToRoot(json::value& input) const { ProcessChildren(input); }

 private:
  bool Matches(std::string_view text) const { return star_ ? star_->Matches(text) : text == key_; }
  bool StarAll() const { return star_ && star_->lone(); }
  // A non-negative literal index, as getNonNegativeIntegerFromLiteralPathElement.
  std::optional<size_t> LiteralIndex() const {
    if (star_) return std::nullopt;
    int value = 0;
    std::string_view body = key_;
    if (!body.empty() && body[0] == '+') body.remove_prefix(1);
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
    if (body.empty() || ec != std::errc() || end != body.data() + body.size() || value < 0) {
      return std::nullopt;
    }
    return static_cast<size_t>(value);
  }

  void ProcessChildren(json::value& input) const {
    if (input.is_array()) {
      auto& list = input.get_array();
      std::vector<size_t> remove;
      for (const auto& child : children_) child.ApplyToList(list, remove);
      std::sort(remove.begin(), remove.end(), std::greater<>());
      remove.erase(std::unique(remove.begin(), remove.end()), remove.end());
      for (size_t i : remove) list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (input.is_object()) {
      auto& object = input.get_object();
      std::vector<std::string> remove;
      for (const auto& child : children_) child.ApplyToMap(object, remove);
      for (const auto& key : remove) object.stable_erase(key);  // keeps the others in order
    }
  }

  void ApplyToMap(json::object& object, std::vector<std::string>& remove) const {
    if (composite_) {
      if (!star_) {
        if (json::value* sub = object.if_contains(key_)) ProcessChildren(*sub);
        return;
      }
      for (auto& [k, v] : object) {
        if (Matches(k)) ProcessChildren(v);
      }
      return;
    }
    for (const auto& [k, v] : object) {
      if (Matches(k)) remove.emplace_back(k);
    }
  }

  void ApplyToList(json::array& list, std::vector<size_t>& remove) const {
    if (composite_) {
      if (auto index = LiteralIndex()) {
        if (*index < list.size()) ProcessChildren(list[*index]);
      } else if (StarAll()) {
        for (auto& v : list) ProcessChildren(v);
      }
      return;
    }
    if (auto index = LiteralIndex()) {
      if (*index < list.size()) remove.push_back(*index);
    } else if (StarAll()) {
      for (size_t i = 0; i < list.size(); ++i) remove.push_back(i);
    }
  }

  std::string key_;
  std::optional<StarPattern> star_;
  bool composite_ = false;
  std::vector<RemoveSpec> children_;
};

class Remove final : public Operation {
 public:
  explicit Remove(const json::value& spec) : root_("root", MapSpec("remove", spec)) {}
  absl::StatusOr<json::value> Apply(json::value input) override {
    root_.ApplyToRoot(input);
    return input;
  }

 private:
  RemoveSpec root_;
};

// --- sort (Sortr) ---

void SortValue(json::value& v) {
  if (v.is_array()) {
    for (auto& e : v.get_array()) SortValue(e);
    return;
  }
  if (!v.is_object()) return;
  auto& object = v.get_object();
  std::vector<std::pair<std::u16string, std::string>> keys;
  keys.reserve(object.size());
  for (const auto& [k, unused] : object) keys.emplace_back(ToUtf16(k), std::string(k));
  // Keys starting with '~' first, then String.compareTo's order.
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    const bool at = !a.second.empty() && a.second[0] == '~';
    const bool bt = !b.second.empty() && b.second[0] == '~';
    if (at != bt) return at;
    return a.first < b.first;
  });
  json::object sorted;
  sorted.reserve(object.size());
  for (const auto& [unused, k] : keys) {
    json::value moved = std::move(object[k]);
    SortValue(moved);
    sorted.emplace(k, std::move(moved));
  }
  object = std::move(sorted);
}

class Sort final : public Operation {
 public:
  absl::StatusOr<json::value> Apply(json::value input) override {
    SortValue(input);
    return input;
  }
};

}  // namespace

const json::value& MapSpec(std::string_view operation, const json::value& spec) {
  if (!spec.is_object()) {
    throw SpecError(StrCat(operation, " expects a spec that is a map; got ",
                           json::serialize(spec).substr(0, 100)));
  }
  return spec;
}

std::vector<std::string> SplitOr(std::string_view key) {
  if (key.find('|') == std::string_view::npos) return {std::string(key)};
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t bar = key.find('|'); bar != std::string_view::npos; bar = key.find('|', start)) {
    parts.emplace_back(key.substr(start, bar - start));
    start = bar + 1;
  }
  parts.emplace_back(key.substr(start));
  // Java's split drops every trailing empty part: "|" gives none.
  while (!parts.empty() && parts.back().empty()) parts.pop_back();
  return parts;
}

namespace {

// What Java's regex '.' does not take: \n, \r, U+0085, U+2028, U+2029.
bool IsLineTerminator(std::string_view c) {
  return c == "\n" || c == "\r" || c == "\xC2\x85" || c == "\xE2\x80\xA8" || c == "\xE2\x80\xA9";
}

size_t CharCount(std::string_view text) {
  size_t n = 0;
  for (size_t at = 0; at < text.size(); at = NextUtf8(text, at)) ++n;
  return n;
}

}  // namespace

size_t NextUtf8(std::string_view text, size_t at) {
  ++at;
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  return at;
}

StarPattern::StarPattern(std::string_view key, bool star_double_rules) {
  lone_ = key == "*";
  size_t start = 0;
  for (size_t at = key.find('*'); at != std::string_view::npos; at = key.find('*', start)) {
    pieces_.emplace_back(key.substr(start, at - start));
    start = at + 1;
  }
  pieces_.emplace_back(key.substr(start));
  const size_t stars = pieces_.size() - 1;
  if (star_double_rules && stars == 2 && pieces_[1].empty()) {
    // StarDoublePathElement splits the key on '*': with nothing between the stars and nothing
    // after them, the split has no middle and Java fails to build the spec.
    if (pieces_[2].empty()) {
      throw SpecError(StrCat("the key ", key,
                             " (two '*'s with nothing between or after them) "
                             "is one Java's Jolt cannot build"));
    }
    empty_middle_ = true;
  }
  regex_ = stars >= (star_double_rules ? 3 : 2);
}

std::optional<std::vector<std::string>> StarPattern::Match(std::string_view text) const {
  std::vector<std::string> captures;
  if (lone_) return captures;
  const std::string& prefix = pieces_.front();
  const std::string& suffix = pieces_.back();
  if (text.substr(0, prefix.size()) != prefix) return std::nullopt;
  if (empty_middle_) {
    if (text.size() < prefix.size() + suffix.size() ||
        text.substr(text.size() - suffix.size()) != suffix) {
      return std::nullopt;
    }
    const std::string_view middle =
        text.substr(prefix.size(), text.size() - prefix.size() - suffix.size());
    if (CharCount(middle) < 3) return std::nullopt;
    const size_t first = NextUtf8(middle, 0);
    captures.emplace_back(middle.substr(0, first));
    captures.emplace_back(middle.substr(first));
    return captures;
  }
  // Failed (piece, position) pairs are remembered: keys like "*a*a*a*b" against a long run of
  // 'a's would otherwise take exponential time.
  std::vector<bool> failed(pieces_.size() * (text.size() + 1));
  if (!MatchFrom(text, prefix.size(), 1, captures, failed)) return std::nullopt;
  return captures;
}

// Captures one more part starting at `at`, followed by pieces_[piece] and the rest.
bool StarPattern::MatchFrom(std::string_view text, size_t at, size_t piece,
                            std::vector<std::string>& captures, std::vector<bool>& failed) const {
  const size_t memo = piece * (text.size() + 1) + at;
  if (failed[memo]) return false;
  const std::string& next = pieces_[piece];
  const bool final_piece = piece + 1 == pieces_.size();
  for (size_t end = at; end < text.size();) {
    const size_t char_start = end;
    end = NextUtf8(text, end);
    if (regex_ && IsLineTerminator(text.substr(char_start, end - char_start))) break;
    if (text.compare(end, next.size(), next) != 0) continue;
    if (final_piece) {
      if (end + next.size() != text.size()) continue;
      captures.emplace_back(text.substr(at, end - at));
      return true;
    }
    captures.emplace_back(text.substr(at, end - at));
    if (MatchFrom(text, end + next.size(), piece + 1, captures, failed)) return true;
    captures.pop_back();
  }
  failed[memo] = true;
  return false;
}

std::optional<int64_t> JavaParseLong(std::string_view text) {
  std::string_view body = text;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.empty() || !std::all_of(body.begin(), body.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (ec != std::errc()) return std::nullopt;
  if (negative) {
    if (value > static_cast<uint64_t>(INT64_MAX) + 1) return std::nullopt;
    return static_cast<int64_t>(0 - value);
  }
  if (value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(value);
}

std::optional<int32_t> JavaParseInt(std::string_view text) {
  const auto value = JavaParseLong(text);
  if (!value || *value < INT32_MIN || *value > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(*value);
}

std::unique_ptr<Operation> MakeDefault(const json::value& spec) {
  return std::make_unique<Default>(spec);
}
std::unique_ptr<Operation> MakeRemove(const json::value& spec) {
  return std::make_unique<Remove>(spec);
}
std::unique_ptr<Operation> MakeSort() { return std::make_unique<Sort>(); }

absl::StatusOr<std::unique_ptr<Operation>> MakeOperation(const json::value& entry,
                                                         const Bounds& bounds) {
  if (!entry.is_object()) {
    return absl::InvalidArgumentError(
        StrCat("a Jolt operation is an object {\"operation\": ..., \"spec\": ...}; got ",
               json::serialize(entry).substr(0, 100)));
  }
  const auto& object = entry.get_object();
  const json::value* op = object.if_contains("operation");
  if (op == nullptr || !op->is_string() || op->get_string().empty()) {
    return absl::InvalidArgumentError("a Jolt operation needs an \"operation\" string");
  }
  const std::string name(op->get_string());
  const json::value* spec = object.if_contains("spec");
  auto needs_spec = [&]() -> absl::Status {
    if (spec == nullptr) {
      return absl::InvalidArgumentError(StrCat("the Jolt operation ", name, " requires a spec"));
    }
    return absl::OkStatus();
  };
  try {
    if (name == "shift" || name == "com.bazaarvoice.jolt.Shiftr") {
      if (auto s = needs_spec(); !s.ok()) return s;
      return MakeShift(*spec, bounds);
    }
    if (name == "default" || name == "com.bazaarvoice.jolt.Defaultr") {
      if (auto s = needs_spec(); !s.ok()) return s;
      return MakeDefault(*spec);
    }
    if (name == "remove" || name == "com.bazaarvoice.jolt.Removr") {
      if (auto s = needs_spec(); !s.ok()) return s;
      return MakeRemove(*spec);
    }
    if (name == "sort" || name == "com.bazaarvoice.jolt.Sortr") return MakeSort();
    if (name == "modify-overwrite-beta" || name == "modify-default-beta" ||
        name == "modify-define-beta") {
      if (auto s = needs_spec(); !s.ok()) return s;
      return MakeModify(*spec, name, bounds);
    }
    if (name == "com.bazaarvoice.jolt.Modifier$Overwritr") {
      if (auto s = needs_spec(); !s.ok()) return s;
      return MakeModify(*spec, "modify-overwrite-beta", bounds);
    }
    if (name == "com.bazaarvoice.jolt.Modifier$Defaultr") {
      if (auto s = needs_spec(); !s.ok()) return s;
      return MakeModify(*spec, "modify-default-beta", bounds);
    }
    if (name == "com.bazaarvoice.jolt.Modifier$Definr") {
      if (auto s = needs_spec(); !s.ok()) return s;
      return MakeModify(*spec, "modify-define-beta", bounds);
    }
    if (name == "cardinality" || name == "com.bazaarvoice.jolt.CardinalityTransform") {
      if (auto s = needs_spec(); !s.ok()) return s;
      return MakeCardinality(*spec);
    }
  } catch (const SpecError& e) {
    return absl::InvalidArgumentError(StrCat("the Jolt ", name, " spec: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        StrCat("the Jolt ", name, " spec cannot be built: ", e.what()));
  }
  return absl::InvalidArgumentError(StrCat(
      "unknown Jolt operation \"", name,
      "\" (rfs runs shift, default, remove, sort, cardinality and modify-*-beta; Java transform "
      "classes do not load)"));
}

}  // namespace jolt

namespace {

class JoltTransformer final : public IJsonTransformer {
 public:
  JoltTransformer(std::vector<std::unique_ptr<jolt::Operation>> chain,
                  std::vector<std::string> names)
      : chain_(std::move(chain)), names_(std::move(names)) {}

  absl::StatusOr<json::value> Transform(json::value input) override {
    for (size_t i = 0; i < chain_.size(); ++i) {
      // Errors say which operation of the chain failed.
      const std::string where = StrCat("Jolt operation ", i + 1, " (", names_[i], ")");
      absl::StatusOr<json::value> out;
      try {
        out = chain_[i]->Apply(std::move(input));
      } catch (const std::exception& e) {
        // What the operations do not expect: fails the batch rather than the worker.
        return absl::InternalError(StrCat(where, ": ", e.what()));
      }
      if (!out.ok())
        return absl::Status(out.status().code(), StrCat(where, ": ", out.status().message()));
      input = *std::move(out);
    }
    if (input.is_null()) {
      return absl::InvalidArgumentError(
          "the Jolt chain gave null (as a shift that matches nothing does); Java hands null on, "
          "rfs fails the batch");
    }
    return input;
  }
  std::string Describe() const override { return "JsonJoltTransformerProvider"; }

 private:
  std::vector<std::unique_ptr<jolt::Operation>> chain_;
  std::vector<std::string> names_;  // each operation's name, for errors
};

constexpr std::string_view kJoltUsage =
    "expects {\"script\": {\"operation\": \"shift\", \"spec\": {...}}} or a list of such "
    "objects, each with one key";

}  // namespace

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJoltTransformer(
    const json::value& config, const TransformLimits& limits) {
  std::vector<const json::value*> entries;
  if (config.is_object()) {
    entries.push_back(&config);
  } else if (config.is_array()) {
    for (const auto& e : config.get_array()) entries.push_back(&e);
  } else {
    return absl::InvalidArgumentError(std::string(kJoltUsage));
  }
  jolt::Bounds bounds;
  bounds.output_bytes = limits.memory_bytes;
  std::vector<std::unique_ptr<jolt::Operation>> chain;
  std::vector<std::string> names;
  for (size_t i = 0; i < entries.size(); ++i) {
    const json::value& e = *entries[i];
    if (!e.is_object() || e.get_object().size() != 1) {
      return absl::InvalidArgumentError(StrCat(kJoltUsage, "; entry ", i + 1, " is not"));
    }
    const auto& [key, value] = *e.get_object().begin();
    if (key == "canned") {
      return absl::InvalidArgumentError(
          StrCat("entry ", i + 1, ": \"canned\" operations (", json::serialize(value),
                 ") rewrite HTTP messages for the Java traffic replayer; documents and metadata "
                 "take \"script\" operations"));
    }
    if (key != "script") {
      return absl::InvalidArgumentError(
          StrCat(kJoltUsage, "; entry ", i + 1, " has \"", std::string_view(key), "\""));
    }
    auto op = jolt::MakeOperation(value, bounds);
    if (!op.ok()) {
      return absl::InvalidArgumentError(StrCat("entry ", i + 1, ": ", op.status().message()));
    }
    chain.push_back(*std::move(op));
    const json::value* name =
        value.is_object() ? value.get_object().if_contains("operation") : nullptr;
    names.push_back(name != nullptr && name->is_string() ? std::string(name->get_string()) : "?");
  }
  return std::make_unique<JoltTransformer>(std::move(chain), std::move(names));
}

}  // namespace rfs::transform::internal
