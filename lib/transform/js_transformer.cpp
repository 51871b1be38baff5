// JsonJSTransformerProvider and JsonJSPredicateProvider on duktape 2.7 (Debian duktape-dev): an
// embeddable ECMAScript 5.1 engine (with a few ES2015 built-ins; no arrow functions, classes,
// let or Promise). The Java tool's contract: the script (`initializationScript`, or
// `initializationScriptFile`) evaluates to a function; it is called once with the bindings
// object (`bindingsObject`, a JSON object or a string holding one; default {}) and returns the
// transform function, which is then called with each input -- an array of documents, or one
// metadata item -- and returns the output (an array of documents; one item or an array of
// items). A predicate's function returns true (or "true") to match.
//
// Inputs are plain JSON objects (`doc.operation._index`). Scripts written for the Java tool's
// Java maps may call .get(k), .has(k) and .set(k, v) on them: each input object has those as
// own, non-enumerable properties (unless it has a field of that name). JavaScript numbers are
// doubles: an input carrying an integer beyond 2^53 is refused (that document fails, naming the
// field) rather than altered.
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "json_transformers_internal.hpp"
#include <duktape.h>

namespace rfs::transform::internal {

namespace json = boost::json;
using core::StrCat;

namespace {

// Evaluates to the input decoder: JSON.parse, then .get/.has/.set added to every object as own,
// non-enumerable properties (skipped where the object has a field of that name). Not on
// Object.prototype: an inherited "get" or "set" would break every Object.defineProperty call made
// with a plain descriptor object.
constexpr const char* kDecoderScript = R"JS(
(function () {
  function get(k) { return this[k]; }
  function has(k) { return Object.prototype.hasOwnProperty.call(this, k); }
  function set(k, v) { this[k] = v; return this; }
  function define(o, name, fn) {
    if (Object.prototype.hasOwnProperty.call(o, name)) return;
    var d = Object.create(null);
    d.value = fn; d.enumerable = false; d.configurable = true; d.writable = true;
    Object.defineProperty(o, name, d);
  }
  function attach(v) {
    if (v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (var i = 0; i < v.length; i++) attach(v[i]);
      return;
    }
    define(v, 'get', get); define(v, 'has', has); define(v, 'set', set);
    for (var k in v) attach(v[k]);
  }
  return function (text) { var v = JSON.parse(text); attach(v); return v; };
})()
)JS";

// The error on top of the stack as text, e.g. "TypeError: x is undefined" (pops it).
std::string PopError(duk_context* ctx) {
  std::string out = duk_safe_to_string(ctx, -1);
  duk_pop(ctx);
  return out;
}

class JsFunction {
 public:
  static absl::StatusOr<std::unique_ptr<JsFunction>> Create(const std::string& script,
                                                            const std::string& bindings_json) {
    std::unique_ptr<JsFunction> fn(new JsFunction);
    fn->ctx_ = duk_create_heap_default();
    if (fn->ctx_ == nullptr) return absl::ResourceExhaustedError("cannot create a duktape heap");
    duk_context* ctx = fn->ctx_;
    if (duk_peval_string(ctx, kDecoderScript) != 0) {
      return absl::InternalError(StrCat("input decoder: ", PopError(ctx)));
    }
    duk_push_global_stash(ctx);
    duk_swap_top(ctx, -2);
    duk_put_prop_string(ctx, -2, "decode");
    duk_pop(ctx);
    if (duk_peval_lstring(ctx, script.data(), script.size()) != 0) {
      return absl::InvalidArgumentError(
          StrCat("the script does not run (ECMAScript 5.1): ", PopError(ctx)));
    }
    if (!duk_is_function(ctx, -1)) {
      return absl::InvalidArgumentError(
          "the script must evaluate to a function(bindings) that returns the transform "
          "function, e.g. (function (bindings) { return function (input) { return input; }; })");
    }
    duk_push_lstring(ctx, bindings_json.data(), bindings_json.size());
    if (duk_safe_call(
            ctx,
            [](duk_context* c, void*) -> duk_ret_t {
              duk_json_decode(c, -1);
              return 1;
            },
            nullptr, 1, 1) != 0) {
      return absl::InvalidArgumentError(StrCat("bindingsObject: ", PopError(ctx)));
    }
    if (duk_pcall(ctx, 1) != 0) {
      return absl::InvalidArgumentError(
          StrCat("the script's function failed on the bindings: ", PopError(ctx)));
    }
    if (!duk_is_function(ctx, -1)) {
      return absl::InvalidArgumentError("the script's function must return the transform function");
    }
    duk_push_global_stash(ctx);
    duk_swap_top(ctx, -2);
    duk_put_prop_string(ctx, -2, "transform");
    duk_pop(ctx);
    return fn;
  }
  ~JsFunction() {
    if (ctx_ != nullptr) duk_destroy_heap(ctx_);
  }

