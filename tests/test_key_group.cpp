// Flink-style key groups: the group -> partition formula, group ranges, bad input, pinned values.
#include "keyroute_catch.hpp"

#include <keyroute/key_group.hpp>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

namespace {
using key_group = keyroute::key_group_partitioner<>;
}  // namespace

TEST_CASE("a key goes to group hash % G, a group to floor(g n / G)", "[key_group][compat]") {
    std::mt19937_64 rng(9);
    for (const auto& [n, groups] : {std::pair<std::uint32_t, std::uint32_t>{1, 128},
                                    {12, 128},
                                    {13, 128},
                                    {128, 128},
                                    {100, 32768},
                                    {65536, 65536},
                                    {3, 0xffffffffU}}) {
        const key_group p(n, groups);
        REQUIRE(p.partitions() == n);
        REQUIRE(p.max_key_groups() == groups);
        for (int i = 0; i < 2000; ++i) {
            const std::string key = "k" + std::to_string(rng());
            const std::uint64_t h = XXH3_64bits(key.data(), key.size());
            const auto g = static_cast<std::uint32_t>(h % groups);
            REQUIRE(p.key_group(key) == g);
            // Flink's computeOperatorIndexForKeyGroup: keyGroupId * parallelism / maxParallelism.
            REQUIRE(p.route(key) == std::uint64_t{g} * n / groups);
        }
    }
    // XXH3_64bits("user_1") = 0x20f909ab6f54d5a1: group 33 of 128, partition 33 * 12 / 128 = 3.
    CHECK(key_group(12).key_group("user_1") == 33);
    CHECK(key_group(12).route("user_1") == 3);
    CHECK(key_group(12).route("tenant-42") == 1);
    CHECK(key_group(12).route("") == 6);
}

TEST_CASE("group ranges are contiguous, cover every group, and agree with routing", "[key_group]") {
    for (const auto& [n, groups] : {std::pair<std::uint32_t, std::uint32_t>{1, 128},
                                    {12, 128},
                                    {13, 128},
                                    {127, 128},
                                    {128, 128},
                                    {7, 1000}}) {
        const key_group p(n, groups);
        std::uint32_t next = 0;
        for (std::uint32_t part = 0; part < n; ++part) {
            const auto range = p.key_groups_of(part);
            INFO("n " << n << ", G " << groups << ", partition " << part);
            REQUIRE(range.first == next);
            REQUIRE(range.last >= range.first);
            for (std::uint32_t g = range.first; g <= range.last; ++g) {
                REQUIRE(p.partition_of_group(g) == part);
            }
            next = range.last + 1;
        }
        REQUIRE(next == groups);
    }
    // Flink, 128 groups at parallelism 12: operator 0 owns [0, 10], operator 11 owns [118, 127].
    CHECK(key_group(12).key_groups_of(0).last == 10);
    CHECK(key_group(12).key_groups_of(11).first == 118);
}

TEST_CASE("a 32-bit hash is reduced as it is", "[key_group]") {
    const keyroute::key_group_partitioner<keyroute::murmur2> p(10, 128);
    // murmur2("21") = -973932308 as int32 (Kafka's UtilsTest).
    const auto g = static_cast<std::uint32_t>(-973932308) % 128U;
    CHECK(p.key_group("21") == g);
    CHECK(p.route("21") == g * 10U / 128U);
}

TEST_CASE("bad counts are rejected, naming the value", "[key_group][config]") {
    REQUIRE_THROWS_WITH(
        key_group(0),
        keyroute_test::contains("partitions must be in [1, max_key_groups = 128], got 0"));
    REQUIRE_THROWS_WITH(key_group(129), keyroute_test::contains("got 129"));
    REQUIRE_THROWS_WITH(key_group(1, 0), keyroute_test::contains(
                                             "max_key_groups must be in [1, 4294967295], got 0"));
    REQUIRE_THROWS_AS(key_group(1, std::uint64_t{1} << 32U), std::invalid_argument);
    REQUIRE_NOTHROW(key_group(128));
    REQUIRE_NOTHROW(key_group(1, 1));
}
