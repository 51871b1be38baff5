// JsonPythonTransformerProvider: the Java tool's Python scripts (main(context) returning the
// transform function) on CPython, their errors, their budgets and their module path.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/transform/json_transformer.hpp"

#include "absl/strings/string_view.h"
#include "support/temp_dir.hpp"

namespace rfs::transform::python_test {

namespace json = boost::json;

json::array Documents() {
  return json::array{
      MakeDocumentMap(DocumentOperation{"logs", "1", std::nullopt, std::nullopt},
                      json::parse(R"({"URI":"/a/b","n":12345678901234567890,"text":"añb"})")),
      MakeDocumentMap(DocumentOperation{"logs", "2", std::string("r1"), std::nullopt},
                      json::parse(R"({"skip":true})"))};
}

std::string Python(const std::string& script, const std::string& bindings = "{}",
                   const std::string& module_path = "") {
  json::object config{{"initializationScript", script}, {"bindingsObject", bindings}};
  if (!module_path.empty()) config["pythonModulePath"] = module_path;
  return json::serialize(json::array{json::object{{"JsonPythonTransformerProvider", config}}});
}

bool Contains(absl::string_view text, absl::string_view part) {
  return text.find(part) != absl::string_view::npos;
}

TEST_CASE("Python transforms run the Java tool's scripts: main(context) returns the transform",
          "[transform][python]") {
  // The Java tool's README example, over a list of documents, dropping some.
  const std::string script = R"PY(
def main(context):
    prefix = context.get("prefix", "")

    def transform(documents):
        out = []
        for document in documents:
            source = document["document"]
            if source.get("skip"):
                continue
            source["URI"] = "/" + prefix + source["URI"][1:]
            document["operation"]["_index"] = prefix + document["operation"]["_index"]
            out.append(document)
        return out

    return transform

main  # GraalPy returns the last evaluated expression
)PY";
  auto transformer = LoadTransformers(Python(script, R"({"prefix":"new-"})"));
  REQUIRE(transformer.ok());
  CHECK((*transformer)->Describe() == "JsonPythonTransformerProvider");
  auto out = (*transformer)->Transform(Documents());
  REQUIRE(out.ok());
  REQUIRE(out->as_array().size() == 1);
  const json::value& doc = out->at(0);
  CHECK(doc.at("operation").at("_index") == "new-logs");
  CHECK(doc.at("operation").at("_id") == "1");
  // Integers beyond 2^53 and text beyond ASCII come back as they went.
  CHECK(doc.at("document") ==
        json::parse(R"({"URI":"/new-a/b","n":12345678901234567890,"text":"añb"})"));

  // Without a last expression, the function named main; and one metadata item in, one out.
  auto named = LoadTransformers(Python(
      "import json\ndef main(context):\n    return lambda item: {**item, 'seen': context['v']}\n",
      R"({"v":[1,2]})"));
  REQUIRE(named.ok());
  auto item = (*named)->Transform(json::parse(R"({"name":"t1"})"));
  REQUIRE(item.ok());
  CHECK(*item == json::parse(R"({"name":"t1","seen":[1,2]})"));
}

