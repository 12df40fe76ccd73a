// Concurrency stress: threads routing through one salting_router while other threads mark
// partitions unavailable and available again, windows rolling over every 100 ms. Runs for
// KEYROUTE_STRESS_SECONDS (environment), else KEYROUTE_STRESS_DEFAULT_SECONDS (compile
// definition: 10 s in ThreadSanitizer builds, 2 s otherwise) per scenario. No timing assertion:
// the checks are exact totals and where cold keys go.
#include "keyroute_catch.hpp"

#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#ifndef KEYROUTE_STRESS_DEFAULT_SECONDS
#define KEYROUTE_STRESS_DEFAULT_SECONDS 2
#endif

namespace {

auto stress_duration() -> std::chrono::milliseconds {
    double seconds = KEYROUTE_STRESS_DEFAULT_SECONDS;
    if (const char* env = std::getenv("KEYROUTE_STRESS_SECONDS")) {
        const double parsed = std::strtod(env, nullptr);
        if (parsed > 0) seconds = parsed;
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

using router_type = keyroute::salting_router<keyroute::kafka_partitioner>;

struct tally {
    std::uint64_t calls = 0;
    std::uint64_t salted = 0;
    std::uint64_t stamped = 0;
    std::uint64_t cold_moved = 0;   // cold keys off their home partition
    std::uint64_t cold_salted = 0;  // cold keys placed by the hot-key logic
    std::uint64_t out_of_range = 0;
    std::uint64_t on_dead = 0;  // untracked events on the partition that is always down
    std::uint64_t tracked_on_dead =
        0;  // tracked, unsalted events there (slot handed over mid-call)
};

struct scenario {
    bool failover = false;
    std::uint32_t dead = 0xffffffffU;  // a partition down for the whole run (failover only)
};

// Runs routing threads and availability threads against one router for `duration`.
void run(const scenario& sc, std::chrono::milliseconds duration, std::vector<tally>& out) {
    keyroute::salting_config c;
    c.partitions = 32;
    c.threshold = 400;
    c.window = std::chrono::milliseconds(100);
    c.lanes = 2;  // four routing threads: two share the overflow lane
    c.producer_id = 1;
    c.seed = 99;
    c.failover_cold_keys = sc.failover;
    router_type router(c);
    if (sc.dead < c.partitions) router.set_available(sc.dead, false);

    constexpr int routing_threads = 4;
    constexpr int toggling_threads = 2;
    std::atomic<bool> stop{false};
    out.assign(routing_threads, tally{});
    std::vector<std::thread> threads;
    threads.reserve(routing_threads + toggling_threads);
    for (int t = 0; t < routing_threads; ++t) {
        threads.emplace_back([&, t] {
            tally& mine = out[static_cast<std::size_t>(t)];
            std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 1);
            // 5000 cold keys per thread, each far below the threshold per window; three hot keys.
            std::vector<std::string> cold;
            cold.reserve(5000);
            for (int i = 0; i < 5000; ++i)
                cold.push_back("cold-" + std::to_string(t) + "-" + std::to_string(i));
            const std::string hot[3] = {"tenant-a", "tenant-b", "tenant-c"};
            std::uint64_t i = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                const bool is_hot = rng() % 2 == 0;
                const std::string& key = is_hot ? hot[rng() % 3] : cold[i++ % cold.size()];
                const keyroute::route_decision d = router.decide(key);
                ++mine.calls;
                mine.salted += d.salted ? 1U : 0U;
                mine.stamped += d.stamp ? 1U : 0U;
                mine.out_of_range += d.partition >= 32U ? 1U : 0U;
                if (!is_hot) {
                    mine.cold_salted += d.salted ? 1U : 0U;
                    if (!sc.failover) mine.cold_moved += d.partition != d.home ? 1U : 0U;
                }
                if (!d.salted && d.partition == sc.dead) {
                    if (d.stamp) {
                        ++mine.tracked_on_dead;
                    } else {
                        ++mine.on_dead;
                    }
                }
            }
        });
    }
    for (int t = 0; t < toggling_threads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 100);
            while (!stop.load(std::memory_order_relaxed)) {
                auto p = static_cast<std::uint32_t>(rng() % 32);
                if (p == sc.dead) continue;
                router.set_available(p, false);
                std::this_thread::yield();
                router.set_available(p, true);
            }
        });
    }
    std::this_thread::sleep_for(duration);
    stop.store(true);
    for (auto& th : threads) th.join();

    std::uint64_t calls = 0;
    std::uint64_t salted = 0;
    std::uint64_t stamped = 0;
    for (const tally& t : out) {
        calls += t.calls;
        salted += t.salted;
        stamped += t.stamped;
    }
    const keyroute::salting_stats s = router.stats();
    CHECK(s.routed == calls);
    CHECK(s.salted == salted);
    CHECK(s.stamped == stamped);
    std::uint64_t load = 0;
    for (const std::uint64_t l : s.partition_load) load += l;
    CHECK(load <= calls);
    // Every partition the togglers touched is available again.
    for (std::uint32_t p = 0; p < 32; ++p) CHECK(router.available(p) == (p != sc.dead));
}

}  // namespace

