// jq and JavaScript transforms see nothing of the process and stay within their time and memory.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/transform/json_transformer.hpp"

#include "absl/strings/string_view.h"

namespace json = boost::json;
using rfs::transform::IsTransformBudgetExceeded;
using rfs::transform::LoadTransformers;
using rfs::transform::TransformerContext;

namespace {

json::array OneDocument() {
  return json::array{rfs::transform::MakeDocumentMap(
      rfs::transform::DocumentOperation{"logs", "1", std::nullopt, std::nullopt},
      json::parse(R"({"msg":"hello"})"))};
}

std::string Jq(const std::string& script) {
  return json::serialize(
      json::array{json::object{{"JqTransformerProvider", json::object{{"script", script}}}}});
}

std::string Js(const std::string& script) {
  return json::serialize(json::array{
      json::object{{"JsonJSTransformerProvider", json::object{{"initializationScript", script}}}}});
}

bool Contains(absl::string_view text, absl::string_view part) {
  return text.find(part) != absl::string_view::npos;
}

}  // namespace

TEST_CASE("a jq transform sees no environment and no paths", "[transform][jq][security]") {
  ::setenv("RFS_TEST_PLANTED_SECRET", "planted-secret-7d1f", 1);
  for (const char* script :
       {".document.env = ($ENV | tostring)", ".document.env = (env | tostring)",
        ".document.env = ([get_search_list, get_jq_origin, get_prog_origin] | tostring)",
        "def f: $ENV; .document.env = (f | tostring)"}) {
    INFO(script);
    auto transformer = LoadTransformers(Jq(script));
    REQUIRE(transformer.ok());
    auto out = (*transformer)->Transform(OneDocument());
    REQUIRE(out.ok());
    const std::string text = json::serialize(*out);
    CHECK_FALSE(Contains(text, "planted-secret-7d1f"));
    CHECK_FALSE(Contains(text, "RFS_TEST_PLANTED_SECRET"));
    CHECK(Contains(text, "\"env\""));
  }
  ::unsetenv("RFS_TEST_PLANTED_SECRET");
}

TEST_CASE("jq modules are refused when the program loads", "[transform][jq][security]") {
  for (const char* script : {"import \"a\" as a; .", "include \"b\"; .",
                             " # note\n  import\"x\" as $x; .", "module {}; ."}) {
    INFO(script);
    auto transformer = LoadTransformers(Jq(script));
    REQUIRE_FALSE(transformer.ok());
    CHECK(transformer.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(Contains(transformer.status().message(), "modules"));
  }
  // A module lookup at run time finds nothing instead of failing an assertion.
  auto meta = LoadTransformers(Jq(".document.m = (\"a\" | try modulemeta catch \"none\")"));
  REQUIRE(meta.ok());
  auto out = (*meta)->Transform(OneDocument());
  CHECK((out.ok() || out.status().code() == absl::StatusCode::kInvalidArgument));
  // Programs that merely mention the words still load.
  CHECK(LoadTransformers(Jq(".document.important = (.document.msg | test(\"include\"))")).ok());
}

TEST_CASE("jq output nested deeper than the engines accept fails the document, not the worker",
          "[transform][jq][security]") {
  auto transformer = LoadTransformers(Jq(".document = (reduce range(100000) as $i (0; [.]))"));
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(OneDocument());
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Contains(out.status().message(), "deeper than 1000"));
  // 900 levels are fine.
  auto deep = LoadTransformers(Jq(".document = (reduce range(900) as $i (0; [.]))"));
  REQUIRE(deep.ok());
  CHECK((*deep)->Transform(OneDocument()).ok());
}

