// MetadataMigrator's user transforms and what it does with an item: exists, would create, create
// (see metadata_migration_internal.hpp).
#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "rfs/core/base64.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/file_util.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/snapshot/blob_envelope.hpp"

#include "migration/metadata_migration_internal.hpp"

namespace rfs::migration::internal {

using core::StrCat;
using opensearch::EncodePathSegment;
using opensearch::TemplateKind;

namespace {

TemplateKind TemplateKindOf(MetadataItemKind kind) {
  switch (kind) {
    case MetadataItemKind::kComponentTemplate:
      return TemplateKind::kComponent;
    case MetadataItemKind::kIndexTemplate:
      return TemplateKind::kIndex;
    default:
      return TemplateKind::kLegacy;
  }
}

// The types translated from Elasticsearch's (docs/es-mapping-compatibility.md) that live in
// OpenSearch plugins: a target without the plugin answers "No handler for type [knn_vector]".
std::string MissingPluginAdvice(std::string_view error) {
  for (const auto& [type, plugin] :
       std::initializer_list<std::pair<std::string_view, std::string_view>>{
           {"knn_vector", "the k-NN plugin (opensearch-knn)"},
           {"xy_shape", "the geospatial plugin (opensearch-geospatial)"},
           {"xy_point", "the geospatial plugin (opensearch-geospatial)"}}) {
    if (error.find(StrCat("No handler for type [", type, "]")) != std::string_view::npos) {
      return StrCat(" -- the target has no `", type, "` type: install ", plugin,
                    " on the target, or remap the field with --transformer-config "
                    "(docs/es-mapping-compatibility.md)");
    }
  }
  return "";
}

// The settings object of a body: {settings} for indices and legacy templates,
// {template: {settings}} for component and index templates.
json::object* SettingsOf(json::object& body, MetadataItemKind kind) {
  json::object* holder = &body;
  if (kind == MetadataItemKind::kComponentTemplate || kind == MetadataItemKind::kIndexTemplate) {
    json::value* tmpl = body.if_contains("template");
    if (tmpl == nullptr || !tmpl->is_object()) return nullptr;
    holder = &tmpl->as_object();
  }
  json::value* settings = holder->if_contains("settings");
  if (settings == nullptr || !settings->is_object()) return nullptr;
  return &settings->as_object();
}

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, json::object>>> MigrationRun::UserTransform(
    MetadataItemKind kind, json::object input) {
  auto out = user_transformer_->Transform(json::value(std::move(input)));
  if (!out.ok()) {
    return absl::InvalidArgumentError(StrCat("user transform: ", out.status().message()));
  }
  std::vector<const json::value*> items;
  if (out->is_array()) {
    for (const json::value& v : out->as_array()) items.push_back(&v);
  } else if (!out->is_null()) {
    items.push_back(&*out);
  }
  std::vector<std::pair<std::string, json::object>> variants;
  for (const json::value* v : items) {
    const json::object* o = v->if_object();
    const json::value* name = o ? o->if_contains("name") : nullptr;
    const json::value* body = o ? o->if_contains("body") : nullptr;
    const json::value* type = o ? o->if_contains("type") : nullptr;
    if (name == nullptr || !name->is_string() || name->as_string().empty() || body == nullptr ||
        !body->is_object()) {
      return absl::InvalidArgumentError(
          StrCat("user transform: an output is not {\"type\", \"name\", \"body\"}: ",
                 core::JsonText(*v).substr(0, 200)));
    }
    if (type != nullptr && !(type->is_string() && type->as_string() == JavaItemType(kind))) {
      return absl::InvalidArgumentError(StrCat("user transform: a ", JavaItemType(kind), " became ",
                                               core::JsonText(*type), ", which is not supported"));
    }
    variants.emplace_back(Str(name->as_string()), body->as_object());
  }
  return variants;
}

std::vector<std::string> MigrationRun::MissingComponents(const json::object& body,
                                                         std::string& error, bool& transient) {
  std::vector<std::string> missing;
  const json::value* composed = body.if_contains("composed_of");
  if (composed == nullptr || !composed->is_array()) return missing;
  for (const auto& c : composed->as_array()) {
    if (!c.is_string()) continue;
    const std::string name = Str(c.as_string());
    if (components_on_target_.count(name)) continue;
    auto exists = Exists(MetadataItemKind::kComponentTemplate, name);
    if (!exists.ok()) {
      error = std::string(exists.status().message());
      transient = core::IsRetryable(exists.status());
      return {};
    }
    if (*exists) {
      components_on_target_.insert(name);
    } else {
      missing.push_back(name);
    }
  }
  return missing;
}

absl::StatusOr<bool> MigrationRun::Exists(MetadataItemKind kind, const std::string& name) {
  if (client_ != nullptr) {
    if (kind == MetadataItemKind::kIndex) {
      return WithRetries([&] { return client_->IndexExists(name); });
    }
    if (kind == MetadataItemKind::kDataStream) {
      return WithRetries([&] { return client_->DataStreamExists(name); });
    }
    return WithRetries([&] { return client_->TemplateExists(TemplateKindOf(kind), name); });
  }
  if (options_.output_dir.empty()) return false;
  std::error_code ec;
  return std::filesystem::exists(MetadataItemPath(options_.output_dir, kind, name), ec);
}

void MigrationRun::Apply(MetadataItemReport& item) {
  auto exists = Exists(item.kind, item.name);
  if (!exists.ok()) {
    item.outcome = MetadataOutcome::kFailed;
    item.error = std::string(exists.status().message());
    item.transient = core::IsRetryable(exists.status());
    return;
  }
  if (*exists) {
    item.outcome = MetadataOutcome::kAlreadyExists;
    return;
  }
  if (options_.mode == MetadataMode::kEvaluate) {
    item.outcome = MetadataOutcome::kWouldCreate;
    return;
  }
  bool existed = false;
  absl::Status created = Create(item, existed);
  if (!created.ok()) {
    item.outcome = MetadataOutcome::kFailed;
    item.error = std::string(created.message());
    item.error += MissingPluginAdvice(item.error);
    item.transient = core::IsRetryable(created);
    return;
  }
  item.outcome = existed ? MetadataOutcome::kAlreadyExists : MetadataOutcome::kCreated;
}

absl::Status MigrationRun::Create(MetadataItemReport& item, bool& existed) {
  if (client_ == nullptr) {
    const std::string path = MetadataItemPath(options_.output_dir, item.kind, item.name);
    RFS_RETURN_IF_ERROR(
        core::CreateDirectories(std::filesystem::path(path).parent_path().string(), /*sync=*/true));
    return core::WriteFileAtomically(path, core::JsonText(item.body), /*sync=*/true);
  }
  for (int attempt = 0;; ++attempt) {
    absl::Status status;
    if (item.kind == MetadataItemKind::kIndex) {
      auto created = WithRetries([&] { return client_->CreateIndex(item.name, item.body); });
      status = created.status();
      if (created.ok() && !*created) existed = true;
    } else if (item.kind == MetadataItemKind::kDataStream) {
      auto created = WithRetries([&] { return client_->CreateDataStream(item.name); });
      if (created.ok() && !*created) existed = true;
      return created.status();
    } else {
      status = WithRetries(
          [&] { return client_->PutTemplate(TemplateKindOf(item.kind), item.name, item.body); });
    }
    if (status.ok() || !absl::IsInvalidArgument(status)) return status;
    const std::string message(status.message());
    std::vector<std::string> rejected = transform::RejectedSettingsIn(message);
    json::object* settings = SettingsOf(item.body, item.kind);
    bool removed = false;
    if (settings != nullptr && attempt + 1 < options_.max_setting_retries) {
      for (const std::string& key : rejected) {
        if (transform::RemoveSetting(*settings, key)) {
          removed = true;
          const bool is_private =
              message.find(StrCat("private index setting [", key, "]")) != std::string::npos;
          item.dropped_settings.push_back(
              {key, is_private ? "rejected by the target: private setting"
                               : "rejected by the target: unknown or archived setting"});
        }
      }
    }
    if (!removed) return status;
  }
}

}  // namespace rfs::migration::internal
