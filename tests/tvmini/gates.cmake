# gates.cmake — the tv-mini call-accuracy gates (issue 16), run with `cmake -P` by tests/tvmini.cmake.
#
#   cmake -DFGEMMA=BIN -DTOOLS=CATALOG.json -DDATA=DATA.jsonl -DF32=M.gguf -DQ8_0=M.gguf -DQ4_0=M.gguf
#         -DOUT=DIR -DGATE=dev|demo [-DTHREADS=N] -P gates.cmake
#
# GATE=dev (training/tv-dev.jsonl, phrasings never seen in training):
#   - exact match >= 95 % for F32 and Q8_0 (unconstrained greedy decoding), Q4_0 within 3 points of F32;
#   - constrained decoding never below unconstrained: call-only on the utterances that expect a call
#     (call-only cannot answer in prose), call-or-text on all of them;
#   - every constrained answer is a valid call: no call flagged by the parser in any constrained row,
#     and every call-only answer holds a call; no utterance refused.
# GATE=demo (tests/tvmini/utterances-de.expected.jsonl, the 12 demo utterances with the reasons
#   for their calls): all 12 exact with call-only decoding (the demo's mode) on F32 and Q8_0.
# A missing model file fails the test with the way to make it (docs/TV-MINI.md); it never skips.
# The full `fgemma eval` output (table and --details JSONL) is kept in OUT for inspection.

foreach(v FGEMMA TOOLS DATA F32 Q8_0 Q4_0 OUT GATE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "gates.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED THREADS)
  set(THREADS 2)
endif()
foreach(m F32 Q8_0 Q4_0)
  if(NOT EXISTS "${${m}}")
    message(FATAL_ERROR "tv-mini model missing: ${${m}}\n"
      "The gates need tv-mini in F32, Q8_0 and Q4_0 (docs/TV-MINI.md, \"Files\"). Point FG_TV_MINI_DIR at "
      "the directory that holds tv-mini-f32.gguf, tv-mini-q8_0.gguf and tv-mini-q4_0.gguf, or configure with "
      "-DFG_TV_MINI_GATES=OFF where the model is not built.")
  endif()
endforeach()
file(MAKE_DIRECTORY "${OUT}")

include(${CMAKE_CURRENT_LIST_DIR}/../tvgates/common.cmake)

if(GATE STREQUAL "dev")
  # F32: all three modes; Q8_0: off and call-only; Q4_0: off (the full 262,144-row head dominates the
  # unconstrained rows' time, so fewer rows keep the gate within a few minutes)
  run_eval(f32 "${F32}" "off,call-only,call-or-text")
  run_eval(q8 "${Q8_0}" "off,call-only")
  run_eval(q4 "${Q4_0}" "off")
  foreach(r f32_0 f32_1 f32_2 q8_0 q8_1 q4_0)
    string(REGEX REPLACE "_([0-9])$" ";\\1" pr "${r}")
    list(GET pr 0 pf)
    list(GET pr 1 ix)
    report(${pf} ${ix})
  endforeach()
  set(n ${f32_0_n})
  math(EXPR need "(95 * ${n} + 99) / 100")
  gate(${f32_0_exact_n} GREATER_EQUAL ${need} "F32 exact ${f32_0_exact_n}/${n} >= 95 % (${need})")
  gate(${q8_0_exact_n} GREATER_EQUAL ${need} "Q8_0 exact ${q8_0_exact_n}/${n} >= 95 % (${need})")
  math(EXPR drop "(${f32_0_exact_n} - ${q4_0_exact_n}) * 100")
  math(EXPR allowed "3 * ${n}")
  gate(${drop} LESS_EQUAL ${allowed} "Q4_0 exact ${q4_0_exact_n}/${n} within 3 points of F32 (${f32_0_exact_n}/${n})")
  foreach(pf f32 q8)
    gate(${${pf}_1_exact_calls_n} GREATER_EQUAL ${${pf}_0_exact_calls_n}
      "${${pf}_0_weights} call-only ${${pf}_1_exact_calls_n} >= unconstrained ${${pf}_0_exact_calls_n} on the ${${pf}_0_n_expect_calls} utterances that expect a call")
    math(EXPR bad "${${pf}_1_invalid_calls} + ${${pf}_1_no_call_answers}")
    gate(${bad} EQUAL 0
      "${${pf}_0_weights} call-only: every answer a valid call (${${pf}_1_invalid_calls} invalid, ${${pf}_1_no_call_answers} without a call)")
  endforeach()
  gate(${f32_2_exact_n} GREATER_EQUAL ${f32_0_exact_n} "F32 call-or-text ${f32_2_exact_n} >= unconstrained ${f32_0_exact_n}")
  gate(${f32_2_invalid_calls} EQUAL 0 "F32 call-or-text: no invalid call (${f32_2_invalid_calls})")
  foreach(r f32_0 f32_1 f32_2 q8_0 q8_1 q4_0)
    gate(${${r}_errors} EQUAL 0 "${r}: no utterance refused (${${r}_errors})")
  endforeach()
elseif(GATE STREQUAL "demo")
  run_eval(d "${F32},${Q8_0}" "call-only,off")
  foreach(i 0 1 2 3)
    report(d ${i})
  endforeach()
  gate(${d_0_exact_n} EQUAL 12 "F32 call-only: ${d_0_exact_n} of 12 demo utterances give the intended call")
  gate(${d_2_exact_n} EQUAL 12 "Q8_0 call-only: ${d_2_exact_n} of 12 demo utterances give the intended call")
  message(STATUS "(unconstrained, reported only: F32 ${d_1_exact_n}/12, Q8_0 ${d_3_exact_n}/12; answers in ${OUT}/${GATE}-d-details.jsonl)")
else()
  message(FATAL_ERROR "GATE must be dev or demo, not '${GATE}'")
endif()

if(failures)
  list(LENGTH failures nf)
  message(FATAL_ERROR "${nf} tv-mini gate(s) failed (details in ${OUT})")
endif()
