# ----------------------------------------------------------------------------------------------
# LoRA adapters against llama.cpp (docs/LORA.md): the small preset in F32 (width 128, 4 heads of 256,
# window 512, the real 262,144-token vocabulary size) with an F32 adapter from `fgemma gen-lora`
# (rank 8, alpha 16, all seven targets, default magnitude, seed 7), applied at scale 1 and 0.5 by
# fgemma (--lora FILE:SCALE) and by llama.cpp (its context option lora.adapters). The prompt is
# parity.mjs's <bos> + 39 ids of seed 11; logits after positions 0, 7, 17, 24, 39 and 32 greedy ids,
# on the session path and on --reference.
# Tolerances (centred logits, whole vocabulary / top 50): measured at most 3.6e-2 / 2.0e-2 over both
# scales and both paths (the F32 floor of the comparison: ggml computes GELU through an fp16 table, see
# oracle.cmake); 0.08 / 0.06 is 2.2x / 3x that, as for the tiny F32 model. The adapter changes the
# greedy ids from the first step (checked by test_lora on the tiny preset), so 32 identical greedy
# ids are a real check of the adapted model.
fg_oracle_model(small_f32 oracle-small-f32.gguf --preset small --type f32 --seed 1)
add_test(NAME oracle_gen_lora_small_f32
  COMMAND ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/ensure_model.mjs --fgemma $<TARGET_FILE:fgemma> --command gen-lora
          --out ${FG_ORACLE_MODELS}/oracle-small-f32-lora.gguf -- -m ${FG_ORACLE_MODELS}/oracle-small-f32.gguf --seed 7)
set_tests_properties(oracle_gen_lora_small_f32 PROPERTIES
  FIXTURES_SETUP oracle_lora_small_f32 FIXTURES_REQUIRED oracle_small_f32 LABELS oracle TIMEOUT 300)
foreach(scale 1 0.5)
  foreach(path session reference)
    set(ref_opt)
    set(suffix)
    if(path STREQUAL "reference")
      set(ref_opt --reference)
      set(suffix _ref)
    endif()
    fg_oracle_test(lora_small_f32_s${scale}${suffix} lora_small_f32 600
      --mode logits,greedy --model ${FG_ORACLE_MODELS}/oracle-small-f32.gguf --seed 11 --n 40 --at "0 7 17 24 39"
      --steps 32 --tol 0.08 --tol-top 0.06 --tie-tol 0.1 --self-check 2
      --lora ${FG_ORACLE_MODELS}/oracle-small-f32-lora.gguf:${scale} ${ref_opt})
  endforeach()
endforeach()
