// The catalogue of bad input (docs/bad-input.md): one test case per entry or small group, each
// checking the documented behaviour. Known defects are pinned with [!shouldfail] (the case
// passes while the defect is there; when it is fixed, drop the tag), and one case is hidden
// because it is too slow for CI ([.overflow]).
#include "keyroute_catch.hpp"
#include "router_config.hpp"

#include <keyroute/hash.hpp>
#include <keyroute/jump.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/rendezvous.hpp>
#include <keyroute/resequencer.hpp>
#include <keyroute/salting_router.hpp>
#include <keyroute/stamp.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using clock_type = std::chrono::system_clock;
using time_point = clock_type::time_point;
using ms = std::chrono::milliseconds;

auto at(std::int64_t millis) -> time_point { return time_point(ms(millis)); }

auto router_config(std::uint64_t partitions, std::uint64_t threshold) -> keyroute::salting_config {
    return keyroute_test::router_config(partitions, threshold, 2);
}

// Java's String.hashCode over UTF-16 code units.
auto java_hash(std::u16string_view units) -> std::uint32_t {
    std::uint32_t h = 0;
    for (const char16_t u : units) h = 31U * h + u;
    return h;
}

auto one_mib_key(char fill) -> std::string {
    std::string key(std::size_t{1} << 20U, fill);
    for (std::size_t i = 0; i < key.size(); i += 4099) key[i] = static_cast<char>(i * 31U);
    return key;
}

// Routes `key` through every scheme with `n` partitions and checks the range.
void routes_in_range(std::string_view key, std::uint32_t n) {
    CHECK(keyroute::hash_partitioner<>(n).route(key) < n);
    CHECK(keyroute::kafka_partitioner(n).route(key) < n);
    CHECK(keyroute::rdkafka_consistent_partitioner(n).route(key) < n);
    CHECK(keyroute::rdkafka_fnv1a_partitioner(n).route(key) < n);
    CHECK(keyroute::pulsar_java_string_partitioner(n).route(key) < n);
    CHECK(keyroute::pulsar_murmur3_partitioner(n).route(key) < n);
    CHECK(keyroute::jump_partitioner<>(n).route(key) < n);
    CHECK(keyroute::rendezvous_partitioner<>(n).route(key) < n);
    CHECK(keyroute::maglev_partitioner<>(n, 4099).route(key) < n);
    CHECK(keyroute::key_group_partitioner<>(n, 4096).route(key) < n);
}

// A resequencer of ints that records what it delivers.
struct reseq {
    std::vector<int> delivered;
    std::vector<keyroute::delivery_order> orders;
    std::vector<keyroute::gap_report> gaps;
    keyroute::resequencer<int> r;

    explicit reseq(const keyroute::resequencer_config& c)
        : r(
              c,
              [this](keyroute::delivery<int>&& d) {
                  delivered.push_back(d.event);
                  orders.push_back(d.order);
              },
              [this](const keyroute::gap_report& g) { gaps.push_back(g); }) {}
    reseq(const reseq&) = delete;
    auto operator=(const reseq&) -> reseq& = delete;
};

}  // namespace

// ---- partition counts ------------------------------------------------------------------------

TEST_CASE("bad-input: zero partitions are refused by every scheme, naming the value",
          "[bad-input][config]") {
    const auto refuses = [](auto make) {
        CHECK_THROWS_AS(make(), std::invalid_argument);
        CHECK_THROWS_WITH(make(), keyroute_test::contains("got 0"));
    };
    refuses([] { return keyroute::hash_partitioner<>(0); });
    refuses([] { return keyroute::kafka_partitioner(0); });
    refuses([] { return keyroute::rdkafka_consistent_partitioner(0); });
    refuses([] { return keyroute::rdkafka_fnv1a_partitioner(0); });
    refuses([] { return keyroute::pulsar_java_string_partitioner(0); });
    refuses([] { return keyroute::pulsar_murmur3_partitioner(0); });
    refuses([] { return keyroute::jump_partitioner<>(0); });
    refuses([] { return keyroute::rendezvous_partitioner<>(0); });
    refuses([] { return keyroute::maglev_partitioner<>(0); });
    refuses([] { return keyroute::key_group_partitioner<>(0); });
    refuses([] { return keyroute::key_group_partitioner<>(1, 0); });  // zero key groups
    CHECK_THROWS_AS(keyroute::rendezvous_partitioner<>(std::vector<std::uint32_t>{}),
                    std::invalid_argument);
    CHECK_THROWS_WITH(keyroute::maglev_partitioner<>(std::vector<std::uint32_t>{}),
                      keyroute_test::contains("got 0 ids"));
    refuses([] { return keyroute::salting_router<>(router_config(0, 0)); });
    refuses(
        [] { return keyroute::salting_router<keyroute::kafka_partitioner>(router_config(0, 0)); });
}

