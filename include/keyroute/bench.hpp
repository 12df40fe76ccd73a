#pragma once

/// @file
/// keyroute's standard throughput benchmarks for a hash functor of your own, in one line.
///
/// Needs Google Benchmark (<benchmark/benchmark.h>, link `benchmark::benchmark`); it is the
/// only keyroute header that does. To judge a hash's distribution and avalanche without it, use
/// <keyroute/quality.hpp>.
///
///     #include <keyroute/bench.hpp>
///     struct my_hash { std::uint64_t operator()(std::string_view) const noexcept; };
///     KEYROUTE_BENCHMARK_HASH(my_hash);         // or, at run time:
///     // keyroute::bench::register_hash("my_hash", my_hash{});
///     KEYROUTE_BENCHMARK_HASH(keyroute::xxh3);  // the baseline, measured the same way
///     BENCHMARK_MAIN();
///
/// Each registration adds two benchmarks, `<name>/hash` (the functor alone) and `<name>/route`
/// (hash_partitioner<Hash> over 100 partitions), at key sizes 8, 16, 36, 128 and 1024 bytes
/// (4096 random alphanumeric keys per size, generated once, outside the timed loops), with 1
/// and 2 threads, wall-clock time, and items/s and bytes/s counters: the same shape as
/// bench/bench_partitioners.cpp, so the numbers compare with bench/README.md.

#if defined(__has_include)
#if !__has_include(<benchmark/benchmark.h>)
#error \
    "keyroute/bench.hpp needs Google Benchmark (<benchmark/benchmark.h>, target benchmark::benchmark); keyroute/quality.hpp needs nothing"
#endif
#endif

#include "hash.hpp"
#include "partitioner.hpp"

#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace keyroute::bench {

/// The key sizes of the standard benchmarks, in bytes.
inline constexpr std::array<std::size_t, 5> key_sizes = {8, 16, 36, 128, 1024};

/// 4096 random alphanumeric keys of each size in key_sizes (fixed seed), built on first use.
/// Thread-safe. @pre `size` is one of key_sizes; other sizes return the 8-byte keys.
inline auto keys_of_size(std::size_t size) -> const std::vector<std::string>& {
    static const std::array<std::vector<std::string>, key_sizes.size()> all = [] {
        std::array<std::vector<std::string>, key_sizes.size()> sets;
        static constexpr char alphabet[] =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        for (std::size_t s = 0; s < key_sizes.size(); ++s) {
            std::mt19937_64 rng(key_sizes[s]);
            for (int i = 0; i < 4096; ++i) {
                std::string key(key_sizes[s], '\0');
                for (char& c : key) c = alphabet[rng() % (sizeof alphabet - 1)];
                sets[s].push_back(std::move(key));
            }
        }
        return sets;
    }();
    for (std::size_t s = 0; s < key_sizes.size(); ++s) {
        if (key_sizes[s] == size) return all[s];
    }
    return all[0];
}

namespace detail {

template <class Fn>
void run_over_keys(benchmark::State& state, const Fn& fn) {
    const auto size = static_cast<std::size_t>(state.range(0));
    const std::vector<std::string>& keys = keys_of_size(size);
    // Threads start at different keys so they do not walk the same cache lines in step.
    std::size_t i = static_cast<std::size_t>(state.thread_index()) * 1024U;
    for (auto _ : state) {
        benchmark::DoNotOptimize(fn(keys[i & 4095U]));
        ++i;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

inline void standard_shape(benchmark::internal::Benchmark* b) {
    for (const std::size_t size : key_sizes) b->Arg(static_cast<std::int64_t>(size));
    b->ThreadRange(1, 2)->UseRealTime();
}

}  // namespace detail

/// Registers `<name>/hash` and `<name>/route` (see the file comment) with Google Benchmark.
/// Call before benchmark::RunSpecifiedBenchmarks(), e.g. from main() or a static initializer
/// (KEYROUTE_BENCHMARK_HASH). `hash` is copied; `partitions` >= 1 (checked by the partitioner).
/// @throws std::invalid_argument if `partitions` is 0.
template <class Hash>
void register_hash(const std::string& name, const Hash& hash = Hash{},
                   std::uint32_t partitions = 100) {
    static_assert((keyroute::detail::check_hash_functor<Hash>(), true));
    const hash_partitioner<Hash> partitioner(partitions, hash);
    benchmark::RegisterBenchmark((name + "/hash").c_str(), [hash](benchmark::State& state) {
        detail::run_over_keys(state, hash);
    })->Apply(detail::standard_shape);
    benchmark::RegisterBenchmark((name + "/route").c_str(), [partitioner](benchmark::State& state) {
        detail::run_over_keys(state,
                              [&](const std::string& key) { return partitioner.route(key); });
    })->Apply(detail::standard_shape);
}

}  // namespace keyroute::bench

#define KEYROUTE_DETAIL_CAT2(a, b) a##b
#define KEYROUTE_DETAIL_CAT(a, b) KEYROUTE_DETAIL_CAT2(a, b)

// A name unique in the translation unit: __COUNTER__ where the compiler has it (GCC, Clang,
// MSVC), so that two uses on the same line number of different headers do not clash.
#ifdef __COUNTER__
#define KEYROUTE_DETAIL_UNIQUE(prefix) KEYROUTE_DETAIL_CAT(prefix, __COUNTER__)
#else
#define KEYROUTE_DETAIL_UNIQUE(prefix) KEYROUTE_DETAIL_CAT(prefix, __LINE__)
#endif

/// Registers the standard benchmarks for the default-constructed hash functor type `Hash`,
/// named after it, at static initialization. Use at namespace scope, once per type.
#define KEYROUTE_BENCHMARK_HASH(Hash)                                      \
    static const bool KEYROUTE_DETAIL_UNIQUE(keyroute_bench_registered_) = \
        (::keyroute::bench::register_hash<Hash>(#Hash), true)
