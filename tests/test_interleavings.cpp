// Interleavings of two threads that a stress test can only hope to hit, forced: the route path's
// KEYROUTE_INTERLEAVING_POINT (salting_router.hpp) pauses one thread at a named point while the
// other routes, then lets it go on. Deterministic: event times come from the test, and which
// lane each thread routes through (its own, or the overflow lane it shares) is set by the config.
// Some cases' bugs change no decision: a write past the sketch (undefined behaviour, which may
// go unnoticed or corrupt the heap) or a signed overflow. Only the asan preset (ASan + UBSan, in
// CI) reliably fails them before their fix.

// Before the router's header: this test's pause points.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace interleave {

// The armed thread stops at `target` each time it passes it; nullptr = nowhere.
inline std::atomic<const char*> target{nullptr};
inline std::atomic<int> stage{0};  // 0: running, 1: paused at target, 2: released
inline thread_local bool armed = false;

inline void point(const char* name) {
    const char* t = target.load();
    if (!armed || t == nullptr || std::strcmp(name, t) != 0) return;
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
}

// Waits (10 s at most) for the armed thread to pause; false if it never does (a route path that
// no longer passes the point then fails the test instead of hanging it).
inline auto wait_paused() -> bool {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (stage.load() != 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    return stage.load() == 1;
}

// Lets the paused thread go on to `next` (nullptr: to the end).
inline void resume_to(const char* next) {
    target.store(next);
    stage.store(2);
}

}  // namespace interleave

#define KEYROUTE_INTERLEAVING_POINT(name) ::interleave::point(name)

#include "keyroute_catch.hpp"

#include <keyroute/salting_router.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

using clock_type = std::chrono::system_clock;

auto at_window(std::int64_t w) -> clock_type::time_point {
    return clock_type::time_point{std::chrono::minutes(w) + std::chrono::seconds(1)};
}

}  // namespace

// 0.2.6's fix 3. A lane whose event began in window w as another thread moved the router to
// w + 1 and admitted the event's key there: the slot is live for the late lane too, which
// routes the event as the tracked key's; until 0.2.6 it saw the slot as stale, admitted the key
// again with a new episode, and the key's stamps on the other lane restarted from 0 in the
// middle of its runs.
TEST_CASE("a lane left behind by a new window does not admit again a key admitted in it",
          "[router][interleaving]") {
    keyroute::salting_config config;
    config.partitions = 8;
    config.threshold = 2;  // admission at an estimate of 2, hot above 2 events
    config.lanes = 2;
    config.seed = 11;
    config.producer_id = 5;
    keyroute::salting_router<> router(config);
    constexpr std::int64_t w = 29000000;
    const std::string_view key = "tenant-7";

    // Both lanes route in window w, so the late lane's levels for w count two active lanes
    // (each sketch update then weighs 2: one event of a key reaches the admission level).
    (void)router.route("warm-up-b", at_window(w));
    keyroute::route_decision late{};
    interleave::target.store("decide_in");
    std::thread lane_a([&] {
        (void)router.route("warm-up-a", at_window(w));
        interleave::armed = true;
        late = router.decide(key, at_window(w));  // pauses in decide_in, window w known
    });
    if (!interleave::wait_paused()) {
        interleave::resume_to(nullptr);
        lane_a.join();
        FAIL("the route path never reached KEYROUTE_INTERLEAVING_POINT(\"decide_in\")");
    }

    // Meanwhile: the router moves to w + 1, where the key is admitted and turns hot.
    keyroute::route_decision d{};
    for (int i = 0; i < 8; ++i) d = router.decide(key, at_window(w + 1));
    REQUIRE(d.salted);
    REQUIRE(d.stamp);
    const std::uint64_t episode = d.stamp.episode;
    const std::uint64_t sequence = d.stamp.sequence;

    interleave::resume_to(nullptr);
    lane_a.join();
    interleave::stage.store(0);

    // The late event counted as the tracked key's: stamped with the same episode.
    CHECK(late.stamp);
    CHECK(late.stamp.episode == episode);
    // The key's runs go on in the same episode, its numbers where they left off.
    const auto next = router.decide(key, at_window(w + 1));
    CHECK(next.stamp.episode == episode);
    CHECK(next.stamp.sequence == sequence + 1);
    CHECK(router.stats().hot_keys.size() >= 1);
}

