// JsonPythonTransformerProvider on CPython (the libpython of the headers rfs is built with), with
// the Java tool's contract (its jsonPythonTransformerProvider runs the same scripts on GraalPy):
// the script
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
// delivers between bytecodes, again and again until the call ends; a long call into C (one
// regular expression) ends first. The exception derives from BaseException, so a script's
// `except Exception` does not swallow it. A
// script's print() goes to stderr, never into a tool's output.
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

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

#define RFS_PY_TEXT(x) RFS_PY_TEXT2(x)
#define RFS_PY_TEXT2(x) #x
// The interpreter of the headers rfs was built with (PyConfig's layout is that version's).
constexpr const char* kLibPython =
    "libpython" RFS_PY_TEXT(PY_MAJOR_VERSION) "." RFS_PY_TEXT(PY_MINOR_VERSION) ".so.1.0";
// Its interpreter, under the prefix the build found it at (RFS_PYTHON_PREFIX, from pkg-config).
constexpr const char* kPythonExecutable =
    RFS_PYTHON_PREFIX "/bin/python" RFS_PY_TEXT(PY_MAJOR_VERSION) "." RFS_PY_TEXT(PY_MINOR_VERSION);

// The helpers every transformer calls, run once in a namespace of their own.
constexpr const char* kHelpers = R"PY(
import ast, glob, json, os, site, sys, traceback

class TransformInterrupted(BaseException):
    """Raised in a transform past its time or memory budget; `except Exception` lets it by."""

_scripts = set()

def _where(error):
    """The error on one line, at the script's own line where it has one."""
    if isinstance(error, SyntaxError):
        return "SyntaxError: %s (%s, line %s)" % (error.msg, error.filename, error.lineno)
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in _scripts]
    if frames:
        text += " (%s, line %d)" % (frames[-1].filename, frames[-1].lineno)
    return " ".join(text.split("\n"))

def load(source, filename, bindings, module_path):
    try:
        _scripts.add(filename)
        if module_path:
            # Ahead of the system's packages (the environment's own versions win, as they do
            # under GraalPy, which sees the environment alone), and process-wide, as sys.path
            # is: one interpreter serves every transformer.
            before = list(sys.path)
            for folder in sorted(glob.glob(
                    os.path.join(module_path, "lib", "python3*", "site-packages"))):
                site.addsitedir(folder)  # with its .pth files
            added = [p for p in sys.path if p not in before]
            if module_path not in before:
                added.insert(0, module_path)
            sys.path[:] = added + before
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
        text = json.dumps(out, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        text.encode("utf-8")  # a lone surrogate fails here, with its position
        return "R" + text
    except BaseException as error:
        return "E" + _where(error)
)PY";

// The C API, from the running interpreter or from libpython.
struct PythonApi {
  int (*IsInitialized)();
  void (*PreConfigInitIsolatedConfig)(PyPreConfig*);
  PyStatus (*PreInitialize)(const PyPreConfig*);
  void (*ConfigInitIsolatedConfig)(PyConfig*);
  PyStatus (*InitializeFromConfig)(const PyConfig*);
  void (*ConfigClear)(PyConfig*);
  PyStatus (*ConfigSetBytesString)(PyConfig*, wchar_t**, const char*);
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
  int (*IsFinalizing)() = nullptr;  // optional: Py_IsFinalizing (3.13) or _Py_IsFinalizing
  PyObject* helpers = nullptr;      // the helpers' namespace
  PyObject* interrupted = nullptr;  // its TransformInterrupted class (borrowed)
};

