#pragma once

/// @file
/// detail::lane and detail::lane_registry: a lane is one routing thread's private slice of a
/// router's counters, so threads that share a router never write the same cache line on the
/// route path. The planner reads every lane; only the lane's thread writes it.
///
/// A lane counts, for the router's current window: its events, per partition its events of
/// untracked keys (`cold`) and of tracked keys (`tracked`), and per tracked slot the key's
/// events. It keeps each tracked key's run and stamp state. Threads beyond the exclusive lanes
/// share the overflow lane, which sends every event home unstamped and only counts them (with
/// read-modify-writes): a thread's events of a key then all go to one partition, in order.

#include "sequencer.hpp"
#include "window_clock.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

namespace keyroute::detail {

/// One lane's view of one tracked slot. Only the lane's thread writes it; the planner reads
/// `count`, `incarnation` and `first_seen` (a count is the slot's current key's only if they
/// match).
struct lane_slot {
    std::atomic<std::uint32_t> count{0};  // the key's events on this lane in its window (saturates)
    std::atomic<std::uint32_t> incarnation{0};  // the key_table incarnation this state is for
    std::uint32_t run_partition = 0;
    std::uint16_t run_left = 0;  // events left in the current run
    std::uint16_t cursor = 0;    // low-discrepancy position among the plan's pieces
    // The lane's events in the window when it first counted the key (the planner reads it).
    std::atomic<std::uint32_t> first_seen{0};
    // The count at which the lane next asks whether the key is proven (summing the lanes'
    // counts); at most the threshold plus one, 0 at a window's start: ask at once.
    std::uint32_t next_check = 0;
    sequencer seq;
};

/// Adds n to a counter that only this lane's thread writes (a plain load and store), or, on the
/// overflow lane, with fetch_add.
template <class T>
inline void bump(std::atomic<T>& counter, T n, bool shared) noexcept {
    if (shared) {
        counter.fetch_add(n, std::memory_order_relaxed);
    } else {
        counter.store(static_cast<T>(counter.load(std::memory_order_relaxed) + n),
                      std::memory_order_relaxed);
    }
}

/// Adds one to a 32-bit per-window counter that saturates at 2^32 - 1 (a partition that received
/// more reads as full, never empty).
inline void bump_saturating(std::atomic<std::uint32_t>& counter, bool shared) noexcept {
    std::uint32_t v = counter.load(std::memory_order_relaxed);
    if (!shared) {
        if (v != 0xffffffffU) counter.store(v + 1, std::memory_order_relaxed);
        return;
    }
    while (v != 0xffffffffU &&
           !counter.compare_exchange_weak(v, v + 1, std::memory_order_relaxed)) {
    }
}

struct alignas(64) lane {
    // Set at construction.
    bool shared = false;  // the overflow lane
    std::uint16_t index = 0;
    std::atomic<std::uint32_t>* cold = nullptr;     // [partition]
    std::atomic<std::uint32_t>* tracked = nullptr;  // [partition]
    lane_slot* slots = nullptr;                     // [slot]
    std::atomic<std::uintptr_t> owner{0};  // the claiming thread's lane cache address, 0: none
    // Written by the lane's thread, read by the planner and stats().
    alignas(64) std::atomic<std::int64_t> window{no_window};
    // Events in `window`: `events` up to the current batch of `batch` events, of which
    // `check_left` are still to come (the route path only counts the batch down).
    std::atomic<std::uint64_t> events{0};
    std::atomic<std::uint32_t> batch{0};
    std::atomic<std::uint32_t> check_left{0};  // events until the lane next asks whether to plan
    std::atomic<std::int64_t> latest{0};       // the latest event time (ticks) routed in `window`
    std::atomic<std::int64_t> prev_window{no_window};  // the window before, and its events
    std::atomic<std::uint64_t> prev_events{0};
    std::atomic<std::uint64_t> routed{0};        // events of the windows before `window`
    std::atomic<std::uint64_t> salted{0};        // each one stamped too
    std::atomic<std::uint64_t> stamped_home{0};  // stamped, not salted: an episode's last event
    std::atomic<std::uint64_t> refused{0};       // admissions refused: the key's group was full
    std::atomic<std::uint64_t> cold_past{0};     // events of untracked keys before `window`
    std::atomic<std::uint64_t> drawn{0};         // untracked events drawn for admission
    // The lane's thread only.
    window_bounds bounds;
    std::uint32_t sample_left = 1;
    std::uint64_t rng = 0;
    std::uint64_t episodes = 0;  // the last episode id this lane gave (ids step by lanes + 1)
    std::uint64_t episode_step = 1;

