// The salting router: cold keys stay exactly where the base partitioner puts them, hot keys
// spread, windows roll over, clocks may jump, stamps let a consumer restore order, and bad
// configuration is refused.
#include "keyroute_catch.hpp"
#include "router_config.hpp"

#include <keyroute/migration.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/resequencer.hpp>
#include <keyroute/salting_router.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using clock_type = std::chrono::system_clock;
using time_point = clock_type::time_point;

auto at(std::int64_t ms) -> time_point { return time_point(std::chrono::milliseconds(ms)); }

using keyroute_test::router_config;

// One minute of traffic: `hot_share` of `events` for "hot", the rest over `cold_keys` keys.
struct minute {
    std::vector<std::string> keys;
    std::vector<time_point> times;
};

auto skewed_minute(std::int64_t window, std::size_t events, double hot_share, std::size_t cold_keys,
                   std::uint64_t seed) -> minute {
    std::mt19937_64 rng(seed);
    minute m;
    for (std::size_t i = 0; i < events; ++i) {
        const bool hot = std::uniform_real_distribution<double>(0, 1)(rng) < hot_share;
        m.keys.push_back(hot ? std::string("hot") : "cold-" + std::to_string(rng() % cold_keys));
        m.times.push_back(at(window * 60000 + static_cast<std::int64_t>(i * 60000 / events)));
    }
    return m;
}

// A clock that ticks in whole seconds.
struct seconds_clock {
    using duration = std::chrono::seconds;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<seconds_clock>;
    [[maybe_unused]] static constexpr bool is_steady = false;
    static auto now() noexcept -> time_point { return time_point(duration(0)); }
};

// Routes on the lane the test names instead of the calling thread's (the simulator's seam).
struct chosen_lane : keyroute::detail::router_traits {
    static constexpr bool explicit_lane = true;
    static inline std::uint32_t current = 0;
    static auto lane() noexcept -> std::uint32_t { return current; }
};

}  // namespace

TEST_CASE("bad configuration is refused, naming the field", "[router][config]") {
    using router = keyroute::salting_router<>;
    auto c = router_config(0);
    REQUIRE_THROWS_AS(router(c), std::invalid_argument);
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("partitions"));
    c = router_config(8);
    c.window = std::chrono::milliseconds(0);
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("window"));
    c.window = std::chrono::milliseconds(-5);
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("-5"));
    c.window =
        std::chrono::hours(24 * 367);  // its length in nanoseconds must stay far from int64's end
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("window"));
    c = router_config(8);
    c.auto_fraction = 0;
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("auto_fraction"));
    c = router_config(8);
    c.lanes = 300;
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("lanes"));
    c = router_config(8);
    c.run_length = 0;
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("run_length"));
    c = router_config(8);
    c.max_hot_keys = 4097;
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("max_hot_keys"));
    c.max_hot_keys = 0;  // automatic
    REQUIRE_NOTHROW(router(c));
    CHECK(router(c).config().max_hot_keys == 128);
    c = router_config((1U << 20U) + 1U);
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("partitions"));
    c = router_config(8);
    c.min_threshold = 0;
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("min_threshold"));
    c.min_threshold = std::uint64_t{1} << 32U;  // the levels derived from it would overflow
    REQUIRE_THROWS_WITH(router(c), keyroute_test::contains("min_threshold"));
    c.min_threshold = (std::uint64_t{1} << 32U) - 1;
    REQUIRE_NOTHROW(router(c));
    // A window must be a whole number of the clock's ticks, or the lanes' cached bounds (in
    // ticks) and the window of a time would disagree.
    c = router_config(8);
    c.window = std::chrono::milliseconds(1500);
    REQUIRE_THROWS_WITH((keyroute::salting_router<keyroute::hash_partitioner<>, seconds_clock>(c)),
                        keyroute_test::contains("window"));
    c.window = std::chrono::seconds(3);
    REQUIRE_NOTHROW(keyroute::salting_router<keyroute::hash_partitioner<>, seconds_clock>(c));
    // The base partitioner must agree on the partition count.
    REQUIRE_THROWS_WITH(router(router_config(8), keyroute::hash_partitioner<>(9)),
                        keyroute_test::contains("differs"));
    // Kafka's scheme refuses counts above 2^31-1, through the router too.
    REQUIRE_THROWS_AS(
        keyroute::salting_router<keyroute::kafka_partitioner>(router_config(0x80000000ULL)),
        std::invalid_argument);
}

TEST_CASE("cold keys route exactly as the base partitioner, window after window",
          "[router][cold]") {
    keyroute::salting_router<keyroute::kafka_partitioner> router(router_config(16));
    const keyroute::kafka_partitioner kafka(16);
    std::size_t moved = 0;
    std::size_t stamped = 0;
    for (std::int64_t w = 0; w < 3; ++w) {
        for (std::size_t i = 0; i < 50000; ++i) {
            const std::string key =
                "user-" + std::to_string(i % 5000);  // 10 events each per window
            const auto d = router.decide(key, at(w * 60000 + static_cast<std::int64_t>(i)));
            moved += d.partition != kafka.route(key) ? 1 : 0;
            stamped += d.stamp ? 1 : 0;
            REQUIRE(d.home == kafka.route(key));
        }
    }
    CHECK(moved == 0);    // where the Java client would put them
    CHECK(stamped == 0);  // nothing to reorder: uniform traffic tracks no key
    CHECK(router.stats().salted == 0);
}

TEST_CASE("a key with 90% of the traffic spreads; the others keep their partition",
          "[router][hot]") {
    keyroute::salting_router<> router(router_config(100));
    const keyroute::hash_partitioner<> base(100);
    std::map<std::string, std::set<std::uint32_t>> used;
    for (std::int64_t w = 0; w < 3; ++w) {
        const auto m = skewed_minute(w, 200000, 0.9, 1000, static_cast<std::uint64_t>(w));
        std::vector<std::uint64_t> load(100, 0);
        for (std::size_t i = 0; i < m.keys.size(); ++i) {
            const auto d = router.decide(m.keys[i], m.times[i]);
            ++load[d.partition];
            if (w > 0) used[m.keys[i]].insert(d.partition);
        }
        if (w == 0) continue;
        const double mean = 200000.0 / 100;
        const auto max = *std::max_element(load.begin(), load.end());
        INFO("window " << w << ": max/mean " << static_cast<double>(max) / mean);
        CHECK(static_cast<double>(max) / mean <= 1.10);
    }
    CHECK(used["hot"].size() >= 90);  // 90% of the traffic needs at least 90 partitions
    for (const auto& [key, parts] : used) {
        if (key == "hot") continue;
        REQUIRE(parts.size() == 1);
        REQUIRE(*parts.begin() == base.route(key));
    }
    const auto s = router.stats();
    REQUIRE_FALSE(s.hot_keys.empty());
    CHECK(s.hot_keys.front().key == "hot");
    CHECK(s.hot_keys.front().salted);
}

