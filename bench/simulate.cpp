// The salting router's evaluation harness: replays generated workloads with event times through
// static hashing, a port of the seed's router and keyroute's salting router, and prints per window
// max/mean partition load, event-weighted fan-out against the minimum needed (ceil(s * N) for a
// key with share s), cold keys split or moved, and memory.
//
//   simulate [--windows N] [--events N] [--scheme static|seed|keyroute|all] [--check]
//            [--known-miss]
//
// --check exits 1 unless keyroute meets the targets from the second window on: max/mean <= 1.10,
// fan-out <= 1.5x the minimum, no cold key (< mean/10 events) split or moved, nothing salted on
// the uniform workload, and state <= 256 KiB. --known-miss excuses the one documented miss
// (README): the fan-out of the window in which the shifting workload's hot set changes.
#include "seed_router.hpp"
#include "workloads.hpp"

#include <keyroute/keyroute.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct window_result {
    double max_over_mean = 0;
    double fanout_ratio = 0;
    std::size_t cold_violations = 0;
    std::uint64_t salted = 0;
    std::size_t memory = 0;
};

struct key_track {
    std::uint64_t events = 0;
    std::uint32_t first = 0;
    bool moved = false;
    bool split = false;
    std::vector<bool> used;  // partitions used, only once the key was split
};

using clock_type = std::chrono::system_clock;

