// Rendezvous (HRW) hashing: id sets, weights honoured, removal moves only the removed id's keys,
// bad input, pinned values.
#include "keyroute_catch.hpp"
#include "stats.hpp"

#include <keyroute/rendezvous.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using rendezvous = keyroute::rendezvous_partitioner<>;

auto random_keys(std::size_t count, std::uint64_t seed) -> std::vector<std::string> {
    std::mt19937_64 rng(seed);
    std::vector<std::string> keys(count);
    for (auto& k : keys) k = "key-" + std::to_string(rng());
    return keys;
}

}  // namespace

TEST_CASE("rendezvous routes to one of its ids, whatever their order", "[rendezvous]") {
    const std::vector<std::uint32_t> ids = {900, 3, 0xffffffffU, 77, 0};
    const rendezvous p(ids);
    const rendezvous shuffled(std::vector<std::uint32_t>{77, 0, 900, 0xffffffffU, 3});
    CHECK(p.partitions() == 5);
    CHECK(p.ids() == std::vector<std::uint32_t>{0, 3, 77, 900, 0xffffffffU});
    CHECK_FALSE(p.weighted());
    for (const auto& k : random_keys(20000, 1)) {
        const auto part = p.route(k);
        REQUIRE(std::find(ids.begin(), ids.end(), part) != ids.end());
        REQUIRE(part == shuffled.route(k));
    }
    const rendezvous counted(12);
    for (const auto& k : random_keys(2000, 2)) REQUIRE(counted.route(k) < 12U);
}

TEST_CASE("removing an id moves exactly its keys; adding one takes keys only to it",
          "[rendezvous][resize]") {
    const rendezvous all(std::vector<std::uint32_t>{1, 2, 3, 4, 5, 6, 7, 8});
    const rendezvous without5(std::vector<std::uint32_t>{1, 2, 3, 4, 6, 7, 8});
    const rendezvous with9(std::vector<std::uint32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});
    const rendezvous wall(std::vector<std::uint32_t>{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5});
    const rendezvous wwithout2(std::vector<std::uint32_t>{1, 3, 4, 5}, {1, 3, 4, 5});
    std::size_t moved = 0;
    for (const auto& k : random_keys(50000, 3)) {
        const auto before = all.route(k);
        const auto after = without5.route(k);
        REQUIRE((before == 5 || after == before));
        REQUIRE(after != 5U);
        moved += before == 5 ? 1 : 0;
        const auto grown = with9.route(k);
        REQUIRE((grown == before || grown == 9));
        const auto wbefore = wall.route(k);
        REQUIRE((wbefore == 2 || wwithout2.route(k) == wbefore));
    }
    CHECK(moved > 0);
}

TEST_CASE("weights are honoured: 1M keys land in proportion to weight", "[rendezvous][weights]") {
    // Expected share of id i: w_i / sum(w). Pearson's chi-square against those expectations must
    // stay under the critical value at p ~ 3e-7 (3 degrees of freedom), and each share within 1%
    // (relative) of its expectation: the standard error on 1M keys is <= 0.4% relative here.
    const std::vector<std::uint32_t> ids = {10, 20, 30, 40};
    const std::vector<double> weights = {1, 2, 3, 4};
    const rendezvous p(ids, weights);
    REQUIRE(p.weighted());
    std::vector<std::uint64_t> counts(4);
    const std::uint64_t n = 1000000;
    std::string key;
    for (std::uint64_t i = 0; i < n; ++i) {
        key = "k" + std::to_string(i);
        ++counts[p.route(key) / 10 - 1];
    }
    double chi = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        const double expected = static_cast<double>(n) * weights[i] / 10.0;
        const double d = static_cast<double>(counts[i]) - expected;
        chi += d * d / expected;
        INFO("id " << ids[i] << ": " << counts[i] << " keys, expected " << expected);
        CHECK(std::abs(static_cast<double>(counts[i]) / expected - 1.0) < 0.01);
    }
    CHECK(chi < keyroute_test::chi_square_critical(3));
}

