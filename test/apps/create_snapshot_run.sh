#!/bin/sh
# CreateSnapshot end to end against the opensearch-double binary.
#
#   create_snapshot_run.sh CREATE_SNAPSHOT OPENSEARCH_DOUBLE SCENARIO
#
# Starts the double in the background (ephemeral port, a few empty indices, snapshot options per
# scenario), reads the endpoint from its "listening on" line, runs the tool, and checks its exit
# code and output. Prints "PASS <scenario>" on success; any failed check prints the tool's
# output and exits non-zero. The double is stopped (by its pid) on exit.
set -u
tool=$1
double=$2
scenario=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/create-snapshot-test.XXXXXX")
double_pid=
cleanup() {
  if [ -n "$double_pid" ]; then
    kill "$double_pid" 2>/dev/null
    wait "$double_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL $scenario: $*"
  echo "--- stdout"; cat "$work/out" 2>/dev/null
  echo "--- stderr"; cat "$work/err" 2>/dev/null
  echo "--- double"; cat "$work/double.out" 2>/dev/null
  exit 1
}

start_double() {
  "$double" --port 0 --create-index logs-2024 --create-index logs-2025 --create-index orders \
    "$@" >"$work/double.out" 2>&1 &
  double_pid=$!
  i=0
  while ! grep -q 'listening on' "$work/double.out" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -gt 200 ] && fail "the double did not start"
    kill -0 "$double_pid" 2>/dev/null || fail "the double exited"
    sleep 0.05
  done
  endpoint=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$work/double.out")
  [ -n "$endpoint" ] || fail "no endpoint in the double's output"
}

# run_tool EXPECTED_EXIT ARGS...: runs the tool (stdin not a terminal, so JSON progress lines).
run_tool() {
  expected=$1
  shift
  "$tool" "$@" >"$work/out" 2>"$work/err" </dev/null
  rc=$?
  [ "$rc" -eq "$expected" ] || fail "exit code $rc, expected $expected"
}

expect() {  # expect FILE PATTERN (grep -E)
  grep -Eq -- "$2" "$work/$1" || fail "$1 does not match: $2"
}

case "$scenario" in
  success)
    start_double --snapshot-polls 3
    run_tool 0 --snapshot-name snap-1 --source-host "$endpoint" \
      --file-system-repo-path /mnt/snapshots --index-allowlist 'logs-*' orders \
      --max-snapshot-rate-mb-per-node 50 --compression-enabled --poll-interval PT0.05S
    expect out '^Snapshot migration_assistant_repo:snap-1 SUCCESS: 3 indices, 3/3 shards'
    # One JSON line per poll: in progress twice, then the final state.
    [ "$(grep -c '"event":"snapshot_progress"' "$work/err")" -eq 3 ] || fail "expected 3 polls"
    expect err '"poll":1,"state":"IN_PROGRESS","cluster_state":"STARTED"'
    expect err '"poll":3,"state":"SUCCESS".*"shards_done":3,"shards_failed":0,"shards_total":3'
    ;;
  s3-env)
    # Every option through RFS_ variables, with an s3 repository.
    start_double --snapshot-polls 1
    export RFS_SNAPSHOT_NAME=env-snap RFS_SOURCE_HOST="$endpoint" \
      RFS_S3_REPO_URI=s3://rfs-bucket/base RFS_S3_REGION=eu-west-1 \
      RFS_SNAPSHOT_REPO_NAME=s3repo RFS_POLL_INTERVAL=PT0.05S
    run_tool 0
    expect out '^Snapshot s3repo:env-snap SUCCESS: 3 indices'
    ;;
  no-wait)
    start_double --snapshot-polls 100
    run_tool 0 --snapshot-name later --source-host "$endpoint" --file-system-repo-path /mnt/x \
      --no-wait
    expect out 'Snapshot migration_assistant_repo:later started'
    [ -s "$work/err" ] && fail "unexpected stderr"
    ;;
  failed)
    start_double --snapshot-polls 2 --snapshot-final-state FAILED
    run_tool 1 --snapshot-name doomed --source-host "$endpoint" --file-system-repo-path /mnt/x \
      --index-allowlist orders --poll-interval PT0.05S
    # stderr is not a terminal: the final error is a JSON event like the progress lines.
    expect err '^\{"ts":"[^"]+","event":"error","code":"FAILED_PRECONDITION","exit_code":1,"message":"snapshot \[migration_assistant_repo:doomed\] ended FAILED: 1 of 1 shards failed'
    expect err '\[orders\]\[0\] IndexShardSnapshotFailedException'
    ;;
  partial)
    start_double --snapshot-polls 1 --snapshot-final-state PARTIAL
    run_tool 1 --snapshot-name half --source-host "$endpoint" --file-system-repo-path /mnt/x \
      --poll-interval PT0.05S
    expect err 'ended PARTIAL: 1 of 3 shards failed'
    ;;
  missing-index)
    start_double
    run_tool 1 --snapshot-name m --source-host "$endpoint" --file-system-repo-path /mnt/x \
      --index-allowlist orders,nope
    expect err 'index_not_found_exception: no such index \[nope\]'
    ;;
  existing-name)
    start_double --snapshot-polls 0
    run_tool 0 --snapshot-name twice --source-host "$endpoint" --file-system-repo-path /mnt/x
    run_tool 1 --snapshot-name twice --source-host "$endpoint" --file-system-repo-path /mnt/x
    expect err 'Invalid snapshot name \[twice\], snapshot with the same name already exists'
    ;;
  unreachable)
    # Nothing listens on port 9 (discard) here: a request error, exit 1.
    run_tool 1 --snapshot-name s --source-host http://127.0.0.1:9 --file-system-repo-path /mnt/x
    expect err 'register repository|PUT /_snapshot/migration_assistant_repo'
    ;;
  *)
    echo "unknown scenario $scenario"
    exit 2
    ;;
esac
echo "PASS $scenario"
