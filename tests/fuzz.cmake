# Fuzz corpora replayed as ordinary tests (tests/fuzz/regression_driver.c): one executable per fuzz
# target, fed every file of tests/fuzz/corpus/<name>/. The libFuzzer builds themselves are made by
# scripts/fuzz.sh with clang (-fsanitize=fuzzer); these replays run with any compiler, and under
# ASan/UBSan in the sanitizer pass of scripts/test.sh.
file(GLOB FG_FUZZ_TARGETS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
foreach(src ${FG_FUZZ_TARGETS})
  get_filename_component(name ${src} NAME_WE)
  string(REPLACE "fuzz_" "" corpus ${name})
  add_executable(replay_${corpus} ${src} ${PROJECT_SOURCE_DIR}/tests/fuzz/regression_driver.c)
  target_include_directories(replay_${corpus} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(replay_${corpus} PRIVATE _FILE_OFFSET_BITS=64 _GNU_SOURCE)
  target_link_libraries(replay_${corpus} PRIVATE fgemma_static)
  add_test(NAME fuzz_replay_${corpus} COMMAND replay_${corpus} ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${corpus})
  set_tests_properties(fuzz_replay_${corpus} PROPERTIES LABELS fuzz TIMEOUT 600)
endforeach()