TEST_CASE("an absolute threshold: a key at exactly the threshold is never salted",
          "[router][threshold]") {
    constexpr std::uint64_t threshold = 1000;
    keyroute::salting_router<> router(router_config(8, threshold));
    // "edge" has exactly `threshold` events in the window, "over" far more; 8000 others one each.
    std::vector<std::string> keys;
    for (std::uint64_t i = 0; i < threshold; ++i) keys.push_back("edge");
    for (std::uint64_t i = 0; i < 6 * threshold; ++i) keys.push_back("over");
    for (int i = 0; i < 8000; ++i) keys.push_back("k" + std::to_string(i));
    std::shuffle(keys.begin(), keys.end(), std::mt19937_64(3));
    std::uint64_t over_seen = 0;
    std::uint64_t first_salted_at = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const auto d = router.decide(keys[i], at(static_cast<std::int64_t>(i)));
        if (keys[i] == "edge") REQUIRE_FALSE(d.salted);
        if (keys[i] == "over") {
            ++over_seen;
            if (d.salted && first_salted_at == 0) first_salted_at = over_seen;
        }
        if (keys[i][0] == 'k') REQUIRE_FALSE(d.salted);
    }
    // Salting starts only past the threshold, and within about twice it (the candidate stage).
    CHECK(first_salted_at > threshold);
    CHECK(first_salted_at <= 2 * threshold + 64);
}

TEST_CASE(
    "a key split over four lanes leaves home once the lanes' counts together pass the "
    "threshold",
    "[router][threshold][lanes]") {
    constexpr std::uint64_t threshold = 400;
    keyroute::salting_router<keyroute::hash_partitioner<>, clock_type, chosen_lane> router(
        router_config(8, threshold, 4));
    // "split" is every other event, its events dealt to the lanes in turn; one cold key each
    // between them. Each lane alone reaches the threshold only after 4 * threshold of them.
    std::uint64_t home_before = 0;
    bool salted = false;
    for (std::uint32_t i = 0; i < 8 * threshold && !salted; ++i) {
        chosen_lane::current = i % 4U;
        const auto t = at(static_cast<std::int64_t>(i));
        REQUIRE_FALSE(router.decide("cold-" + std::to_string(i), t).salted);
        salted = router.decide("split", t).salted;
        if (!salted) ++home_before;
    }
    chosen_lane::current = 0;
    REQUIRE(salted);
    CHECK(home_before > threshold);
    // A lane sums the counts every threshold / 16 of its own events.
    CHECK(home_before <= threshold + threshold / 4 + 4);
}

TEST_CASE("windows roll over: a key must earn hotness again in each window", "[router][window]") {
    keyroute::salting_router<> router(router_config(8, 100));
    const keyroute::hash_partitioner<> base(8);
    bool spread = false;
    for (int i = 0; i < 2000; ++i) spread = router.decide("burst", at(i)).salted || spread;
    REQUIRE(spread);
    std::size_t salted_in_w1 = 0;
    for (int i = 0; i < 50; ++i) {
        const auto d = router.decide("burst", at(60000 + i));
        salted_in_w1 += d.salted ? 1 : 0;
        REQUIRE(d.partition == base.route("burst"));
        // The first closes the spread stretch, stamped on home: the unstamped events after it
        // wait behind it in a resequencer until the stretch's events elsewhere are delivered.
        CHECK(bool(d.stamp) == (i == 0));
    }
    CHECK(salted_in_w1 == 0);
    const auto d = router.decide("burst", at(3 * 60000));
    CHECK_FALSE(d.stamp);
    CHECK(d.partition == base.route("burst"));
    CHECK(router.stats().window == 3);
}

TEST_CASE("clocks that jump backwards or forwards never corrupt the state", "[router][clock]") {
    keyroute::salting_router<> router(router_config(16, 200));
    const keyroute::hash_partitioner<> base(16);
    const std::int64_t start = 1700000000000;  // 2023-11-14
    std::uint64_t routed = 0;
    auto run = [&](std::int64_t t0, int events) {
        for (int i = 0; i < events; ++i) {
            const std::string key = i % 2 == 0 ? "hot" : "c" + std::to_string(i % 300);
            const auto d = router.decide(key, at(t0 + i));
            REQUIRE(d.partition < 16U);
            if (key != "hot") REQUIRE(d.partition == base.route(key));
            ++routed;
        }
    };
    run(start, 5000);
    const auto w = router.stats().window;
    run(start - 3600 * 1000, 5000);  // back an hour: counted in the current window
    CHECK(router.stats().window == w);
    run(start + 365LL * 24 * 3600 * 1000, 5000);  // forward a year
    CHECK(router.stats().window == w + 365LL * 24 * 60);
    run(start, 5000);  // back to "now": late events again, the window stays
    CHECK(router.stats().window == w + 365LL * 24 * 60);
    run(-120000, 100);  // before the epoch: floor division, still fine
    // The ends of the clock's range: no overflow computing a window's bounds.
    for (const auto t :
         {time_point::max(), time_point::min(), time_point::max() - std::chrono::seconds(1)}) {
        REQUIRE(router.route("edge", t) < 16U);
        ++routed;
    }
    const auto s = router.stats();
    CHECK(s.routed == routed);
    CHECK(s.salted > 0);
}

TEST_CASE("late events count in the current window, however late they are", "[router][clock]") {
    for (const bool first : {true, false}) {
        const minute w0 = skewed_minute(0, 60000, 0.1, 500, 31);
        const minute w1 = skewed_minute(1, 60000, 0.1, 500, 32);
        const auto replay = [&](std::chrono::seconds lateness) {
            keyroute::salting_router<> router(router_config(16));
            std::vector<std::uint32_t> out;
            for (std::size_t i = 0; !first && i < w0.keys.size(); ++i)
                out.push_back(router.route(w0.keys[i], w0.times[i]));
            std::set<std::uint32_t> late_hot;
            for (std::size_t i = 0; i < w1.keys.size(); ++i) {
                const bool late = i % 7 == 1 || i % 7 == 3 || i % 7 == 4 || i % 7 == 5;
                const time_point t = late ? w1.times[i] - lateness : w1.times[i];
                const auto d = router.decide(w1.keys[i], t);
                out.push_back(d.partition);
                if (late && w1.keys[i] == "hot") late_hot.insert(d.partition);
                if (i % 1000 == 0) CHECK(router.stats().window == 1);
            }
            std::uint64_t window_load = 0;
            for (const auto l : router.stats().partition_load) window_load += l;
            CHECK(window_load == w1.keys.size());  // every window-1 event, late or not
            CHECK(late_hot.size() > 1);            // late events of the hot key spread too
            return out;
        };
        // A minute late or a day late: the same (only on-time events move the window's clock).
        CHECK(replay(std::chrono::seconds(60)) == replay(std::chrono::seconds(86400)));
    }
}

