# MetadataMigration's command line: help, offline evaluate and the directory target on corpus
# repositories, and its exit codes. Included by test/apps/CMakeLists.txt.
if(NOT TARGET MetadataMigration)
  return()
endif()
set(metadata_tool $<TARGET_FILE:MetadataMigration>)
set(metadata_scratch ${CMAKE_CURRENT_BINARY_DIR}/metadata_migration)

# rfs_add_metadata_cli_test(<name> <pass regex> <corpus-relative dir> <shell command>): runs
# the command with $REPO set to the corpus repository, or reports RFS-SKIPPED without a corpus.
function(rfs_add_metadata_cli_test name pass dir command)
  add_test(NAME apps:${name}
    COMMAND sh -c "REPO='${corpus}/${dir}'; TOOL='${metadata_tool}'; OUT='${metadata_scratch}/${name}'; if [ -d \"$REPO\" ]; then rm -rf \"$OUT\"; ( ${command} ); echo \"exit code $?\"; else echo 'RFS-SKIPPED: ../shared/corpus not found'; exit 77; fi")
  set_tests_properties(apps:${name} PROPERTIES
    PASS_REGULAR_EXPRESSION "${pass}.*exit code 0" SKIP_RETURN_CODE 77 TIMEOUT 120)
endfunction()

rfs_add_exit_test(metadata-help 0
  "evaluate.migrate.*Exit codes: 0 every item.*--index-template-allowlist.*--multi-type-behavior"
  $<TARGET_FILE:MetadataMigration> --help)

# Usage errors exit 64: no command, an unknown command, an unknown option, migrate without a
# target, a bad --multi-type-behavior.
add_test(NAME apps:metadata-usage-errors
  COMMAND sh -c "t='${metadata_tool}'; \"$t\"; a=$?; \"$t\" frobnicate; b=$?; \"$t\" evaluate --no-such-option; c=$?; \"$t\" migrate --snapshot-local-dir /x; d=$?; \"$t\" evaluate --snapshot-local-dir /x --multi-type-behavior merge; e=$?; echo \"codes $a $b $c $d $e\"")
set_tests_properties(apps:metadata-usage-errors PROPERTIES
  PASS_REGULAR_EXPRESSION "codes 64 64 64 64 64")

# migrate without any repository option names the missing repository first (exit 64).
add_test(NAME apps:metadata-migrate-no-repository
  COMMAND sh -c "'${metadata_tool}' migrate --target-host http://127.0.0.1:9; echo \"exit $?\"")
set_tests_properties(apps:metadata-migrate-no-repository PROPERTIES
  PASS_REGULAR_EXPRESSION "the snapshot repository is missing.*exit 64")

# Without --snapshot-name, the newest snapshot (OpenSearch lists it first).
rfs_add_metadata_cli_test(metadata-newest-snapshot-os2
  "evaluate\\) of snapshot snapshot_v2 "
  snapshot-matrix-es1-es9-os1-os3/os2_nocomp
  "\"$TOOL\" evaluate --snapshot-local-dir \"$REPO\"")

add_test(NAME apps:metadata-missing-repository
  COMMAND sh -c "'${metadata_tool}' evaluate --snapshot-local-dir '${CMAKE_CURRENT_BINARY_DIR}/no-such-repo'; echo \"exit $?\"")
set_tests_properties(apps:metadata-missing-repository PROPERTIES
  PASS_REGULAR_EXPRESSION "snapshot repository folder not found.*exit 5")

# Offline evaluate: one JSON document naming each index with the outcome migrate would have.
rfs_add_metadata_cli_test(metadata-evaluate-json
  "\"kind\":\"index\",\"name\":\"posts_2024_01_01\",\"source_name\":\"posts_2024_01_01\",\"outcome\":\"would_create\".*\"ok\":true}[\r\n]+exit 0"
  es-snapshots/ES_6_8_Single
  "\"$TOOL\" evaluate --snapshot-local-dir \"$REPO\" --output json; echo \"exit $?\"")

# Human-readable evaluate of an ES 5 repository through --repo-uri: the `doc` type goes, and
# X-Pack's own templates (security-index-template, security_audit_log) are skipped.
rfs_add_metadata_cli_test(metadata-evaluate-text-es5
  "simple_index +would_create.*mapping type \\[doc\\] removed.*Summary: 0 created, 1 would create"
  snapshot-matrix-es1-es9-os1-os3/es5_nocomp
  "\"$TOOL\" evaluate --repo-uri \"file://$REPO\"")

# The directory target: migrate writes the items, a second run finds them.
rfs_add_metadata_cli_test(metadata-migrate-output-dir
  "first 0 second 0 .*\"properties\":.\"value\":.\"type\":\"integer\".*Summary: 0 created, 0 would create, 1 already exist"
  snapshot-matrix-es1-es9-os1-os3/es5_nocomp
  "\"$TOOL\" migrate --snapshot-local-dir \"$REPO\" --output-dir \"$OUT\" >/dev/null; a=$?; \"$TOOL\" evaluate --snapshot-local-dir \"$REPO\" --output-dir \"$OUT\" > \"$OUT.txt\"; b=$?; echo \"first $a second $b \"; cat \"$OUT/.rfs/metadata/index/simple_index.json\"; echo; cat \"$OUT.txt\"")

# Allowlists from the environment (RFS_INDEX_ALLOWLIST) select nothing here.
rfs_add_metadata_cli_test(metadata-allowlist-env
  "posts_2023_02_25 +skipped_by_allowlist.*posts_2024_01_01 +skipped_by_allowlist"
  es-snapshots/ES_7_10_Single
  "RFS_INDEX_ALLOWLIST=other \"$TOOL\" evaluate --snapshot-local-dir \"$REPO\"")
