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
//
// A script sees nothing of the process (duktape has no environment, file or network access).
// Each heap allocates through a counting allocator bounded by TransformLimits::memory_bytes. A
// call past its time or a stop's grace is interrupted: every further allocation is refused, and
// duktape's execution-timeout hook (built in: cmake/RfsDependencies.cmake), which the interpreter
// polls every few thousand instructions, throws a RangeError out of the script, so a loop that
// never allocates stops too.
#include <atomic>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "json_transformers_internal.hpp"
#include "transform_budget_internal.hpp"
#include <duktape.h>
#include <malloc.h>

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

// The heap's allocator state: bytes held, the bound, and whether the running call was interrupted.
struct HeapBudget {
  std::atomic<size_t> used{0};
  size_t max_bytes = 0;
  std::atomic<bool> refuse{false};
  std::atomic<bool> over_memory{false};
};

void* BudgetAlloc(void* udata, duk_size_t size) {
  auto* budget = static_cast<HeapBudget*>(udata);
  if (budget->refuse.load(std::memory_order_relaxed)) return nullptr;
  if (budget->used.load(std::memory_order_relaxed) + size > budget->max_bytes) {
    budget->over_memory = true;
    return nullptr;
  }
  void* p = std::malloc(size);
  if (p != nullptr) budget->used += malloc_usable_size(p);
  return p;
}

void BudgetFree(void* udata, void* ptr);

void* BudgetRealloc(void* udata, void* ptr, duk_size_t size) {
  auto* budget = static_cast<HeapBudget*>(udata);
  if (ptr == nullptr) return BudgetAlloc(udata, size);
  const size_t old_size = malloc_usable_size(ptr);
  if (size > old_size) {
    if (budget->refuse.load(std::memory_order_relaxed)) return nullptr;
    if (budget->used.load(std::memory_order_relaxed) + (size - old_size) > budget->max_bytes) {
      budget->over_memory = true;
      return nullptr;
    }
  }
  if (size == 0) {
    BudgetFree(udata, ptr);
    return nullptr;
  }
  void* p = std::realloc(ptr, size);
  if (p == nullptr) return nullptr;
  budget->used += malloc_usable_size(p);
  budget->used -= old_size;
  return p;
}

void BudgetFree(void* udata, void* ptr) {
  if (ptr == nullptr) return;
  static_cast<HeapBudget*>(udata)->used -= malloc_usable_size(ptr);
  std::free(ptr);
}

}  // namespace
}  // namespace rfs::transform::internal

// duktape's DUK_USE_EXEC_TIMEOUT_CHECK (its heap's user data is the HeapBudget): true from the
// watchdog's interruption until the call returns, so the RangeError it raises escapes every
// try/catch of the script.
extern "C" int rfs_duktape_exec_timeout(void* heap_udata) {
  using rfs::transform::internal::HeapBudget;
  return static_cast<const HeapBudget*>(heap_udata)->refuse.load(std::memory_order_relaxed) ? 1 : 0;
}