TEST_CASE("equal weights route exactly as no weights; weights scale freely",
          "[rendezvous][weights]") {
    const std::vector<std::uint32_t> ids = {1, 2, 3, 4, 5, 6};
    const rendezvous plain(ids);
    const rendezvous equal(ids, std::vector<double>(6, 2.5));
    const rendezvous w(ids, {1, 1, 1, 1, 1, 3});
    const rendezvous w_scaled(ids, {0.5, 0.5, 0.5, 0.5, 0.5, 1.5});
    CHECK_FALSE(equal.weighted());
    for (const auto& k : random_keys(20000, 4)) {
        REQUIRE(plain.route(k) == equal.route(k));
        REQUIRE(w.route(k) == w_scaled.route(k));
    }
}

TEST_CASE("only ratios of weights matter, at any magnitude", "[rendezvous][weights]") {
    // The score w / -ln(u), computed as it reads, overflows to inf near DBL_MAX (ties then go to
    // the smaller id: 0.467 of keys on the id of weight 1/3 at {DBL_MAX / 2, DBL_MAX}) and
    // underflows for subnormal weights.
    const std::vector<std::uint32_t> ids = {0, 1};
    const rendezvous unit(ids, {1, 2});
    const double max = std::numeric_limits<double>::max();
    const double tiny = std::numeric_limits<double>::denorm_min();
    const rendezvous huge(ids, {max / 2, max});
    const rendezvous subnormal(ids, {tiny, 2 * tiny});
    const rendezvous wide(ids, {std::ldexp(1.0, -900), std::ldexp(2.0, -900)});
    for (const auto& k : random_keys(20000, 11)) {
        REQUIRE(huge.route(k) == unit.route(k));
        REQUIRE(subnormal.route(k) == unit.route(k));
        REQUIRE(wide.route(k) == unit.route(k));
    }
    // Within a factor of 2^960 of each other is accepted; beyond, refused with both values.
    CHECK_NOTHROW(rendezvous(ids, {1.0, std::ldexp(1.0, 960)}));
    CHECK_NOTHROW(rendezvous(ids, {tiny, std::ldexp(1.0, -115)}));
    CHECK_NOTHROW(rendezvous(ids, {1.5, std::ldexp(1.5, 960)}));
    REQUIRE_THROWS_AS(rendezvous(ids, {1.0, std::ldexp(1.5, 960)}), std::invalid_argument);
    REQUIRE_THROWS_AS(rendezvous(ids, {tiny, std::ldexp(1.5, -114)}), std::invalid_argument);
    REQUIRE_THROWS_WITH(rendezvous(ids, {1e-300, 1e300}),
                        keyroute_test::contains("within a factor of 2^960 of each other, got "
                                                "1e+300 and 1e-300"));
}

namespace {
/// The inverse of detail::fmix64 (each xor-shift by 33 is its own inverse; the multipliers are
/// odd, inverted mod 2^64 by Newton's iteration x = x(2 - ax)).
constexpr auto inverse_mod_2_64(std::uint64_t a) -> std::uint64_t {
    std::uint64_t x = a;
    for (int i = 0; i < 6; ++i) x *= 2 - a * x;
    return x;
}
constexpr auto unmix64(std::uint64_t x) -> std::uint64_t {
    x ^= x >> 33U;
    x *= inverse_mod_2_64(0xc4ceb9fe1a85ec53ULL);
    x ^= x >> 33U;
    x *= inverse_mod_2_64(0xff51afd7ed558ccdULL);
    x ^= x >> 33U;
    return x;
}
struct fixed_hash {
    std::uint64_t value;
    auto operator()(std::string_view /*key*/) const noexcept -> std::uint64_t { return value; }
};
}  // namespace

