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
///
/// A thread keeps its lane until it ends; then the lane is given back (lane_owners), and the
/// next thread that claims a lane, or routes through the overflow lane, takes it over with its
/// counts, runs and episodes (to a consumer the lane is one producer whatever thread runs it),
/// after marking each open stretch to close at its next event (taken_over()). A lane passes by
/// a release from the ending thread and an acquire by the next, so its plain fields pass
/// between them safely.

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
    // Set once the thread's leases gave its lanes back (it is ending): `entries` as they were
    // then, so that a late event takes its own lane again rather than another one.
    bool ending = false;
    std::array<entry, 4> given_back{};
};

inline auto thread_lane_cache() noexcept -> lane_cache& {
    thread_local lane_cache cache;
    return cache;
}

/// Who holds each exclusive lane of a router: the address of the claiming thread's lane_cache,
/// `unclaimed`, or `given_back` once that thread ended. Shared with the threads that hold a
/// lane, so that a thread ending after its router was destroyed touches nothing freed.
struct lane_owners {
    static constexpr std::uintptr_t unclaimed = 0;
    static constexpr std::uintptr_t given_back = 1;  // never a lane_cache's address

    explicit lane_owners(std::uint32_t lanes)
        : owner(std::make_unique<std::atomic<std::uintptr_t>[]>(lanes)) {}

    /// The thread `me` ended: its lane `i` goes back (if `me` still holds it).
    void give_back(std::uint32_t i, std::uintptr_t me) noexcept {
        std::uintptr_t expected = me;
        if (owner[i].compare_exchange_strong(expected, given_back, std::memory_order_release,
                                             std::memory_order_relaxed)) {
            returned.fetch_add(1, std::memory_order_release);
        }
    }

    /// Takes a lane given back, among lanes [first, end), for `me`; false if there is none.
    auto take_back(std::uint32_t first, std::uint32_t end, std::uintptr_t me,
                   std::uint32_t& lane) noexcept -> bool {
        if (returned.load(std::memory_order_acquire) == 0) return false;
        for (std::uint32_t i = first; i < end; ++i) {
            std::uintptr_t expected = given_back;
            if (owner[i].compare_exchange_strong(expected, me, std::memory_order_acquire,
                                                 std::memory_order_relaxed)) {
                returned.fetch_sub(1, std::memory_order_relaxed);
                lane = i;
                return true;
            }
        }
        return false;
    }

    [[nodiscard]] auto any_returned() const noexcept -> bool {
        return returned.load(std::memory_order_relaxed) != 0;
    }

    std::unique_ptr<std::atomic<std::uintptr_t>[]> owner;  // [exclusive lane]
    std::atomic<std::uint32_t> returned{0};                // lanes given back, not taken again
};

/// The lanes a thread holds, given back when it ends. Touched only when a thread claims a lane
/// (the route path reads lane_cache, which has no destructor and so no guard on each access).
/// A thread holding lanes of more than `size` routers at once does not give the others back
/// (a later thread whose thread-local storage lands at the same address finds them).
struct lane_leases {
    struct lease {
        std::weak_ptr<lane_owners> owners;
        std::uintptr_t me = 0;
        std::uint32_t lane = 0;
    };
    static constexpr std::size_t size = 16;
    std::array<lease, size> held{};

    void add(const std::shared_ptr<lane_owners>& owners, std::uintptr_t me,
             std::uint32_t lane) noexcept {
        for (const lease& l : held) {
            const bool same_owners =
                !l.owners.owner_before(owners) && !owners.owner_before(l.owners);
            if (same_owners && l.me == me && l.lane == lane) return;  // leased already
        }
        for (lease& l : held) {
            if (l.owners.expired()) {  // free, or its router is gone
                l = lease{owners, me, lane};
                return;
            }
        }
    }

    lane_leases() = default;
    lane_leases(const lane_leases&) = delete;
    auto operator=(const lane_leases&) -> lane_leases& = delete;
    lane_leases(lane_leases&&) = delete;
    auto operator=(lane_leases&&) -> lane_leases& = delete;
    // Also stops the thread from routing on the lanes it gave back: a thread_local object made
    // before the thread's first lane may route in its destructor, after this one has run.
    ~lane_leases() {
        for (lease& l : held) {
            if (const std::shared_ptr<lane_owners> o = l.owners.lock()) o->give_back(l.lane, l.me);
        }
        lane_cache& cache = thread_lane_cache();
        cache.given_back = cache.entries;
        cache.entries = {};
        cache.ending = true;
    }
};

inline auto thread_lane_leases() noexcept -> lane_leases& {
    thread_local lane_leases leases;
    return leases;
}

