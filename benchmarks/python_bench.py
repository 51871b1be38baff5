#!/usr/bin/env python3
"""python_bench: one shard's documents through the Python package against the C++ tool, in one run.

A repository of one shard (the perf shard of the other benchmarks: N documents of about 1 KB, four
segments, written by the fixture generator through Java Lucene's own IndexWriter) is read, in
rounds interleaved with each other:
  - C++:     `SnapshotInspector docs` (a Release build), its NDJSON lines into /dev/null;
  - Arrow:   `pyarrow.table(snapshot.to_arrow(index))`, every document into an Arrow table;
  - stream:  the same record batches read one by one and dropped (as a Parquet writer takes them);
  - iterate: `for doc in snapshot.documents(index)`, each document's source touched.
Each figure is the median of --rounds runs: documents/s and MB/s of `_source`, and the ratio of
each Python path to the C++ tool (goal: the Arrow path at least 70% of it). The peak RSS of a
Python process that only iterates is measured in a child of its own, against the growth the
goal allows (256 MiB over the interpreter's own).

Then the route users take without rfs, the search API: a shard of --search-api-docs documents is
migrated into a real OpenSearch node (scripts/local-cluster, started and stopped here) by
DocumentsFromSnapshotMigration, and read back by a Python client as the Elasticsearch and
OpenSearch clients' scan helpers and dump tools read it (one scroll, sorted by `_doc`, 10,000
hits per page, each page's JSON parsed and the hits' columns gathered) into a `pyarrow.table`,
against `to_arrow` of the snapshot of the same documents, in interleaved rounds.

    python_bench.py [--docs N] [--doc-size BYTES] [--rounds R] [--build DIR] [--data-dir DIR]
                    [--search-api-docs N (0: skip the search API)]

Run it with the Python that has the package installed (scripts/install-deps' virtualenv, after
`pip install ./python`), against a Release build (cmake -DCMAKE_BUILD_TYPE=Release): a sanitized
tool or module makes the figures meaningless. Exit 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_RATIO = 0.70
GOAL_RSS_GROWTH_MIB = 256


def generate(build: Path, data_dir: Path, docs: int, doc_size: int) -> Path:
    """The perf shard, generated once per size and kept (as the C++ benchmarks keep theirs)."""
    out = data_dir / f"perf-{docs}x{doc_size}"
    if not (out / "expected.json").exists():
        print(f"generating {out} ...", file=sys.stderr)
        subprocess.run(
            [str(build / "bin" / "rfs-generate-snapshot"), "--out", str(out), "--write-docs", "false",
             "--templates", "false", "--docs", str(docs), "--doc-size", str(doc_size),
             "--segments", "4", "--seed", "7"],
            check=True,
        )
    return out


def cpp_tool(build: Path, repo: Path, snapshot: str) -> float:
    started = time.perf_counter()
    with open("/dev/null", "wb") as sink:
        subprocess.run(
            [str(build / "bin" / "SnapshotInspector"), "docs", "--snapshot-local-dir", str(repo),
             "--snapshot-name", snapshot],
            stdout=sink, stderr=subprocess.DEVNULL, check=True,
        )
    return time.perf_counter() - started


def arrow_table(repo: Path, snapshot: str, index: str) -> tuple[float, int]:
    import pyarrow
    import rfs

    started = time.perf_counter()
    table = pyarrow.table(rfs.open_repository(str(repo)).snapshot(snapshot).to_arrow(index))
    return time.perf_counter() - started, table.num_rows


def arrow_stream(repo: Path, snapshot: str, index: str) -> tuple[float, int]:
    """Record batches read as a stream and dropped (as a writer of Parquet files consumes them)."""
    import pyarrow
    import rfs

    started = time.perf_counter()
    rows = 0
    source = rfs.open_repository(str(repo)).snapshot(snapshot).to_arrow(index)
    for batch in pyarrow.RecordBatchReader.from_stream(source):
        rows += batch.num_rows
    return time.perf_counter() - started, rows


def iterate(repo: Path, snapshot: str, index: str) -> tuple[float, int, int]:
    import rfs

    started = time.perf_counter()
    docs = 0
    source_bytes = 0
    for doc in rfs.open_repository(str(repo)).snapshot(snapshot).documents(index):
        docs += 1
        source_bytes += len(doc.source)
    return time.perf_counter() - started, docs, source_bytes


def search_api_table(url: str, index: str) -> tuple[float, int]:
    """Every document of `index` through the search API into a pyarrow.table, as a client does."""
    import http.client
    import urllib.parse

    import pyarrow

    started = time.perf_counter()
    parsed = urllib.parse.urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port)

    def call(method: str, path: str, body: dict) -> dict:
        connection.request(method, path, body=json.dumps(body),
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        payload = response.read()
        if response.status != 200:
            raise RuntimeError(f"{method} {path}: HTTP {response.status}: {payload[:200]!r}")
        return json.loads(payload)

    columns: dict[str, list] = {"_index": [], "_id": [], "_routing": [], "_source": []}
    page = call("POST", f"/{index}/_search?scroll=2m",
                {"size": 10_000, "sort": ["_doc"]})
    while page["hits"]["hits"]:
        for hit in page["hits"]["hits"]:
            columns["_index"].append(hit["_index"])
            columns["_id"].append(hit["_id"])
            columns["_routing"].append(hit.get("_routing"))
            columns["_source"].append(json.dumps(hit["_source"], separators=(",", ":"),
                                                 ensure_ascii=False))
        page = call("POST", "/_search/scroll", {"scroll": "2m", "scroll_id": page["_scroll_id"]})
    call("DELETE", "/_search/scroll", {"scroll_id": page["_scroll_id"]})
    table = pyarrow.table(columns)
    connection.close()
    return time.perf_counter() - started, table.num_rows


def search_api_comparison(args: argparse.Namespace, data_dir: Path) -> int:
    """The search API against to_arrow on the same documents; non-zero when a step fails."""
    generated = generate(args.build, data_dir, args.search_api_docs, args.doc_size)
    expected = json.loads((generated / "expected.json").read_text())
    repo = generated / "repo"
    snapshot = expected["snapshot"]
    index = next(iter(expected["indices"]))
    work = data_dir / "python-bench-search-api"
    cluster = ROOT / "scripts" / "local-cluster"
    subprocess.run([str(cluster), "stop", "--dir", str(work / "node")], capture_output=True)
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir(parents=True)
    started = subprocess.run([str(cluster), "start", "--dir", str(work / "node")],
                             capture_output=True, text=True)
    if started.returncode != 0:
        print(f"python_bench: the OpenSearch node did not start:\n{started.stderr[-2000:]}")
        return 1
    url = started.stdout.strip().splitlines()[-1]
    try:
        with open(work / "migration.log", "wb") as log:
            migrated = subprocess.run(
                [str(args.build / "bin" / "DocumentsFromSnapshotMigration"), "--snapshot-local-dir",
                 str(repo), "--snapshot-name", snapshot, "--target-host", url, "--coordinator-db",
                 str(work / "coordination.sqlite"), "--failed-documents-dir", str(work / "failed")],
                stdout=log, stderr=subprocess.STDOUT)
        if migrated.returncode != 3:  # every work item done: no work left
            print(f"python_bench: the migration exited with {migrated.returncode}; see "
                  f"{work / 'migration.log'}")
            return 1
        subprocess.run(["curl", "-sf", "-X", "POST", f"{url}/{index}/_refresh"], check=True,
                       capture_output=True)
        search, arrow = [], []
        for _ in range(args.rounds):
            seconds, rows = search_api_table(url, index)
            search.append(seconds)
            if rows != args.search_api_docs:
                print(f"python_bench: the search API gave {rows} documents, not "
                      f"{args.search_api_docs}")
                return 1
            seconds, rows = arrow_table(repo, snapshot, index)
            arrow.append(seconds)
        search_s, arrow_s = statistics.median(search), statistics.median(arrow)
        docs = args.search_api_docs
        print(f"search API route, {docs} documents in a real OpenSearch node (scroll of 10,000, "
              f"sorted by _doc, into a pyarrow.table):")
        print(f"  {'search API -> pyarrow.table':<32} {docs / search_s:>10.0f} docs/s "
              f"(median of {len(search)}: {search_s:.2f} s)")
        print(f"  {'rfs to_arrow -> pyarrow.table':<32} {docs / arrow_s:>10.0f} docs/s "
              f"(median of {len(arrow)}: {arrow_s:.2f} s)")
        print(f"  rfs / search API: {search_s / arrow_s:.1f}x")
        return 0
    finally:
        subprocess.run([str(cluster), "stop", "--dir", str(work / "node")], capture_output=True)


def rss_of_iteration(repo: Path, snapshot: str, index: str) -> tuple[float, float]:
    """Peak RSS (MiB) of a fresh interpreter that imports rfs, then of one that also iterates."""
    # VmHWM is this process's own peak: getrusage's ru_maxrss keeps the parent's across exec.
    code = (
        "import sys, rfs\n"
        "if sys.argv[1] == 'iterate':\n"
        "    for doc in rfs.open_repository(sys.argv[2]).snapshot(sys.argv[3]).documents(sys.argv[4]):\n"
        "        len(doc.source)\n"
        "status = open('/proc/self/status').read()\n"
        "print(int(status.split('VmHWM:')[1].split()[0]) / 1024)\n"
    )
    peaks = []
    for mode in ("import", "iterate"):
        out = subprocess.run([sys.executable, "-c", code, mode, str(repo), snapshot, index],
                             capture_output=True, text=True, check=True).stdout
        peaks.append(float(out.strip()))
    return peaks[0], peaks[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300_000)
    parser.add_argument("--doc-size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "release")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--search-api-docs", type=int, default=100_000)
    args = parser.parse_args()
    data_dir = args.data_dir or args.build / "bench-data"
    generated = generate(args.build, data_dir, args.docs, args.doc_size)
    expected = json.loads((generated / "expected.json").read_text())
    repo = generated / "repo"
    snapshot = expected["snapshot"]
    index = next(iter(expected["indices"]))

    cpp, arrow, streamed, loop = [], [], [], []
    docs = source_bytes = 0
    for _ in range(args.rounds):
        cpp.append(cpp_tool(args.build, repo, snapshot))
        seconds, docs = arrow_table(repo, snapshot, index)
        arrow.append(seconds)
        seconds, streamed_rows = arrow_stream(repo, snapshot, index)
        streamed.append(seconds)
        if streamed_rows != docs:
            print(f"python_bench: the stream gave {streamed_rows} rows, the table {docs}")
            return 1
        seconds, docs_iterated, source_bytes = iterate(repo, snapshot, index)
        loop.append(seconds)
        if docs_iterated != docs:
            print(f"python_bench: the Arrow table has {docs} rows, the iteration {docs_iterated}")
            return 1
    base_rss, iterate_rss = rss_of_iteration(repo, snapshot, index)

    def line(name: str, runs: list[float]) -> float:
        median = statistics.median(runs)
        print(f"{name:<34} {docs / median:>10.0f} docs/s {source_bytes / median / 1e6:>8.1f} MB/s "
              f"(median of {len(runs)}: {median:.2f} s)")
        return median

    print(f"python_bench: {docs} documents, {source_bytes / 1e6:.1f} MB of _source, one shard")
    cpp_s = line("C++ SnapshotInspector docs", cpp)
    arrow_s = line("Python to_arrow -> pyarrow.table", arrow)
    stream_s = line("Python to_arrow, batches streamed", streamed)
    loop_s = line("Python documents() loop", loop)
    arrow_ratio = cpp_s / arrow_s
    print(f"Arrow table / C++ tool: {arrow_ratio:.2f}x (goal >= {GOAL_RATIO:.2f}); "
          f"Arrow stream / C++ tool: {cpp_s / stream_s:.2f}x; "
          f"documents() loop / C++ tool: {cpp_s / loop_s:.2f}x")
    growth = iterate_rss - base_rss
    print(f"peak RSS: interpreter with rfs imported {base_rss:.0f} MiB, iterating every document "
          f"{iterate_rss:.0f} MiB (+{growth:.0f} MiB; goal <= +{GOAL_RSS_GROWTH_MIB} MiB)")
    missed = arrow_ratio < GOAL_RATIO or growth > GOAL_RSS_GROWTH_MIB
    failed = search_api_comparison(args, data_dir) if args.search_api_docs > 0 else 0
    return 1 if missed or failed else 0


if __name__ == "__main__":
    sys.exit(main())
