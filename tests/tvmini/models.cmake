# models.cmake — makes the tv-mini model files from the committed artifact (run with `cmake -P`; the
# fixture test tvmini_models of tests/tvmini.cmake, and scripts may call it too).
#
#   cmake -DFGEMMA=BIN -DSRC=models/tv-mini.gguf.xz -DDIR=OUT_DIR [-DXZ=xz] -P models.cmake
#
# SRC is the BF16 GGUF compressed with xz. Writes DIR/tv-mini-bf16.gguf (unpacked) and, converted from
# it with `fgemma convert IN.gguf -o OUT.gguf --type T` (issue 15), tv-mini-f32.gguf (the same values in
# F32), tv-mini-q8_0.gguf and tv-mini-q4_0.gguf. A file is remade when it is missing or older than its
# source; every file is written under a temporary name and renamed, so no partial model is left behind.
# Without SRC, the four files must already be in DIR.
foreach(v FGEMMA SRC DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "models.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED XZ)
  set(XZ xz)
endif()
file(MAKE_DIRECTORY "${DIR}")
set(bf16 "${DIR}/tv-mini-bf16.gguf")

if(EXISTS "${SRC}")
  if(NOT EXISTS "${bf16}" OR "${SRC}" IS_NEWER_THAN "${bf16}")
    message(STATUS "unpacking ${SRC}")
    execute_process(COMMAND "${XZ}" -dc "${SRC}" OUTPUT_FILE "${bf16}.tmp" RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      file(REMOVE "${bf16}.tmp")
      message(FATAL_ERROR "cannot unpack ${SRC} with ${XZ} (${rc}): ${err}")
    endif()
    file(RENAME "${bf16}.tmp" "${bf16}")
  endif()
elseif(NOT EXISTS "${bf16}")
  message(FATAL_ERROR "tv-mini is missing: neither ${SRC} nor ${bf16} exists (docs/TV-MINI.md, \"Making the files\")")
endif()

# q4_0 --pure: every matrix Q4_0, the tied head too, with llama.cpp's reference quantizer
foreach(t f32 q8_0 q4_0)
  set(out "${DIR}/tv-mini-${t}.gguf")
  if(NOT EXISTS "${out}" OR "${bf16}" IS_NEWER_THAN "${out}")
    message(STATUS "converting ${bf16} to ${t}")
    set(pure)
    if(t STREQUAL "q4_0")
      set(pure --pure)
    endif()
    execute_process(COMMAND "${FGEMMA}" convert "${bf16}" -o "${out}" --type ${t} ${pure} RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "fgemma convert ${bf16} --type ${t} failed (${rc}): ${err}")
    endif()
  endif()
endforeach()
message(STATUS "tv-mini files in ${DIR}: bf16, f32, q8_0, q4_0")
