// detail::lane_registry and the lane counters: one lane per thread, the overflow lane past them,
// saturating per-window counts.
#include "keyroute_catch.hpp"

#include <keyroute/router/lanes.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
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

TEST_CASE(
    "lanes: a thread that ends gives its lane back, to a new thread or one on the overflow "
    "lane",
    "[router][lanes]") {
    lane_registry r(2, 4, 16, 0x5678, 7);
    std::atomic<int> step{0};
    const auto wait_for = [&](int s) {
        while (step.load() < s) std::this_thread::yield();
    };
    std::uint16_t a_lane = 9;
    std::uint16_t c_first = 9;
    std::uint16_t c_then = 9;
    std::uint16_t d_first = 9;
    std::uint16_t d_then = 9;
    bool c_still_overflow = false;
    bool c_keeps = false;
    std::thread a([&] {
        a_lane = r.mine().index;
        step.store(1);
        wait_for(3);  // ends once C is on the overflow lane
    });
    wait_for(1);
    std::thread b([&] {
        (void)r.mine();
        step.store(2);
        wait_for(5);
    });
    wait_for(2);
    std::thread c([&] {
        c_first = r.mine().index;  // both lanes held: the overflow lane
        c_still_overflow = &r.leave_overflow() == &r.at(2);
        step.store(3);
        wait_for(4);
        c_then = r.leave_overflow().index;  // A has ended: its lane
        c_keeps = &r.mine() == &r.at(c_then);
        step.store(5);
    });
    a.join();
    step.store(4);
    c.join();
    b.join();  // B's lane goes back too
    std::thread d([&] {
        d_first = r.mine().index;
        d_then = r.mine().index;
    });
    d.join();
    CHECK(c_first == 2U);
    CHECK(c_still_overflow);
    CHECK(c_then == a_lane);
    CHECK(c_keeps);
    CHECK(d_first < 2U);  // a lane given back, not the overflow lane
    CHECK(d_then == d_first);
}

TEST_CASE("lanes: a thread that ends after its router is gone touches nothing of it",
          "[router][lanes]") {
    // Run under ASan: the thread's lease of the lane outlives the registry.
    std::atomic<int> step{0};
    auto r = std::make_unique<lane_registry>(2, 4, 16, 0x9abc, 7);
    std::uint16_t got = 9;
    std::thread t([&] {
        got = r->mine().index;
        step.store(1);
        while (step.load() < 2) std::this_thread::yield();
    });
    while (step.load() < 1) std::this_thread::yield();
    r.reset();
    step.store(2);
    t.join();
    CHECK(got == 0U);
}

namespace {
// Routes in its destructor, which runs after the lane's lease gave the lane back when the
// object was made before the thread's first lane.
struct routes_at_exit {
    lane_registry* r = nullptr;
    std::uint16_t* got = nullptr;
    routes_at_exit(const routes_at_exit&) = delete;
    auto operator=(const routes_at_exit&) -> routes_at_exit& = delete;
    routes_at_exit(routes_at_exit&&) = delete;
    auto operator=(routes_at_exit&&) -> routes_at_exit& = delete;
    routes_at_exit(lane_registry* registry, std::uint16_t* out) : r(registry), got(out) {}
    ~routes_at_exit() { *got = r->mine().index; }
};
}  // namespace

TEST_CASE("lanes: a thread routing after it gave its lanes back takes its own lane again",
          "[router][lanes]") {
    // Another lane, or the overflow lane, would send the key's late event where it could pass
    // the thread's earlier ones; its own lane keeps the order (and closes its open stretches).
    lane_registry r(2, 4, 16, 0xdef0, 7);
    std::uint16_t first = 9;
    std::uint16_t at_exit = 9;
    std::atomic<bool> other_done{false};
    std::thread other([&] {
        (void)r.mine();  // lane 0, given back when `other` ends: t takes it
        other_done.store(true);
    });
    other.join();
    std::thread t([&] {
        thread_local routes_at_exit late(&r, &at_exit);
        first = r.mine().index;
    });
    t.join();
    CHECK(other_done.load());
    CHECK(first == 0U);    // the lane `other` gave back
    CHECK(at_exit == 0U);  // its own again, not lane 1 nor the overflow lane
}

TEST_CASE("lanes: a thread that takes over a lane closes the stretches open on it",
          "[router][lanes]") {
    lane_registry r(1, 4, 16, 0x1357, 7);
    std::thread a([&] {
        lane& ln = r.mine();
        (void)ln.slots[3].seq.next(true, ln.episodes, ln.episode_step, 1000);  // opens
        ln.slots[3].run_left = 5;
        ln.slots[4].run_left = 5;  // no stretch open
    });
    a.join();
    bool closing3 = false;
    bool closing4 = true;
    std::uint16_t run3 = 9;
    std::uint16_t run4 = 9;
    std::thread b([&] {
        lane& ln = r.mine();
        closing3 = ln.slots[3].seq.closing();
        closing4 = ln.slots[4].seq.closing();
        run3 = ln.slots[3].run_left;
        run4 = ln.slots[4].run_left;
    });
    b.join();
    CHECK(closing3);
    CHECK(run3 == 0U);  // its next event leaves the run's fast path
    CHECK_FALSE(closing4);
    CHECK(run4 == 5U);
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