TEST_CASE("windows are aligned to the epoch: a trace shifted by whole windows routes the same",
          "[router][clock]") {
    // Three windows of traffic, replayed as they are (windows 0 to 2: an empty lane cache has
    // index 0, which must not pass for window 0's), 512 windows later, and 512 windows before
    // the epoch. Windows are told apart by tags of their low bits, so the three replays must
    // decide alike, event for event, stamps included.
    std::vector<minute> trace;
    for (std::int64_t w = 0; w < 3; ++w)
        trace.push_back(skewed_minute(w, 30000, 0.3, 800, 40 + static_cast<std::uint64_t>(w)));
    const auto replay = [&](std::int64_t shift) {
        keyroute::salting_router<> router(router_config(16));
        std::vector<keyroute::route_decision> out;
        for (const minute& m : trace) {
            for (std::size_t i = 0; i < m.keys.size(); ++i)
                out.push_back(router.decide(m.keys[i], m.times[i] + std::chrono::minutes(shift)));
        }
        return out;
    };
    // Before the epoch the window is floor(time / window) at any resolution: half a
    // millisecond before a boundary is in the window before it.
    for (const std::int64_t boundary : {0, -60000}) {
        keyroute::salting_router<> router(router_config(16));
        (void)router.route("k", at(boundary) - std::chrono::microseconds(500));
        CHECK(router.stats().window == boundary / 60000 - 1);
    }
    const auto base = replay(0);
    for (const std::int64_t shift : {512, -512}) {
        const auto shifted = replay(shift);
        REQUIRE(shifted.size() == base.size());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < base.size(); ++i) {
            if (shifted[i].partition != base[i].partition || shifted[i].salted != base[i].salted ||
                shifted[i].stamp != base[i].stamp)
                ++differ;
        }
        CHECK(differ == 0);
    }
}

TEST_CASE("in-window plans keep working when busy windows are not consecutive",
          "[router][window]") {
    // Busy every other minute: a key at 20% turns hot in each busy window and is planned then
    // (no plan carries over a gap). The piece space for those plans must start empty in each
    // window; it had kept what the window of the same parity before the gap used, so after a
    // dozen gaps no plan fitted and the key's runs went wherever the load was lowest, over 54 to
    // 60 of the 64 partitions (and, grown for long enough, the count wrapped and a plan was
    // written outside its array).
    keyroute::salting_router<> router(router_config(64));
    std::mt19937_64 rng(5);
    constexpr int events = 20000;
    std::size_t most_early = 0;
    std::size_t most_late = 0;
    for (std::int64_t round = 0; round < 30; ++round) {
        const std::int64_t w = 2 * round;
        std::set<std::uint32_t> parts;
        for (int i = 0; i < events; ++i) {
            const bool hot = rng() % 5 == 0;
            const std::string key = hot ? "hot" : "c" + std::to_string(rng() % 3000);
            const auto p = router.route(key, at(w * 60000 + std::int64_t{i} * 60000 / events));
            if (hot) parts.insert(p);
        }
        (round < 10 ? most_early : most_late) =
            std::max(round < 10 ? most_early : most_late, parts.size());
    }
    // 13 partitions' worth of events, but the cold keys fill 80% of every partition: at the
    // level the plans aim at, the key needs about 51 of them. Planned, it used 42 to 47 in every
    // window, the same after twenty gaps as before the first.
    INFO("most partitions in rounds 0 to 9: " << most_early
                                              << ", in rounds 10 to 29: " << most_late);
    CHECK(most_late <= most_early + 3);
    CHECK(most_late <= 50);
}

TEST_CASE("a slot given to another key starts that key's stamps afresh", "[router][stamp]") {
    // One probe group (max_hot_keys 1: 16 slots, 2 groups): keys admitted one after another
    // take over slots other keys left; each key's stamps start at sequence 0 in a new episode.
    auto c = router_config(4, 3, 1);
    c.max_hot_keys = 1;
    keyroute::salting_router<> router(c);
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> last;  // episode, next
    std::set<std::uint64_t> episodes;
    for (std::int64_t w = 0; w < 40; ++w) {
        for (int k = 0; k < 24; ++k) {
            const std::string key = "k" + std::to_string((w * 7 + k) % 60);
            for (int e = 0; e < 12; ++e) {
                const auto d = router.decide(key, at(w * 60000 + k * 100 + e));
                if (!d.stamp) continue;
                auto& [episode, next] = last[key];
                if (d.stamp.episode != episode) {
                    CHECK(d.stamp.sequence == 0);  // a new episode starts at 0 ...
                    CHECK(d.partition == d.home);  // ... on home
                    CHECK(episodes.insert(d.stamp.episode).second);  // and never reuses an id
                    episode = d.stamp.episode;
                    next = 0;
                }
                CHECK(d.stamp.sequence == next++);
            }
        }
    }
    CHECK(episodes.size() > 10);  // not vacuous: keys did take over slots
}

TEST_CASE("stamps: one episode per key and lane, gapless sequences, first events at home",
          "[router][stamp]") {
    keyroute::salting_router<> router(router_config(32, 200));
    const keyroute::hash_partitioner<> base(32);
    std::map<std::uint64_t, std::uint64_t> next_sequence;  // episode -> next expected
    bool left_home = false;
    bool stamped_home_first = true;
    for (int i = 0; i < 20000; ++i) {
        const std::string key = i % 3 == 0 ? "tenant-9" : "u" + std::to_string(i % 997);
        const auto d = router.decide(key, at(i * 2));
        if (!d.stamp) {
            REQUIRE(d.partition == d.home);
            continue;
        }
        REQUIRE(key == "tenant-9");
        REQUIRE(d.stamp.producer == 42U);
        REQUIRE(d.stamp.episode >= 1U);
        REQUIRE(d.stamp.sequence == next_sequence[d.stamp.episode]++);
        if (d.partition != base.route(key)) left_home = true;
        if (!left_home && d.stamp.sequence == 0 && d.partition != d.home)
            stamped_home_first = false;
    }
    CHECK(left_home);
    CHECK(stamped_home_first);
    CHECK(next_sequence.size() == 1);  // one lane, one admission: one episode
}