// dlerror()'s text, or "" (it may have none to give).
std::string DlError() {
  const char* error = dlerror();
  return error != nullptr ? error : "";
}

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
      library = dlopen(kLibPython, RTLD_NOW | RTLD_GLOBAL);
      if (library == nullptr) {
        return absl::FailedPreconditionError(
            StrCat("JsonPythonTransformerProvider needs CPython's ", kLibPython,
                   ", the version rfs was built with (Debian: apt-get install libpython",
                   PY_MAJOR_VERSION, ".", PY_MINOR_VERSION, "): ", DlError()));
      }
    }
    const bool resolved =
        Resolve(library, "Py_IsInitialized", api.IsInitialized) &&
        Resolve(library, "PyPreConfig_InitIsolatedConfig", api.PreConfigInitIsolatedConfig) &&
        Resolve(library, "Py_PreInitialize", api.PreInitialize) &&
        Resolve(library, "PyConfig_InitIsolatedConfig", api.ConfigInitIsolatedConfig) &&
        Resolve(library, "Py_InitializeFromConfig", api.InitializeFromConfig) &&
        Resolve(library, "PyConfig_Clear", api.ConfigClear) &&
        Resolve(library, "PyConfig_SetBytesString", api.ConfigSetBytesString) &&
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
          StrCat("the Python interpreter lacks a function rfs calls: ", DlError()));
    }
    if (!Resolve(library, "Py_IsFinalizing", api.IsFinalizing)) {
      Resolve(library, "_Py_IsFinalizing", api.IsFinalizing);
    }
    if (!hosted) {
      // Isolated: no PYTHON* variable, user site or locale change reaches the interpreter (it
      // starts while the tool's other threads run), no signal handlers (the tools keep theirs),
      // UTF-8 whatever the locale. Objects through malloc rather than Python's own arenas: the
      // process's allocator (and a leak checker) sees them.
      PyPreConfig preconfig;
      api.PreConfigInitIsolatedConfig(&preconfig);
      preconfig.allocator = PYMEM_ALLOCATOR_MALLOC;
      preconfig.utf8_mode = 1;
      auto failed = [&](const PyStatus& status) {
        return absl::FailedPreconditionError(
            StrCat("the Python interpreter did not start: ",
                   status.err_msg != nullptr ? status.err_msg : "no reason given"));
      };
      if (PyStatus status = api.PreInitialize(&preconfig); api.StatusException(status)) {
        return failed(status);
      }
      PyConfig config;
      api.ConfigInitIsolatedConfig(&config);
      config.install_signal_handlers = 0;
      // Found by its absolute name: a bare "python3" is looked up on PATH, where an activated
      // virtual environment would become the interpreter's prefix and hide the system's packages.
      if (PyStatus status =
              api.ConfigSetBytesString(&config, &config.program_name, kPythonExecutable);
          api.StatusException(status)) {
        api.ConfigClear(&config);
        return failed(status);
      }
      const PyStatus status = api.InitializeFromConfig(&config);
      api.ConfigClear(&config);
      if (api.StatusException(status)) return failed(status);
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
    std::string result;
    const PyGILState_STATE gil = py_.GILStateEnsure();
    const uint64_t number = ++calls_;
    {
      std::lock_guard lock(state_->mu);
      state_->call = number;
      state_->thread = py_.ThreadGetIdent();
    }
    std::optional<std::string> answer;
    absl::Status verdict;
    {
      // Timed from here: waiting for the GIL (another Python transform) does not count.
      BudgetedCall call(limits_,
                        [&py = py_, state = state_, number] { InterruptLater(py, state, number); });
      PyObject* out = CallHelper(py_, "call", {NewReference(transform_), Text(py_, text)});
      std::string().swap(text);
      {
        std::lock_guard lock(state_->mu);
        state_->call = 0;
      }
      // An exception raised as the call ended must not hit the next one.
      py_.SetAsyncExc(py_.ThreadGetIdent(), nullptr);
      if (out != nullptr) {
        answer = TextOf(py_, out);
        py_.DecRef(out);
      }
      verdict = call.verdict();
    }
    py_.GILStateRelease(gil);
    if (!verdict.ok()) return verdict;
    if (!answer || answer->empty())
      return absl::InternalError("the Python transform gave no answer");
    result = *std::move(answer);
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

  // What a call shares with the thread that interrupts it: the call in progress and its thread.
  struct CallState {
    std::mutex mu;
    uint64_t call = 0;  // 0: none
    unsigned long thread = 0;
  };

  // Called on the watchdog's thread, which holds its lock: the GIL is taken on a thread of its
  // own, as it may be held for as long as one call into C lasts. The exception is raised again
  // every 50 ms until call `number` ends, since a script may catch one (a bare except:).
  static void InterruptLater(PythonApi& py, std::shared_ptr<CallState> state, uint64_t number) {
    try {
      std::thread([&py, state = std::move(state), number] {
        for (;;) {
          // A hosting Python that is shutting down takes no more threads.
          if (py.IsFinalizing != nullptr && py.IsFinalizing() != 0) return;
          const PyGILState_STATE gil = py.GILStateEnsure();
          bool running = false;
          {
            std::lock_guard lock(state->mu);
            running = state->call == number;
            if (running) py.SetAsyncExc(state->thread, py.interrupted);
          }
          py.GILStateRelease(gil);
          if (!running) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }).detach();
    } catch (const std::system_error&) {
      // No thread to be had: the verdict stands, and the call ends when it ends.
    }
  }

  PythonApi& py_;
  const TransformLimits limits_;
  PyObject* transform_ = nullptr;
  uint64_t calls_ = 0;  // under the GIL
  std::shared_ptr<CallState> state_ = std::make_shared<CallState>();
};

class PythonTransformer final : public IJsonTransformer {
 public:
  PythonTransformer(std::unique_ptr<PythonFunction> fn, std::string name)
      : fn_(std::move(fn)), name_(std::move(name)) {}
  absl::StatusOr<json::value> Transform(json::value input) override {
    return fn_->Call(std::move(input));
  }
  std::string Describe() const override { return name_; }

 private:
  std::unique_ptr<PythonFunction> fn_;
  std::string name_;
};

// JMESPath on the jmespath package (Debian python3-jmespath), run as a Python transform: each
// expression's result is the next one's input, as the Java tool chains them.
constexpr const char* kJmesPathScript = R"PY(
try:
    import jmespath
except ImportError:
    raise ImportError("JMESPath needs the Python package jmespath (Debian: apt-get install "
                      "python3-jmespath)") from None

def main(context):
    expressions = [jmespath.compile(script) for script in context["scripts"]]

    def transform(value):
        for expression in expressions:
            value = expression.search(value)
        if value is None:
            raise ValueError("the JMESPath expression gave null (nothing matched)")
        return value

    return transform

main
)PY";

