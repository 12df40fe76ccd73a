// Routing throughput per core of every partitioner (static and resize-friendly, 100 partitions),
// against XXH3 alone (the floor) and librdkafka's own partitioner functions, on the same uniform
// random keys (4096 per size, generated outside the timed loop): 8, 16, 36, 128 and 1024 bytes;
// 1 and 2 threads. Run: build/bench/bench_partitioners (see bench/README.md).
#include "bench_keys.hpp"

#include <keyroute/keyroute.hpp>

#include <benchmark/benchmark.h>

#ifdef KEYROUTE_BENCH_RDKAFKA
#include <librdkafka/rdkafka.h>
#endif

#include <cstdint>
#include <string>

namespace {

constexpr std::uint32_t partitions = 100;

template <class Fn>
void run(benchmark::State& state, Fn&& fn) {
    const auto& keys = keyroute_bench::keys_of_size(static_cast<std::size_t>(state.range(0)));
    std::size_t i = static_cast<std::size_t>(state.thread_index()) * 1024;
    for (auto _ : state) {
        benchmark::DoNotOptimize(fn(keys[i & keyroute_bench::key_mask]));
        ++i;
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_xxh3_alone(benchmark::State& state) {
    run(state, [](const std::string& k) { return keyroute_bench::xxh3_call(k.data(), k.size()); });
}

void BM_xxh3_inlined(benchmark::State& state) {
    run(state, [](const std::string& k) { return XXH3_64bits(k.data(), k.size()); });
}

template <class Partitioner>
void BM_route(benchmark::State& state) {
    // The count is laundered so the compiler cannot fold `% 100` into a constant division: a
    // producer learns its partition count at run time.
    std::uint32_t n = partitions;
    benchmark::DoNotOptimize(n);
    const Partitioner p(n);
    run(state, [&](const std::string& k) { return p.route(k); });
}

#ifdef KEYROUTE_BENCH_RDKAFKA
template <int32_t (*Fn)(const rd_kafka_topic_t*, const void*, size_t, int32_t, void*, void*)>
void BM_rdkafka(benchmark::State& state) {
    run(state, [](const std::string& k) {
        return Fn(nullptr, k.data(), k.size(), static_cast<int32_t>(partitions), nullptr, nullptr);
    });
}
#endif

void sizes(benchmark::internal::Benchmark* b) {
    for (const int size : {8, 16, 36, 128, 1024}) b->Arg(size);
    b->ThreadRange(1, 2)->UseRealTime();
}

}  // namespace

// Names: "<group>/<scheme>/<key bytes>/real_time/threads:<n>" (scripts/bench.sh summarizes them).
using xxh3_fold32_fastmod =
    keyroute::hash_partitioner<keyroute::xxh3,
                               keyroute::fold32_reduction<keyroute::fastmod_reduction>>;
using xxh3_modulo = keyroute::hash_partitioner<keyroute::xxh3, keyroute::modulo_reduction>;
using xxh3_fastmod = keyroute::hash_partitioner<keyroute::xxh3, keyroute::fastmod_reduction>;
using xxh3_fastrange = keyroute::hash_partitioner<keyroute::xxh3, keyroute::fastrange_reduction>;
BENCHMARK(BM_xxh3_alone)->Name("static/xxh3_alone")->Apply(sizes);
BENCHMARK(BM_xxh3_inlined)->Name("static/xxh3_inlined")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::hash_partitioner<>)
    ->Name("static/hash_partitioner")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, xxh3_fold32_fastmod)
    ->Name("static/hash_partitioner_fold32_fastmod")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, xxh3_modulo)->Name("static/hash_partitioner_modulo64")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, xxh3_fastmod)->Name("static/hash_partitioner_fastmod64")->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, xxh3_fastrange)
    ->Name("static/hash_partitioner_fastrange")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::kafka_partitioner)
    ->Name("static/kafka_partitioner")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::rdkafka_consistent_partitioner)
    ->Name("static/rdkafka_consistent_partitioner")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::rdkafka_fnv1a_partitioner)
    ->Name("static/rdkafka_fnv1a_partitioner")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::pulsar_java_string_partitioner)
    ->Name("static/pulsar_java_string_partitioner")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::pulsar_murmur3_partitioner)
    ->Name("static/pulsar_murmur3_partitioner")
    ->Apply(sizes);
// The resize-friendly partitioners at the same 100 partitions (bench_resize varies the count).
BENCHMARK_TEMPLATE(BM_route, keyroute::jump_partitioner<>)
    ->Name("resize/jump_partitioner")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::maglev_partitioner<>)
    ->Name("resize/maglev_partitioner")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::key_group_partitioner<>)
    ->Name("resize/key_group_partitioner")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_route, keyroute::rendezvous_partitioner<>)
    ->Name("resize/rendezvous_partitioner")
    ->Apply(sizes);
#ifdef KEYROUTE_BENCH_RDKAFKA
BENCHMARK_TEMPLATE(BM_rdkafka, &rd_kafka_msg_partitioner_murmur2)
    ->Name("librdkafka/murmur2")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_rdkafka, &rd_kafka_msg_partitioner_consistent)
    ->Name("librdkafka/consistent")
    ->Apply(sizes);
BENCHMARK_TEMPLATE(BM_rdkafka, &rd_kafka_msg_partitioner_fnv1a)
    ->Name("librdkafka/fnv1a")
    ->Apply(sizes);
#endif

BENCHMARK_MAIN();
