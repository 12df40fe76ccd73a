#pragma once
// The checks of the -fno-exceptions test programs (Catch2 needs exceptions): each counts, and the
// first that fails ends the program with status 1. Include after keyroute's headers, in a unit
// built with -fno-exceptions.
#include <keyroute/detail/config.hpp>

#include <cstdio>
#include <cstdlib>

#if KEYROUTE_HAS_EXCEPTIONS
#error "the no_exceptions tests must be compiled with -fno-exceptions"
#endif

namespace no_exceptions_test {

inline int checks = 0;

// `program` names the test in the failure message.
inline void check(bool ok, const char* what, const char* program) {
    ++checks;
    if (ok) return;
    std::fprintf(stderr, "%s: check failed: %s\n", program, what);
    std::exit(1);
}

}  // namespace no_exceptions_test
