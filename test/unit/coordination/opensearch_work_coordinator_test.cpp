#include "rfs/coordination/opensearch_work_coordinator.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/net/beast_http_transport.hpp"

#include "conformance/work_coordinator_conformance.hpp"
#include "support/opensearch_double.hpp"

using namespace std::chrono_literals;
using rfs::coordination::Acquired;
using rfs::coordination::IWorkCoordinator;
using rfs::coordination::OpenSearchWorkCoordinator;
using rfs::coordination::OpenSearchWorkCoordinatorOptions;
using rfs::coordination::WorkItemId;
using rfs::coordination::conformance::ConformanceEnv;
using rfs::coordination::conformance::WorkerSpec;
using rfs::net::HttpRequest;
using rfs::net::HttpResponse;
using rfs::testing::OpenSearchDouble;

namespace {

// Records every request on its way to the cluster.
class RecordingTransport final : public rfs::net::IHttpTransport {
 public:
  explicit RecordingTransport(std::shared_ptr<rfs::net::IHttpTransport> inner)
      : inner_(std::move(inner)) {}
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    return inner_->Send(request);
  }
  std::string endpoint() const override { return inner_->endpoint(); }
  std::vector<HttpRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  std::shared_ptr<rfs::net::IHttpTransport> inner_;
  mutable std::mutex mu_;
  std::vector<HttpRequest> requests_;
};

// The coordinator against the project's OpenSearch double over HTTP, on a fake clock shared by
// the workers and the cluster (its `_cat/health` epoch and, when asked, its `Date` headers).
struct OpenSearchEnv {
  explicit OpenSearchEnv(bool date_header = true, std::string session = "")
      : session_name(std::move(session)) {
    rfs::testing::OpenSearchDoubleOptions options;
    options.clock = &clock;
    options.send_date_header = date_header;
    auto started = OpenSearchDouble::Start(std::move(options));
    REQUIRE(started.ok());
    cluster = *std::move(started);
    auto transport = rfs::net::BeastHttpTransport::Open({.endpoint = cluster->endpoint()});
    REQUIRE(transport.ok());
    recorder = std::make_shared<RecordingTransport>(
        std::shared_ptr<rfs::net::IHttpTransport>(*std::move(transport)));
  }

  std::unique_ptr<IWorkCoordinator> Open(const WorkerSpec& spec, int request_attempts = 4) {
    OpenSearchWorkCoordinatorOptions options;
    rfs::coordination::conformance::ApplySpec(spec, &clock, options);
    options.transport = recorder;
    options.request_attempts = request_attempts;
    options.session_name = session_name;
    return rfs::coordination::conformance::RequireOpened(
        OpenSearchWorkCoordinator::Open(std::move(options)));
  }

  ConformanceEnv conformance() {
    ConformanceEnv env;
    env.clock = &clock;
    env.make_worker = [this](const WorkerSpec& spec) { return Open(spec); };
    // Date headers have one-second resolution: a lease is surely over for every worker about
    // two seconds after its expiry (the probe's millisecond readings need far less).
    env.expiry_slack = 3s;
    env.check_store = [this] { CheckProtocol(); };
    return env;
  }

  // Nothing the coordinator sent was malformed or unsupported.
  void CheckProtocol() const {
    const auto errors = cluster->protocol_errors();
    INFO((errors.empty() ? std::string() : errors.front()));
    CHECK(errors.empty());
  }

  // Fails the request `n` requests from now (0: the next): a reset before it reaches the cluster,
  // or, with `after_applying`, after it took effect (a lost response).
  void FailRequest(uint64_t n, bool after_applying) {
    rfs::testing::FaultOptions faults;
    faults.path_contains = "";
    faults.schedule[n + 1] = after_applying ? rfs::testing::Fault::kResetAfterApply
                                            : rfs::testing::Fault::kResetBeforeApply;
    cluster->SetFaults(std::move(faults));
  }

  rfs::core::FakeClock clock;
  std::unique_ptr<OpenSearchDouble> cluster;
  std::shared_ptr<RecordingTransport> recorder;
  std::string session_name;
};

boost::json::object Body(const HttpRequest& request) {
  return boost::json::parse(request.body).as_object();
}

}  // namespace

TEST_CASE("OpenSearchWorkCoordinator passes the conformance suite with Date headers",
          "[coordination][opensearch]") {
  OpenSearchEnv env(/*date_header=*/true);
  rfs::coordination::conformance::RunWorkCoordinatorConformance(env.conformance());
}

