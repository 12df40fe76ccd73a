# Finds xxHash's header (Debian's libxxhash-dev ships no CMake config). keyroute uses it header
# only, through XXH_INLINE_ALL, so nothing is linked. Defines keyroute::xxhash_header.
find_path(XXHASH_INCLUDE_DIR NAMES xxhash.h DOC "Directory holding xxhash.h (xxHash >= 0.8)")

if(XXHASH_INCLUDE_DIR AND EXISTS "${XXHASH_INCLUDE_DIR}/xxhash.h")
  file(STRINGS "${XXHASH_INCLUDE_DIR}/xxhash.h" _xxh_lines REGEX "#define XXH_VERSION_(MAJOR|MINOR|RELEASE) +[0-9]+")
  foreach(_part MAJOR MINOR RELEASE)
    string(REGEX MATCH "XXH_VERSION_${_part} +([0-9]+)" _ "${_xxh_lines}")
    set(_xxh_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(xxHashHeader_VERSION "${_xxh_MAJOR}.${_xxh_MINOR}.${_xxh_RELEASE}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(xxHashHeader
  REQUIRED_VARS XXHASH_INCLUDE_DIR
  VERSION_VAR xxHashHeader_VERSION)

if(xxHashHeader_FOUND AND NOT TARGET keyroute::xxhash_header)
  add_library(keyroute::xxhash_header INTERFACE IMPORTED)
  set_target_properties(keyroute::xxhash_header PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}")
endif()
mark_as_advanced(XXHASH_INCLUDE_DIR)
