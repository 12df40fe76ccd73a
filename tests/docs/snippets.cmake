# Every ```cpp block of README.md and docs/*.md is compiled, warning-free (ctest -L docs).
#
# For writers (docs/README.md says the same):
# - A block is compiled as the body of a function: statements, as a reader would paste them
#   into their own function. Its #include lines are moved to the top of the file's translation
#   unit (every block of one Markdown file shares one unit, each in its own namespace).
# - To say how a block is compiled, put one HTML comment on the line(s) just before its fence
#   (invisible on GitHub):
#       <!-- snippet: prelude=kafka_producer -->     names it uses but does not define
#       <!-- snippet: declarations -->               the block declares things (a struct, a
#                                                    function): compiled at namespace scope
#   Words may be combined (`<!-- snippet: declarations prelude=a,b -->`). A prelude is
#   tests/docs/prelude/<name>.hpp: declarations only (nothing is linked), no keyroute includes
#   unless the blocks using it are fragments without their own.
# - Flags: -Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror, the build's standard and
#   compiler. A value a block computes must be used, as in real code (pass it on, print it).
# - A block that uses librdkafka (rd_kafka_, RdKafka::, keyroute::kafka::, keyroute/kafka/) is
#   compiled against keyroute::rdkafka, and left out where librdkafka is not found.
# - Errors point at the Markdown file and line (#line).
#
# Configure time: keyroute_docs_snippets(<target> <source dir> <known broken ids>) writes one
# translation unit per Markdown file into the build tree and defines the OBJECT library
# <target> (not built by default) and the ctest test docs_snippets, which builds it. A block
# listed in <known broken ids> ("<file>#<heading slug>" or "<file>#<heading slug>/<n>" for the
# n-th block under that heading, from 1) is compiled on its own by the test
# docs_known_broken_<n>, which passes while the block still fails to compile and fails, asking
# for the entry's removal, once it compiles.
#
# Script mode (the known-broken tests): cmake -DBUILD_DIR=<dir> -DTARGET=<target> -DID=<id>
#   -P snippets.cmake

