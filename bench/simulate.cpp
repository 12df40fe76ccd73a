// The salting router's evaluation harness: replays generated workloads with event times through
// static hashing, a port of the seed's router and keyroute's salting router, and prints per window
// max/mean partition load, event-weighted fan-out against the minimum needed (ceil(s * N) for a
// key with share s), cold keys split or moved, and memory.
//
//   simulate [--windows N] [--events N] [--scheme static|seed|keyroute|all] [--hash-seed S]
//            [--check] [--known-miss]
//   simulate --seeds K [--windows N] [--events N]
//
// --hash-seed S gives the base partitioner (the static scheme, and the router's cold keys) XXH3
// with seed S instead of 0: the same workload, another placement of its keys.
// --check exits 1 unless keyroute meets the targets from the second window on: max/mean <= 1.10,
// fan-out <= 1.5x the minimum, no cold key (< mean/10 events) split or moved, nothing salted on
// the uniform workload, and state <= 256 KiB. --known-miss keeps the last three strict, allows
// max/mean up to the cold-only bound where cold keys alone force more than 1.10 (no router
// that keeps them home can do better), and checks fan-out against a regression bound of 1.9
// instead of the target: the window where the hot set shifts misses it (README, "The salting
// router").
// "bound" is the largest load that keys under a tenth of the mean put on one partition, over
// the mean: they must stay home, so no router that keeps them there gets max/mean below it.
// --seeds K runs keyroute over hash seeds 0 to K-1 and prints, per workload, the worst and the
// median over seeds of each seed's worst window, and on how many seeds every window met each
// target: one seed is one draw of where the keys land, and balance depends on it.
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
    // The largest load any partition gets from keys under a tenth of the mean alone, over the
    // mean: those keys must stay home, so no router that keeps them there can do better.
    double cold_bound = 0;
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

// The static scheme, and the router's base: XXH3 with a chosen seed (--hash-seed).
using base_partitioner = keyroute::hash_partitioner<>;

// Runs one scheme over one workload; `route(index, key, time, home&, salted&)` gives the partition.
template <class Route>
auto run(const keyroute_bench::workload& wl, int windows, std::uint64_t events,
         std::uint64_t hash_seed, Route&& route, const std::function<std::size_t()>& memory)
    -> std::vector<window_result> {
    std::vector<window_result> out;
    std::mt19937_64 rng(12345);
    const base_partitioner home_of(wl.partitions, keyroute::xxh3{hash_seed});
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
        std::vector<double> cold_load(wl.partitions, 0.0);
        for (const auto& [k, kt] : keys) {
            const double e = static_cast<double>(kt.events);
            const double need =
                std::max(1.0, std::ceil(e / static_cast<double>(events) * wl.partitions));
            const double fan =
                kt.split ? static_cast<double>(std::count(kt.used.begin(), kt.used.end(), true))
                         : 1.0;
            weighted += e * fan;
            minimum += e * need;
            if (e < mean / 10) {
                if (kt.moved || kt.split) ++r.cold_violations;
                cold_load[home_of.route(wl.keys[k])] += e;
            }
        }
        r.cold_bound = *std::max_element(cold_load.begin(), cold_load.end()) / mean;
        r.fanout_ratio = weighted / minimum;
        r.salted = salted;
        r.memory = memory();
        out.push_back(r);
    }
    return out;
}

auto run_keyroute(const keyroute_bench::workload& wl, int windows, std::uint64_t events,
                  std::uint64_t hash_seed) -> std::vector<window_result> {
    keyroute::salting_config c;
    c.partitions = wl.partitions;
    c.producer_id = 1;
    c.seed = 7;
    keyroute::salting_router<base_partitioner> router(
        c, base_partitioner(wl.partitions, keyroute::xxh3{hash_seed}));
    return run(
        wl, windows, events, hash_seed,
        [&](std::size_t, const std::string& key, clock_type::time_point t, bool& salted) {
            const auto d = router.decide(key, t);
            salted = d.salted;
            return d.partition;
        },
        [&] { return router.memory_bytes(); });
}

