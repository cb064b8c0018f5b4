# report_test and browser_test drive the doorbell CLI; report_test also calls
# the report library (lab/report/) directly and links it. Without the lab
# (DOORBELL_BUILD_LAB=OFF) there is no CLI to test: the report and browser
# tests then skip, saying so.
foreach(test_name report_test browser_test trace_test)
  if(TARGET ${test_name} AND NOT TARGET doorbell_cli)
    target_compile_definitions(${test_name} PRIVATE DOORBELL_NO_CLI=1)
  endif()
endforeach()
if(TARGET report_test AND TARGET doorbell_lab_report)
  target_link_libraries(report_test PRIVATE doorbell_lab_report)
endif()
