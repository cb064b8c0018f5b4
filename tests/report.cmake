# report_test calls the report writer directly as well as through the CLI, so
# it compiles the report source itself (the CLI's sources are not a library).
# Without the lab (DOORBELL_BUILD_LAB=OFF) there is no CLI to test: the report
# and browser tests then skip, saying so.
foreach(test_name report_test browser_test trace_test)
  if(TARGET ${test_name} AND NOT TARGET doorbell_cli)
    target_compile_definitions(${test_name} PRIVATE DOORBELL_NO_CLI=1)
  endif()
endforeach()
if(TARGET report_test AND TARGET doorbell_lab_harness)
  target_sources(report_test PRIVATE ${PROJECT_SOURCE_DIR}/apps/doorbell/report.cpp)
endif()