# _keyroute_docs_parse(<md file> <relative name> <out prefix>): sets, in the caller's scope,
# <prefix>_COUNT and for each block i (1..COUNT) <prefix>_<i>_BODY (the code, #include lines
# blanked), _INCLUDES (its #include lines), _LINE (the Markdown line of its first line), _ID,
# _PRELUDES, _SCOPE (function or namespace), _KAFKA (ON/OFF) and _ERROR (a bad marker's message).
function(_keyroute_docs_parse file name prefix)
  file(READ "${file}" text)
  set(count 0)
  set(line_no 0)
  set(in_block OFF)
  set(in_other OFF)
  set(marker "")
  set(marker_line 0)
  set(slug "")
  set(slug_count 0)
  string(LENGTH "${text}" remaining)
  while(remaining GREATER 0)
    string(FIND "${text}" "\n" nl)
    if(nl EQUAL -1)
      set(line "${text}")
      set(text "")
    else()
      string(SUBSTRING "${text}" 0 ${nl} line)
      math(EXPR next "${nl} + 1")
      string(SUBSTRING "${text}" ${next} -1 text)
    endif()
    string(LENGTH "${text}" remaining)
    math(EXPR line_no "${line_no} + 1")
    string(REGEX REPLACE "\r$" "" line "${line}")

    if(in_block)
      if(line MATCHES "^[ \t]*```[ \t]*$")
        set(in_block OFF)
        set(${prefix}_${count}_BODY "${body}" PARENT_SCOPE)
        set(${prefix}_${count}_INCLUDES "${includes}" PARENT_SCOPE)
        continue()
      endif()
      # The fence's indentation is no part of the code.
      string(LENGTH "${indent}" indent_len)
      string(SUBSTRING "${line}" 0 ${indent_len} lead)
      if(lead STREQUAL indent)
        string(SUBSTRING "${line}" ${indent_len} -1 line)
      endif()
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]")
        string(APPEND includes "${line}\n")
        string(APPEND body "\n")
      else()
        string(APPEND body "${line}\n")
      endif()
      if(line MATCHES "rd_kafka_|RdKafka::|keyroute::kafka::|keyroute/kafka/")
        set(${prefix}_${count}_KAFKA ON PARENT_SCOPE)
      endif()
      continue()
    endif()

    if(in_other)
      if(line MATCHES "^[ \t]*```[ \t]*$")
        set(in_other OFF)
      endif()
      continue()
    endif()

    if(line MATCHES "^#+[ \t]+(.*)$")
      # GitHub's anchor: lower case, punctuation dropped, spaces to hyphens.
      string(TOLOWER "${CMAKE_MATCH_1}" slug)
      string(REGEX REPLACE "[^a-z0-9 _-]" "" slug "${slug}")
      string(REPLACE " " "-" slug "${slug}")
      set(slug_count 0)
      set(marker "")
    elseif(line MATCHES "^[ \t]*<!--[ \t]*snippet:(.*)-->[ \t]*$")
      set(marker "${CMAKE_MATCH_1}")
      set(marker_line ${line_no})
    elseif(line MATCHES "^([ \t]*)```[ \t]*(cpp|c\\+\\+)[ \t]*$")
      set(indent "${CMAKE_MATCH_1}")
      set(in_block ON)
      math(EXPR count "${count} + 1")
      math(EXPR slug_count "${slug_count} + 1")
      math(EXPR first "${line_no} + 1")
      set(body "")
      set(includes "")
      set(preludes "")
      set(scope function)
      set(error "")
      string(REGEX REPLACE "^[ \t]+|[ \t]+$" "" marker "${marker}")
      string(REGEX REPLACE "[ \t]+" ";" words "${marker}")
      foreach(word IN LISTS words)
        if(word MATCHES "^prelude=([a-z0-9_,]+)$")
          string(REPLACE "," ";" names "${CMAKE_MATCH_1}")
          foreach(p IN LISTS names)
            if(NOT EXISTS "${_keyroute_docs_dir}/prelude/${p}.hpp")
              set(error "${name}:${marker_line}: no prelude tests/docs/prelude/${p}.hpp")
            endif()
            list(APPEND preludes "${p}")
          endforeach()
        elseif(word STREQUAL "declarations")
          set(scope namespace)
        else()
          set(error "${name}:${marker_line}: unknown word '${word}' in a snippet marker (prelude=NAME[,NAME], declarations)")
        endif()
      endforeach()
      set(marker "")
      set(${prefix}_${count}_LINE ${first} PARENT_SCOPE)
      set(${prefix}_${count}_ID "${name}#${slug}/${slug_count}" PARENT_SCOPE)
      set(${prefix}_${count}_PRELUDES "${preludes}" PARENT_SCOPE)
      set(${prefix}_${count}_SCOPE ${scope} PARENT_SCOPE)
      set(${prefix}_${count}_KAFKA OFF PARENT_SCOPE)
      set(${prefix}_${count}_ERROR "${error}" PARENT_SCOPE)
    elseif(line MATCHES "^[ \t]*```")
      set(in_other ON)  # a block in another language (sh, cmake, text): not compiled
      set(marker "")
    elseif(NOT line MATCHES "^[ \t]*$")
      set(marker "")  # a marker belongs to the fence right after it
    endif()
  endwhile()
  if(in_block)
    set(${prefix}_${count}_BODY "#error \"unterminated code block\"\n" PARENT_SCOPE)
    set(${prefix}_${count}_INCLUDES "" PARENT_SCOPE)
  endif()
  set(${prefix}_COUNT ${count} PARENT_SCOPE)
endfunction()

