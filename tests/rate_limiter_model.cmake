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