TEST_CASE("bad-input: counts above a scheme's limit are refused; the limit itself works",
          "[bad-input][config]") {
    const std::uint64_t int32_limit = 0x7fffffffULL;
    const std::uint64_t uint32_limit = 0xffffffffULL;
    // Kafka and Pulsar partition ids are int32.
    CHECK_THROWS_WITH(keyroute::kafka_partitioner(int32_limit + 1),
                      keyroute_test::contains("2147483648"));
    CHECK_THROWS_AS(keyroute::pulsar_murmur3_partitioner(int32_limit + 1), std::invalid_argument);
    CHECK_THROWS_AS(keyroute::rdkafka_fnv1a_partitioner(int32_limit + 1), std::invalid_argument);
    // Each message names its scheme.
    CHECK_THROWS_WITH(keyroute::kafka_partitioner(0),
                      keyroute_test::contains("keyroute::kafka_partitioner: partitions"));
    CHECK_THROWS_WITH(keyroute::rdkafka_consistent_partitioner(0),
                      keyroute_test::contains("keyroute::rdkafka_consistent_partitioner"));
    CHECK_THROWS_WITH(keyroute::rdkafka_fnv1a_partitioner(0),
                      keyroute_test::contains("keyroute::rdkafka_fnv1a_partitioner"));
    CHECK_THROWS_WITH(keyroute::pulsar_java_string_partitioner(0),
                      keyroute_test::contains("keyroute::pulsar_java_string_partitioner"));
    CHECK_THROWS_WITH(keyroute::pulsar_murmur3_partitioner(0),
                      keyroute_test::contains("keyroute::pulsar_murmur3_partitioner"));
    CHECK_THROWS_WITH(keyroute::hash_partitioner<>(0),
                      keyroute_test::contains("keyroute::hash_partitioner: partitions"));
    CHECK(keyroute::kafka_partitioner(int32_limit).route("user-42") < int32_limit);
    CHECK(keyroute::pulsar_java_string_partitioner(int32_limit).route("user-42") < int32_limit);
    // The generic schemes stop at 2^32-1; a count that does not fit 64 bits after a negative
    // conversion is refused too.
    CHECK_THROWS_WITH(keyroute::hash_partitioner<>(uint32_limit + 1),
                      keyroute_test::contains("4294967296"));
    CHECK_THROWS_AS(keyroute::hash_partitioner<>(static_cast<std::uint64_t>(-1)),
                    std::invalid_argument);
    CHECK(keyroute::hash_partitioner<>(uint32_limit).route("user-42") < uint32_limit);
    CHECK_THROWS_AS(keyroute::jump_partitioner<>(uint32_limit + 1), std::invalid_argument);
    CHECK(keyroute::jump_partitioner<>(uint32_limit).route("user-42") < uint32_limit);
    CHECK_THROWS_AS(keyroute::jump_partitioner<keyroute::detail::positive31<keyroute::murmur2>>(
                        int32_limit + 1),
                    std::invalid_argument);
    // Rendezvous is O(n) per route: at most 2^24 ids.
    CHECK_THROWS_WITH(keyroute::rendezvous_partitioner<>((1U << 24U) + 1U),
                      keyroute_test::contains("16777217"));
    // Maglev: no more ids than table slots; the table size a prime in [2, 2^31-1].
    CHECK_THROWS_AS(keyroute::maglev_partitioner<>(258, 257), std::invalid_argument);
    CHECK(keyroute::maglev_partitioner<>(257, 257).route("user-42") < 257U);
    CHECK_THROWS_WITH(keyroute::maglev_partitioner<>(4, 256), keyroute_test::contains("got 256"));
    CHECK_THROWS_WITH(keyroute::maglev_partitioner<>(1, 1), keyroute_test::contains("got 1"));
    CHECK_THROWS_AS(keyroute::maglev_partitioner<>(1, 0x80000000ULL), std::invalid_argument);
    CHECK_THROWS_AS(keyroute::maglev_partitioner<>::table_size_for(0), std::invalid_argument);
    CHECK_THROWS_AS(keyroute::maglev_partitioner<>::table_size_for(0x7fffffffULL / 100 + 1),
                    std::invalid_argument);
    // Key groups: n <= G <= 2^32-1.
    CHECK_THROWS_WITH(keyroute::key_group_partitioner<>(129, 128),
                      keyroute_test::contains("got 129"));
    CHECK_THROWS_AS(keyroute::key_group_partitioner<>(1, uint32_limit + 1), std::invalid_argument);
    const keyroute::key_group_partitioner<> widest(uint32_limit, uint32_limit);
    CHECK(widest.route("user-42") < uint32_limit);
    // The router: the base partitioner's limit, and the base must agree with the configuration.
    CHECK_THROWS_AS(
        keyroute::salting_router<keyroute::kafka_partitioner>(router_config(int32_limit + 1, 0)),
        std::invalid_argument);
    CHECK_THROWS_AS(keyroute::salting_router<>(router_config(uint32_limit + 1, 0)),
                    std::invalid_argument);
    CHECK_THROWS_WITH(
        keyroute::salting_router<>(router_config(8, 0), keyroute::hash_partitioner<>(9)),
        keyroute_test::contains("differs"));
}

TEST_CASE("bad-input: set_available refuses a partition that does not exist",
          "[bad-input][router]") {
    keyroute::salting_router<> router(router_config(4, 0));
    CHECK_THROWS_WITH(router.set_available(4, false), keyroute_test::contains("partition 4"));
    CHECK_NOTHROW(router.set_available(3, false));
    CHECK_FALSE(router.available(3));
    CHECK_FALSE(router.available(4));  // not a partition: never available
}

TEST_CASE("bad-input: with every partition down, every key goes home, the hot one too",
          "[bad-input][router]") {
    // Nothing is available to fail over or spread to: each event goes to its key's home, and
    // the caller sees that home is down (available(d.partition) is false).
    for (const bool failover : {false, true}) {
        INFO("failover_cold_keys " << failover);
        auto config = router_config(6, 0);
        config.failover_cold_keys = failover;
        keyroute::salting_router<> router(config);
        for (std::uint32_t p = 0; p < 6; ++p) router.set_available(p, false);
        const auto t0 = std::chrono::system_clock::time_point{} + std::chrono::hours(1000);
        std::uint64_t away = 0;
        std::uint64_t salted = 0;
        for (int i = 0; i < 60000; ++i) {
            // Every other event is one key's: hot enough to be spread on any partition up.
            const std::string key = i % 2 == 0 ? "tenant-1" : "k" + std::to_string(i % 997);
            const auto d = router.decide(key, t0 + std::chrono::milliseconds(i));
            away += d.partition != d.home ? 1U : 0U;
            salted += d.stamp.salted ? 1U : 0U;
            REQUIRE_FALSE(router.available(d.partition));
        }
        CHECK(away == 0);
        CHECK(salted == 0);
        // One partition back: with failover, the down partitions' cold keys go to it.
        router.set_available(2, true);
        const keyroute::hash_partitioner<> base(6);
        std::uint64_t to_two = 0;
        for (int k = 0; k < 997; ++k) {
            const std::string key = "k" + std::to_string(k);
            const auto d = router.decide(key, t0 + std::chrono::minutes(5));
            CHECK(d.home == base.route(key));
            CHECK(d.partition == (failover ? 2U : d.home));
            to_two += d.partition == 2 ? 1U : 0U;
        }
        CHECK(to_two > (failover ? 900U : 0U));
    }
}

TEST_CASE("bad-input: rendezvous and maglev refuse duplicate ids and bad weights",
          "[bad-input][config]") {
    using rv = keyroute::rendezvous_partitioner<>;
    CHECK_THROWS_WITH(rv(std::vector<std::uint32_t>{3, 5, 3}),
                      keyroute_test::contains("id 3 more than once"));
    CHECK_THROWS_AS(keyroute::maglev_partitioner<>(std::vector<std::uint32_t>{1, 1}),
                    std::invalid_argument);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    for (const double bad : {0.0, -1.0, nan, inf}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(rv({1, 2}, {1.0, bad}), std::invalid_argument);
    }
    CHECK_THROWS_WITH(rv({1, 2}, {1.0}), keyroute_test::contains("1 weights for 2 ids"));
    CHECK(rv({1, 2}, {1e-250, 1e30}).route("user-42") == 2U);  // extreme but valid ratios
    // Weights more than 2^960 apart are refused (0.2.9; see test_rendezvous.cpp).
    CHECK_THROWS_WITH(rv({1, 2}, {1e-300, 1e300}), keyroute_test::contains("factor of 2^960"));
}

// The router indexes its per-partition state by the base's partition (0.2.12: a base over ids
// {0, 5, 9} was accepted, and its keys on 5 and 9 were counted past the lanes' loads; under
// AddressSanitizer, a heap-buffer-overflow).
TEST_CASE("bad-input: a salting router refuses a base over ids other than 0 to n - 1",
          "[bad-input][config]") {
    using rv = keyroute::rendezvous_partitioner<>;
    using mg = keyroute::maglev_partitioner<>;
    const auto config = router_config(3, 0);
    CHECK_THROWS_WITH(keyroute::salting_router<rv>(config, rv({0, 5, 9})),
                      keyroute_test::contains("partition id 5 is not below"));
    CHECK_THROWS_WITH(keyroute::salting_router<mg>(config, mg({2, 3, 4})),
                      keyroute_test::contains("partition id 3 is not below"));
    // The same ids in any order are fine, and every key stays below the count.
    keyroute::salting_router<rv> router(config, rv({2, 0, 1}));
    for (int i = 0; i < 1000; ++i) CHECK(router.route("user-" + std::to_string(i)) < 3U);
    CHECK_NOTHROW(keyroute::salting_router<mg>(config, mg({1, 2, 0})));
}

