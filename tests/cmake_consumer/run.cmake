# ctest driver for the packaging tests. MODE=find_package installs keyroute into a prefix and
# builds the consumer against it (in C++14 mode: the target must raise it to C++17), configures
# it against the build tree, and checks that an xxHash older than 0.8 is refused by the package,
# the build and the header; MODE=add_subdirectory builds it with keyroute's source inside.
file(REMOVE_RECURSE ${WORK})
set(_generator_args -DCMAKE_CXX_COMPILER=${CXX})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
# run_fails(<regex> command...): the command fails, and its output matches the regex.
function(run_fails regex)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0 OR NOT out MATCHES "${regex}")
    message(FATAL_ERROR "expected a failure matching '${regex}' (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()

if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/keyroute-build ${_generator_args}
      -DKEYROUTE_BUILD_TESTS=OFF -DKEYROUTE_BUILD_BENCHMARKS=OFF -DKEYROUTE_BUILD_EXAMPLES=OFF
      -DKEYROUTE_INSTALL=ON -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
  run(${CMAKE_COMMAND} --install ${WORK}/keyroute-build)
  # The build tree as a package (configure only: the build below compiles the same consumer).
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/cmake_consumer -B ${WORK}/consumer-build-tree
      ${_generator_args} -DKEYROUTE_MODE=find_package -Dkeyroute_DIR=${WORK}/keyroute-build)
  # An xxHash 0.7 header: XXH3's output changed until 0.8.0.
  file(WRITE ${WORK}/xxhash-0.7/xxhash.h "#define XXH_VERSION_MAJOR    0\n#define XXH_VERSION_MINOR    7\n#define XXH_VERSION_RELEASE  3\n#define XXH_VERSION_NUMBER  (XXH_VERSION_MAJOR *100*100 + XXH_VERSION_MINOR *100 + XXH_VERSION_RELEASE)\n")
  file(WRITE ${WORK}/old_xxhash.cpp "#include <keyroute/hash.hpp>\n")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/cmake_consumer -B ${WORK}/consumer-old-xxhash
      ${_generator_args} -DKEYROUTE_MODE=find_package_not_found -DCMAKE_PREFIX_PATH=${WORK}/prefix
      -DXXHASH_INCLUDE_DIR=${WORK}/xxhash-0.7)
  run_fails("xxHashHeader.*0\\.7\\.3" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/keyroute-old-xxhash
      ${_generator_args} -DKEYROUTE_BUILD_TESTS=OFF -DKEYROUTE_BUILD_BENCHMARKS=OFF
      -DKEYROUTE_BUILD_EXAMPLES=OFF -DXXHASH_INCLUDE_DIR=${WORK}/xxhash-0.7)
  run_fails("keyroute needs xxHash 0\\.8 or later" ${CXX} -std=c++17 -fsyntax-only
      -I${WORK}/xxhash-0.7 -I${SOURCE_DIR}/include ${WORK}/old_xxhash.cpp)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/cmake_consumer -B ${WORK}/consumer-build
      ${_generator_args} -DKEYROUTE_MODE=find_package -DCMAKE_PREFIX_PATH=${WORK}/prefix
      -DCMAKE_CXX_STANDARD=14)
else()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/cmake_consumer -B ${WORK}/consumer-build
      ${_generator_args} -DKEYROUTE_MODE=add_subdirectory -DKEYROUTE_SOURCE_DIR=${SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} --build ${WORK}/consumer-build)
run(${WORK}/consumer-build/consumer)
if(EXISTS ${WORK}/consumer-build/consumer_kafka)
  run(${WORK}/consumer-build/consumer_kafka)
endif()
