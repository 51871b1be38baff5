# CreateSnapshot: help, usage errors (exit 64) and real runs against the opensearch-double binary
# (test/apps/create_snapshot_run.sh starts it on an ephemeral port and checks the tool's exit
# code and output).
if(NOT TARGET CreateSnapshot OR NOT TARGET opensearch-double)
  return()
endif()

rfs_add_exit_test(create-snapshot-help 0
  "--file-system-repo-path.*--s3-repo-uri.*--source-host.*--index-allowlist.*--no-wait"
  $<TARGET_FILE:CreateSnapshot> --help)

# rfs_add_create_snapshot_usage_test(<name> <stderr regex> <args>...): exit code 64 and the message.
function(rfs_add_create_snapshot_usage_test name pass)
  string(REPLACE ";" " " args "${ARGN}")
  add_test(NAME apps:create-snapshot-usage-${name}
    COMMAND sh -c "'$<TARGET_FILE:CreateSnapshot>' ${args} 2>&1; echo \"exit=$?\"")
  set_tests_properties(apps:create-snapshot-usage-${name} PROPERTIES
    PASS_REGULAR_EXPRESSION "${pass}.*exit=64")
endfunction()

rfs_add_create_snapshot_usage_test(no-name "--snapshot-name is required"
  --source-host http://127.0.0.1:9 --file-system-repo-path /x)
rfs_add_create_snapshot_usage_test(two-repos "give exactly one repository"
  --snapshot-name s --source-host http://127.0.0.1:9 --file-system-repo-path /x --s3-repo-uri s3://bucket-a)
rfs_add_create_snapshot_usage_test(no-repo "give exactly one repository"
  --snapshot-name s --source-host http://127.0.0.1:9)
rfs_add_create_snapshot_usage_test(s3-no-region "--s3-repo-uri needs --s3-region"
  --snapshot-name s --source-host http://127.0.0.1:9 --s3-repo-uri s3://bucket-a)
rfs_add_create_snapshot_usage_test(bad-s3-uri "must start with s3://"
  --snapshot-name s --source-host http://127.0.0.1:9 --s3-repo-uri bucket-a --s3-region r)
rfs_add_create_snapshot_usage_test(no-host "--source-host is required"
  --snapshot-name s --file-system-repo-path /x)
rfs_add_create_snapshot_usage_test(unknown-option "unrecognised option"
  --snapshot-name s --bogus)

foreach(scenario success s3-env no-wait failed partial missing-index existing-name unreachable)
  add_test(NAME apps:create-snapshot-run-${scenario}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/create_snapshot_run.sh
      $<TARGET_FILE:CreateSnapshot> $<TARGET_FILE:opensearch-double> ${scenario})
  set_tests_properties(apps:create-snapshot-run-${scenario} PROPERTIES
    PASS_REGULAR_EXPRESSION "PASS ${scenario}" FAIL_REGULAR_EXPRESSION "FAIL ${scenario}"
    TIMEOUT 60)
endforeach()
