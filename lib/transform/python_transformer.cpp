// JsonPythonTransformerProvider on CPython (Debian libpython3.11), with the Java tool's contract
// (its jsonPythonTransformerProvider runs the same scripts on GraalPy): the script
// (`initializationScript`, or `initializationScriptFile`) evaluates to `main` (its last
// expression, or else the function it defines under that name); `main` is called once with the
// bindings (`bindingsObject`, a JSON object or a string holding one; default {}) and returns the
// transform function, which is then called with each input -- a list of documents, or one
// metadata item, as Python dicts and lists -- and returns the output. `pythonModulePath` names a
// virtual environment (or a folder) whose packages the script may import.
//
// The interpreter is loaded when the first Python transformer is made, not linked: the tools
// and the library start without it, and inside a Python process (the rfs package) the running
// interpreter is used instead of a second one. Only functions of CPython's stable ABI are called
// once the interpreter runs, so any CPython 3 that hosts the package will do.
//
// Each call crosses as JSON text (json.loads, json.dumps with allow_nan=False), so what comes
// back is exactly what JSON can hold. Calls hold the GIL: Python transforms run one at a time.
// A call past its time, or one that grows the process by more than its memory bound, is stopped
// by an exception raised in its thread (PyThreadState_SetAsyncExc), which the interpreter
// delivers between bytecodes; a long call into C (one regular expression) ends first. The
// exception derives from BaseException, so a script's `except Exception` does not swallow it. A
// script's print() goes to stderr, never into a tool's output.
#include <mutex>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "json_transformers_internal.hpp"
#include "transform_budget_internal.hpp"
#include <dlfcn.h>

// Types and constants only: every function is looked up at run time.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace rfs::transform::internal {

namespace json = boost::json;
using core::StrCat;

namespace {

// The helpers every transformer calls, run once in a namespace of their own.
constexpr const char* kHelpers = R"PY(
import ast, glob, json, os, sys, traceback

class TransformInterrupted(BaseException):
    """Raised in a transform past its time or memory budget; `except Exception` lets it by."""

def _where(error):
    frames = traceback.extract_tb(error.__traceback__)
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    if frames:
        text += " (%s, line %d)" % (frames[-1].filename, frames[-1].lineno)
    return text

def load(source, filename, bindings, module_path):
    try:
        if module_path:
            for folder in [module_path] + sorted(glob.glob(
                    os.path.join(module_path, "lib", "python3*", "site-packages"))):
                if folder not in sys.path:
                    sys.path.insert(0, folder)
        tree = ast.parse(source, filename)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        scope = {"__name__": "__rfs_transform__", "__file__": filename}
        exec(compile(tree, filename, "exec"), scope)
        main = eval(compile(last, filename, "eval"), scope) if last is not None else scope.get("main")
        if not callable(main):
            return ("the script must evaluate to main(context), which returns the transform "
                    "function (end it with the line: main)")
        context = json.loads(bindings)
        if not isinstance(context, dict):
            return "bindingsObject must be a JSON object"
        transform = main(context)
        if not callable(transform):
            return "main(context) must return the transform function"
        return transform
    except BaseException as error:
        return _where(error)

def call(transform, text):
    try:
        out = transform(json.loads(text))
        if out is None:
            return "Ethe transform function returned None"
        return "R" + json.dumps(out, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except BaseException as error:
        return "E" + _where(error)
)PY";

// The C API, from the running interpreter or from libpython.
struct PythonApi {
  int (*IsInitialized)();
  void (*InitializeEx)(int);
  void (*PreConfigInitPythonConfig)(PyPreConfig*);
  PyStatus (*PreInitialize)(const PyPreConfig*);
  int (*StatusException)(PyStatus);
  PyThreadState* (*EvalSaveThread)();
  PyGILState_STATE (*GILStateEnsure)();
  void (*GILStateRelease)(PyGILState_STATE);
  PyObject* (*RunStringFlags)(const char*, int, PyObject*, PyObject*, PyCompilerFlags*);
  PyObject* (*DictNew)();
  PyObject* (*DictGetItemString)(PyObject*, const char*);
  int (*DictSetItemString)(PyObject*, const char*, PyObject*);
  PyObject* (*ImportAddModule)(const char*);
  PyObject* (*ModuleGetDict)(PyObject*);
  PyObject* (*TupleNew)(Py_ssize_t);
  int (*TupleSetItem)(PyObject*, Py_ssize_t, PyObject*);
  PyObject* (*CallObject)(PyObject*, PyObject*);
  PyObject* (*UnicodeFromStringAndSize)(const char*, Py_ssize_t);
  const char* (*UnicodeAsUTF8AndSize)(PyObject*, Py_ssize_t*);
  unsigned long (*ThreadGetIdent)();
  int (*SetAsyncExc)(unsigned long, PyObject*);
  void (*ErrClear)();
  void (*IncRef)(PyObject*);
  void (*DecRef)(PyObject*);
  PyObject* helpers = nullptr;      // the helpers' namespace
  PyObject* interrupted = nullptr;  // its TransformInterrupted class (borrowed)
};

template <typename F>
bool Resolve(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));
  return out != nullptr;
}

