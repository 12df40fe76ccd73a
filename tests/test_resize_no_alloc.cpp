// Routing with the resize partitioners never allocates: global operator new is counted here,
// and must not move during a million routes.
#include "keyroute_catch.hpp"
#include "alloc_counter.hpp"

#include <keyroute/jump.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/rendezvous.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

template <class P>
auto allocations_during_routes(const P& p, const std::vector<std::string>& keys) -> std::uint64_t {
    std::uint64_t sum = 0;
    const std::uint64_t before = allocations.load();
    for (int round = 0; round < 4; ++round) {
        for (const auto& k : keys) sum += p.route(k);
    }
    const std::uint64_t after = allocations.load();
    CHECK(sum > 0);
    return after - before;
}

}  // namespace

TEST_CASE("route() does not allocate", "[resize][alloc]") {
    std::vector<std::string> keys;
    for (int i = 0; i < 4096; ++i)
        keys.push_back("a-rather-long-key-that-defeats-sso-" + std::to_string(i));
    REQUIRE(allocations.load() >= keys.size());  // the counter works: building keys allocated

    CHECK(allocations_during_routes(keyroute::jump_partitioner<>(100), keys) == 0);
    CHECK(allocations_during_routes(keyroute::rendezvous_partitioner<>(100), keys) == 0);
    const keyroute::rendezvous_partitioner<> weighted(std::vector<std::uint32_t>{1, 2, 3},
                                                      {1.0, 2.0, 3.0});
    CHECK(allocations_during_routes(weighted, keys) == 0);
    CHECK(allocations_during_routes(keyroute::maglev_partitioner<>(100), keys) == 0);
    CHECK(allocations_during_routes(keyroute::key_group_partitioner<>(100), keys) == 0);
}