// 0.2.6's fix 2. A lane that found a key's slot, then read the slot's episode while the slot had
// gone to another key, then checked the fingerprint once the slot had come back to the first
// key: the fingerprint matched, and until 0.2.6 the event was stamped with the other key's
// episode (its resequencer would order it among that key's events). The episode is now read
// again after the fingerprint, like a seqlock: it changed, so the event goes home unstamped.
TEST_CASE(
    "an event whose slot went to another key and back is not stamped with that key's "
    "episode",
    "[router][interleaving]") {
    keyroute::salting_config config;
    config.partitions = 8;
    config.threshold = 2;
    config.max_hot_keys = 1;  // 8 slots, one probe group: a new key takes the first reusable slot
    config.lanes = 2;
    config.seed = 12;
    config.producer_id = 6;
    keyroute::salting_router<> router(config);
    constexpr std::int64_t w = 29000100;

    // Tracks `key` in window `at` through this thread's lane; returns its episode there.
    const auto track = [&router](std::string_view key, std::int64_t at) -> std::uint64_t {
        for (int i = 0; i < 16; ++i) {
            const auto d = router.decide(key, at_window(at));
            if (d.stamp) return d.stamp.episode;
        }
        return 0;
    };
    const std::uint64_t first_a = track("key-a", w);
    REQUIRE(first_a != 0);

    keyroute::route_decision paused{};
    interleave::target.store("tracked");
    std::thread lane_b([&] {
        interleave::armed = true;
        paused = router.decide("key-a", at_window(w));  // finds key-a's slot, live in w
    });
    if (!interleave::wait_paused()) {
        interleave::resume_to(nullptr);
        lane_b.join();
        FAIL("the route path never reached KEYROUTE_INTERLEAVING_POINT(\"tracked\")");
    }
    // key-a is stale two windows later: key-b takes its slot, the first of the group.
    const std::uint64_t b = track("key-b", w + 2);
    REQUIRE(b != 0);
    // The paused lane reads the slot's episode now: key-b's.
    interleave::stage.store(0);
    interleave::resume_to("tracked_episode");
    REQUIRE(interleave::wait_paused());
    // key-b is stale in turn: key-a takes the slot back, with a new episode.
    const std::uint64_t second_a = track("key-a", w + 4);
    REQUIRE(second_a != 0);
    REQUIRE(second_a != first_a);
    interleave::resume_to(nullptr);
    lane_b.join();
    interleave::stage.store(0);

    // The fingerprint is key-a's again, but the episode read is not the slot's any more.
    CHECK(paused.stamp.episode != b);
    CHECK_FALSE(paused.stamp);
    CHECK(paused.partition == paused.home);
}

