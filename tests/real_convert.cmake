# ----------------------------------------------------------------------------------------------
# `fgemma convert --type q4_k_m` on the real google/gemma-3-270m Q4_K_M (FG_REAL_MODEL, label real):
# the file dequantized to F32 and quantized again must get the published file's tensor types, tensor
# for tensor, and its general.file_type (llama-quantize's Q4_K_M rules for Gemma 3: Q5_0/Q8_0
# fallbacks for the 640-wide rows, attn_v/ffn_down bumps by layer); the file re-typed to its own mix
# directly must be its tensors byte for byte (nothing re-quantized). Without the file the test fails
# and says so (scripts/setup.sh fetches it), it is never skipped.
find_program(PYTHON3 python3)
add_test(NAME real_convert_q4_k_m
  COMMAND ${CMAKE_COMMAND} -DPYTHON=${PYTHON3} -DFGEMMA=$<TARGET_FILE:fgemma> -DREAL=${FG_REAL_MODEL}
          -DWORK=${CMAKE_CURRENT_BINARY_DIR} -DTOOLS=${PROJECT_SOURCE_DIR}/tests/tools
          -P ${PROJECT_SOURCE_DIR}/tests/tools/real_convert_run.cmake)
set_tests_properties(real_convert_q4_k_m PROPERTIES LABELS real TIMEOUT 900 COST 60)
