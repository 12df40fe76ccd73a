// Routing throughput of keyroute::salting_router against XXH3 alone, hash_partitioner<> and a
// literal port of the seed's router (seed_router.hpp, md5 included), on the same traces:
// Zipf 1.0 over 100k keys (64 partitions), one tenant at 90% of 1001 keys (100 partitions) and
// uniform over 100k keys (64 partitions); keys of 8, 16, 36, 128 and 1024 bytes; 1 and 2 threads
// sharing ONE router. Run: build-bench/bench/bench_router (see bench/README.md, scripts/bench.sh).
//
// Traces (2^20 events, fixed seed) and key universes are generated outside the timed loops. For
// route(key, now), event i of a thread happens at t0 + i * step, with step such that the threads
// together route 2^20 events per one-minute window: a run crosses a window every ~30 ms of
// routing, so the window rollover and hot-key admission paths are part of the measurement.
// With several threads each moves its event count up to the furthest thread's every 1024
// events, as producers reading one clock would. Without that, the threads' counts drifted apart
// and 30% to 39% of two threads' events were late ones, which take the router's out-of-line
// path (0.4% with one thread, and with the counts kept together).
// route(key) reads the clock (CLOCK_REALTIME_COARSE) instead: a run stays in one or two windows.
#include "bench_keys.hpp"
#include "seed_router.hpp"
#include "workloads.hpp"

#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::size_t trace_events = std::size_t{1} << 20U;
constexpr std::size_t trace_mask = trace_events - 1;
constexpr auto window = std::chrono::minutes(1);

enum class trace_kind { zipf, tenant90, uniform };

auto trace_name(trace_kind kind) -> const char* {
    switch (kind) {
    case trace_kind::zipf: return "zipf";
    case trace_kind::tenant90: return "tenant90";
    default: return "uniform";
    }
}

/// A key of exactly `size` bytes for a workload key name: its last `size` characters when it is
/// longer (still unique: the names differ in their digits), else a fixed filler then the name.
auto sized_key(const std::string& name, std::size_t size) -> std::string {
    if (name.size() >= size) return name.substr(name.size() - size);
    static constexpr char filler[] = "0f3a9c7e-52b1-4d8e-a6c0-";
    std::string key(size - name.size(), '\0');
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = filler[i % (sizeof filler - 1)];
    return key + name;
}

struct trace {
    trace_kind kind{};
    std::size_t size = 0;
    std::uint32_t partitions = 0;
    std::vector<std::string> universe;     // every key, `size` bytes each
    std::vector<std::string_view> events;  // trace_events keys into `universe`
};

/// The trace for (kind, size); one is kept, rebuilt when another is asked for. Called by thread
/// 0 only, before the timed loop (the loop's start barrier publishes it to the other threads).
auto get_trace(trace_kind kind, std::size_t size) -> const trace& {
    static trace cached;
    if (cached.size == size && cached.kind == kind && !cached.events.empty()) return cached;
    const keyroute_bench::workload wl =
        kind == trace_kind::zipf       ? keyroute_bench::zipf(1.0, 100000, 64)
        : kind == trace_kind::tenant90 ? keyroute_bench::tenant90()
                                       : keyroute_bench::zipf(0.0, 100000, 64);
    cached = trace{};
    cached.kind = kind;
    cached.size = size;
    cached.partitions = wl.partitions;
    cached.universe.reserve(wl.keys.size());
    for (const std::string& name : wl.keys) cached.universe.push_back(sized_key(name, size));
    cached.events.reserve(trace_events);
    std::mt19937_64 rng(20240601);
    for (std::size_t i = 0; i < trace_events; ++i) {
        cached.events.emplace_back(cached.universe[wl.next(rng, 0)]);
    }
    return cached;
}

using router_type = keyroute::salting_router<>;
using clock_type = std::chrono::system_clock;

// Shared by the threads of one run; set up and torn down by thread 0.
const trace* g_trace = nullptr;
std::unique_ptr<router_type> g_router;
std::unique_ptr<keyroute_bench::seed_router> g_seed;
std::mutex g_seed_mutex;
const clock_type::time_point t0{std::chrono::minutes(28333333)};  // a window boundary in 2023

// route(key, now)'s event clock, in events: each thread counts its own, and every sync_every
// events publishes it and moves it up to the furthest thread's, as producers sharing a clock
// would (without this, a thread the VM delayed for a while would route every later event as a
// late one, a slow path real producers only take for late events). One slot per cache line.
constexpr long sync_every = 1024;
struct alignas(64) progress_slot {
    std::atomic<long> events{0};
};
constexpr std::size_t max_synced_threads = 64;
progress_slot g_progress[max_synced_threads];

enum class scheme { xxh3_alone, hash_partitioner, route_now, route_clock, seed };