// ---- router configuration ------------------------------------------------------------------

TEST_CASE("bad-input: threshold 0 is automatic mode, not 'everything is hot'",
          "[bad-input][router]") {
    keyroute::salting_router<> router(router_config(16, 0));
    // 16000 events over 1000 keys: no key comes near the automatic threshold.
    std::uint64_t salted = 0;
    for (int i = 0; i < 16000; ++i) {
        const auto d = router.decide("key-" + std::to_string(i % 1000), at(1000 + i));
        salted += d.salted ? 1U : 0U;
        CHECK(d.partition == d.home);
    }
    CHECK(salted == 0);
    const keyroute::salting_stats s = router.stats();
    CHECK(s.threshold >= router.config().min_threshold);
    CHECK(s.routed == 16000);
    // A threshold that does not fit 32 bits is refused; the largest one means "never hot".
    CHECK_THROWS_WITH(keyroute::salting_router<>(router_config(16, 0x100000000ULL)),
                      keyroute_test::contains("threshold"));
    keyroute::salting_router<> never(router_config(4, 0xffffffffULL));
    for (int i = 0; i < 5000; ++i) CHECK_FALSE(never.decide("only-key", at(1000)).salted);
}

// A key must be admitted (then counted exactly, and salted at the threshold) whatever the
// threshold: an admission level that grows with it could be out of reach, and salting silently
// off. 2^24 + 2^12 events of one key against the largest threshold: the key is tracked (counted
// exactly, not hot yet).
TEST_CASE("bad-input: a huge threshold still tracks the key and never salts it",
          "[bad-input][router][config]") {
    auto c = router_config(2, 0xffffffffULL);
    c.lanes = 1;
    keyroute::salting_router<> router(c);
    const std::uint64_t events = (std::uint64_t{1} << 24U) + 4096;
    std::uint64_t salted = 0;
    for (std::uint64_t i = 0; i < events; ++i) salted += router.decide("k", at(1000)).salted;
    CHECK(salted == 0);
    const keyroute::salting_stats s = router.stats();
    REQUIRE(s.hot_keys.size() == 1);
    CHECK(s.hot_keys[0].key == "k");
    CHECK_FALSE(s.hot_keys[0].salted);
    CHECK(s.hot_keys[0].events > 0);
    CHECK(s.hot_keys[0].events <= events);
}

TEST_CASE("bad-input: zero or negative windows and out-of-range settings are refused",
          "[bad-input][router][config]") {
    using router = keyroute::salting_router<>;
    auto c = router_config(8, 0);
    c.window = ms(0);
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("window must be positive, got 0 ms"));
    c.window = ms(-60000);
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("got -60000 ms"));
    c = router_config(8, 0);
    c.auto_fraction = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("auto_fraction"));
    c.auto_fraction = 1.5;
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("auto_fraction"));
    // Named with every digit that tells it from a valid one (not "got 1.000000").
    c.auto_fraction = 1.0000001;
    CHECK_THROWS_WITH(router(c), Catch::Matchers::EndsWith("got 1.0000001"));
    c.auto_fraction = -1e-12;
    CHECK_THROWS_WITH(router(c), Catch::Matchers::EndsWith("got -1e-12"));
    c.auto_fraction = 1.0 + std::numeric_limits<double>::epsilon();  // needs 17 digits
    CHECK_THROWS_WITH(router(c), Catch::Matchers::EndsWith("got 1.0000000000000002"));
    c = router_config(8, 0);
    c.min_threshold = 0;
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("min_threshold"));
    c = router_config(8, 0);
    c.run_length = 65537;
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("got 65537"));
    c = router_config(8, 0);
    c.max_hot_keys = 4097;
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("got 4097"));
    c = router_config(8, 0);
    c.lanes = 257;
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("got 257"));
    c = router_config(8, 0);
    c.episode_base = std::uint64_t{1} << 56U;
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("episode_base must be below 2^56"));
    c.episode_base = (std::uint64_t{1} << 56U) - 1U;
    CHECK_NOTHROW(router(c));
    // The resequencer's durations: negative is refused, zero is valid.
    keyroute::resequencer_config rc;
    rc.max_delay = ms(-1);
    const auto sink = [](keyroute::delivery<int>&&) {};
    const auto gap = [](const keyroute::gap_report&) {};
    CHECK_THROWS_WITH(keyroute::resequencer<int>(rc, sink, gap),
                      keyroute_test::contains("max_delay"));
    rc.max_delay = ms(0);
    rc.episode_ttl = ms(-1);
    CHECK_THROWS_WITH(keyroute::resequencer<int>(rc, sink, gap),
                      keyroute_test::contains("episode_ttl"));
    rc.episode_ttl = ms(0);
    CHECK_NOTHROW(keyroute::resequencer<int>(rc, sink, gap));
}

// A clock that counts Rep ticks of Period seconds and always reads 0.
template <class Rep, class Period>
struct tick_clock {
    using rep = Rep;
    using period = Period;
    using duration = std::chrono::duration<rep, period>;
    using time_point = std::chrono::time_point<tick_clock>;
    static constexpr bool is_steady = false;
    static auto now() noexcept -> time_point { return time_point{duration{0}}; }
};

// Picosecond ticks: a year of them does not fit 64 bits.
using picosecond_clock = tick_clock<std::int64_t, std::pico>;
// Ticks of 1.000000007 ms (period 1000000007 / 10^12 s).
using odd_tick_clock = tick_clock<std::int64_t, std::ratio<1000000007, 1000000000000>>;

TEST_CASE("bad-input: a window that does not fit the clock's tick count is refused",
          "[bad-input][router][config]") {
    // The window is checked before its conversion to ticks, which would overflow (undefined
    // behaviour), so the refusal names the right reason.
    using router = keyroute::salting_router<keyroute::hash_partitioner<>, picosecond_clock>;
    auto c = router_config(8, 0);
    c.window = std::chrono::hours(24 * 200);
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("window does not fit the clock's 64-bit "
                                                         "tick count, got 17280000000 ms"));
    c.window = std::chrono::hours(24 * 100);  // 8.64e18 ps: fits
    router r(c);
    CHECK(r.route("k", picosecond_clock::time_point{}) < 8U);

    // A tick of 1.000000007 ms: fewer ticks than milliseconds, but the conversion multiplies by
    // 10^9 first (the first fix checked only clocks with more ticks than milliseconds).
    using odd = keyroute::salting_router<keyroute::hash_partitioner<>, odd_tick_clock>;
    c.window = std::chrono::hours(24 * 200);
    CHECK_THROWS_WITH(odd(c), keyroute_test::contains("does not fit the clock's 64-bit tick"));
    c.window = std::chrono::hours(24 * 100);  // 8.64e18 after the multiplication: fits, but is
                                              // not a whole number of such ticks
    CHECK_THROWS_WITH(odd(c), keyroute_test::contains("whole number of the clock's ticks"));
    c.window = std::chrono::milliseconds(1000000007);  // 10^9 ticks exactly
    CHECK_NOTHROW(odd(c));
}

