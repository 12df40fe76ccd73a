# Runs one librdkafka test binary; re-runs it once, and only once, when it died of librdkafka's
# known teardown race and of nothing else.
#
# librdkafka 2.0.2 (Debian 12) can abort while a client is destroyed, when a broker's last
# reference is dropped on another thread: "rd_kafka_broker_destroy_final: Assertion
# `thrd_is_current(rkb->rkb_thread)' failed" (confluentinc/librdkafka#3608). That is not a
# keyroute fault and no test can avoid it, so a run that failed with that line is repeated and
# the repeat decides. Any other failure, or the same abort twice, fails the test.
#
#   cmake -DKEYROUTE_TEST=<binary> -P rdkafka_teardown_retry.cmake
if(NOT DEFINED KEYROUTE_TEST)
  message(FATAL_ERROR "rdkafka_teardown_retry.cmake: pass -DKEYROUTE_TEST=<test binary>")
endif()

set(_known "rd_kafka_broker_destroy_final: Assertion `thrd_is_current")
foreach(_attempt 1 2)
  execute_process(COMMAND ${KEYROUTE_TEST} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  message("${_out}")
  if(_rc STREQUAL "0")
    return()
  endif()
  string(FIND "${_out}" "${_known}" _at)
  if(_at EQUAL -1 OR _attempt EQUAL 2)
    message(FATAL_ERROR "${KEYROUTE_TEST} failed: ${_rc}")
  endif()
  message("${KEYROUTE_TEST} hit librdkafka's teardown abort (librdkafka#3608); running it again")
endforeach()