TEST_CASE("an episode opens at a key's first event placed off home: none stays home throughout",
          "[router][stamp]") {
    // Zipf 1.0 over 20k keys on 64 partitions, 131072 events a window: runs of 32 events, so the
    // event after an episode's first (home) event continues the run off home. Keys the plan
    // keeps home, and a spread key's home runs before it first leaves, are not stamped.
    constexpr std::size_t keys = 20000;
    constexpr std::int64_t per_window = 131072;
    std::vector<double> cdf(keys);
    double total = 0;
    for (std::size_t k = 0; k < keys; ++k) cdf[k] = total += 1.0 / static_cast<double>(k + 1);
    std::mt19937_64 rng(11);
    keyroute::salting_router<> router(router_config(64));
    struct episode {
        std::uint64_t events = 0;
        bool left_home = false;
    };
    std::map<std::uint64_t, episode> episodes;
    std::uint64_t stamped = 0;
    std::uint64_t salted = 0;
    // An episode that opens in the trace's last events may have no event after its first.
    constexpr std::int64_t end = 3 * per_window;
    constexpr std::int64_t cut_off = end - 4096;
    for (std::int64_t i = 0; i < end; ++i) {
        const double u = std::uniform_real_distribution<double>(0, total)(rng);
        const auto rank =
            static_cast<std::size_t>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
        const std::string key = "key-" + std::to_string(std::min(rank, keys - 1));
        const auto d = router.decide(key, at(i * 60000 / per_window));
        if (d.salted) ++salted;
        if (!d.stamp) continue;
        ++stamped;
        if (episodes.count(d.stamp.episode) == 0 && i >= cut_off) continue;
        episode& e = episodes[d.stamp.episode];
        ++e.events;
        if (d.partition != d.home) e.left_home = true;
    }
    REQUIRE(salted > 0);
    REQUIRE(stamped > 0);
    REQUIRE(episodes.size() > 10);
    for (const auto& [id, e] : episodes) {
        INFO("episode " << id << " with " << e.events << " stamped events");
        CHECK(e.left_home);
    }
}

TEST_CASE("a tracked key that is not truly hot is neither stamped nor split", "[router][table]") {
    // 40 keys with 30 events each against a threshold of 40: their estimates pass the
    // admission level (half the threshold), so they become candidates and are stamped, but their
    // exact count since admission never passes the threshold, so none of them is split.
    keyroute::salting_router<> router(router_config(64, 40));
    const keyroute::hash_partitioner<> base(64);
    std::size_t stamped = 0;
    for (int round = 0; round < 30; ++round) {
        for (int k = 0; k < 40; ++k) {
            const std::string key = "near-" + std::to_string(k);
            const auto d = router.decide(key, at(round * 40 + k));
            REQUIRE_FALSE(d.salted);
            REQUIRE(d.partition == base.route(key));
            stamped += d.stamp ? 1 : 0;
        }
    }
    CHECK(stamped == 0);  // only events of spread stretches carry stamps
    CHECK(router.stats().salted == 0);
    CHECK_FALSE(router.stats().hot_keys.empty());  // tracked all the same
}

TEST_CASE("many distinct cold keys: nothing is spread or stamped", "[router][table]") {
    auto c = router_config(64);
    c.max_hot_keys = 16;
    keyroute::salting_router<> router(c);
    for (std::int64_t w = 0; w < 2; ++w) {
        for (std::int64_t i = 0; i < 400000; ++i) {
            (void)router.route("key-" + std::to_string((i * 7919) % 200000), at(w * 60000 + i / 8));
        }
    }
    const auto s = router.stats();
    CHECK(s.salted == 0);
    CHECK(s.stamped == 0);
    CHECK(s.routed == 800000U);
}

TEST_CASE("state is fixed at construction and small", "[router][memory]") {
    using router_type = keyroute::salting_router<>;
    router_type big(router_config(1024));
    CHECK(big.memory_bytes() <= 256U * 1024U);
    CHECK(big.memory_bytes() <= router_type::auto_memory_budget);
    CHECK(big.memory_bytes() ==
          router_type::state_bytes(1024, big.config().max_hot_keys, big.config().lanes));
    CHECK(router_type::automatic_lanes(1024, 0, 64) < 8);  // the budget takes lanes away
    // Lanes are for routing threads, not cores: 8 on a small machine, more on a large one.
    CHECK(router_type::automatic_lanes(64, 0, 1) == 8);
    CHECK(router_type::automatic_lanes(64, 0, 2) == 8);
    CHECK(router_type::automatic_lanes(64, 0, 12) == 12);
    CHECK(router_type::automatic_lanes(16, 0, 1000) == 16);
    for (const std::uint64_t n : {1ULL, 16ULL, 64ULL, 100ULL, 256ULL, 512ULL, 1000ULL, 1024ULL}) {
        const std::uint32_t keys = router_type::automatic_hot_keys(n);
        CHECK(keys >= 128U);
        for (const unsigned threads : {1U, 2U, 4U, 8U, 16U, 256U}) {
            const std::uint32_t lanes = router_type::automatic_lanes(n, 0, threads);
            INFO("partitions " << n << ", hardware threads " << threads);
            CHECK(lanes >= 2U);
            CHECK(lanes <= std::max(8U, std::min(threads, 16U)));
            // Only the budget takes lanes below 8.
            CHECK((lanes >= 8U || router_type::state_bytes(n, keys, lanes + 1U) >
                                      router_type::auto_memory_budget));
            CHECK(router_type::state_bytes(n, keys, lanes) <= router_type::auto_memory_budget);
        }
    }
    CHECK(router_type::automatic_hot_keys(4096) == 4096);  // above 1024 partitions: not bounded
    auto many = router_config(1024);
    many.lanes = 8;
    CHECK(router_type(many).memory_bytes() > router_type::auto_memory_budget);
    router_type small(router_config(16));
    CHECK(small.memory_bytes() < big.memory_bytes());
    const auto before = big.memory_bytes();
    for (int i = 0; i < 100000; ++i) (void)big.route("k" + std::to_string(i), at(i));
    CHECK(big.memory_bytes() == before);
}

TEST_CASE("unavailable partitions: runs avoid them, cold keys stay or fail over",
          "[router][availability]") {
    auto c = router_config(8, 50);
    keyroute::salting_router<> router(c);
    const keyroute::hash_partitioner<> base(8);
    REQUIRE_THROWS_AS(router.set_available(8, false), std::invalid_argument);
    router.set_available(3, false);
    CHECK_FALSE(router.available(3));
    std::size_t hot_on_3 = 0;
    std::size_t cold_moved = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::string key = i % 2 == 0 ? "hot" : "c" + std::to_string(i % 500);
        const auto d = router.decide(key, at(i));
        if (key == "hot" && d.salted && d.partition == 3) ++hot_on_3;
        if (key != "hot" && d.partition != base.route(key)) ++cold_moved;
    }
    CHECK(hot_on_3 == 0);
    CHECK(cold_moved == 0);  // by default cold keys keep their home, order first

    c.failover_cold_keys = true;
    keyroute::salting_router<> failover(c);
    failover.set_available(3, false);
    std::map<std::string, std::uint32_t> moved_to;
    for (int i = 0; i < 2000; ++i) {
        const std::string key = "c" + std::to_string(i);
        const auto d = failover.decide(key, at(i));
        REQUIRE(d.partition != 3U);
        if (base.route(key) != 3U) REQUIRE(d.partition == base.route(key));  // only 3's keys move
        if (base.route(key) == 3U) moved_to[key] = d.partition;
    }
    REQUIRE_FALSE(moved_to.empty());
    for (const auto& [key, p] : moved_to)
        REQUIRE(failover.decide(key, at(3000)).partition == p);  // stable
    failover.set_available(3, true);
    for (const auto& [key, p] : moved_to)
        REQUIRE(failover.decide(key, at(4000)).partition == 3U);  // back home

    // A hot key's events that go home fail over too while its home is down: those before it
    // proves itself in a window, and the stamped ones that close or open a spread stretch.
    keyroute::salting_router<> hot_failover(c);
    const std::uint32_t hot_home = base.route("hot");
    std::size_t home_while_down = 0;
    std::size_t stamped_home_events = 0;
    for (int i = 0; i < 200000; ++i) {
        if (i == 30000) hot_failover.set_available(hot_home, false);
        const std::string key = i % 2 == 0 ? "hot" : "c" + std::to_string(i % 500);
        const auto d = hot_failover.decide(key, at(i));
        if (i < 30000) continue;
        if (d.partition == hot_home) ++home_while_down;
        if (key == "hot" && d.stamp && !d.salted) ++stamped_home_events;
    }
    CHECK(stamped_home_events > 0);  // windows changed while home was down
    CHECK(home_while_down == 0);

    // Another producer, with its own random secret (seed 0), and another producer id: the same
    // failover partition for every key (a score from the router's secret-keyed hash would agree
    // on about 17% of them).
    auto other_config = c;
    other_config.seed = 0;
    other_config.producer_id = 0;
    keyroute::salting_router<> other(other_config);
    other.set_available(3, false);
    for (const auto& [key, p] : moved_to) REQUIRE(other.decide(key, at(5000)).partition == p);
}

