// detail::availability: down flags, and the failover partition of a cold key whose home is down.
#include "keyroute_catch.hpp"

#include <keyroute/hash.hpp>
#include <keyroute/router/availability.hpp>

#include <cstdint>
#include <string>
#include <vector>

using keyroute::detail::availability;

TEST_CASE("availability: set reports changes, and any_down follows the count",
          "[router][availability]") {
    availability a(8);
    CHECK_FALSE(a.any_down());
    const auto c0 = a.changes();
    CHECK(a.set(3, false));
    CHECK_FALSE(a.set(3, false));  // already down: no change
    CHECK(a.down(3));
    CHECK(a.any_down());
    CHECK(a.changes() == c0 + 1);
    CHECK(a.set(3, true));
    CHECK_FALSE(a.any_down());
}

TEST_CASE("availability: failover moves only the down partition's keys, the same way every time",
          "[router][availability]") {
    availability a(16);
    availability b(16);  // another producer, same flags
    a.set(5, false);
    b.set(5, false);
    std::size_t moved = 0;
    for (int i = 0; i < 2000; ++i) {
        const std::uint64_t h = keyroute::xxh3{}("k" + std::to_string(i));
        const std::uint32_t p = a.failover(5, h);
        CHECK(p != 5U);
        CHECK(p < 16U);
        CHECK(b.failover(5, h) == p);
        // Another partition going down moves only the keys that had failed over to it.
        a.set(9, false);
        const std::uint32_t q = a.failover(5, h);
        if (p != 9U) CHECK(q == p);
        moved += p == 9U ? 1U : 0U;
        a.set(9, true);
    }
    CHECK(moved > 50);  // about 1/15 of them
    availability all(2);
    all.set(0, false);
    all.set(1, false);
    CHECK(all.failover(1, 42) == 1U);  // every partition down: home
}

TEST_CASE(
    "availability: failover spreads a down partition's keys evenly, with few partitions up "
    "as with many",
    "[router][availability]") {
    availability a(16);
    a.set(5, false);
    std::vector<int> got(16, 0);
    for (int i = 0; i < 15000; ++i) ++got[a.failover(5, keyroute::xxh3{}("k" + std::to_string(i)))];
    CHECK(got[5] == 0);
    for (std::uint32_t p = 0; p < 16; ++p) {
        if (p == 5) continue;
        INFO("partition " << p);
        CHECK(got[p] > 800);  // 1000 each on average
        CHECK(got[p] < 1200);
    }
    // 999 of 1000 down: a key's draws mostly miss the one left, and the scan past them finds it.
    availability most(1000);
    for (std::uint32_t p = 0; p < 1000; ++p) {
        if (p != 617) most.set(p, false);
    }
    for (int i = 0; i < 200; ++i) {
        CHECK(most.failover(3, keyroute::xxh3{}("k" + std::to_string(i))) == 617U);
    }
}
