// Interleavings of threads that a stress test can only hope to hit, forced: the router's test
// seam (its Traits::point) pauses one armed thread at a named point of the route path while
// other threads route, then lets it go on. Deterministic: event times come from the test, and
// which lane each thread routes through (its own, or the overflow lane it shares) follows from
// the order threads first route.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer.hpp>
#include <keyroute/salting_router.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace interleave {

// The armed thread stops at `target` each time it passes it; nullptr = nowhere.
inline std::atomic<const char*> target{nullptr};
inline std::atomic<int> stage{0};  // 0: running, 1: paused at target, 2: released
inline thread_local bool armed = false;

// Waits (10 s at most) for the armed thread to pause; false if it never does (a route path that
// no longer passes the point then fails the test instead of hanging it).
inline auto wait_paused() -> bool {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (stage.load() != 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    return stage.load() == 1;
}

struct traits : keyroute::detail::router_traits {
    static void point(const char* name) noexcept {
        const char* t = target.load();
        if (!armed || t == nullptr || std::strcmp(name, t) != 0) return;
        stage.store(1);
        while (stage.load() != 2) std::this_thread::yield();
    }
};

}  // namespace interleave

namespace {

using clock_type = std::chrono::system_clock;
using router_type =
    keyroute::salting_router<keyroute::hash_partitioner<>, clock_type, interleave::traits>;

auto at_window(std::int64_t w, std::int64_t ms = 1000) -> clock_type::time_point {
    return clock_type::time_point{std::chrono::minutes(w) + std::chrono::milliseconds(ms)};
}

// A thread running `body`, which arms itself (interleave::armed = true) before the call that is
// to pause at `point`. finish(), or the destructor when a REQUIRE fails, lets it go on to the
// end and joins it.
class paused_thread {
public:
    template <class Body>
    paused_thread(const char* point, Body&& body) {
        interleave::target.store(point);
        m_thread = std::thread(std::forward<Body>(body));
    }
    paused_thread(const paused_thread&) = delete;
    auto operator=(const paused_thread&) -> paused_thread& = delete;
    ~paused_thread() { finish(); }

    [[nodiscard]] auto paused() const -> bool {
        return m_thread.joinable() && interleave::wait_paused();
    }

    void finish() {
        if (!m_thread.joinable()) return;
        interleave::target.store(nullptr);
        interleave::stage.store(2);
        m_thread.join();
        interleave::stage.store(0);
    }

private:
    std::thread m_thread;
};

// One routed event of a key, numbered in routing order per lane.
struct routed {
    int id;
    keyroute::route_decision d;
};

// What a consumer's resequencer delivers of one key's events, reading the key's home partition
// first or last, and the gaps it reports.
struct delivered {
    std::vector<int> ids;
    std::size_t gaps = 0;
};
auto deliver(std::string_view key, const std::vector<routed>& events, bool home_first)
    -> delivered {
    delivered out;
    keyroute::resequencer<int> consumer(
        keyroute::resequencer_config{},
        [&out](keyroute::delivery<int>&& d) { out.ids.push_back(d.event); },
        [&out](const keyroute::gap_report&) { ++out.gaps; });
    for (const bool home_pass : {home_first, !home_first}) {
        for (const auto& r : events) {
            if ((r.d.partition == r.d.home) != home_pass) continue;
            (void)consumer.push(key, r.d.stamp, r.id, keyroute::origin{r.d.partition, -1},
                                std::chrono::milliseconds(0));
        }
    }
    consumer.flush();
    return out;
}

auto config(std::uint32_t lanes) -> keyroute::salting_config {
    keyroute::salting_config c;
    c.partitions = 16;
    c.threshold = 16;
    c.lanes = lanes;
    c.seed = 21;
    c.producer_id = 5;
    return c;
}

}  // namespace

