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
# The first window whose number is 0 modulo the wrap (issue 25, item 6): the
# zero word counted on without a claim (the code before the fix) lets a
# stale caller move the word back.
doorbell_add_spin_model(
  NAME rate_limiter_model_wrap_zero_word_unclaimed MODEL ${_rl_wrap} EXPECT fail
  DEFINES -DZERO_WORD_UNCLAIMED
  ERROR_PATTERN "assertion violated \\(\\(\\(word_count==0\\)&&\\(word_full==0\\)\\)\\|\\|\\(ef>word_full\\)\\)")

# ShardedRateLimiter's lease path (issue 18): owners on their own cells, a
# signal handler on an owner, sharers with atomic RMWs, window roll-over.
# Exactness, at most burst tokens handed out per window, leases spent only
# in their window (or by stale callers), the under-admission bound, token
# conservation. Each faulty variant trips its own assertion; the bound is
# reached (SLACK one below it fails).
set(_rl_lease ${CMAKE_CURRENT_SOURCE_DIR}/models/rate_limiter_lease.pml)
doorbell_add_spin_model(NAME rate_limiter_model_lease_two_owners MODEL ${_rl_lease} EXPECT pass)
doorbell_add_spin_model(NAME rate_limiter_model_lease_burst_four_lease_three MODEL ${_rl_lease}
                        EXPECT pass DEFINES -DB=4 -DL=3)
doorbell_add_spin_model(NAME rate_limiter_model_lease_signal_handler MODEL ${_rl_lease} EXPECT pass
                        DEFINES -DHANDLER=1 -DOWNERS=1 -DB=4)
doorbell_add_spin_model(NAME rate_limiter_model_lease_signal_handler_two_owners MODEL ${_rl_lease}
                        EXPECT pass DEFINES -DHANDLER=1 -DCALLS=1)
doorbell_add_spin_model(NAME rate_limiter_model_lease_sharers MODEL ${_rl_lease} EXPECT pass
                        DEFINES -DSHARERS=2 -DOWNERS=1 -DCALLS=1 -DB=4 -DW=2)
doorbell_add_spin_model(NAME rate_limiter_model_lease_slack_below_bound MODEL ${_rl_lease}
                        EXPECT fail DEFINES -DB=4 -DSLACK=1
                        ERROR_PATTERN "assertion violated \\(\\(4-(sa|admitted\\[e\\])\\)<=1\\)")
doorbell_add_spin_model(
  NAME rate_limiter_model_lease_store_no_window_check MODEL ${_rl_lease} EXPECT fail
  DEFINES -DSTORE_NO_WINDOW_CHECK ERROR_PATTERN "assertion violated \\(k==handed\\[i\\]\\)")
doorbell_add_spin_model(NAME rate_limiter_model_lease_take_any_window MODEL ${_rl_lease}
                        EXPECT fail DEFINES -DTAKE_ANY_WINDOW
                        ERROR_PATTERN "assertion violated \\(lw>=e\\)")
doorbell_add_spin_model(
  NAME rate_limiter_model_lease_fast_take_any_window MODEL ${_rl_lease} EXPECT fail
  DEFINES -DFAST_TAKE_ANY_WINDOW -DB=2 -DNO_CONSERVATION_ASSERT
  ERROR_PATTERN "assertion violated \\(admitted\\[e\\]<=2\\)")
doorbell_add_spin_model(NAME rate_limiter_model_lease_grant_uncut MODEL ${_rl_lease} EXPECT fail
                        DEFINES -DGRANT_UNCUT ERROR_PATTERN "assertion violated \\(handed\\[gw\\]<=3\\)")
# The first window of a fresh limiter whose window numbers are half a wrap
# (2^31) or more (issue 25, item 6): kHalfWrap scaled to H = 2 windows, the
# clock starting at window 2. The fixed refill claims the never-opened
# word's window like any other open; opening it unclaimed (the code before
# the fix) lets a stale caller move the word back and the newer window be
# opened twice.
doorbell_add_spin_model(NAME rate_limiter_model_lease_first_window_half_wrap MODEL ${_rl_lease}
                        EXPECT pass DEFINES -DSTART=2 -DH=2 -DW=4)
doorbell_add_spin_model(NAME rate_limiter_model_lease_first_window_half_wrap_handler
                        MODEL ${_rl_lease} EXPECT pass
                        DEFINES -DSTART=2 -DH=2 -DW=4 -DHANDLER=1 -DCALLS=1)
