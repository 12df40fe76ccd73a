// The salting router's evaluation harness (docs/evaluation.md).
//
//   simulate --family N [--first S] [--jobs J] [--check] [--check-worst X] [--verbose] [--dump]
//       N random members of the workload family (bench/family.hpp), seeds S to S + N - 1, each
//       routed by keyroute's router in its default configuration, J members at a time (default:
//       the hardware threads). For every window from each router's second on it measures: max/mean
//       partition load against the goal max(1.10, B + 0.02), where B is the largest load keys
//       under a tenth of the mean put on one partition, over the mean (those keys must stay home,
//       so no router that keeps them there can beat it), B' (B with the threshold's cost: every
//       key of a tenth of the mean or more first sends a tenth of the mean home) and B'' (the
//       same with the threshold the routers used, their safety margin included), and how many
//       windows no router that keeps cold keys home can be within the goal (B' over it) or
//       within 1.25 (B or B' over it); fan-out, the
//       event-weighted partitions used per key over the minimum ceil(share * n) (union over a
//       router's threads and over independent routers), and over the floor the goal allows (per
//       key, the fewest partitions whose room under the goal, less what keys under a tenth of the
//       mean put there, holds its events); cold keys moved (under a tenth of the mean, any event
//       off the base partitioner's partition); events salted on uniform members. Prints one line
//       per member and the distribution; --verbose adds each window, --dump (one member at a
//       time) the busiest partition's keys and the keys spread beyond their floor.
//       --check exits 1 unless: max/mean within the goal in 99% of windows and <= 1.25 in all,
//       fan-out <= 1.5 in 95% and <= 2.0 in all, no cold key moved, nothing salted on uniform.
//       --check-invariants exits 1 if a cold key moved or a uniform member was salted (the
//       guarantees; the balance and fan-out targets are reported, docs/evaluation.md).
//       --check-worst X exits 1 if max/mean passes X in a window from each router's second on.
//   simulate --named [--windows W] [--events E] [--check]
//       The six named workloads (bench/workloads.hpp) through static hashing, the problem
//       statement's naive per-minute router (seed_router.hpp) and keyroute, window by window.
//       --check exits 1 if a cold key moved, a uniform workload was salted, or max/mean passed
//       1.25 in a window from the second on.
//
// Threads are simulated deterministically: each event is routed on the lane of its producer
// thread (a test seam of the router), in real-time order, so every run prints the same.
#include "family.hpp"
#include "seed_router.hpp"
#include "workloads.hpp"

#include <keyroute/keyroute.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using clock_type = std::chrono::system_clock;
using base_partitioner = keyroute::hash_partitioner<>;

/// Routes on the lane the simulation names (router_traits' seam for deterministic threads).
struct sim_traits : keyroute::detail::router_traits {
    static constexpr bool explicit_lane = true;
    static inline thread_local std::uint32_t current = 0;
    static auto lane() noexcept -> std::uint32_t { return current; }
};
using router_type = keyroute::salting_router<base_partitioner, clock_type, sim_traits>;

bool g_dump = false;  // debugging: the first router's stats and the busiest partition per window

struct window_result {
    double max_over_mean = 0;
    double bound = 0;  // B
    // B with the cost of the threshold: keys of a tenth of the mean or more also send a tenth
    // of the mean home before they may leave (a router that keeps every key under a tenth home
    // whatever its future must count that much of every key first).
    double safe_bound = 0;
    // B with the threshold the routers used (their margin over a tenth of the mean included):
    // each key of a tenth of the mean or more sends that much home first.
    double router_bound = 0;
    double fanout = 0;
    double fanout_floor = 0;  // fan-out over the floor the goal allows (judge::finish)
    // The fewest partitions any placement within the goal uses, over ceil(share * n): the
    // floor's rooms alone, without its "at least ceil(share * n)" (a lower bound).
    double bound_fanout = 0;
    std::size_t cold_moved = 0;
    std::uint64_t salted = 0;
    std::uint64_t events = 0;
    [[nodiscard]] auto goal() const -> double { return std::max(1.10, bound + 0.02); }
    [[nodiscard]] auto safe_goal() const -> double { return std::max(1.10, safe_bound + 0.02); }
    [[nodiscard]] auto router_goal() const -> double { return std::max(1.10, router_bound + 0.02); }
};

/// Per-window judge: where every event went, by key id.
class judge {
public:
    judge(std::uint32_t partitions, std::size_t keys)
        : m_n(partitions),
          m_events(keys, 0),
          m_first(keys, 0),
          m_moved(keys, 0) {}

