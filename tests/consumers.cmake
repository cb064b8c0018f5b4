# Install this build tree into a throwaway prefix and build three consumers
# outside it (tests/consumers/run.sh), with this build's compiler and flags.
if(DOORBELL_INSTALL AND DOORBELL_SHARED)
  add_test(NAME Consumers.FindPackagePkgConfigAndSubdirectoryBuildAndRun
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/consumers/run.sh ${PROJECT_SOURCE_DIR}
                   ${PROJECT_BINARY_DIR} ${CMAKE_CXX_COMPILER} "${CMAKE_CXX_FLAGS}"
                   "${CMAKE_EXE_LINKER_FLAGS}")
  set_tests_properties(Consumers.FindPackagePkgConfigAndSubdirectoryBuildAndRun
                       PROPERTIES LABELS package TIMEOUT 900)
endif()