TEST_CASE("cold_partitioner() reports what unavailable partitions move, as decide() routes",
          "[router][availability][migration]") {
    for (const bool failover : {false, true}) {
        INFO("failover_cold_keys " << failover);
        auto c = router_config(24, 50);
        c.failover_cold_keys = failover;
        keyroute::salting_router<> router(c);
        std::vector<std::string> keys;
        for (int i = 0; i < 3000; ++i) keys.push_back("cold-" + std::to_string(i * 31));
        const auto none =
            keyroute::compare_partitioners(router.base(), router.cold_partitioner(), keys);
        CHECK(none.moved_keys == 0);
        for (const std::uint32_t p : {2U, 11U, 23U}) router.set_available(p, false);
        const auto report =
            keyroute::compare_partitioners(router.base(), router.cold_partitioner(), keys);
        std::uint64_t on_down = 0;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            const std::uint32_t home = router.base().route(keys[i]);
            on_down += router.available(home) ? 0U : 1U;
            const std::uint32_t cold = router.cold_partitioner().route(keys[i]);
            // Each key is routed once here: far below the threshold, cold.
            CHECK(router.decide(keys[i], at(static_cast<std::int64_t>(i))).partition == cold);
            CHECK((router.available(home) ? cold == home : (failover ? cold != home : true)));
        }
        CHECK(on_down > 0);
        CHECK(report.moved_keys == (failover ? on_down : 0U));
        for (const auto& f : report.partitions) {
            if (!router.available(f.partition)) CHECK(f.new_keys == (failover ? 0U : f.old_keys));
        }
        for (const std::uint32_t p : {2U, 11U, 23U}) router.set_available(p, true);
        CHECK(keyroute::compare_partitioners(router.base(), router.cold_partitioner(), keys)
                  .moved_keys == 0);
    }
}

// A restarted producer process that gives its router the same id as before: a resequencer that
// still remembers the first router's episodes must not take the second's events for repeats.
// With episode ids from 1 in both, 9,948 of the second router's 20,000 events came back
// `duplicate` and were never delivered.
TEST_CASE("a router that reuses a producer id repeats none of its predecessor's stamps",
          "[router][config]") {
    auto c = router_config(12, 50);  // producer_id 42, as a restarted process would give
    c.episode_base = 0;              // automatic, as it would leave it
    std::uint64_t delivered = 0;
    keyroute::resequencer<int> reseq(
        keyroute::resequencer_config{}, [&](keyroute::delivery<int>&&) { ++delivered; },
        [](const keyroute::gap_report&) {});
    std::vector<std::int64_t> next_offset(12, 0);
    std::set<std::uint64_t> episodes[2];
    std::uint64_t duplicates = 0;
    constexpr int events = 20000;
    for (int run = 0; run < 2; ++run) {
        keyroute::salting_router<> router(c);
        CHECK(router.config().producer_id == 42);
        CHECK(router.config().episode_base != 0);  // drawn: reported for a replay
        for (int i = 0; i < events; ++i) {
            const std::string key = i % 2 == 0 ? "hot" : "k" + std::to_string(i % 500);
            const std::int64_t t = run * events + i;
            const auto d = router.decide(key, at(t));
            if (d.stamp) episodes[run].insert(d.stamp.episode);
            const keyroute::origin from{d.partition, next_offset[d.partition]++};
            if (reseq.push(key, d.stamp, i, from, std::chrono::milliseconds(t)) ==
                keyroute::push_result::duplicate) {
                ++duplicates;
            }
        }
    }
    reseq.flush();
    REQUIRE_FALSE(episodes[0].empty());
    REQUIRE_FALSE(episodes[1].empty());
    std::vector<std::uint64_t> both;
    std::set_intersection(episodes[0].begin(), episodes[0].end(), episodes[1].begin(),
                          episodes[1].end(), std::back_inserter(both));
    CHECK(both.empty());
    CHECK(duplicates == 0);
    CHECK(delivered == 2U * events);
}

TEST_CASE("a router with a random seed and id reports them: its config() replays it",
          "[router][config]") {
    // config() reports the seed drawn for 0, so that such a router can be replayed.
    auto c = router_config(16, 50);
    c.seed = 0;
    c.producer_id = 0;
    keyroute::salting_router<> first(c);
    CHECK(first.config().seed != 0);
    CHECK(first.config().producer_id == first.producer_id());
    keyroute::salting_router<> again(first.config());
    std::uint64_t salted = 0;
    for (int i = 0; i < 30000; ++i) {
        const std::string key = i % 3 == 0 ? "hot" : "k" + std::to_string(i % 997);
        const auto a = first.decide(key, at(i * 4));
        const auto b = again.decide(key, at(i * 4));
        REQUIRE(a.partition == b.partition);
        REQUIRE(a.salted == b.salted);
        REQUIRE(a.stamp == b.stamp);
        salted += a.salted ? 1U : 0U;
    }
    CHECK(salted > 0);
}

