#include "rfs/core/url_redaction.hpp"

#include <catch2/catch.hpp>

using rfs::core::WithoutPassword;

TEST_CASE("passwords leave URLs whole, whatever they hold", "[core][security]") {
  CHECK(WithoutPassword("postgresql://rfs:secret@db:5432/state") ==
        "postgresql://rfs@db:5432/state");
  // A password with '@' used to leave its second half behind.
  CHECK(WithoutPassword("postgresql://rfs:p@ss@db/state") == "postgresql://rfs@db/state");
  CHECK(WithoutPassword("postgresql://rfs:a@b@c@db/state") == "postgresql://rfs@db/state");
  CHECK(WithoutPassword("https://admin:s3/cr@t@host:9200") == "https://admin@host:9200");
  CHECK(WithoutPassword("https://u/ser:x@host") == "https://<redacted>@host");
  CHECK(WithoutPassword("http://host:9200/path") == "http://host:9200/path");
  CHECK(WithoutPassword("https://user@host") == "https://user@host");
  CHECK(WithoutPassword("no url at all: a@b") == "no url at all: a@b");
  for (const char* url : {"postgresql://u:hunter2@h/d", "postgresql://u:hun@ter2@h/d",
                          "https://u:hun/ter@2@h", "http://:hunter2@h"}) {
    INFO(url);
    const std::string out = WithoutPassword(url);
    CHECK(out.find("hun") == std::string::npos);
    CHECK(out.find("ter2") == std::string::npos);
  }
}