// A new reference to a str, or nullptr (with the error cleared).
PyObject* Text(const PythonApi& py, std::string_view text) {
  PyObject* out = py.UnicodeFromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
  if (out == nullptr) py.ErrClear();
  return out;
}

// The text of a str, or nullopt for anything else (the error cleared).
std::optional<std::string> TextOf(const PythonApi& py, PyObject* object) {
  Py_ssize_t size = 0;
  const char* data = py.UnicodeAsUTF8AndSize(object, &size);
  if (data == nullptr) {
    py.ErrClear();
    return std::nullopt;
  }
  return std::string(data, static_cast<size_t>(size));
}

// Calls helper `name` with `args` (new references, taken over). A new reference, or nullptr.
PyObject* CallHelper(const PythonApi& py, const char* name, std::initializer_list<PyObject*> args) {
  PyObject* tuple = py.TupleNew(static_cast<Py_ssize_t>(args.size()));
  Py_ssize_t i = 0;
  bool complete = tuple != nullptr;
  for (PyObject* arg : args) {
    if (arg == nullptr || tuple == nullptr) {
      complete = false;
      if (arg != nullptr) py.DecRef(arg);
      continue;
    }
    py.TupleSetItem(tuple, i++, arg);  // steals
  }
  PyObject* out = nullptr;
  if (complete) out = py.CallObject(py.DictGetItemString(py.helpers, name), tuple);
  if (tuple != nullptr) py.DecRef(tuple);
  if (out == nullptr) py.ErrClear();
  return out;
}

absl::StatusOr<PythonApi*> LoadPython() {
  static PythonApi api;
  static absl::Status loaded = [] {
    // Inside a Python process its interpreter is in the global namespace already.
    void* library = RTLD_DEFAULT;
    auto* running = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
    const bool hosted = running != nullptr && running() != 0;
    if (!hosted) {
      library = dlopen("libpython3.11.so.1.0", RTLD_NOW | RTLD_GLOBAL);
      if (library == nullptr) {
        return absl::FailedPreconditionError(StrCat(
            "JsonPythonTransformerProvider needs CPython 3.11's libpython3.11.so.1.0 (Debian: "
            "apt-get install libpython3.11): ",
            dlerror()));
      }
    }
    const bool resolved =
        Resolve(library, "Py_IsInitialized", api.IsInitialized) &&
        Resolve(library, "Py_InitializeEx", api.InitializeEx) &&
        Resolve(library, "PyPreConfig_InitPythonConfig", api.PreConfigInitPythonConfig) &&
        Resolve(library, "Py_PreInitialize", api.PreInitialize) &&
        Resolve(library, "PyStatus_Exception", api.StatusException) &&
        Resolve(library, "PyEval_SaveThread", api.EvalSaveThread) &&
        Resolve(library, "PyGILState_Ensure", api.GILStateEnsure) &&
        Resolve(library, "PyGILState_Release", api.GILStateRelease) &&
        Resolve(library, "PyRun_StringFlags", api.RunStringFlags) &&
        Resolve(library, "PyDict_New", api.DictNew) &&
        Resolve(library, "PyDict_GetItemString", api.DictGetItemString) &&
        Resolve(library, "PyDict_SetItemString", api.DictSetItemString) &&
        Resolve(library, "PyImport_AddModule", api.ImportAddModule) &&
        Resolve(library, "PyModule_GetDict", api.ModuleGetDict) &&
        Resolve(library, "PyTuple_New", api.TupleNew) &&
        Resolve(library, "PyTuple_SetItem", api.TupleSetItem) &&
        Resolve(library, "PyObject_CallObject", api.CallObject) &&
        Resolve(library, "PyUnicode_FromStringAndSize", api.UnicodeFromStringAndSize) &&
        Resolve(library, "PyUnicode_AsUTF8AndSize", api.UnicodeAsUTF8AndSize) &&
        Resolve(library, "PyThread_get_thread_ident", api.ThreadGetIdent) &&
        Resolve(library, "PyThreadState_SetAsyncExc", api.SetAsyncExc) &&
        Resolve(library, "PyErr_Clear", api.ErrClear) &&
        Resolve(library, "Py_IncRef", api.IncRef) && Resolve(library, "Py_DecRef", api.DecRef);
    if (!resolved) {
      return absl::FailedPreconditionError(
          StrCat("the Python interpreter lacks a function rfs calls: ", dlerror()));
    }
    if (!hosted) {
      // Objects through malloc rather than Python's own arenas: the process's allocator (and a
      // leak checker) sees them. No signal handlers: the tools keep theirs.
      PyPreConfig preconfig;
      api.PreConfigInitPythonConfig(&preconfig);
      preconfig.allocator = PYMEM_ALLOCATOR_MALLOC;
      if (api.StatusException(api.PreInitialize(&preconfig))) {
        return absl::InternalError("the Python interpreter did not start (pre-initialization)");
      }
      api.InitializeEx(0);
    }
    const PyGILState_STATE gil = api.GILStateEnsure();
    absl::Status status;
    api.helpers = api.DictNew();
    PyObject* builtins = api.ModuleGetDict(api.ImportAddModule("builtins"));
    api.DictSetItemString(api.helpers, "__builtins__", builtins);
    PyObject* ran = api.RunStringFlags(kHelpers, Py_file_input, api.helpers, api.helpers, nullptr);
    if (ran == nullptr) {
      api.ErrClear();
      status = absl::InternalError("the Python helpers did not load");
    } else {
      api.DecRef(ran);
      api.interrupted = api.DictGetItemString(api.helpers, "TransformInterrupted");
      if (api.interrupted == nullptr)
        status = absl::InternalError("the Python helpers are incomplete");
    }
    if (!hosted) {
      // A script's print() must not land in a tool's output (SnapshotInspector docs writes the
      // documents on stdout).
      PyObject* redirected = api.RunStringFlags("import sys\nsys.stdout = sys.stderr\n",
                                                Py_file_input, api.helpers, api.helpers, nullptr);
      if (redirected == nullptr) {
        api.ErrClear();
      } else {
        api.DecRef(redirected);
      }
    }
    api.GILStateRelease(gil);
    // The thread that started the interpreter holds the GIL until it lets it go.
    if (!hosted) api.EvalSaveThread();
    return status;
  }();
  if (!loaded.ok()) return loaded;
  return &api;
}

