# The RateLimiter's window-opening protocol, checked with spin (Debian
# package `spin`): spin -a, cc pan.c, ./pan; any assertion violation or
# invalid end state fails the test. The seed's refresh protocol is checked
# too, and must fail (spin must find its double refresh).
find_program(DOORBELL_SPIN spin)
find_program(DOORBELL_PAN_CC NAMES cc gcc)
set(_rl_models ${CMAKE_CURRENT_SOURCE_DIR}/models)
set(_rl_runner ${_rl_models}/rate_limiter_run_spin.cmake)
if(DOORBELL_SPIN AND DOORBELL_PAN_CC)
  foreach(config "two_callers;-DNP=2;-DCALLS=2;pass;rate_limiter.pml"
                 "three_callers;-DNP=3;-DCALLS=1;pass;rate_limiter.pml"
                 "burst_one;-DB=1;-DCALLS=3;pass;rate_limiter.pml"
                 "seed_double_refresh;-DUNUSED=0;-DUNUSED2=0;fail;rate_limiter_seed.pml")
    list(GET config 0 name)
    list(GET config 1 d1)
    list(GET config 2 d2)
    list(GET config 3 expect)
    list(GET config 4 model)
    add_test(NAME rate_limiter_model_${name}
             COMMAND ${CMAKE_COMMAND} -DSPIN=${DOORBELL_SPIN} -DCC=${DOORBELL_PAN_CC}
                     -DMODEL=${_rl_models}/${model}
                     -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/spin_rate_limiter_${name}
                     -DD1=${d1} -DD2=${d2} -DEXPECT=${expect} -P ${_rl_runner})
    set_tests_properties(rate_limiter_model_${name} PROPERTIES TIMEOUT 120 LABELS model)
  endforeach()
else()
  add_test(NAME rate_limiter_model_skipped
           COMMAND ${CMAKE_COMMAND} -E echo "spin or cc not found: install Debian package spin")
  set_tests_properties(rate_limiter_model_skipped PROPERTIES SKIP_REGULAR_EXPRESSION "not found")
endif()
