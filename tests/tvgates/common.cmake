# tvgates/common.cmake — what the call-accuracy gate scripts share (tests/tvmini/gates.cmake,
# tests/tv270m/gates.cmake; included, run with `cmake -P`): `fgemma eval --calls` runs, gates,
# percentages and the report line. Expects FGEMMA, DATA, TOOLS, THREADS, OUT and GATE to be set;
# ISA, when set and not empty, pins fgemma's kernel table (FG_ISA) for every run.

# runs `fgemma eval --calls` on the models and modes; sets <prefix>_<i>_<field> for row i
# (EVAL_ARGS: further options of every run, e.g. --lora; ARGN: options of this run)
function(run_eval prefix models modes)
  set(env)
  if(DEFINED ISA AND NOT ISA STREQUAL "")
    set(env "${CMAKE_COMMAND}" -E env "FG_ISA=${ISA}")
  endif()
  execute_process(
    COMMAND ${env} "${FGEMMA}" eval --calls "${DATA}" --tools "${TOOLS}" -m "${models}" --constrained "${modes}"
            -t ${THREADS} --json --details "${OUT}/${GATE}-${prefix}-details.jsonl" ${EVAL_ARGS} ${ARGN}
    OUTPUT_VARIABLE json ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fgemma eval failed (${rc}): ${err}")
  endif()
  file(WRITE "${OUT}/${GATE}-${prefix}.json" "${json}")
  string(JSON n_rows LENGTH "${json}" rows)
  math(EXPR last "${n_rows} - 1")
  foreach(i RANGE ${last})
    foreach(f n n_expect_calls exact_n exact_calls_n function_n calls invalid_calls no_call_answers errors
              args_right args_total p50_ms p95_ms weights head constrained)
      string(JSON val GET "${json}" rows ${i} ${f})
      set(${prefix}_${i}_${f} "${val}" PARENT_SCOPE)
    endforeach()
    string(JSON tok GET "${json}" rows ${i} tokens)
    foreach(f decode full_head sparse_head forced)
      string(JSON val GET "${tok}" ${f})
      set(${prefix}_${i}_${f} "${val}" PARENT_SCOPE)
    endforeach()
  endforeach()
  set(${prefix}_rows ${n_rows} PARENT_SCOPE)
endfunction()

set(failures "")
# gate(A OP B WHAT): passes when the integer comparison A OP B holds (OP: GREATER_EQUAL, LESS_EQUAL, EQUAL)
macro(gate a op b what)
  if(${a} ${op} ${b})
    message(STATUS "ok    ${what}")
  else()
    message(STATUS "FAIL  ${what}")
    list(APPEND failures "${what}")
  endif()
endmacro()

# "12.3%" from count and total (integers)
function(pct out num den)
  if(den EQUAL 0)
    set(${out} "-" PARENT_SCOPE)
    return()
  endif()
  math(EXPR t "(${num} * 1000 + ${den} / 2) / ${den}")
  math(EXPR w "${t} / 10")
  math(EXPR f "${t} % 10")
  set(${out} "${w}.${f}%" PARENT_SCOPE)
endfunction()

function(report prefix i)
  set(p ${prefix}_${i})
  foreach(f p50_ms decode full_head sparse_head forced)  # one decimal
    string(REGEX REPLACE "^([0-9]+)(\\.[0-9])?.*$" "\\1\\2" ${p}_${f} "${${p}_${f}}")
  endforeach()
  pct(e ${${p}_exact_n} ${${p}_n})
  pct(c ${${p}_exact_calls_n} ${${p}_n_expect_calls})
  pct(fn ${${p}_function_n} ${${p}_n})
  pct(ar ${${p}_args_right} ${${p}_args_total})
  message(STATUS "${${p}_weights}/${${p}_head} ${${p}_constrained}: exact ${${p}_exact_n}/${${p}_n} (${e}), "
    "on calls ${c}, functions ${fn}, args ${ar}, invalid calls ${${p}_invalid_calls}/${${p}_calls}, "
    "p50 ${${p}_p50_ms} ms, tokens ${${p}_decode} = ${${p}_full_head} full + ${${p}_sparse_head} sparse + "
    "${${p}_forced} forced")
endfunction()

