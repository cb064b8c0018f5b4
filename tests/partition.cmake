# The partition scheduler's tests run a tiny real program as their partitions.
add_executable(partition_progress_prog ${CMAKE_CURRENT_SOURCE_DIR}/partition_progs/progress.cpp)
target_include_directories(partition_progress_prog PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(partition_progress_prog PRIVATE Threads::Threads)
foreach(partition_test partition_run_test cgroup_freezer_test partition_schedule_test)
  if(TARGET ${partition_test})
    add_dependencies(${partition_test} partition_progress_prog)
    target_compile_definitions(${partition_test} PRIVATE
                               DOORBELL_PARTITION_PROG="$<TARGET_FILE:partition_progress_prog>")
  endif()
endforeach()
