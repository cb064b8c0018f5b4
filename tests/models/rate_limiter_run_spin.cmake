# Runs one spin model: spin -a, cc pan.c, ./pan, and checks the verdict.
# -DSPIN=... -DCC=... -DMODEL=... -DWORKDIR=... -DD1=-DNP=3 -DD2=-DCALLS=1 (spin -D options)
# -DEXPECT=pass|fail (fail: the model is a known-faulty design and pan must
# find an assertion violation).
file(REMOVE_RECURSE ${WORKDIR})
file(MAKE_DIRECTORY ${WORKDIR})
execute_process(COMMAND ${SPIN} ${D1} ${D2} -a ${MODEL} WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spin -a ${MODEL} failed (${rc}):\n${out}")
endif()
execute_process(COMMAND ${CC} -O2 -DSAFETY -o pan pan.c WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cc pan.c failed (${rc}):\n${out}")
endif()
# -m: search depth limit; -E would ignore invalid end states, we keep them.
execute_process(COMMAND ./pan -m100000 WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
string(REGEX MATCH "errors: ([0-9]+)" found "${out}")
if(NOT found)
  message(FATAL_ERROR "pan printed no 'errors:' line")
endif()
set(errors ${CMAKE_MATCH_1})
if(out MATCHES "depth too small|max search depth too small")
  message(FATAL_ERROR "pan: search depth too small, the search was incomplete")
endif()
if(EXPECT STREQUAL "fail")
  if(errors EQUAL 0)
    message(FATAL_ERROR "pan found no error in ${MODEL}, which models a known-faulty design")
  endif()
  message("pan found the expected fault in ${MODEL}")
else()
  if(NOT errors EQUAL 0)
    message(FATAL_ERROR "pan found ${errors} error(s) in ${MODEL}")
  endif()
endif()
