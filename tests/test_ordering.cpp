// Ordering: a static partitioner gives each key one partition, so a stream read back partition
// by partition, in any interleaving, keeps each key's order. (A constant partitioner would keep
// it too, trivially: the test also requires the keys to use every partition, and shows that the
// same consumer sees disorder when a key's events are spread.)
#include "keyroute_catch.hpp"
#include "partitioner_types.hpp"

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::uint32_t partitions = 12;

struct event {
    std::string key;
    std::uint64_t seq;
};

/// Produces 200k events over 500 keys, each key numbering its own events, into the partitions
/// `where(key, i)` picks for event i; consumes them picking a random non-empty partition each
/// step. Returns the events consumed out of their key's order.
template <class Where>
auto out_of_order_events(Where&& where, std::set<std::uint32_t>& used) -> std::size_t {
    std::mt19937_64 rng(5);
    std::vector<std::vector<event>> queues(partitions);
    std::unordered_map<std::string, std::uint64_t> produced;
    for (int i = 0; i < 200000; ++i) {
        std::string key = "key-" + std::to_string(rng() % 500);
        const std::uint64_t seq = produced[key]++;
        const std::uint32_t q = where(key, i);
        used.insert(q);
        queues[q].push_back({std::move(key), seq});
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
    REQUIRE(next == produced);  // every event consumed once
    return out_of_order;
}

}  // namespace

TEMPLATE_TEST_CASE("each key's events stay in order through any partition interleaving",
                   "[ordering]", KEYROUTE_STATIC_PARTITIONERS) {
    const TestType p(partitions);
    std::set<std::uint32_t> used;
    CHECK(out_of_order_events([&](const std::string& key, int) { return p.route(key); }, used) ==
          0U);
    CHECK(used.size() == partitions);  // the keys are spread, not all on one partition
}

TEST_CASE("the same consumer sees disorder when a key's events are spread", "[ordering]") {
    std::set<std::uint32_t> used;
    CHECK(out_of_order_events(
              [](const std::string&, int i) { return static_cast<std::uint32_t>(i) % partitions; },
              used) > 0U);
}
