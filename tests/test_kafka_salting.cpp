// The salting router end to end on a mock cluster (3 brokers, 16 partitions): a skewed stream
// (one key at 90%) over four router windows, with event times given explicitly, produced with
// explicit partitions and stamp headers, then read back: every event exactly once on the
// partition the router chose, balanced partitions from the second window, cold keys in order, and
// the hot key's order restored by a resequencer fed from the stamp headers.
#include "keyroute_catch.hpp"
#include "kafka_mock.hpp"
#include "kafka_stream.hpp"

#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/resequencer.hpp>
#include <keyroute/salting_router.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

namespace kt = keyroute_test::kafka;

constexpr int partition_count = 16;
constexpr std::size_t windows = 4;
constexpr std::size_t per_window = 8000;

struct consumed {
    std::size_t id = 0;
    kt::record rec;
};

// Records in the order a consumer could see them: each partition in offset order, partitions
// interleaved in fetch-sized chunks of 1 to 64 records.
auto interleave(std::vector<consumed> all, std::uint64_t seed) -> std::vector<consumed> {
    std::sort(all.begin(), all.end(), [](const consumed& a, const consumed& b) {
        return a.rec.partition != b.rec.partition ? a.rec.partition < b.rec.partition
                                                  : a.rec.offset < b.rec.offset;
    });
    std::map<std::int32_t, std::vector<consumed>> by_partition;
    for (auto& c : all) by_partition[c.rec.partition].push_back(std::move(c));
    std::map<std::int32_t, std::size_t> next;
    std::mt19937_64 rng(seed);
    std::vector<consumed> out;
    while (out.size() < all.size()) {
        for (auto& [p, list] : by_partition) {
            const std::size_t chunk = 1 + rng() % 64;
            for (std::size_t i = 0; i < chunk && next[p] < list.size(); ++i) {
                out.push_back(list[next[p]++]);
            }
        }
    }
    return out;
}

// Pairs (i, j), i < j, whose ids are out of order; 0 for a sorted sequence.
auto inversions_of(const std::vector<std::size_t>& ids) -> std::size_t {
    std::size_t n = 0;
    for (std::size_t i = 1; i < ids.size(); ++i) {
        if (ids[i] < ids[i - 1]) ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("a skewed stream routed by the salting router reads back balanced and in order",
          "[kafka][salting]") {
    kt::mock_cluster cluster(3);
    const std::string topic = "salting";
    cluster.create_topic(topic, partition_count);
    const kt::stream s = kt::skewed_stream(per_window, windows, 0.9, 400, 7);
    kt::router_type router(kt::router_config(partition_count));
    const kt::routed routed = kt::produce_stream(cluster.bootstraps(), topic, router, s);

    const auto records = kt::read_all(cluster.bootstraps(), topic, partition_count);
    const std::size_t n = s.keys.size();

    // Every event exactly once, on the router's partition, with the router's stamp.
    std::vector<int> seen(n, 0);
    std::size_t misplaced = 0;
    std::size_t wrong_stamp = 0;
    std::vector<consumed> all;
    for (const auto& r : records) {
        const auto id = static_cast<std::size_t>(std::stoull(r.value));
        REQUIRE(id < n);
        ++seen[id];
        if (r.partition != routed.partition[id] || r.key != s.keys[id]) ++misplaced;
        const bool stamped = static_cast<bool>(routed.stamp[id]);
        if (stamped != r.stamp.has_value() || (stamped && *r.stamp != routed.stamp[id]) ||
            r.stamp_error != keyroute::stamp_error::none) {
            ++wrong_stamp;
        }
        all.push_back({id, r});
    }
    CHECK(records.size() == n);
    CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(n));
    CHECK(misplaced == 0U);
    CHECK(wrong_stamp == 0U);

    // Balance, window by window, from the partitions the events were read from.
    std::vector<std::vector<std::size_t>> load(windows, std::vector<std::size_t>(partition_count));
    std::set<std::int32_t> hot_partitions;
    for (const auto& c : all) {
        ++load[s.window_of(c.id)][static_cast<std::size_t>(c.rec.partition)];
        if (c.rec.key == kt::hot_key) hot_partitions.insert(c.rec.partition);
    }
    CHECK(hot_partitions.size() >= 12U);  // the hot key was spread
    for (std::size_t w = 1; w < windows; ++w) {
        const double mean = static_cast<double>(per_window) / partition_count;
        const auto max = *std::max_element(load[w].begin(), load[w].end());
        INFO("window " << w << ": max " << max << ", mean " << mean);
        CHECK(static_cast<double>(max) / mean <= 1.10);
    }

    // Cold keys: one partition each, read in the order they were produced.
    std::map<std::string, std::vector<consumed>> by_key;
    for (const auto& c : all) {
        if (c.rec.key != kt::hot_key) by_key[c.rec.key].push_back(c);
    }
    std::size_t split_cold = 0;
    std::size_t unordered_cold = 0;
    for (auto& [key, list] : by_key) {
        std::sort(list.begin(), list.end(),
                  [](const consumed& a, const consumed& b) { return a.rec.offset < b.rec.offset; });
        for (std::size_t i = 1; i < list.size(); ++i) {
            if (list[i].rec.partition != list[0].rec.partition) ++split_cold;
            if (list[i].id < list[i - 1].id) ++unordered_cold;
        }
    }
    CHECK(split_cold == 0U);
    CHECK(unordered_cold == 0U);

    // The hot key, read across partitions, is out of order; the resequencer restores it.
    const auto order = interleave(all, 11);
    std::vector<std::size_t> raw_hot;
    for (const auto& c : order) {
        if (c.rec.key == kt::hot_key) raw_hot.push_back(c.id);
    }
    CHECK(inversions_of(raw_hot) > 0U);

    std::vector<std::size_t> hot_delivered;
    std::map<std::string, std::vector<std::size_t>> cold_delivered;
    keyroute::resequencer<std::size_t> reseq(
        keyroute::resequencer_config{},
        [&](keyroute::delivery<std::size_t>&& d) {
            if (d.key == kt::hot_key) {
                hot_delivered.push_back(d.event);
            } else {
                cold_delivered[std::string(d.key)].push_back(d.event);
            }
        },
        [](const keyroute::gap_report&) {});
    std::size_t not_accepted = 0;
    for (const auto& c : order) {
        const auto result =
            reseq.push(c.rec.key, c.rec.stamp.value_or(keyroute::stamp{}), c.id,
                       keyroute::origin{static_cast<std::uint32_t>(c.rec.partition), c.rec.offset},
                       s.millis_of(c.id));
        if (result != keyroute::push_result::accepted) ++not_accepted;
    }
    CHECK(not_accepted == 0U);
    CHECK(reseq.held_events() == 0U);  // every wait was ended by the missing sequence arriving
    reseq.flush();
    const auto& st = reseq.stats();
    CHECK(st.delivered == n);
    CHECK(st.missing == 0U);
    CHECK(st.late == 0U);
    CHECK(st.out_of_order == 0U);
    CHECK(hot_delivered.size() == raw_hot.size());
    CHECK(inversions_of(hot_delivered) == 0U);
    std::size_t cold_inversions = 0;
    for (const auto& [key, ids] : cold_delivered) cold_inversions += inversions_of(ids);
    CHECK(cold_inversions == 0U);
}