# _keyroute_docs_unit(<out var> <md file> <prefix> <block indexes...>): the translation unit.
function(_keyroute_docs_unit out file prefix)
  set(includes "")
  set(preludes "")
  set(blocks "")
  foreach(i ${ARGN})
    string(APPEND includes "${${prefix}_${i}_INCLUDES}")
    foreach(p IN LISTS ${prefix}_${i}_PRELUDES)
      if(NOT "${p}" IN_LIST preludes)
        list(APPEND preludes "${p}")
      endif()
    endforeach()
    set(line ${${prefix}_${i}_LINE})
    set(code "#line ${line} \"${file}\"\n${${prefix}_${i}_BODY}")
    if(NOT "${${prefix}_${i}_ERROR}" STREQUAL "")
      set(code "#line ${line} \"${file}\"\n#error \"${${prefix}_${i}_ERROR}\"\n")
    endif()
    if(${prefix}_${i}_SCOPE STREQUAL "namespace")
      string(APPEND blocks "namespace keyroute_docs_block_${i} {\n${code}}  // namespace\n\n")
    else()
      string(APPEND blocks "namespace keyroute_docs_block_${i} {\nvoid run() {\n${code}}\n}  // namespace\n\n")
    endif()
  endforeach()
  # Each #include once, in the order the blocks have them; the preludes after them, so that a
  # block's own includes are what it compiles with.
  set(unique "")
  set(seen "|")
  string(REGEX MATCHALL "[^\n]+" include_lines "${includes}")
  foreach(l IN LISTS include_lines)
    string(STRIP "${l}" l)
    string(FIND "${seen}" "|${l}|" found)
    if(found EQUAL -1)
      string(APPEND unique "${l}\n")
      string(APPEND seen "${l}|")
    endif()
  endforeach()
  set(unit "// Generated from ${file} by tests/docs/snippets.cmake: edit the Markdown file.\n")
  string(APPEND unit "${unique}")
  foreach(p IN LISTS preludes)
    string(APPEND unit "#include \"${_keyroute_docs_dir}/prelude/${p}.hpp\"\n")
  endforeach()
  string(APPEND unit "\n${blocks}")
  set(${out} "${unit}" PARENT_SCOPE)
endfunction()

# _keyroute_docs_write(<file> <content>): rewrites the file only when its content changes, so
# that a reconfigure recompiles only the Markdown files that changed.
function(_keyroute_docs_write file content)
  list(REMOVE_ITEM stale "${file}")
  set(stale "${stale}" PARENT_SCOPE)
  file(WRITE "${file}.new" "${content}")
  file(COPY_FILE "${file}.new" "${file}" ONLY_IF_DIFFERENT)
  file(REMOVE "${file}.new")
endfunction()