TEST_CASE("a looping jq program is interrupted at its time budget", "[transform][jq][budget]") {
  TransformerContext context;
  context.limits.time_per_call = std::chrono::milliseconds(300);
  for (const char* script : {"last(range(1e15))", "def f: f; f", "[repeat(1)] | length"}) {
    INFO(script);
    auto transformer = LoadTransformers(Jq(script), context);
    REQUIRE(transformer.ok());
    const auto started = std::chrono::steady_clock::now();
    auto out = (*transformer)->Transform(OneDocument());
    const auto took = std::chrono::steady_clock::now() - started;
    REQUIRE_FALSE(out.ok());
    CHECK(IsTransformBudgetExceeded(out.status()));
    CHECK((Contains(out.status().message(), "time budget") ||
           Contains(out.status().message(), "memory budget")));
    CHECK(took < std::chrono::seconds(20));
    // The program runs again afterwards, within its budget.
    auto again = (*transformer)->Transform(json::array{});
    CHECK(again.ok());
  }
}

TEST_CASE("a jq program's output counts against its memory budget", "[transform][jq][budget]") {
  TransformerContext context;
  context.limits.memory_bytes = size_t{16} << 20;
  auto transformer = LoadTransformers(Jq("range(1e9) | tostring"), context);
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(OneDocument());
  REQUIRE_FALSE(out.ok());
  CHECK(IsTransformBudgetExceeded(out.status()));
  CHECK(Contains(out.status().message(), "memory budget of 16 MiB"));
}

TEST_CASE("a JavaScript transform is held to its heap budget", "[transform][js][budget]") {
  TransformerContext context;
  context.limits.memory_bytes = size_t{32} << 20;
  auto transformer = LoadTransformers(
      Js("(function(){ return function(d){ var a = []; while (true) a.push('xxxxxxxx' + a.length); "
         "}; })"),
      context);
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(OneDocument());
  REQUIRE_FALSE(out.ok());
  CHECK(IsTransformBudgetExceeded(out.status()));
  // The heap is usable again for the next batch.
  auto fine = LoadTransformers(Js("(function(){ return function(d){ return d; }; })"), context);
  REQUIRE(fine.ok());
  CHECK((*fine)->Transform(OneDocument()).ok());
}

TEST_CASE("a document larger than the JavaScript heap budget fails the batch, the heap lives on",
          "[transform][js][budget]") {
  // The input text itself does not fit in the heap: it was pushed outside duktape's protected
  // call, where a refused allocation recursed in duktape's uncaught-error path until the stack
  // overflowed.
  TransformerContext context;
  context.limits.memory_bytes = size_t{16} << 20;
  auto transformer =
      LoadTransformers(Js("(function(){ return function(d){ return d; }; })"), context);
  REQUIRE(transformer.ok());
  json::array huge{rfs::transform::MakeDocumentMap(
      rfs::transform::DocumentOperation{"logs", "1", std::nullopt, std::nullopt},
      json::object{{"msg", std::string(size_t{24} << 20, 'x')}})};
  auto out = (*transformer)->Transform(std::move(huge));
  REQUIRE_FALSE(out.ok());
  CHECK(IsTransformBudgetExceeded(out.status()));
  CHECK(Contains(out.status().message(), "memory budget of 16 MiB"));
  auto again = (*transformer)->Transform(OneDocument());
  REQUIRE(again.ok());
  CHECK(json::serialize(*again) == json::serialize(json::value(OneDocument())));
}

TEST_CASE("a jq program frees its input once converted and still sees all of it",
          "[transform][jq]") {
  auto transformer = LoadTransformers(Jq(".document.n = (.document.msg | length)"), {});
  REQUIRE(transformer.ok());
  json::array batch;
  for (int i = 0; i < 3; ++i) {
    batch.push_back(rfs::transform::MakeDocumentMap(
        rfs::transform::DocumentOperation{"logs", std::to_string(i), std::nullopt, std::nullopt},
        json::object{{"msg", std::string(static_cast<size_t>(i + 1) * 1000, 'y')}}));
  }
  auto out = (*transformer)->Transform(std::move(batch));
  REQUIRE(out.ok());
  REQUIRE(out->as_array().size() == 3);
  for (int i = 0; i < 3; ++i) {
    const auto& doc = out->as_array()[i].as_object().at("document").as_object();
    CHECK(doc.at("n").to_number<int64_t>() == (i + 1) * 1000);
    CHECK(doc.at("msg").as_string().size() == static_cast<size_t>(i + 1) * 1000);
  }
}