// 32-bit microsecond ticks: 2^31 - 1 of them are about 35.8 minutes.
using narrow_clock = tick_clock<std::int32_t, std::micro>;

TEST_CASE("bad-input: a window wider than a narrow clock's ticks is refused as such",
          "[bad-input][router][config]") {
    // The window's ticks must not be cut to 32 bits, which would make the refusal say the window
    // is not a whole number of the clock's ticks.
    using router = keyroute::salting_router<keyroute::hash_partitioner<>, narrow_clock>;
    auto c = router_config(8, 0);
    c.window = std::chrono::hours(1);
    CHECK_THROWS_WITH(router(c), keyroute_test::contains("window of 3600000 ms is 3600000000 ticks "
                                                         "of the clock, more than its tick count "
                                                         "(32 bits) holds"));
    c.window = std::chrono::minutes(35);  // 2.1e9 ticks: fits
    router r(c);
    CHECK(r.route("k", narrow_clock::time_point{narrow_clock::duration{2000000000}}) < 8U);
    CHECK(r.stats().window == 0);
}

TEST_CASE("bad-input: sizing a router for a count it refuses neither hangs nor wraps",
          "[bad-input][router][config]") {
    // state_bytes(2^58 + 1) looped forever (next_pow2 shifted its power to 0); 2^62 wrapped.
    using router = keyroute::salting_router<>;
    const auto max = std::numeric_limits<std::size_t>::max();
    CHECK(router::state_bytes((std::uint64_t{1} << 58U) + 1U, 128, 2) == max);
    CHECK(router::state_bytes(std::uint64_t{1} << 62U, 128, 2) == max);
    CHECK(router::state_bytes(router::max_partitions, 4096, 256) < max);
    CHECK(router::state_bytes(router::max_partitions + 1ULL, 4096, 256) == max);
    CHECK(router::state_bytes(router::max_partitions, 4096, 1U << 31U) == max);  // lanes it refuses
    CHECK(router::state_bytes(64, 4097, 2) == max);  // hot keys it refuses
    CHECK(router::state_bytes(0, 128, 2) == max);    // no partitions (0.2.8: a plausible size)
    CHECK(router::state_bytes(64, 0, 2) < max);      // 0 hot keys: automatic
    CHECK(router::automatic_lanes(std::uint64_t{1} << 62U, 128, 8) == 2U);
    auto two_lanes = router_config(1024, 0);
    two_lanes.lanes = 2;
    const router r(two_lanes);
    CHECK(router::state_bytes(1024, r.config().max_hot_keys, 2) == r.memory_bytes());
    CHECK(router::state_bytes(1024, 0, 2) == r.memory_bytes());
}

// ---- keys ------------------------------------------------------------------------------------

TEST_CASE("bad-input: one partition, and a key that is all of a window so far, place soundly",
          "[bad-input][router]") {
    // Both reached std::clamp with its bounds crossed in the placement of a hot key's run
    // (undefined; an abort where _GLIBCXX_ASSERTIONS is defined, as in the asan preset): with
    // one partition, clamp(need, 2, 1); and a key tracked since the last window that counts more
    // events than the new window has routed, clamp(spread, share > 1, 1).
    keyroute::salting_router<> one(router_config(1, 100));
    std::uint64_t salted = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::string key = i % 2 == 0 ? "hot" : "cold-" + std::to_string(i % 700);
        const auto d = one.decide(key, at(i * 10));  // 200 s: four windows
        REQUIRE(d.partition == 0U);
        salted += d.salted ? 1U : 0U;
    }
    CHECK(salted == 0);  // nowhere to spread it: the only partition is its home

    // 20000 partitions: no plan is kept at that count, so the hot key's runs are placed by
    // place()'s own rule from its first hot event.
    auto c = router_config(20000, 10);
    keyroute::salting_router<> wide(c);
    for (int i = 0; i < 8; ++i) (void)wide.decide("only", at(i));
    REQUIRE(wide.stats().hot_keys.size() == 1);  // still tracked in the next window
    std::uint64_t only_salted = 0;
    for (int i = 0; i < 20; ++i) {
        const auto d = wide.decide("only", at(60000 + i));
        REQUIRE(d.partition < 20000U);
        only_salted += d.salted ? 1U : 0U;
    }
    CHECK(only_salted > 0);
}

TEST_CASE("bad-input: an empty key is a key like any other", "[bad-input][keys]") {
    for (const std::uint32_t n : {1U, 7U, 64U}) routes_in_range("", n);
    // The hashes of no bytes, from each function's definition.
    CHECK(keyroute::xxh3{}("") == XXH3_64bits(nullptr, 0));
    CHECK(keyroute::crc32{}("") == 0U);
    CHECK(keyroute::murmur3_32{}("") == 0U);
    CHECK(keyroute::java_string_hash{}("") == 0U);
    CHECK(keyroute::fnv1a{}("") == 0U - 0x811c9dc5U);  // the offset basis, negative as int32
    CHECK(keyroute::murmur2{}("") == 0x106e08d9U);     // librdkafka's unit test value for ""
    CHECK(keyroute::kafka_partitioner(8).route(std::string_view{}) ==
          keyroute::kafka_partitioner(8).route(""));
    // The router tracks it like any key and the resequencer takes it.
    keyroute::salting_router<> router(router_config(8, 0));
    const auto d = router.decide("", at(0));
    CHECK(d.partition == d.home);
    CHECK(d.home == router.base().route(""));
    reseq q(keyroute::resequencer_config{});
    CHECK(q.r.push("", keyroute::stamp{1, 0, 1, 0, true}, 5, keyroute::origin{0, 0}, ms(0)) ==
          keyroute::push_result::accepted);
    CHECK(q.delivered == std::vector<int>{5});
}