// Runs one scheme over one workload; `route(index, key, time, home&, salted&)` gives the partition.
template <class Route>
auto run(const keyroute_bench::workload& wl, int windows, std::uint64_t events, Route&& route,
         const std::function<std::size_t()>& memory) -> std::vector<window_result> {
    std::vector<window_result> out;
    std::mt19937_64 rng(12345);
    const keyroute::hash_partitioner<> home_of(wl.partitions);
    for (int w = 0; w < windows; ++w) {
        std::vector<std::uint64_t> load(wl.partitions, 0);
        std::unordered_map<std::size_t, key_track> keys;
        keys.reserve(1 << 20);
        std::uint64_t salted = 0;
        for (std::uint64_t i = 0; i < events; ++i) {
            const std::size_t k = wl.next(rng, w);
            const auto t = clock_type::time_point(std::chrono::milliseconds(
                60000LL * (1000 + w) + static_cast<long long>(i * 60000 / events)));
            bool was_salted = false;
            const std::uint32_t p = route(k, wl.keys[k], t, was_salted);
            salted += was_salted ? 1 : 0;
            ++load[p];
            auto [it, fresh] = keys.try_emplace(k);
            key_track& kt = it->second;
            if (fresh) kt.first = p;
            ++kt.events;
            if (p != home_of.route(wl.keys[k])) kt.moved = true;
            if (p != kt.first || kt.split) {
                if (!kt.split) {
                    kt.split = true;
                    kt.used.assign(wl.partitions, false);
                    kt.used[kt.first] = true;
                }
                kt.used[p] = true;
            }
        }
        window_result r;
        const double mean = static_cast<double>(events) / wl.partitions;
        r.max_over_mean = static_cast<double>(*std::max_element(load.begin(), load.end())) / mean;
        double weighted = 0;
        double minimum = 0;
        for (const auto& [k, kt] : keys) {
            const double e = static_cast<double>(kt.events);
            const double need =
                std::max(1.0, std::ceil(e / static_cast<double>(events) * wl.partitions));
            const double fan =
                kt.split ? static_cast<double>(std::count(kt.used.begin(), kt.used.end(), true))
                         : 1.0;
            weighted += e * fan;
            minimum += e * need;
            if (e < mean / 10 && (kt.moved || kt.split)) ++r.cold_violations;
        }
        r.fanout_ratio = weighted / minimum;
        r.salted = salted;
        r.memory = memory();
        out.push_back(r);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    int windows = 4;
    std::uint64_t events = 1000000;
    std::string scheme = "all";
    bool check = false;
    bool known_miss = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--windows" && i + 1 < argc) {
            windows = std::atoi(argv[++i]);
        } else if (a == "--events" && i + 1 < argc) {
            events = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--scheme" && i + 1 < argc) {
            scheme = argv[++i];
        } else if (a == "--check") {
            check = true;
        } else if (a == "--known-miss") {
            known_miss = true;
        } else {
            std::fprintf(stderr,
                         "usage: simulate [--windows N] [--events N] [--scheme "
                         "static|seed|keyroute|all] [--check] [--known-miss]\n");
            return 2;
        }
    }
    if (windows < 2 || events < 1000) {
        std::fprintf(stderr, "simulate: need --windows >= 2 and --events >= 1000\n");
        return 2;
    }
    bool ok = true;
    std::printf("%-56s %-9s %6s %9s %8s %6s %10s %10s\n", "workload", "scheme", "window",
                "max/mean", "fan-out", "cold", "salted", "memory");
    for (const auto& wl : keyroute_bench::all_workloads()) {
        const bool uniform = wl.name.rfind("uniform", 0) == 0;
        const bool shifting = wl.name.rfind("shifting", 0) == 0;
        auto report = [&](const char* name, const std::vector<window_result>& rs,
                          bool is_keyroute) {
            for (std::size_t w = 0; w < rs.size(); ++w) {
                const auto& r = rs[w];
                std::printf("%-56s %-9s %6zu %9.3f %8.2f %6zu %10llu %10zu\n", wl.name.c_str(),
                            name, w, r.max_over_mean, r.fanout_ratio, r.cold_violations,
                            static_cast<unsigned long long>(r.salted), r.memory);
                if (is_keyroute && w >= 1) {
                    const bool excused = known_miss && shifting && w == 2;
                    const bool pass = r.max_over_mean <= 1.10 &&
                                      (r.fanout_ratio <= 1.5 || excused) &&
                                      r.cold_violations == 0 && (!uniform || r.salted == 0) &&
                                      r.memory <= 256 * 1024;
                    if (!pass) {
                        ok = false;
                        std::printf("  ^ misses a target\n");
                    }
                }
            }
        };
        if (scheme == "all" || scheme == "static") {
            const keyroute::hash_partitioner<> p(wl.partitions);
            report("static",
                   run(
                       wl, windows, events,
                       [&](std::size_t, const std::string& key, clock_type::time_point, bool&) {
                           return p.route(key);
                       },
                       [] { return std::size_t{0}; }),
                   false);
        }
        if (scheme == "all" || scheme == "seed") {
            // The seed's absolute threshold, set to a tenth of the per-partition mean per minute.
            keyroute_bench::seed_router seed(wl.partitions, events / wl.partitions / 10);
            report("seed",
                   run(
                       wl, windows, events,
                       [&](std::size_t, const std::string& key, clock_type::time_point t, bool&) {
                           return seed.route(key, std::chrono::duration_cast<std::chrono::seconds>(
                                                      t.time_since_epoch())
                                                      .count());
                       },
                       [&] { return seed.tracker_size() * (sizeof(std::string) + 32); }),
                   false);
        }
        if (scheme == "all" || scheme == "keyroute") {
            keyroute::salting_config c;
            c.partitions = wl.partitions;
            c.producer_id = 1;
            c.seed = 7;
            keyroute::salting_router<> router(c);
            report("keyroute",
                   run(
                       wl, windows, events,
                       [&](std::size_t, const std::string& key, clock_type::time_point t,
                           bool& salted) {
                           const auto d = router.decide(key, t);
                           salted = d.salted;
                           return d.partition;
                       },
                       [&] { return router.memory_bytes(); }),
                   true);
        }
    }
    if (check) {
        std::printf("%s\n", ok ? "simulate: every target met from the second window on"
                               : "simulate: some target missed");
        return ok ? 0 : 1;
    }
    return 0;
}
