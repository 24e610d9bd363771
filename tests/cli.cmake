# ----------------------------------------------------------------------------------------------
# test_cli drives the fgemma binary as a process (tokenize --jsonl, eval --calls). It needs the
# binary's path and is registered for native builds only: under qemu-user the test would have to
# start a second emulated process (the ARM builds test the library through the other executables).
if(CMAKE_CROSSCOMPILING)
  set_tests_properties(test_cli PROPERTIES DISABLED TRUE)
endif()
target_compile_definitions(test_cli PRIVATE FG_CLI_BIN="$<TARGET_FILE:fgemma>")
add_dependencies(test_cli fgemma)
