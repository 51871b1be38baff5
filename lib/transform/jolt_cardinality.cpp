// Jolt's cardinality (CardinalityTransform in bazaarvoice/jolt 0.1.8, and its
// cardinality/Cardinality{Spec,CompositeSpec,LeafSpec}): makes the values the spec names a list
// ("MANY") or the first element of their list ("ONE"), in place.
//
// Java's quirks that a spec can meet are kept, as errors where Java throws: a leaf that matches
// under a list or a value (ClassCastException), an "@" at the root (NullPointerException), two
// wildcard keys in one map (NullPointerException while the spec is built).
#include <optional>
#include <string>
#include <vector>

#include "rfs/core/str_cat.hpp"

#include "boost/json/serialize.hpp"
#include "jolt_internal.hpp"

namespace rfs::transform::internal::jolt {

namespace json = boost::json;
using core::StrCat;

namespace {

class CardinalitySpec {
 public:
  CardinalitySpec(std::string key, const json::value& rhs) : key_(std::move(key)) {
    if (key_.find('@') != std::string::npos) {
      if (key_ != "@") {
        throw SpecError(StrCat("the cardinality key ", key_, ": '@' can only be a single '@'"));
      }
      at_ = true;
    } else if (key_.find('*') != std::string::npos) {
      star_.emplace(key_, /*star_double_rules=*/false);
    }
    if (!rhs.is_object()) {
      const bool one = rhs.is_string() && rhs.get_string() == "ONE";
      const bool many = rhs.is_string() && rhs.get_string() == "MANY";
      if (!one && !many) {
        throw SpecError(StrCat("invalid cardinality type ", json::serialize(rhs).substr(0, 100),
                               " for \"", key_, "\" (ONE or MANY)"));
      }
      many_ = many;
      return;
    }
    composite_ = true;
    if (at_) throw SpecError("the cardinality key @ cannot have children");
    if (rhs.get_object().empty()) {
      throw SpecError(StrCat("the cardinality spec for \"", key_, "\" is an empty {}"));
    }
    for (const auto& [child_key, child_rhs] : rhs.get_object()) {
      children_.emplace_back(std::string(child_key), child_rhs);
    }
    size_t wildcards = 0;
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i].at_) {
        special_ = i;
      } else if (children_[i].star_) {
        computed_ = i;
        ++wildcards;
      }
    }
    if (wildcards > 1) {
      throw SpecError(StrCat("the cardinality spec for \"", key_,
                             "\" has more than one wildcard key (Java's Jolt fails on it)"));
    }
  }

  // CardinalityTransform.transform: the root spec applied to the whole input.
  void ApplyToRoot(json::value& input) const { Apply("root", &input, nullptr); }

 private:
  bool Matches(std::string_view key) const {
    if (at_) return true;
    return star_ ? star_->Matches(key) : key == key_;
  }

  // `input` is the value at `input_key` in `parent` (an object, a list, a value, or nullptr at the
  // root); nullptr `input` stands for a value matched by its text, which has none.
  bool Apply(const std::string& input_key, json::value* input, json::value* parent) const {
    if (!Matches(input_key)) return false;
    if (!composite_) {
      Adjust(input_key, input, parent);
      return true;
    }
    if (special_) input = children_[*special_].Adjust(input_key, input, parent);
    if (input != nullptr) Process(*input);
    return true;
  }

  // CardinalityLeafSpec.performCardinalityAdjustment: the value after the change (nullptr for
  // Java's null).
  json::value* Adjust(const std::string& key, json::value* input, json::value* parent) const {
    if (parent != nullptr && !parent->is_object()) {
      throw RunError(StrCat("a cardinality key (\"", key_,
                            "\") matched inside a list or a value, which Java's Jolt cannot "
                            "change (ClassCastException)"));
    }
    const bool is_list = input != nullptr && input->is_array();
    const bool puts = many_ || is_list;
    if (!puts) return nullptr;
    if (parent == nullptr) {
      throw RunError(
          StrCat("the cardinality key \"", key_,
                 "\" changes the root, which Java's Jolt cannot (NullPointerException)"));
    }
    json::object& object = parent->get_object();
    if (many_) {
      if (is_list) return input;
      if (input == nullptr || input->is_null()) {
        object[key] = json::array();
        return &object[key];
      }
      // Java removes the key and puts it back: it moves to the end.
      json::value one = std::move(*input);
      object.stable_erase(key);
      object[key] = json::array{std::move(one)};
      return &object[key];
    }
    json::value first = input->get_array().empty() ? json::value() : input->get_array()[0];
    object[key] = std::move(first);
    json::value* stored = &object[key];
    return stored->is_null() ? nullptr : stored;
  }

  void Process(json::value& input) const {
    if (input.is_object()) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : input.get_object()) keys.emplace_back(k);
      for (const auto& k : keys) {
        json::value* v = input.get_object().if_contains(k);
        if (v != nullptr) ApplyKey(k, v, &input);
      }
    } else if (input.is_array()) {
      for (size_t i = 0; i < input.get_array().size(); ++i) {
        ApplyKey(std::to_string(i), &input.get_array()[i], &input);
      }
    } else if (auto text = ScalarKeyText(input)) {
      ApplyKey(*text, nullptr, &input);
    }
  }

  // A child named exactly as the key first (Java files every child under its raw key), then the
  // wildcard.
  void ApplyKey(const std::string& key, json::value* value, json::value* parent) const {
    for (const auto& child : children_) {
      if (child.key_ == key) {
        child.Apply(key, value, parent);
        return;
      }
    }
    if (computed_) children_[*computed_].Apply(key, value, parent);
  }

  std::string key_;
  bool at_ = false;
  std::optional<StarPattern> star_;
  bool composite_ = false;
  bool many_ = false;
  std::vector<CardinalitySpec> children_;
  std::optional<size_t> special_;   // the "@" leaf: the composite's own value
  std::optional<size_t> computed_;  // the wildcard child
};

class Cardinality final : public Operation {
 public:
  explicit Cardinality(const json::value& spec) : root_("root", MapSpec("cardinality", spec)) {}
  absl::StatusOr<json::value> Apply(json::value input) override {
    try {
      root_.ApplyToRoot(input);
    } catch (const RunError& e) {
      return absl::InvalidArgumentError(e.what());
    }
    return input;
  }

 private:
  CardinalitySpec root_;
};

}  // namespace

std::unique_ptr<Operation> MakeCardinality(const json::value& spec) {
  return std::make_unique<Cardinality>(spec);
}

}  // namespace rfs::transform::internal::jolt
