# ----------------------------------------------------------------------------------------------
# A LoRA adapter on the real google/gemma-3-270m Q4_K_M against llama.cpp (docs/LORA.md): an F32
# adapter from `fgemma gen-lora` (rank 8, alpha 16, all seven targets, default magnitude 0.1, seed 3)
# at scale 1, the first 4 prompts of tests/data/real/prompts.jsonl, 32 greedy ids each, logits in the
# prompt and the continuation (real_parity.mjs --lora). Tolerances as real_parity's (real.cmake): both
# sides round activations to 8 bits for the quantized matrices; with the adapter the largest
# differences measured were 1.8 / 0.88 (prompt) and 2.6 / 0.90 (continuation), whole vocabulary / top
# 50, and the greedy differences were llama.cpp near-ties (gaps <= 0.06). ~25 s on 2 busy cores.
add_test(NAME real_gen_lora
  COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}|${FG_ORACLE_DIR}/node_modules/node-llama-cpp"
          "-DWHAT=${FG_REAL_MISSING_WHAT}" -P ${FG_REAL_RUN_SCRIPT} --
          ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/ensure_model.mjs --fgemma $<TARGET_FILE:fgemma> --command gen-lora
          --out ${FG_TEST_MODELS}/real-lora.gguf -- -m ${FG_REAL_MODEL} --seed 3)
set_tests_properties(real_gen_lora PROPERTIES FIXTURES_SETUP real_lora LABELS "real;oracle" TIMEOUT 300)
add_test(NAME real_lora_parity
  COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}|${FG_ORACLE_DIR}/node_modules/node-llama-cpp"
          "-DWHAT=${FG_REAL_MISSING_WHAT}" -P ${FG_REAL_RUN_SCRIPT} --
          ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/real_parity.mjs --fgemma $<TARGET_FILE:fgemma> --model ${FG_REAL_MODEL}
          --prompts ${FG_REAL_DATA}/prompts.jsonl --limit 4 --steps 32 --threads ${FG_REAL_THREADS}
          --tol ${FG_REAL_TOL} --tol-top ${FG_REAL_TOL_TOP} --tie-tol ${FG_REAL_TIE_TOL}
          --lora ${FG_TEST_MODELS}/real-lora.gguf)
set_tests_properties(real_lora_parity PROPERTIES FIXTURES_REQUIRED real_lora LABELS "real;oracle" TIMEOUT 600
  RUN_SERIAL TRUE)

# The vocabulary override on the real Gemma 3 base (ids 46..52 are <unused40>..<unused46> there): an
# adapter from `gen-lora --vocab-override` (one rank-1 pair, used at scale 0, so only the renaming acts)
# makes FunctionGemma's control tokens single ids for the tokenizer, and constrained decoding (which
# needs them) answers with a call; without the adapter `fgemma call --constrained` refuses the base.
add_test(NAME real_gen_lora_override
  COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}|${FG_ORACLE_DIR}/node_modules/node-llama-cpp"
          "-DWHAT=${FG_REAL_MISSING_WHAT}" -P ${FG_REAL_RUN_SCRIPT} --
          ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/ensure_model.mjs --fgemma $<TARGET_FILE:fgemma> --command gen-lora
          --out ${FG_TEST_MODELS}/real-lora-override.gguf -- -m ${FG_REAL_MODEL} --vocab-override --targets attn_q
          --rank 1)
set_tests_properties(real_gen_lora_override PROPERTIES FIXTURES_SETUP real_lora_override LABELS "real" TIMEOUT 300)
add_test(NAME real_lora_override_tokenize
  COMMAND $<TARGET_FILE:fgemma> tokenize -m ${FG_REAL_MODEL} --lora ${FG_TEST_MODELS}/real-lora-override.gguf:0
          "<start_function_call>call:open{x:<escape>a<escape>}<end_function_call>")
set_tests_properties(real_lora_override_tokenize PROPERTIES FIXTURES_REQUIRED real_lora_override LABELS "real"
  TIMEOUT 120 PASS_REGULAR_EXPRESSION "^48 [0-9 ]* 52 [0-9 ]* 52 [0-9 ]* 49")
add_test(NAME real_lora_override_call
  COMMAND $<TARGET_FILE:fgemma> call -m ${FG_REAL_MODEL} --lora ${FG_TEST_MODELS}/real-lora-override.gguf:0
          --tools ${PROJECT_SOURCE_DIR}/tests/data/nlu/tv-catalog-small.json --constrained call-only -t 2 "mach lauter")
set_tests_properties(real_lora_override_call PROPERTIES FIXTURES_REQUIRED real_lora_override LABELS "real"
  TIMEOUT 300 PASS_REGULAR_EXPRESSION "\"calls\":\\[\\{\"name\":\"[a-z_]+\"")

# A model view (fg_model_with_loras) on the real 270M with the committed tv-270m adapter (and its
# vocabulary override) against the base loaded with it: the same logits bit for bit, its own vocabulary,
# the base unchanged (tests/real/real_lora_view.c). About 2 s.
add_executable(real_lora_view ${CMAKE_CURRENT_SOURCE_DIR}/real/real_lora_view.c ${CMAKE_CURRENT_SOURCE_DIR}/testutil.c)
target_include_directories(real_lora_view PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(real_lora_view PRIVATE _FILE_OFFSET_BITS=64 _GNU_SOURCE
  FG_SOURCE_DIR="${PROJECT_SOURCE_DIR}" FG_TEST_MODELS="${FG_TEST_MODELS}" FG_SHARED_DATA="${PROJECT_SOURCE_DIR}/tests/data")
target_compile_options(real_lora_view PRIVATE ${FG_WARNINGS})
target_link_libraries(real_lora_view PRIVATE fgemma_static)
add_test(NAME real_lora_view COMMAND real_lora_view ${FG_REAL_MODEL} ${PROJECT_SOURCE_DIR}/models/tv-270m-lora.gguf)
set_tests_properties(real_lora_view PROPERTIES LABELS real TIMEOUT 300)