    void add(std::uint32_t key, std::uint32_t home, std::uint32_t partition, bool salted) {
        if (m_load.empty()) m_load.assign(m_n, 0);
        if (g_dump) {
            if (m_log.empty()) m_log.resize(m_n);
            m_log[partition].push_back(key);
        }
        ++m_load[partition];
        ++m_total;
        m_salted += salted ? 1U : 0U;
        if (m_events[key]++ == 0) {
            m_first[key] = partition;
            m_home_of[key] = home;
            m_touched.push_back(key);
        }
        if (partition != home) m_moved[key] = 1;
        if (partition != m_first[key] || m_split.count(key) != 0) {
            auto& used = m_split[key];
            if (used.empty()) {
                used.assign(m_n, false);
                used[m_first[key]] = true;
            }
            used[partition] = true;
        }
    }

    std::vector<std::vector<std::uint32_t>> m_log;  // debugging: keys per partition
    std::vector<std::uint32_t> top_keys;            // --dump: the busiest partition's keys
    /// Ends the window; `threshold` is the routers' thresholds summed (0: not known).
    auto finish(double threshold = 0) -> window_result {
        window_result r;
        r.events = m_total;
        if (m_total == 0) return r;
        const double mean = static_cast<double>(m_total) / m_n;
        r.max_over_mean =
            static_cast<double>(*std::max_element(m_load.begin(), m_load.end())) / mean;
        std::vector<double> cold(m_n, 0.0);
        std::vector<double> pinned(m_n, 0.0);
        std::vector<double> pinned_by_router(m_n, 0.0);
        for (const std::uint32_t k : m_touched) {
            const auto e = static_cast<double>(m_events[k]);
            if (e < mean / 10) cold[m_home_of[k]] += e;
            pinned[m_home_of[k]] += std::min(e, mean / 10);
            pinned_by_router[m_home_of[k]] += std::min(e, std::max(mean / 10, threshold));
        }
        r.bound = *std::max_element(cold.begin(), cold.end()) / mean;
        r.safe_bound = *std::max_element(pinned.begin(), pinned.end()) / mean;
        r.router_bound = *std::max_element(pinned_by_router.begin(), pinned_by_router.end()) / mean;
        // The floor of a key's fan-out under the goal: the fewest partitions whose room below
        // the goal, over what keys under a tenth of the mean put there, holds its events (the
        // largest rooms first, as if it had them to itself), and at least ceil(share * n).
        std::vector<double> room(m_n);
        for (std::uint32_t p = 0; p < m_n; ++p) room[p] = std::max(r.goal() * mean - cold[p], 0.0);
        std::sort(room.rbegin(), room.rend());
        std::vector<double> prefix(m_n + 1, 0.0);
        for (std::uint32_t p = 0; p < m_n; ++p) prefix[p + 1] = prefix[p] + room[p];
        const auto need_of = [&](double e) {
            return std::max(1.0, std::ceil(e / static_cast<double>(m_total) * m_n));
        };
        // Rooms alone: the fewest partitions any placement within the goal uses for a key.
        const auto rooms_of = [&](double e) {
            if (e < mean / 10) return 1.0;
            const auto at = std::lower_bound(prefix.begin() + 1, prefix.end(), e);
            return static_cast<double>(
                std::min<std::ptrdiff_t>(at - prefix.begin(), static_cast<std::ptrdiff_t>(m_n)));
        };
        const auto floor_of = [&](double e) {
            return e < mean / 10 ? 1.0 : std::max(need_of(e), rooms_of(e));
        };
        const auto fan_of = [&](std::uint32_t k) {
            const auto it = m_split.find(k);
            return it == m_split.end() ? 1.0
                                       : static_cast<double>(std::count(it->second.begin(),
                                                                        it->second.end(), true));
        };
        if (g_dump) dump(mean, need_of, floor_of, fan_of);
        double weighted = 0;
        double minimum = 0;
        double floor_sum = 0;
        double bound_sum = 0;
        for (const std::uint32_t k : m_touched) {
            const auto e = static_cast<double>(m_events[k]);
            const double fan = fan_of(k);
            weighted += e * fan;
            minimum += e * need_of(e);
            floor_sum += e * floor_of(e);
            bound_sum += e * rooms_of(e);
            if (e < mean / 10 && (m_moved[k] != 0 || fan > 1)) {
                ++r.cold_moved;
                if (g_dump) std::printf("cold key %u moved: %.0f events, mean %.0f\n", k, e, mean);
            }
            m_events[k] = 0;
            m_moved[k] = 0;
        }
        r.fanout = weighted / minimum;
        r.fanout_floor = weighted / floor_sum;
        r.bound_fanout = bound_sum / minimum;
        r.salted = m_salted;
        m_touched.clear();
        m_split.clear();
        m_home_of.clear();
        m_load.assign(m_n, 0);
        m_total = 0;
        m_salted = 0;
        return r;
    }

private:
    /// --dump: the busiest partition's keys, and the keys spread furthest beyond their floor.
    template <class Need, class Floor, class Fan>
    void dump(double mean, const Need& need_of, const Floor& floor_of, const Fan& fan_of) {
        const auto pmax = static_cast<std::uint32_t>(
            std::max_element(m_load.begin(), m_load.end()) - m_load.begin());
        std::unordered_map<std::uint32_t, std::uint64_t> per;
        for (const auto k : m_log[pmax]) ++per[k];
        std::vector<std::pair<std::uint64_t, std::uint32_t>> v;
        for (auto& [k, c] : per) v.emplace_back(c, k);
        std::sort(v.rbegin(), v.rend());
        std::printf("max partition %u: %.3f mean; keys:", pmax,
                    static_cast<double>(m_load[pmax]) / mean);
        top_keys.clear();
        for (std::size_t i = 0; i < std::min<std::size_t>(12, v.size()); ++i) {
            std::printf(" %u:%.3f%s(tot %.2f)", v[i].second, static_cast<double>(v[i].first) / mean,
                        m_home_of[v[i].second] == pmax ? "h" : "", m_events[v[i].second] / mean);
            top_keys.push_back(v[i].second);
        }
        std::printf("\n");
        for (auto& l : m_log) l.clear();
        std::vector<std::pair<double, std::uint32_t>> extra;
        double den = 0;
        for (const std::uint32_t k : m_touched) {
            const auto e = static_cast<double>(m_events[k]);
            den += e * floor_of(e);
            if (fan_of(k) > 1) extra.emplace_back(e * (fan_of(k) - floor_of(e)), k);
        }
        std::sort(extra.rbegin(), extra.rend());
        std::printf("fan-out over the floor:");
        double total = 0;
        for (const auto& x : extra) total += x.first;
        for (std::size_t i = 0; i < std::min<std::size_t>(10, extra.size()); ++i) {
            const std::uint32_t k = extra[i].second;
            const auto e = static_cast<double>(m_events[k]);
            std::printf(" %u(%.2f mean, need %.0f, floor %.0f, used %.0f: %.3f)", k, e / mean,
                        need_of(e), floor_of(e), fan_of(k), extra[i].first / den);
        }
        std::printf(" total %.3f over %zu split keys\n", total / den, extra.size());
    }

