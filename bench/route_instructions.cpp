// Replays one of bench_router's traces through salting_router<>::route(key, now), or through
// XXH3 alone, for counting instructions under callgrind, where wall-clock timing on a shared
// machine is too noisy to compare two builds (scripts/route_instructions.sh runs it twice with
// different event counts and prints the difference per event, so setup cancels out).
//
// usage: route_instructions zipf|tenant90|uniform router|lagged|xxh3 EVENTS
//
// `lagged` is `router` with every other event 30 s older, as when a producer merges two sources,
// one half a window behind: for the first half of each window, every other event is late.
//
// The traces are bench_router's (Zipf 1.0 over 100k keys on 64 partitions, one tenant at 90% of
// 1001 keys on 100, uniform over 100k keys on 64), with the workloads' own key names (6 to 13
// bytes) and the same clock: 2^20 events per one-minute window from a window boundary.
#include "workloads.hpp"

#include <keyroute/salting_router.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr,
                     "usage: route_instructions zipf|tenant90|uniform router|lagged|xxh3 EVENTS\n");
        return 2;
    }
    const std::string kind = argv[1];
    const std::string scheme = argv[2];
    const auto events = std::strtoull(argv[3], nullptr, 10);
    if ((kind != "zipf" && kind != "tenant90" && kind != "uniform") ||
        (scheme != "router" && scheme != "lagged" && scheme != "xxh3") || events == 0) {
        std::fprintf(stderr, "route_instructions: bad arguments (see usage)\n");
        return 2;
    }
    const keyroute_bench::workload wl = kind == "zipf" ? keyroute_bench::zipf(1.0, 100000, 64)
                                        : kind == "tenant90"
                                            ? keyroute_bench::tenant90()
                                            : keyroute_bench::zipf(0.0, 100000, 64);
    constexpr std::size_t trace_events = std::size_t{1} << 20U;
    std::vector<std::string_view> trace;
    trace.reserve(trace_events);
    std::mt19937_64 rng(20240601);
    for (std::size_t i = 0; i < trace_events; ++i) trace.emplace_back(wl.keys[wl.next(rng, 0)]);

    keyroute::salting_config config;
    config.partitions = wl.partitions;
    config.producer_id = 1;
    config.seed = 7;
    keyroute::salting_router<> router(config);
    using clock = std::chrono::system_clock;
    const clock::time_point t0{std::chrono::minutes(28333333)};  // a window boundary
    const auto step = std::chrono::duration_cast<clock::duration>(std::chrono::minutes(1)) /
                      static_cast<long>(trace_events);
    const bool route = scheme != "xxh3";
    const clock::duration lag =
        scheme == "lagged" ? clock::duration(std::chrono::seconds(30)) : clock::duration::zero();
    std::uint64_t sum = 0;
    for (unsigned long long i = 0; i < events; ++i) {
        const std::string_view key = trace[i & (trace_events - 1)];
        if (route) {
            sum += router.route(
                key, t0 + step * static_cast<long>(i) - (i & 1U ? lag : clock::duration::zero()));
        } else {
            sum += keyroute::xxh3{}(key);
        }
    }
    std::printf("%llu\n", static_cast<unsigned long long>(sum));  // keeps the work observable
    return 0;
}