TEST_CASE("an allocating JavaScript loop is interrupted at its time budget",
          "[transform][js][budget]") {
  TransformerContext context;
  context.limits.time_per_call = std::chrono::milliseconds(300);
  auto transformer = LoadTransformers(
      Js("(function(){ return function(d){ var s; while (true) { s = {a: [1, 2, 3]}; } }; })"),
      context);
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(OneDocument());
  REQUIRE_FALSE(out.ok());
  CHECK(IsTransformBudgetExceeded(out.status()));
  CHECK(Contains(out.status().message(), "time budget of 300 ms"));
}

TEST_CASE("a JavaScript loop that never allocates is interrupted at its time budget",
          "[transform][js][budget]") {
  // The second script catches the interruption and loops again: it must stop all the same.
  for (const char* body :
       {"var i = 0; while (true) { i = (i + 1) % 7; }",
        "for (;;) { try { while (true) {} } catch (e) { d.caught = String(e); } }"}) {
    INFO(body);
    TransformerContext context;
    context.limits.time_per_call = std::chrono::milliseconds(300);
    auto transformer = LoadTransformers(
        Js(std::string("(function(){ return function(d){ ") + body + " }; })"), context);
    REQUIRE(transformer.ok());
    const auto started = std::chrono::steady_clock::now();
    auto out = (*transformer)->Transform(OneDocument());
    REQUIRE_FALSE(out.ok());
    CHECK(IsTransformBudgetExceeded(out.status()));
    CHECK(Contains(out.status().message(), "time budget of 300 ms"));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
    // The same transformer runs the next batch normally once interrupted.
    auto fine = LoadTransformers(Js("(function(){ return function(d){ return d; }; })"), context);
    REQUIRE(fine.ok());
    CHECK((*fine)->Transform(OneDocument()).ok());
  }
}

TEST_CASE("a stop interrupts a JavaScript loop that never allocates after its grace period",
          "[transform][js][budget][tsan]") {
  std::atomic<bool> stop{true};
  TransformerContext context;
  context.limits.stop_requested = &stop;
  context.limits.shutdown_grace = std::chrono::milliseconds(200);
  auto transformer =
      LoadTransformers(Js("(function(){ return function(d){ while (true) {} }; })"), context);
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(OneDocument());
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == absl::StatusCode::kAborted);
  CHECK_FALSE(IsTransformBudgetExceeded(out.status()));
}

TEST_CASE("a stop interrupts a running transform after its grace period",
          "[transform][jq][budget][tsan]") {
  std::atomic<bool> stop{true};
  TransformerContext context;
  context.limits.stop_requested = &stop;
  context.limits.shutdown_grace = std::chrono::milliseconds(200);
  auto transformer = LoadTransformers(Jq("last(range(1e15))"), context);
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(OneDocument());
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == absl::StatusCode::kAborted);
  CHECK_FALSE(IsTransformBudgetExceeded(out.status()));
}

TEST_CASE("JavaScript sees no environment and returns deep documents",
          "[transform][js][security]") {
  auto transformer = LoadTransformers(
      Js("(function(){ return function(docs){ docs[0].document.kinds = [typeof process, typeof "
         "require, typeof Java]; var v = 0; for (var i = 0; i < 200; i++) v = [v]; "
         "docs[0].document.deep = v; return docs; }; })"));
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(OneDocument());
  REQUIRE(out.ok());
  CHECK(out->at(0).at("document").at("kinds") ==
        json::parse(R"(["undefined","undefined","undefined"])"));
}
