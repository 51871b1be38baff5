#include "rfs/reindex/transforming_stream.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/reindex/bulk_format.hpp"
#include "rfs/transform/json_transformer.hpp"

using rfs::reindex::DocumentTransformOptions;
using rfs::reindex::FailedDocument;
using rfs::reindex::IFailedDocumentSink;
using rfs::reindex::SourceDocument;
using rfs::reindex::TransformingDocumentStream;
using rfs::reindex::VectorDocumentStream;

namespace {

class RecordingSink final : public IFailedDocumentSink {
 public:
  absl::Status Record(std::span<const FailedDocument> docs) override {
    recorded.insert(recorded.end(), docs.begin(), docs.end());
    return absl::OkStatus();
  }
  std::vector<FailedDocument> recorded;
};

std::vector<SourceDocument> Docs(int count, const std::string& type = "") {
  std::vector<SourceDocument> docs;
  for (int i = 0; i < count; ++i) {
    SourceDocument d;
    d.index = "src";
    d.id = std::to_string(i);
    if (!type.empty()) d.type = type;
    // Written with spaces and a float in a form a re-serialiser would change.
    d.source = "{ \"n\" : " + std::to_string(i) + ", \"f\": 1.50 }";
    d.cursor = static_cast<uint64_t>(i + 1);
    docs.push_back(std::move(d));
  }
  return docs;
}

std::vector<SourceDocument> Drain(TransformingDocumentStream& stream) {
  std::vector<SourceDocument> out;
  while (true) {
    auto next = stream.Next();
    REQUIRE(next.ok());
    if (!next->has_value()) return out;
    out.push_back(std::move(**next));
  }
}

std::unique_ptr<rfs::transform::IJsonTransformer> Load(const std::string& config) {
  auto loaded = rfs::transform::LoadTransformers(config);
  INFO(config);
  REQUIRE(loaded.ok());
  return std::move(*loaded);
}

}  // namespace

TEST_CASE("transformers that never read sources pass them through byte for byte",
          "[reindex][transform]") {
  VectorDocumentStream input(Docs(10, "book"));
  auto transformer = Load(R"J([{"TypeMappingSanitizationTransformerProvider":{
      "regexMappings":[["(src)","(book)","$1-$2"]]}}])J");
  TransformingDocumentStream stream(input, *transformer, nullptr,
                                    DocumentTransformOptions{4, 1 << 20});
  auto out = Drain(stream);
  REQUIRE(out.size() == 10);
  for (int i = 0; i < 10; ++i) {
    CHECK(out[i].index == "src-book");
    CHECK_FALSE(out[i].type.has_value());
    CHECK(out[i].source == "{ \"n\" : " + std::to_string(i) + ", \"f\": 1.50 }");
  }
  // Batches of four: every output carries its batch's last cursor.
  CHECK(out[0].cursor == 4);
  CHECK(out[3].cursor == 4);
  CHECK(out[4].cursor == 8);
  CHECK(out[9].cursor == 10);
  CHECK(stream.docs_in() == 10);
  CHECK(stream.docs_out() == 10);
}

TEST_CASE("documents whose bulk lines were laid out are transformed by their sources",
          "[reindex][transform]") {
  auto docs = Docs(3);
  auto lines = std::make_shared<rfs::reindex::RenderedLines>();
  for (SourceDocument& doc : docs) {
    const std::string source = std::move(doc.source);
    REQUIRE(rfs::reindex::AppendRenderedLines(doc, lines, [&](std::string& out) {
              out.append(source);
              return absl::OkStatus();
            }).ok());
  }
  VectorDocumentStream input(std::move(docs));
  auto transformer =
      Load(R"J([{"JqTransformerProvider":{"script":".document.m = (.document.n + 1)"}}])J");
  TransformingDocumentStream stream(input, *transformer, nullptr,
                                    DocumentTransformOptions{2, 1 << 20});
  auto out = Drain(stream);
  REQUIRE(out.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK_FALSE(out[i].rendered);
    CHECK(out[i].source ==
          R"({"n":)" + std::to_string(i) + R"(,"f":1.5,"m":)" + std::to_string(i + 1) + "}");
  }
}

