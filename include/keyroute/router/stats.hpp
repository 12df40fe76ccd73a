#pragma once

/// @file
/// keyroute::salting_stats, a snapshot of a salting router's counters, and detail::gather_stats,
/// which reads it off the lanes and the table without stopping them: each counter is exact at
/// some instant of the call, the window's loads and key counts those of the lanes in it.

#include "key_table.hpp"
#include "lanes.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace keyroute {

/// One tracked key, as reported by salting_router::stats().
struct hot_key_info {
    std::string key;  ///< the key, or its first 24 bytes when `truncated`
    bool truncated = false;
    std::uint64_t events = 0;  ///< exact events counted in the current window since admission
    bool salted = false;       ///< spread in the current window
};

/// A snapshot of a salting_router's state.
struct salting_stats {
    std::int64_t window = 0;      ///< current window index
    std::uint64_t threshold = 0;  ///< the threshold now in force (0 before the window's first plan)
    /// The load over the mean the latest plan fills partitions to, 1.02 to 1.08: 1.05 at first,
    /// then set when a window follows another from how far tracked keys' events took a
    /// partition over it in the window before (docs/router.md, "Room")
    double level = 0;
    std::uint64_t routed = 0;              ///< events routed since construction
    std::uint64_t salted = 0;              ///< of which placed by the hot-key logic
    std::uint64_t stamped = 0;             ///< of which carried a stamp
    std::uint64_t admissions_refused = 0;  ///< keys not tracked: their probe group was full
    std::uint64_t sketch_skipped = 0;      ///< untracked events the admission sampler did not draw
    /// of `routed`, through the overflow lane (threads beyond salting_config::lanes): sent home,
    /// never spread. Above 0, give the router more lanes.
    std::uint64_t overflow = 0;
    std::vector<std::uint64_t> partition_load;  ///< events per partition, current window
    std::vector<hot_key_info> hot_keys;         ///< tracked keys, most events first
    std::size_t memory_bytes = 0;               ///< state allocated at construction
};

namespace detail {

/// Fills `s` (its window, threshold, level and memory_bytes already set) from the lanes and the
/// table, for the router's current window s.window over `partitions` partitions.
inline void gather_stats(salting_stats& s, const lane_registry& lanes, const key_table& table,
                         std::uint32_t partitions) {
    const std::uint32_t slots = table.slots();
    s.partition_load.assign(partitions, 0);
    std::vector<std::uint64_t> counts(slots, 0);
    for (std::uint32_t i = 0; i < lanes.count(); ++i) {
        const lane& ln = lanes.at(i);
        // An exclusive lane adds a window's events to `routed` when it leaves the window; the
        // overflow lane counts every event in it.
        const std::uint64_t routed =
            ln.routed.load(std::memory_order_relaxed) + (ln.shared ? 0U : ln.routed_in_window());
        s.routed += routed;
        if (ln.shared) s.overflow += routed;
        const std::uint64_t salted = ln.salted.load(std::memory_order_relaxed);
        s.salted += salted;
        s.stamped += salted + ln.stamped_home.load(std::memory_order_relaxed);
        s.admissions_refused += ln.refused.load(std::memory_order_relaxed);
        std::uint64_t untracked = ln.cold_past.load(std::memory_order_relaxed);
        for (std::uint32_t p = 0; p < partitions; ++p)
            untracked += ln.cold[p].load(std::memory_order_relaxed);
        const std::uint64_t drawn = ln.drawn.load(std::memory_order_relaxed);
        s.sketch_skipped += untracked - std::min(untracked, drawn);
        if (ln.window.load(std::memory_order_acquire) != s.window) continue;
        for (std::uint32_t p = 0; p < partitions; ++p) s.partition_load[p] += ln.load(p);
        if (ln.slots == nullptr) continue;
        for (std::uint32_t k = 0; k < slots; ++k) {
            const lane_slot& ls = ln.slots[k];
            if (ls.incarnation.load(std::memory_order_relaxed) ==
                table.at(k).incarnation.load(std::memory_order_relaxed))
                counts[k] += ls.count.load(std::memory_order_relaxed);
        }
    }
    for (std::uint32_t k = 0; k < slots; ++k) {
        if (!table.live(k) || counts[k] == 0) continue;
        hot_key_info info;
        char buf[key_table::prefix_bytes];
        const std::size_t len = table.prefix(k, buf);
        info.key.assign(buf, std::min(len, key_table::prefix_bytes));
        info.truncated = len > key_table::prefix_bytes;
        info.events = counts[k];
        info.salted = key_table::spread_in(table.at(k), s.window);
        s.hot_keys.push_back(std::move(info));
    }
    std::sort(s.hot_keys.begin(), s.hot_keys.end(),
              [](const hot_key_info& a, const hot_key_info& b) { return a.events > b.events; });
}

}  // namespace detail
}  // namespace keyroute
