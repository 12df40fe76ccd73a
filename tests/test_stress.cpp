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
#include <tuple>
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

// Slot churn: threads route a few dozen warm keys through a table of one probe group of slots
// while windows of 5 ms (event time) roll over, so keys are admitted, evicted and re-admitted all
// the time, often while another thread is routing the slot's previous key. Checked:
// - on an exclusive lane, an episode's stamps read 0, 1, 2, ... in the order the lane routed
//   them (an event whose slot changes hands mid-call must not take one of the new episode's
//   numbers, nor give one back after another thread took the next);
// - the shared overflow lane never stamps: it sends every event home, so nothing of its threads
//   can be out of order;
// - an episode belongs to one key: an event is never stamped with another key's episode (a
//   slot that went to another key and back within one call once allowed it).
namespace churn {

struct record {  // 16 bytes
    std::uint64_t episode;
    std::uint32_t sequence;  // sequences stay far below 2^32 here
    std::uint16_t lane;
    std::uint16_t key;
};

struct result {
    std::uint64_t stamped = 0;
    std::uint64_t exclusive_episodes = 0;
    std::uint64_t bad_first = 0;  // an exclusive lane's episode not starting at 0
    std::uint64_t gaps = 0;       // an exclusive lane's stamp not following the one before
    std::uint64_t shared_episodes = 0;
    std::uint64_t shared_bad = 0;  // a shared-lane episode whose numbers are not 0..n-1 once each
    std::uint64_t two_keys = 0;    // episodes stamped on events of two keys
    std::uint64_t rounds = 0;
};

// One round: `threads` threads over a new router with `lanes` exclusive lanes until `deadline`
// or until some thread has recorded `cap` stamps (the records bound the test's memory); adds
// what it found to `r`.
void round(int threads, std::uint32_t lanes, std::uint64_t seed,
           std::chrono::steady_clock::time_point deadline, result& r) {
    keyroute::salting_config c;
    c.partitions = 16;
    c.threshold = 8;
    c.window = std::chrono::milliseconds(5);
    c.max_hot_keys = 1;  // one probe group of slots
    c.lanes = lanes;
    c.producer_id = 7;
    c.seed = seed;
    router_type router(c);
    constexpr std::size_t cap = std::size_t{1} << 20;  // 16 MiB of records per thread
    std::vector<std::vector<record>> records(static_cast<std::size_t>(threads));
    std::atomic<bool> stop{false};
    std::atomic<int> stopped{0};
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            std::vector<record>& mine = records[static_cast<std::size_t>(t)];
            mine.reserve(cap);
            std::vector<std::string> keys;
            for (int i = 0; i < 40; ++i) keys.push_back("warm-" + std::to_string(i));
            std::mt19937_64 rng(seed * 16 + static_cast<std::uint64_t>(t));
            const auto start = std::chrono::system_clock::time_point{} + std::chrono::hours(1);
            std::uint64_t i = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                // 64 events per millisecond of event time; the threads drift apart a little.
                const auto now = start + std::chrono::microseconds(i++ * 1000 / 64);
                const auto k = static_cast<std::uint16_t>(rng() % keys.size());
                const keyroute::route_decision d = router.decide(keys[k], now);
                if (!d.stamp) continue;
                mine.push_back(record{d.stamp.episode, static_cast<std::uint32_t>(d.stamp.sequence),
                                      d.stamp.lane, k});
                if (mine.size() == cap) stop.store(true, std::memory_order_relaxed);
            }
            // A thread ends only once all have stopped routing: a lane given back by a thread
            // that ended would pass to one still routing, whose records would then show another
            // thread's episode part way (test_salting_router checks that hand-over).
            stopped.fetch_add(1);
            while (stopped.load() < threads) std::this_thread::yield();
        });
    }
    while (!stop.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stop.store(true);
    for (auto& th : pool) th.join();

    std::vector<record> all;
    std::size_t total = 0;
    for (const auto& mine : records) total += mine.size();
    all.reserve(total);
    for (auto& mine : records) {
        r.stamped += mine.size();
        // Exclusive lanes: each thread has its own, and its records are in routing order.
        std::unordered_map<std::uint64_t, std::uint64_t> next;
        for (const record& x : mine) {
            if (x.lane == lanes) continue;  // the shared lane, checked below
            auto [it, fresh] = next.try_emplace(x.episode, 0);
            if (fresh) {
                ++r.exclusive_episodes;
                if (x.sequence != 0) ++r.bad_first;
            } else if (x.sequence != it->second) {
                ++r.gaps;
            }
            it->second = x.sequence + 1;
        }
        all.insert(all.end(), mine.begin(), mine.end());
        std::vector<record>().swap(mine);
    }
    // By episode, then lane, then sequence: the shared lane's numbers of an episode must run
    // 0, 1, 2, ...; every record of an episode must name the same key.
    std::sort(all.begin(), all.end(), [](const record& a, const record& b) {
        return std::tie(a.episode, a.lane, a.sequence) < std::tie(b.episode, b.lane, b.sequence);
    });
    for (std::size_t i = 0; i < all.size();) {
        std::size_t j = i;
        bool two_keys = false;
        while (j < all.size() && all[j].episode == all[i].episode) {
            two_keys = two_keys || all[j].key != all[i].key;
            if (all[j].lane == lanes) {
                const std::size_t first = j;
                bool bad = false;
                for (; j < all.size() && all[j].episode == all[i].episode; ++j) {
                    bad = bad || all[j].sequence != j - first;
                    two_keys = two_keys || all[j].key != all[i].key;
                }
                ++r.shared_episodes;
                r.shared_bad += bad ? 1U : 0U;
                break;  // the shared lane sorts last
            }
            ++j;
        }
        r.two_keys += two_keys ? 1U : 0U;
        i = j;
    }
    ++r.rounds;
}

// Rounds until `duration` has passed.
auto run(int threads, std::uint32_t lanes, std::chrono::milliseconds duration) -> result {
    const auto deadline = std::chrono::steady_clock::now() + duration;
    result r;
    for (std::uint64_t seed = 1; seed == 1 || std::chrono::steady_clock::now() < deadline; ++seed)
        round(threads, lanes, seed, deadline, r);
    return r;
}

}  // namespace churn

TEST_CASE("stress: slot churn, each lane's sequence of an episode starts at 0 without gaps",
          "[stress][router][threads][stamp]") {
    SECTION("two threads, each on its own lane") {
        const churn::result r = churn::run(2, 2, stress_duration());
        CAPTURE(r.rounds, r.stamped, r.exclusive_episodes, r.bad_first, r.gaps, r.two_keys);
        CHECK(r.exclusive_episodes > 1000);  // the table did churn
        CHECK(r.bad_first == 0);
        CHECK(r.gaps == 0);
        CHECK(r.two_keys == 0);
    }
    SECTION("three threads, two of them sharing the overflow lane") {
        const churn::result r = churn::run(3, 1, stress_duration());
        CAPTURE(r.rounds, r.stamped, r.exclusive_episodes, r.shared_episodes, r.shared_bad,
                r.bad_first, r.gaps, r.two_keys);
        CHECK(r.exclusive_episodes > 1000);
        CHECK(r.shared_episodes == 0);  // the overflow lane sends everything home unstamped
        CHECK(r.bad_first == 0);
        CHECK(r.gaps == 0);
        CHECK(r.shared_bad == 0);
        CHECK(r.two_keys == 0);
    }
}
