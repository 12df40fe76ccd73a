// Jump consistent hash: published vectors of the paper's C++ code, the partitioner's contract,
// and the property that growing by one only ever moves keys to the new partition.
#include "keyroute_catch.hpp"

#include <keyroute/jump.hpp>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

// The function is usable in constant expressions.
static_assert(keyroute::jump_consistent_hash(256, 1024) == 520);
static_assert(keyroute::jump_consistent_hash(0, 1) == 0);

TEST_CASE("jump_consistent_hash matches the reference C++ code's published vectors",
          "[jump][compat]") {
    // github.com/dgryski/go-jump, jump_test.go ("Generated from the reference C++ code"):
    // buckets 1, 2, ... for each key.
    const std::vector<std::pair<std::uint64_t, std::vector<std::uint32_t>>> go_jump = {
        {0, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {1, {0, 0, 0, 0, 0, 0, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 17, 17}},
        {0xdeadbeef, {0, 1, 2, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 16, 16, 16}},
        {0x0ddc0ffeebadf00d, {0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 15, 15, 15, 15}},
    };
    for (const auto& [key, expected] : go_jump) {
        for (std::size_t i = 0; i < expected.size(); ++i) {
            INFO("key " << key << ", buckets " << i + 1);
            CHECK(keyroute::jump_consistent_hash(key, static_cast<std::uint32_t>(i + 1)) ==
                  expected[i]);
        }
    }
    // ClickHouse, tests/queries/0_stateless/00580_consistent_hashing_functions (.sql / .reference):
    // jumpConsistentHash(key, buckets).
    CHECK(keyroute::jump_consistent_hash(1, 1) == 0);
    CHECK(keyroute::jump_consistent_hash(42, 57) == 43);
    CHECK(keyroute::jump_consistent_hash(256, 1024) == 520);
    CHECK(keyroute::jump_consistent_hash(3735883980ULL, 1) == 0);
    CHECK(keyroute::jump_consistent_hash(3735883980ULL, 666) == 361);
    CHECK(keyroute::jump_consistent_hash(16045690984833335023ULL, 255) == 237);
}

TEST_CASE("jump_consistent_hash stays in range up to 2^32-1 buckets", "[jump]") {
    std::mt19937_64 rng(11);
    for (int i = 0; i < 2000; ++i) {
        const std::uint64_t key = rng();
        CHECK(keyroute::jump_consistent_hash(key, 0xffffffffU) < 0xffffffffU);
        const auto b = static_cast<std::uint32_t>(rng() % 100000 + 1);
        CHECK(keyroute::jump_consistent_hash(key, b) < b);
    }
    CHECK(keyroute::jump_consistent_hash(12345, 0) == 0);
}

TEST_CASE("growing by one bucket moves a key only to the new bucket", "[jump][resize]") {
    std::mt19937_64 rng(5);
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t key = rng();
        std::uint32_t before = keyroute::jump_consistent_hash(key, 1);
        for (std::uint32_t n = 2; n <= 200; ++n) {
            const std::uint32_t after = keyroute::jump_consistent_hash(key, n);
            REQUIRE((after == before || after == n - 1));
            before = after;
        }
    }
}

TEST_CASE("jump_partitioner routes jump_consistent_hash of the 64-bit hash, pinned",
          "[jump][compat]") {
    // XXH3_64bits("user_1") = 0x20f909ab6f54d5a1 (pinned in test_partitioner.cpp).
    for (const std::uint32_t n : {1U, 2U, 12U, 13U, 1000U}) {
        CHECK(keyroute::jump_partitioner<>(n).route("user_1") ==
              keyroute::jump_consistent_hash(0x20f909ab6f54d5a1ULL, n));
    }
    CHECK(keyroute::jump_partitioner<>(12).route("user_1") == 4);
    CHECK(keyroute::jump_partitioner<>(1000).route("user_1") == 789);
    // A 32-bit hash is widened with fmix64 before jumping; murmur2("21") is -973932308 as int32
    // (Kafka's UtilsTest).
    const keyroute::jump_partitioner<keyroute::murmur2> m(100);
    CHECK(m.hash("21") == keyroute::detail::fmix64(static_cast<std::uint32_t>(-973932308)));
    CHECK(m.route("21") == keyroute::jump_consistent_hash(m.hash("21"), 100));
}

TEST_CASE("jump_partitioner is deterministic, in range, and rejects bad counts", "[jump][config]") {
    std::mt19937_64 rng(3);
    for (const std::uint32_t n : {1U, 2U, 7U, 64U, 1000U, 0xffffffffU}) {
        const keyroute::jump_partitioner<> p(n);
        const keyroute::jump_partitioner<> again(n);
        REQUIRE(p.partitions() == n);
        for (int i = 0; i < 500; ++i) {
            std::string key(rng() % 40, '\0');
            for (auto& c : key) c = static_cast<char>(rng());
            const auto part = p.route(key);
            REQUIRE(part < n);
            REQUIRE(part == again.route(key));
        }
    }
    REQUIRE_THROWS_AS(keyroute::jump_partitioner<>(0), std::invalid_argument);
    REQUIRE_THROWS_WITH(keyroute::jump_partitioner<>(0), keyroute_test::contains("got 0"));
    REQUIRE_THROWS_WITH(keyroute::jump_partitioner<>(std::uint64_t{1} << 32U),
                        keyroute_test::contains("got 4294967296"));
    // A hash that declares max_partitions bounds the count.
    using bounded = keyroute::jump_partitioner<keyroute::detail::positive31<keyroute::murmur2>>;
    REQUIRE_THROWS_AS(bounded(0x80000000ULL), std::invalid_argument);
    REQUIRE_NOTHROW(bounded(0x7fffffffULL));
}