    std::uint32_t m_n;
    std::vector<std::uint32_t> m_events;
    std::vector<std::uint32_t> m_first;
    std::vector<char> m_moved;
    std::unordered_map<std::uint32_t, std::uint32_t> m_home_of;
    std::vector<std::uint32_t> m_touched;
    std::unordered_map<std::uint32_t, std::vector<bool>> m_split;
    std::vector<std::uint64_t> m_load;
    std::uint64_t m_total = 0;
    std::uint64_t m_salted = 0;
};

/// Position in [0, 1) of the i-th of `count` events of a window, under the member's rate.
auto position(const keyroute_bench::family_member& m, std::uint64_t i, std::uint64_t count)
    -> double {
    const double u = (static_cast<double>(i) + 0.5) / static_cast<double>(count);
    if (m.rate == keyroute_bench::family_member::ramp) {
        const double a = m.ramp_from;
        const double b = m.ramp_to;
        // F(x) = (a x + (b - a) x^2 / 2) / ((a + b) / 2) = u
        const double c = u * (a + b) / 2;
        if (std::abs(b - a) < 1e-9) return u;
        return (-a + std::sqrt(a * a + 2 * (b - a) * c)) / (b - a);
    }
    if (m.rate == keyroute_bench::family_member::bursts) {
        // density 1, and 3 on [burst_at, burst_at + 0.1): total 1.2
        const double lo = m.burst_at;
        const double mass_before = lo / 1.2;
        const double mass_burst = 0.3 / 1.2;
        if (u < mass_before) return u * 1.2;
        if (u < mass_before + mass_burst) return lo + (u - mass_before) * 1.2 / 3;
        return lo + 0.1 + (u - mass_before - mass_burst) * 1.2;
    }
    return u;
}

