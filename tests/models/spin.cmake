# The one spin-model runner. Every Promela model under tests/models/ is
# registered with doorbell_add_spin_model() and checked the same way.
#
#   doorbell_add_spin_model(NAME <ctest name> MODEL <file.pml>
#                           EXPECT pass|fail
#                           [DEFINES -DX=1 ...]          # spin -D options
#                           [ERROR_PATTERN <regex> ...]  # EXPECT fail: required
#                           [DEPTH <n>] [TIMEOUT <s>])
#
# One convention for every model:
#  - `spin -a` and the compile of pan.c must succeed; pan must exit 0 (pan
#    exits 0 whether or not it found errors; anything else is a crash, an
#    out-of-memory kill or a script error). Any of these fails the test,
#    whatever EXPECT says.
#  - EXPECT pass: pan reports "errors: 0", no "pan:N:" error line, and no
#    message that the search was incomplete (search depth too small, out of
#    memory, "Search not completed", hash table full/truncated search).
#  - EXPECT fail: the model (or variant) is a known-faulty design. pan must
#    report errors >= 1 AND print every ERROR_PATTERN (a regex matched
#    against pan's output, e.g. the specific assertion's text): any other
#    failure, a syntax error included, fails the test. "Search not
#    completed" is expected there (pan stops at the first violation), but a
#    too-small depth or running out of memory is still rejected.
#  - Without spin or a C compiler, a test of the same name is registered that
#    reports SKIPPED (exit code 77, SKIP_RETURN_CODE), never nothing.
#  - Every model test carries the ctest label `model`: `ctest -L model`.
#
# Run with `cmake -P` (script mode) this file is the runner itself; included,
# it defines the function.

if(CMAKE_SCRIPT_MODE_FILE)
  file(REMOVE_RECURSE ${WORKDIR})
  file(MAKE_DIRECTORY ${WORKDIR})
  string(REPLACE "@@" ";" defines "${DEFINES}")
  string(REPLACE "@@" ";" patterns "${ERROR_PATTERN}")
  execute_process(COMMAND ${SPIN} -a ${defines} ${MODEL} WORKING_DIRECTORY ${WORKDIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "spin -a ${defines} ${MODEL} failed (${rc}):\n${out}")
  endif()
  execute_process(COMMAND ${CC} -O2 -DSAFETY -o pan pan.c WORKING_DIRECTORY ${WORKDIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cc pan.c failed (${rc}):\n${out}")
  endif()
  # -m: search depth limit (exceeding it is reported and rejected below);
  # -w18: 2^18 hash slots to start with. Invalid end states are checked
  # (no -E).
  execute_process(COMMAND ./pan -m${DEPTH} -w18 WORKING_DIRECTORY ${WORKDIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pan exited with ${rc}, not 0: no verdict")
  endif()
  string(REGEX MATCH "errors: ([0-9]+)" found "${out}")
  if(NOT found)
    message(FATAL_ERROR "pan printed no 'errors:' line: no verdict")
  endif()
  set(errors ${CMAKE_MATCH_1})
  # Incomplete searches, whatever EXPECT says.
  foreach(incomplete "depth too small" "out of memory" "[Tt]oo many" "hash table is full"
                     "[Mm]emory limit")
    if(out MATCHES "${incomplete}")
      message(FATAL_ERROR "pan: the search was incomplete ('${incomplete}'): no verdict")
    endif()
  endforeach()
  if(EXPECT STREQUAL "fail")
    if(errors EQUAL 0)
      message(FATAL_ERROR "pan found no error in ${MODEL} ${defines}, which models a known fault")
    endif()
    foreach(pattern IN LISTS patterns)
      if(NOT out MATCHES "${pattern}")
        message(FATAL_ERROR "pan found ${errors} error(s), but not the expected one "
                            "(no match for '${pattern}'): a different fault")
      endif()
    endforeach()
    message("pan found the expected fault in ${MODEL} ${defines}")
  elseif(EXPECT STREQUAL "pass")
    if(NOT errors EQUAL 0 OR out MATCHES "pan:[0-9]+:")
      message(FATAL_ERROR "pan found ${errors} error(s) in ${MODEL} ${defines}")
    endif()
    if(out MATCHES "Search not completed")
      message(FATAL_ERROR "pan: Search not completed: no verdict")
    endif()
  else()
    message(FATAL_ERROR "EXPECT must be pass or fail, not '${EXPECT}'")
  endif()
  return()
endif()

include_guard(GLOBAL)
find_program(DOORBELL_SPIN spin)
find_program(DOORBELL_PAN_CC NAMES cc gcc)
set(DOORBELL_SPIN_RUNNER ${CMAKE_CURRENT_LIST_FILE})

function(doorbell_add_spin_model)
  cmake_parse_arguments(arg "" "NAME;MODEL;EXPECT;DEPTH;TIMEOUT" "DEFINES;ERROR_PATTERN" ${ARGN})
  if(NOT arg_NAME OR NOT arg_MODEL)
    message(FATAL_ERROR "doorbell_add_spin_model: NAME and MODEL are required")
  endif()
  if(NOT arg_EXPECT MATCHES "^(pass|fail)$")
    message(FATAL_ERROR "doorbell_add_spin_model(${arg_NAME}): EXPECT pass or fail")
  endif()
  if(arg_EXPECT STREQUAL "fail" AND NOT arg_ERROR_PATTERN)
    message(FATAL_ERROR "doorbell_add_spin_model(${arg_NAME}): EXPECT fail needs ERROR_PATTERN "
                        "(the specific violation spin must find)")
  endif()
  if(NOT arg_DEPTH)
    set(arg_DEPTH 100000)
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  # Lists travel to the script joined with "@@" (";" would split the command line).
  string(REPLACE ";" "@@" defines "${arg_DEFINES}")
  string(REPLACE ";" "@@" patterns "${arg_ERROR_PATTERN}")
  if(NOT DOORBELL_SPIN OR NOT DOORBELL_PAN_CC)
    # Exit code 77 marks the test SKIPPED (SKIP_RETURN_CODE below).
    add_test(NAME ${arg_NAME}
             COMMAND sh -c "echo 'spin or cc not found: install Debian package spin'; exit 77")
  else()
    add_test(NAME ${arg_NAME}
           COMMAND ${CMAKE_COMMAND} "-DSPIN=${DOORBELL_SPIN}" "-DCC=${DOORBELL_PAN_CC}" "-DMODEL=${arg_MODEL}"
                   "-DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/spin_${arg_NAME}"
                   "-DDEFINES=${defines}" "-DERROR_PATTERN=${patterns}" "-DEXPECT=${arg_EXPECT}"
                   "-DDEPTH=${arg_DEPTH}" -P ${DOORBELL_SPIN_RUNNER})
  endif()
  set_tests_properties(${arg_NAME} PROPERTIES LABELS model TIMEOUT ${arg_TIMEOUT}
                                              SKIP_RETURN_CODE 77)
endfunction()