namespace rfs::transform::internal {
namespace {

class JsFunction {
 public:
  static absl::StatusOr<std::unique_ptr<JsFunction>> Create(const std::string& script,
                                                            const std::string& bindings_json,
                                                            const TransformLimits& limits) {
    std::unique_ptr<JsFunction> fn(new JsFunction);
    fn->limits_ = limits;
    fn->budget_.max_bytes = limits.memory_bytes;
    fn->ctx_ = duk_create_heap(BudgetAlloc, BudgetRealloc, BudgetFree, &fn->budget_, nullptr);
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

  // Takes `input` by value: it is freed once serialised, so a huge document is not held as JSON
  // values while the script runs.
  absl::StatusOr<json::value> Call(json::value input) {
    if (auto inexact = FindInexactInteger(input)) {
      return absl::InvalidArgumentError(
          StrCat("JavaScript would alter the integer at ", *inexact,
                 " (beyond 2^53, held as a double); the document is left untransformed"));
    }
    duk_context* ctx = ctx_;
    budget_.over_memory = false;
    budget_.refuse = false;
    // Destroyed after `call` (which unregisters from the watchdog first): an interruption that
    // lands as the call ends never carries over to the next one.
    struct Reset {
      HeapBudget& budget;
      ~Reset() { budget.refuse = false; }
    } reset{budget_};
    BudgetedCall call(limits_, [this] { budget_.refuse = true; });
    std::string text = SerializeJson(input);
    input = nullptr;
    // Everything that allocates in the heap runs inside one protected call, so a throw anywhere
    // (a refused allocation too: pushing a huge document can go over the budget) is an error
    // here; outside one, duktape's uncaught-error path allocates again and recurses.
    if (duk_safe_call(
            ctx,
            [](duk_context* c, void* udata) -> duk_ret_t {
              auto* text = static_cast<std::string*>(udata);
              duk_push_global_stash(c);
              duk_get_prop_string(c, -1, "transform");
              duk_get_prop_string(c, -2, "decode");
              duk_remove(c, -3);
              duk_push_lstring(c, text->data(), text->size());  // a copy in the heap
              std::string().swap(*text);
              duk_call(c, 1);  // decode(text)
              duk_call(c, 1);  // transform(input)
              if (duk_is_undefined(c, -1)) {
                return duk_error(c, DUK_ERR_TYPE_ERROR,
                                 "the transform function returned undefined");
              }
              duk_json_encode(c, -1);
              return 1;
            },
            &text, 0, 1) != 0) {
      std::string error = PopError(ctx);
      if (absl::Status verdict = call.verdict(); !verdict.ok()) return verdict;
      if (budget_.over_memory) {
        call.ExceededMemory();
        return call.verdict();
      }
      return absl::InvalidArgumentError(StrCat("JavaScript error: ", error));
    }
    duk_size_t size = 0;
    const char* out = duk_get_lstring(ctx, -1, &size);
    boost::system::error_code ec;
    // As deep as the engines' own parsers go (Boost.JSON's default stops at 32).
    json::parse_options options;
    options.max_depth = 1000;
    json::value result =
        json::parse(json::string_view(out ? out : "", out ? size : 0), ec, {}, options);
    duk_pop(ctx);
    if (ec) {
      return absl::InvalidArgumentError(
          StrCat("the transform function returned something JSON cannot hold: ", ec.message()));
    }
    return result;
  }

 private:
  JsFunction() = default;
  TransformLimits limits_;
  HeapBudget budget_;
  duk_context* ctx_ = nullptr;
};

absl::StatusOr<std::unique_ptr<JsFunction>> FromConfig(const json::value& config,
                                                       std::string_view provider,
                                                       const TransformLimits& limits) {
  RFS_ASSIGN_OR_RETURN(
      std::string script,
      ScriptFromConfig(config, provider, "initializationScript", "initializationScriptFile"));
  RFS_ASSIGN_OR_RETURN(std::string bindings, BindingsFromConfig(config.as_object()));
  for (const auto& [key, value] : config.as_object()) {
    if (key != "initializationScript" && key != "initializationScriptFile" &&
        key != "bindingsObject") {
      return absl::InvalidArgumentError(
          StrCat("unsupported key \"", std::string_view(key),
                 "\" (supported: initializationScript, initializationScriptFile, bindingsObject)"));
    }
  }
  return JsFunction::Create(script, bindings, limits);
}

class JsTransformer final : public IJsonTransformer {
 public:
  explicit JsTransformer(std::unique_ptr<JsFunction> fn) : fn_(std::move(fn)) {}
  absl::StatusOr<json::value> Transform(json::value input) override {
    return fn_->Call(std::move(input));
  }
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

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJsTransformer(const json::value& config,
                                                                    const TransformLimits& limits) {
  RFS_ASSIGN_OR_RETURN(auto fn, FromConfig(config, "JsonJSTransformerProvider", limits));
  return std::unique_ptr<IJsonTransformer>(new JsTransformer(std::move(fn)));
}

absl::StatusOr<std::unique_ptr<IJsonPredicate>> MakeJsPredicate(const json::value& config,
                                                                const TransformLimits& limits) {
  RFS_ASSIGN_OR_RETURN(auto fn, FromConfig(config, "JsonJSPredicateProvider", limits));
  return std::unique_ptr<IJsonPredicate>(new JsPredicate(std::move(fn)));
}

}  // namespace rfs::transform::internal