TEST_CASE(
    "bad-input: 1 MiB keys hash every byte, route in range, and are bounded in the router and the "
    "resequencer",
    "[bad-input][keys]") {
    const std::string big = one_mib_key('x');
    std::string changed = big;
    changed.back() = static_cast<char>(changed.back() ^ 1);
    routes_in_range(big, 1000);
    // Every byte counts, up to the last one (no truncation of long keys).
    CHECK(keyroute::xxh3{}(big) != keyroute::xxh3{}(changed));
    CHECK(keyroute::crc32{}(big) != keyroute::crc32{}(changed));  // CRC detects any one-bit change
    CHECK(keyroute::murmur2{}(big) != keyroute::murmur2{}(changed));
    CHECK(keyroute::java_string_hash{}(big) != keyroute::java_string_hash{}(changed));
    CHECK(keyroute::fnv1a{}(big) != keyroute::fnv1a{}(changed));
    CHECK(keyroute::murmur3_32{}(big) != keyroute::murmur3_32{}(changed));
    CHECK(keyroute::xxh3{}(big) == keyroute::xxh3{}(std::string(big)));  // bytes, not the buffer
    // The router keeps a 24-byte prefix of a tracked key, never the whole key.
    keyroute::salting_router<> router(router_config(8, 100));
    for (int i = 0; i < 300; ++i) (void)router.decide(big, at(1000));
    const keyroute::salting_stats s = router.stats();
    REQUIRE(s.hot_keys.size() == 1);
    CHECK(s.hot_keys[0].truncated);
    CHECK(s.hot_keys[0].key == big.substr(0, 24));
    // The resequencer counts the key against max_bytes: too big to hold, it is delivered at once
    // and the sequences it would have waited for are reported missing.
    keyroute::resequencer_config rc;
    rc.max_bytes = std::size_t{64} << 10U;
    reseq q(rc);
    CHECK(q.r.push(big, keyroute::stamp{1, 0, 1, 3, true}, 7, keyroute::origin{0, 0}, ms(0)) ==
          keyroute::push_result::accepted);
    CHECK(q.delivered == std::vector<int>{7});
    REQUIRE(q.gaps.size() == 1);
    CHECK(q.gaps[0].first_missing == 0);
    CHECK(q.gaps[0].last_missing == 2);
    CHECK(q.gaps[0].reason == keyroute::gap_reason::full);
    CHECK(q.r.held_bytes() == 0);
}

TEST_CASE("bad-input: NUL bytes are key bytes", "[bad-input][keys]") {
    const std::string_view a("a", 1);
    const std::string_view a_nul("a\0", 2);
    const std::string_view a_nul_b("a\0b", 3);
    CHECK(keyroute::xxh3{}(a) != keyroute::xxh3{}(a_nul));
    CHECK(keyroute::murmur2{}(a) != keyroute::murmur2{}(a_nul));
    CHECK(keyroute::crc32{}(a) != keyroute::crc32{}(a_nul));
    CHECK(keyroute::murmur3_32{}(a) != keyroute::murmur3_32{}(a_nul));
    CHECK(keyroute::fnv1a{}(a) != keyroute::fnv1a{}(a_nul));
    // Java: U+0000 is a code unit like any other (checked with OpenJDK 17's String.hashCode).
    CHECK(keyroute::java_string_hash{}(a_nul_b) == java_hash(std::u16string_view(u"a\u0000b", 3)));
    CHECK(keyroute::java_string_hash{}(a_nul_b) == 93315U);
    routes_in_range(a_nul_b, 16);
    // The router reports the key with its NUL.
    keyroute::salting_router<> router(router_config(8, 100));
    for (int i = 0; i < 300; ++i) (void)router.decide(a_nul_b, at(1000));
    const keyroute::salting_stats s = router.stats();
    REQUIRE(s.hot_keys.size() == 1);
    CHECK(s.hot_keys[0].key == a_nul_b);
}

TEST_CASE("bad-input: invalid UTF-8 hashes as Java's decoder replaces it",
          "[bad-input][keys][java]") {
    // Each expectation is the UTF-16 that OpenJDK 17's `new String(bytes, UTF_8)` produces, and
    // its hashCode, which this test recomputes from the code units.
    const keyroute::java_string_hash java;
    CHECK(java("\xff") == java_hash(u"\uFFFD"));                      // never a lead byte
    CHECK(java("\x80") == java_hash(u"\uFFFD"));                      // stray continuation
    CHECK(java("\xc0\xaf") == java_hash(u"\uFFFD\uFFFD"));            // overlong '/'
    CHECK(java("\xe0\x80\x80") == java_hash(u"\uFFFD\uFFFD\uFFFD"));  // overlong NUL
    CHECK(java("\xed\xa0\x80") == java_hash(u"\uFFFD"));              // encoded surrogate: one
    CHECK(java("\xf0\x9f\x98") == java_hash(u"\uFFFD"));              // truncated at the end
    CHECK(java("a\xe2\x82"
               "b") == java_hash(u"a\uFFFDb"));  // truncated in the middle
    CHECK(java("\xf4\x90\x80\x80") == java_hash(u"\uFFFD\uFFFD\uFFFD\uFFFD"));  // above U+10FFFF
    CHECK(java("\xf8\x88\x80\x80\x80") == 2408927421U);           // 5-byte form: five U+FFFD
    CHECK(java("\xf0\x9f\x98\x80") == java_hash(u"\U0001F600"));  // valid: a surrogate pair
    CHECK(java("\xf0\x9f\x98\x80") == 1772899U);
    // The Pulsar scheme built on it routes such keys in range, as the Java client does.
    const keyroute::pulsar_java_string_partitioner pulsar(12);
    CHECK(pulsar.route("\xc0\xaf") == (java_hash(u"\uFFFD\uFFFD") & 0x7fffffffU) % 12U);
    routes_in_range("\xed\xa0\x80\xff", 12);
}

// ---- time ------------------------------------------------------------------------------------

TEST_CASE("bad-input: a clock that goes back an hour or forward a year",
          "[bad-input][router][clock]") {
    keyroute::salting_router<> router(router_config(16, 50));
    const std::int64_t t0 = 1700000000000;  // November 2023
    const std::int64_t hour = 3600LL * 1000;
    const std::int64_t year = 365LL * 24 * hour;
    std::uint64_t calls = 0;
    std::int64_t last_window = std::numeric_limits<std::int64_t>::min();
    const auto burst = [&](std::int64_t t) {
        for (int i = 0; i < 400; ++i) {
            // One hot key and many cold ones.
            const std::string key = i % 2 == 0 ? std::string("hot") : "cold-" + std::to_string(i);
            const auto d = router.decide(key, at(t + i));
            ++calls;
            REQUIRE(d.partition < 16U);
            if (!d.salted) CHECK(d.partition == d.home);
            if (key != "hot") {  // 5 events each in all: cold, never spread
                CHECK_FALSE(d.salted);
                CHECK(d.partition == d.home);
            }
        }
        const keyroute::salting_stats s = router.stats();
        CHECK(s.routed == calls);
        CHECK(s.window >= last_window);  // windows never go back
        last_window = s.window;
        std::uint64_t load = 0;
        for (const std::uint64_t l : s.partition_load) load += l;
        return load;  // the current window's
    };
    CHECK(burst(t0) == 400U);
    CHECK(burst(t0 - hour) == 800U);  // late events count in the current window
    CHECK(router.stats().window == t0 / 60000);
    // A jump of more than an hour takes a second event near the first: the first counts in the
    // window it left (one stray time far ahead does not move the router).
    CHECK(burst(t0 + year) == 399U);
    CHECK(router.stats().window == (t0 + year) / 60000);
    CHECK(burst(t0) == 799U);  // a year back: still the future window, late events count in it
    CHECK(router.stats().window == (t0 + year) / 60000);
    CHECK(burst(-t0) == 1199U);                           // before the epoch
    CHECK(router.stats().routed == std::uint64_t{2000});  // five bursts of 400
    // The resequencer: a watermark that goes back is ignored.
    reseq q(keyroute::resequencer_config{});
    q.r.advance_watermark(ms(t0));
    q.r.advance_watermark(ms(t0 - hour));
    CHECK(q.r.watermark() == ms(t0));
}

