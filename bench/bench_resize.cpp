// Cost per route of the resize-friendly partitioners at 8, 64, 1024 and 65536 partitions, against
// the modulo partitioners they replace, on 16-byte keys; and the one-time cost of building a
// maglev table. Run: build/bench/bench_resize (see bench/README.md and docs/resize.md).
#include "bench_keys.hpp"

#include <keyroute/jump.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/rendezvous.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

template <class Partitioner>
void run(benchmark::State& state, const Partitioner& p) {
    const auto& keys = keyroute_bench::keys_of_size(16);
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(p.route(keys[i & keyroute_bench::key_mask]));
        ++i;
    }
    state.SetItemsProcessed(state.iterations());
}

auto count(const benchmark::State& state) -> std::uint32_t {
    return static_cast<std::uint32_t>(state.range(0));
}

void BM_jump(benchmark::State& state) { run(state, keyroute::jump_partitioner<>(count(state))); }

void BM_rendezvous(benchmark::State& state) {
    run(state, keyroute::rendezvous_partitioner<>(count(state)));
}

void BM_rendezvous_weighted(benchmark::State& state) {
    std::vector<std::uint32_t> ids(count(state));
    std::vector<double> weights(ids.size());
    for (std::uint32_t i = 0; i < ids.size(); ++i) {
        ids[i] = i;
        weights[i] = 1.0 + i % 3;
    }
    run(state, keyroute::rendezvous_partitioner<>(ids, weights));
}

void BM_maglev(benchmark::State& state) {
    const std::uint32_t n = count(state);
    run(state,
        keyroute::maglev_partitioner<>(n, keyroute::maglev_partitioner<>::table_size_for(n)));
}

void BM_key_group(benchmark::State& state) {
    const std::uint32_t n = count(state);
    run(state, keyroute::key_group_partitioner<>(n, std::max<std::uint32_t>(128, n)));
}

void BM_kafka(benchmark::State& state) { run(state, keyroute::kafka_partitioner(count(state))); }

void BM_hash_modulo(benchmark::State& state) {
    run(state, keyroute::hash_partitioner<>(count(state)));
}

void BM_maglev_build(benchmark::State& state) {
    const std::uint32_t n = count(state);
    const std::uint32_t m = keyroute::maglev_partitioner<>::table_size_for(n);
    for (auto _ : state) {
        const keyroute::maglev_partitioner<> p(n, m);
        benchmark::DoNotOptimize(p.table().data());
    }
    state.counters["table_size"] = m;
}

void counts(benchmark::internal::Benchmark* b) {
    for (const int n : {8, 64, 1024, 65536}) b->Arg(n);
}

}  // namespace

BENCHMARK(BM_jump)->Apply(counts);
BENCHMARK(BM_rendezvous)->Apply(counts);
BENCHMARK(BM_rendezvous_weighted)->Apply(counts);
BENCHMARK(BM_maglev)->Apply(counts);
BENCHMARK(BM_key_group)->Apply(counts);
BENCHMARK(BM_kafka)->Apply(counts);
BENCHMARK(BM_hash_modulo)->Apply(counts);
BENCHMARK(BM_maglev_build)->Apply(counts)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