TEST_CASE("two lanes that prove a key at once place it once, and each keeps its order",
          "[interleavings][router]") {
    router_type router(config(2));
    std::vector<routed> a;
    std::vector<routed> b;
    // Lane 0 (thread A) counts the key until an event proves it, and pauses there, before it
    // places the key; lane 1 (thread B) proves and places it meanwhile.
    paused_thread thread_a("place_new", [&] {
        interleave::armed = true;
        for (int i = 0; i < 200; ++i) a.push_back({i, router.decide("hot", at_window(5))});
    });
    REQUIRE(thread_a.paused());
    std::thread thread_b([&] {
        for (int i = 0; i < 200; ++i) b.push_back({i, router.decide("hot", at_window(5))});
    });
    thread_b.join();
    thread_a.finish();
    for (const auto* lane : {&a, &b}) {
        std::size_t spread = 0;
        std::uint64_t episode = 0;
        for (const auto& r : *lane) {
            if (!r.d.stamp) {
                CHECK(r.d.partition == r.d.home);
                continue;
            }
            if (episode == 0) {  // the lane's first stamped event opens its episode on home
                episode = r.d.stamp.episode;
                CHECK(r.d.stamp.sequence == 0);
                CHECK(r.d.partition == r.d.home);
            }
            CHECK(r.d.stamp.episode == episode);
            spread += r.d.partition != r.d.home ? 1U : 0U;
        }
        CHECK(spread > 50);
        for (const bool home_first : {true, false}) {
            const delivered got = deliver("hot", *lane, home_first);
            CHECK(got.gaps == 0);
            REQUIRE(got.ids.size() == lane->size());
            for (std::size_t i = 0; i < got.ids.size(); ++i)
                CHECK(got.ids[i] == static_cast<int>(i));
        }
    }
    const auto lane_of = [](const std::vector<routed>& events) {
        for (const auto& r : events) {
            if (r.d.stamp) return static_cast<int>(r.d.stamp.lane);
        }
        return -1;
    };
    CHECK(lane_of(a) != lane_of(b));
    CHECK(lane_of(a) >= 0);
}

TEST_CASE("a lane paused in one window while the router moves on routes its event home",
          "[interleavings][router]") {
    router_type router(config(2));
    const keyroute::hash_partitioner<> base(16);
    keyroute::route_decision paused{};
    // Thread A's lane is in window 3, the key proven there; it pauses with the key's slot read.
    paused_thread thread_a("tracked", [&] {
        for (int i = 0; i < 40; ++i) (void)router.decide("hot", at_window(3));
        interleave::armed = true;
        paused = router.decide("hot", at_window(3, 59000));
        interleave::armed = false;
    });
    REQUIRE(thread_a.paused());
    // This thread moves the router to window 4, where nothing is proven yet.
    for (int i = 0; i < 10; ++i) {
        const auto d = router.decide("cold-" + std::to_string(i), at_window(4));
        CHECK(d.partition == base.route("cold-" + std::to_string(i)));
    }
    CHECK(router.stats().window == 4);
    thread_a.finish();
    // Its lane had spread the key in window 3: the paused event may continue the lane's stretch
    // there (stamped), but an unstamped one goes home.
    if (!paused.stamp) CHECK(paused.partition == paused.home);
    CHECK(router.stats().routed == 51);
}

TEST_CASE("an overflow thread paused at a window change loses none of the total",
          "[interleavings][router]") {
    router_type router(config(1));
    (void)router.decide("first", at_window(1));  // this thread takes the only exclusive lane
    std::uint64_t routed = 1;
    paused_thread thread_x("overflow_enter", [&] {
        (void)router.decide("x", at_window(1));  // the overflow lane, in window 1
        interleave::armed = true;
        (void)router.decide("x", at_window(2));  // moves the overflow lane to window 2, pauses
        interleave::armed = false;
    });
    REQUIRE(thread_x.paused());
    std::thread thread_y([&] {
        for (int i = 0; i < 100; ++i) (void)router.decide("y" + std::to_string(i), at_window(2));
    });
    thread_y.join();
    thread_x.finish();
    routed += 2 + 100;
    const auto s = router.stats();
    CHECK(s.routed == routed);
    CHECK(s.stamped == 0);
    CHECK(s.salted == 0);
}

TEST_CASE("a run on a partition that went down leaves it while the next plan is being written",
          "[interleavings][router]") {
    router_type router(config(3));
    // This thread spreads the key until an event of it goes off home: a run is open there.
    std::vector<routed> events;
    constexpr std::uint32_t none = 0xffffffffU;
    std::uint32_t run = none;
    for (int i = 0; i < 400 && run == none; ++i) {
        const auto d = router.decide("hot", at_window(5));
        events.push_back({i, d});
        if (d.stamp && d.partition != d.home) run = d.partition;
    }
    REQUIRE(run != none);
    router.set_available(run, false);
    // Another thread's check finds a plan due (availability changed) and pauses with the new
    // plan written, the key's pieces in it, not yet published: a lane's read of them is busy.
    paused_thread planning("plan_written", [&] {
        interleave::armed = true;
        for (int i = 0; i < 400; ++i)
            (void)router.decide("cold-" + std::to_string(i), at_window(5));
        interleave::armed = false;
    });
    REQUIRE(planning.paused());
    for (int i = 0; i < 200; ++i) {
        const auto d = router.decide("hot", at_window(5));
        CHECK(d.partition != run);
        events.push_back({static_cast<int>(events.size()), d});
    }
    planning.finish();
    for (const bool home_first : {true, false}) {
        const delivered got = deliver("hot", events, home_first);
        CHECK(got.gaps == 0);
        REQUIRE(got.ids.size() == events.size());
        for (std::size_t i = 0; i < got.ids.size(); ++i) CHECK(got.ids[i] == static_cast<int>(i));
    }
}
