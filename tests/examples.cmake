# The examples that run to an end by themselves are tests too: what the docs
# show a user must work.
foreach(example uv_loop asio_loop)
  if(TARGET example_${example})
    add_test(NAME Examples.${example} COMMAND example_${example})
    set_tests_properties(Examples.${example} PROPERTIES LABELS library TIMEOUT 60)
  endif()
endforeach()