    /// The lane's events on partition p in `window` so far (exact on the lane's thread; a recent
    /// value on another, as stats() reads it).
    [[nodiscard]] auto load(std::uint32_t p) const noexcept -> std::uint64_t {
        return std::uint64_t{cold[p].load(std::memory_order_relaxed)} +
               tracked[p].load(std::memory_order_relaxed);
    }

    /// Events routed in `window` so far.
    [[nodiscard]] auto routed_in_window() const noexcept -> std::uint64_t {
        return events.load(std::memory_order_relaxed) + batch.load(std::memory_order_relaxed) -
               check_left.load(std::memory_order_relaxed);
    }

    /// Counts one event down; true when the batch is done (then next_batch()).
    auto count_down() noexcept -> bool {
        const std::uint32_t left = check_left.load(std::memory_order_relaxed) - 1U;
        check_left.store(left, std::memory_order_relaxed);
        return left == 0;
    }
    void next_batch(std::uint32_t size) noexcept {
        events.store(events.load(std::memory_order_relaxed) + batch.load(std::memory_order_relaxed),
                     std::memory_order_relaxed);
        batch.store(size, std::memory_order_relaxed);
        check_left.store(size, std::memory_order_relaxed);
    }

    [[nodiscard]] auto next_random() noexcept -> std::uint64_t {
        rng += 0x9e3779b97f4a7c15ULL;
        std::uint64_t z = rng;
        z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31U);
    }

    /// Starts counting window b.index (the lane's thread; on the overflow lane, the thread that
    /// moved its window: the others' counts meanwhile may be lost).
    void enter(const window_bounds& b, std::int64_t previous, std::uint32_t partitions,
               std::uint32_t slot_count) noexcept {
        prev_events.store(routed_in_window(), std::memory_order_relaxed);
        prev_window.store(previous, std::memory_order_relaxed);
        std::uint64_t untracked = 0;
        for (std::uint32_t p = 0; p < partitions; ++p) {
            untracked += cold[p].load(std::memory_order_relaxed);
            cold[p].store(0, std::memory_order_relaxed);
            tracked[p].store(0, std::memory_order_relaxed);
        }
        if (!shared) {
            for (std::uint32_t s = 0; s < slot_count; ++s) {
                slots[s].count.store(0, std::memory_order_relaxed);
                slots[s].first_seen.store(0, std::memory_order_relaxed);
                slots[s].next_check = 0;
            }
        }
        cold_past.fetch_add(untracked, std::memory_order_relaxed);
        events.store(0, std::memory_order_relaxed);
        if (!shared) {  // a batch of one: the lane asks at once (its first event of the window)
            batch.store(1, std::memory_order_relaxed);
            check_left.store(1, std::memory_order_relaxed);
        }
        latest.store(b.lo, std::memory_order_relaxed);
        if (!shared) {
            bounds = b;
            window.store(b.index, std::memory_order_release);
        }
    }
};

/// The per-thread cache that maps a router instance to the lane its thread claimed in it. It
/// holds lane numbers only; a router it forgot (a thread that uses more than four routers) finds
/// the thread's lane again by the cache's address (lane_registry::claim).
struct lane_cache {
    struct entry {
        std::uint64_t router_uid = 0;
        std::uint32_t lane = 0;
    };
    std::array<entry, 4> entries{};
    std::uint32_t next_victim = 0;
};

inline auto thread_lane_cache() noexcept -> lane_cache& {
    thread_local lane_cache cache;
    return cache;
}