namespace {
/// What comes before a stream of cold keys: nothing; a running router, then one event a year
/// ahead; one event a year ahead as the router's first; a running router, then two.
enum class before_stream { nothing, one_stray, first_stray, two_strays };

/// 50 cold keys at 2 events a minute each for two hours, threshold 100 a minute: how many of
/// their events were salted.
auto cold_stream_salted(before_stream before) -> std::uint64_t {
    auto c = router_config(8, 100);
    c.lanes = 1;
    keyroute::salting_router<> router(c);
    const std::int64_t t0 = 1700000000000;
    const std::int64_t year = 365LL * 24 * 3600 * 1000;
    if (before == before_stream::one_stray || before == before_stream::two_strays) {
        for (int i = 0; i < 10; ++i) (void)router.decide("warm-up", at(t0 - 1000 + i));
    }
    if (before != before_stream::nothing) (void)router.decide("x", at(t0 + year));
    if (before == before_stream::two_strays) (void)router.decide("x", at(t0 + year + 1));
    std::uint64_t salted = 0;
    for (std::int64_t minute = 0; minute < 120; ++minute) {
        for (int k = 0; k < 50; ++k) {
            for (int i = 0; i < 2; ++i) {
                const auto d = router.decide("cold-" + std::to_string(k),
                                             at(t0 + minute * 60000 + k * 10 + i));
                salted += d.salted ? 1U : 0U;
            }
        }
    }
    return salted;
}
}  // namespace

TEST_CASE("bad-input: a stream of cold keys stays home", "[bad-input][router][clock]") {
    CHECK(cold_stream_salted(before_stream::nothing) == 0);
}

// One stray time far ahead does not move a running router's window: a jump of more than an
// hour takes a second event near it. A router that stayed in the stray's window would count
// every later event in it, and cold keys would add up to the threshold (4550 of these 12,000
// events salted).
TEST_CASE("bad-input: after one event a year ahead, a stream of cold keys stays home",
          "[bad-input][router][clock]") {
    CHECK(cold_stream_salted(before_stream::one_stray) == 0);
}

// **Defect** (docs/bad-input.md, Time): a router whose first event is far ahead, or whose clock
// stays ahead for two events or more (a real-time clock off until NTP steps it back), stays in
// that window: windows never go back. Pinned: these cases pass while the defect is there.
TEST_CASE("bad-input: a router whose first event is a year ahead keeps cold keys home",
          "[bad-input][router][clock][!shouldfail]") {
    CHECK(cold_stream_salted(before_stream::first_stray) == 0);
}

TEST_CASE("bad-input: after two events a year ahead, a stream of cold keys stays home",
          "[bad-input][router][clock][!shouldfail]") {
    CHECK(cold_stream_salted(before_stream::two_strays) == 0);
}

// The way around the defect above for route(key)/decide(key), which read the router's clock: a
// clock that never steps. The router takes any clock; on steady_clock it routes and salts.
TEST_CASE("bad-input: a router on std::chrono::steady_clock, which never steps",
          "[bad-input][router][clock]") {
    keyroute::salting_router<keyroute::hash_partitioner<>, std::chrono::steady_clock> router(
        router_config(8, 50));
    std::uint64_t salted = 0;
    for (int i = 0; i < 2000; ++i) {
        const auto d = router.decide("hot");  // reads steady_clock
        REQUIRE(d.partition < 8U);
        salted += d.salted ? 1U : 0U;
    }
    CHECK(salted > 0);  // 2000 events within one or two one-minute windows, threshold 50
    CHECK(router.stats().routed == 2000);
}

TEST_CASE("bad-input: events at the very ends of the resequencer's clock",
          "[bad-input][resequencer][clock]") {
    keyroute::resequencer_config rc;
    rc.max_delay = ms(1000);
    reseq q(rc);
    // Held at time max: its deadline saturates at max instead of overflowing; only flush() or a
    // watermark of max itself releases it.
    CHECK(q.r.push("k", keyroute::stamp{1, 0, 1, 1, true}, 1, keyroute::origin{0, 0}, ms::max()) ==
          keyroute::push_result::accepted);
    CHECK(q.r.push("j", keyroute::stamp{1, 0, 2, 1, true}, 2, keyroute::origin{1, 0}, ms::min()) ==
          keyroute::push_result::accepted);
    q.r.advance_watermark(ms::min());
    CHECK(q.delivered.empty());
    q.r.advance_watermark(ms::max() - ms(1));
    CHECK(q.delivered == std::vector<int>{2});
    SECTION("flush") { q.r.flush(); }
    SECTION("a watermark of max") { q.r.advance_watermark(ms::max()); }
    CHECK(q.delivered == std::vector<int>{2, 1});
    CHECK(q.r.held_events() == 0);
}

// ---- counters --------------------------------------------------------------------------------

// Each lane counts events per partition per window in a uint32 that saturates at 2^32 - 1: a
// partition that receives more events than that in one window reads as full (never as empty,
// which would draw hot keys onto it), and stats().routed stays exact. It drives 2^32 + 3 events
// (minutes in a Release build), so it is hidden: run it with `test_bad_input "[.overflow]"`.
TEST_CASE("bad-input: more than 2^32 events to one partition in one window", "[.overflow]") {
    auto c = router_config(2, 0xffffffffULL);  // tracked from about 2^24 events, never hot
    c.lanes = 1;
    keyroute::salting_router<> router(c);
    const std::uint64_t events = (std::uint64_t{1} << 32U) + 3;
    const time_point t = at(1000);
    std::uint32_t home = 0;
    for (std::uint64_t i = 0; i < events; ++i) home = router.route("one-key", t);
    const keyroute::salting_stats s = router.stats();
    CHECK(s.routed == events);
    CHECK(s.partition_load[home] == 0xffffffffULL);
}

// A lane's pending count of a tracked key (flushed every 16 events) is tagged with its window,
// so no event of the previous window counts towards the new window's exact count: a key with
// exactly `threshold` events in the window after it was hot stays unsalted, whatever count the
// previous window left pending (16 consecutive previous-window volumes cover every remainder).
TEST_CASE("bad-input: a key at exactly the threshold in the window after it was hot stays unsalted",
          "[bad-input][router]") {
    const std::uint64_t threshold = 40;
    std::uint64_t salted = 0;
    for (std::uint64_t before = 100; before < 116; ++before) {
        auto c = router_config(8, threshold);
        c.lanes = 1;
        keyroute::salting_router<> router(c);
        for (std::uint64_t i = 0; i < before; ++i) (void)router.decide("k", at(1000));
        for (std::uint64_t i = 0; i < threshold; ++i)
            salted += router.decide("k", at(61000)).salted ? 1U : 0U;
    }
    CHECK(salted == 0);
}

