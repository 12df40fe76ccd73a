#pragma once

// The one place the tests include Catch2: v3 where it is installed, else v2.13 (Debian 12).
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <string>

namespace keyroute_test {
/// A substring matcher under either Catch2 version.
inline auto contains(const std::string& text) {
#if CATCH_VERSION_MAJOR >= 3
    return Catch::Matchers::ContainsSubstring(text);
#else
    return Catch::Matchers::Contains(text);
#endif
}
}  // namespace keyroute_test