class PythonFunction {
 public:
  static absl::StatusOr<std::unique_ptr<PythonFunction>> Create(const std::string& script,
                                                                const std::string& filename,
                                                                const std::string& bindings_json,
                                                                const std::string& module_path,
                                                                const TransformLimits& limits) {
    RFS_ASSIGN_OR_RETURN(PythonApi * py, LoadPython());
    std::unique_ptr<PythonFunction> fn(new PythonFunction(*py, limits));
    const PyGILState_STATE gil = py->GILStateEnsure();
    PyObject* loaded = CallHelper(
        *py, "load",
        {Text(*py, script), Text(*py, filename), Text(*py, bindings_json), Text(*py, module_path)});
    absl::Status status;
    if (loaded == nullptr) {
      status = absl::InternalError("the script could not be handed to Python");
    } else if (std::optional<std::string> error = TextOf(*py, loaded)) {
      py->DecRef(loaded);
      status = absl::InvalidArgumentError(*error);
    } else {
      fn->transform_ = loaded;
    }
    py->GILStateRelease(gil);
    if (!status.ok()) return status;
    return fn;
  }

  ~PythonFunction() {
    const PyGILState_STATE gil = py_.GILStateEnsure();
    py_.DecRef(transform_);
    py_.GILStateRelease(gil);
  }

  absl::StatusOr<json::value> Call(json::value input) {
    std::string text = SerializeJson(input);
    input = nullptr;
    if (text.size() > limits_.memory_bytes) {
      // Python holds the text, the objects and the result at once: far more than this.
      return BudgetExceeded(limits_, "memory");
    }
    {
      // The last call's watchdog is gone (its BudgetedCall destroyed): nothing sets this now.
      std::lock_guard lock(running_mu_);
      interrupted_ = false;
    }
    std::string result;
    {
      // Constructed before the GIL is taken and destroyed after it is let go: the watchdog
      // takes the GIL (to raise the exception) while it holds its own lock.
      BudgetedCall call(limits_, [this] { Interrupt(); });
      const PyGILState_STATE gil = py_.GILStateEnsure();
      bool start = false;
      {
        std::lock_guard lock(running_mu_);
        start = !interrupted_;
        if (start) running_thread_ = py_.ThreadGetIdent();
      }
      PyObject* out =
          start ? CallHelper(py_, "call", {NewReference(transform_), Text(py_, text)}) : nullptr;
      std::string().swap(text);
      {
        std::lock_guard lock(running_mu_);
        running_thread_ = 0;
      }
      // An exception the watchdog raised as the call ended must not hit the next one.
      py_.SetAsyncExc(py_.ThreadGetIdent(), nullptr);
      std::optional<std::string> answer;
      if (out != nullptr) {
        answer = TextOf(py_, out);
        py_.DecRef(out);
      }
      py_.GILStateRelease(gil);
      // After the GIL is let go: the watchdog may hold the call's lock while it waits for it.
      if (absl::Status verdict = call.verdict(); !verdict.ok()) return verdict;
      if (!answer || answer->empty()) {
        return absl::InternalError("the Python transform gave no answer");
      }
      result = *std::move(answer);
    }
    if (result.front() == 'E') {
      return absl::InvalidArgumentError(
          StrCat("Python error: ", std::string_view(result).substr(1)));
    }
    boost::system::error_code ec;
    json::parse_options options;
    options.max_depth = 1000;
    json::value value = json::parse(std::string_view(result).substr(1), ec, {}, options);
    if (ec) {
      return absl::InvalidArgumentError(
          StrCat("the transform function returned something JSON cannot hold: ", ec.message()));
    }
    return value;
  }