// When a candidate's slot is handed to another key in the same window (a candidate never spread
// may give its slot to a key with a higher estimate), the new key starts from its own count: a
// lane's pending count and run restart with each episode. Found by fuzz_router: with the sketch
// seed 8 the empty key takes the slot of "\x1a" (it was salted at its 6th event, threshold 10).
TEST_CASE("bad-input: a key that takes over a tracked slot starts from its own count",
          "[bad-input][router]") {
    keyroute::salting_config c;
    c.partitions = 4;
    c.threshold = 10;
    c.window = ms(1000);
    c.lanes = 1;
    c.max_hot_keys = 16;
    c.seed = 8;
    c.producer_id = 1;
    keyroute::salting_router<keyroute::kafka_partitioner> router(c);
    const std::int64_t t = 1103823372863;
    const std::string old_key("\x1a", 1);
    for (int i = 0; i < 6; ++i) (void)router.decide(old_key, at(t));
    for (int i = 0; i < 9; ++i) (void)router.decide(old_key, at(t + 1000));
    std::uint64_t salted = 0;
    for (int i = 0; i < 10; ++i) salted += router.decide("", at(t + 1000)).salted ? 1U : 0U;
    CHECK(salted == 0);  // ten events, threshold ten: never hot
}

// ---- adversarial keys ------------------------------------------------------------------------

namespace {

// The router's doorkeeper cell for a key under a seed, mirroring salting_router with a 32-bit
// base partitioner (kafka_partitioner), whose fingerprint is xxh3{seed}(key) | 1: cell
// (fp >> 20) & (cells - 1), with 2 cells per tracked slot (256 slots for 8 partitions).
auto door_cell(std::string_view key, std::uint64_t seed) -> std::uint64_t {
    return ((keyroute::xxh3{seed}(key) | 1U) >> 20U) & 511U;
}

// Keys whose doorkeeper cell is the victim's under `seed`.
auto craft_collisions(std::string_view victim, std::uint64_t seed, std::size_t count)
    -> std::vector<std::string> {
    const std::uint64_t target = door_cell(victim, seed);
    std::vector<std::string> out;
    for (std::uint64_t i = 0; out.size() < count; ++i) {
        std::string key = "attack-" + std::to_string(i);
        if (door_cell(key, seed) == target) out.push_back(std::move(key));
    }
    return out;
}

}  // namespace

TEST_CASE("bad-input: keys crafted to collide with a victim's tracking state",
          "[bad-input][router][adversarial]") {
    const std::uint64_t seed_a = 0x1234;
    const std::uint64_t seed_b = 0x9876;
    const std::uint64_t threshold = 64;
    const std::string victim = "victim-tenant";
    const std::vector<std::string> crafted = craft_collisions(victim, seed_a, 40);

    // Keys crafted against seed A's cells mostly miss under another seed (1 in 512 by chance).
    std::size_t still = 0;
    for (const std::string& k : crafted) still += door_cell(k, seed_b) == door_cell(victim, seed_b);
    CHECK(still <= 2);

    for (const std::uint64_t seed : {seed_a, seed_b}) {
        auto c = router_config(8, threshold);
        c.seed = seed;
        keyroute::salting_router<keyroute::kafka_partitioner> router(c);
        std::uint64_t salted = 0;
        std::uint64_t moved = 0;
        // Each crafted key sends fewer than `threshold` events, interleaved with the victim's.
        for (int round = 0; round < 20; ++round) {
            for (const std::string& k : crafted) {
                const auto d = router.decide(k, at(1000));
                salted += d.salted ? 1U : 0U;
                moved += d.partition != d.home ? 1U : 0U;
            }
            const auto d = router.decide(victim, at(1000));
            salted += d.salted ? 1U : 0U;
            moved += d.partition != d.home ? 1U : 0U;
        }
        CHECK(salted == 0);  // exact counts gate spreading: nobody passed the threshold
        CHECK(moved == 0);
    }
}

// ---- resequencer limits and stamps -----------------------------------------------------------

TEST_CASE("bad-input: a full resequencer, release_early and refuse", "[bad-input][resequencer]") {
    for (const auto policy :
         {keyroute::full_policy::release_early, keyroute::full_policy::refuse}) {
        CAPTURE(static_cast<int>(policy));
        keyroute::resequencer_config rc;
        rc.max_events = 3;
        rc.max_delay = ms(1000000);
        rc.on_full = policy;
        reseq q(rc);
        std::set<int> accepted;
        std::size_t refused = 0;
        // Twenty episodes whose sequence 0 never comes: each event must wait.
        for (int e = 0; e < 20; ++e) {
            const keyroute::stamp st{9, 0, static_cast<std::uint64_t>(e + 1), 1, true};
            const auto part = static_cast<std::uint32_t>(e);
            const auto result =
                q.r.push("k" + std::to_string(e), st, e, keyroute::origin{part, 0}, ms(e));
            CHECK(q.r.held_events() <= 3);
            if (result == keyroute::push_result::accepted) accepted.insert(e);
            if (result == keyroute::push_result::refused) ++refused;
            CHECK(result != keyroute::push_result::duplicate);
        }
        if (policy == keyroute::full_policy::release_early) {
            CHECK(refused == 0);
            CHECK(accepted.size() == 20);
            CHECK(q.delivered.size() == 17);  // the oldest go early, each with its gap reported
            CHECK(q.gaps.size() == 17);
            CHECK(q.gaps[0].reason == keyroute::gap_reason::full);
        } else {
            CHECK(refused == 17);
            CHECK(accepted == std::set<int>{0, 1, 2});
            CHECK(q.delivered.empty());
            CHECK(q.r.committable_offset(0) == 0);
            CHECK_FALSE(q.r.committable_offset(3).has_value());  // a refused offset is not passed
        }
        q.r.flush();
        // Exactly once: every accepted event, nothing else.
        CHECK(std::set<int>(q.delivered.begin(), q.delivered.end()) == accepted);
        CHECK(q.delivered.size() == accepted.size());
    }
}