auto scheme_name(scheme s) -> const char* {
    switch (s) {
    case scheme::xxh3_alone: return "xxh3_alone";
    case scheme::hash_partitioner: return "hash_partitioner";
    case scheme::route_now: return "keyroute_route_now";
    case scheme::route_clock: return "keyroute_route_clock";
    default: return "seed_router_md5";
    }
}

template <scheme S>
void run(benchmark::State& state, trace_kind kind, std::size_t size) {
    const std::uint32_t partitions = kind == trace_kind::tenant90 ? 100 : 64;
    if (state.thread_index() == 0) {
        g_trace = &get_trace(kind, size);
        keyroute::salting_config config;
        config.partitions = partitions;
        config.window = window;
        config.producer_id = 1;
        config.seed = 7;
        if constexpr (S == scheme::route_now || S == scheme::route_clock) {
            g_router = std::make_unique<router_type>(config);
        }
        // The seed's absolute threshold: a tenth of the per-partition mean per minute.
        if constexpr (S == scheme::seed) {
            g_seed = std::make_unique<keyroute_bench::seed_router>(partitions,
                                                                   trace_events / partitions / 10);
        }
    }
    const auto threads = static_cast<long>(state.threads());
    const clock_type::duration step = std::chrono::duration_cast<clock_type::duration>(window) *
                                      threads / static_cast<long>(trace_events);
    const keyroute::hash_partitioner<> base(partitions);
    // Each thread walks the trace from its own offset. Nothing shared is read before the loop:
    // its start barrier is what publishes thread 0's setup.
    std::size_t i = static_cast<std::size_t>(state.thread_index()) * (trace_events / 2);
    long n = 0;
    const auto me = static_cast<std::size_t>(state.thread_index());
    const bool synced = threads > 1 && static_cast<std::size_t>(threads) <= max_synced_threads;
    if (synced) g_progress[me].events.store(0, std::memory_order_relaxed);
    long sync_in = sync_every;
    for (auto _ : state) {
        const std::string_view key = g_trace->events[i & trace_mask];
        if constexpr (S == scheme::xxh3_alone) {
            benchmark::DoNotOptimize(keyroute_bench::xxh3_call(key.data(), key.size()));
        } else if constexpr (S == scheme::hash_partitioner) {
            benchmark::DoNotOptimize(base.route(key));
        } else if constexpr (S == scheme::route_now) {
            benchmark::DoNotOptimize(g_router->route(key, t0 + step * n));
        } else if constexpr (S == scheme::route_clock) {
            benchmark::DoNotOptimize(g_router->route(key));
        } else {
            const auto seconds =
                std::chrono::duration_cast<std::chrono::seconds>((t0 + step * n).time_since_epoch())
                    .count();
            if (threads > 1) {
                const std::lock_guard<std::mutex> lock(g_seed_mutex);
                benchmark::DoNotOptimize(g_seed->route(key, seconds));
            } else {
                benchmark::DoNotOptimize(g_seed->route(key, seconds));
            }
        }
        ++i;
        ++n;
        if constexpr (S == scheme::route_now) {
            if (synced && --sync_in == 0) {
                sync_in = sync_every;
                g_progress[me].events.store(n, std::memory_order_relaxed);
                for (std::size_t t = 0; t < static_cast<std::size_t>(threads); ++t)
                    n = std::max(n, g_progress[t].events.load(std::memory_order_relaxed));
            }
        }
    }
    const auto iterations = static_cast<std::int64_t>(state.iterations());
    state.SetItemsProcessed(iterations);
    state.SetBytesProcessed(iterations * static_cast<std::int64_t>(size));
    if (state.thread_index() == 0) {
        if (g_router) {
            const auto st = g_router->stats();
            state.counters["salted"] =
                st.routed == 0 ? 0.0
                               : static_cast<double>(st.salted) / static_cast<double>(st.routed);
        }
        g_router.reset();
        g_seed.reset();
    }
}

template <scheme S>
void register_scheme(trace_kind kind, std::size_t size) {
    const std::string name =
        std::string(trace_name(kind)) + "/" + scheme_name(S) + "/" + std::to_string(size);
    benchmark::RegisterBenchmark(
        name.c_str(), [kind, size](benchmark::State& state) { run<S>(state, kind, size); })
        ->ThreadRange(1, 2)
        ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
    // Registered trace by trace and size by size, so each trace is generated once.
    for (const trace_kind kind : {trace_kind::zipf, trace_kind::tenant90, trace_kind::uniform}) {
        for (const std::size_t size : {std::size_t{8}, std::size_t{16}, std::size_t{36},
                                       std::size_t{128}, std::size_t{1024}}) {
            register_scheme<scheme::xxh3_alone>(kind, size);
            register_scheme<scheme::hash_partitioner>(kind, size);
            register_scheme<scheme::route_now>(kind, size);
            register_scheme<scheme::route_clock>(kind, size);
            register_scheme<scheme::seed>(kind, size);
        }
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