 private:
  PythonFunction(PythonApi& py, const TransformLimits& limits) : py_(py), limits_(limits) {}

  // The tuple of arguments steals a reference; the function keeps its own.
  PyObject* NewReference(PyObject* object) {
    py_.IncRef(object);
    return object;
  }

  // On the watchdog's thread, at most once per call. Before the call has started, it is not
  // started at all.
  void Interrupt() {
    const PyGILState_STATE gil = py_.GILStateEnsure();
    {
      std::lock_guard lock(running_mu_);
      interrupted_ = true;
      if (running_thread_ != 0) py_.SetAsyncExc(running_thread_, py_.interrupted);
    }
    py_.GILStateRelease(gil);
  }

  PythonApi& py_;
  const TransformLimits limits_;
  PyObject* transform_ = nullptr;
  std::mutex running_mu_;  // the GIL guards these too; the lock states it
  unsigned long running_thread_ = 0;
  bool interrupted_ = false;
};

class PythonTransformer final : public IJsonTransformer {
 public:
  explicit PythonTransformer(std::unique_ptr<PythonFunction> fn) : fn_(std::move(fn)) {}
  absl::StatusOr<json::value> Transform(json::value input) override {
    return fn_->Call(std::move(input));
  }
  std::string Describe() const override { return "JsonPythonTransformerProvider"; }

 private:
  std::unique_ptr<PythonFunction> fn_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakePythonTransformer(
    const json::value& config, const TransformLimits& limits) {
  constexpr std::string_view kProvider = "JsonPythonTransformerProvider";
  if (!config.is_object()) {
    return absl::InvalidArgumentError(
        "expects an object with \"initializationScript\" or \"initializationScriptFile\"");
  }
  const json::object& object = config.as_object();
  for (const auto& [key, value] : object) {
    if (key == "initializationResourcePath") {
      return absl::InvalidArgumentError(
          "initializationResourcePath names a resource inside the Java tool's jar; give the "
          "script as initializationScriptFile or initializationScript");
    }
    if (key != "initializationScript" && key != "initializationScriptFile" &&
        key != "bindingsObject" && key != "pythonModulePath") {
      return absl::InvalidArgumentError(
          StrCat("unsupported key \"", std::string_view(key),
                 "\" (supported: initializationScript, initializationScriptFile, bindingsObject, "
                 "pythonModulePath)"));
    }
  }
  RFS_ASSIGN_OR_RETURN(auto file, OptionalString(object, kProvider, "initializationScriptFile"));
  if (file && file->starts_with("s3://")) {
    return absl::InvalidArgumentError(
        "initializationScriptFile: an s3:// script is not fetched; copy it to a local file");
  }
  RFS_ASSIGN_OR_RETURN(
      std::string script,
      ScriptFromConfig(config, kProvider, "initializationScript", "initializationScriptFile"));
  std::string bindings = "{}";
  if (const json::value* b = object.if_contains("bindingsObject"); b && !b->is_null()) {
    if (b->is_string()) {
      bindings = std::string(b->as_string());
    } else if (b->is_object()) {
      bindings = json::serialize(*b);
    } else {
      return absl::InvalidArgumentError(
          "bindingsObject must be a JSON object (or a string of one)");
    }
  }
  RFS_ASSIGN_OR_RETURN(auto module_path, OptionalString(object, kProvider, "pythonModulePath"));
  if (module_path && (module_path->starts_with("s3://") || module_path->ends_with(".tar.gz") ||
                      module_path->ends_with(".tgz"))) {
    return absl::InvalidArgumentError(
        "pythonModulePath: give a folder (a virtual environment, unpacked); archives and s3:// "
        "are not fetched");
  }
  RFS_ASSIGN_OR_RETURN(
      auto fn, PythonFunction::Create(script, file ? *file : "<initializationScript>", bindings,
                                      module_path.value_or(""), limits));
  return std::unique_ptr<IJsonTransformer>(new PythonTransformer(std::move(fn)));
}

}  // namespace rfs::transform::internal
