// detail::lane_registry and the lane counters: one lane per thread, the overflow lane past them,
// saturating per-window counts.
#include "keyroute_catch.hpp"

#include <keyroute/router/lanes.hpp>

#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

using keyroute::detail::lane;
using keyroute::detail::lane_registry;

TEST_CASE("lanes: each thread claims its own lane; threads past them share the overflow lane",
          "[router][lanes]") {
    lane_registry r(2, 4, 16, 0x1234, 7);
    CHECK(r.count() == 3U);
    CHECK(r.at(2).shared);
    CHECK_FALSE(r.at(0).shared);
    // Four threads alive at once (an exited thread's lane may pass to a later thread whose
    // thread-local cache lands at the same address).
    std::vector<std::uint16_t> got(4);
    std::vector<char> same(4);
    std::atomic<int> claimed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            const lane& mine = r.mine();
            got[static_cast<std::size_t>(t)] = mine.index;
            same[static_cast<std::size_t>(t)] = &r.mine() == &mine ? 1 : 0;
            claimed.fetch_add(1);
            while (claimed.load() < 4) std::this_thread::yield();
        });
    }
    for (auto& th : threads) th.join();
    std::multiset<std::uint16_t> lanes(got.begin(), got.end());
    CHECK(lanes == std::multiset<std::uint16_t>{0, 1, 2, 2});
    CHECK(same == std::vector<char>(4, 1));  // the same lane every time
}

TEST_CASE("lanes: episode ids of different lanes never meet", "[router][lanes]") {
    lane_registry r(3, 4, 16, 1, 7);
    std::set<std::uint64_t> ids;
    for (std::uint32_t i = 0; i < 3; ++i) {
        lane& ln = r.at(i);
        for (int k = 0; k < 100; ++k) {
            ln.episodes += ln.episode_step;
            CHECK(ids.insert(ln.episodes).second);
            CHECK(ln.episodes >= 1U);
        }
    }
}

TEST_CASE("lanes: per-window counts saturate instead of wrapping; entering clears them",
          "[router][lanes]") {
    lane_registry r(1, 4, 16, 1, 7);
    lane& ln = r.at(0);
    ln.cold[2].store(0xfffffffeU);
    keyroute::detail::bump_saturating(ln.cold[2], false);
    keyroute::detail::bump_saturating(ln.cold[2], false);
    CHECK(ln.cold[2].load() == 0xffffffffU);
    keyroute::detail::bump_saturating(ln.cold[2], true);  // the overflow lane's way
    CHECK(ln.cold[2].load() == 0xffffffffU);
    ln.events.store(10);
    ln.slots[3].count.store(5);
    keyroute::detail::window_bounds b;
    b.lo = 600;
    b.hi = 660;
    b.index = 10;
    ln.enter(b, 9, 4, 16);
    CHECK(ln.cold[2].load() == 0U);
    CHECK(ln.slots[3].count.load() == 0U);
    CHECK(ln.events.load() == 0U);
    CHECK(ln.prev_events.load() == 10U);
    CHECK(ln.prev_window.load() == 9);
    CHECK(ln.window.load() == 10);
}