TEST_CASE("OpenSearchWorkCoordinator passes the conformance suite with the clock probe",
          "[coordination][opensearch]") {
  // Plain OpenSearch sends no Date header: the coordinator reads the cluster clock from
  // GET /_cat/health, in whole seconds like a Date header (the default slack of 3 s holds).
  OpenSearchEnv env(/*date_header=*/false);
  ConformanceEnv conformance = env.conformance();
  rfs::coordination::conformance::RunWorkCoordinatorConformance(conformance);
}

TEST_CASE("OpenSearchWorkCoordinator reads a clock that sends no Date header from _cat/health",
          "[coordination][opensearch]") {
  OpenSearchEnv env(/*date_header=*/false);
  env.clock.Advance(1234ms);
  auto worker = env.Open({"w1", nullptr, nullptr});
  REQUIRE(worker->Setup().ok());
  REQUIRE(worker->CreateUnassignedWorkItem("item", 0).ok());
  const auto before = env.clock.Now();
  auto outcome = worker->AcquireNextWorkItem(10min);
  REQUIRE(outcome.ok());
  REQUIRE(std::holds_alternative<Acquired>(*outcome));
  const auto& lease = std::get<Acquired>(*outcome).lease;
  // The epoch has one-second resolution: expiries are written at the late end of the interval.
  CHECK(lease.expires_at >= before + 10min);
  CHECK(lease.expires_at <= before + 10min + 1s);
  int probes = 0;
  for (const auto& r : env.recorder->requests()) {
    CHECK(r.target.find("_update") == std::string::npos);  // No scripting needed.
    if (!r.target.starts_with("/_cat/health")) continue;
    ++probes;
    CHECK(r.method == "GET");
    CHECK(r.target == "/_cat/health?format=json");
  }
  CHECK(probes == 1);  // One reading serves until it ages out.
  auto store_now = worker->StoreNow();
  REQUIRE(store_now.ok());
  CHECK(*store_now - env.clock.Now() < 1s);
  CHECK(env.clock.Now() - *store_now < 1s);
  env.CheckProtocol();
}

TEST_CASE("OpenSearchWorkCoordinator validates its options", "[coordination][opensearch]") {
  OpenSearchEnv env;
  OpenSearchWorkCoordinatorOptions options;
  options.transport = env.recorder;
  CHECK(absl::IsInvalidArgument(OpenSearchWorkCoordinator::Open(options).status()));  // No id.
  options.worker_id = "w";
  options.session_name = "Has Caps";
  CHECK(absl::IsInvalidArgument(OpenSearchWorkCoordinator::Open(options).status()));
  options.session_name = "ok_session-1";
  options.transport = nullptr;
  CHECK(absl::IsInvalidArgument(OpenSearchWorkCoordinator::Open(options).status()));
  CHECK(OpenSearchWorkCoordinator::IndexName("") == ".migrations_working_state");
  CHECK(OpenSearchWorkCoordinator::IndexName("run7") == ".migrations_working_state_run7");
}

