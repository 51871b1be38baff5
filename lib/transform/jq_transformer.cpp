// JqTransformerProvider and JqPredicateProvider: user programs in the jq language, run by libjq
// (Debian libjq-dev, jq 1.6). Config: {"script": "<jq program>"} or {"scriptFile": "<path>"}.
//
// The program runs once per document (a batch is taken apart) or once on a metadata item. Its
// outputs replace the input: none drops it, several split it. A predicate is true when the
// program's first output is `true`. jq 1.6 holds numbers as doubles, so an input carrying an
// integer beyond 2^53 is refused (that document fails, naming the field) rather than altered.
//
// A program sees nothing of the process: `$ENV` and `env` are empty (the worker's environment
// holds credentials), the origin and search-path builtins say nothing, and modules
// (`import`/`include`) are refused when the program compiles. Each call runs under the
// TransformLimits (transform_budget_internal.hpp): the watchdog halts it past its time, and its
// outputs count against the memory bound. Output nested deeper than the engines' own limit
// (1000) fails the document.
#include <cctype>
#include <cmath>

extern "C" {
#include <jq.h>
#include <jv.h>
}

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "json_transformers_internal.hpp"
#include "transform_budget_internal.hpp"

namespace rfs::transform::internal {

namespace json = boost::json;
using core::StrCat;

namespace {

jv ToJv(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return jv_null();
    case json::kind::bool_:
      return v.get_bool() ? jv_true() : jv_false();
    case json::kind::int64:
      return jv_number(static_cast<double>(v.get_int64()));
    case json::kind::uint64:
      return jv_number(static_cast<double>(v.get_uint64()));
    case json::kind::double_:
      return jv_number(v.get_double());
    case json::kind::string:
      return jv_string_sized(v.get_string().data(), static_cast<int>(v.get_string().size()));
    case json::kind::array: {
      jv out = jv_array();
      for (const auto& e : v.get_array()) out = jv_array_append(out, ToJv(e));
      return out;
    }
    case json::kind::object: {
      jv out = jv_object();
      for (const auto& [key, e] : v.get_object()) {
        out =
            jv_object_set(out, jv_string_sized(key.data(), static_cast<int>(key.size())), ToJv(e));
      }
      return out;
    }
  }
  return jv_null();
}

// What the engines' own parsers accept (OpenSearch's XContent and Jackson's default nesting depth).
constexpr int kMaxOutputDepth = 1000;

// Converting a program's output back: bounded in depth and in the bytes it adds up to.
struct OutputBudget {
  size_t bytes = 0;
  size_t max_bytes = 0;
  bool over() const { return bytes > max_bytes; }
};

absl::StatusOr<json::value> FromJv(jv v, OutputBudget& budget, int depth = 0);

// The elements of the array `v` (consumed).
absl::StatusOr<json::value> FromJvArray(jv v, OutputBudget& budget, int depth) {
  json::array out;
  const int n = jv_array_length(jv_copy(v));
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto e = FromJv(jv_array_get(jv_copy(v), i), budget, depth + 1);
    if (!e.ok()) {
      jv_free(v);
      return e.status();
    }
    out.push_back(*std::move(e));
  }
  jv_free(v);
  return json::value(std::move(out));
}

// The members of the object `v` (consumed).
absl::StatusOr<json::value> FromJvObject(jv v, OutputBudget& budget, int depth) {
  json::object out;
  for (int it = jv_object_iter(v); jv_object_iter_valid(v, it); it = jv_object_iter_next(v, it)) {
    jv key = jv_object_iter_key(v, it);
    std::string k(jv_string_value(key), static_cast<size_t>(jv_string_length_bytes(jv_copy(key))));
    jv_free(key);
    budget.bytes += k.size();
    auto e = FromJv(jv_object_iter_value(v, it), budget, depth + 1);
    if (!e.ok()) {
      jv_free(v);
      return e.status();
    }
    out[k] = *std::move(e);
  }
  jv_free(v);
  return json::value(std::move(out));
}

// A jq number as JSON: integral ones as integers (as the engines print them).
absl::StatusOr<json::value> FromJvNumber(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
    return json::value(static_cast<int64_t>(d));
  }
  if (!std::isfinite(d)) return absl::InvalidArgumentError("jq produced a non-finite number");
  return json::value(d);
}

