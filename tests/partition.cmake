# The partition scheduler's tests run a tiny real program as their partitions.
add_executable(partition_progress_prog ${CMAKE_CURRENT_SOURCE_DIR}/partition_progs/progress.cpp)
target_include_directories(partition_progress_prog PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(partition_progress_prog PRIVATE Threads::Threads)
# A partition that reports to the health monitor across its exec.
# Built from the API's one source file, uninstrumented like the progress
# program: a sanitizer runtime's start-up would take several of its windows.
add_executable(partition_health_prog ${CMAKE_CURRENT_SOURCE_DIR}/partition_progs/health_reporter.cpp
                                     ${PROJECT_SOURCE_DIR}/src/partition/partition_health.cpp)
target_include_directories(partition_health_prog PRIVATE ${PROJECT_SOURCE_DIR}/include
                                                         ${PROJECT_SOURCE_DIR}/src)
target_compile_options(partition_health_prog PRIVATE -fno-sanitize=all)
target_link_options(partition_health_prog PRIVATE -fno-sanitize=all)
if(TARGET partition_health_test)
  add_dependencies(partition_health_test partition_health_prog)
  target_compile_definitions(partition_health_test PRIVATE
                             DOORBELL_HEALTH_PROG="$<TARGET_FILE:partition_health_prog>")
endif()
foreach(partition_test partition_run_test partition_crash_test cgroup_freezer_test
                       partition_schedule_test partition_window_test partition_cli_test)
  if(TARGET ${partition_test})
    add_dependencies(${partition_test} partition_progress_prog)
    target_compile_definitions(${partition_test} PRIVATE
                               DOORBELL_PARTITION_PROG="$<TARGET_FILE:partition_progress_prog>")
  endif()
endforeach()
# The helper is a stand-in for a partition, not code under test: keep it
# uninstrumented so that sanitizer builds do not slow its start-up (a TSan
# runtime needs ~100 ms to start, longer than the tests' windows).
target_compile_options(partition_progress_prog PRIVATE -fno-sanitize=all)
target_link_options(partition_progress_prog PRIVATE -fno-sanitize=all)
# The schedule file reader is tested directly (and the CLI around it).
if(TARGET partition_schedule_test AND TARGET doorbell_lab_partition)
  target_link_libraries(partition_schedule_test PRIVATE doorbell_lab_partition)
endif()
# The window figures' tests use the lab's sched_switch source.
if(TARGET partition_window_test AND TARGET doorbell_lab_partition)
  target_link_libraries(partition_window_test PRIVATE doorbell_lab_partition)
endif()
# A partition written in C (tests/partition_ports_c_test.c, compiled as C):
# the C subset of the port API, run by partition_ports_test beside a C++
# partition. It links the library like any C user would (instrumented in the
# sanitizer builds, so the test gives it many frames).
add_executable(partition_ports_c_prog ${CMAKE_CURRENT_SOURCE_DIR}/partition_ports_c_test.c)
set_target_properties(partition_ports_c_prog PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON
                                                        C_EXTENSIONS OFF)
target_compile_options(partition_ports_c_prog PRIVATE -Wpedantic)
target_link_libraries(partition_ports_c_prog PRIVATE doorbell)
if(TARGET partition_ports_test)
  add_dependencies(partition_ports_test partition_ports_c_prog)
  target_compile_definitions(partition_ports_test PRIVATE
                             DOORBELL_PORTS_C_PROG="$<TARGET_FILE:partition_ports_c_prog>")
endif()
