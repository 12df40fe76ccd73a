// The partitioner callbacks at a partition count other than the one they were built for (the
// topic grew): the same scheme with the same settings answers, built once per count; partitioners
// over a chosen id set answer as configured; where there is no answer, the count itself (out of
// range: librdkafka fails the message); counts <= 0 get RD_KAFKA_PARTITION_UA, keyed or not.
// Direct calls, as librdkafka makes them; no cluster needed.
#include "keyroute_catch.hpp"
#include "alloc_counter.hpp"

#include <keyroute/jump.hpp>
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/rendezvous.hpp>

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

namespace kk = keyroute::kafka;

auto keys() -> const std::vector<std::string>& {
    static const std::vector<std::string> k = [] {
        std::vector<std::string> out;
        for (int i = 0; i < 3000; ++i) out.push_back("key-" + std::to_string(i * 104729));
        out.emplace_back();
        out.emplace_back("\0\xff\x01", 3);
        return out;
    }();
    return k;
}

// How many keys `cb` places elsewhere than `expected` at `n` partitions.
template <class Callback, class Partitioner>
auto disagreements(const Callback& cb, const Partitioner& expected, std::int32_t n) -> std::size_t {
    std::size_t bad = 0;
    for (const auto& k : keys()) {
        if (cb.partition(k, n) != static_cast<std::int32_t>(expected.route(k))) ++bad;
    }
    return bad;
}

template <class T, class = void>
struct installs_from_temporary : std::false_type {};
template <class T>
struct installs_from_temporary<T, std::void_t<decltype(std::declval<T&&>().install(
                                      static_cast<rd_kafka_topic_conf_t*>(nullptr)))>>
    : std::true_type {};

}  // namespace

TEST_CASE("partitioner_cb keeps its partitioner's settings at another partition count", "[kafka]") {
    // Answering another count by Partitioner(n) would drop the seed, maglev's table size and the
    // number of key groups (567 of 10000 keys would agree at 17).
    using seeded = keyroute::hash_partitioner<keyroute::xxh3>;
    const keyroute::xxh3 seed(0x5eedULL);
    const kk::partitioner_cb<seeded> xx(seeded(16, seed));
    CHECK(disagreements(xx, seeded(16, seed), 16) == 0U);
    CHECK(disagreements(xx, seeded(17, seed), 17) == 0U);
    CHECK(disagreements(xx, seeded(1000, seed), 1000) == 0U);
    CHECK(disagreements(xx, seeded(17), 17) > 0U);  // the seed matters

    using jump = keyroute::jump_partitioner<keyroute::xxh3>;
    const kk::partitioner_cb<jump> j(jump(8, seed));
    CHECK(disagreements(j, jump(9, seed), 9) == 0U);

    using maglev = keyroute::maglev_partitioner<>;
    const kk::partitioner_cb<maglev> m(maglev(16, 10007));
    CHECK(disagreements(m, maglev(17, 10007), 17) == 0U);
    CHECK(disagreements(m, maglev(17), 17) > 0U);  // the table size matters
    CHECK(m.partition("k", 10008) == 10008);       // more than the table holds: out of range

    using groups = keyroute::key_group_partitioner<>;
    const kk::partitioner_cb<groups> g(groups(16, 512));
    CHECK(disagreements(g, groups(300, 512), 300) == 0U);
    CHECK(g.partition("k", 513) == 513);

    const kk::cpp_partitioner_cb<seeded> cpp(seeded(16, seed));
    std::size_t bad = 0;
    for (const auto& k : keys()) {
        if (const_cast<kk::cpp_partitioner_cb<seeded>&>(cpp).partitioner_cb(
                nullptr, &k, 17, nullptr) != static_cast<std::int32_t>(seeded(17, seed).route(k)))
            ++bad;
    }
    CHECK(bad == 0U);
}

