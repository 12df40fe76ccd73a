// detail::deadline_queue: earliest deadline first, ties by serial, whether deadlines come in
// order or not; compaction of stale items and the drop of popped ones keep it within its bound;
// checked against a std::set of live items.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/deadlines.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <tuple>
#include <vector>

using ms = std::chrono::milliseconds;
using queue = keyroute::detail::deadline_queue<ms>;

TEST_CASE("deadline_queue: earliest deadline first, the earlier held first among equal ones",
          "[resequencer][deadlines]") {
    queue h;
    CHECK(h.empty());
    h.push({ms(30), 1, 0});
    h.push({ms(10), 3, 1});
    h.push({ms(10), 2, 2});
    h.push({ms(20), 4, 3});
    std::vector<std::uint64_t> order;
    while (!h.empty()) {
        order.push_back(h.top().serial);
        h.pop();
    }
    CHECK(order == std::vector<std::uint64_t>{2, 3, 4, 1});
}

TEST_CASE("deadline_queue: compaction drops only stale items, and only past its threshold",
          "[resequencer][deadlines]") {
    queue h;
    std::set<std::uint64_t> live;
    for (std::uint64_t s = 0; s < 63; ++s) h.push({ms(static_cast<std::int64_t>(s)), s, 0});
    const auto is_live = [&](const queue::item& it) { return live.count(it.serial) != 0; };
    h.compact(0, is_live);
    CHECK(h.size() == 63);  // under 64: left alone
    h.push({ms(100), 63, 0});
    live = {10, 63};
    h.compact(17, is_live);
    CHECK(h.size() == 64);  // 64 < 4 x 17: left alone
    h.compact(2, is_live);
    REQUIRE(h.size() == 2);
    CHECK(h.top().serial == 10);
    h.pop();
    CHECK(h.top().serial == 63);
}

TEST_CASE("deadline_queue: random holds and early releases agree with a set of live items",
          "[resequencer][deadlines]") {
    std::mt19937_64 rng(20261203);
    for (int round = 0; round < 50; ++round) {
        queue h;
        std::set<std::tuple<std::int64_t, std::uint64_t>> live;  // (deadline, serial)
        std::set<std::uint64_t> live_serials;
        std::uint64_t serial = 0;
        const auto is_live = [&](const queue::item& it) {
            return live_serials.count(it.serial) != 0;
        };
        // Even rounds: deadlines at random; odd ones: mostly in order, one in 20 earlier.
        const bool mostly_in_order = round % 2 == 1;
        for (int step = 0; step < 2000; ++step) {
            const auto what = rng() % 10;
            if (what < 5) {  // hold
                const auto d = mostly_in_order
                                   ? step - (rng() % 20 == 0 ? static_cast<int>(rng() % 100) : 0)
                                   : static_cast<std::int64_t>(rng() % 100);
                h.push({ms(d), ++serial, static_cast<std::uint32_t>(rng() % 16)});
                live.emplace(d, serial);
                live_serials.insert(serial);
                h.compact(live.size(), is_live);
                REQUIRE(h.size() <= std::max<std::size_t>(64, 4 * live.size()) + 1);
                REQUIRE(h.stored() <= 2 * h.size() + 64);
            } else if (what < 8 && !live.empty()) {  // delivered early: its item goes stale
                auto it = live.begin();
                std::advance(it, static_cast<long>(rng() % live.size()));
                live_serials.erase(std::get<1>(*it));
                live.erase(it);
            } else {  // the earliest live deadline comes due
                while (!h.empty() && !is_live(h.top())) h.pop();
                if (live.empty()) {
                    REQUIRE(h.empty());
                    continue;
                }
                REQUIRE(h.top().deadline.count() == std::get<0>(*live.begin()));
                REQUIRE(h.top().serial == std::get<1>(*live.begin()));
                live_serials.erase(h.top().serial);
                live.erase(live.begin());
                h.pop();
            }
        }
    }
}

TEST_CASE("deadline_queue: popped items are dropped, so a steady stream keeps it bounded",
          "[resequencer][deadlines]") {
    queue h;
    std::uint64_t serial = 0;
    for (std::int64_t t = 0; t < 1000; ++t) h.push({ms(t), ++serial, 0});
    // One push and one pop a step, 1000 live throughout: nothing is stale, compaction never runs.
    for (std::int64_t t = 1000; t < 100000; ++t) {
        h.push({ms(t), ++serial, 0});
        REQUIRE(h.top().deadline.count() == t - 1000);
        h.pop();
        h.compact(h.size(), [](const queue::item&) { return true; });
        REQUIRE(h.size() == 1000);
        REQUIRE(h.stored() <= 2 * h.size() + 64);
    }
}