// Consumes `v`.
absl::StatusOr<json::value> FromJv(jv v, OutputBudget& budget, int depth) {
  if (depth > kMaxOutputDepth) {
    jv_free(v);
    return absl::InvalidArgumentError(
        StrCat("the jq program produced a value nested deeper than ", kMaxOutputDepth, " levels"));
  }
  budget.bytes += sizeof(json::value);
  if (budget.over()) {
    jv_free(v);
    return absl::ResourceExhaustedError("output over the memory budget");
  }
  const jv_kind kind = jv_get_kind(v);
  switch (kind) {
    case JV_KIND_NULL:
    case JV_KIND_TRUE:
    case JV_KIND_FALSE:
      jv_free(v);
      return kind == JV_KIND_NULL ? json::value(nullptr) : json::value(kind == JV_KIND_TRUE);
    case JV_KIND_NUMBER: {
      const double d = jv_number_value(v);
      jv_free(v);
      return FromJvNumber(d);
    }
    case JV_KIND_STRING: {
      const auto length = static_cast<size_t>(jv_string_length_bytes(jv_copy(v)));
      budget.bytes += length;
      if (budget.over()) {
        jv_free(v);
        return absl::ResourceExhaustedError("output over the memory budget");
      }
      json::value out(json::string_view(jv_string_value(v), length));
      jv_free(v);
      return out;
    }
    case JV_KIND_ARRAY:
      return FromJvArray(v, budget, depth);
    case JV_KIND_OBJECT:
      return FromJvObject(v, budget, depth);
    case JV_KIND_INVALID:
      break;
  }
  jv_free(v);
  return absl::InternalError("jq produced an invalid value");
}

void CollectMessage(void* data, jv message) {
  auto* out = static_cast<std::string*>(data);
  if (jv_get_kind(message) == JV_KIND_STRING) {
    if (!out->empty()) *out += "; ";
    *out += jv_string_value(message);
  }
  jv_free(message);
}

// jq allows `module`, `import` and `include` directives only at a program's start (after
// whitespace and comments); placed after the sandbox prefix they would be syntax errors anyway.
// This names them plainly instead.
bool HasModuleDirective(std::string_view script) {
  size_t at = 0;
  while (at < script.size()) {
    if (std::isspace(static_cast<unsigned char>(script[at]))) {
      ++at;
    } else if (script[at] == '#') {
      while (at < script.size() && script[at] != '\n') ++at;
    } else {
      break;
    }
  }
  size_t end = at;
  while (end < script.size() &&
         (std::isalnum(static_cast<unsigned char>(script[end])) || script[end] == '_')) {
    ++end;
  }
  const std::string_view word = script.substr(at, end - at);
  return word == "import" || word == "include" || word == "module";
}

// Put before the user's program (on its first line, so error positions stay true): the builtins
// that would show the process's environment or paths say nothing.
constexpr std::string_view kSandboxPrefix =
    "def env: {}; def get_search_list: []; def get_jq_origin: null; def get_prog_origin: null; "
    "{} as $ENV | (";

// One compiled program.
class JqProgram {
 public:
  static absl::StatusOr<std::unique_ptr<JqProgram>> Compile(const std::string& script,
                                                            const TransformLimits& limits) {
    if (HasModuleDirective(script)) {
      return absl::InvalidArgumentError(
          "jq modules (import/include) are not supported: a transform is one self-contained "
          "program");
    }
    std::unique_ptr<JqProgram> program(new JqProgram);
    program->limits_ = limits;
    program->state_ = jq_init();
    if (program->state_ == nullptr) return absl::ResourceExhaustedError("jq_init failed");
    jq_set_error_cb(program->state_, CollectMessage, &program->messages_);
    // No library path: `modulemeta` and the like find nothing instead of failing an assertion.
    jq_set_attr(program->state_, jv_string("JQ_LIBRARY_PATH"), jv_array());
    const std::string sandboxed = StrCat(kSandboxPrefix, script, "\n)");
    if (!jq_compile(program->state_, sandboxed.c_str())) {
      return absl::InvalidArgumentError(
          StrCat("the jq program does not compile: ",
                 program->messages_.empty() ? "syntax error" : program->messages_));
    }
    return program;
  }

  const TransformLimits& limits() const { return limits_; }
  /// Makes the running program stop at its next instruction (from another thread).
  void Interrupt() {
    if (!jq_halted(state_)) jq_halt(state_, jv_number(1), jv_string("rfs: interrupted"));
  }
  ~JqProgram() {
    if (state_ != nullptr) jq_teardown(&state_);
  }

  // Every output of the program on `input`, under `call`'s limits.
  absl::StatusOr<std::vector<json::value>> Run(const json::value& input, BudgetedCall& call) {
    RFS_RETURN_IF_ERROR(CheckIntegers(input));
    return RunConverted(ToJv(input), call);
  }
  // `input` is freed once converted, so a huge document is not held twice while the program runs.
  absl::StatusOr<std::vector<json::value>> Run(json::value&& input, BudgetedCall& call) {
    RFS_RETURN_IF_ERROR(CheckIntegers(input));
    jv converted = ToJv(input);
    input = nullptr;
    return RunConverted(converted, call);
  }