auto median(std::vector<double> v) -> double {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// --seeds: the spread of keyroute's balance over placements of the same workload.
void seed_summary(int windows, std::uint64_t events, std::uint64_t seeds) {
    std::printf("keyroute over %llu hash seeds, windows 1 to %d, each seed's worst window\n\n",
                static_cast<unsigned long long>(seeds), windows - 1);
    std::printf(
        "| workload | max/mean worst | max/mean median | <= 1.10 | cold-only bound worst | "
        "seeds where the bound > 1.10 | fan-out worst | fan-out median | <= 1.5 | cold moved "
        "|\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& wl : keyroute_bench::all_workloads()) {
        std::vector<double> balance;
        std::vector<double> fanout;
        std::vector<double> bound;
        std::size_t balance_ok = 0;
        std::size_t infeasible = 0;
        std::size_t fanout_ok = 0;
        std::size_t cold = 0;
        for (std::uint64_t s = 0; s < seeds; ++s) {
            const auto rs = run_keyroute(wl, windows, events, s);
            double b = 0;
            double f = 0;
            double c = 0;
            for (std::size_t w = 1; w < rs.size(); ++w) {
                b = std::max(b, rs[w].max_over_mean);
                f = std::max(f, rs[w].fanout_ratio);
                c = std::max(c, rs[w].cold_bound);
                cold += rs[w].cold_violations;
            }
            balance.push_back(b);
            fanout.push_back(f);
            bound.push_back(c);
            infeasible += c > 1.10 ? 1 : 0;
            balance_ok += b <= 1.10 ? 1 : 0;
            fanout_ok += f <= 1.5 ? 1 : 0;
        }
        std::printf("| %s | %.3f | %.3f | %zu/%llu | %.3f | %zu | %.2f | %.2f | %zu/%llu | %zu |\n",
                    wl.name.c_str(), *std::max_element(balance.begin(), balance.end()),
                    median(balance), balance_ok, static_cast<unsigned long long>(seeds),
                    *std::max_element(bound.begin(), bound.end()), infeasible,
                    *std::max_element(fanout.begin(), fanout.end()), median(fanout), fanout_ok,
                    static_cast<unsigned long long>(seeds), cold);
        std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
    int windows = 4;
    std::uint64_t events = 1000000;
    std::string scheme = "all";
    bool check = false;
    bool known_miss = false;
    std::uint64_t hash_seed = 0;
    std::uint64_t seeds = 0;
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
        } else if (a == "--hash-seed" && i + 1 < argc) {
            hash_seed = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--seeds" && i + 1 < argc) {
            seeds = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--known-miss") {
            known_miss = true;
        } else {
            std::fprintf(stderr,
                         "usage: simulate [--windows N] [--events N] [--scheme "
                         "static|seed|keyroute|all] [--hash-seed S] [--check] [--known-miss]\n"
                         "       simulate --seeds K [--windows N] [--events N]\n");
            return 2;
        }
    }
    if (windows < 2 || events < 1000) {
        std::fprintf(stderr, "simulate: need --windows >= 2 and --events >= 1000\n");
        return 2;
    }
    if (seeds > 0) {
        seed_summary(windows, events, seeds);
        return 0;
    }
    bool ok = true;
    std::printf("%-56s %-9s %6s %9s %6s %8s %6s %10s %10s\n", "workload", "scheme", "window",
                "max/mean", "bound", "fan-out", "cold", "salted", "memory");
    for (const auto& wl : keyroute_bench::all_workloads()) {
        const bool uniform = wl.name.rfind("uniform", 0) == 0;
        auto report = [&](const char* name, const std::vector<window_result>& rs,
                          bool is_keyroute) {
            for (std::size_t w = 0; w < rs.size(); ++w) {
                const auto& r = rs[w];
                std::printf("%-56s %-9s %6zu %9.3f %6.3f %8.2f %6zu %10llu %10zu\n",
                            wl.name.c_str(), name, w, r.max_over_mean, r.cold_bound, r.fanout_ratio,
                            r.cold_violations, static_cast<unsigned long long>(r.salted), r.memory);
                if (is_keyroute && w >= 1) {
                    // --known-miss: max/mean 1.10 unless the cold keys alone force more (the
                    // router must then reach that bound), and fan-out within 1.9.
                    const double max_balance =
                        known_miss ? std::max(1.10, r.cold_bound + 0.001) : 1.10;
                    const double max_fanout = known_miss ? 1.9 : 1.5;
                    const bool pass = r.max_over_mean <= max_balance &&
                                      r.fanout_ratio <= max_fanout && r.cold_violations == 0 &&
                                      (!uniform || r.salted == 0) && r.memory <= 256 * 1024;
                    if (!pass) {
                        ok = false;
                        std::printf("  ^ misses a target\n");
                    }
                }
            }
        };
        if (scheme == "all" || scheme == "static") {
            const base_partitioner p(wl.partitions, keyroute::xxh3{hash_seed});
            report("static",
                   run(
                       wl, windows, events, hash_seed,
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
                       wl, windows, events, hash_seed,
                       [&](std::size_t, const std::string& key, clock_type::time_point t, bool&) {
                           return seed.route(key, std::chrono::duration_cast<std::chrono::seconds>(
                                                      t.time_since_epoch())
                                                      .count());
                       },
                       [&] { return seed.tracker_size() * (sizeof(std::string) + 32); }),
                   false);
        }
        if (scheme == "all" || scheme == "keyroute") {
            report("keyroute", run_keyroute(wl, windows, events, hash_seed), true);
        }
    }
    if (check) {
        if (known_miss) {
            std::printf("%s\n", ok ? "simulate: from the second window on, no cold key moved, "
                                     "nothing salted on uniform keys, state within 256 KiB, and "
                                     "max/mean within 1.10 or the cold keys' own bound, "
                                     "fan-out within 1.9 (the target is 1.5)"
                                   : "simulate: a hard target or a regression bound missed");
        } else {
            std::printf("%s\n", ok ? "simulate: every target met from the second window on"
                                   : "simulate: some target missed");
        }
        return ok ? 0 : 1;
    }
    return 0;
}
