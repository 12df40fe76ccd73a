// Ordering: a static partitioner gives each key one partition, so a stream read back partition
// by partition, in any interleaving, keeps each key's order.
#include "keyroute_catch.hpp"
#include "partitioner_types.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

TEMPLATE_TEST_CASE("each key's events stay in order through any partition interleaving",
                   "[ordering]", KEYROUTE_STATIC_PARTITIONERS) {
    constexpr std::uint32_t partitions = 12;
    const TestType p(partitions);
    std::mt19937_64 rng(5);
    struct event {
        std::string key;
        std::uint64_t seq;
    };
    // Produce: 200k events over 500 keys, each key numbering its own events.
    std::vector<std::vector<event>> queues(partitions);
    std::unordered_map<std::string, std::uint64_t> produced;
    for (int i = 0; i < 200000; ++i) {
        std::string key = "key-" + std::to_string(rng() % 500);
        const std::uint64_t seq = produced[key]++;
        queues[p.route(key)].push_back({std::move(key), seq});
    }
    // Consume: pick a random non-empty partition each step.
    std::vector<std::size_t> cursor(partitions, 0);
    std::unordered_map<std::string, std::uint64_t> next;
    std::size_t consumed = 0;
    std::size_t out_of_order = 0;
    while (consumed < 200000) {
        const auto q = static_cast<std::size_t>(rng() % partitions);
        if (cursor[q] == queues[q].size()) continue;
        const event& e = queues[q][cursor[q]++];
        if (next[e.key]++ != e.seq) ++out_of_order;
        ++consumed;
    }
    CHECK(out_of_order == 0U);
    CHECK(next == produced);
}
