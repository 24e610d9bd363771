# ----------------------------------------------------------------------------------------------
# The session contract and the F16 KV cache on the real google/gemma-3-270m Q4_K_M
# (tests/real/real_session.c). The file comes from scripts/setup.sh (FG_REAL_MODEL); without it the
# test fails and says so, it is never skipped.
add_executable(real_session ${CMAKE_CURRENT_SOURCE_DIR}/real/real_session.c ${CMAKE_CURRENT_SOURCE_DIR}/testutil.c)
target_include_directories(real_session PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(real_session PRIVATE _FILE_OFFSET_BITS=64 _GNU_SOURCE
  FG_SOURCE_DIR="${PROJECT_SOURCE_DIR}" FG_TEST_MODELS="${FG_TEST_MODELS}" FG_SHARED_DATA="${PROJECT_SOURCE_DIR}/tests/data")
target_compile_options(real_session PRIVATE ${FG_WARNINGS})
target_link_libraries(real_session PRIVATE fgemma_static)
add_test(NAME real_session COMMAND real_session ${FG_REAL_MODEL} ${PROJECT_SOURCE_DIR}/tests/data/real/gpl-3.0.txt)
set_tests_properties(real_session PROPERTIES LABELS real TIMEOUT 900 COST 60)
