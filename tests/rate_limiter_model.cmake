# The RateLimiter's window-opening protocol, checked with spin (Debian
# package `spin`) through the one runner, tests/models/spin.cmake. The
# correct protocol must pass in every configuration; each known-faulty
# design must fail on its specific assertion.
include(${CMAKE_CURRENT_LIST_DIR}/models/spin.cmake)
set(_rl_model ${CMAKE_CURRENT_SOURCE_DIR}/models/rate_limiter.pml)
doorbell_add_spin_model(NAME rate_limiter_model_two_callers MODEL ${_rl_model} EXPECT pass
                        DEFINES -DNP=2 -DCALLS=2)
doorbell_add_spin_model(NAME rate_limiter_model_three_callers MODEL ${_rl_model} EXPECT pass
                        DEFINES -DNP=3 -DCALLS=1)
doorbell_add_spin_model(NAME rate_limiter_model_burst_one MODEL ${_rl_model} EXPECT pass
                        DEFINES -DB=1 -DCALLS=3)
# The seed's refresh protocol: spin must find its double refresh.
doorbell_add_spin_model(
  NAME rate_limiter_model_seed_double_refresh
  MODEL ${CMAKE_CURRENT_SOURCE_DIR}/models/rate_limiter_seed.pml EXPECT fail
  ERROR_PATTERN "assertion violated \\(\\(last_refresh==0\\)\\|\\|\\(now>=\\(last_refresh\\+")

# Window-number wrap-around and callers stalled after their clock read
# (issue 12, item 6): the fixed rule passes; the rule before the fix must
# fail, first on "windows only move forward", and, with that assertion off,
# on exactness (2 admitted in one window of burst 1); so must raising
# `newest` after the CAS instead of before.
set(_rl_wrap ${CMAKE_CURRENT_SOURCE_DIR}/models/rate_limiter_wrap.pml)
doorbell_add_spin_model(NAME rate_limiter_model_wrap MODEL ${_rl_wrap} EXPECT pass)
doorbell_add_spin_model(NAME rate_limiter_model_wrap_seven_windows MODEL ${_rl_wrap} EXPECT pass
                        DEFINES -DW=7)
doorbell_add_spin_model(
  NAME rate_limiter_model_wrap_old_rule MODEL ${_rl_wrap} EXPECT fail DEFINES -DOLD_RULE
  ERROR_PATTERN "assertion violated \\(\\(\\(word_count==0\\)&&\\(word_full==0\\)\\)\\|\\|\\(ef>word_full\\)\\)")
doorbell_add_spin_model(
  NAME rate_limiter_model_wrap_old_rule_exactness MODEL ${_rl_wrap} EXPECT fail
  DEFINES -DOLD_RULE -DNO_FORWARD_ASSERT ERROR_PATTERN "assertion violated \\(admitted\\[ef\\]<=1\\)")
doorbell_add_spin_model(
  NAME rate_limiter_model_wrap_raise_after MODEL ${_rl_wrap} EXPECT fail DEFINES -DRAISE_AFTER
  ERROR_PATTERN "assertion violated \\(\\(\\(word_count==0\\)&&\\(word_full==0\\)\\)\\|\\|\\(ef>word_full\\)\\)")