TEST_CASE("a thread that routes through more routers than its lane cache keeps its lanes",
          "[router][threads]") {
    // The thread's cache remembers four routers. A thread that has used more must find its lane
    // again in a router it comes back to: a new lane in the middle of a hot key's episode would
    // number the key's events afresh, and the consumer could deliver later ones first.
    keyroute::salting_router<> main_router(router_config(8, 50));
    std::vector<std::unique_ptr<keyroute::salting_router<>>> others;
    for (int i = 0; i < 5; ++i)
        others.push_back(std::make_unique<keyroute::salting_router<>>(router_config(8, 50)));
    std::optional<keyroute::stamp> last;
    std::uint64_t stamped = 0;
    for (int i = 0; i < 2000; ++i) {
        const auto d = main_router.decide("hot", at(i));
        if (d.stamp) {
            if (last) {
                REQUIRE(d.stamp.lane == last->lane);
                REQUIRE(d.stamp.episode == last->episode);
                REQUIRE(d.stamp.sequence == last->sequence + 1);
            }
            last = d.stamp;
            ++stamped;
        }
        if (i % 100 == 99) {
            for (auto& o : others) (void)o->decide("x", at(i));  // the cache forgets main_router
        }
    }
    CHECK(stamped > 1000);
    REQUIRE(last);
    CHECK(last->lane == 0);  // the thread's first and only lane in main_router
}

TEST_CASE("threads sharing one router: exact totals, cold keys never move", "[router][threads]") {
    keyroute::salting_router<> router(router_config(16, 500));
    const keyroute::hash_partitioner<> base(16);
    constexpr int per_thread = 200000;
    std::vector<std::uint64_t> cold_moved(3, 0);
    std::vector<std::uint64_t> routed_per_partition(16 * 3, 0);
    std::vector<std::thread> threads;
    std::atomic<int> finished{0};
    for (int t = 0; t < 3; ++t) {  // 3 threads, more than this machine's 2 cores
        threads.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const std::string key =
                    i % 2 == 0 ? "hot" : "c" + std::to_string((i * 31 + t) % 3000);
                const auto d = router.decide(key, at(i / 100));
                ++routed_per_partition[static_cast<std::size_t>(t) * 16 + d.partition];
                if (key != "hot" && d.partition != base.route(key))
                    ++cold_moved[static_cast<std::size_t>(t)];
            }
            finished.fetch_add(1);
        });
    }
    // Availability changes while the threads route: until they are done (100 changes in a row
    // took microseconds, likely over before the threads started), and at least 100. Rounds of
    // 16: every partition up, then every one down, and so on.
    for (int k = 0; k < 100 || finished.load() < 3; ++k) {
        router.set_available(static_cast<std::uint32_t>(k % 16), (k / 16) % 2 == 0);
        std::this_thread::yield();
    }
    for (auto& th : threads) th.join();
    for (std::uint32_t p = 0; p < 16; ++p) router.set_available(p, true);
    const auto s = router.stats();
    CHECK(s.routed == 3U * per_thread);
    CHECK(s.salted > 0);
    CHECK(cold_moved == std::vector<std::uint64_t>(3, 0));
}

TEST_CASE("four threads on a default router each get a lane, whatever the cores",
          "[router][threads]") {
    // A thread past the lanes shares the overflow lane, which sends every event home: with lanes
    // sized by cores (2 here), two of four threads would put their share of "hot" (half of all
    // events) on its home partition, about 4.5 times the mean of 16. Lanes are sized for routing
    // threads instead. Two windows of 800k events; the second is judged.
    keyroute::salting_router<> router(router_config(16));
    CHECK(router.config().lanes >= 4U);
    constexpr int threads = 4;
    constexpr int per_thread = 200000;
    std::vector<std::uint64_t> load(16 * threads, 0);
    for (int w = 0; w < 2; ++w) {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t, w] {
                for (int i = 0; i < per_thread; ++i) {
                    const std::string key =
                        i % 2 == 0 ? "hot" : "c" + std::to_string((i * 7 + t) % 4000);
                    const auto p = router.route(key, at(60000 * w + i / 4));
                    if (w == 1) ++load[static_cast<std::size_t>(t) * 16 + p];
                }
            });
        }
        for (auto& th : pool) th.join();
    }
    std::vector<std::uint64_t> total(16, 0);
    for (std::size_t i = 0; i < load.size(); ++i) total[i % 16] += load[i];
    const double mean = static_cast<double>(threads) * per_thread / 16.0;
    const auto busiest = static_cast<double>(*std::max_element(total.begin(), total.end()));
    INFO("busiest partition " << busiest << ", mean " << mean);
    CHECK(busiest < 2.0 * mean);
    CHECK(router.stats().overflow == 0);
    // With 2 lanes, two of four threads alive at once share the overflow lane, and stats() says so
    // (the threads end together: a thread that ends gives its lane back).
    keyroute::salting_router<> two(router_config(16, 0, 2));
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    std::vector<std::thread> four;
    for (int t = 0; t < threads; ++t) {
        four.emplace_back([&] {
            (void)two.route("k", at(0));
            started.fetch_add(1);
            while (started.load() < threads) std::this_thread::yield();
            for (int i = 0; i < 1000; ++i) (void)two.route("k" + std::to_string(i), at(i));
            finished.fetch_add(1);
            while (finished.load() < threads) std::this_thread::yield();
        });
    }
    for (auto& th : four) th.join();
    CHECK(two.stats().overflow == 2U * 1001U);
}

TEST_CASE("a lane given back by a thread that ended goes to a thread on the overflow lane",
          "[router][threads]") {
    // A pool that replaces its threads: two threads hold a 2-lane router's lanes, and a third
    // routes a window through the overflow lane meanwhile (every event home). Once the two have
    // ended, the third takes a lane they gave back and its hot key spreads; it stayed on the
    // overflow lane for the router's life before lanes were given back.
    keyroute::salting_router<> r(router_config(16, 0, 2));
    std::atomic<int> holding{0};
    std::atomic<bool> release{false};
    std::vector<std::thread> holders;
    for (int t = 0; t < 2; ++t) {
        holders.emplace_back([&] {
            (void)r.route("h", at(0));
            holding.fetch_add(1);
            while (!release.load()) std::this_thread::yield();
        });
    }
    while (holding.load() < 2) std::this_thread::yield();
    std::atomic<bool> ended{false};
    std::uint64_t salted_held = 0;
    std::uint64_t salted_after = 0;
    std::thread third([&] {
        for (std::int64_t w = 0; w < 3; ++w) {
            if (w == 1) {
                release.store(true);
                while (!ended.load()) std::this_thread::yield();
            }
            const auto m = skewed_minute(w, 100000, 0.5, 1000, static_cast<std::uint64_t>(w));
            for (std::size_t i = 0; i < m.keys.size(); ++i) {
                const auto d = r.decide(m.keys[i], m.times[i]);
                if (d.salted) ++(w == 0 ? salted_held : salted_after);
            }
        }
    });
    while (!release.load()) std::this_thread::yield();
    for (auto& th : holders) th.join();
    ended.store(true);
    third.join();
    CHECK(salted_held == 0);
    CHECK(r.stats().overflow == 100000U);  // window 0's events, and no more
    CHECK(salted_after > 10000U);          // "hot" is half of 200,000 events
}