// The "script" of each config object (one object, or a list of them for a transformer).
absl::StatusOr<std::vector<std::string>> JmesPathScripts(const json::value& config,
                                                         bool list_allowed) {
  const std::string usage =
      list_allowed ? "expects {\"script\": \"<JMESPath expression>\"} or a list of them"
                   : "expects {\"script\": \"<JMESPath expression>\"}";
  std::vector<const json::value*> objects;
  if (config.is_object()) {
    objects.push_back(&config);
  } else if (list_allowed && config.is_array()) {  // empty: the input as it is, as in Java
    for (const json::value& item : config.as_array()) objects.push_back(&item);
  } else {
    return absl::InvalidArgumentError(usage);
  }
  std::vector<std::string> scripts;
  for (const json::value* object : objects) {
    const json::value* script = object->is_object() && object->as_object().size() == 1
                                    ? object->as_object().if_contains("script")
                                    : nullptr;
    if (script == nullptr || !script->is_string()) return absl::InvalidArgumentError(usage);
    scripts.emplace_back(script->as_string().c_str(), script->as_string().size());
  }
  return scripts;
}

absl::StatusOr<std::unique_ptr<PythonFunction>> JmesPathFunction(const json::value& config,
                                                                 bool list_allowed,
                                                                 const TransformLimits& limits) {
  RFS_ASSIGN_OR_RETURN(std::vector<std::string> scripts, JmesPathScripts(config, list_allowed));
  json::array list;
  for (std::string& script : scripts) list.emplace_back(std::move(script));
  return PythonFunction::Create(kJmesPathScript, "<JMESPath>",
                                json::serialize(json::object{{"scripts", std::move(list)}}), "",
                                limits);
}

class JmesPathPredicate final : public IJsonPredicate {
 public:
  explicit JmesPathPredicate(std::unique_ptr<PythonFunction> fn) : fn_(std::move(fn)) {}
  absl::StatusOr<bool> Test(const json::value& input) override {
    RFS_ASSIGN_OR_RETURN(json::value out, fn_->Call(input));
    if (!out.is_bool()) {
      return absl::InvalidArgumentError(StrCat("the JMESPath predicate gave ",
                                               json::serialize(out).substr(0, 100),
                                               ", not true or false"));
    }
    return out.get_bool();
  }

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
  RFS_ASSIGN_OR_RETURN(std::string bindings, BindingsFromConfig(object));
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
  return std::unique_ptr<IJsonTransformer>(
      new PythonTransformer(std::move(fn), std::string(kProvider)));
}

absl::StatusOr<std::unique_ptr<IJsonTransformer>> MakeJmesPathTransformer(
    const json::value& config, const TransformLimits& limits) {
  RFS_ASSIGN_OR_RETURN(auto fn, JmesPathFunction(config, /*list_allowed=*/true, limits));
  return std::unique_ptr<IJsonTransformer>(
      new PythonTransformer(std::move(fn), "JsonJMESPathTransformerProvider"));
}

absl::StatusOr<std::unique_ptr<IJsonPredicate>> MakeJmesPathPredicate(
    const json::value& config, const TransformLimits& limits) {
  RFS_ASSIGN_OR_RETURN(auto fn, JmesPathFunction(config, /*list_allowed=*/false, limits));
  return std::unique_ptr<IJsonPredicate>(new JmesPathPredicate(std::move(fn)));
}

}  // namespace rfs::transform::internal
