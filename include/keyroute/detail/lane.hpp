#pragma once

/// @file
/// Producer lanes: per-thread slices of a router's counters, so that threads sharing one router
/// never write the same cache line on the route path.

#include <array>
#include <atomic>
#include <cstdint>

namespace keyroute::detail {

/// Adds `n` to a counter. An exclusive lane has one writer, so a relaxed load and store are
/// enough (and much cheaper than a locked read-modify-write); the shared overflow lane, used by
/// threads beyond the configured lane count, needs fetch_add.
template <class T>
inline void bump(std::atomic<T>& counter, T n, bool shared) noexcept {
    if (shared) {
        counter.fetch_add(n, std::memory_order_relaxed);
    } else {
        counter.store(static_cast<T>(counter.load(std::memory_order_relaxed) + n),
                      std::memory_order_relaxed);
    }
}

/// Adds one to a 32-bit per-window counter, stopping at 2^32 - 1: a partition that received
/// more events than that in one window reads as full, never as empty.
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

/// The per-thread cache that maps a router instance to the lane this thread claimed in it.
/// It holds no state of any router, only lane numbers. A router the cache has forgotten (the
/// thread used more routers than entries) is asked again: it finds the lane whose owner is this
/// cache's address (salting_router::my_lane), scanning its claimed lanes.
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

}  // namespace keyroute::detail
