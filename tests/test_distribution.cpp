// Distribution: chi-square goodness of fit of every partitioner on 1M keys of each realistic
// shape, at partition counts including non-powers of two. Critical values at p ~ 3e-7, so a
// correct hash does not trip by chance; seeds are fixed, so the run is repeatable.
#include "keyroute_catch.hpp"
#include "key_shapes.hpp"
#include "partitioner_types.hpp"
#include "stats.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace {
struct shape {
    const char* name;
    std::vector<std::string> keys;
};

auto shapes() -> const std::vector<shape>& {
    static const std::vector<shape> all = {
        {"sequential", keyroute_test::sequential_keys(1000000)},
        {"uuid", keyroute_test::uuid_keys(1000000, 1)},
        {"binary", keyroute_test::random_binary_keys(1000000, 2)},
    };
    return all;
}
}  // namespace

TEMPLATE_TEST_CASE("1M keys spread uniformly (chi-square)", "[distribution]",
                   KEYROUTE_STATIC_PARTITIONERS) {
    for (const auto& s : shapes()) {
        for (const std::uint32_t n : {7U, 12U, 64U, 100U, 1000U}) {
            // Java's String.hashCode is linear in the characters: sequential ids clump at
            // power-of-two counts. That is the scheme's own property, checked below.
            constexpr bool java =
                std::is_same_v<TestType, keyroute::pulsar_java_string_partitioner>;
            if (java && std::string(s.name) == "sequential" && (n & (n - 1)) == 0) continue;
            const TestType p(n);
            std::vector<std::uint64_t> counts(n, 0);
            for (const auto& k : s.keys) ++counts[p.route(k)];
            const double chi = keyroute_test::chi_square_uniform(counts);
            const double critical = keyroute_test::chi_square_critical(n - 1.0);
            INFO(s.name << " keys over " << n << " partitions: chi-square " << chi << ", critical "
                        << critical);
            CHECK(chi < critical);
        }
    }
}

TEST_CASE("Java's String.hashCode clumps sequential ids over a power-of-two partition count",
          "[distribution][java]") {
    // A documented weakness of Pulsar's JavaStringHash scheme (README, "Partitioners"): the same
    // keys spread well under murmur3, the Pulsar default.
    const auto& keys = shapes().front().keys;
    std::vector<std::uint64_t> java(64, 0);
    std::vector<std::uint64_t> murmur(64, 0);
    const keyroute::pulsar_java_string_partitioner pj(64);
    const keyroute::pulsar_murmur3_partitioner pm(64);
    for (const auto& k : keys) {
        ++java[pj.route(k)];
        ++murmur[pm.route(k)];
    }
    CHECK(keyroute_test::chi_square_uniform(java) > 100 * keyroute_test::chi_square_critical(63));
    CHECK(keyroute_test::chi_square_uniform(murmur) < keyroute_test::chi_square_critical(63));
}
