# gates.cmake — the tv-270m call-accuracy gates (issue 26), run with `cmake -P` by tests/tv270m.cmake.
#
#   cmake -DFGEMMA=BIN -DTOOLS=CATALOG.json -DDATA=DATA.jsonl -DBASE=Q4_K_M.gguf -DBASE_Q4_0=Q4_0.gguf
#         -DADAPTER=LORA.gguf -DMIN_EXACT=PCT -DOUT=DIR -DGATE=dev|demo [-DTHREADS=N] -P gates.cmake
#
# tv-270m is google/gemma-3-270m (BASE, the real Q4_K_M) with the adapter models/tv-270m-lora.gguf.
# GATE=dev (training/tv270m-dev.jsonl: phrasings, and names, never used in training):
#   - the adapter at run time over BASE: unconstrained exact >= MIN_EXACT %, and call-only exact on the
#     utterances that expect a call >= MIN_EXACT % of them;
#   - the same merged at load into Q8_0 (--lora-merge q8_0), on every third utterance;
#   - BASE_Q4_0 (the real file re-typed to Q4_0 by `fgemma convert`) with the adapter at run time:
#     unconstrained on every utterance within Q4_0_POINTS points of the Q4_K_M base (default 2, the
#     issue's; CMake passes FG_TV270M_Q4_0_POINTS);
#   - call-only never below unconstrained on the utterances that expect a call, every call-only
#     answer a valid call, no invalid call unconstrained either, no utterance refused.
# GATE=tune (an adapter made by `fgemma tune`, e.g. models/home/: its committed dev set): the adapter at
#   run time, unconstrained, call-only and call-or-text: exact >= MIN_EXACT % (call-only on the
#   utterances that expect a call), call-only never below unconstrained, every call-only answer a valid
#   call, every call-or-text call valid, no utterance refused. BASE_Q4_0 is not used. With -DPROBE=JSONL
#   -DPROBE_MIN=N: a second set (models/home/probe.jsonl, written by hand apart from the spec) answered
#   call-or-text: at least N exact, every call valid.
# GATE=demo (tests/tvmini/utterances-de.expected.jsonl): the 12 demo utterances with call-only decoding,
#   as scripts/demo.sh answers them: all 12 exact.
# A missing file fails the test with the way to make it; it never skips.
foreach(v FGEMMA TOOLS DATA BASE ADAPTER MIN_EXACT OUT GATE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "gates.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED THREADS)
  set(THREADS 2)
endif()
if(NOT DEFINED Q4_0_POINTS)
  set(Q4_0_POINTS 2)
endif()
foreach(f BASE ADAPTER)
  if(NOT EXISTS "${${f}}")
    message(FATAL_ERROR "tv-270m: ${${f}} is missing. The base is the real google/gemma-3-270m Q4_K_M that "
      "scripts/setup.sh fetches into .cache/models; the adapters are committed as models/tv-270m-lora.gguf "
      "(docs/TV-270M.md) and models/home/home-270m-lora.gguf (models/home/README.md).")
  endif()
endforeach()
file(MAKE_DIRECTORY "${OUT}")
include(${CMAKE_CURRENT_LIST_DIR}/../tvgates/common.cmake)
set(EVAL_ARGS --lora "${ADAPTER}")

if(GATE STREQUAL "dev")
  if(NOT EXISTS "${BASE_Q4_0}")
    message(FATAL_ERROR "tv-270m: ${BASE_Q4_0} is missing (the fixture tv270m_q4_0 makes it from ${BASE})")
  endif()
  # the adapter at run time and the Q4_0 base on every dev utterance (a drop of 2 points is 6 answers
  # there); the merged Q8_0 on every third (99), to keep the gate within a few CI minutes (each answer
  # costs ~0.2 s on 2 cores)
  run_eval(rt "${BASE}" "off,call-only")
  run_eval(m8 "${BASE}" "off,call-only" --lora-merge q8_0 --every 3)
  run_eval(q4 "${BASE_Q4_0}" "off")
  foreach(r rt_0 rt_1 m8_0 m8_1 q4_0)
    string(REGEX REPLACE "_([0-9])$" ";\\1" pr "${r}")
    list(GET pr 0 pf)
    list(GET pr 1 ix)
    report(${pf} ${ix})
  endforeach()
  # unconstrained row u and call-only row c of the same utterances
  set(g_rt_u rt_0)
  set(g_rt_c rt_1)
  set(g_rt_c_u rt_0)
  set(g_m8_u m8_0)
  set(g_m8_c m8_1)
  set(g_m8_c_u m8_0)
  foreach(pf rt m8)
    if(pf STREQUAL "rt")
      set(what "Q4_K_M + adapter")
    else()
      set(what "merged Q8_0")
    endif()
    set(u ${g_${pf}_u})
    set(c ${g_${pf}_c})
    set(cu ${g_${pf}_c_u})
    math(EXPR need "(${MIN_EXACT} * ${${u}_n} + 99) / 100")
    math(EXPR need_c "(${MIN_EXACT} * ${${c}_n_expect_calls} + 99) / 100")
    gate(${${u}_exact_n} GREATER_EQUAL ${need} "${what} unconstrained exact ${${u}_exact_n}/${${u}_n} >= ${MIN_EXACT} % (${need})")
    gate(${${c}_exact_calls_n} GREATER_EQUAL ${need_c}
      "${what} call-only exact ${${c}_exact_calls_n}/${${c}_n_expect_calls} on the utterances that expect a call >= ${MIN_EXACT} % (${need_c})")
    gate(${${c}_exact_calls_n} GREATER_EQUAL ${${cu}_exact_calls_n}
      "${what} call-only ${${c}_exact_calls_n} >= unconstrained ${${cu}_exact_calls_n} on the ${${c}_n_expect_calls} utterances that expect a call")
    math(EXPR bad "${${c}_invalid_calls} + ${${c}_no_call_answers}")
    gate(${bad} EQUAL 0
      "${what} call-only: every answer a valid call (${${c}_invalid_calls} invalid, ${${c}_no_call_answers} without a call)")
    gate(${${u}_invalid_calls} EQUAL 0 "${what} unconstrained: no invalid call (${${u}_invalid_calls})")
  endforeach()
  # rates: 100 * rt / n_rt - 100 * q4 / n_q4 <= POINTS, in integers
  math(EXPR lhs "100 * ${rt_0_exact_n} * ${q4_0_n} - 100 * ${q4_0_exact_n} * ${rt_0_n}")
  math(EXPR rhs "${Q4_0_POINTS} * ${rt_0_n} * ${q4_0_n}")
  gate(${lhs} LESS_EQUAL ${rhs}
    "Q4_0 + adapter exact ${q4_0_exact_n}/${q4_0_n} within ${Q4_0_POINTS} points of Q4_K_M (${rt_0_exact_n}/${rt_0_n})")
  foreach(r rt_0 rt_1 m8_0 m8_1 q4_0)
    gate(${${r}_errors} EQUAL 0 "${r}: no utterance refused (${${r}_errors})")
  endforeach()
elseif(GATE STREQUAL "tune")
  # an adapter `fgemma tune` made (the home catalog, models/home): the adapter at run time over BASE,
  # unconstrained, call-only and call-or-text (the default) on every dev utterance
  run_eval(t "${BASE}" "off,call-only,call-or-text")
  foreach(i 0 1 2)
    report(t ${i})
  endforeach()
  math(EXPR need "(${MIN_EXACT} * ${t_0_n} + 99) / 100")
  math(EXPR need_c "(${MIN_EXACT} * ${t_1_n_expect_calls} + 99) / 100")
  gate(${t_0_exact_n} GREATER_EQUAL ${need} "unconstrained exact ${t_0_exact_n}/${t_0_n} >= ${MIN_EXACT} % (${need})")
  gate(${t_2_exact_n} GREATER_EQUAL ${need} "call-or-text exact ${t_2_exact_n}/${t_2_n} >= ${MIN_EXACT} % (${need})")
  gate(${t_1_exact_calls_n} GREATER_EQUAL ${need_c}
    "call-only exact ${t_1_exact_calls_n}/${t_1_n_expect_calls} on the utterances that expect a call >= ${MIN_EXACT} % (${need_c})")
  gate(${t_1_exact_calls_n} GREATER_EQUAL ${t_0_exact_calls_n}
    "call-only ${t_1_exact_calls_n} >= unconstrained ${t_0_exact_calls_n} on the ${t_1_n_expect_calls} utterances that expect a call")
  math(EXPR bad "${t_1_invalid_calls} + ${t_1_no_call_answers}")
  gate(${bad} EQUAL 0 "call-only: every answer a valid call (${t_1_invalid_calls} invalid, ${t_1_no_call_answers} without a call)")
  gate(${t_2_invalid_calls} EQUAL 0 "call-or-text: every call valid (${t_2_invalid_calls} invalid)")
  foreach(i 0 1 2)
    gate(${t_${i}_errors} EQUAL 0 "t_${i}: no utterance refused (${t_${i}_errors})")
  endforeach()
  if(DEFINED PROBE)
    # a hand-written set apart from the spec (names and phrasings no list or example has), call-or-text
    set(DATA "${PROBE}")
    run_eval(p "${BASE}" "call-or-text")
    report(p 0)
    gate(${p_0_exact_n} GREATER_EQUAL ${PROBE_MIN} "probe: call-or-text exact ${p_0_exact_n}/${p_0_n} >= ${PROBE_MIN}")
    gate(${p_0_invalid_calls} EQUAL 0 "probe: every call valid (${p_0_invalid_calls} invalid)")
    gate(${p_0_errors} EQUAL 0 "probe: no utterance refused (${p_0_errors})")
  endif()
elseif(GATE STREQUAL "demo")
  run_eval(d "${BASE}" "call-only,off")
  foreach(i 0 1)
    report(d ${i})
  endforeach()
  gate(${d_0_exact_n} EQUAL 12 "call-only: ${d_0_exact_n} of 12 demo utterances give the intended call")
  message(STATUS "(unconstrained, reported only: ${d_1_exact_n}/12; answers in ${OUT}/${GATE}-d-details.jsonl)")
else()
  message(FATAL_ERROR "GATE must be dev, tune or demo, not '${GATE}'")
endif()

if(failures)
  list(LENGTH failures nf)
  message(FATAL_ERROR "${nf} tv-270m gate(s) failed (details in ${OUT})")
endif()
