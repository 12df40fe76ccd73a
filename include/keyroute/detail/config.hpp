#pragma once

/// @file
/// The few macros keyroute needs, the one way it reports bad configuration, and the trait that
/// tells a partitioner configured over an explicit id set.

#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define KEYROUTE_HAS_EXCEPTIONS 1
#else
#define KEYROUTE_HAS_EXCEPTIONS 0
#endif

namespace keyroute::detail {

/// Reports a configuration error: throws std::invalid_argument, or, where the library is built
/// with -fno-exceptions, prints the message to stderr and calls std::abort().
[[noreturn]] inline void invalid_argument(const std::string& message) {
#if KEYROUTE_HAS_EXCEPTIONS
    throw std::invalid_argument(message);
#else
    std::fprintf(stderr, "keyroute: invalid argument: %s\n", message.c_str());
    std::abort();
#endif
}

/// A double in an error message: the shortest of 15, 16 or 17 significant digits that reads
/// back as the same value (std::to_string prints six decimals: 1.0000001 came out as
/// "1.000000", -1e-12 as "-0.000000").
inline auto exact_number(double v) -> std::string {
    std::array<char, 32> buf{};
    for (const int digits : {15, 16, 17}) {
        std::snprintf(buf.data(), buf.size(), "%.*g", digits, v);
        if (digits == 17 || std::strtod(buf.data(), nullptr) == v) break;
    }
    return buf.data();
}

/// Same as invalid_argument, for an error found while parsing external input (a stamp, a file).
[[noreturn]] inline void runtime_error(const std::string& message) {
#if KEYROUTE_HAS_EXCEPTIONS
    throw std::runtime_error(message);
#else
    std::fprintf(stderr, "keyroute: error: %s\n", message.c_str());
    std::abort();
#endif
}

/// Whether a partitioner has an explicit id set, `ids()` (rendezvous, maglev).
template <class P, class = void>
struct has_ids : std::false_type {};
template <class P>
struct has_ids<P, std::void_t<decltype(std::declval<const P&>().ids())>> : std::true_type {};

}  // namespace keyroute::detail