TEST_CASE("transformed sources are re-serialised, drops and splits counted",
          "[reindex][transform]") {
  VectorDocumentStream input(Docs(6));
  // Drop odd documents, split even ones into two indices.
  auto transformer = Load(R"J([{"JqTransformerProvider":{"script":
      "select(.document.n % 2 == 0) | ., (.operation._index = \"copy\" | .document.copy = true)"}}])J");
  TransformingDocumentStream stream(input, *transformer, nullptr,
                                    DocumentTransformOptions{3, 1 << 20});
  auto out = Drain(stream);
  REQUIRE(out.size() == 6);
  CHECK(out[0].index == "src");
  CHECK(out[0].source == R"({"n":0,"f":1.5})");
  CHECK(out[1].index == "copy");
  CHECK(out[1].id == "0");
  CHECK(out[1].source == R"({"n":0,"f":1.5,"copy":true})");
  CHECK(out[2].id == "2");
  CHECK(out[2].cursor == 3);
  CHECK(out[4].id == "4");
  CHECK(out[4].cursor == 6);
  CHECK(stream.docs_in() == 6);
  CHECK(stream.docs_out() == 6);
  CHECK(stream.docs_failed() == 0);
}

TEST_CASE("documents nested deeper than 32 levels are transformed", "[reindex][transform]") {
  std::vector<SourceDocument> docs = Docs(1);
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"a":)";
  deep += "1";
  for (int i = 0; i < 200; ++i) deep += "}";
  docs[0].source = deep;
  VectorDocumentStream input(std::move(docs));
  auto transformer = Load(R"J([{"JqTransformerProvider":{"script":".document.top = true"}}])J");
  TransformingDocumentStream stream(input, *transformer, nullptr,
                                    DocumentTransformOptions{3, 1 << 20});
  auto out = Drain(stream);
  REQUIRE(out.size() == 1);
  CHECK(stream.docs_failed() == 0);
  CHECK(out[0].source.find(R"("top":true)") != std::string::npos);
  CHECK(out[0].source.size() == deep.size() + 11);
}

TEST_CASE("a document whose transform fails goes to the sink and the rest go on",
          "[reindex][transform]") {
  auto docs = Docs(5);
  docs[2].source = R"({"n":"two","f":1})";  // n + 1 fails in jq for a string
  docs[3].source = "{not json";
  VectorDocumentStream input(std::move(docs));
  auto transformer =
      Load(R"J([{"JqTransformerProvider":{"script":".document.m = (.document.n + 1)"}}])J");
  RecordingSink sink;
  TransformingDocumentStream stream(input, *transformer, &sink,
                                    DocumentTransformOptions{8, 1 << 20});
  auto out = Drain(stream);
  REQUIRE(out.size() == 3);
  CHECK(out[0].id == "0");
  CHECK(out[1].id == "1");
  CHECK(out[2].id == "4");
  // After a failed batch each output keeps its own document's cursor.
  CHECK(out[0].cursor == 1);
  CHECK(out[2].cursor == 5);
  CHECK(out[2].source == R"({"n":4,"f":1.5,"m":5})");
  REQUIRE(sink.recorded.size() == 2);
  CHECK(sink.recorded[0].id == "2");
  CHECK(sink.recorded[0].error_type == "transform_exception");
  CHECK(sink.recorded[0].reason.find("JqTransformerProvider") != std::string::npos);
  CHECK(sink.recorded[0].SourceText() == R"({"n":"two","f":1})");
  CHECK(sink.recorded[0].cursor == 3);
  CHECK(sink.recorded[1].id == "3");
  CHECK(sink.recorded[1].reason.find("not JSON") != std::string::npos);
  CHECK(stream.docs_failed() == 2);
}

TEST_CASE("outputs that are not documents fail their documents", "[reindex][transform]") {
  VectorDocumentStream input(Docs(2));
  auto transformer = Load(
      R"([{"JqTransformerProvider":{"script":"if .document.n == 1 then del(.operation._id) else . end"}}])");
  RecordingSink sink;
  TransformingDocumentStream stream(input, *transformer, &sink);
  auto out = Drain(stream);
  REQUIRE(out.size() == 1);
  CHECK(out[0].id == "0");
  REQUIRE(sink.recorded.size() == 1);
  CHECK(sink.recorded[0].id == "1");
  CHECK(sink.recorded[0].reason.find("_id") != std::string::npos);
}