TEST_CASE("a Python script's errors name the exception and the line", "[transform][python]") {
  auto raising = LoadTransformers(Python(
      "def main(c):\n    def t(docs):\n        raise ValueError('no way')\n    return t\nmain\n"));
  REQUIRE(raising.ok());
  auto error = (*raising)->Transform(Documents());
  REQUIRE_FALSE(error.ok());
  INFO(error.status().message());
  CHECK(Contains(error.status().message(), "ValueError: no way"));
  CHECK(Contains(error.status().message(), "line 3"));
  // The function lives on: the next batch runs.
  CHECK_FALSE((*raising)->Transform(Documents()).ok());

  auto none = LoadTransformers(Python("main = lambda c: (lambda d: None)\nmain\n"));
  REQUIRE(none.ok());
  CHECK(Contains(none->get()->Transform(Documents()).status().message(), "returned None"));
  auto nan = LoadTransformers(Python("main = lambda c: (lambda d: float('nan'))\nmain\n"));
  REQUIRE(nan.ok());
  CHECK(Contains(nan->get()->Transform(Documents()).status().message(), "ValueError"));

  struct Broken {
    std::string config;
    std::string says;
  };
  const Broken broken[] = {
      {Python("def main(:\n"), "SyntaxError"},
      {Python("x = 1\n"), "must evaluate to main(context)"},
      {Python("main = lambda c: 5\nmain\n"), "must return the transform function"},
      {Python("def main(c):\n    raise KeyError('k')\nmain\n"), "KeyError"},
      {Python("main = lambda c: (lambda d: d)\nmain\n", "[1]"), "must be a JSON object"},
      {R"([{"JsonPythonTransformerProvider":{"initializationResourcePath":"a.py"}}])",
       "inside the Java tool's jar"},
      {R"([{"JsonPythonTransformerProvider":{"initializationScriptFile":"s3://b/a.py"}}])",
       "not fetched"},
      {R"([{"JsonPythonTransformerProvider":{"initializationScript":"main","pythonModulePath":"s3://b/v.tar.gz"}}])",
       "archives and s3:// are not fetched"},
      {R"([{"JsonPythonTransformerProvider":{"initializationScript":"main","other":1}}])",
       "unsupported key \"other\""},
  };
  for (const Broken& b : broken) {
    INFO(b.config);
    auto loaded = LoadTransformers(b.config);
    REQUIRE_FALSE(loaded.ok());
    INFO(loaded.status().message());
    CHECK(Contains(loaded.status().message(), "JsonPythonTransformerProvider"));
    CHECK(Contains(loaded.status().message(), b.says));
  }
}

