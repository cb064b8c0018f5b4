# Instructions per RateLimiter call, counted by valgrind's callgrind (exact
# and repeatable, unlike timings): single thread, clock excluded (the
# timestamp is an argument), the loop and call overhead subtracted (the
# `baseline` path). Limits: disabled <= 3; RateLimiter (adaptive lease) and
# ShardedRateLimiter, which look at the thread's slot and then the shared
# word: admit <= 26 (amortised lease refills included), deny <= 30; the
# one-word limiter (detail::OneWordRateLimiter): deny <= 20, admit <= 20 + 1
# (the atomic RMW instruction itself). Locked (lock-prefixed) instructions
# per call, counted from callgrind's per-address counts and objdump: 0 for a
# denial and for the disabled limiter, 1 for a one-word admission, one per
# lease for a leased admission. Built with -O2
# whatever the build type; not registered in sanitizer builds (valgrind
# cannot run them).
add_executable(rate_limiter_callgrind_driver
               ${CMAKE_CURRENT_SOURCE_DIR}/rate_limiter_callgrind_driver.cpp)
target_link_libraries(rate_limiter_callgrind_driver PRIVATE doorbell)
target_compile_options(rate_limiter_callgrind_driver PRIVATE -O2)

find_program(DOORBELL_VALGRIND valgrind)
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  message(STATUS "rate_limiter_callgrind: not registered in a sanitizer build")
elseif(NOT DOORBELL_VALGRIND OR NOT CMAKE_OBJDUMP
       OR NOT EXISTS /usr/include/valgrind/callgrind.h)
  add_test(NAME rate_limiter_callgrind
           COMMAND ${CMAKE_COMMAND} -E echo
                   "skipped: valgrind or objdump not found (Debian packages valgrind, binutils)")
  set_tests_properties(rate_limiter_callgrind PROPERTIES SKIP_REGULAR_EXPRESSION "skipped:")
else()
  add_test(NAME rate_limiter_callgrind
           COMMAND ${CMAKE_COMMAND} -DVALGRIND=${DOORBELL_VALGRIND} -DOBJDUMP=${CMAKE_OBJDUMP}
                   -DDRIVER=$<TARGET_FILE:rate_limiter_callgrind_driver>
                   -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}/callgrind_rate_limiter
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/models/rate_limiter_callgrind_check.cmake)
  set_tests_properties(rate_limiter_callgrind PROPERTIES TIMEOUT 300 LABELS instructions)
endif()
