# ----------------------------------------------------------------------------------------------
# Quantization oracle (label "oracle"): llama.cpp's quantizer against fgemma on a synthetic model.
# A small-preset F32 model (6 layers, width 128, heads of 256, FFN 512: attn_output and ffn_down rows
# of 1024 and 512 values take the K-quants, the 128-wide rows their 32-block fallbacks, as on the real
# 270M's 640) is quantized into each type by llama_model_quantize (tests/tools/llama_quantize.py:
# node-llama-cpp's prebuilt libllama, the code of llama-quantize) and by `fgemma convert --type`; per
# type one test (tests/tools/oracle_quant_run.cmake) checks
#   - both files have the same tensor types, tensor by tensor, and the same general.file_type;
#   - fgemma's logits on llama.cpp's file after 8 one-token prompts are within the tolerances of
#     llama.cpp's (max |diff| over the vocabulary, over llama.cpp's top 50) with the same top-1;
#   - fgemma's 16 greedy ids after a 40-token prompt equal llama.cpp's, up to a near-tie of llama.cpp
#     (--tie-tol, at least twice llama.cpp's own difference with an f16 KV cache: --self-check 2).
# Tolerances: about 2x the largest difference measured (docs/ORACLES.md "Quantized types"); the
# differences come from llama.cpp rounding activations to 8 bits (Q8_K/Q8_0/Q8_1) where fgemma's
# q8 spec rounds them per 32 differently, amplified by the random model.
find_program(PYTHON3 python3)
if(NOT PYTHON3)
  set(PYTHON3 ${CMAKE_COMMAND} -E false)
endif()
fg_oracle_model(quant_small oracle-quant-small-f32.gguf --preset small --type f32 --seed 1)
#   type:first tol:first top-50 tol:greedy near-tie
set(FG_ORACLE_QUANT_TYPES
  q4_1:3.5:1.7:1.5
  q5_0:3.2:1.9:1.5
  q5_1:3.2:2.1:1.5
  q2_k:5:3:1.5
  q3_k_m:5.7:3.5:1.5
  q4_k_m:4.6:2.6:1.5
  q5_k_m:5.2:2.9:1.5
  q6_k:5.2:3.1:1.5
  iq4_nl:3.7:2.3:1.5
  iq4_xs:5.2:2.9:1.5)
foreach(entry ${FG_ORACLE_QUANT_TYPES})
  string(REPLACE ":" ";" spec "${entry}")
  list(GET spec 0 type)
  list(GET spec 1 first_tol)
  list(GET spec 2 first_top)
  list(GET spec 3 tie)
  add_test(NAME oracle_quant_${type}
    COMMAND ${CMAKE_COMMAND} -DPYTHON=${PYTHON3} -DNODE=${NODE} -DFGEMMA=$<TARGET_FILE:fgemma>
            -DSRC=${FG_ORACLE_MODELS}/oracle-quant-small-f32.gguf -DTYPE=${type} -DWORK=${CMAKE_CURRENT_BINARY_DIR}
            -DORACLE=${FG_ORACLE_DIR} -DTOOLS=${PROJECT_SOURCE_DIR}/tests/tools -DTHREADS=${FG_ORACLE_THREADS}
            -DFIRST_TOL=${first_tol} -DFIRST_TOP=${first_top} -DTIE=${tie}
            -P ${PROJECT_SOURCE_DIR}/tests/tools/oracle_quant_run.cmake)
  set_tests_properties(oracle_quant_${type} PROPERTIES FIXTURES_REQUIRED oracle_quant_small LABELS oracle TIMEOUT 600)
endforeach()