TEST_CASE("a partitioner built per table is built once per new count, then allocates nothing",
          "[kafka][alloc]") {
    // 0.2.7 built a maglev table (7 allocations, milliseconds) on every call at another count.
    using maglev = keyroute::maglev_partitioner<>;
    const kk::partitioner_cb<maglev> m(16);
    for (const std::int32_t n : {17, 18, 19, 20, 17, 20}) {
        CHECK(m.partition("warm", n) >= 0);  // builds each count once
    }
    const maglev at17(17);
    const maglev at20(20);
    const std::uint64_t before = allocations.load();
    std::size_t bad = 0;
    for (const auto& k : keys()) {
        if (m.partition(k, 17) != static_cast<std::int32_t>(at17.route(k))) ++bad;
        if (m.partition(k, 20) != static_cast<std::int32_t>(at20.route(k))) ++bad;
        if (m.partition(k, 16) != static_cast<std::int32_t>(m.partitioner().route(k))) ++bad;
    }
    const std::uint64_t after = allocations.load();
    CHECK(bad == 0U);
    CHECK(after == before);

    // Past the cache's four counts, a count is still answered right (built per call, a table of
    // 65537 slots each time: 100 keys, not all of them).
    const maglev at21(21);
    bad = 0;
    for (std::size_t i = 0; i < 100; ++i) {
        const auto& k = keys()[i * 29];
        if (m.partition(k, 21) != static_cast<std::int32_t>(at21.route(k))) ++bad;
    }
    CHECK(bad == 0U);
}

TEST_CASE("a partitioner over a chosen id set answers as configured at another count", "[kafka]") {
    using rendezvous = keyroute::rendezvous_partitioner<>;
    const rendezvous ids(std::vector<std::uint32_t>{0, 2, 5});
    const kk::partitioner_cb<rendezvous> cb(ids);
    std::size_t bad = 0;
    std::size_t out_of_range = 0;
    for (const auto& k : keys()) {
        const auto p = static_cast<std::int32_t>(ids.route(k));
        if (cb.partition(k, 8) != p) ++bad;  // every id exists at 8
        // At 3, its own count, and at 4, id 5 does not exist: the count itself, out of range
        // (RD_KAFKA_PARTITION_UA left such messages in librdkafka's queue for good; at its own
        // count 5 itself was returned).
        for (const std::int32_t n : {3, 4}) {
            const std::int32_t at = cb.partition(k, n);
            if (p < n ? at != p : at != n) ++bad;
            if (at == n) ++out_of_range;
        }
    }
    CHECK(bad == 0U);
    CHECK(out_of_range > 0U);

    const rendezvous weighted(std::vector<std::uint32_t>{0, 1, 2, 3}, {97.0, 1.0, 1.0, 1.0});
    const kk::partitioner_cb<rendezvous> w(weighted);
    CHECK(disagreements(w, weighted, 5) == 0U);  // the weights hold when the topic grows
}

TEST_CASE("partition counts <= 0 get RD_KAFKA_PARTITION_UA, keyed or not", "[kafka]") {
    // A NULL key went to rd_kafka_msg_partitioner_random first: a division by zero at count 0,
    // and partitions 0..6 at count -7.
    using cb_type = kk::partitioner_cb<keyroute::kafka_partitioner>;
    cb_type cb(4);
    void* opaque = &cb;  // what install() sets as the topic opaque
    kk::cpp_key_pointer_partitioner_cb<keyroute::kafka_partitioner> kp(4);
    for (const std::int32_t n : {0, -1, -7}) {
        CHECK(cb_type::callback(nullptr, nullptr, 0, n, opaque, nullptr) == RD_KAFKA_PARTITION_UA);
        CHECK(cb_type::callback(nullptr, "k", 1, n, opaque, nullptr) == RD_KAFKA_PARTITION_UA);
        CHECK(kk::stateless_partitioner_cb<keyroute::kafka_partitioner>(
                  nullptr, nullptr, 0, n, nullptr, nullptr) == RD_KAFKA_PARTITION_UA);
        CHECK(kp.partitioner_cb(nullptr, nullptr, 0, n, nullptr) == RD_KAFKA_PARTITION_UA);
    }
}

TEST_CASE("a partitioner_cb cannot be installed from a temporary, copied or moved", "[kafka]") {
    using cb = kk::partitioner_cb<keyroute::kafka_partitioner>;
    STATIC_REQUIRE_FALSE(installs_from_temporary<cb>::value);
    STATIC_REQUIRE(installs_from_temporary<cb&>::value);
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<cb>);
    STATIC_REQUIRE_FALSE(std::is_move_constructible_v<cb>);
}
