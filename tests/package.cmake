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

# The Debian package of this build tree, unpacked and run (tests/package/run.sh).
if(DOORBELL_INSTALL AND TARGET doorbell_cli)
  find_program(DPKG_SHLIBDEPS dpkg-shlibdeps)
  if(DPKG_SHLIBDEPS)
    add_test(NAME Package.DebInstallsAndRunsFromAThrowawayRoot
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/package/run.sh ${PROJECT_BINARY_DIR})
    set_tests_properties(Package.DebInstallsAndRunsFromAThrowawayRoot
                         PROPERTIES LABELS package TIMEOUT 600)
  else()
    # Registered anyway, so a missing tool shows as a skip and not as nothing.
    add_test(NAME Package.DebInstallsAndRunsFromAThrowawayRoot
             COMMAND sh -c "echo 'dpkg-shlibdeps (dpkg-dev) is not installed: ./run setup installs it'; exit 77")
    set_tests_properties(Package.DebInstallsAndRunsFromAThrowawayRoot
                         PROPERTIES LABELS package SKIP_RETURN_CODE 77)
  endif()
endif()

# The README's library build without a build type is optimised (Release).
if(PROJECT_IS_TOP_LEVEL)
  add_test(NAME Package.LibraryBuildDefaultsToRelease
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/package/default_build_type.sh
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties(Package.LibraryBuildDefaultsToRelease PROPERTIES LABELS package TIMEOUT 300)
endif()

# `./run bundle` (scripts/bundle.sh): the bundle runs with our packages'
# libraries hidden (tests/package/bundle.sh; skipped without unshare -m).
if(TARGET doorbell_cli)
  add_test(NAME Package.BundleRunsWithOurLibrariesHidden
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/package/bundle.sh ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:doorbell_cli>)
  set_tests_properties(Package.BundleRunsWithOurLibrariesHidden
                       PROPERTIES LABELS package SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
