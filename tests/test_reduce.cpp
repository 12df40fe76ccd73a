// Reductions: fastmod is exactly %, fold32 is the folded hash's exact %, fastrange stays in range
// and is the high-bits product.
#include "keyroute_catch.hpp"

#include <keyroute/reduce.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

TEST_CASE("fastmod_reduction equals % for 32- and 64-bit hashes", "[reduce]") {
    std::mt19937_64 rng(7);
    std::vector<std::uint32_t> divisors = {
        1U,    2U,     3U,     7U,     8U,          12U,         64U,         100U,
        1000U, 65535U, 65536U, 65537U, 0x7fffffffU, 0x80000000U, 0xfffffffeU, 0xffffffffU};
    for (int i = 0; i < 200; ++i) divisors.push_back(static_cast<std::uint32_t>(rng()) | 1U);
    const std::vector<std::uint64_t> edges = {0U,
                                              1U,
                                              0x7fffffffU,
                                              0x80000000U,
                                              0xffffffffU,
                                              0x100000000ULL,
                                              std::numeric_limits<std::uint64_t>::max(),
                                              std::numeric_limits<std::uint64_t>::max() - 1};
    for (const std::uint32_t n : divisors) {
        const keyroute::fastmod_reduction fast(n);
        const keyroute::modulo_reduction slow(n);
        for (const std::uint64_t e : edges) {
            REQUIRE(fast(e) == slow(e));
            REQUIRE(fast(static_cast<std::uint32_t>(e)) == slow(static_cast<std::uint32_t>(e)));
            // Values just around multiples of n, where an off-by-one inverse would show.
            const std::uint64_t m = e - e % n;
            REQUIRE(fast(m) == 0U);
            if (m > 0) REQUIRE(fast(m - 1) == slow(m - 1));
        }
        for (int j = 0; j < 2000; ++j) {
            const std::uint64_t h = rng();
            REQUIRE(fast(h) == h % n);
            const auto h32 = static_cast<std::uint32_t>(h);
            REQUIRE(fast(h32) == h32 % n);
        }
    }
}

TEST_CASE("fastrange_reduction is the high half of h * n", "[reduce]") {
    std::mt19937_64 rng(11);
    for (const std::uint32_t n : {1U, 3U, 100U, 0xffffffffU}) {
        const keyroute::fastrange_reduction r(n);
        CHECK(r(std::uint64_t{0}) == 0U);
        CHECK(r(std::numeric_limits<std::uint64_t>::max()) == n - 1);
        CHECK(r(std::numeric_limits<std::uint32_t>::max()) == n - 1);
        for (int j = 0; j < 1000; ++j) {
            const auto h = static_cast<std::uint32_t>(rng());
            REQUIRE(r(h) == static_cast<std::uint32_t>((std::uint64_t{h} * n) >> 32U));
            REQUIRE(r(h) < n);
        }
    }
}

TEST_CASE("fold32_reduction is the exact remainder of the hash folded to 32 bits", "[reduce]") {
    // fold32 is Java's Long.hashCode read as unsigned: hi ^ lo.
    STATIC_REQUIRE(keyroute::fold32(std::uint64_t{0x20f909ab6f54d5a1ULL}) == 0x4faddc0aU);
    STATIC_REQUIRE(keyroute::fold32(std::uint64_t{0xffffffff00000000ULL}) == 0xffffffffU);
    STATIC_REQUIRE(keyroute::fold32(std::uint32_t{0x12345678U}) == 0x12345678U);
    std::mt19937_64 rng(13);
    for (const std::uint32_t n : {1U, 2U, 7U, 100U, 1000U, 65537U, 0x7fffffffU, 0xffffffffU}) {
        const keyroute::default_reduction def(n);
        const keyroute::fold32_reduction<keyroute::fastmod_reduction> fast(n);
        CHECK(def(std::uint64_t{0}) == 0U);
        // Both halves count: hashes that differ only in their high half reduce differently.
        CHECK(def(std::uint64_t{1} << 32U) == 1U % n);
        CHECK(def(std::numeric_limits<std::uint64_t>::max()) == 0U);
        for (int j = 0; j < 2000; ++j) {
            const std::uint64_t h = rng();
            const auto folded = static_cast<std::uint32_t>((h >> 32U) ^ (h & 0xffffffffU));
            REQUIRE(def(h) == folded % n);
            REQUIRE(fast(h) == folded % n);
            // A 32-bit hash is reduced as it is.
            const auto h32 = static_cast<std::uint32_t>(h);
            REQUIRE(def(h32) == h32 % n);
            REQUIRE(fast(h32) == h32 % n);
        }
    }
}

TEST_CASE("fold32_reduction above 2^31 partitions: the low partitions get two 32-bit values",
          "[reduce]") {
    // The documented limit of the default reduction (reduce.hpp): for n > 2^31 the 32-bit value
    // v and v + n land on the same partition when v < 2^32 - n, so those partitions get twice
    // the hashes of the others.
    constexpr std::uint32_t n = 3000000000U;
    constexpr std::uint32_t doubled = 0xffffffffU - n + 1U;  // 2^32 - n: partitions 0 .. doubled-1
    const keyroute::default_reduction def(n);
    CHECK(def(std::uint32_t{0}) == 0U);
    CHECK(def(n) == 0U);
    CHECK(def(doubled - 1U) == doubled - 1U);
    CHECK(def(n + doubled - 1U) == doubled - 1U);
    CHECK(n + doubled - 1U == 0xffffffffU);  // the last 32-bit value
    CHECK(def(doubled) == doubled);          // v + n > 2^32 - 1 for v >= doubled: one value each
}
