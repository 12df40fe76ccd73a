// The salting router's evaluation harness: replays generated workloads with event times through
// static hashing, a port of the seed's router and keyroute's salting router, and prints per window
// max/mean partition load, event-weighted fan-out against the minimum needed (ceil(s * N) for a
// key with share s: sum over the window's keys of events x partitions used, over the sum of
// events x minimum; unsplit keys count with 1 and 1), the same over split keys only ("split
// f-o"), cold keys split or moved off the scheme's own home partition, and memory.
//
//   simulate [--windows N] [--events N] [--scheme static|seed|keyroute|all] [--hash-seed S]
//            [--threads T] [--check] [--known-miss]
//   simulate --seeds K [--threads T] [--windows N] [--events N]
//
// --threads T has T threads share keyroute's router, each routing every T-th event of a window
// (the other schemes route in order): balance with several producer threads. Which thread
// routes an event first then depends on timing, so such runs vary a little.
// --hash-seed S gives the base partitioner (the static scheme, and the router's cold keys) XXH3
// with seed S instead of 0: the same workload, another placement of its keys.
// --check exits 1 unless keyroute meets the targets from the second window on: max/mean <= 1.10,
// fan-out <= 1.5x the minimum, no cold key (< mean/10 events) split or moved, nothing salted on
// the uniform workload, and state <= 256 KiB. --known-miss keeps the last three strict, allows
// max/mean up to the cold-only bound where cold keys alone force more than 1.10 (no router
// that keeps them home can do better), and checks fan-out against a regression bound of 1.9
// instead of the target in the one window that misses it, where the hot set shifts (README,
// "The salting router"; everywhere else 1.5); with --threads T > 1 it only guards against gross
// regressions of balance (max/mean 0.4 and fan-out 0.3 more), as timing varies between runs: the
// hard rules stay strict. "bound" is the largest load that keys under a tenth of the mean put on
// one partition, over the mean: they must stay home, so no router that keeps them there gets
// max/mean below it.
// --seeds K runs keyroute over hash seeds 0 to K-1 and prints, per workload, the worst and the
// median over seeds of each seed's worst window, and on how many seeds every window met each
// target: one seed is one draw of where the keys land, and balance depends on it.
#include "seed_router.hpp"
#include "workloads.hpp"

#include <keyroute/keyroute.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

