// Prints the "what moves when partitions change" tables of docs/resize.md: for each scheme, the
// share of 1M generated keys that changes partition for n -> n+1, n -> 2n and removing one
// partition, next to the theoretical share; and Maglev's excess over the minimum by table size.
// Usage: migration_table [n] [keys]   (defaults: 12 and 1000000)
#include <keyroute/jump.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/migration.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/rendezvous.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace {

keyroute::generated_keys sample;

auto modulo_theory(std::uint64_t from, std::uint64_t to) -> double {
    return 1.0 - static_cast<double>(std::min(from, to)) / static_cast<double>(std::lcm(from, to));
}

auto key_group_theory(std::uint64_t from, std::uint64_t to, std::uint64_t groups) -> double {
    std::uint64_t moved = 0;
    for (std::uint64_t g = 0; g < groups; ++g)
        moved += g * from / groups != g * to / groups ? 1 : 0;
    return static_cast<double>(moved) / static_cast<double>(groups);
}

auto ids_without(std::uint32_t count, std::uint32_t removed) -> std::vector<std::uint32_t> {
    std::vector<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < count; ++i) {
        if (i != removed) ids.push_back(i);
    }
    return ids;
}

template <class Old, class New>
void row(const char* scheme, const std::string& change, double theory, const Old& before,
         const New& after) {
    const double measured = keyroute::compare_partitioners(before, after, sample).moved_key_share();
    std::printf("| %s | %s | %.2f%% | %.2f%% | %.3f |\n", scheme, change.c_str(), 100 * theory,
                100 * measured, measured / theory);
}

}  // namespace

int main(int argc, char** argv) {
    const auto n = static_cast<std::uint32_t>(argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 12);
    sample.count = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
    if (n < 2 || n > 64) {
        std::fprintf(stderr, "usage: migration_table [n in 2..64] [keys]\n");
        return 2;
    }
    const std::string grow = std::to_string(n) + " -> " + std::to_string(n + 1);
    const std::string twice = std::to_string(n) + " -> " + std::to_string(2 * n);
    const std::string shrink = std::to_string(n) + " -> " + std::to_string(n - 1);
    const std::string remove_mid =
        "remove id " + std::to_string(n / 2) + " of " + std::to_string(n);
    const double n1 = 1.0 / (n + 1);
    const double n0 = 1.0 / n;

    std::printf("%llu generated keys of 16 bytes, share of keys that change partition\n\n",
                static_cast<unsigned long long>(sample.count));
    std::printf(
        "| scheme | change | theory | measured | measured / theory |\n|---|---|---|---|---|\n");
    using jump = keyroute::jump_partitioner<>;
    row("jump", grow, n1, jump(n), jump(n + 1));
    row("jump", twice, 0.5, jump(n), jump(2 * n));
    row("jump", shrink + " (remove last)", n0, jump(n), jump(n - 1));
    using rendezvous = keyroute::rendezvous_partitioner<>;
    row("rendezvous", grow, n1, rendezvous(n), rendezvous(n + 1));
    row("rendezvous", twice, 0.5, rendezvous(n), rendezvous(2 * n));
    row("rendezvous", remove_mid, n0, rendezvous(n), rendezvous(ids_without(n, n / 2)));
    using maglev = keyroute::maglev_partitioner<>;
    row("maglev (M = 65537)", grow, n1, maglev(n), maglev(n + 1));
    row("maglev (M = 65537)", twice, 0.5, maglev(n), maglev(2 * n));
    row("maglev (M = 65537)", remove_mid, n0, maglev(n), maglev(ids_without(n, n / 2)));
    using key_group = keyroute::key_group_partitioner<>;
    row("key_group (G = 128)", grow, key_group_theory(n, n + 1, 128), key_group(n),
        key_group(n + 1));
    row("key_group (G = 128)", twice, key_group_theory(n, 2 * n, 128), key_group(n),
        key_group(2 * n));
    row("key_group (G = 128)", shrink, key_group_theory(n, n - 1, 128), key_group(n),
        key_group(n - 1));
    using modulo = keyroute::hash_partitioner<>;
    row("hash_partitioner (fold32(xxh3) % n)", grow, modulo_theory(n, n + 1), modulo(n),
        modulo(n + 1));
    row("hash_partitioner (fold32(xxh3) % n)", twice, modulo_theory(n, 2 * n), modulo(n),
        modulo(2 * n));
    row("hash_partitioner (fold32(xxh3) % n)", shrink, modulo_theory(n, n - 1), modulo(n),
        modulo(n - 1));
    using kafka = keyroute::kafka_partitioner;
    row("kafka_partitioner", grow, modulo_theory(n, n + 1), kafka(n), kafka(n + 1));
    row("kafka_partitioner", twice, modulo_theory(n, 2 * n), kafka(n), kafka(2 * n));
    row("kafka_partitioner", shrink, modulo_theory(n, n - 1), kafka(n), kafka(n - 1));

    std::printf("\nMaglev's excess over the minimum when one id is removed, by table size M\n\n");
    std::printf("| n | M | theory | measured | measured / theory |\n|---|---|---|---|---|\n");
    // The default table; table_size_for(n), the smallest prime >= 100 n; and larger primes.
    const std::pair<std::uint32_t, std::uint32_t> cases[] = {
        {10, 65537}, {100, 65537}, {100, 655373}, {100, 6553621}, {1000, 100003}, {1000, 1000003}};
    for (const auto& [size, m] : cases) {
        const maglev before(size, m);
        const maglev after(ids_without(size, size / 2), m);
        const double measured =
            keyroute::compare_partitioners(before, after, sample).moved_key_share();
        std::printf("| %u | %u | %.3f%% | %.3f%% | %.2f |\n", size, m, 100.0 / size, 100 * measured,
                    measured * size);
    }
    return 0;
}