TEST_CASE("OpenSearchWorkCoordinator speaks the documented OpenSearch APIs",
          "[coordination][opensearch]") {
  OpenSearchEnv env(/*date_header=*/true, "run7");
  auto worker = env.Open({"w1", nullptr, nullptr});
  REQUIRE(worker->Setup().ok());
  REQUIRE(worker->Setup().ok());
  const std::string id = WorkItemId{"logs", 0, 0}.ToString();
  REQUIRE(worker->CreateUnassignedWorkItem(id, 0).ok());
  auto outcome = worker->AcquireNextWorkItem(10min);
  REQUIRE(outcome.ok());
  REQUIRE(std::holds_alternative<Acquired>(*outcome));
  REQUIRE(worker->CompleteWorkItem(std::get<Acquired>(*outcome).lease).ok());
  REQUIRE(worker->CountIncompleteWorkItems().ok());

  const auto requests = env.recorder->requests();
  const std::string index = "/.migrations_working_state_run7";
  auto find = [&](std::string_view method, std::string_view prefix) -> const HttpRequest* {
    for (const auto& r : requests) {
      if (r.method == method && r.target.starts_with(prefix)) return &r;
    }
    return nullptr;
  };
  // Setup: HEAD, then PUT with explicit mappings for every queried field; the second Setup only
  // looks.
  const HttpRequest* create_index = find("PUT", index);
  REQUIRE(create_index != nullptr);
  CHECK(create_index->target == index);
  const auto props = Body(*create_index).at("mappings").at("properties").as_object();
  CHECK(props.at("leaseExpirationMillis").at("type") == "long");
  CHECK(props.at("completedAtMillis").at("type") == "long");
  CHECK(props.at("leaseHolderId").at("type") == "keyword");
  int index_creations = 0;
  for (const auto& r : requests) index_creations += r.method == "PUT" && r.target == index;
  CHECK(index_creations == 1);
  // Creation: op_type=create, refreshed so that searches see it.
  const HttpRequest* create = find("PUT", index + "/_doc/" + id + "?op_type=create");
  REQUIRE(create != nullptr);
  CHECK(create->target.ends_with("&refresh=true"));
  CHECK(Body(*create).at("leaseExpirationMillis") == 0);
  // Acquisition: a random-scored search with seq_no_primary_term, then a conditional write.
  const HttpRequest* search = find("POST", index + "/_search");
  REQUIRE(search != nullptr);
  CHECK(Body(*search).at("seq_no_primary_term") == true);
  CHECK(Body(*search).at("query").as_object().contains("function_score"));
  const HttpRequest* acquire = find("PUT", index + "/_doc/" + id + "?if_seq_no=");
  REQUIRE(acquire != nullptr);
  CHECK(acquire->target.find("&if_primary_term=") != std::string::npos);
  CHECK(acquire->target.ends_with("&refresh=true"));
  CHECK(Body(*acquire).at("leaseHolderId") == "w1");
  // Every body is declared as JSON.
  for (const auto& r : requests) {
    if (!r.body.empty())
      CHECK(rfs::net::FindHeader(r.headers, "content-type") ==
            std::optional<std::string>("application/json"));
  }
  // Counting refreshes first, then uses _count.
  CHECK(find("POST", index + "/_refresh") != nullptr);
  CHECK(find("POST", index + "/_count") != nullptr);
  env.CheckProtocol();
}

TEST_CASE("OpenSearchWorkCoordinator turns transport failures into clean, retryable statuses",
          "[coordination][opensearch]") {
  // Fail the Nth request of a short scenario, for every N, both before the request reaches the
  // cluster and after it took effect (a lost response): each failure must surface as a retryable
  // status, and retrying the same call must then end exactly as if nothing had failed.
  for (bool after_applying : {false, true}) {
    for (int n = 0; n < 30; ++n) {
      DYNAMIC_SECTION((after_applying ? "losing the response to" : "failing") << " request " << n) {
        OpenSearchEnv env;
        // No resending inside the coordinator: every failure reaches the caller.
        auto worker = env.Open({"w1", nullptr, nullptr}, /*request_attempts=*/1);
        REQUIRE(worker->Setup().ok());
        const std::string parent = WorkItemId{"idx", 0, 0}.ToString();
        const std::string child = WorkItemId{"idx", 0, 10}.ToString();
        REQUIRE(worker->CreateUnassignedWorkItem(parent, 0).ok());
        env.FailRequest(static_cast<uint64_t>(n), after_applying);
        auto retry = [&](auto&& call) {
          for (int attempt = 0;; ++attempt) {
            auto result = call();
            if (result.ok()) return result;
            INFO(result.status().ToString());
            REQUIRE(rfs::core::IsRetryable(result.status()));
            REQUIRE(attempt < 2);
          }
        };
        auto outcome = retry([&] { return worker->AcquireNextWorkItem(10min); });
        REQUIRE(std::holds_alternative<Acquired>(*outcome));
        const auto lease = std::get<Acquired>(*outcome).lease;
        CHECK(lease.work_item_id == parent);
        (void)retry([&]() -> absl::StatusOr<bool> {
          RFS_RETURN_IF_ERROR(
              worker->CreateSuccessorsAndComplete(lease, std::vector<std::string>{child}, 0));
          return true;
        });
        auto count = retry([&] { return worker->CountIncompleteWorkItems(); });
        CHECK(*count == 1);
        auto state = retry([&] { return worker->GetWorkItem(parent); });
        REQUIRE(state->has_value());
        CHECK((*state)->completed());
        CHECK((*state)->lease_generation == 1);  // No second grant was needed.
        env.CheckProtocol();
      }
    }
  }
}
