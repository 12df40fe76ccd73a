#pragma once
// The salting router configuration the tests build on: one-minute windows, a fixed producer id,
// episode base and sketch seed (so runs repeat, stamps included), and the given partitions,
// threshold and lanes (0: automatic).
#include <keyroute/salting_router.hpp>

#include <chrono>
#include <cstdint>

namespace keyroute_test {

inline auto router_config(std::uint64_t partitions, std::uint64_t threshold = 0,
                          std::uint32_t lanes = 0) -> keyroute::salting_config {
    keyroute::salting_config c;
    c.partitions = partitions;
    c.threshold = threshold;
    c.window = std::chrono::seconds(60);
    c.producer_id = 42;
    c.episode_base = 1;
    c.seed = 7;
    c.lanes = lanes;
    return c;
}

}  // namespace keyroute_test
