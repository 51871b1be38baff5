#include "rfs/snapshot/source_repo.hpp"

#include <algorithm>
#include <filesystem>

#include "rfs/core/checked_path.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::snapshot {

using core::StrCat;
namespace fs = std::filesystem;

absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> ISourceRepo::OpenBlobOfSize(
    std::string_view path, uint64_t size) const {
  RFS_ASSIGN_OR_RETURN(auto blob, OpenBlob(path));
  if (blob->size() != size) {
    return absl::DataLossError(
        StrCat("blob ", path, " holds ", blob->size(), " bytes where ", size, " were expected"));
  }
  return blob;
}

absl::StatusOr<std::vector<uint8_t>> ISourceRepo::ReadBlob(std::string_view path,
                                                           uint64_t max_bytes) const {
  auto blob = OpenBlob(path);
  if (!blob.ok()) return blob.status();
  if ((*blob)->size() > max_bytes) {
    return absl::ResourceExhaustedError(
        StrCat("blob ", path, " of ", (*blob)->size(), " bytes exceeds the limit of ", max_bytes));
  }
  return core::ReadRange(**blob, 0, (*blob)->size());
}

absl::StatusOr<std::shared_ptr<FileSystemRepo>> FileSystemRepo::Open(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(StrCat("snapshot repository folder not found: ", root));
  }
  return std::shared_ptr<FileSystemRepo>(new FileSystemRepo(std::move(root)));
}

absl::StatusOr<std::string> FileSystemRepo::Resolve(std::string_view path) const {
  // Blob paths come from repository metadata, which is untrusted: refuse escapes.
  if (path.empty()) return root_;
  RFS_ASSIGN_OR_RETURN(const std::string checked,
                       core::CheckedPath({path}, StrCat("a blob path in ", root_)));
  return StrCat(root_, "/", checked);
}

namespace {

absl::StatusOr<std::vector<std::string>> ListEntries(const std::string& dir, bool folders) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) {
      return names;
    }
    return absl::UnavailableError(StrCat("cannot list ", dir, ": ", ec.message()));
  }
  for (const auto& entry : it) {
    std::error_code type_ec;
    const bool is_dir = entry.is_directory(type_ec);
    if (is_dir == folders) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ISourceRepo::ListBlobsBelow(std::string_view dir,
                                                                     int max_depth) const {
  std::vector<std::string> out;
  // Folders still to list, relative to `dir`, with their depth.
  std::vector<std::pair<std::string, int>> pending{{"", 0}};
  auto join = [](std::string_view a, std::string_view b) {
    if (a.empty()) return std::string(b);
    if (b.empty()) return std::string(a);
    return core::StrCat(a, "/", b);
  };
  while (!pending.empty()) {
    auto [relative, depth] = std::move(pending.back());
    pending.pop_back();
    const std::string folder = join(dir, relative);
    RFS_ASSIGN_OR_RETURN(auto blobs, ListBlobs(folder));
    for (const std::string& blob : blobs) out.push_back(join(relative, blob));
    if (depth >= max_depth) continue;
    RFS_ASSIGN_OR_RETURN(auto folders, ListFolders(folder));
    for (const std::string& child : folders) pending.emplace_back(join(relative, child), depth + 1);
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<std::string>> FileSystemRepo::ListBlobs(std::string_view dir) const {
  auto path = Resolve(dir);
  if (!path.ok()) return path.status();
  return ListEntries(*path, /*folders=*/false);
}

absl::StatusOr<std::vector<std::string>> FileSystemRepo::ListFolders(std::string_view dir) const {
  auto path = Resolve(dir);
  if (!path.ok()) return path.status();
  return ListEntries(*path, /*folders=*/true);
}

absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> FileSystemRepo::OpenBlob(
    std::string_view path) const {
  auto resolved = Resolve(path);
  if (!resolved.ok()) return resolved.status();
  auto file = core::MappedFile::Open(*resolved, std::string(path));
  if (!file.ok()) {
    if (absl::IsNotFound(file.status())) {
      return absl::NotFoundError(StrCat("blob ", path, " not found in repository ", root_));
    }
    return file.status();
  }
  return std::shared_ptr<const core::IRandomAccessFile>(std::move(file).value());
}

absl::StatusOr<uint64_t> FileSystemRepo::BlobSize(std::string_view path) const {
  auto resolved = Resolve(path);
  if (!resolved.ok()) return resolved.status();
  std::error_code ec;
  const auto status = fs::status(*resolved, ec);
  if (ec || !fs::exists(status)) {
    return absl::NotFoundError(StrCat("blob ", path, " not found in repository ", root_));
  }
  if (!fs::is_regular_file(status)) {
    return absl::FailedPreconditionError(
        StrCat("blob ", path, " in repository ", root_, " is not a regular file"));
  }
  const auto size = fs::file_size(*resolved, ec);
  if (ec) return absl::UnavailableError(StrCat("cannot size blob ", path, ": ", ec.message()));
  return size;
}

}  // namespace rfs::snapshot
