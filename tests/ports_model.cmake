# The sampling port's publish protocol (tests/models/ports_sampling.pml),
# checked with spin through the one runner, tests/models/spin.cmake: the
# protocol passes with a writer killed at any statement; reading without
# the re-check tears messages, rewriting the published slot in place leaves
# the port locked after a writer is killed.
include(${CMAKE_CURRENT_LIST_DIR}/models/spin.cmake)
set(_ports_model ${CMAKE_CURRENT_SOURCE_DIR}/models/ports_sampling.pml)
doorbell_add_spin_model(NAME ports_model_sampling MODEL ${_ports_model} EXPECT pass)
doorbell_add_spin_model(NAME ports_model_sampling_four_writes MODEL ${_ports_model} EXPECT pass
                        DEFINES -DW=4 -DREADS=3)
doorbell_add_spin_model(NAME ports_model_sampling_no_recheck MODEL ${_ports_model} EXPECT fail
                        DEFINES -DNO_RECHECK
                        ERROR_PATTERN "assertion violated \\(\\(d0==s\\)&&\\(d1==s\\)\\)")
doorbell_add_spin_model(NAME ports_model_sampling_same_slot MODEL ${_ports_model} EXPECT fail
                        DEFINES -DSAME_SLOT
                        ERROR_PATTERN "assertion violated \\(ok\\|\\|\\(published_seq==0\\)\\)")

# The queuing ring (tests/models/ports_queuing.pml): whole messages, in
# order, once, and sent = received + waiting + refused, with the sender
# killed anywhere; advancing the tail before writing the slot must fail.
set(_ports_queuing ${CMAKE_CURRENT_SOURCE_DIR}/models/ports_queuing.pml)
doorbell_add_spin_model(NAME ports_model_queuing MODEL ${_ports_queuing} EXPECT pass)
doorbell_add_spin_model(NAME ports_model_queuing_depth_three MODEL ${_ports_queuing} EXPECT pass
                        DEFINES -DDEPTH=3 -DM=5)
doorbell_add_spin_model(NAME ports_model_queuing_tail_first MODEL ${_ports_queuing} EXPECT fail
                        DEFINES -DTAIL_FIRST
                        ERROR_PATTERN "assertion violated \\(\\(a==b\\)&&\\(a!=0\\)\\)")