TEST_CASE("the best possible draw wins a weighted rendezvous", "[rendezvous][weights]") {
    // A key whose s(0) is 2^64 - 1: u(0) = (2^53 - 1 + 0.5) / 2^53 rounds to 1, so a score from
    // it would be -inf, and id 0 would lose to any other id, whatever the weights.
    const std::uint64_t seed0 = keyroute::detail::fmix64(0x9e3779b97f4a7c15ULL);  // id 0's
    const fixed_hash h{unmix64(~std::uint64_t{0}) ^ seed0};
    REQUIRE(keyroute::detail::fmix64(h.value ^ seed0) == ~std::uint64_t{0});
    const keyroute::rendezvous_partitioner<fixed_hash> w({0, 1}, {2, 1}, h);
    CHECK(w.route("any") == 0);
    const keyroute::rendezvous_partitioner<fixed_hash> light({0, 1}, {1, 1e9}, h);
    CHECK(light.route("any") == 0);  // 1 / 2^-53 beats 1e9 / -ln(u(1)) unless u(1) is as close
    const keyroute::rendezvous_partitioner<fixed_hash> plain({0, 1}, {}, h);
    CHECK(plain.route("any") == 0);
}

TEST_CASE("bad id sets and weights are rejected, naming the field and value",
          "[rendezvous][config]") {
    using ids_t = std::vector<std::uint32_t>;
    REQUIRE_THROWS_AS(rendezvous(ids_t{}), std::invalid_argument);
    REQUIRE_THROWS_WITH(rendezvous(ids_t{}), keyroute_test::contains("ids must not be empty"));
    REQUIRE_THROWS_WITH(rendezvous(ids_t{4, 7, 4}),
                        keyroute_test::contains("ids must be distinct, got id 4 more than once"));
    REQUIRE_THROWS_WITH(rendezvous(ids_t{1, 2}, {1.0}),
                        keyroute_test::contains("got 1 weights for 2 ids"));
    REQUIRE_THROWS_WITH(rendezvous(ids_t{1, 2}, {1.0, 0.0}),
                        keyroute_test::contains("weights[1] = 0 (id 2)"));
    REQUIRE_THROWS_WITH(rendezvous(ids_t{1, 2}, {-3.0, 1.0}),
                        keyroute_test::contains("weights[0] = -3 (id 1)"));
    REQUIRE_THROWS_WITH(rendezvous(ids_t{1, 2}, {std::nan(""), 1.0}),
                        keyroute_test::contains("weights[0] = nan"));
    REQUIRE_THROWS_AS(rendezvous(ids_t{1, 2}, {1.0, std::numeric_limits<double>::infinity()}),
                      std::invalid_argument);
    REQUIRE_THROWS_WITH(rendezvous(0),
                        keyroute_test::contains("partitions must be in [1, 16777216], got 0"));
    REQUIRE_THROWS_AS(rendezvous((std::uint64_t{1} << 24U) + 1), std::invalid_argument);
}

TEST_CASE("rendezvous results are pinned", "[rendezvous][compat]") {
    // Values of this release; a change here moves users' keys and must not happen.
    const rendezvous twelve(12);
    CHECK(twelve.route("user_1") == 9);
    CHECK(twelve.route("tenant-42") == 2);
    CHECK(twelve.route("") == 9);
    CHECK(twelve.route("order:9") == 6);
    const rendezvous sparse(std::vector<std::uint32_t>{7, 3000000000U, 42});
    CHECK(sparse.route("user_1") == 42);
    CHECK(sparse.route("tenant-42") == 3000000000U);
    CHECK(sparse.route("") == 7);
    const rendezvous weighted(std::vector<std::uint32_t>{10, 20, 30, 40}, {1, 2, 3, 4});
    CHECK(weighted.route("user_1") == 30);
    CHECK(weighted.route("tenant-42") == 40);
    CHECK(weighted.route("") == 40);
    CHECK(weighted.route("order:9") == 30);
}
