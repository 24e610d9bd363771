# make_models.cmake — the convert fixture (cmake -P; registered by tests/convert.cmake): for every case
# of tests/data/hf_goldens.json, the Hugging Face checkpoint (`fgemma gen-model ... --format hf`,
# written once into FG_TEST_MODELS/hf-<case>; test_convert checks its SHA-256 against what HF saw)
# and its conversion by the CLI to each of the five types (FG_TEST_MODELS/hf-<case>-<type>.gguf,
# rewritten every run: convert writes a temporary file and renames it, so build trees sharing the
# folder never see a partial file).
#
#   cmake -DFGEMMA=<bin> -DGOLDENS=<hf_goldens.json> -DMODELS=<dir> -DVOCAB=<tokenizer.json> -P make_models.cmake
foreach(v FGEMMA GOLDENS MODELS VOCAB)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "make_models.cmake: -D${v}=... is required")
  endif()
endforeach()
file(READ ${GOLDENS} json)
string(JSON n_cases LENGTH "${json}" cases)
math(EXPR last "${n_cases} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" cases ${i} name)
  string(JSON real_vocab GET "${json}" cases ${i} real_vocab)
  string(JSON n_opts LENGTH "${json}" cases ${i} gen_model)
  math(EXPR last_opt "${n_opts} - 1")
  set(opts)
  foreach(k RANGE ${last_opt})
    string(JSON o GET "${json}" cases ${i} gen_model ${k})
    list(APPEND opts ${o})
  endforeach()
  if(real_vocab)
    if(NOT EXISTS ${VOCAB})
      message(FATAL_ERROR "${VOCAB} is missing: run scripts/setup.sh (it installs the test oracles)")
    endif()
    list(APPEND opts --vocab ${VOCAB})
  endif()
  set(dir ${MODELS}/hf-${name})
  if(NOT EXISTS ${dir})
    execute_process(COMMAND ${FGEMMA} gen-model ${opts} --format hf -o ${dir} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 AND NOT EXISTS ${dir}) # a concurrent run may have made it meanwhile
      message(FATAL_ERROR "fgemma gen-model ${opts} --format hf -o ${dir} failed (${rc})")
    endif()
  endif()
  # --pure: every matrix of the type, q4_0's tied head too (llama.cpp's reference quantizers)
  foreach(type f32 f16 bf16 q8_0 q4_0)
    execute_process(COMMAND ${FGEMMA} convert ${dir} -o ${MODELS}/hf-${name}-${type}.gguf --type ${type} --pure
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "fgemma convert ${dir} --type ${type} failed (${rc})")
    endif()
  endforeach()
endforeach()
message(STATUS "converted ${n_cases} checkpoints to f32 f16 bf16 q8_0 q4_0 in ${MODELS}")
