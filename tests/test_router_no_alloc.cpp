// The salting router allocates nothing after construction: global operator new is counted, and
// must not move while 10M distinct keys (and a hot one) are routed across several windows.
#include "keyroute_catch.hpp"
#include "alloc_counter.hpp"

#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string_view>

TEST_CASE("routing 10M distinct keys allocates nothing after construction", "[router][alloc]") {
    keyroute::salting_config config;
    config.partitions = 1024;
    keyroute::salting_router<keyroute::kafka_partitioner> router(config);
    using time_point = keyroute::salting_router<keyroute::kafka_partitioner>::time_point;
    char buffer[32];
    std::uint64_t sum = 0;
    std::uint64_t salted = 0;
    const std::uint64_t before = allocations.load();
    for (std::uint32_t i = 0; i < 10'000'000U; ++i) {
        // Every other event is one hot tenant, the rest are all distinct keys.
        const int len = i % 2 == 0 ? std::snprintf(buffer, sizeof buffer, "tenant-hot")
                                   : std::snprintf(buffer, sizeof buffer, "user-%u", i);
        const auto now = time_point(std::chrono::milliseconds(std::int64_t{i} / 50));  // ~3 windows
        const auto d = router.decide(std::string_view(buffer, static_cast<std::size_t>(len)), now);
        sum += d.partition;
        salted += d.salted ? 1 : 0;
    }
    const std::uint64_t after = allocations.load();
    CHECK(after == before);
    CHECK(salted > 0);  // the hot path with plans, runs and stamps was exercised
    CHECK(sum > 0);
}