function(keyroute_docs_snippets target source_dir known_broken)
  set(_keyroute_docs_dir "${source_dir}/tests/docs")
  # "<file>#<slug>" is the first block under that heading: "<file>#<slug>/1".
  set(wanted "")
  foreach(id IN LISTS known_broken)
    if(NOT id MATCHES "/[0-9]+$")
      set(id "${id}/1")
    endif()
    list(APPEND wanted "${id}")
  endforeach()
  file(GLOB docs RELATIVE "${source_dir}" CONFIGURE_DEPENDS
    "${source_dir}/README.md" "${source_dir}/docs/*.md")
  file(GLOB preludes CONFIGURE_DEPENDS "${_keyroute_docs_dir}/prelude/*.hpp")
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/docs_snippets")
  file(GLOB stale "${out_dir}/*.cpp")
  set(sources "")
  set(kafka_sources "")
  set(broken_found "")
  set(skipped 0)
  set(total 0)
  foreach(md IN LISTS docs)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source_dir}/${md}")
    _keyroute_docs_parse("${source_dir}/${md}" "${md}" B)
    set(plain "")
    set(kafka "")
    if(B_COUNT GREATER 0)
      foreach(i RANGE 1 ${B_COUNT})
        math(EXPR total "${total} + 1")
        set(id "${B_${i}_ID}")
        if(B_${i}_KAFKA AND NOT TARGET keyroute::rdkafka)
          math(EXPR skipped "${skipped} + 1")
          list(APPEND broken_found "${id}")  # listed or not: nothing to check here
        elseif("${id}" IN_LIST wanted)
          list(APPEND broken_found "${id}")
          list(LENGTH broken_found n)
          _keyroute_docs_unit(unit "${source_dir}/${md}" B ${i})
          string(MAKE_C_IDENTIFIER "${md}_${i}" stem)
          _keyroute_docs_write("${out_dir}/broken_${stem}.cpp" "${unit}")
          add_library(${target}_broken_${n} OBJECT EXCLUDE_FROM_ALL "${out_dir}/broken_${stem}.cpp")
          target_link_libraries(${target}_broken_${n} PRIVATE keyroute::warnings)
          target_compile_options(${target}_broken_${n} PRIVATE -Werror)
          if(B_${i}_KAFKA)
            target_link_libraries(${target}_broken_${n} PRIVATE keyroute::rdkafka)
          else()
            target_link_libraries(${target}_broken_${n} PRIVATE keyroute::keyroute)
          endif()
          add_test(NAME docs_known_broken_${n}
            COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DTARGET=${target}_broken_${n}
              "-DID=${id}" "-DMARKDOWN=${source_dir}/${md}" -P "${_keyroute_docs_dir}/snippets.cmake")
          set_tests_properties(docs_known_broken_${n} PROPERTIES LABELS "docs"
            RESOURCE_LOCK keyroute_docs_build)
        elseif(B_${i}_KAFKA)
          list(APPEND kafka ${i})
        else()
          list(APPEND plain ${i})
        endif()
      endforeach()
    endif()
    string(MAKE_C_IDENTIFIER "${md}" stem)
    if(plain)
      _keyroute_docs_unit(unit "${source_dir}/${md}" B ${plain})
      _keyroute_docs_write("${out_dir}/${stem}.cpp" "${unit}")
      list(APPEND sources "${out_dir}/${stem}.cpp")
    endif()
    if(kafka)
      _keyroute_docs_unit(unit "${source_dir}/${md}" B ${kafka})
      _keyroute_docs_write("${out_dir}/${stem}_kafka.cpp" "${unit}")
      list(APPEND kafka_sources "${out_dir}/${stem}_kafka.cpp")
    endif()
  endforeach()
  foreach(id IN LISTS wanted)
    if(NOT "${id}" IN_LIST broken_found)
      message(FATAL_ERROR "docs snippets: '${id}' is listed as known broken but names no block")
    endif()
  endforeach()
  if(stale)
    file(REMOVE ${stale})  # units of blocks or files that are gone
  endif()
  if(skipped GREATER 0)
    message(STATUS "docs snippets: ${skipped} librdkafka block(s) not compiled (librdkafka not found)")
  endif()
  add_library(${target} OBJECT EXCLUDE_FROM_ALL ${sources} ${kafka_sources})
  target_link_libraries(${target} PRIVATE keyroute::keyroute keyroute::warnings)
  if(kafka_sources)
    target_link_libraries(${target} PRIVATE keyroute::rdkafka)
  endif()
  # Always errors: the test is that the docs compile warning-free.
  target_compile_options(${target} PRIVATE -Werror)
  # Every file's errors, not only the first one's.
  set(keep_going "")
  if(CMAKE_GENERATOR MATCHES "Make")
    set(keep_going -- -k)
  elseif(CMAKE_GENERATOR MATCHES "Ninja")
    set(keep_going -- -k 0)
  endif()
  add_test(NAME docs_snippets
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${target} ${keep_going})
  # 8 to 15 s (one translation unit per Markdown file, Release): started early.
  set_tests_properties(docs_snippets PROPERTIES LABELS "docs" RESOURCE_LOCK keyroute_docs_build
    COST 15)
  message(STATUS "docs snippets: ${total} block(s) in ${CMAKE_CURRENT_BINARY_DIR}/docs_snippets")
endfunction()

# Script mode: a known-broken block must still fail to compile.
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED TARGET)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "the block ${ID} now compiles: remove it from the known-broken list in "
      "tests/CMakeLists.txt, so that docs_snippets compiles it with the others")
  endif()
  # Broken the way it is listed: a compiler error in the block, not a build that failed before.
  string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" md_regex "${MARKDOWN}")
  if(NOT "${out}${err}" MATCHES "${md_regex}:[0-9]+:[0-9]+: (fatal )?error")
    message(FATAL_ERROR "building ${TARGET} failed, but not with an error in ${ID}:\n${out}${err}")
  endif()
  message(STATUS "${ID} still fails to compile, as listed (tests/CMakeLists.txt):\n${out}${err}")
endif()