/// A router's lanes: `exclusive` of them, then the overflow lane.
class lane_registry {
public:
    lane_registry(std::uint32_t exclusive, std::uint32_t partitions, std::uint32_t slot_count,
                  std::uint64_t uid, std::uint64_t seed)
        : m_exclusive(exclusive),
          m_uid(uid),
          m_lanes(std::make_unique<lane[]>(exclusive + 1U)),
          m_loads(std::make_unique<std::atomic<std::uint32_t>[]>(std::size_t{exclusive + 1U} * 2U *
                                                                 partitions)),
          m_slots(std::make_unique<lane_slot[]>(std::size_t{exclusive} * slot_count)) {
        for (std::uint32_t i = 0; i <= exclusive; ++i) {
            lane& ln = m_lanes[i];
            ln.index = static_cast<std::uint16_t>(i);
            ln.shared = i == exclusive;
            ln.cold = m_loads.get() + std::size_t{i} * 2U * partitions;
            ln.tracked = ln.cold + partitions;
            ln.slots = i < exclusive ? m_slots.get() + std::size_t{i} * slot_count : nullptr;
            ln.rng = seed ^ (0x632be59bd9b4e019ULL * (i + 1U));
            // Lane i gives the episode ids i + 1, i + 1 + (lanes + 1), ...: unique in the router.
            ln.episode_step = exclusive + 1U;
            ln.episodes = i + 1U - ln.episode_step;
        }
    }

    /// Bytes allocated for a registry of this size.
    [[nodiscard]] static constexpr auto bytes(std::uint32_t exclusive, std::uint32_t partitions,
                                              std::uint32_t slot_count) noexcept -> std::size_t {
        return std::size_t{exclusive + 1U} *
                   (sizeof(lane) +
                    2U * std::size_t{partitions} * sizeof(std::atomic<std::uint32_t>)) +
               std::size_t{exclusive} * slot_count * sizeof(lane_slot);
    }

    [[nodiscard]] auto count() const noexcept -> std::uint32_t { return m_exclusive + 1U; }
    [[nodiscard]] auto at(std::uint32_t i) noexcept -> lane& { return m_lanes[i]; }
    [[nodiscard]] auto at(std::uint32_t i) const noexcept -> const lane& { return m_lanes[i]; }

    /// The calling thread's lane: from its cache, else the one it claimed before, else a new
    /// exclusive one while any is left, else the overflow lane.
    [[nodiscard]] auto mine() noexcept -> lane& {
        lane_cache& cache = thread_lane_cache();
        for (const auto& e : cache.entries) {
            if (e.router_uid == m_uid) return m_lanes[e.lane];
        }
        return claim(cache);
    }

private:
    [[gnu::noinline]] auto claim(lane_cache& cache) noexcept -> lane& {
        const auto me = reinterpret_cast<std::uintptr_t>(&cache);
        std::uint32_t index = m_exclusive;
        const std::uint32_t claimed = std::min(m_next.load(std::memory_order_relaxed), m_exclusive);
        for (std::uint32_t i = 0; i < claimed; ++i) {
            if (m_lanes[i].owner.load(std::memory_order_relaxed) == me) {
                index = i;
                break;
            }
        }
        if (index == m_exclusive) {
            const std::uint32_t next = m_next.fetch_add(1, std::memory_order_relaxed);
            if (next < m_exclusive) {
                index = next;
                m_lanes[index].owner.store(me, std::memory_order_relaxed);
            } else {
                m_next.store(m_exclusive, std::memory_order_relaxed);
            }
        }
        auto& victim = cache.entries[cache.next_victim++ % cache.entries.size()];
        victim.router_uid = m_uid;
        victim.lane = index;
        return m_lanes[index];
    }

    std::uint32_t m_exclusive;
    std::uint64_t m_uid;
    std::unique_ptr<lane[]> m_lanes;
    std::unique_ptr<std::atomic<std::uint32_t>[]> m_loads;
    std::unique_ptr<lane_slot[]> m_slots;
    std::atomic<std::uint32_t> m_next{0};
};

}  // namespace keyroute::detail