auto window_events(const keyroute_bench::family_member& m) -> std::uint64_t {
    const double scale = m.rate == keyroute_bench::family_member::ramp
                             ? (m.ramp_from + m.ramp_to) / 2
                         : m.rate == keyroute_bench::family_member::bursts ? 1.2
                                                                           : 1.0;
    return static_cast<std::uint64_t>(static_cast<double>(m.events) * scale);
}

/// Routes one family member; returns one result per window.
auto run_member(const keyroute_bench::family_member& m) -> std::vector<window_result> {
    const std::uint32_t n = m.partitions;
    const std::size_t base_keys = m.keys;
    const std::uint32_t tenant_id = static_cast<std::uint32_t>(base_keys);
    const std::uint32_t dyn_first = tenant_id + 1;
    std::vector<std::string> names(base_keys + 1 + m.dynamic.size());
    for (std::size_t i = 0; i < base_keys; ++i) names[i] = "key-" + std::to_string(i);
    names[tenant_id] = "tenant-0";
    for (std::size_t i = 0; i < m.dynamic.size(); ++i)
        names[dyn_first + i] = "dyn-" + std::to_string(i);
    std::vector<double> weights(base_keys);
    for (std::size_t k = 0; k < base_keys; ++k)
        weights[k] = m.zipf > 0 ? 1.0 / std::pow(static_cast<double>(k + 1), m.zipf) : 1.0;
    const keyroute_bench::alias_table base(weights);
    std::vector<double> router_weights = m.router_share;
    const keyroute_bench::alias_table pick_router(router_weights);

    std::vector<std::unique_ptr<router_type>> routers;
    for (std::uint32_t r = 0; r < m.routers; ++r) {
        keyroute::salting_config c;
        c.partitions = n;
        c.lanes = m.threads;
        c.producer_id = 1 + r;
        c.seed = 7 + r;
        routers.push_back(std::make_unique<router_type>(c));
    }
    const base_partitioner home(n);
    std::vector<std::uint32_t> homes(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) homes[i] = home.route(names[i]);

    std::mt19937_64 rng(m.seed ^ 0x5bd1e995ULL);
    // Each event is judged in the window its router counted it in: the window of the latest
    // event time that router has seen (a router that has not seen the new window's first time
    // yet still counts in the old one). Two judges, this window's and the last, finished a
    // window late.
    judge judges[2] = {judge(n, names.size()), judge(n, names.size())};
    std::vector<std::int64_t> router_window(m.routers, std::numeric_limits<std::int64_t>::min());
    std::vector<window_result> out;
    const std::int64_t window_ms = 60000;
    const std::int64_t start_ms = 60000LL * 28000000;  // a window boundary
    const std::uint64_t count = window_events(m);
    double last_threshold = 0;
    for (int w = 0; w < m.windows; ++w) {
        for (std::uint64_t i = 0; i < count; ++i) {
            const double x = position(m, i, count);
            const double t = w + x;  // in windows
            double dyn_total = 0;
            for (const auto& d : m.dynamic) dyn_total += d.share_at(t);
            std::uint32_t key = 0;
            const double u = static_cast<double>(rng() >> 11U) * 0x1.0p-53;
            if (u < dyn_total) {
                double acc = 0;
                for (std::size_t d = 0; d < m.dynamic.size(); ++d) {
                    acc += m.dynamic[d].share_at(t);
                    if (u < acc) {
                        key = dyn_first + static_cast<std::uint32_t>(d);
                        break;
                    }
                }
            } else if (m.tenant > 0 && (u - dyn_total) / (1 - dyn_total) < m.tenant) {
                key = tenant_id;
            } else {
                key = base(rng);
            }
            const std::uint32_t thread =
                m.threads > 1 ? static_cast<std::uint32_t>(rng() % m.threads) : 0;
            double event_t = t - m.thread_lag[thread];
            if (m.late > 0 && static_cast<double>(rng() >> 11U) * 0x1.0p-53 < m.late)
                event_t -= 2.0 * static_cast<double>(rng() >> 11U) * 0x1.0p-53;
            const std::uint32_t r = m.routers > 1 ? pick_router(rng) : 0;
            sim_traits::current = thread;
            const auto time = clock_type::time_point(std::chrono::milliseconds(
                start_ms +
                static_cast<std::int64_t>(std::floor(event_t * static_cast<double>(window_ms)))));
            const auto d = routers[r]->decide(names[key], time);
            router_window[r] =
                std::max(router_window[r], static_cast<std::int64_t>(std::floor(event_t)));
            const std::int64_t counted =
                std::clamp<std::int64_t>(router_window[r], std::max(w - 1, 0), w);
            judges[counted % 2].add(key, homes[key], d.partition, d.salted);
        }
        double threshold = 0;
        for (const auto& router : routers)
            threshold += static_cast<double>(router->stats().threshold);
        if (w > 0) out.push_back(judges[(w - 1) % 2].finish(last_threshold));
        last_threshold = threshold;
        if (g_dump && w > 0) {
            // The busiest partition's keys as the first router tracks them now.
            const auto st = routers[0]->stats();
            std::printf("  tracked by router 0:");
            for (const std::uint32_t k : judges[(w - 1) % 2].top_keys) {
                const auto it = std::find_if(
                    st.hot_keys.begin(), st.hot_keys.end(),
                    [&](const keyroute::hot_key_info& h) { return h.key == names[k]; });
                if (it == st.hot_keys.end()) {
                    std::printf(" %u:-", k);
                } else {
                    std::printf(" %u:%llu%s", k, static_cast<unsigned long long>(it->events),
                                it->salted ? "s" : "");
                }
            }
            std::printf("\n");
        }
        if (g_dump) {
            const auto st = routers[0]->stats();
            std::printf("window %d: %s; threshold %llu refused %llu tracked %zu\n", w, "stats",
                        static_cast<unsigned long long>(st.threshold),
                        static_cast<unsigned long long>(st.admissions_refused), st.hot_keys.size());
            for (std::size_t i = 0; i < std::min<std::size_t>(8, st.hot_keys.size()); ++i)
                std::printf("   %s %llu %s\n", st.hot_keys[i].key.c_str(),
                            static_cast<unsigned long long>(st.hot_keys[i].events),
                            st.hot_keys[i].salted ? "spread" : "home");
        }
    }
    out.push_back(judges[(m.windows - 1) % 2].finish(last_threshold));
    return out;
}

