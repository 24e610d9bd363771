# ----------------------------------------------------------------------------------------------
# tv-270m (issue 26, docs/TV-270M.md): the real google/gemma-3-270m Q4_K_M (scripts/setup.sh) with the
# committed LoRA adapter models/tv-270m-lora.gguf, trained on the accelerator machine
# (training/train_lora.py). Registered whenever the gates are (FG_TV_MINI_GATES, as scripts/test.sh
# configures); a missing base or adapter fails the tests with the way to get it.
#   tv270m_q4_0     fixture: the base re-typed to llama-quantize's Q4_0 mix (`fgemma convert --type
#                   q4_0`: every matrix Q4_0, searched fit; the tied embedding Q8_0, its rows of 640
#                   not being a multiple of 256)
#   tv270m_dev      the call-accuracy gates on training/tv270m-dev.jsonl (tests/tv270m/gates.cmake)
#   tv270m_demo     the 12 demo utterances, call-only: all exact
#   oracle_tv270m_parity  fgemma's answers equal llama.cpp's with --lora (every 4th dev utterance)
set(FG_TV270M_ADAPTER ${PROJECT_SOURCE_DIR}/models/tv-270m-lora.gguf CACHE FILEPATH "the tv-270m LoRA adapter")
# the dev gate's floor in percent (issue 26; measured 99.0 %: docs/TV-270M.md)
set(FG_TV270M_MIN_EXACT 98 CACHE STRING "tv270m_dev: least exact-match percentage")
# how many points Q4_0 + adapter may lose against the Q4_K_M base: the issue's 2 (measured 1.7 on the
# whole dev set, docs/TV-270M.md)
set(FG_TV270M_THREADS 2 CACHE STRING "threads of the tv-270m gates")
# the kernel table of the gates' runs: AVX2, which every x86 CI machine has, so that the counts do not
# move with the machine (the AVX-512 attention sums its softmax in another order, so its logits may
# differ from AVX2's in the last bits and an answer at a near-tie can flip; the Q4_0 gate has no
# answer to spare)
set(FG_TV270M_ISA avx2 CACHE STRING "FG_ISA of the tv-270m gates (empty: the dispatcher's choice)")
# the home adapter's dev gate: the issue asks 97 %; the shipped adapter measures 97.3 % unconstrained and
# call-or-text (362 of 372) and 97.4 % call-only on the call lines (331 of 340; models/home/README.md), one
# line to spare in each mode on the AVX2 table that the gates run (bit for bit the same on every x86 CPU);
# its hand-written probe: 44 of 47 (the issue's hidden set asks 42)
set(FG_HOME270M_MIN_EXACT 97 CACHE STRING "home270m_dev: least exact-match percentage")
set(FG_HOME270M_PROBE_MIN 42 CACHE STRING "home270m_dev: least exact answers of models/home/probe.jsonl")
set(FG_TV270M_Q4_0_POINTS 2 CACHE STRING "tv270m_dev: largest exact-match drop of Q4_0 + adapter, in points")
if(FG_TV_MINI_GATES AND NOT CMAKE_CROSSCOMPILING)
  set(tv270m_q4_0 ${FG_TEST_MODELS}/real-gemma-3-270m-q4_0.gguf)
  add_test(NAME tv270m_q4_0
    COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}" "-DWHAT=tv-270m's Q4_0 base is made from it."
            -P ${FG_REAL_RUN_SCRIPT} -- $<TARGET_FILE:fgemma> convert ${FG_REAL_MODEL} -o ${tv270m_q4_0} --type q4_0)
  set_tests_properties(tv270m_q4_0 PROPERTIES FIXTURES_SETUP tv270m_q4_0 LABELS "tv270m;real" TIMEOUT 600 COST 900)
  set(tv270m_args -DFGEMMA=$<TARGET_FILE:fgemma> -DTOOLS=${PROJECT_SOURCE_DIR}/tests/data/nlu/tv-catalog.json
    -DBASE=${FG_REAL_MODEL} -DBASE_Q4_0=${tv270m_q4_0} -DADAPTER=${FG_TV270M_ADAPTER}
    -DMIN_EXACT=${FG_TV270M_MIN_EXACT} -DQ4_0_POINTS=${FG_TV270M_Q4_0_POINTS} -DOUT=${CMAKE_BINARY_DIR}/tv270m -DTHREADS=${FG_TV270M_THREADS} "-DISA=${FG_TV270M_ISA}")
  add_test(NAME tv270m_dev COMMAND ${CMAKE_COMMAND} ${tv270m_args} -DGATE=dev
    -DDATA=${PROJECT_SOURCE_DIR}/training/tv270m-dev.jsonl -P ${CMAKE_CURRENT_SOURCE_DIR}/tv270m/gates.cmake)
  add_test(NAME tv270m_demo COMMAND ${CMAKE_COMMAND} ${tv270m_args} -DGATE=demo
    -DDATA=${CMAKE_CURRENT_SOURCE_DIR}/tvmini/utterances-de.expected.jsonl -P ${CMAKE_CURRENT_SOURCE_DIR}/tv270m/gates.cmake)
  set_tests_properties(tv270m_dev tv270m_demo PROPERTIES LABELS "tv270m;real" TIMEOUT 2400)
  set_tests_properties(tv270m_dev PROPERTIES FIXTURES_REQUIRED tv270m_q4_0 COST 600)
  # near-ties: llama.cpp's log-probability gap at the first differing step within FG_REAL_TIE_TOL (the
  # two engines round the K-quant products' activations differently: docs/ORACLES.md "The real model")
  add_test(NAME oracle_tv270m_parity
    COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}|${FG_TV270M_ADAPTER}|${FG_ORACLE_DIR}/node_modules/node-llama-cpp"
            "-DWHAT=tv-270m needs the real base and the adapter." -P ${FG_REAL_RUN_SCRIPT} --
            ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/calls_parity.mjs --fgemma $<TARGET_FILE:fgemma> --model ${FG_REAL_MODEL}
            --lora ${FG_TV270M_ADAPTER} --tools ${PROJECT_SOURCE_DIR}/tests/data/nlu/tv-catalog.json
            --data ${PROJECT_SOURCE_DIR}/training/tv270m-dev.jsonl --threads 1 --max-tokens 48 --every 4
            --min-calls 60 --tie-tol ${FG_REAL_TIE_TOL})
  set_tests_properties(oracle_tv270m_parity PROPERTIES LABELS "oracle;tv270m;real" TIMEOUT 1800 COST 400)

  # home-270m (issue 37, models/home/README.md): the same base with models/home/home-270m-lora.gguf, which
  # `fgemma tune` made from models/home/home.tune.json; its dev set is the tune data stage's
  #   home270m_dev          the gates of GATE=tune (tests/tv270m/gates.cmake) on models/home/dev.jsonl
  #   oracle_home270m_parity fgemma's answers equal llama.cpp's with --lora (every 3rd dev utterance)
  set(home ${PROJECT_SOURCE_DIR}/models/home)
  add_test(NAME home270m_dev COMMAND ${CMAKE_COMMAND} -DFGEMMA=$<TARGET_FILE:fgemma> -DTOOLS=${home}/home-catalog.json
    -DBASE=${FG_REAL_MODEL} -DADAPTER=${home}/home-270m-lora.gguf -DMIN_EXACT=${FG_HOME270M_MIN_EXACT}
    -DOUT=${CMAKE_BINARY_DIR}/home270m -DTHREADS=${FG_TV270M_THREADS} "-DISA=${FG_TV270M_ISA}" -DGATE=tune
    -DDATA=${home}/dev.jsonl -DPROBE=${home}/probe.jsonl -DPROBE_MIN=${FG_HOME270M_PROBE_MIN}
    -P ${CMAKE_CURRENT_SOURCE_DIR}/tv270m/gates.cmake)
  set_tests_properties(home270m_dev PROPERTIES LABELS "tv270m;real" TIMEOUT 2400 COST 500)
  add_test(NAME oracle_home270m_parity
    COMMAND ${CMAKE_COMMAND} "-DREQUIRE=${FG_REAL_MODEL}|${home}/home-270m-lora.gguf|${FG_ORACLE_DIR}/node_modules/node-llama-cpp"
            "-DWHAT=home-270m needs the real base and the adapter." -P ${FG_REAL_RUN_SCRIPT} --
            ${FG_ORACLE_RUN} ${FG_ORACLE_DIR}/calls_parity.mjs --fgemma $<TARGET_FILE:fgemma> --model ${FG_REAL_MODEL}
            --lora ${home}/home-270m-lora.gguf --tools ${home}/home-catalog.json
            --data ${home}/dev.jsonl --threads 1 --max-tokens 48 --every 3
            --min-calls 80 --tie-tol ${FG_REAL_TIE_TOL})
  set_tests_properties(oracle_home270m_parity PROPERTIES LABELS "oracle;tv270m;real" TIMEOUT 1800 COST 400)
endif()