TEST_CASE("a Python transform is held to its time and memory budgets",
          "[transform][python][budget]") {
  auto script = [](const std::string& body) {
    return Python("def main(c):\n    def t(d):\n" + body + "\n    return t\nmain\n");
  };
  struct Case {
    std::string body;
    std::chrono::milliseconds time;
    size_t memory;
    std::string says;
  };
  // The interruption is no Exception: a script that catches every Exception is stopped too.
  // Each case has room only under the one bound it tests (AddressSanitizer's quarantine grows
  // the process while Python allocates and frees).
  const Case cases[] = {
      {"        while True: pass", std::chrono::milliseconds(300), size_t{1} << 30, "time budget"},
      {"        while True:\n            try:\n                sum(range(1000))\n"
       "            except Exception:\n                pass",
       std::chrono::milliseconds(300), size_t{1} << 30, "time budget"},
      {"        a = []\n        while True: a.append('x' * 1000)", std::chrono::seconds(120),
       size_t{64} << 20, "memory budget of 64 MiB"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    TransformerContext context;
    context.limits.time_per_call = c.time;
    context.limits.memory_bytes = c.memory;
    auto transformer = LoadTransformers(script(c.body), context);
    REQUIRE(transformer.ok());
    const auto started = std::chrono::steady_clock::now();
    auto out = (*transformer)->Transform(Documents());
    REQUIRE_FALSE(out.ok());
    INFO(out.status().message());
    CHECK(IsTransformBudgetExceeded(out.status()));
    CHECK(Contains(out.status().message(), c.says));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
  }
  TransformerContext context;
  context.limits.memory_bytes = size_t{64} << 20;
  // An input larger than the memory bound is refused before Python sees it, and the function
  // runs on.
  auto identity = LoadTransformers(Python("main = lambda c: (lambda d: d)\nmain\n"), context);
  REQUIRE(identity.ok());
  json::array huge{MakeDocumentMap(DocumentOperation{"logs", "1", std::nullopt, std::nullopt},
                                   json::object{{"msg", std::string(size_t{80} << 20, 'x')}})};
  auto refused = (*identity)->Transform(std::move(huge));
  REQUIRE_FALSE(refused.ok());
  CHECK(IsTransformBudgetExceeded(refused.status()));
  auto again = (*identity)->Transform(Documents());
  REQUIRE(again.ok());
  CHECK(*again == json::value(Documents()));
}

TEST_CASE("a Python transform imports from its pythonModulePath, a virtual environment",
          "[transform][python]") {
  rfs::test::TempDir dir("rfs-python-venv");
  const std::filesystem::path site = dir.path() / "lib" / "python3.11" / "site-packages";
  std::filesystem::create_directories(site);
  std::ofstream(site / "rfs_test_helper_mod.py") << "def tag(d):\n    d['tagged'] = True\n"
                                                    "    return d\n";
  // The environment's own copy of a module wins over the system's (here the standard library's).
  std::ofstream(site / "colorsys.py") << "RFS_VENV_COPY = True\n";
  auto transformer = LoadTransformers(
      Python("import colorsys\nassert colorsys.RFS_VENV_COPY\n"
             "import rfs_test_helper_mod as m\nmain = lambda c: (lambda item: m.tag(item))\nmain\n",
             "{}", dir.str()));
  REQUIRE(transformer.ok());
  auto out = (*transformer)->Transform(json::parse(R"({"name":"x"})"));
  REQUIRE(out.ok());
  CHECK(*out == json::parse(R"({"name":"x","tagged":true})"));
  // A module found nowhere: the error names it.
  auto missing = LoadTransformers(Python("import rfs_no_such_module_here\nmain\n"));
  REQUIRE_FALSE(missing.ok());
  CHECK(Contains(missing.status().message(), "ModuleNotFoundError"));
}

TEST_CASE("JMESPath transforms and predicates, as the Java tool's JsonJMESPath providers",
          "[transform][python][jmespath]") {
  // A list of expressions is one chain: each result is the next one's input.
  auto chain = LoadTransformers(
      R"([{"JsonJMESPathTransformerProvider": [{"script": "body"},
                                                {"script": "{name: name, tags: length(tags)}"}]}])");
  REQUIRE(chain.ok());
  CHECK((*chain)->Describe() == "JsonJMESPathTransformerProvider");
  auto item = (*chain)->Transform(
      json::parse(R"({"type":"index","body":{"name":"i1","tags":["a","b"],"x":1}})"));
  REQUIRE(item.ok());
  CHECK(*item == json::parse(R"({"name":"i1","tags":2})"));
  // Nothing matched: null is no output, and the error says so.
  auto nothing = (*chain)->Transform(json::parse(R"({"other":1})"));
  REQUIRE_FALSE(nothing.ok());
  CHECK(Contains(nothing.status().message(), "gave null"));

  // A predicate picks documents for a conditional transform (a Python one: jq and JavaScript
  // refuse these documents' 20-digit integer).
  const json::value mark = json::parse(
      Python("def main(c):\n    def t(v):\n        for d in (v if isinstance(v, list) else [v]):\n"
             "            d['document']['hit'] = True\n        return v\n    return t\nmain\n"));
  const json::array conditional_config{
      json::object{{"JsonConditionalTransformerProvider",
                    json::array{json::object{{"JsonJMESPathPredicateProvider",
                                              json::object{{"script",
                                                            "operation._index == 'logs' && "
                                                            "!(document.skip)"}}}},
                                mark}}}};
  auto conditional = LoadTransformers(json::serialize(conditional_config));
  REQUIRE(conditional.ok());
  auto out = (*conditional)->Transform(Documents());
  INFO(out.status().message());
  REQUIRE(out.ok());
  REQUIRE(out->as_array().size() == 2);
  CHECK(out->at(0).at("document").as_object().contains("hit"));
  CHECK_FALSE(out->at(1).at("document").as_object().contains("hit"));
  // A predicate that gives no boolean fails, naming what it gave.
  auto not_boolean = LoadTransformers(R"([{"JsonConditionalTransformerProvider": [
      {"JsonJMESPathPredicateProvider": {"script": "operation._index"}}, []]}])");
  REQUIRE(not_boolean.ok());
  auto refused = (*not_boolean)->Transform(Documents());
  REQUIRE_FALSE(refused.ok());
  CHECK(Contains(refused.status().message(), "not true or false"));

  for (const char* broken :
       {R"([{"JsonJMESPathTransformerProvider": {"script": "a[?"}}])",
        R"([{"JsonJMESPathTransformerProvider": {"script": "a", "other": 1}}])",
        R"([{"JsonJMESPathTransformerProvider": "a"}])"}) {
    INFO(broken);
    auto loaded = LoadTransformers(broken);
    REQUIRE_FALSE(loaded.ok());
    CHECK(Contains(loaded.status().message(), "JsonJMESPathTransformerProvider"));
  }
}

}  // namespace rfs::transform::python_test
