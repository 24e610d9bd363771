# ----------------------------------------------------------------------------------------------
# Issue 19 (docs/RELIABILITY.md, "UTF-8 out"): every JSON line the CLI prints is valid UTF-8, read
# back by Python's strict decoder (tests/utf8_emitters.py). Its model, a tiny real-vocabulary model
# that generates byte-fallback tokens splitting characters, is written by test_utf8 (fixture
# utf8_chain). Label "oracle": it drives the host CLI from Python, so the emulated ARM runs leave it out.
find_program(FG_PYTHON3 python3)
set_tests_properties(test_utf8 PROPERTIES FIXTURES_SETUP utf8_chain)
if(FG_PYTHON3)
  add_test(NAME utf8_emitters
    COMMAND ${FG_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/utf8_emitters.py --fgemma $<TARGET_FILE:fgemma>
            --model ${FG_TEST_MODELS}/chain-utf8.gguf --catalog ${PROJECT_SOURCE_DIR}/examples/tv-catalog.json)
else()
  add_test(NAME utf8_emitters COMMAND ${CMAKE_COMMAND} -E echo "python3 not found: run scripts/setup.sh")
  set_tests_properties(utf8_emitters PROPERTIES WILL_FAIL ON) # never a silent pass
endif()
set_tests_properties(utf8_emitters PROPERTIES FIXTURES_REQUIRED utf8_chain LABELS oracle TIMEOUT 600)
