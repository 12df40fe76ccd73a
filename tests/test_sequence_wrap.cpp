// The end of a lane's sequence numbers within one episode. The router writes up to 2^32 - 2 (an
// episode lasts a window at most); this test builds it with a last number of 4094 (the router's
// test seam, a traits type) to get there: the lane's last number goes home and ends the episode,
// and the key's next spread event opens a new one, from 0, on home.
#include "keyroute_catch.hpp"
#include "router_config.hpp"

#include <keyroute/resequencer.hpp>
#include <keyroute/salting_router.hpp>
#include <keyroute/stamp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <future>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using ms = std::chrono::milliseconds;
using time_point = std::chrono::system_clock::time_point;

constexpr std::uint32_t last_number = 4094;

struct short_numbers : keyroute::detail::router_traits {
    static constexpr std::uint32_t last_sequence = last_number;
};
using router_type = keyroute::salting_router<keyroute::hash_partitioner<>,
                                             std::chrono::system_clock, short_numbers>;
// Past the last number twice over: every case below routes this many events of one key.
constexpr std::size_t events = 2 * (last_number + 2) + 100;

struct routed {
    std::uint32_t partition = 0;
    std::uint32_t home = 0;
    keyroute::stamp st;
};

/// Routes `events` events of one key in one window (one episode) on one thread: on a lane of its
/// own, or (shared) on the router's shared lane, while another thread holds its only lane.
auto route_one_key(bool shared) -> std::vector<routed> {
    auto c = keyroute_test::router_config(8, 8, 1);
    c.run_length = 7;  // at 32 the run holding the last numbers happened to be home's
    router_type router(c);
    std::promise<void> holding;
    std::promise<void> done;
    std::thread holder;
    if (shared) {
        holder = std::thread([&] {
            (void)router.decide("another key", time_point(ms(1000)));  // takes lane 0
            holding.set_value();
            done.get_future().wait();
        });
        holding.get_future().wait();
    }
    std::vector<routed> out;
    for (std::size_t i = 0; i < events; ++i) {
        const auto d = router.decide("k", time_point(ms(1000)));
        out.push_back({d.partition, d.home, d.stamp});
    }
    if (shared) {
        done.set_value();
        holder.join();
    }
    return out;
}

}  // namespace

TEST_CASE("a lane's last sequence number of an episode goes home; the next episode starts at 0",
          "[router][ordering]") {
    const auto r = route_one_key(false);
    std::set<std::tuple<std::uint64_t, std::uint16_t, std::uint64_t, std::uint64_t>> seen;
    std::set<std::uint64_t> episodes;
    std::uint64_t ended = 0;
    std::uint64_t off_home = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
        const routed& e = r[i];
        off_home += e.partition != e.home ? 1U : 0U;
        if (!e.st) continue;
        CHECK(seen.insert({e.st.producer, e.st.lane, e.st.episode, e.st.sequence}).second);
        CHECK(e.st.sequence <= last_number);
        if (episodes.insert(e.st.episode).second) {
            CHECK(e.st.sequence == 0);     // a new episode starts at 0 ...
            CHECK(e.partition == e.home);  // ... on home
        }
        if (e.st.sequence == last_number) {
            ++ended;
            CHECK(e.partition == e.home);
            // Not vacuous: the event before it was placed off home, in a run.
            REQUIRE(i > 0);
            CHECK(r[i - 1].partition != r[i - 1].home);
        }
    }
    CHECK(ended == 2);  // past the last number twice over
    CHECK(episodes.size() == 3);
    CHECK(off_home > 0);
}

TEST_CASE("the overflow lane sends a hot key home unstamped", "[router][ordering]") {
    const auto r = route_one_key(true);
    for (const routed& e : r) {
        CHECK_FALSE(e.st);
        CHECK(e.partition == e.home);
    }
}

TEST_CASE("past the end of a lane's numbers a resequencer delivers every event once, in order",
          "[router][ordering]") {
    const bool shared = GENERATE(false, true);
    CAPTURE(shared);
    const auto r = route_one_key(shared);
    // The consumer reads the partitions round robin, one event from each in turn.
    std::vector<std::deque<std::pair<int, keyroute::stamp>>> partitions(8);
    for (std::size_t i = 0; i < r.size(); ++i) {
        partitions[r[i].partition].emplace_back(static_cast<int>(i), r[i].st);
    }
    std::vector<int> delivered;
    std::uint64_t gaps = 0;
    keyroute::resequencer_config rc;
    rc.max_delay = ms(1000);
    keyroute::resequencer<int> reseq(
        rc, [&](keyroute::delivery<int>&& d) { delivered.push_back(d.event); },
        [&](const keyroute::gap_report&) { ++gaps; });
    std::vector<std::int64_t> offsets(8, 0);
    std::uint64_t duplicates = 0;
    for (bool any = true; any;) {
        any = false;
        for (std::uint32_t p = 0; p < 8; ++p) {
            if (partitions[p].empty()) continue;
            any = true;
            const auto [event, st] = partitions[p].front();
            partitions[p].pop_front();
            const auto result =
                reseq.push("k", st, event, keyroute::origin{p, offsets[p]++}, ms(0));
            duplicates += result == keyroute::push_result::duplicate ? 1U : 0U;
        }
    }
    reseq.flush();
    CHECK(duplicates == 0);
    CHECK(gaps == 0);
    REQUIRE(delivered.size() == events);
    std::size_t out_of_order = 0;
    for (std::size_t i = 0; i < delivered.size(); ++i) {
        out_of_order += delivered[i] != static_cast<int>(i) ? 1U : 0U;
    }
    CHECK(out_of_order == 0);
}
