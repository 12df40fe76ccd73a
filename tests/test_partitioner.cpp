// Partitioner contracts: range, determinism, bad counts, edge keys, pinned partitions.
#include "keyroute_catch.hpp"
#include "partitioner_types.hpp"

#include <keyroute/partitioner.hpp>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

TEMPLATE_TEST_CASE("every partitioner routes into [0, n) and is deterministic", "[partitioner]",
                   KEYROUTE_STATIC_PARTITIONERS) {
    std::mt19937_64 rng(3);
    for (const std::uint32_t n : {1U, 2U, 3U, 7U, 64U, 100U, 1000U, 0x7fffffffU}) {
        const TestType p(n);
        const TestType again(n);
        REQUIRE(p.partitions() == n);
        for (int i = 0; i < 2000; ++i) {
            std::string key(rng() % 40, '\0');
            for (auto& c : key) c = static_cast<char>(rng());
            const auto part = p.route(key);
            REQUIRE(part < n);
            REQUIRE(part == again.route(key));
            REQUIRE(part == p.reduce(p.hash(key)));
        }
    }
}

TEMPLATE_TEST_CASE("zero partitions and counts above the scheme's limit throw, naming the value",
                   "[partitioner][config]", KEYROUTE_STATIC_PARTITIONERS) {
    REQUIRE_THROWS_AS(TestType(0), std::invalid_argument);
    REQUIRE_THROWS_WITH(TestType(0), keyroute_test::contains("got 0"));
    const std::uint64_t above = std::uint64_t{TestType::max_partitions} + 1;
    REQUIRE_THROWS_WITH(TestType(above), keyroute_test::contains("got " + std::to_string(above)));
    // A negative count converted to unsigned is caught too, not silently truncated.
    REQUIRE_THROWS_AS(TestType(static_cast<std::uint64_t>(-1)), std::invalid_argument);
    REQUIRE_NOTHROW(TestType(TestType::max_partitions));
}

TEST_CASE("Kafka and Pulsar schemes stop at 2^31-1 partitions, the generic one at 2^32-1",
          "[partitioner][config]") {
    CHECK(keyroute::kafka_partitioner::max_partitions == 0x7fffffffU);
    CHECK(keyroute::rdkafka_consistent_partitioner::max_partitions == 0x7fffffffU);
    CHECK(keyroute::rdkafka_fnv1a_partitioner::max_partitions == 0x7fffffffU);
    CHECK(keyroute::pulsar_java_string_partitioner::max_partitions == 0x7fffffffU);
    CHECK(keyroute::pulsar_murmur3_partitioner::max_partitions == 0x7fffffffU);
    CHECK(keyroute::hash_partitioner<>::max_partitions == 0xffffffffU);
}

TEMPLATE_TEST_CASE("empty, binary and 1 MiB keys route without trouble", "[partitioner][input]",
                   KEYROUTE_STATIC_PARTITIONERS) {
    const TestType p(12);
    CHECK(p.route("") < 12U);
    CHECK(p.route(std::string_view{}) == p.route(""));
    const std::string nul("a\0b", 3);
    CHECK(p.route(nul) < 12U);
    const std::string huge(std::size_t{1} << 20U, '\xff');
    CHECK(p.route(huge) < 12U);  // every byte hashed: test_bad_input's 1 MiB keys
}