// 0.2.10's fix in sketch_add (65dbb01). Threads beyond `lanes` share one overflow lane, and
// with it its cached levels: one of them may read the lane's sketch slice (a base, then a mask)
// while another refreshes it. Here a reader reads the base of the lane's half-row slice (two
// lanes active in its window), then a writer on the same lane moves to a window where that lane
// routes alone, with a whole-row slice, and the reader reads the whole row's mask: until 0.2.10
// the half row's base plus the whole row's mask indexed up to half a row past the sketch's
// second row (AddressSanitizer: heap-buffer-overflow, as in a CI run of test_stress). The
// reader's key is untracked: it goes home whatever cells it counts in. Sixteen keys: a key
// reads past the sketch when its second cell falls in the upper half of the row, one key in two
// (with seed 13, checked: without the fix AddressSanitizer reports the overflow).
TEST_CASE("a torn read of the shared lane's sketch slice stays in the sketch",
          "[router][interleaving]") {
    keyroute::salting_config config;
    config.partitions = 8;  // sketch rows of 1,024 cells: slices of 512 with two active lanes
    config.threshold = 16;  // admission at 8: every untracked event counts, with weight 2
    config.lanes = 1;       // this thread takes lane 0; the others share the overflow lane
    config.seed = 13;
    config.producer_id = 7;
    keyroute::salting_router<> router(config);
    constexpr std::int64_t w = 29000200;

    for (int i = 0; i < 16; ++i) {
        const std::int64_t both = w + 2 * i;  // lane 0 and the shared lane route
        const std::string key = "reader-" + std::to_string(i);
        // Lane 0 first, so that the shared lane's levels for `both` count two active lanes and
        // give it the second half of each row (the overflow lane's index, 1, is odd).
        (void)router.route("lane-0", at_window(both));
        keyroute::route_decision read{};
        interleave::target.store("sketch_slice");
        std::thread reader([&] {
            interleave::armed = true;
            read = router.decide(key, at_window(both));  // pauses between base and mask
        });
        if (!interleave::wait_paused()) {
            interleave::resume_to(nullptr);
            reader.join();
            FAIL("the route path never reached KEYROUTE_INTERLEAVING_POINT(\"sketch_slice\")");
        }
        // The next window, where only the shared lane routes: its slice is the whole row.
        std::thread writer([&] { (void)router.route("writer", at_window(both + 1)); });
        writer.join();
        interleave::resume_to(nullptr);
        reader.join();
        interleave::stage.store(0);
        CHECK_FALSE(read.salted);
        CHECK(read.partition == read.home);
    }
    CHECK(router.stats().hot_keys.empty());
}

// 0.2.10's fix in position_in (5c08640). A reader on the shared lane reads the lower bound of
// the lane's cached window, the empty cache's INT64_MIN (its event is in the clock's first
// window, whose bounds do not fit 64 bits); a writer on the same lane caches a window of today
// and the reader reads its upper bound: until 0.2.10 the span, upper minus lower, overflowed
// the signed 64 bits (undefined behaviour: UndefinedBehaviorSanitizer, signed integer
// overflow). The event's position in the window is now computed in unsigned arithmetic.
TEST_CASE("a torn read of the shared lane's window bounds is not an overflow",
          "[router][interleaving]") {
    keyroute::salting_config config;
    config.partitions = 8;
    config.lanes = 1;  // this thread takes lane 0; the others share the overflow lane
    config.seed = 14;
    config.producer_id = 8;
    keyroute::salting_router<> router(config);
    // 1 us after the clock's earliest time: the first window's start is before it.
    const clock_type::time_point first{
        clock_type::duration::min() +
        std::chrono::duration_cast<clock_type::duration>(std::chrono::microseconds(1))};
    (void)router.route("lane-0", first);  // the router's window: the first one

    keyroute::route_decision read{};
    interleave::target.store("window_bounds");
    std::thread reader([&] {
        interleave::armed = true;
        read = router.decide("reader", first);  // the lane's levels: pauses after the lower bound
    });
    if (!interleave::wait_paused()) {
        interleave::resume_to(nullptr);
        reader.join();
        FAIL("the route path never reached KEYROUTE_INTERLEAVING_POINT(\"window_bounds\")");
    }
    constexpr std::int64_t today = 29000400;
    std::thread writer([&] { (void)router.route("writer", at_window(today)); });
    writer.join();
    interleave::resume_to(nullptr);
    reader.join();
    interleave::stage.store(0);
    CHECK_FALSE(read.salted);
    CHECK(read.partition == read.home);
    // The router goes on in today's window, on both lanes (the shared lane's levels, left on
    // the first window by the reader, are refreshed for today).
    const auto after = router.decide("reader", at_window(today));
    CHECK(after.partition == after.home);
    keyroute::route_decision shared_after{};
    std::thread shared([&] { shared_after = router.decide("reader", at_window(today)); });
    shared.join();
    CHECK(shared_after.partition == shared_after.home);
    CHECK(shared_after.partition == after.partition);
    CHECK(router.stats().window == today);
}