 private:
  static absl::Status CheckIntegers(const json::value& input) {
    if (auto inexact = FindInexactInteger(input)) {
      return absl::InvalidArgumentError(
          StrCat("jq 1.6 would alter the integer at ", *inexact,
                 " (beyond 2^53, held as a double); the document is left untransformed"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<json::value>> RunConverted(jv input, BudgetedCall& call) {
    messages_.clear();
    jq_start(state_, input, 0);
    std::vector<json::value> out;
    OutputBudget budget{0, limits_.memory_bytes};
    while (true) {
      jv result = jq_next(state_);
      if (!jv_is_valid(result)) {
        if (absl::Status verdict = call.verdict(); !verdict.ok()) {
          jv_free(result);
          return verdict;
        }
        if (jv_invalid_has_msg(jv_copy(result))) {
          jv message = jv_invalid_get_msg(result);
          std::string text;
          if (jv_get_kind(message) == JV_KIND_STRING) {
            text = jv_string_value(message);
            jv_free(message);
          } else {
            jv dumped = jv_dump_string(message, 0);
            text = jv_string_value(dumped);
            jv_free(dumped);
          }
          return absl::InvalidArgumentError(StrCat("jq error: ", text));
        }
        jv_free(result);
        if (jq_halted(state_)) {
          // The program's own `halt_error`: an error with its message; a plain `halt` ends it.
          jv message = jq_get_error_message(state_);
          if (jv_get_kind(message) == JV_KIND_STRING) {
            std::string text = jv_string_value(message);
            jv_free(message);
            return absl::InvalidArgumentError(StrCat("jq halt_error: ", text));
          }
          jv_free(message);
        }
        break;
      }
      auto v = FromJv(result, budget);
      if (absl::IsResourceExhausted(v.status())) {
        call.ExceededMemory();
        return call.verdict();
      }
      if (!v.ok()) return v.status();
      out.push_back(*std::move(v));
    }
    return out;
  }

  JqProgram() = default;
  TransformLimits limits_;
  jq_state* state_ = nullptr;
  std::string messages_;
};

class JqTransformer final : public IJsonTransformer {
 public:
  explicit JqTransformer(std::unique_ptr<JqProgram> program) : program_(std::move(program)) {}
  absl::StatusOr<json::value> Transform(json::value input) override {
    BudgetedCall call(program_->limits(), [p = program_.get()] { p->Interrupt(); });
    if (!input.is_array()) {
      RFS_ASSIGN_OR_RETURN(auto outputs, program_->Run(std::move(input), call));
      if (outputs.size() == 1) return std::move(outputs.front());
      json::array out;
      for (auto& o : outputs) out.push_back(std::move(o));
      return json::value(std::move(out));
    }
    json::array out;
    for (json::value& item : input.as_array()) {
      RFS_ASSIGN_OR_RETURN(auto outputs, program_->Run(std::move(item), call));
      for (auto& o : outputs) out.push_back(std::move(o));
    }
    return json::value(std::move(out));
  }
  std::string Describe() const override { return "JqTransformerProvider"; }

 private:
  std::unique_ptr<JqProgram> program_;
};

class JqPredicate final : public IJsonPredicate {
 public:
  explicit JqPredicate(std::unique_ptr<JqProgram> program) : program_(std::move(program)) {}
  absl::StatusOr<bool> Test(const json::value& input) override {
    BudgetedCall call(program_->limits(), [p = program_.get()] { p->Interrupt(); });
    RFS_ASSIGN_OR_RETURN(auto outputs, program_->Run(input, call));
    return !outputs.empty() && outputs.front().is_bool() && outputs.front().get_bool();
  }

 private:
  std::unique_ptr<JqProgram> program_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJqTransformer(const json::value& config,
                                                                    const TransformLimits& limits) {
  RFS_ASSIGN_OR_RETURN(std::string script,
                       ScriptFromConfig(config, "JqTransformerProvider", "script", "scriptFile"));
  RFS_ASSIGN_OR_RETURN(auto program, JqProgram::Compile(script, limits));
  return std::unique_ptr<IJsonTransformer>(new JqTransformer(std::move(program)));
}

absl::StatusOr<std::unique_ptr<IJsonPredicate>> MakeJqPredicate(const json::value& config,
                                                                const TransformLimits& limits) {
  RFS_ASSIGN_OR_RETURN(std::string script,
                       ScriptFromConfig(config, "JqPredicateProvider", "script", "scriptFile"));
  RFS_ASSIGN_OR_RETURN(auto program, JqProgram::Compile(script, limits));
  return std::unique_ptr<IJsonPredicate>(new JqPredicate(std::move(program)));
}

}  // namespace rfs::transform::internal
