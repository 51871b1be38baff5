// Checks an answer of the console against its own OpenAPI document: the subset of OpenAPI 3.0
// schema keywords the document uses ($ref, allOf, type, nullable, enum, required, properties,
// additionalProperties, items, minimum, maximum, maxItems). Used when ConsoleServiceOptions asks
// for it, so that every answer a test sees is held to the document, not only the fuzzer's.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "rfs/core/str_cat.hpp"

#include "console/console_openapi_internal.hpp"

namespace rfs::console::internal {
namespace {

namespace json = boost::json;
using core::StrCat;

const json::value& DocumentValue() {
  static const json::value document = json::parse(ConsoleOpenApi());
  return document;
}
const json::object& Document() { return DocumentValue().as_object(); }

// The schema itself, or what its "$ref" ("#/components/...") names; null when that is missing.
const json::object* Resolve(const json::object& schema, int depth = 0) {
  const json::value* ref = schema.if_contains("$ref");
  if (ref == nullptr) return &schema;
  std::string_view path = ref->as_string();
  if (!path.starts_with("#/") || depth > 8) return nullptr;
  path.remove_prefix(2);
  const json::value* node = &DocumentValue();
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (!node->is_object()) return nullptr;
    node = node->as_object().if_contains(path.substr(0, slash));
    if (node == nullptr) return nullptr;
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return node->is_object() ? Resolve(node->as_object(), depth + 1) : nullptr;
}

bool IsInteger(const json::value& v) { return v.is_int64() || v.is_uint64(); }

double Number(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  return v.as_double();
}

void Check(const json::value& value, const json::object& raw_schema, const std::string& where,
           std::vector<std::string>& out);

// A number's minimum and maximum.
void CheckNumber(const json::value& value, const json::object& schema, const std::string& where,
                 std::vector<std::string>& out) {
  if (const json::value* min = schema.if_contains("minimum");
      min != nullptr && Number(value) < Number(*min)) {
    out.push_back(StrCat(where, ": ", json::serialize(value), " is under its minimum"));
  }
  if (const json::value* max = schema.if_contains("maximum");
      max != nullptr && Number(value) > Number(*max)) {
    out.push_back(StrCat(where, ": ", json::serialize(value), " is over its maximum"));
  }
}

// An array's maxItems and its items.
void CheckArray(const json::array& array, const json::object& schema, const std::string& where,
                std::vector<std::string>& out) {
  if (const json::value* max = schema.if_contains("maxItems");
      max != nullptr && static_cast<double>(array.size()) > Number(*max)) {
    out.push_back(StrCat(where, ": more items than its maxItems"));
  }
  if (const json::value* items = schema.if_contains("items"); items != nullptr) {
    for (size_t i = 0; i < array.size(); ++i) {
      Check(array[i], items->as_object(), StrCat(where, "[", i, "]"), out);
    }
  }
}

// An object's required members and its properties, named or additional.
void CheckObject(const json::object& object, const json::object& schema, const std::string& where,
                 std::vector<std::string>& out) {
  if (const json::value* required = schema.if_contains("required"); required != nullptr) {
    for (const auto& name : required->as_array()) {
      if (!object.contains(name.as_string())) {
        out.push_back(
            StrCat(where, ": required '", std::string_view(name.as_string()), "' is missing"));
      }
    }
  }
  const json::value* properties = schema.if_contains("properties");
  const json::value* additional = schema.if_contains("additionalProperties");
  for (const auto& [key, member] : object) {
    const json::value* property =
        properties != nullptr ? properties->as_object().if_contains(key) : nullptr;
    const std::string at = StrCat(where, ".", std::string_view(key));
    if (property != nullptr) {
      Check(member, property->as_object(), at, out);
    } else if (additional != nullptr && additional->is_bool() && !additional->as_bool()) {
      out.push_back(StrCat(at, ": not a property the document names"));
    } else if (additional != nullptr && additional->is_object()) {
      Check(member, additional->as_object(), at, out);
    }
  }
}

// Appends where `value` departs from `schema` (at `where`) to `out`.
void Check(const json::value& value, const json::object& raw_schema, const std::string& where,
           std::vector<std::string>& out) {
  if (out.size() >= 10) return;
  const json::object* schema = Resolve(raw_schema);
  if (schema == nullptr) {
    out.push_back(StrCat(where, ": the document's reference does not resolve"));
    return;
  }
  if (const json::value* all = schema->if_contains("allOf"); all != nullptr) {
    if (value.is_null() && schema->contains("nullable") && schema->at("nullable").as_bool()) {
      return;
    }
    for (const auto& part : all->as_array()) Check(value, part.as_object(), where, out);
  }
  if (value.is_null()) {
    const json::value* nullable = schema->if_contains("nullable");
    if (schema->contains("type") && (nullable == nullptr || !nullable->as_bool())) {
      out.push_back(StrCat(where, ": null where the document does not allow it"));
    }
    return;
  }
  if (const json::value* type = schema->if_contains("type"); type != nullptr) {
    const std::string_view t = type->as_string();
    const bool ok = (t == "object" && value.is_object()) || (t == "array" && value.is_array()) ||
                    (t == "string" && value.is_string()) || (t == "boolean" && value.is_bool()) ||
                    (t == "integer" && IsInteger(value)) || (t == "number" && value.is_number());
    if (!ok) {
      out.push_back(
          StrCat(where, ": expected ", t, ", got ", json::serialize(value).substr(0, 60)));
      return;
    }
  }
  if (const json::value* choices = schema->if_contains("enum"); choices != nullptr) {
    bool found = false;
    for (const auto& choice : choices->as_array()) found = found || choice == value;
    if (!found) out.push_back(StrCat(where, ": ", json::serialize(value), " is not in its enum"));
  }
  if (value.is_number()) CheckNumber(value, *schema, where, out);
  if (value.is_array()) CheckArray(value.as_array(), *schema, where, out);
  if (value.is_object()) CheckObject(value.as_object(), *schema, where, out);
}

// "/a/b" -> {"a", "b"}.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  for (size_t start = 1; start <= path.size();) {
    const size_t slash = path.find('/', start);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The document's path template for `path` (the one with the most literal segments), or null.
const json::object* PathItem(std::string_view path) {
  const std::vector<std::string_view> segments = Segments(path);
  const json::object* best = nullptr;
  int best_literals = -1;
  for (const auto& [template_path, item] : Document().at("paths").as_object()) {
    const std::vector<std::string_view> parts = Segments(template_path);
    if (parts.size() != segments.size()) continue;
    int literals = 0;
    bool match = true;
    for (size_t i = 0; i < parts.size() && match; ++i) {
      if (parts[i].starts_with('{')) {
        match = !segments[i].empty();
      } else {
        match = parts[i] == segments[i];
        ++literals;
      }
    }
    if (match && literals > best_literals) {
      best = &item.as_object();
      best_literals = literals;
    }
  }
  return best;
}

}  // namespace

std::optional<std::vector<std::string>> DocumentedMethods(std::string_view path) {
  const json::object* item = PathItem(path.substr(0, path.find('?')));
  if (item == nullptr) return std::nullopt;
  std::vector<std::string> methods;
  for (const auto& [key, value] : *item) {
    static constexpr std::string_view kMethods[] = {"get",     "put",  "post",  "delete",
                                                    "options", "head", "patch", "trace"};
    if (std::find(std::begin(kMethods), std::end(kMethods), key) == std::end(kMethods)) continue;
    std::string method(key);
    for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    methods.push_back(std::move(method));
  }
  return methods;
}

std::string CheckAnswerAgainstOpenApi(std::string_view method, std::string_view target, int status,
                                      std::string_view body) {
  const std::string_view path = target.substr(0, target.find('?'));
  const json::object* item = PathItem(path);
  if (item == nullptr) return "";  // the page, or a path the document does not serve
  std::string lower(method);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const json::value* operation = item->if_contains(lower);
  const json::object* schema = nullptr;
  json::object detail{{"$ref", "#/components/schemas/Detail"}};
  if (operation == nullptr) {
    schema = &detail;  // 405: an error answer
  } else {
    const json::object& responses = operation->at("responses").as_object();
    const json::value* response = responses.if_contains(std::to_string(status));
    if (response == nullptr) response = responses.if_contains("default");
    if (response == nullptr) {
      return StrCat(method, " ", path, ": status ", status, " is not in the document");
    }
    const json::object* resolved = Resolve(response->as_object());
    if (resolved == nullptr) return StrCat(method, " ", path, ": a reference does not resolve");
    const json::value* content = resolved->if_contains("content");
    if (content == nullptr) return "";
    const json::value* media = content->as_object().if_contains("application/json");
    if (media == nullptr) return "";
    schema = &media->at("schema").as_object();
  }
  boost::system::error_code ec;
  const json::value value = json::parse(body, ec);
  if (ec) return StrCat(method, " ", path, " ", status, ": the body is not JSON");
  std::vector<std::string> departures;
  Check(value, *schema, "$", departures);
  if (departures.empty()) return "";
  std::string message = StrCat(method, " ", path, " ", status, ":");
  for (const auto& d : departures) message += StrCat(" ", d, ";");
  message.pop_back();
  return message;
}

}  // namespace rfs::console::internal