TEST_CASE("a thread that takes over a lane first closes its open stretches on home",
          "[router][threads][stamp]") {
    // Thread A spreads "hot" on the only lane, its stretch open when it ends; thread T, on the
    // overflow lane meanwhile, sent "hot" home unstamped. T's next event of "hot", on A's lane,
    // goes home stamped with the stretch's next sequence: it closes A's episode behind T's
    // unstamped event on home, so T's own events of the key keep their order at a consumer.
    // Continuing the stretch off home, it could have been delivered first.
    keyroute::salting_router<> r(router_config(16, 0, 1));
    const std::uint32_t home = r.base().route("hot");
    std::atomic<int> step{0};
    keyroute::stamp a_last;
    std::thread a([&] {
        for (std::int64_t w = 0; w < 2; ++w) {
            const auto m = skewed_minute(w, 100000, 0.5, 1000, static_cast<std::uint64_t>(w));
            for (std::size_t i = 0; i + 1 < m.keys.size(); ++i) {
                const auto d = r.decide(m.keys[i], m.times[i]);
                if (m.keys[i] == "hot" && d.stamp) a_last = d.stamp;
            }
        }
        step.store(1);
        while (step.load() < 2) std::this_thread::yield();
    });
    while (step.load() < 1) std::this_thread::yield();
    keyroute::route_decision overflow;
    keyroute::route_decision closing;
    keyroute::route_decision after;
    std::thread t([&] {
        overflow = r.decide("hot", at(60000 + 59000));
        step.store(2);
        while (step.load() < 3) std::this_thread::yield();
        closing = r.decide("hot", at(60000 + 59001));
        for (int i = 0; i < 200 && !after.salted; ++i) after = r.decide("hot", at(60000 + 59002));
    });
    while (step.load() < 2) std::this_thread::yield();
    a.join();
    step.store(3);
    t.join();
    REQUIRE(a_last);
    REQUIRE(a_last.salted);  // A's stretch was open
    CHECK(overflow.partition == home);
    CHECK_FALSE(overflow.stamp);
    CHECK(closing.partition == home);
    CHECK(closing.stamp.episode == a_last.episode);
    CHECK(closing.stamp.sequence == a_last.sequence + 1);
    CHECK_FALSE(closing.salted);
    CHECK(after.salted);  // and then spread again, in a new episode
    CHECK(after.stamp.episode != a_last.episode);
}

TEST_CASE("threads sharing one router find the hot key and keep cold keys home",
          "[router][threads]") {
    // Two windows of 1M events: "hot" has 10%, the rest spread over 50k cold keys (about 18
    // events each, far below a tenth of the per-partition mean of 15,625).
    constexpr std::size_t per_window = 1000000;
    const minute w0 = skewed_minute(0, per_window, 0.10, 50000, 11);
    const minute w1 = skewed_minute(1, per_window, 0.10, 50000, 12);
    const keyroute::hash_partitioner<> base(64);
    struct outcome {
        keyroute::salting_stats stats;
        std::set<std::uint32_t> hot_partitions;  // in the second window
        std::uint64_t cold_moved = 0;
    };
    // by_key: thread 0 routes every event of "hot" (and its share of the rest), so only its
    // lane ever counts the key.
    const auto replay = [&](unsigned threads, bool by_key) {
        keyroute::salting_router<> router(router_config(64, 0, 2));
        std::vector<std::set<std::uint32_t>> hot(threads);
        std::vector<std::uint64_t> moved(threads, 0);
        for (const minute* m : {&w0, &w1}) {
            std::vector<std::thread> pool;
            for (unsigned t = 0; t < threads; ++t) {
                pool.emplace_back([&, t] {  // events t, t + threads, ... (by_key: "hot" on 0)
                    for (std::size_t i = 0; i < m->keys.size(); ++i) {
                        const bool mine = by_key && m->keys[i] == "hot" ? t == 0 : i % threads == t;
                        if (!mine) continue;
                        const auto p = router.route(m->keys[i], m->times[i]);
                        if (m->keys[i] == "hot") {
                            if (m == &w1) hot[t].insert(p);
                        } else if (p != base.route(m->keys[i])) {
                            ++moved[t];
                        }
                    }
                });
            }
            for (auto& th : pool) th.join();
        }
        outcome o;
        o.stats = router.stats();
        for (unsigned t = 0; t < threads; ++t) {
            o.hot_partitions.insert(hot[t].begin(), hot[t].end());
            o.cold_moved += moved[t];
        }
        return o;
    };

    const outcome one = replay(1, false);
    const outcome two = replay(2, false);
    const outcome two_by_key = replay(2, true);
    for (const outcome* o : {&one, &two, &two_by_key}) {
        CHECK(o->stats.routed == 2 * per_window);
        CHECK(o->cold_moved == 0);
        // 10% of 64 partitions needs 6.4 of them: the hot key is found and spread.
        CHECK(o->hot_partitions.size() >= 7);
    }
    // The admission sampler draws about one untracked event in a sixteenth of the threshold
    // (at most 64): most are never drawn.
    for (const outcome* o : {&one, &two}) {
        const std::uint64_t untracked = o->stats.routed - o->stats.stamped;
        CHECK(o->stats.sketch_skipped * 10 > untracked * 9);
    }
}

TEST_CASE("a router built with a fixed seed replays a trace exactly", "[router][replay]") {
    // 90% on one key over 100 partitions: its runs scan more partitions than max_scan, from a
    // random start, so the lanes' random draws decide where its runs go.
    const minute w0 = skewed_minute(0, 200000, 0.9, 1000, 21);
    const minute w1 = skewed_minute(1, 200000, 0.9, 1000, 22);
    const auto replay = [&] {
        keyroute::salting_router<> router(router_config(100));
        std::vector<std::uint32_t> out;
        for (const minute* m : {&w0, &w1}) {
            for (std::size_t i = 0; i < m->keys.size(); ++i)
                out.push_back(router.route(m->keys[i], m->times[i]));
        }
        return out;
    };
    const auto first = replay();
    CHECK(std::set<std::uint32_t>(first.begin(), first.end()).size() > 16);
    CHECK(replay() == first);
}

TEST_CASE("20000 partitions: cold keys stay home, the hot key is spread", "[router][large]") {
    // Plans and loads are per partition at any count up to max_partitions.
    keyroute::salting_router<> router(router_config(20000, 50));
    const keyroute::hash_partitioner<> base(20000);
    std::set<std::uint32_t> hot_parts;
    for (int i = 0; i < 40000; ++i) {
        const std::string key = i % 2 == 0 ? "hot" : "c" + std::to_string(i % 1000);
        const auto d = router.decide(key, at(i * 5));  // 200 s: four windows
        REQUIRE(d.partition < 20000U);
        if (key != "hot") REQUIRE(d.partition == base.route(key));
        if (d.salted) hot_parts.insert(d.partition);
    }
    CHECK(hot_parts.size() > 1);
    CHECK(router.stats().routed == 40000U);
}

