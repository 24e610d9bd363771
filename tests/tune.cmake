# ----------------------------------------------------------------------------------------------
# test_tune drives `fgemma tune` as a process (docs/TUNE.md): the spec's checks on tests/tune/bad_*.tune.json
# and the data stage on tests/data/tune/tv-small.tune.json with the tiny model of the real vocabulary.
# Native builds only, as test_cli (tests/cli.cmake).
if(CMAKE_CROSSCOMPILING)
  set_tests_properties(test_tune PROPERTIES DISABLED TRUE)
endif()
target_compile_definitions(test_tune PRIVATE FG_CLI_BIN="$<TARGET_FILE:fgemma>")
add_dependencies(test_tune fgemma)

# The data stage on the real google/gemma-3-270m (ids 46..52 renamed by DIR/control-tokens.gguf, an
# override-only adapter at scale 0): the files as with the tiny model, and the golden logits from the
# base's reference forward over 600 prompt tokens (about a minute on two cores).
add_test(NAME real_tune_data
  COMMAND $<TARGET_FILE:fgemma> tune ${PROJECT_SOURCE_DIR}/tests/data/tune/tv-small.tune.json --stage data
          -o ${CMAKE_BINARY_DIR}/tune-real-data --base ${FG_REAL_MODEL} -q)
set_tests_properties(real_tune_data PROPERTIES LABELS "real" TIMEOUT 600)
