# The crosscheck test runs the crosscheck scenarios in-process through the
# harness, so it compiles their source (the scenario objects are otherwise
# linked only into the CLI).
if(TARGET crosscheck_test)
  target_sources(crosscheck_test PRIVATE ${PROJECT_SOURCE_DIR}/lab/scenarios/crosscheck.cpp)
endif()
