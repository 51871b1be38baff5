// The check that holds every answer the suite sees to the console's OpenAPI document: it finds
// each kind of departure, and passes what the document allows.
#include <string>

#include <catch2/catch.hpp>

#include "console/console_openapi_internal.hpp"

using rfs::console::internal::CheckAnswerAgainstOpenApi;

namespace {

const std::string kItem = "/sessions/s/backfill/work-items/logs__0__0";

bool Holds(const std::string& method, const std::string& target, int status,
           const std::string& body) {
  const std::string departure = CheckAnswerAgainstOpenApi(method, target, status, body);
  INFO(departure);
  return departure.empty();
}

}  // namespace

TEST_CASE("the OpenAPI check passes what the document allows and names each departure",
          "[console]") {
  CHECK(Holds("GET", "/health", 200, R"({"status":"ok"})"));
  CHECK(Holds("GET", "/health?x=1", 200, R"({"status":"ok"})"));
  // An enum, a type and a required member.
  CHECK(CheckAnswerAgainstOpenApi("GET", "/health", 200, R"({"status":"fine"})")
            .find("not in its enum") != std::string::npos);
  CHECK(
      CheckAnswerAgainstOpenApi("GET", "/health", 200, R"({"status":3})").find("expected string") !=
      std::string::npos);
  CHECK(CheckAnswerAgainstOpenApi("GET", "/health", 200, R"({})").find("required 'status'") !=
        std::string::npos);
  // Error answers are Detail objects, under "default".
  CHECK(Holds("GET", "/sessions", 401, R"({"detail":"a token is required"})"));
  CHECK(CheckAnswerAgainstOpenApi("GET", "/sessions", 401, R"({"message":"no"})")
            .find("required 'detail'") != std::string::npos);
  // A method the path does not serve answers 405 with a Detail.
  CHECK(Holds("PATCH", "/health", 405, R"({"detail":"no"})"));
  CHECK_FALSE(Holds("PATCH", "/health", 405, R"([])"));
  // The page and paths the document does not serve are not the API's.
  CHECK(Holds("GET", "/", 200, "<html></html>"));
  CHECK(Holds("GET", "/nope/at/all", 404, R"({"detail":"no"})"));
  // A body that is not JSON.
  CHECK(CheckAnswerAgainstOpenApi("GET", "/health", 200, "ok").find("not JSON") !=
        std::string::npos);
  // The literal "status" route wins over the {id} template: a status document is checked as one.
  const std::string status = "/sessions/s/backfill/work-items/status";
  CHECK(CheckAnswerAgainstOpenApi("GET", status, 200, R"({"session_name":"s"})")
            .find("required 'percent_complete'") != std::string::npos);
  // Numbers: a percent over 100, an integer given as a fraction; nested items; nullable.
  const std::string good_status =
      R"({"session_name":"s","percent_complete":40.0,"work_items":{"pending":1,"assigned":0,)"
      R"("completed":1},"documents":{"processed":1,"failed":0,"total":null,"percent":null},)"
      R"("bytes":{"processed":0},"total_work_items":2,"outcome":"IN_PROGRESS",)"
      R"("throughput_history":[{"at":"t","documents_per_second":1.5,"bytes_per_second":0}]})";
  CHECK(Holds("GET", status, 200, good_status));
  std::string over = good_status;
  over.replace(over.find("40.0"), 4, "140.5");
  CHECK(CheckAnswerAgainstOpenApi("GET", status, 200, over).find("over its maximum") !=
        std::string::npos);
  std::string fraction = good_status;
  fraction.replace(fraction.find(R"("total_work_items":2)"), 20, R"("total_work_items":2.5)");
  CHECK(CheckAnswerAgainstOpenApi("GET", status, 200, fraction).find("expected integer") !=
        std::string::npos);
  std::string outcome = good_status;
  outcome.replace(outcome.find("IN_PROGRESS"), 11, "DONE");
  CHECK(CheckAnswerAgainstOpenApi("GET", status, 200, outcome).find("$.outcome") !=
        std::string::npos);
  std::string point = good_status;
  point.replace(point.find(R"("documents_per_second":1.5)"), 26, R"("documents_per_second":-1)");
  CHECK(CheckAnswerAgainstOpenApi("GET", status, 200, point)
            .find("$.throughput_history[0].documents_per_second") != std::string::npos);
  // A status code the operation does not list falls to its default (an error).
  CHECK_FALSE(Holds("GET", kItem, 200, R"({"detail":"x"})"));
}