struct window_result {
    double max_over_mean = 0;
    double fanout_ratio = 0;
    // The same over the keys that were split only (0 when none was): without the unsplit keys,
    // whose fan-out is their minimum, 1.
    double split_fanout_ratio = 0;
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

// One window's events: key indexes and times, generated before any scheme routes them.
struct window_events {
    std::vector<std::size_t> keys;
    std::vector<clock_type::time_point> times;
};

// Where a scheme sent one window's events: a partition and whether it was salted, per event.
struct window_routes {
    std::vector<std::uint32_t> partition;
    std::vector<char> salted;
};

// Routes a window's events one after another: `route(index, key, time, salted&)` gives the
// partition.
template <class Route>
auto in_order(Route route) {
    return [route](const keyroute_bench::workload& wl, const window_events& ev,
                   window_routes& out) mutable {
        for (std::size_t i = 0; i < ev.keys.size(); ++i) {
            bool salted = false;
            out.partition[i] = route(ev.keys[i], wl.keys[ev.keys[i]], ev.times[i], salted);
            out.salted[i] = salted ? 1 : 0;
        }
    };
}

// Runs one scheme over one workload; `route_window(workload, events, routes&)` routes a window.
// A scheme's own home partition for a key: where it sends the key when it does not spread it
// (cold keys are judged against it).
using home_function = std::function<std::uint32_t(const std::string&)>;

// The home of the static scheme and of keyroute's router: the base partitioner.
auto base_home(const keyroute_bench::workload& wl, std::uint64_t hash_seed) -> home_function {
    return [p = base_partitioner(wl.partitions, keyroute::xxh3{hash_seed})](
               const std::string& key) { return p.route(key); };
}

template <class RouteWindow>
auto run(const keyroute_bench::workload& wl, int windows, std::uint64_t events,
         const home_function& home_of, RouteWindow&& route_window,
         const std::function<std::size_t()>& memory) -> std::vector<window_result> {
    std::vector<window_result> out;
    std::mt19937_64 rng(12345);
    window_events ev;
    window_routes routes;
    for (int w = 0; w < windows; ++w) {
        ev.keys.resize(events);
        ev.times.resize(events);
        for (std::uint64_t i = 0; i < events; ++i) {
            ev.keys[i] = wl.next(rng, w);
            ev.times[i] = clock_type::time_point(std::chrono::milliseconds(
                60000LL * (1000 + w) + static_cast<long long>(i * 60000 / events)));
        }
        routes.partition.assign(events, 0);
        routes.salted.assign(events, 0);
        route_window(wl, ev, routes);
        std::vector<std::uint64_t> load(wl.partitions, 0);
        std::unordered_map<std::size_t, key_track> keys;
        keys.reserve(1 << 20);
        std::uint64_t salted = 0;
        for (std::uint64_t i = 0; i < events; ++i) {
            const std::size_t k = ev.keys[i];
            const std::uint32_t p = routes.partition[i];
            salted += routes.salted[i] != 0 ? 1 : 0;
            ++load[p];
            auto [it, fresh] = keys.try_emplace(k);
            key_track& kt = it->second;
            if (fresh) kt.first = p;
            ++kt.events;
            if (p != home_of(wl.keys[k])) kt.moved = true;
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
        double split_weighted = 0;
        double split_minimum = 0;
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
            if (kt.split) {
                split_weighted += e * fan;
                split_minimum += e * need;
            }
            if (e < mean / 10) {
                if (kt.moved || kt.split) ++r.cold_violations;
                cold_load[home_of(wl.keys[k])] += e;
            }
        }
        r.cold_bound = *std::max_element(cold_load.begin(), cold_load.end()) / mean;
        r.fanout_ratio = weighted / minimum;
        r.split_fanout_ratio = split_minimum > 0 ? split_weighted / split_minimum : 0.0;
        r.salted = salted;
        r.memory = memory();
        out.push_back(r);
    }
    return out;
}

// Threads that live for a whole run, as a producer's do (each keeps the router lane it claims
// on its first route): for each window, thread j routes every threads-th event from the j-th,
// all of them at once, and the caller waits for them.
class window_pool {
public:
    explicit window_pool(unsigned threads) {
        for (unsigned j = 0; j < threads; ++j) m_threads.emplace_back([this, j] { work(j); });
    }
    window_pool(const window_pool&) = delete;
    auto operator=(const window_pool&) -> window_pool& = delete;
    ~window_pool() {
        {
            const std::lock_guard<std::mutex> lock(m_mutex);
            m_stop = true;
        }
        m_wake.notify_all();
        for (auto& t : m_threads) t.join();
    }
    // Runs task(j, threads) on every thread j and returns when all are done.
    void run(std::function<void(unsigned, unsigned)> task) {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_task = std::move(task);
        m_busy = static_cast<unsigned>(m_threads.size());
        ++m_generation;
        m_wake.notify_all();
        m_done.wait(lock, [this] { return m_busy == 0; });
    }

private:
    void work(unsigned j) {
        std::uint64_t seen = 0;
        for (;;) {
            std::function<void(unsigned, unsigned)> task;
            {
                std::unique_lock<std::mutex> lock(m_mutex);
                m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
                if (m_stop) return;
                seen = m_generation;
                task = m_task;
            }
            task(j, static_cast<unsigned>(m_threads.size()));
            const std::lock_guard<std::mutex> lock(m_mutex);
            if (--m_busy == 0) m_done.notify_one();
        }
    }

