// Cross-check: keyroute's Kafka partitioners against librdkafka's own exported partitioner
// functions, on 100k random binary keys of 0 to 200 bytes and partition counts up to 2^31-1.
#include "keyroute_catch.hpp"

#include <keyroute/partitioner.hpp>

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using rd_partitioner = int32_t (*)(const rd_kafka_topic_t*, const void*, size_t, int32_t, void*,
                                   void*);

auto random_keys() -> const std::vector<std::string>& {
    static const std::vector<std::string> keys = [] {
        std::mt19937_64 rng(20261130);
        std::vector<std::string> out;
        for (int i = 0; i < 100000; ++i) {
            std::string k(rng() % 201, '\0');
            for (auto& c : k) c = static_cast<char>(rng());
            out.push_back(std::move(k));
        }
        return out;
    }();
    return keys;
}

// librdkafka's consistent_random sends an empty key (length 0) to a random partition, so that
// comparison skips empty keys; every other partitioner here hashes them.
template <class Partitioner>
auto mismatches(rd_partitioner reference, bool skip_empty = false) -> std::size_t {
    std::size_t bad = 0;
    for (const std::uint32_t n : {1U, 2U, 3U, 7U, 8U, 12U, 64U, 100U, 1000U, 0x7fffffffU}) {
        const Partitioner p(n);
        for (const auto& k : random_keys()) {
            if (skip_empty && k.empty()) continue;
            // A non-NULL pointer even for the empty key: NULL means "no key" to librdkafka.
            const int32_t expected = reference(nullptr, k.empty() ? "" : k.data(), k.size(),
                                               static_cast<int32_t>(n), nullptr, nullptr);
            if (static_cast<std::uint32_t>(expected) != p.route(k)) ++bad;
        }
    }
    return bad;
}

}  // namespace

TEST_CASE("kafka_partitioner equals librdkafka murmur2 and murmur2_random", "[rdkafka][compat]") {
    CHECK(mismatches<keyroute::kafka_partitioner>(&rd_kafka_msg_partitioner_murmur2) == 0U);
    CHECK(mismatches<keyroute::kafka_partitioner>(&rd_kafka_msg_partitioner_murmur2_random) == 0U);
}

TEST_CASE("rdkafka_consistent_partitioner equals librdkafka consistent and consistent_random",
          "[rdkafka][compat]") {
    CHECK(mismatches<keyroute::rdkafka_consistent_partitioner>(
              &rd_kafka_msg_partitioner_consistent) == 0U);
    CHECK(mismatches<keyroute::rdkafka_consistent_partitioner>(
              &rd_kafka_msg_partitioner_consistent_random, true) == 0U);
}

TEST_CASE("rdkafka_fnv1a_partitioner equals librdkafka fnv1a and fnv1a_random",
          "[rdkafka][compat]") {
    CHECK(mismatches<keyroute::rdkafka_fnv1a_partitioner>(&rd_kafka_msg_partitioner_fnv1a) == 0U);
    CHECK(mismatches<keyroute::rdkafka_fnv1a_partitioner>(&rd_kafka_msg_partitioner_fnv1a_random) ==
          0U);
}
