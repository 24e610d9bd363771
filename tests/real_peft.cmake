# ----------------------------------------------------------------------------------------------
# (named real_peft.cmake so that it is included after real.cmake, whose runner and venv it uses)
# `fgemma convert` of PEFT LoRA adapters (docs/LORA.md "Converting a PEFT adapter"):
#   test_convert_peft   the C test (tests/test_convert_peft.c): names, config, refusals, bytes, and
#                       PEFT's own adapters of tests/data/peft against PEFT's logits (merged into the
#                       base, fgemma's reference forward)
#   oracle_peft_gguf    the converted files read back by the gguf package (.cache/venv-oracle, gguf
#                       0.19.0): keys and their types, names, shapes, and every tensor's bytes against
#                       numpy's float16 and gguf.quants' BF16 / Q8_0 encodings of the source
#                       (tests/oracle/peft_gguf.py); fails with the setup hint when the venv is missing
set_tests_properties(test_convert_peft PROPERTIES LABELS convert)
add_test(NAME oracle_peft_gguf
  COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_PY}" "-DWHAT=the gguf package oracle needs it."
          -P ${FG_REAL_RUN_SCRIPT} --
          ${FG_REAL_PY} ${PROJECT_SOURCE_DIR}/tests/oracle/peft_gguf.py --fgemma $<TARGET_FILE:fgemma>
          --work ${CMAKE_CURRENT_BINARY_DIR}/peft-gguf --fixtures ${PROJECT_SOURCE_DIR}/tests/data/peft)
set_tests_properties(oracle_peft_gguf PROPERTIES LABELS "dequant;oracle;convert" TIMEOUT 300)
