#!/usr/bin/env bash
# The ctest fixture of the real nodes: `start DIR` starts OpenSearch 2 (DIR/os2) and 3 (DIR/os3),
# the k-NN targets OpenSearch 2.19.1 (DIR/os2knn) and 3.5.0 (DIR/os3knn), which always start with
# the k-NN plugin, and Elasticsearch 7.10 (DIR/es7), 8.19 (DIR/es8) and 8.18 (DIR/es818), sources,
# all at once through scripts/local-cluster, and writes each base URL to DIR/<name>/url; `stop DIR`
# stops them. Each node's path.repo is DIR/<name>/repo. Given NAME:DISTRIBUTION:VERSION words
# after DIR, it starts (and stops) those nodes instead, e.g. `start DIR solr:solr:9` for the Solr
# fixture.
set -euo pipefail
action=$1
base=$2
shift 2
root="$(cd "$(dirname "$0")/../.." && pwd)"
cluster="$root/scripts/local-cluster"
# name:distribution:version
nodes=(os2:opensearch:2 os3:opensearch:3 os2knn:opensearch:2.19.1 os3knn:opensearch:3.5.0
       es7:elasticsearch:7 es8:elasticsearch:8 es818:elasticsearch:8.18.8)
if [ $# -gt 0 ]; then nodes=("$@"); fi

case "$action" in
  start)
    pids=()
    for node in "${nodes[@]}"; do
      IFS=: read -r name distribution version <<<"$node"
      dir="$base/$name"
      "$cluster" stop --dir "$dir/node" >/dev/null 2>&1 || true
      rm -rf "$dir"
      mkdir -p "$dir/repo"
      (
        if url=$("$cluster" start --dir "$dir/node" --distribution "$distribution" \
                   --version "$version" --repo-path "$dir/repo" 2>"$dir/fixture.log"); then
          echo "$url" >"$dir/url"
          echo "$name: $url"
        else
          echo "$name did not start:" >&2
          cat "$dir/fixture.log" >&2
          exit 1
        fi
      ) &
      pids+=($!)
    done
    status=0
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    exit "$status"
    ;;
  stop)
    for node in "${nodes[@]}"; do
      name=${node%%:*}
      "$cluster" stop --dir "$base/$name/node" || true
      rm -f "$base/$name/url"
    done
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 64
    ;;
esac