struct summary {
    std::size_t windows = 0;
    std::size_t balance_ok = 0;    // within the goal
    std::size_t safe_ok = 0;       // within the goal with the threshold's cost
    std::size_t router_ok = 0;     // within the goal with the routers' own threshold
    std::size_t fanout_ok = 0;     // <= 1.5
    std::size_t floor_ok = 0;      // <= 1.5 over the floor
    std::size_t floor_over = 0;    // within the goal, no placement has fan-out <= 1.5
    std::size_t floor_over_2 = 0;  // nor <= 2.0
    double worst_floor = 0;        // the largest such bound
    double worst_safe_goal = 0;    // the largest goal with the threshold's cost
    std::size_t bound_over = 0;    // B over 1.25: no router that keeps cold keys home is within it
    // B' over the goal, or over 1.25: no router that keeps every key under a tenth of the mean
    // home whatever its future is within the goal, or within 1.25
    std::size_t safe_over_goal = 0;
    std::size_t safe_over = 0;
    double worst_balance = 0;  // max/mean
    double worst_excess = -1;  // max/mean - goal
    double worst_fanout = 0;
    std::size_t cold_moved = 0;
    std::uint64_t uniform_salted = 0;
    std::vector<double> excess;
    std::vector<double> safe_excess;
    std::vector<double> fanouts;
    std::vector<double> floors;
    void add(const window_result& r, bool uniform) {
        ++windows;
        balance_ok += r.max_over_mean <= r.goal() ? 1U : 0U;
        safe_ok += r.max_over_mean <= r.safe_goal() ? 1U : 0U;
        router_ok += r.max_over_mean <= r.router_goal() ? 1U : 0U;
        fanout_ok += r.fanout <= 1.5 ? 1U : 0U;
        floor_ok += r.fanout_floor <= 1.5 ? 1U : 0U;
        floor_over += r.bound_fanout > 1.5 ? 1U : 0U;
        floor_over_2 += r.bound_fanout > 2.0 ? 1U : 0U;
        worst_safe_goal = std::max(worst_safe_goal, r.safe_goal());
        bound_over += r.bound > 1.25 ? 1U : 0U;
        safe_over_goal += r.safe_bound > r.goal() ? 1U : 0U;
        safe_over += r.safe_bound > 1.25 ? 1U : 0U;
        worst_floor = std::max(worst_floor, r.bound_fanout);
        worst_balance = std::max(worst_balance, r.max_over_mean);
        worst_excess = std::max(worst_excess, r.max_over_mean - r.goal());
        worst_fanout = std::max(worst_fanout, r.fanout);
        cold_moved += r.cold_moved;
        if (uniform) uniform_salted += r.salted;
        excess.push_back(r.max_over_mean - r.goal());
        safe_excess.push_back(r.max_over_mean - r.safe_goal());
        fanouts.push_back(r.fanout);
        floors.push_back(r.fanout_floor);
    }
};