/// A router's lanes: `exclusive` of them, then the overflow lane.
class lane_registry {
public:
    /// Lane i gives the episode ids b + i + 1, b + i + 1 + (exclusive + 1), ..., where b is
    /// `episode_base` (below 2^56) rounded down to a multiple of exclusive + 1: unique in the
    /// registry.
    lane_registry(std::uint32_t exclusive, std::uint32_t partitions, std::uint32_t slot_count,
                  std::uint64_t uid, std::uint64_t seed, std::uint64_t episode_base = 0)
        : m_exclusive(exclusive),
          m_uid(uid),
          m_lanes(std::make_unique<lane[]>(exclusive + 1U)),
          m_owners(std::make_shared<lane_owners>(exclusive)),
          m_slot_count(slot_count),
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
            ln.episode_step = exclusive + 1U;
            ln.episodes =
                episode_base / ln.episode_step * ln.episode_step + i + 1U - ln.episode_step;
        }
    }

    /// Bytes allocated for a registry of this size.
    [[nodiscard]] static constexpr auto bytes(std::uint32_t exclusive, std::uint32_t partitions,
                                              std::uint32_t slot_count) noexcept -> std::size_t {
        return std::size_t{exclusive + 1U} *
                   (sizeof(lane) +
                    2U * std::size_t{partitions} * sizeof(std::atomic<std::uint32_t>)) +
               std::size_t{exclusive} * slot_count * sizeof(lane_slot) + sizeof(lane_owners) +
               std::size_t{exclusive} * sizeof(std::atomic<std::uintptr_t>);
    }

    [[nodiscard]] auto count() const noexcept -> std::uint32_t { return m_exclusive + 1U; }
    [[nodiscard]] auto at(std::uint32_t i) noexcept -> lane& { return m_lanes[i]; }
    [[nodiscard]] auto at(std::uint32_t i) const noexcept -> const lane& { return m_lanes[i]; }

    /// The calling thread's lane: from its cache, else the one it claimed before, else a lane
    /// given back by a thread that ended, else a new exclusive one while any is left, else the
    /// overflow lane.
    [[nodiscard]] auto mine() noexcept -> lane& {
        lane_cache& cache = thread_lane_cache();
        for (const auto& e : cache.entries) {
            if (e.router_uid == m_uid) return m_lanes[e.lane];
        }
        return claim(cache);
    }

    /// For a thread that mine() put on the overflow lane: a lane given back since, if any
    /// (the thread keeps it), else the overflow lane. O(1) while none is given back.
    [[nodiscard]] auto leave_overflow() noexcept -> lane& {
        if (!m_owners->any_returned()) return m_lanes[m_exclusive];
        return claim(thread_lane_cache());
    }

private:
    [[gnu::noinline]] auto claim(lane_cache& cache) noexcept -> lane& {
        const auto me = reinterpret_cast<std::uintptr_t>(&cache);
        std::uint32_t index = m_exclusive;
        if (cache.ending) return reclaim_ending(cache, me);
        const std::uint32_t claimed = std::min(m_next.load(std::memory_order_relaxed), m_exclusive);
        for (std::uint32_t i = 0; i < claimed; ++i) {
            if (m_owners->owner[i].load(std::memory_order_relaxed) == me) {
                index = i;
                break;
            }
        }
        if (index == m_exclusive && m_owners->take_back(0, claimed, me, index)) taken_over(index);
        if (index == m_exclusive) {
            const std::uint32_t next = m_next.fetch_add(1, std::memory_order_relaxed);
            if (next < m_exclusive) {
                index = next;
                m_owners->owner[index].store(me, std::memory_order_relaxed);
            } else {
                m_next.store(m_exclusive, std::memory_order_relaxed);
            }
        }
        if (index < m_exclusive) thread_lane_leases().add(m_owners, me, index);
        return remember(cache, index);
    }

    // A thread whose leases gave its lanes back routes again (from a thread_local destructor):
    // it takes its own lane back if nobody took it meanwhile, else the overflow lane. It cannot
    // lease the lane again, so the lane stays with its address (it never gives it back).
    auto reclaim_ending(lane_cache& cache, std::uintptr_t me) noexcept -> lane& {
        std::uint32_t index = m_exclusive;
        for (const auto& e : cache.given_back) {
            if (e.router_uid != m_uid || e.lane >= m_exclusive) continue;
            if (m_owners->take_back(e.lane, e.lane + 1U, me, index)) taken_over(index);
        }
        return remember(cache, index);
    }

    // A thread took over lane `i` from one that ended: each of its open stretches is closed by
    // its next event (home, stamped), which then follows on home whatever the thread sent there
    // through another lane, so that the thread's own events of a key keep their order.
    void taken_over(std::uint32_t i) noexcept {
        lane_slot* slots = m_lanes[i].slots;
        for (std::uint32_t s = 0; s < m_slot_count; ++s) {
            slots[s].seq.close_next();
            if (slots[s].seq.closing()) slots[s].run_left = 0;
        }
    }

    // Notes lane `index` as the thread's in this router: in the router's entry (the overflow
    // lane's, when it leaves it), else in place of another router's.
    auto remember(lane_cache& cache, std::uint32_t index) noexcept -> lane& {
        lane_cache::entry* slot = nullptr;
        for (auto& e : cache.entries) {
            if (e.router_uid == m_uid) slot = &e;
        }
        if (slot == nullptr) slot = &cache.entries[cache.next_victim++ % cache.entries.size()];
        slot->router_uid = m_uid;
        slot->lane = index;
        return m_lanes[index];
    }

    std::uint32_t m_exclusive;
    std::uint64_t m_uid;
    std::unique_ptr<lane[]> m_lanes;
    std::shared_ptr<lane_owners> m_owners;  // shared with the threads holding a lane
    std::uint32_t m_slot_count;
    std::unique_ptr<std::atomic<std::uint32_t>[]> m_loads;
    std::unique_ptr<lane_slot[]> m_slots;
    std::atomic<std::uint32_t> m_next{0};
};

}  // namespace keyroute::detail