// push()'s contract after `refused`: the same event again before any later offset of its
// partition. Breaking it was silent: the later offset was taken, and the refused event, below it,
// was then answered `duplicate` and never delivered.
TEST_CASE("bad-input: a later offset pushed before a refused event is pushed again",
          "[bad-input][resequencer]") {
    keyroute::resequencer_config rc;
    rc.max_events = 1;
    rc.max_delay = ms(1000000);
    rc.on_full = keyroute::full_policy::refuse;
    reseq q(rc);
    const keyroute::stamp waits{9, 0, 1, 1, true};  // sequence 0 of its episode not read yet
    REQUIRE(q.r.push("a", waits, 1, keyroute::origin{0, 0}, ms(0)) ==
            keyroute::push_result::accepted);
    const keyroute::stamp other{9, 0, 2, 1, true};
    REQUIRE(q.r.push("b", other, 2, keyroute::origin{1, 0}, ms(0)) ==
            keyroute::push_result::refused);
    CHECK_THROWS_WITH(q.r.push("c", keyroute::stamp{}, 3, keyroute::origin{1, 1}, ms(0)),
                      keyroute_test::contains("partition 1 offset 1 pushed before offset 0, which "
                                              "was refused, was pushed again"));
    // Other partitions go on; the error changed nothing, and the retry is taken.
    CHECK(q.r.push("d", keyroute::stamp{}, 4, keyroute::origin{2, 0}, ms(0)) ==
          keyroute::push_result::accepted);
    CHECK(q.r.push("a", keyroute::stamp{9, 0, 1, 0, true}, 0, keyroute::origin{3, 0}, ms(0)) ==
          keyroute::push_result::accepted);  // sequence 0: both of "a" go, room is made
    CHECK(q.r.push("b", other, 2, keyroute::origin{1, 0}, ms(0)) ==
          keyroute::push_result::accepted);
    CHECK(q.r.push("c", keyroute::stamp{}, 3, keyroute::origin{1, 1}, ms(0)) ==
          keyroute::push_result::accepted);
    // A reading that jumps past a refused offset (skip_to) owes it nothing any more.
    CHECK(q.r.push("e", keyroute::stamp{9, 0, 3, 1, true}, 5, keyroute::origin{4, 0}, ms(0)) ==
          keyroute::push_result::refused);
    q.r.skip_to(4, 10);
    CHECK(q.r.push("f", keyroute::stamp{}, 6, keyroute::origin{4, 10}, ms(0)) ==
          keyroute::push_result::accepted);
    q.r.flush();
    CHECK(std::multiset<int>(q.delivered.begin(), q.delivered.end()) ==
          std::multiset<int>{0, 1, 2, 3, 4, 6});
}

// Sequence 2^64-1 is an episode's last: once delivered, the episode is finished instead of its
// next expected sequence wrapping to 0, so sequences already given up come late, and the ones
// delivered are duplicates. Each way of delivering it: at once (too big to hold, its gap given
// up), in order after the sequence before it, and held until the watermark gives up its gap.
TEST_CASE("bad-input: a stamp with sequence 2^64-1", "[bad-input][resequencer]") {
    const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
    const auto st = [](std::uint64_t seq) { return keyroute::stamp{1, 0, 1, seq, true}; };
    std::int64_t offset = 0;
    const auto push = [&](reseq& q, std::uint64_t seq, int event, const std::string& key = "k") {
        return q.r.push(key, st(seq), event, keyroute::origin{0, offset++}, ms(0));
    };
    keyroute::resequencer_config rc;
    std::uint64_t first_given_up = 0;
    std::uint64_t last_given_up = top - 1;
    std::unique_ptr<reseq> q;
    SECTION("too big to hold: delivered at once") {
        rc.max_bytes = 8;  // 4 + 5 bytes: the event is too big to hold, delivered at once
        q = std::make_unique<reseq>(rc);
        CHECK(push(*q, top, 1, "kkkkk") == keyroute::push_result::accepted);
    }
    SECTION("in order, after 2^64-2") {
        rc.max_bytes = 8;
        q = std::make_unique<reseq>(rc);
        CHECK(push(*q, top - 1, 1, "kkkkk") == keyroute::push_result::accepted);  // gives up 0..
        CHECK(push(*q, top, 1) == keyroute::push_result::accepted);
        last_given_up = top - 2;
    }
    SECTION("held, then released by the watermark") {
        rc.max_delay = ms(10);
        q = std::make_unique<reseq>(rc);
        CHECK(push(*q, top, 1) == keyroute::push_result::accepted);
        CHECK(q->r.held_events() == 1);
        q->r.advance_watermark(ms(10));
    }
    REQUIRE(q->gaps.size() == 1);
    CHECK(q->gaps[0].first_missing == first_given_up);
    CHECK(q->gaps[0].last_missing == last_given_up);
    REQUIRE(q->orders.back() == keyroute::delivery_order::in_order);
    const std::size_t before = q->delivered.size();
    CHECK(q->r.held_events() == 0);
    // Given up: late, each once.
    CHECK(push(*q, 0, 2) == keyroute::push_result::accepted);
    CHECK(push(*q, 1, 3) == keyroute::push_result::accepted);
    REQUIRE(q->delivered.size() == before + 2);
    CHECK(q->orders[before] == keyroute::delivery_order::late);
    CHECK(q->orders[before + 1] == keyroute::delivery_order::late);
    CHECK(push(*q, 0, 4) == keyroute::push_result::duplicate);
    // Delivered: duplicates, even with a new offset; nothing is held, nothing more given up.
    CHECK(push(*q, top, 5) == keyroute::push_result::duplicate);
    CHECK(q->r.held_events() == 0);
    CHECK(q->gaps.size() == 1);
    CHECK(q->delivered.size() == before + 2);
    CHECK(q->r.stats().late == 2);

    // A checkpoint carries the finished episode across a restart.
    reseq restored(rc);
    restored.r.restore(q->r.checkpoint());
    offset = 100;
    CHECK(push(restored, top, 6) == keyroute::push_result::duplicate);
    CHECK(push(restored, 0, 7) == keyroute::push_result::duplicate);
    CHECK(push(restored, 2, 8) == keyroute::push_result::accepted);
    REQUIRE(restored.orders.size() == 1);
    CHECK(restored.orders[0] == keyroute::delivery_order::late);
    CHECK(restored.r.held_events() == 0);
}

TEST_CASE("bad-input: malformed stamps are rejected with a reason", "[bad-input][stamp]") {
    keyroute::stamp_error e = keyroute::stamp_error::none;
    CHECK_FALSE(keyroute::try_decode_stamp(std::string_view("\x01\x00\x05\x00\x00\x00", 6), &e));
    CHECK(e == keyroute::stamp_error::zero_episode);
    CHECK_FALSE(keyroute::try_decode_stamp(std::string(1 << 20, '\x01'), &e));
    CHECK(e != keyroute::stamp_error::none);
    CHECK_THROWS_AS(keyroute::decode_stamp(""), std::runtime_error);
    CHECK_THROWS_WITH(keyroute::decode_stamp(std::string_view("\x02", 1)),
                      keyroute_test::contains("unknown stamp version"));
}

TEST_CASE("bad-input: resequencer sinks must exist and must not call back",
          "[bad-input][resequencer]") {
    const auto gap = [](const keyroute::gap_report&) {};
    CHECK_THROWS_WITH(keyroute::resequencer<int>(keyroute::resequencer_config{}, nullptr, gap),
                      keyroute_test::contains("on_delivery is empty"));
    std::unique_ptr<keyroute::resequencer<int>> r;
    bool threw = false;
    r = std::make_unique<keyroute::resequencer<int>>(
        keyroute::resequencer_config{},
        [&](keyroute::delivery<int>&&) {
            try {
                r->flush();
            } catch (const std::logic_error&) {
                threw = true;
            }
        },
        gap);
    (void)r->push("k", keyroute::stamp{}, 1, keyroute::origin{0, 0}, ms(0));
    CHECK(threw);
    // restore() needs a fresh resequencer.
    CHECK_THROWS_AS(r->restore(r->checkpoint()), std::invalid_argument);
}
