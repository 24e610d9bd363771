# oracle_quant_run.cmake — one quantization oracle check (cmake -P; registered by tests/oracle_quant.cmake).
# -D: PYTHON NODE FGEMMA SRC (the F32 model) TYPE WORK (directory for the files) ORACLE (tests/oracle)
#     TOOLS (tests/tools) THREADS FIRST_TOL FIRST_TOP TIE (parity.mjs tolerances)
set(llama ${WORK}/oracle-quant-llama-${TYPE}.gguf)
set(fg ${WORK}/oracle-quant-fgemma-${TYPE}.gguf)
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc})")
  endif()
endfunction()
# 1. llama.cpp's quantizer (llama_model_quantize of node-llama-cpp's libllama) and fgemma's, same source
run("llama_quantize.py" ${PYTHON} ${TOOLS}/llama_quantize.py ${SRC} ${llama}.partial ${TYPE} --threads 1)
file(RENAME ${llama}.partial ${llama})
run("fgemma convert" ${FGEMMA} convert ${SRC} -o ${fg} --type ${TYPE})
# 2. the same tensor types, tensor by tensor, and the same general.file_type
run("tensor types" ${PYTHON} ${TOOLS}/gguf_types.py ${llama} ${fg})
# 3. fgemma's forward on llama.cpp's file against llama.cpp's: one-token prompts (the weight formats
#    without attention's amplification), then greedy ids after a 40-token prompt
run("parity first" ${NODE} ${ORACLE}/parity.mjs --fgemma ${FGEMMA} --threads ${THREADS} --mode first
    --model ${llama} --seed 11 --n 8 --tol ${FIRST_TOL} --tol-top ${FIRST_TOP})
run("parity greedy" ${NODE} ${ORACLE}/parity.mjs --fgemma ${FGEMMA} --threads ${THREADS} --mode greedy
    --model ${llama} --seed 11 --n 40 --steps 16 --tie-tol ${TIE} --self-check 2)
file(REMOVE ${llama} ${fg})