TEST_CASE("route() reads the system clock through the coarse clock, on the same epoch",
          "[router][clock]") {
#if defined(__linux__) && !defined(CLOCK_REALTIME_COARSE)
#error "<ctime> no longer declares CLOCK_REALTIME_COARSE: detail::cheap_now lost its fast path"
#endif
    const auto before = clock_type::now();
    const auto cheap = keyroute::detail::cheap_now<clock_type>();
    const auto after = clock_type::now();
    // The coarse clock lags by at most a scheduler tick; a second is far more than enough.
    CHECK(cheap >= before - std::chrono::seconds(1));
    CHECK(cheap <= after + std::chrono::seconds(1));
}

TEST_CASE("a key that proves itself again starts a new run, and its open stretch keeps its slot",
          "[router][ordering]") {
    // A lane's run outlives the stretch it was in; when the key proved itself windows later, the
    // lane resumed that run although no plan spread the key, and the slot, whose last plan was
    // old, went to a newcomer while the stretch was open: the lane's next event of the key came
    // unstamped and home, ahead of the episode's events elsewhere.
    keyroute::salting_config c;
    c.partitions = 16;
    c.threshold = 16;
    c.lanes = 1;
    c.max_hot_keys = 8;  // 16 slots: two probe groups of 8
    c.seed = 11;
    c.producer_id = 5;
    keyroute::salting_router<> router(c);
    const keyroute::hash_partitioner<> base(16);
    // A key's probe group, as salting_router::hash_key and key_table::group_of compute it.
    const std::uint64_t secret = keyroute::detail::mix64(c.seed ^ 0x243f6a8885a308d3ULL);
    const std::uint64_t secret_out = keyroute::detail::mix64(secret) | 1U;
    const auto group_of = [&](const std::string& k) {
        const std::uint64_t fp =
            keyroute::detail::mul_fold64(base.hash(k) ^ secret, secret_out) | 1U;
        return static_cast<std::uint32_t>(fp >> 8U) & 8U;
    };
    const std::string hot = "K1";
    std::vector<std::string> mates;  // 7 keys of K1's group, then a newcomer
    std::vector<std::string> cold;   // keys of the other group
    for (int i = 0; mates.size() < 8 || cold.size() < 2000; ++i) {
        const std::string k = "k" + std::to_string(i);
        if (group_of(k) == group_of(hot)) {
            if (mates.size() < 8) mates.push_back(k);
        } else if (cold.size() < 2000) {
            cold.push_back(k);
        }
    }
    const std::string newcomer = mates.back();
    mates.pop_back();
    const auto when = [](std::int64_t window, std::int64_t ms) { return at(window * 60000 + ms); };
    std::vector<keyroute::route_decision> events;  // K1's, in routing order
    std::size_t next_cold = 0;
    const auto route_cold = [&](std::int64_t w, std::int64_t ms) {
        (void)router.decide(cold[next_cold++ % cold.size()], when(w, ms));
    };
    const auto route_hot = [&](std::int64_t w, std::int64_t ms) {
        events.push_back(router.decide(hot, when(w, ms)));
        return events.back();
    };
    // Window 5: K1 is admitted and spread; stop right after the first event of a run off home.
    (void)route_hot(5, 0);
    (void)route_hot(5, 0);
    std::uint32_t previous = 0xffffffffU;
    bool stopped = false;
    for (int i = 0; i < 20000 && !stopped; ++i) {
        if (i % 2 == 0) {
            route_cold(5, i * 2);
            continue;
        }
        const auto d = route_hot(5, i * 2);
        stopped = i > 4000 && d.stamp && d.partition != d.home && d.partition != previous;
        previous = d.partition;
    }
    REQUIRE(stopped);
    // Window 6: one event of K1 closes its stretch; window 7: its group mates count.
    (void)route_hot(6, 0);
    for (int i = 0; i < 20000; ++i) route_cold(6, i * 3);
    for (int i = 0; i < 20000; ++i) {
        if (i < 7 * 200) {
            (void)router.decide(mates[static_cast<std::size_t>(i / 2) % 7], when(7, i));
        } else {
            route_cold(7, i * 3);
        }
    }
    // Window 8: K1 proves itself again, then a newcomer of its group is drawn twice.
    for (int i = 0; i < 3000; ++i) {
        if (i % 10 == 0) {
            (void)router.decide(mates[static_cast<std::size_t>(i / 10) % 7], when(8, i));
        } else {
            route_cold(8, i);
        }
    }
    for (int i = 0; i < 19; ++i) (void)route_hot(8, 3000 + i);
    const std::uint64_t refused = router.stats().admissions_refused;
    (void)router.decide(newcomer, when(8, 3100));
    (void)router.decide(newcomer, when(8, 3101));
    // The group is full of keys that count or have a stretch open: the newcomer is refused.
    CHECK(router.stats().admissions_refused > refused);
    for (int i = 0; i < 3; ++i) (void)route_hot(8, 3200 + i);
    // Read K1's home first, then last: the same order either way, nothing missing.
    const std::uint32_t home = events.front().home;
    for (const bool home_first : {true, false}) {
        std::vector<int> got;
        std::size_t gaps = 0;
        keyroute::resequencer<int> consumer(
            keyroute::resequencer_config{},
            [&](keyroute::delivery<int>&& d) { got.push_back(d.event); },
            [&](const keyroute::gap_report&) { ++gaps; });
        std::vector<std::uint32_t> order;
        if (home_first) order.push_back(home);
        for (std::uint32_t p = 0; p < 16; ++p) {
            if (p != home) order.push_back(p);
        }
        if (!home_first) order.push_back(home);
        for (const std::uint32_t p : order) {
            for (std::size_t i = 0; i < events.size(); ++i) {
                if (events[i].partition != p) continue;
                (void)consumer.push(hot, events[i].stamp, static_cast<int>(i),
                                    keyroute::origin{p, -1}, std::chrono::milliseconds(0));
            }
        }
        consumer.flush();
        CHECK(gaps == 0);
        REQUIRE(got.size() == events.size());
        std::size_t out_of_order = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
            out_of_order += got[i] != static_cast<int>(i) ? 1U : 0U;
        CHECK(out_of_order == 0);
    }
}

TEST_CASE("an empty key routes like any other key, admitted or not", "[router][bad-input]") {
    keyroute::salting_config c;
    c.partitions = 8;
    c.threshold = 16;
    c.lanes = 1;
    keyroute::salting_router<> router(c);
    const keyroute::hash_partitioner<> base(8);
    std::size_t home = 0;
    for (int i = 0; i < 2000; ++i) {
        const auto d = router.decide(std::string_view{}, at(60000 + i));
        home += d.partition == base.route(std::string_view{}) ? 1U : 0U;
    }
    CHECK(home < 2000);  // tracked, proven and spread: a null string_view is a key like ""
    bool tracked = false;
    for (const auto& k : router.stats().hot_keys) tracked |= k.key.empty();
    CHECK(tracked);
}