    std::vector<std::thread> m_threads;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_done;
    std::function<void(unsigned, unsigned)> m_task;
    std::uint64_t m_generation = 0;
    unsigned m_busy = 0;
    bool m_stop = false;
};

// keyroute's router in its default configuration. With threads > 1, that many threads share the
// router (window_pool): which thread routes an event first then depends on timing, so results
// vary a little between runs.
auto run_keyroute(const keyroute_bench::workload& wl, int windows, std::uint64_t events,
                  std::uint64_t hash_seed, unsigned threads) -> std::vector<window_result> {
    keyroute::salting_config c;
    c.partitions = wl.partitions;
    c.producer_id = 1;
    c.seed = 7;
    keyroute::salting_router<base_partitioner> router(
        c, base_partitioner(wl.partitions, keyroute::xxh3{hash_seed}));
    const auto route_one = [&](std::size_t, const std::string& key, clock_type::time_point t,
                               bool& salted) {
        const auto d = router.decide(key, t);
        salted = d.salted;
        return d.partition;
    };
    const auto memory = [&] { return router.memory_bytes(); };
    if (threads <= 1)
        return run(wl, windows, events, base_home(wl, hash_seed), in_order(route_one), memory);
    window_pool pool(threads);
    return run(
        wl, windows, events, base_home(wl, hash_seed),
        [&](const keyroute_bench::workload& w, const window_events& ev, window_routes& out) {
            pool.run([&](unsigned j, unsigned n) {
                for (std::size_t i = j; i < ev.keys.size(); i += n) {
                    const auto d = router.decide(w.keys[ev.keys[i]], ev.times[i]);
                    out.partition[i] = d.partition;
                    out.salted[i] = d.salted ? 1 : 0;
                }
            });
        },
        memory);
}

auto median(std::vector<double> v) -> double {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// --seeds: the spread of keyroute's balance over placements of the same workload.
void seed_summary(int windows, std::uint64_t events, std::uint64_t seeds, unsigned threads) {
    std::printf("keyroute over %llu hash seeds, windows 1 to %d, each seed's worst window",
                static_cast<unsigned long long>(seeds), windows - 1);
    if (threads > 1) std::printf(", %u threads sharing the router", threads);
    std::printf("\n\n");
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
            const auto rs = run_keyroute(wl, windows, events, s, threads);
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
    unsigned threads = 1;
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
        } else if (a == "--threads" && i + 1 < argc) {
            threads = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
        } else {
            std::fprintf(stderr,
                         "usage: simulate [--windows N] [--events N] [--scheme "
                         "static|seed|keyroute|all] [--hash-seed S] [--threads T] [--check] "
                         "[--known-miss]\n"
                         "       simulate --seeds K [--threads T] [--windows N] [--events N]\n");
            return 2;
        }
    }
    if (windows < 2 || events < 1000 || threads < 1 || threads > 64) {
        std::fprintf(stderr,
                     "simulate: need --windows >= 2, --events >= 1000 and --threads in [1, 64]\n");
        return 2;
    }
    if (seeds > 0) {
        seed_summary(windows, events, seeds, threads);
        return 0;
    }
    bool ok = true;
    std::printf("%-56s %-9s %6s %9s %6s %8s %9s %6s %10s %10s\n", "workload", "scheme", "window",
                "max/mean", "bound", "fan-out", "split f-o", "cold", "salted", "memory");
    for (const auto& wl : keyroute_bench::all_workloads()) {
        const bool uniform = wl.name.rfind("uniform", 0) == 0;
        const bool shifting = wl.name.rfind("shifting", 0) == 0;
        auto report = [&](const char* name, const std::vector<window_result>& rs,
                          bool is_keyroute) {
            for (std::size_t w = 0; w < rs.size(); ++w) {
                const auto& r = rs[w];
                std::printf("%-56s %-9s %6zu %9.3f %6.3f %8.2f %9.2f %6zu %10llu %10zu\n",
                            wl.name.c_str(), name, w, r.max_over_mean, r.cold_bound, r.fanout_ratio,
                            r.split_fanout_ratio, r.cold_violations,
                            static_cast<unsigned long long>(r.salted), r.memory);
                if (is_keyroute && w >= 1) {
                    // --known-miss: max/mean 1.10 unless the cold keys alone force more (the
                    // router must then reach that bound), and fan-out within 1.5 but in the
                    // window where the hot set shifts (window 2 of that workload), 1.9. With
                    // several threads, much more: which thread routes an event first varies by run,
                    // and the window where the hot set shifts reached 1.315 once, with the
                    // machine's two cores shared by more threads (README, "The salting router").
                    const double slack = known_miss && threads > 1 ? 0.4 : 0.0;
                    const double max_balance =
                        known_miss ? std::max(1.10, r.cold_bound + 0.001) + slack : 1.10;
                    const bool shift_window = shifting && w == 2;
                    const double max_fanout = (known_miss && shift_window ? 1.9 : 1.5) +
                                              (known_miss && threads > 1 ? 0.3 : 0.0);
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
                   run(wl, windows, events, base_home(wl, hash_seed),
                       in_order([&](std::size_t, const std::string& key, clock_type::time_point,
                                    bool&) { return p.route(key); }),
                       [] { return std::size_t{0}; }),
                   false);
        }
        if (scheme == "all" || scheme == "seed") {
            // The seed's absolute threshold, set to a tenth of the per-partition mean per minute.
            // Its cold keys are judged against its own home, md5(key) % n.
            keyroute_bench::seed_router seed(wl.partitions, events / wl.partitions / 10);
            report(
                "seed",
                run(
                    wl, windows, events, [&seed](const std::string& key) { return seed.home(key); },
                    in_order([&](std::size_t, const std::string& key, clock_type::time_point t,
                                 bool& salted) {
                        return seed.route(
                            key,
                            std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch())
                                .count(),
                            salted);
                    }),
                    [&] { return seed.tracker_size() * (sizeof(std::string) + 32); }),
                false);
        }
        if (scheme == "all" || scheme == "keyroute") {
            report("keyroute", run_keyroute(wl, windows, events, hash_seed, threads), true);
        }
    }
    if (check) {
        if (known_miss) {
            std::printf("%s\n", ok ? "simulate: from the second window on, no cold key moved, "
                                     "nothing salted on uniform keys, state within 256 KiB, and "
                                     "max/mean within 1.10 or the cold keys' own bound, "
                                     "fan-out within 1.5 (1.9 where the hot set shifts; with "
                                     "several threads, 0.4 and 0.3 more)"
                                   : "simulate: a hard target or a regression bound missed");
        } else {
            std::printf("%s\n", ok ? "simulate: every target met from the second window on"
                                   : "simulate: some target missed");
        }
        return ok ? 0 : 1;
    }
    return 0;
}