TEST_CASE("batches are bounded by source bytes", "[reindex][transform]") {
  VectorDocumentStream input(Docs(6));
  auto transformer = Load("NoopTransformerProvider");
  // Each source is ~20 bytes: a 30-byte bound makes batches of two.
  TransformingDocumentStream stream(input, *transformer, nullptr,
                                    DocumentTransformOptions{100, 30});
  auto out = Drain(stream);
  REQUIRE(out.size() == 6);
  CHECK(out[0].cursor == 2);
  CHECK(out[2].cursor == 4);
  CHECK(out[5].cursor == 6);
}

namespace {

// Duplicates every document into "<index>-copy" without reading sources (a library user's own
// transformer): both outputs must carry the unparsed source.
class DuplicateIndex final : public rfs::transform::IJsonTransformer {
 public:
  absl::StatusOr<boost::json::value> Transform(boost::json::value input) override {
    boost::json::array out;
    for (auto& doc : input.as_array()) {
      boost::json::value copy = doc;
      copy.at("operation").as_object()["_index"] = "copy";
      out.push_back(std::move(doc));
      out.push_back(std::move(copy));
    }
    return boost::json::value(std::move(out));
  }
  bool ReadsDocumentSource() const override { return false; }
  std::string Describe() const override { return "DuplicateIndex"; }
};

}  // namespace

TEST_CASE("a split that never reads sources gives every output the source as read",
          "[reindex][transform]") {
  VectorDocumentStream input(Docs(3));
  DuplicateIndex transformer;
  TransformingDocumentStream stream(input, transformer, nullptr);
  auto out = Drain(stream);
  REQUIRE(out.size() == 6);
  for (int i = 0; i < 3; ++i) {
    const std::string source = "{ \"n\" : " + std::to_string(i) + ", \"f\": 1.50 }";
    CHECK(out[2 * i].index == "src");
    CHECK(out[2 * i].source == source);
    CHECK(out[2 * i + 1].index == "copy");
    CHECK(out[2 * i + 1].source == source);
  }
}

TEST_CASE("a batch over its transform budget fails together, and a stop is not a failure",
          "[reindex][transform][budget]") {
  rfs::transform::TransformerContext context;
  context.limits.time_per_call = std::chrono::milliseconds(200);
  // Document 1 makes the program loop; the batch of four fails as one, without a retry of each.
  auto loaded = rfs::transform::LoadTransformers(
      R"J([{"JqTransformerProvider":{"script":"if .document.n == 1 then last(range(1e15)) else . end"}}])J",
      context);
  REQUIRE(loaded.ok());
  {
    VectorDocumentStream input(Docs(4));
    RecordingSink sink;
    TransformingDocumentStream stream(input, **loaded, &sink, DocumentTransformOptions{8, 1 << 20});
    const auto started = std::chrono::steady_clock::now();
    auto out = Drain(stream);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    CHECK(out.empty());
    REQUIRE(sink.recorded.size() == 4);
    for (const auto& failed : sink.recorded) {
      CHECK(failed.error_type == "transform_budget_exceeded");
      CHECK(failed.reason.find("time budget") != std::string::npos);
    }
    CHECK(stream.docs_failed() == 4);
  }
  {
    std::atomic<bool> stop{true};
    context.limits.time_per_call = std::chrono::seconds(60);
    context.limits.stop_requested = &stop;
    context.limits.shutdown_grace = std::chrono::milliseconds(100);
    auto stoppable = rfs::transform::LoadTransformers(
        R"J([{"JqTransformerProvider":{"script":"if .document.n == 1 then last(range(1e15)) else . end"}}])J",
        context);
    REQUIRE(stoppable.ok());
    VectorDocumentStream input(Docs(4));
    RecordingSink sink;
    TransformingDocumentStream stream(input, **stoppable, &sink,
                                      DocumentTransformOptions{8, 1 << 20});
    auto next = stream.Next();
    REQUIRE_FALSE(next.ok());
    CHECK(next.status().code() == absl::StatusCode::kAborted);
    CHECK(sink.recorded.empty());
  }
}

