# skew --html, opened in a real headless browser (examples/CMakeLists.txt registers the cases):
#   cmake -DSKEW=<skew> -DPNG_CHECK=<png_check> -DCHROMIUM=<chromium> -DCASE=builtin|file
#         -DWORK=<scratch dir> -P check_skew_html.cmake
# builtin: the built-in workload; file: a generated file of 1,000,000 keys. skew writes the page
# and its --json in one run; Chromium parses the page (--dump-dom) and draws it (--screenshot).
# The test fails unless every figure the page carries equals the JSON's and the screenshot
# shows the page: its size, many colours, and each scheme's bar colour on a sizeable area.
cmake_minimum_required(VERSION 3.21)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

set(args "")
if(CASE STREQUAL "file")
  # 1M keys: one tenant at 30%, one at 5%, the rest over 200,000 users.
  execute_process(COMMAND sh -c "awk 'BEGIN { srand(7); for (i = 0; i < 1000000; i++) {
      r = rand(); if (r < 0.30) print \"tenant-acme\"; else if (r < 0.35) print \"tenant-globex\";
      else printf \"user-%06d\\n\", int(rand() * 200000) } }' > '${WORK}/keys.txt'"
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not write ${WORK}/keys.txt")
  endif()
  set(args ${WORK}/keys.txt)
elseif(NOT CASE STREQUAL "builtin")
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()

execute_process(COMMAND ${SKEW} ${args} --json --html ${WORK}/page.html
  RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "skew --json --html: exit ${rc}\n${err}")
endif()

# A fresh profile per run, nothing fetched, no first-run or background work.
set(window 1200,2600)
function(chromium out)
  execute_process(COMMAND ${CHROMIUM} --headless --no-sandbox --disable-gpu --disable-quic
      --no-first-run --disable-background-networking --disable-component-update --disable-sync
      --hide-scrollbars --user-data-dir=${WORK}/profile-${out} --window-size=${window} ${ARGN}
      file://${WORK}/page.html
    RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "chromium ${ARGN}: exit ${rc}\n${stderr}")
  endif()
  set(${out} "${stdout}" PARENT_SCOPE)
endfunction()
chromium(dom --dump-dom)
chromium(ignored --screenshot=${WORK}/page.png)
file(SIZE ${WORK}/page.html html_bytes)
message(STATUS "page.html: ${html_bytes} bytes; the screenshot: ${WORK}/page.png")

# ---- the figures ----------------------------------------------------------------------------

# norm(<out> <json value text>): the value as CMake's JSON reader prints it, so that two texts
# of the same number (1.07 and 1.0700) compare equal and two different numbers do not.
function(norm out text)
  string(JSON v GET "{\"v\":${text}}" v)
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

function(unescape out text)
  string(REPLACE "&quot;" "\"" text "${text}")
  string(REPLACE "&lt;" "<" text "${text}")
  string(REPLACE "&gt;" ">" text "${text}")
  string(REPLACE "&#39;" "'" text "${text}")
  string(REPLACE "&amp;" "&" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# attr(<out> <element text> <name>): the attribute's value, unescaped; fails if it is missing.
function(attr out element name)
  if(NOT element MATCHES " ${name}=\"([^\"]*)\"")
    message(FATAL_ERROR "no ${name} in: ${element}")
  endif()
  unescape(value "${CMAKE_MATCH_1}")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# same(<what> <page value> <json path...>): the page's number equals the JSON's.
function(same what page)
  string(JSON expected GET "${json}" ${ARGN})
  norm(got "${page}")
  if(NOT got STREQUAL expected)
    message(FATAL_ERROR "${what}: the page says '${page}', --json says '${expected}'")
  endif()
endfunction()

# same_list(<what> <page comma list> <json path to an array...>)
function(same_list what page)
  string(JSON expected GET "${json}" ${ARGN})
  norm(expected "${expected}")
  norm(got "[${page}]")
  if(NOT got STREQUAL expected)
    message(FATAL_ERROR "${what}: the page's list differs from --json's:\n${page}\n${expected}")
  endif()
endfunction()

# grouped(<out> <digits>): 1234567 -> 1,234,567, as the page shows counts.
function(grouped out digits)
  set(result "")
  while(digits MATCHES "^([0-9]+)([0-9][0-9][0-9])$")
    set(result ",${CMAKE_MATCH_2}${result}")
    set(digits "${CMAKE_MATCH_1}")
  endwhile()
  set(${out} "${digits}${result}" PARENT_SCOPE)
endfunction()

# element(<out> <regex>): the first element of the DOM matching the regex (no '>' inside).
function(element out regex)
  if(NOT dom MATCHES "(${regex})")
    message(FATAL_ERROR "the page has no element matching ${regex}")
  endif()
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

element(input "<p id=\"input\"[^>]*>")
foreach(field events distinct_keys skipped partitions windows window_seconds)
  string(REPLACE "_" "-" name "${field}")
  attr(v "${input}" data-${name})
  same("input ${field}" "${v}" input ${field})
endforeach()
attr(source "${input}" data-source)
string(JSON expected GET "${json}" input source)
if(NOT source STREQUAL expected)
  message(FATAL_ERROR "input source: '${source}' against '${expected}'")
endif()
string(JSON partitions GET "${json}" input partitions)

# The hottest keys: key, events, share, and each scheme's partitions used, as drawn.
string(JSON hot LENGTH "${json}" hot_keys)
string(REGEX MATCHALL "<tr class=\"hot-key\"[^>]*>" rows "${dom}")
list(LENGTH rows row_count)
if(NOT row_count EQUAL hot)
  message(FATAL_ERROR "${row_count} hottest keys on the page, ${hot} in --json")
endif()
string(JSON scheme_count LENGTH "${json}" schemes)
math(EXPR last_scheme "${scheme_count} - 1")
math(EXPR last_hot "${hot} - 1")
foreach(h RANGE ${last_hot})
  list(GET rows ${h} row)
  attr(key "${row}" data-key)
  string(JSON expected GET "${json}" hot_keys ${h} key)
  if(NOT key STREQUAL expected)
    message(FATAL_ERROR "hot key ${h}: '${key}' against '${expected}'")
  endif()
  attr(v "${row}" data-events)
  same("hot key ${h} events" "${v}" hot_keys ${h} events)
  attr(v "${row}" data-share)
  same("hot key ${h} share" "${v}" hot_keys ${h} share)
  # The visible cells of that row: the key, its events with thousands separators, and the
  # partitions each scheme used.
  string(FIND "${dom}" "${row}" at)
  string(SUBSTRING "${dom}" ${at} -1 rest)
  string(FIND "${rest}" "</tr>" end)
  string(SUBSTRING "${rest}" 0 ${end} cells)
  string(JSON events GET "${json}" hot_keys ${h} events)
  grouped(shown "${events}")
  if(NOT cells MATCHES "<td>${shown}</td>")
    message(FATAL_ERROR "hot key ${h}: no visible cell '${shown}' in ${cells}")
  endif()
  foreach(i RANGE ${last_scheme})
    string(JSON name GET "${json}" schemes ${i} name)
    string(JSON used GET "${json}" schemes ${i} hot_key_partitions ${h})
    if(NOT cells MATCHES "<td data-scheme=\"${name}\" data-partitions-used=\"${used}\">${used}</td>")
      message(FATAL_ERROR "hot key ${h}, ${name}: the page does not show ${used} partitions used")
    endif()
  endforeach()
endforeach()

# Each scheme: the summary row, the comparison bar, its section's charts.
foreach(i RANGE ${last_scheme})
  string(JSON name GET "${json}" schemes ${i} name)
  element(bar "<rect class=\"comparison-bar\"[^>]* data-scheme=\"${name}\"[^>]*>")
  attr(v "${bar}" data-max-over-mean)
  same("${name} comparison bar" "${v}" schemes ${i} max_over_mean)

  string(FIND "${dom}" "<tr data-scheme=\"${name}\">" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no summary row for ${name}")
  endif()
  string(SUBSTRING "${dom}" ${at} -1 rest)
  string(FIND "${rest}" "</tr>" end)
  string(SUBSTRING "${rest}" 0 ${end} row)
  foreach(field max_over_mean split_keys split_key_event_share moved_share memory_bytes)
    string(REPLACE "_" "-" attribute "${field}")
    attr(v "${row}" data-${attribute})
    same("${name} ${field}" "${v}" schemes ${i} ${field})
  endforeach()
  string(JSON stamped ERROR_VARIABLE no_stamps GET "${json}" schemes ${i} stamped_share)
  if(NOT no_stamps)
    attr(v "${row}" data-stamped-share)
    same("${name} stamped_share" "${v}" schemes ${i} stamped_share)
  endif()

  string(FIND "${dom}" "<section class=\"scheme\" id=\"scheme-${name}\"" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no section for ${name}")
  endif()
  string(SUBSTRING "${dom}" ${at} -1 rest)
  string(FIND "${rest}" "</section>" end)
  string(SUBSTRING "${rest}" 0 ${end} section)
  if(NOT section MATCHES "<p class=\"order\"><b>Order:</b> [^<]+</p>")
    message(FATAL_ERROR "${name}: no sentence on the order it gives up")
  endif()
  if(NOT section MATCHES "<svg[^>]* data-partition-load=\"([^\"]*)\"")
    message(FATAL_ERROR "${name}: no per-partition chart")
  endif()
  same_list("${name} partition_load" "${CMAKE_MATCH_1}" schemes ${i} partition_load)
  if(NOT section MATCHES "<svg[^>]* data-max-over-mean-by-window=\"([^\"]*)\"")
    message(FATAL_ERROR "${name}: no per-window chart")
  endif()
  same_list("${name} max_over_mean_by_window" "${CMAKE_MATCH_1}" schemes ${i} max_over_mean_by_window)
  # One bar per partition (up to 400 partitions), each drawn with its partition's load.
  string(REGEX MATCHALL "<rect class=\"partition-bar\"[^>]*>" bars "${section}")
  list(LENGTH bars bar_count)
  if(NOT bar_count EQUAL partitions)
    message(FATAL_ERROR "${name}: ${bar_count} partition bars for ${partitions} partitions")
  endif()
  foreach(b ${bars})
    attr(p "${b}" data-partition)
    attr(v "${b}" data-value)
    same("${name} bar of partition ${p}" "${v}" schemes ${i} partition_load ${p})
  endforeach()
endforeach()

# ---- the screenshot -------------------------------------------------------------------------

# The three schemes' bar colours (examples/skew_html.hpp).
execute_process(COMMAND ${PNG_CHECK} ${WORK}/page.png d62728 ff7f0e 1f77b4
  RESULT_VARIABLE rc OUTPUT_VARIABLE png ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "png_check: ${err}")
endif()
message(STATUS "screenshot: ${png}")
string(REPLACE "," ";" size "${window}")
list(GET size 0 want_w)
list(GET size 1 want_h)
if(NOT png MATCHES "width=${want_w} height=${want_h} ")
  message(FATAL_ERROR "the screenshot is not ${want_w}x${want_h}: ${png}")
endif()
string(REGEX MATCH "colours=([0-9]+) background=([0-9.]+)" _ "${png}")
# A blank or uniform page has a handful of colours and one of them nearly everywhere.
if(CMAKE_MATCH_1 LESS 32 OR NOT CMAKE_MATCH_2 MATCHES "^0\\.([0-8]|9[0-4])")
  message(FATAL_ERROR "the screenshot looks blank: ${png}")
endif()
foreach(colour d62728 ff7f0e 1f77b4)
  string(REGEX MATCH "${colour}=([0-9]+)" _ "${png}")
  if(CMAKE_MATCH_1 LESS 2000)
    message(FATAL_ERROR "the screenshot has ${CMAKE_MATCH_1} pixels of #${colour}: a chart is missing")
  endif()
endforeach()