doorbell_add_spin_model(
  NAME rate_limiter_model_lease_first_window_open_unclaimed MODEL ${_rl_lease} EXPECT fail
  DEFINES -DSTART=2 -DH=2 -DW=4 -DOPEN_UNCLAIMED
  ERROR_PATTERN "assertion violated \\(handed\\[e\\]<=3\\)")

# RateLimiter's adaptive lease (issue 31): the same lease path with the ask
# sized by what the loaded word has left (lease_for(left) = left / D clamped
# to 1..L; scaled down here: D = 2, L = 2 or 3). Exactness, leases spent only
# in their window, conservation, and the adaptive slack bound NCELLS *
# min(L - 1, B / D), which is reached (SLACK one below it fails). Cutting the
# grant by the loaded count instead of the count the fetch_add returned hands
# out more than burst.
doorbell_add_spin_model(NAME rate_limiter_model_adaptive_two_owners MODEL ${_rl_lease} EXPECT pass
                        DEFINES -DADAPTIVE=2 -DB=4 -DL=2 -DCALLS=3)
doorbell_add_spin_model(NAME rate_limiter_model_adaptive_burst_six MODEL ${_rl_lease} EXPECT pass
                        DEFINES -DADAPTIVE=2 -DB=6 -DL=3)
doorbell_add_spin_model(NAME rate_limiter_model_adaptive_signal_handler MODEL ${_rl_lease}
                        EXPECT pass DEFINES -DADAPTIVE=2 -DB=4 -DL=2 -DHANDLER=1 -DOWNERS=1 -DCALLS=3)
doorbell_add_spin_model(NAME rate_limiter_model_adaptive_sharers MODEL ${_rl_lease} EXPECT pass
                        DEFINES -DADAPTIVE=2 -DB=4 -DL=2 -DSHARERS=2 -DOWNERS=1 -DCALLS=1 -DW=2)
doorbell_add_spin_model(NAME rate_limiter_model_adaptive_first_window_half_wrap MODEL ${_rl_lease}
                        EXPECT pass DEFINES -DADAPTIVE=2 -DB=4 -DL=2 -DCALLS=3 -DSTART=2 -DH=2 -DW=4)
doorbell_add_spin_model(NAME rate_limiter_model_adaptive_slack_below_bound MODEL ${_rl_lease}
                        EXPECT fail DEFINES -DADAPTIVE=2 -DB=4 -DL=2 -DCALLS=3 -DSLACK=1
                        ERROR_PATTERN "assertion violated \\(\\(4-(sa|admitted\\[e\\])\\)<=1\\)")
doorbell_add_spin_model(NAME rate_limiter_model_adaptive_grant_from_load MODEL ${_rl_lease}
                        EXPECT fail DEFINES -DADAPTIVE=2 -DB=4 -DL=2 -DCALLS=3 -DGRANT_FROM_LOAD
                        ERROR_PATTERN "assertion violated \\(handed\\[gw\\]<=4\\)")

# allow(n) (issue 18): n = 2 and n = 1 at once. Exactness, and a denial of n
# only when fewer than n were left at the read it decided on.
set(_rl_allow_n ${CMAKE_CURRENT_SOURCE_DIR}/models/rate_limiter_allow_n.pml)
doorbell_add_spin_model(NAME rate_limiter_model_allow_n MODEL ${_rl_allow_n} EXPECT pass)
doorbell_add_spin_model(NAME rate_limiter_model_allow_n_three_callers MODEL ${_rl_allow_n}
                        EXPECT pass DEFINES -DNP=3 -DCALLS=1)
doorbell_add_spin_model(NAME rate_limiter_model_allow_n_burst_one MODEL ${_rl_allow_n} EXPECT pass
                        DEFINES -DB=1)
doorbell_add_spin_model(NAME rate_limiter_model_allow_n_admit_over MODEL ${_rl_allow_n} EXPECT fail
                        DEFINES -DADMIT_OVER ERROR_PATTERN "assertion violated \\(admitted\\[ww\\]<=3\\)")
doorbell_add_spin_model(
  NAME rate_limiter_model_allow_n_deny_on_contention MODEL ${_rl_allow_n} EXPECT fail
  DEFINES -DDENY_ON_CONTENTION ERROR_PATTERN "assertion violated \\(\\(3-sa\\)<n\\)")
