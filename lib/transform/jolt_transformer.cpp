// JsonJoltTransformerProvider: a chain of Jolt operations (bazaarvoice/jolt 0.1.8, which the Java
// tool runs) applied to each batch of documents, or to each metadata item. This file holds the
// chain and the operations but shift (jolt_shift.cpp): default (Defaultr), remove (Removr) and
// sort (Sortr), each following the Java class of that name.
//
// Config, as the Java provider takes it: {"script": <operation>} or a list of such objects, where
// an operation is {"operation": "shift" | "default" | "remove" | "sort", "spec": ...}. The Java
// provider's "canned" operations rewrite HTTP messages for the traffic replayer and are refused.
#include <algorithm>
#include <charconv>
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

// Java's Integer.parseInt, or SpecError.
int ParseIndex(std::string_view text) {
  std::string_view body = text;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  int value = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (body.empty() || ec != std::errc() || end != body.data() + body.size()) {
    throw SpecError(StrCat("the default key \"", text, "\" under an array ([]) is not a number"));
  }
  return negative ? -value : value;
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
  explicit Default(const json::value& spec) : map_root_("root", Checked(spec), false) {
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
              "default: the spec can not take input that is a top-level JSON array (its keys "
              "are not all indices or *)");
        }
        array_root_->ApplyChildren(input);
      } else {
        map_root_.ApplyChildren(input);
      }
    } catch (const RunError& e) {
      return absl::InvalidArgumentError(StrCat("default: ", e.what()));
    }
    return input;
  }

 private:
  static const json::value& Checked(const json::value& spec) {
    if (!spec.is_object()) {
      throw SpecError(StrCat("default expects a spec that is a map; got ",
                             json::serialize(spec).substr(0, 100)));
    }
    return spec;
  }

  DefaultKey map_root_;
  std::optional<DefaultKey> array_root_;
};

// --- remove (Removr, removr/spec) ---

class RemoveSpec {
 public:
  RemoveSpec(std::string key, const json::value& rhs) : key_(std::move(key)) {
    const size_t stars = std::count(key_.begin(), key_.end(), '*');
    star_all_ = key_ == "*";
    star_ = stars > 0 && !star_all_;
    if (star_) {
      size_t start = 0;
      for (size_t at = key_.find('*'); at != std::string::npos; at = key_.find('*', start)) {
        pieces_.push_back(key_.substr(start, at - start));
        start = at + 1;
      }
      pieces_.push_back(key_.substr(start));
    }
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
  bool Matches(std::string_view text) const {
    if (star_all_) return true;
    if (!star_) return text == key_;
    return MatchFrom(text, 0, 0);
  }
  // Each '*' takes one character or more (StarSingle/Double/RegexPathElement's stringMatch).
  bool MatchFrom(std::string_view text, size_t at, size_t piece) const {
    const std::string& p = pieces_[piece];
    if (text.substr(at, p.size()) != p) return false;
    at += p.size();
    if (piece + 1 == pieces_.size()) return at == text.size();
    for (size_t len = 1; at + len <= text.size(); ++len) {
      if (MatchFrom(text, at + len, piece + 1)) return true;
    }
    return false;
  }
  // A non-negative literal index, as getNonNegativeIntegerFromLiteralPathElement.
  std::optional<size_t> LiteralIndex() const {
    if (star_ || star_all_) return std::nullopt;
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
      for (const auto& key : remove) object.erase(key);
    }
  }

  void ApplyToMap(json::object& object, std::vector<std::string>& remove) const {
    if (composite_) {
      if (!star_ && !star_all_) {
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
      } else if (star_all_) {
        for (auto& v : list) ProcessChildren(v);
      }
      return;
    }
    if (auto index = LiteralIndex()) {
      if (*index < list.size()) remove.push_back(*index);
    } else if (star_all_) {
      for (size_t i = 0; i < list.size(); ++i) remove.push_back(i);
    }
  }

  std::string key_;
  bool star_all_ = false;
  bool star_ = false;
  std::vector<std::string> pieces_;
  bool composite_ = false;
  std::vector<RemoveSpec> children_;
};

class Remove final : public Operation {
 public:
  explicit Remove(const json::value& spec) : root_("root", Checked(spec)) {}
  absl::StatusOr<json::value> Apply(json::value input) override {
    root_.ApplyToRoot(input);
    return input;
  }

 private:
  static const json::value& Checked(const json::value& spec) {
    if (!spec.is_object()) {
      throw SpecError(StrCat("remove expects a spec that is a map; got ",
                             json::serialize(spec).substr(0, 100)));
    }
    return spec;
  }
  RemoveSpec root_;
};

// --- sort (Sortr) ---

// Java's String.compareTo: UTF-16 code units, so characters beyond U+FFFF (surrogates, 0xD800..)
// sort before U+E000..U+FFFF, unlike UTF-8's byte order.
std::u16string Utf16(std::string_view s) {
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

void SortValue(json::value& v) {
  if (v.is_array()) {
    for (auto& e : v.get_array()) SortValue(e);
    return;
  }
  if (!v.is_object()) return;
  auto& object = v.get_object();
  std::vector<std::pair<std::u16string, std::string>> keys;
  keys.reserve(object.size());
  for (const auto& [k, unused] : object) keys.emplace_back(Utf16(k), std::string(k));
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

std::vector<std::string> SplitOr(std::string_view key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t bar = key.find('|'); bar != std::string_view::npos; bar = key.find('|', start)) {
    parts.emplace_back(key.substr(start, bar - start));
    start = bar + 1;
  }
  parts.emplace_back(key.substr(start));
  while (parts.size() > 1 && parts.back().empty()) parts.pop_back();
  return parts;
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
  } catch (const SpecError& e) {
    return absl::InvalidArgumentError(StrCat("the Jolt ", name, " spec: ", e.what()));
  }
  if (name == "cardinality" || name.rfind("modify-", 0) == 0) {
    return absl::InvalidArgumentError(
        StrCat("the Jolt operation \"", name,
               "\" is not run by rfs (it runs shift, default, remove and sort); "
               "JqTransformerProvider or JsonJSTransformerProvider can do what it does"));
  }
  return absl::InvalidArgumentError(
      StrCat("unknown Jolt operation \"", name,
             "\" (rfs runs shift, default, remove and sort; Java transform classes do not load)"));
}

}  // namespace jolt

namespace {

class JoltTransformer final : public IJsonTransformer {
 public:
  explicit JoltTransformer(std::vector<std::unique_ptr<jolt::Operation>> chain)
      : chain_(std::move(chain)) {}

  absl::StatusOr<json::value> Transform(json::value input) override {
    for (auto& op : chain_) {
      auto out = op->Apply(std::move(input));
      if (!out.ok()) return out.status();
      input = *std::move(out);
    }
    if (input.is_null()) {
      return absl::InvalidArgumentError(
          "the Jolt chain gave null (a shift that matched nothing writes no output)");
    }
    return input;
  }
  std::string Describe() const override { return "JsonJoltTransformerProvider"; }

 private:
  std::vector<std::unique_ptr<jolt::Operation>> chain_;
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
  }
  return std::unique_ptr<IJsonTransformer>(new JoltTransformer(std::move(chain)));
}

}  // namespace rfs::transform::internal