TEST_CASE("stress: routing threads and availability threads share one router, failover off",
          "[stress][router][threads]") {
    std::vector<tally> tallies;
    run(scenario{}, stress_duration(), tallies);
    std::uint64_t calls = 0;
    std::uint64_t salted = 0;
    for (const tally& t : tallies) {
        CAPTURE(t.calls, t.salted, t.stamped);
        CHECK(t.calls > 0);
        CHECK(t.out_of_range == 0);
        CHECK(t.cold_moved == 0);  // cold keys never move when failover is off
        CHECK(t.cold_salted == 0);
        calls += t.calls;
        salted += t.salted;
    }
    CHECK(salted > 0);  // the hot keys did spread meanwhile
    WARN("failover off: " << calls << " decisions, " << salted << " salted");
}

TEST_CASE("stress: with failover on, a partition that stays down gets no cold keys",
          "[stress][router][threads]") {
    std::vector<tally> tallies;
    run(scenario{true, 5}, stress_duration(), tallies);
    std::uint64_t calls = 0;
    std::uint64_t tracked_on_dead = 0;
    for (const tally& t : tallies) {
        CHECK(t.calls > 0);
        CHECK(t.out_of_range == 0);
        CHECK(t.on_dead == 0);
        CHECK(t.cold_salted == 0);
        calls += t.calls;
        tracked_on_dead += t.tracked_on_dead;
    }
    WARN("failover on: " << calls << " decisions, " << tracked_on_dead
                         << " tracked unsalted events sent to the down partition");
}

// Slot churn: two threads, each on its own lane, route a few dozen warm keys through a table of
// a handful of slots while windows of 1 ms (event time) roll over, so keys are admitted,
// evicted and re-admitted all the time, often while the other thread is routing the slot's
// previous key. Each lane's stamps of one episode must read 0, 1, 2, ... in the order the lane
// routed them: an event of the previous key that loses its slot mid-call goes home unstamped
// and must not take a sequence number of the new episode.
TEST_CASE("stress: slot churn, each lane's sequence of an episode starts at 0 without gaps",
          "[stress][router][threads][stamp]") {
    keyroute::salting_config c;
    c.partitions = 16;
    c.threshold = 8;
    c.window = std::chrono::milliseconds(1);
    c.max_hot_keys = 1;  // one probe group of slots
    c.lanes = 2;
    c.producer_id = 7;
    c.seed = 5;
    router_type router(c);
    const auto duration = stress_duration();

    struct lane_check {
        std::uint32_t lane = 0xffffffffU;
        bool one_lane = true;
        std::uint64_t stamped = 0;
        std::uint64_t episodes = 0;
        std::uint64_t bad_first = 0;  // an episode's first stamp on the lane is not sequence 0
        std::uint64_t gaps = 0;       // a stamp that does not follow the episode's previous one
    };
    constexpr int threads = 2;
    std::vector<lane_check> checks(threads);
    std::atomic<bool> stop{false};
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            lane_check& mine = checks[static_cast<std::size_t>(t)];
            std::vector<std::string> keys;
            for (int i = 0; i < 40; ++i) keys.push_back("warm-" + std::to_string(i));
            std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 11);
            // Per episode: the next sequence expected from this lane.
            std::unordered_map<std::uint64_t, std::uint64_t> next;
            std::uint64_t forgotten = 0;  // episodes up to this one were cleared from `next`
            std::uint64_t newest = 0;
            const auto start = std::chrono::system_clock::time_point{} + std::chrono::hours(1);
            std::uint64_t i = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                // 64 events per millisecond of event time; the threads drift apart a little.
                const auto now = start + std::chrono::microseconds(i++ * 1000 / 64);
                const keyroute::route_decision d = router.decide(keys[rng() % keys.size()], now);
                if (!d.stamp) continue;
                ++mine.stamped;
                if (mine.lane == 0xffffffffU) mine.lane = d.stamp.lane;
                mine.one_lane = mine.one_lane && mine.lane == d.stamp.lane;
                auto [it, fresh] = next.try_emplace(d.stamp.episode, 0);
                newest = std::max(newest, d.stamp.episode);
                if (fresh && d.stamp.episode > forgotten) {
                    ++mine.episodes;
                    if (d.stamp.sequence != 0) ++mine.bad_first;
                } else if (fresh) {
                    // seen before the map was cleared: its sequence so far is unknown
                } else if (d.stamp.sequence != it->second) {
                    ++mine.gaps;
                }
                it->second = d.stamp.sequence + 1;
                if (next.size() > 4096) {  // bounded
                    next.clear();
                    forgotten = newest;
                }
            }
        });
    }
    std::this_thread::sleep_for(duration);
    stop.store(true);
    for (auto& th : pool) th.join();
    for (const lane_check& lc : checks) {
        CAPTURE(lc.lane, lc.stamped, lc.episodes, lc.bad_first, lc.gaps);
        CHECK(lc.one_lane);
        CHECK(lc.episodes > 100);  // the table did churn
        CHECK(lc.bad_first == 0);
        CHECK(lc.gaps == 0);
    }
}
