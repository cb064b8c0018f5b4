# Checks tests/models/bell.pml with spin through the one runner
# (tests/models/spin.cmake): no lost wake-up (no invalid end state), the
# final-state assertion, with and without futex timeouts.
include(${CMAKE_CURRENT_LIST_DIR}/models/spin.cmake)
set(_bell_model ${CMAKE_CURRENT_SOURCE_DIR}/models/bell.pml)
doorbell_add_spin_model(NAME bell_model_plain MODEL ${_bell_model} EXPECT pass)
doorbell_add_spin_model(NAME bell_model_timeouts MODEL ${_bell_model} EXPECT pass
                        DEFINES -DTIMEOUTS)
# broken: a deliberately wrong ring() (count read apart from the set); spin
# must find the lost wake-up: a waiter left asleep, an invalid end state.
doorbell_add_spin_model(NAME bell_model_broken MODEL ${_bell_model} EXPECT fail
                        DEFINES -DBROKEN ERROR_PATTERN "pan:1: invalid end state")