TEST_CASE("a document too large for the transform's memory budget fails before the program runs",
          "[reindex][transform]") {
  auto docs = Docs(4);
  docs[1].source = R"({"msg":")" + std::string(300'000, 'x') + R"("})";
  VectorDocumentStream input(std::move(docs));
  auto transformer = Load(R"J([{"JqTransformerProvider":{"script":".document.m = 1"}}])J");
  RecordingSink sink;
  DocumentTransformOptions options{8, 1 << 20};
  options.transform_memory_bytes = size_t{1} << 20;  // 4 x 300 KB is over it, 4 x 30 B is not
  TransformingDocumentStream stream(input, *transformer, &sink, options);
  auto out = Drain(stream);
  REQUIRE(out.size() == 3);
  CHECK(out[0].id == "0");
  CHECK(out[1].id == "2");
  CHECK(out[2].id == "3");
  CHECK(out[2].source == R"({"n":3,"f":1.5,"m":1})");
  REQUIRE(sink.recorded.size() == 1);
  CHECK(sink.recorded[0].id == "1");
  CHECK(sink.recorded[0].cursor == 2);
  CHECK(sink.recorded[0].error_type == "transform_budget_exceeded");
  CHECK(sink.recorded[0].reason.find("memory budget of 1 MiB") != std::string::npos);
  CHECK(sink.recorded[0].SourceText().size() == 300'010);
  CHECK(stream.docs_failed() == 1);
  CHECK(stream.docs_in() == 4);
}

TEST_CASE("a document too large to transform is recorded from its laid-out line, not copied",
          "[reindex][transform]") {
  auto docs = Docs(3);
  auto lines = std::make_shared<rfs::reindex::RenderedLines>();
  const std::string big = R"({"msg":")" + std::string(300'000, 'x') + R"("})";
  for (auto& doc : docs) {
    const std::string source = doc.id == "1" ? big : doc.source;
    doc.source.clear();
    REQUIRE(rfs::reindex::AppendRenderedLines(doc, lines, [&](std::string& out) {
              out += source;
              return absl::OkStatus();
            }).ok());
  }
  VectorDocumentStream input(std::move(docs));
  auto transformer = Load(R"J([{"JqTransformerProvider":{"script":".document.m = 1"}}])J");
  RecordingSink sink;
  DocumentTransformOptions options{8, 1 << 20};
  options.transform_memory_bytes = size_t{1} << 20;
  TransformingDocumentStream stream(input, *transformer, &sink, options);
  auto out = Drain(stream);
  REQUIRE(out.size() == 2);
  CHECK(out[1].source == R"({"n":2,"f":1.5,"m":1})");
  REQUIRE(sink.recorded.size() == 1);
  const FailedDocument& failed = sink.recorded[0];
  CHECK(failed.id == "1");
  CHECK(failed.source.empty());
  CHECK(failed.source_owner == lines);
  CHECK(failed.SourceText() == big);
  CHECK(failed.SourceText().data() >= lines->bytes.data());
  CHECK(failed.SourceText().data() < lines->bytes.data() + lines->bytes.size());
}

// Passes documents through, noting what the shared budget held while it ran.
class BudgetWatchingTransformer final : public rfs::transform::IJsonTransformer {
 public:
  explicit BudgetWatchingTransformer(const rfs::core::MemoryBudget& budget) : budget_(budget) {}
  absl::StatusOr<boost::json::value> Transform(boost::json::value input) override {
    used_during.push_back(budget_.used());
    return input;
  }
  std::string Describe() const override { return "watching"; }
  std::vector<size_t> used_during;

 private:
  const rfs::core::MemoryBudget& budget_;
};

TEST_CASE("a batch is transformed once the shared memory budget has room for it, and holds it",
          "[reindex][transform]") {
  auto docs = Docs(3);
  size_t source_bytes = 0;
  for (const auto& d : docs) source_bytes += d.source.size();
  VectorDocumentStream input(std::move(docs));
  rfs::core::MemoryBudget budget(1000);
  budget.Charge(900);  // bulks in flight: the batch's footprint (4 x ~70 bytes) does not fit
  BudgetWatchingTransformer transformer(budget);
  DocumentTransformOptions options{8, 1 << 20};
  options.memory_budget = &budget;
  TransformingDocumentStream stream(input, transformer, nullptr, options);
  std::atomic<bool> released{false};
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    released = true;
    budget.Release(900);
  });
  auto first = stream.Next();
  const bool waited = released.load();
  sender.join();
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK(waited);
  CHECK((*first)->source == R"({"n":0,"f":1.5})");
  // It held its footprint while transforming, and gave it back.
  REQUIRE(transformer.used_during.size() == 1);
  CHECK(transformer.used_during[0] == rfs::reindex::kTransformFootprint * source_bytes);
  CHECK(budget.used() == 0);
}
