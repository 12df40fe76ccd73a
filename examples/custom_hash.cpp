// A hash functor of your own, judged and measured the way keyroute's own are.
//
//   custom_hash                    prints the quality report of each hash below (no dependency)
//   custom_hash --bench [flags]    built with Google Benchmark: also runs the standard throughput
//                                  benchmarks (keyroute/bench.hpp); flags go to Google Benchmark
//
// The exit code is 0 when the finalized hash passes, 1 otherwise.
#include <keyroute/partitioner.hpp>
#include <keyroute/quality.hpp>

#ifdef KEYROUTE_EXAMPLE_BENCHMARK
#include <keyroute/bench.hpp>
#endif

#include <cstdint>
#include <cstring>
#include <iostream>
#include <string_view>

/// FNV-1 64 as usually written: fast and simple, but nothing mixes the last bytes into the low
/// bits, which `h % partitions` uses. The quality report shows it (avalanche fails).
struct fnv1_64 {
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint64_t {
        std::uint64_t h = 0xcbf29ce484222325ULL;
        for (const char c : key) {
            h *= 0x100000001b3ULL;
            h ^= static_cast<unsigned char>(c);
        }
        return h;
    }
};

/// The same, followed by a 64-bit finalizer (xor-shift-multiply, the constants of splitmix64):
/// every input bit now reaches every output bit.
struct fnv1_64_mixed {
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint64_t {
        std::uint64_t h = fnv1_64{}(key);
        h ^= h >> 30U;
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 27U;
        h *= 0x94d049bb133111ebULL;
        return h ^ (h >> 31U);
    }
};

static_assert(keyroute::is_hash_functor_v<fnv1_64_mixed>);

#ifdef KEYROUTE_EXAMPLE_BENCHMARK
KEYROUTE_BENCHMARK_HASH(fnv1_64);
KEYROUTE_BENCHMARK_HASH(fnv1_64_mixed);
KEYROUTE_BENCHMARK_HASH(keyroute::xxh3);  // the baseline
#endif

int main(int argc, char** argv) {
    const bool bench = argc > 1 && std::strcmp(argv[1], "--bench") == 0;
#ifndef KEYROUTE_EXAMPLE_BENCHMARK
    if (bench) {
        std::cerr << "custom_hash: built without Google Benchmark; install it and rebuild\n";
        return 2;
    }
#endif
    if (argc > 1 && !bench) {
        std::cerr << "usage: custom_hash [--bench [Google Benchmark flags]]\n";
        return 2;
    }
    // The partitioner a user would then deploy: a hash_partitioner over their hash.
    const keyroute::hash_partitioner<fnv1_64_mixed> partitioner(12);
    std::cout << "tenant-42 -> partition " << partitioner.route("tenant-42") << " of 12\n\n";

    keyroute::hash_quality<fnv1_64>("fnv1_64 (no finalizer)").write_text(std::cout);
    const auto mixed = keyroute::hash_quality<fnv1_64_mixed>("fnv1_64 + splitmix64 finalizer");
    mixed.write_text(std::cout);
    keyroute::hash_quality<keyroute::xxh3>("keyroute::xxh3 (reference)").write_text(std::cout);

#ifdef KEYROUTE_EXAMPLE_BENCHMARK
    if (bench) {
        int bench_argc = argc - 1;
        argv[1] = argv[0];
        benchmark::Initialize(&bench_argc, argv + 1);
        benchmark::RunSpecifiedBenchmarks();
        benchmark::Shutdown();
    }
#endif
    return mixed.passed() ? 0 : 1;
}
