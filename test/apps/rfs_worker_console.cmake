# RfsWorker and MigrationConsole: --help documents the phases, exit codes and commands; bad
# options are usage errors (64).
if(TARGET RfsWorker)
  rfs_add_exit_test(rfs-worker-help 0
    "1 snapshot.*2 metadata.*3 indices.*4 documents.*5 verify.*Exit codes: 0 every phase COMPLETED.*--source-host.*--max-attempts.*--verify-only"
    $<TARGET_FILE:RfsWorker> --help)
  add_test(NAME apps:rfs-worker-usage-errors
    COMMAND sh -c "t='$<TARGET_FILE:RfsWorker>'; \"$t\"; a=$?; \"$t\" --snapshot-local-dir /x; b=$?; \"$t\" --snapshot-local-dir /x --output-dir /tmp/rfs-x --max-attempts 0; c=$?; \"$t\" --snapshot-local-dir /x --output-dir /tmp/rfs-x --phase-lease-duration 5m; d=$?; \"$t\" --snapshot-local-dir /x --output-dir /tmp/rfs-x --verify-only --skip-verify; e=$?; \"$t\" --snapshot-local-dir /x --output-dir /tmp/rfs-x --no-such-option; f=$?; echo \"codes $a $b $c $d $e $f\"")
  set_tests_properties(apps:rfs-worker-usage-errors PROPERTIES
    PASS_REGULAR_EXPRESSION "codes 64 64 64 64 64 64")
endif()
if(TARGET MigrationConsole)
  rfs_add_exit_test(console-help 0
    "serve --port P.*create-session.*status --url.*RFS_CONSOLE_ADMIN_TOKEN.*--store"
    $<TARGET_FILE:MigrationConsole> --help)
  add_test(NAME apps:console-usage-errors
    COMMAND sh -c "t='$<TARGET_FILE:MigrationConsole>'; \"$t\"; a=$?; \"$t\" frobnicate; b=$?; \"$t\" status --url http://127.0.0.1:1; c=$?; \"$t\" serve --store mysql://x --admin-token 0123456789abcdef0 --port 0; d=$?; \"$t\" serve --port 0 --store sqlite:/tmp/rfs-console-usage.db; e=$?; \"$t\" create-session --url http://127.0.0.1:1 --name x; f=$?; echo \"codes $a $b $c $d $e $f\"")
  set_tests_properties(apps:console-usage-errors PROPERTIES
    ENVIRONMENT "RFS_CONSOLE_ADMIN_TOKEN=;RFS_CONSOLE_TOKEN="
    PASS_REGULAR_EXPRESSION "codes 64 64 64 64 64 64")
endif()