TEST_CASE("the default partitioner is fold32(XXH3_64bits) % n, pinned", "[partitioner][compat]") {
    const keyroute::hash_partitioner<> p(100);
    const keyroute::hash_partitioner<keyroute::xxh3, keyroute::modulo_reduction> all64(100);
    for (std::string_view k : {"user_1", "tenant-42", "", "order:9"}) {
        const std::uint64_t h = XXH3_64bits(k.data(), k.size());
        CHECK(p.route(k) == static_cast<std::uint32_t>(h ^ (h >> 32U)) % 100U);
        CHECK(all64.route(k) == h % 100U);
    }
    // Pinned so that no release moves a key: XXH3("user_1") = 0x20f909ab6f54d5a1, folded
    // 0x20f909ab ^ 0x6f54d5a1 = 0x4faddc0a = 1336794122 (Java: Long.hashCode of the hash).
    CHECK(p.route("user_1") == 22U);
    CHECK(all64.route("user_1") == 85U);  // keyroute 0.1's default: all 64 bits % n
    // XXH3("tenant-42") = 0xee7f6fb0845f540f, folded 0x6a203bbf.
    CHECK(keyroute::hash_partitioner<>(7).route("tenant-42") == 2U);
    const keyroute::hash_partitioner<keyroute::xxh3,
                                     keyroute::fold32_reduction<keyroute::fastmod_reduction>>
        fast(7);
    CHECK(fast.route("tenant-42") == 2U);
    const keyroute::hash_partitioner<keyroute::xxh3, keyroute::fastrange_reduction> fr(100);
    CHECK(fr.route("user_1") ==
          static_cast<std::uint32_t>((keyroute::detail::uint128{0x20f909ab6f54d5a1ULL} * 100U) >>
                                     64U));
}

TEST_CASE("named partitioners apply their client's formula", "[partitioner][compat]") {
    // Kafka: (murmur2 & 0x7fffffff) % n; "21" hashes to -973932308 (UtilsTest).
    CHECK(keyroute::kafka_partitioner(10).route("21") ==
          (static_cast<std::uint32_t>(-973932308) & 0x7fffffffU) % 10U);
    // librdkafka fnv1a: abs of the int32 FNV-1a, % n; "kafka" -> 0xd33c4e1.
    CHECK(keyroute::rdkafka_fnv1a_partitioner(7).route("kafka") == 0xd33c4e1U % 7U);
    // librdkafka consistent: crc32 % n; "123456789" -> 0xcbf43926 (no mask).
    CHECK(keyroute::rdkafka_consistent_partitioner(1000).route("123456789") == 0xcbf43926U % 1000U);
    // Pulsar: murmur3_32 & 0x7fffffff, "key1" -> 462881061 (HashTest).
    CHECK(keyroute::pulsar_murmur3_partitioner(16).route("key1") == 462881061U % 16U);
    CHECK(keyroute::pulsar_java_string_partitioner(16).route("keykeykey2") == 42978643U % 16U);
}

TEST_CASE("a user hash functor plugs in, and noexcept follows it", "[partitioner][custom]") {
    struct length_hash {
        auto operator()(std::string_view k) const noexcept -> std::uint64_t { return k.size(); }
    };
    struct throwing_hash {
        auto operator()(std::string_view k) const -> std::uint32_t {
            return static_cast<std::uint32_t>(k.size());
        }
    };
    const keyroute::hash_partitioner<length_hash> p(5);
    CHECK(p.route("abcdefg") == 2U);
    STATIC_REQUIRE(noexcept(p.route("")));
    const keyroute::hash_partitioner<throwing_hash> q(5);
    STATIC_REQUIRE_FALSE(noexcept(q.route("")));
    STATIC_REQUIRE(keyroute::is_hash_functor_v<length_hash>);
    STATIC_REQUIRE_FALSE(keyroute::is_hash_functor_v<int>);
    struct signed_hash {
        auto operator()(std::string_view) const -> int { return 0; }
    };
    STATIC_REQUIRE_FALSE(keyroute::is_hash_functor_v<signed_hash>);
}

TEST_CASE("one partitioner shared by threads gives every thread the same answers",
          "[partitioner][threads]") {
    const keyroute::kafka_partitioner p(64);
    std::vector<std::uint32_t> expected(10000);
    for (std::size_t i = 0; i < expected.size(); ++i)
        expected[i] = p.route("k" + std::to_string(i));
    std::vector<std::size_t> mismatches(2, 0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 2; ++t) {
        threads.emplace_back([&, t] {
            for (std::size_t i = 0; i < expected.size(); ++i) {
                if (p.route("k" + std::to_string(i)) != expected[i]) ++mismatches[t];
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(mismatches[0] == 0U);
    CHECK(mismatches[1] == 0U);
}