  absl::StatusOr<json::value> Call(const json::value& input) {
    if (auto inexact = FindInexactInteger(input)) {
      return absl::InvalidArgumentError(
          StrCat("JavaScript would alter the integer at ", *inexact,
                 " (beyond 2^53, held as a double); the document is left untransformed"));
    }
    duk_context* ctx = ctx_;
    const std::string text = SerializeJson(input);
    duk_push_global_stash(ctx);
    duk_get_prop_string(ctx, -1, "transform");
    duk_get_prop_string(ctx, -2, "decode");
    duk_remove(ctx, -3);
    duk_push_lstring(ctx, text.data(), text.size());
    // Decode, call and encode inside one protected call, so a throw anywhere is an error here.
    if (duk_safe_call(
            ctx,
            [](duk_context* c, void*) -> duk_ret_t {
              duk_call(c, 1);  // decode(text)
              duk_call(c, 1);  // transform(input)
              if (duk_is_undefined(c, -1)) {
                return duk_error(c, DUK_ERR_TYPE_ERROR,
                                 "the transform function returned undefined");
              }
              duk_json_encode(c, -1);
              return 1;
            },
            nullptr, 3, 1) != 0) {
      return absl::InvalidArgumentError(StrCat("JavaScript error: ", PopError(ctx)));
    }
    duk_size_t size = 0;
    const char* out = duk_get_lstring(ctx, -1, &size);
    boost::system::error_code ec;
    json::value result = json::parse(json::string_view(out ? out : "", out ? size : 0), ec);
    duk_pop(ctx);
    if (ec) {
      return absl::InvalidArgumentError(
          StrCat("the transform function returned something JSON cannot hold: ", ec.message()));
    }
    return result;
  }

 private:
  JsFunction() = default;
  duk_context* ctx_ = nullptr;
};

absl::StatusOr<std::unique_ptr<JsFunction>> FromConfig(const json::value& config,
                                                       std::string_view provider) {
  RFS_ASSIGN_OR_RETURN(
      std::string script,
      ScriptFromConfig(config, provider, "initializationScript", "initializationScriptFile"));
  std::string bindings = "{}";
  if (const json::value* b = config.as_object().if_contains("bindingsObject"); b && !b->is_null()) {
    if (b->is_string()) {
      bindings = std::string(b->as_string());
    } else if (b->is_object()) {
      bindings = json::serialize(*b);
    } else {
      return absl::InvalidArgumentError(
          "bindingsObject must be a JSON object (or a string of one)");
    }
  }
  for (const auto& [key, value] : config.as_object()) {
    if (key != "initializationScript" && key != "initializationScriptFile" &&
        key != "bindingsObject") {
      return absl::InvalidArgumentError(
          StrCat("unsupported key \"", std::string_view(key),
                 "\" (supported: initializationScript, initializationScriptFile, bindingsObject)"));
    }
  }
  return JsFunction::Create(script, bindings);
}

class JsTransformer final : public IJsonTransformer {
 public:
  explicit JsTransformer(std::unique_ptr<JsFunction> fn) : fn_(std::move(fn)) {}
  absl::StatusOr<json::value> Transform(json::value input) override { return fn_->Call(input); }
  std::string Describe() const override { return "JsonJSTransformerProvider"; }

 private:
  std::unique_ptr<JsFunction> fn_;
};

class JsPredicate final : public IJsonPredicate {
 public:
  explicit JsPredicate(std::unique_ptr<JsFunction> fn) : fn_(std::move(fn)) {}
  absl::StatusOr<bool> Test(const json::value& input) override {
    RFS_ASSIGN_OR_RETURN(json::value out, fn_->Call(input));
    return (out.is_bool() && out.get_bool()) || (out.is_string() && out.get_string() == "true");
  }

 private:
  std::unique_ptr<JsFunction> fn_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJsTransformer(const json::value& config) {
  RFS_ASSIGN_OR_RETURN(auto fn, FromConfig(config, "JsonJSTransformerProvider"));
  return std::unique_ptr<IJsonTransformer>(new JsTransformer(std::move(fn)));
}

absl::StatusOr<std::unique_ptr<IJsonPredicate>> MakeJsPredicate(const json::value& config) {
  RFS_ASSIGN_OR_RETURN(auto fn, FromConfig(config, "JsonJSPredicateProvider"));
  return std::unique_ptr<IJsonPredicate>(new JsPredicate(std::move(fn)));
}

}  // namespace rfs::transform::internal
