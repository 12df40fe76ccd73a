# ctest -L format: every C++ file under include/, tests/, bench/ and examples/ is laid out as
# .clang-format says (clang-format --dry-run --Werror). To fix: clang-format -i <file>.
# -DCLANG_FORMAT=<program> -DSOURCE_DIR=<repository> [-DEXCLUDE=<regex of paths to skip>]
set(files "")
foreach(dir include tests bench examples)
  file(GLOB_RECURSE found ${SOURCE_DIR}/${dir}/*.cpp ${SOURCE_DIR}/${dir}/*.hpp)
  list(APPEND files ${found})
endforeach()
if(EXCLUDE)
  list(FILTER files EXCLUDE REGEX "${EXCLUDE}")
endif()
list(SORT files)
list(LENGTH files count)
execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${files}
  RESULT_VARIABLE result ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "clang-format: files not formatted (fix with clang-format -i):\n${errors}")
endif()
message(STATUS "${count} files formatted as .clang-format says")
