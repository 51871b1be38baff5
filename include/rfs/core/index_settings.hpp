// Index settings as one flat list. Elasticsearch and OpenSearch write an index's settings flat
// ("index.number_of_shards": "1"), but nested objects ({"index": {"number_of_shards": 1}}) are
// accepted everywhere settings are (templates, requests, old snapshots), and both forms may be
// mixed. The snapshot reader and the metadata transform read them through this one function.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace rfs::core {

/// Every leaf of `settings` under its dotted name ("index.refresh_interval"), in document order.
/// Objects are descended into; arrays, strings, numbers, booleans and nulls are leaves. The
/// values point into `settings`, which must outlive the result.
std::vector<std::pair<std::string, const boost::json::value*>> FlattenSettings(
    const boost::json::object& settings);

}  // namespace rfs::core
