// IDocumentStream's default NextInPlace (see source_document.hpp).
#include "rfs/reindex/source_document.hpp"

namespace rfs::reindex {

absl::StatusOr<const SourceDocument*> IDocumentStream::NextInPlace(DocumentHolder& holder) {
  auto next = Next();
  if (!next.ok()) return next.status();
  if (!next->has_value()) return nullptr;
  auto held = std::make_shared<const SourceDocument>(std::move(**next));
  const SourceDocument* doc = held.get();
  holder = std::move(held);
  return doc;
}

}  // namespace rfs::reindex
