# ctest driver for the packaging tests. MODE=find_package installs keyroute into a prefix and
# builds the consumer against it; MODE=add_subdirectory builds it with keyroute's source inside.
file(REMOVE_RECURSE ${WORK})
set(_generator_args -DCMAKE_CXX_COMPILER=${CXX})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/keyroute-build ${_generator_args}
      -DKEYROUTE_BUILD_TESTS=OFF -DKEYROUTE_BUILD_BENCHMARKS=OFF -DKEYROUTE_BUILD_EXAMPLES=OFF
      -DKEYROUTE_INSTALL=ON -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
  run(${CMAKE_COMMAND} --install ${WORK}/keyroute-build)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/cmake_consumer -B ${WORK}/consumer-build
      ${_generator_args} -DKEYROUTE_MODE=find_package -DCMAKE_PREFIX_PATH=${WORK}/prefix)
else()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/cmake_consumer -B ${WORK}/consumer-build
      ${_generator_args} -DKEYROUTE_MODE=add_subdirectory -DKEYROUTE_SOURCE_DIR=${SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} --build ${WORK}/consumer-build)
run(${WORK}/consumer-build/consumer)
if(EXISTS ${WORK}/consumer-build/consumer_kafka)
  run(${WORK}/consumer-build/consumer_kafka)
endif()