auto quantile(std::vector<double> v, double q) -> double {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

/// Routes members first to first + count - 1 on `jobs` threads (each member on one thread, its
/// routers and judges its own), in seed order.
auto run_members(std::uint64_t first, std::uint64_t count, unsigned jobs)
    -> std::vector<std::vector<window_result>> {
    std::vector<std::vector<window_result>> out(count);
    std::atomic<std::uint64_t> next{0};
    const auto work = [&] {
        for (std::uint64_t i = next++; i < count; i = next++)
            out[i] = run_member(keyroute_bench::family(first + i));
    };
    std::vector<std::thread> threads;
    for (unsigned j = 1; j < std::max(jobs, 1U); ++j) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    return out;
}

auto run_family(std::uint64_t first, std::uint64_t count, unsigned jobs, bool check,
                bool invariants, double worst_allowed, bool verbose) -> int {
    summary all;
    std::printf(
        "| seed | member | worst window's max/mean (goal; with the threshold's cost) | worst "
        "fan-out (over the floor) | cold moved |\n|---|---|---|---|---|\n");
    const auto results = run_members(first, count, g_dump ? 1U : jobs);
    for (std::uint64_t s = first; s < first + count; ++s) {
        const auto m = keyroute_bench::family(s);
        const auto& rs = results[s - first];
        const window_result* worst = nullptr;
        double fan = 0;
        double fan_floor = 0;
        std::size_t cold = 0;
        for (std::size_t w = 1; w < rs.size(); ++w) {
            all.add(rs[w], m.uniform());
            if (worst == nullptr ||
                rs[w].max_over_mean - rs[w].goal() > worst->max_over_mean - worst->goal())
                worst = &rs[w];
            fan = std::max(fan, rs[w].fanout);
            fan_floor = std::max(fan_floor, rs[w].fanout_floor);
            cold += rs[w].cold_moved;
        }
        if (worst == nullptr) continue;
        std::printf("| %llu | %s | %.3f (%.3f; %.3f)%s | %.2f (%.2f)%s | %zu |\n",
                    static_cast<unsigned long long>(s), m.describe().c_str(), worst->max_over_mean,
                    worst->goal(), worst->safe_goal(),
                    worst->max_over_mean > worst->goal() ? " **over**" : "", fan, fan_floor,
                    fan > 1.5 ? " **over**" : "", cold);
        if (verbose) {
            for (std::size_t w = 0; w < rs.size(); ++w)
                std::printf(
                    "    window %zu: max/mean %.3f bound %.3f (%.3f; %.3f) fan-out %.3f (%.3f) "
                    "cold "
                    "%zu salted %llu events %llu\n",
                    w, rs[w].max_over_mean, rs[w].bound, rs[w].safe_bound, rs[w].router_bound,
                    rs[w].fanout, rs[w].fanout_floor, rs[w].cold_moved,
                    static_cast<unsigned long long>(rs[w].salted),
                    static_cast<unsigned long long>(rs[w].events));
        }
    }
    const double n = static_cast<double>(std::max<std::size_t>(all.windows, 1));
    std::printf("\nseeds %llu to %llu: %zu windows (each router's second window on)\n",
                static_cast<unsigned long long>(first),
                static_cast<unsigned long long>(first + count - 1), all.windows);
    std::printf(
        "max/mean - goal: median %+.3f, p99 %+.3f, worst %+.3f; within the goal in %.1f%% of "
        "windows; worst max/mean %.3f\n",
        quantile(all.excess, 0.5), quantile(all.excess, 0.99), all.worst_excess,
        100.0 * static_cast<double>(all.balance_ok) / n, all.worst_balance);
    std::printf(
        "windows where keys under a tenth of the mean put over 1.25 times it on a partition "
        "(B > 1.25: over 1.25 for any router that keeps them home): %.1f%%\n",
        100.0 * static_cast<double>(all.bound_over) / n);
    std::printf(
        "windows where the threshold's cost alone passes the goal (B' > max(1.10, B + 0.02): "
        "over the goal for any router that keeps every key under a tenth of the mean home "
        "whatever its future): %.1f%%; where it passes 1.25 (B' > 1.25): %.1f%%\n",
        100.0 * static_cast<double>(all.safe_over_goal) / n,
        100.0 * static_cast<double>(all.safe_over) / n);
    std::printf(
        "within max(1.10, B' + 0.02), B' with the threshold's cost, in %.1f%% of windows (p99 "
        "%+.3f over it); that goal is at most %.3f\n",
        100.0 * static_cast<double>(all.safe_ok) / n, quantile(all.safe_excess, 0.99),
        all.worst_safe_goal);
    std::printf(
        "within max(1.10, B'' + 0.02), B'' with the routers' own threshold, in %.1f%% of windows\n",
        100.0 * static_cast<double>(all.router_ok) / n);
    std::printf(
        "fan-out / minimum: median %.3f, p95 %.3f, worst %.3f; <= 1.5 in %.1f%% of windows\n",
        quantile(all.fanouts, 0.5), quantile(all.fanouts, 0.95), all.worst_fanout,
        100.0 * static_cast<double>(all.fanout_ok) / n);
    std::printf(
        "fan-out / the floor the goal allows: median %.3f, p95 %.3f; <= 1.5 in %.1f%% of "
        "windows\n",
        quantile(all.floors, 0.5), quantile(all.floors, 0.95),
        100.0 * static_cast<double>(all.floor_ok) / n);
    std::printf(
        "windows where no placement within the goal has fan-out <= 1.5: %.1f%% (<= 2.0: "
        "%.1f%%); the least fan-out within the goal is up to %.2f\n",
        100.0 * static_cast<double>(all.floor_over) / n,
        100.0 * static_cast<double>(all.floor_over_2) / n, all.worst_floor);
    std::printf("cold keys moved: %zu; events salted on uniform members: %llu\n", all.cold_moved,
                static_cast<unsigned long long>(all.uniform_salted));
    if (worst_allowed > 0 && all.worst_balance > worst_allowed) {
        std::printf("simulate: max/mean %.3f in a window, over %.3f\n", all.worst_balance,
                    worst_allowed);
        return 1;
    }
    if (invariants) {
        const bool ok = all.cold_moved == 0 && all.uniform_salted == 0;
        std::printf("simulate: %s\n", ok ? "no cold key moved, nothing salted on uniform members"
                                         : "a cold key moved, or a uniform member was salted");
        if (!ok) return 1;
    }
    if (!check) return 0;
    const bool ok = static_cast<double>(all.balance_ok) >= 0.99 * n && all.worst_balance <= 1.25 &&
                    static_cast<double>(all.fanout_ok) >= 0.95 * n && all.worst_fanout <= 2.0 &&
                    all.cold_moved == 0 && all.uniform_salted == 0;
    std::printf("simulate: %s\n", ok ? "every target met" : "a target missed");
    return ok ? 0 : 1;
}

// ---- the six named workloads ---------------------------------------------------------------

template <class Route>
auto run_named(const keyroute_bench::workload& wl, int windows, std::uint64_t events, Route route,
               const std::function<std::uint32_t(const std::string&)>& home_of)
    -> std::vector<window_result> {
    std::mt19937_64 rng(12345);
    judge j(wl.partitions, wl.keys.size());
    std::vector<window_result> out;
    std::vector<std::uint32_t> homes(wl.keys.size());
    for (std::size_t i = 0; i < wl.keys.size(); ++i) homes[i] = home_of(wl.keys[i]);
    for (int w = 0; w < windows; ++w) {
        for (std::uint64_t i = 0; i < events; ++i) {
            const auto k = static_cast<std::uint32_t>(wl.next(rng, w));
            const auto t = clock_type::time_point(std::chrono::milliseconds(
                60000LL * (1000 + w) + static_cast<long long>(i * 60000 / events)));
            bool salted = false;
            const std::uint32_t p = route(wl.keys[k], t, salted);
            j.add(k, homes[k], p, salted);
        }
        out.push_back(j.finish());
    }
    return out;
}

auto named(int windows, std::uint64_t events, bool check) -> int {
    bool ok = true;
    std::printf(
        "| workload | window | static | naive router | keyroute max/mean (goal; with the "
        "threshold's cost) | keyroute fan-out (least within the goal) | cold moved |\n"
        "|---|---|---|---|---|---|---|\n");
    for (const auto& wl : keyroute_bench::all_workloads()) {
        const base_partitioner p(wl.partitions);
        const auto home = [&](const std::string& k) { return p.route(k); };
        const auto st = run_named(
            wl, windows, events,
            [&](const std::string& k, clock_type::time_point, bool&) { return p.route(k); }, home);
        keyroute_bench::seed_router seed(wl.partitions, events / wl.partitions / 10);
        const auto sd = run_named(
            wl, windows, events,
            [&](const std::string& k, clock_type::time_point t, bool& salted) {
                return seed.route(
                    k,
                    std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count(),
                    salted);
            },
            [&](const std::string& k) { return seed.home(k); });
        keyroute::salting_config c;
        c.partitions = wl.partitions;
        c.producer_id = 1;
        c.seed = 7;
        c.lanes = 1;
        keyroute::salting_router<> router(c);
        const auto kr = run_named(
            wl, windows, events,
            [&](const std::string& k, clock_type::time_point t, bool& salted) {
                const auto d = router.decide(k, t);
                salted = d.salted;
                return d.partition;
            },
            home);
        const bool uniform = wl.name.rfind("uniform", 0) == 0;
        for (int w = 0; w < windows; ++w) {
            const auto& r = kr[static_cast<std::size_t>(w)];
            // --check: the guarantees, and max/mean at most 1.25 in every window from the second
            // (the goal and fan-out are reported: docs/evaluation.md says where they are missed).
            const bool pass = w == 0 || (r.max_over_mean <= 1.25 && r.cold_moved == 0 &&
                                         (!uniform || r.salted == 0));
            ok = ok && pass;
            // In brackets: the fan-out no placement within the goal goes under (judge::finish).
            std::printf("| %s | %d | %.2f | %.2f | %.3f (%.3f; %.3f) | %.2f (%.2f) | %zu |%s\n",
                        wl.name.c_str(), w, st[static_cast<std::size_t>(w)].max_over_mean,
                        sd[static_cast<std::size_t>(w)].max_over_mean, r.max_over_mean, r.goal(),
                        r.safe_goal(), r.fanout, r.bound_fanout, r.cold_moved,
                        w > 0 && (r.max_over_mean > r.goal() || r.fanout > 1.5)
                            ? " (over the target)"
                            : "");
        }
        std::fflush(stdout);
    }
    if (check)
        std::printf("simulate: %s\n", ok ? "no cold key moved, nothing salted on uniform keys, "
                                           "max/mean <= 1.25 from the second window on"
                                         : "a guarantee, or max/mean <= 1.25, missed");
    return check && !ok ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t family_count = 0;
    std::uint64_t first = 0;
    unsigned jobs = std::max(std::thread::hardware_concurrency(), 1U);
    bool check = false;
    bool invariants = false;
    double worst_allowed = 0;
    bool verbose = false;
    bool named_workloads = false;
    int windows = 4;
    std::uint64_t events = 1000000;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--family" && i + 1 < argc) {
            family_count = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--jobs" && i + 1 < argc) {
            jobs = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--first" && i + 1 < argc) {
            first = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--named") {
            named_workloads = true;
        } else if (a == "--windows" && i + 1 < argc) {
            windows = std::atoi(argv[++i]);
        } else if (a == "--events" && i + 1 < argc) {
            events = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--check") {
            check = true;
        } else if (a == "--check-worst" && i + 1 < argc) {
            worst_allowed = std::strtod(argv[++i], nullptr);
        } else if (a == "--check-invariants") {
            invariants = true;
        } else if (a == "--verbose") {
            verbose = true;
        } else if (a == "--dump") {
            g_dump = true;
        } else {
            std::fprintf(stderr,
                         "usage: simulate --family N [--first S] [--jobs J] [--check] "
                         "[--check-invariants] [--check-worst X] [--verbose] [--dump]\n"
                         "       simulate --named [--windows W] [--events E] [--check]\n");
            return 2;
        }
    }
    if (named_workloads) return named(windows, events, check);
    if (family_count > 0)
        return run_family(first, family_count, jobs, check, invariants, worst_allowed, verbose);
    std::fprintf(stderr, "simulate: give --family N or --named\n");
    return 2;
}
