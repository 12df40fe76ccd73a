#pragma once

/// @file
/// detail::router_sizing: the bytes of state a salting router holds, all of it allocated at
/// construction, and the automatic choices of max_hot_keys and lanes that keep it within a
/// budget. `front` is the size of the router object itself.

#include "availability.hpp"
#include "config.hpp"
#include "key_table.hpp"
#include "lanes.hpp"
#include "plan.hpp"
#include "planner.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace keyroute::detail {

template <std::size_t front>
struct router_sizing {
    /// Automatic lanes and tracked keys keep the state within this.
    static constexpr std::size_t budget = std::size_t{256} * 1024U;

    /// Slots of the table for max_hot_keys keys (0: automatic): the next power of two of at
    /// least twice as many, at least 16.
    [[nodiscard]] static auto slot_count(std::uint32_t n, std::uint32_t max_hot_keys) noexcept
        -> std::uint32_t {
        const std::uint32_t keys = max_hot_keys != 0 ? max_hot_keys : automatic_hot_keys(n);
        std::uint32_t slots = 16;
        while (slots < 2U * keys) slots *= 2U;
        return slots;
    }

    /// State of a router with these sizes; SIZE_MAX for sizes a router refuses.
    [[nodiscard]] static auto state_bytes(std::uint64_t partitions, std::uint32_t max_hot_keys,
                                          std::uint32_t lanes) noexcept -> std::size_t {
        if (partitions == 0 || partitions > router_limits::partitions ||
            max_hot_keys > router_limits::tracked_keys || lanes > router_limits::lanes)
            return std::numeric_limits<std::size_t>::max();
        const auto n = static_cast<std::uint32_t>(partitions);
        const std::uint32_t slots = slot_count(n, max_hot_keys);
        return front + key_table::bytes(slots) + lane_registry::bytes(lanes, n, slots) +
               plan_store::bytes(slots, planner::plan_capacity(n, slots)) +
               planner::bytes(n, slots) + availability::bytes(n);
    }

    /// Lanes for threads that route, not for cores (producers often run more threads than the
    /// machine has cores, and a thread beyond the lanes sends every event home): 8, or the
    /// hardware threads if more, at most 16 (each lane is summed when a key is proven); fewer only
    /// to keep the state within the budget (max_hot_keys 0: as automatic_hot_keys() sizes it for 2
    /// lanes), and at least 2.
    static constexpr std::uint32_t default_lanes = 8;
    static constexpr std::uint32_t max_automatic_lanes = 16;
    [[nodiscard]] static auto automatic_lanes(std::uint64_t partitions, std::uint32_t max_hot_keys,
                                              unsigned hardware_threads) noexcept -> std::uint32_t {
        if (max_hot_keys == 0) max_hot_keys = automatic_hot_keys(partitions);
        std::uint32_t lanes = std::clamp(hardware_threads, default_lanes, max_automatic_lanes);
        while (lanes > 2 && state_bytes(partitions, max_hot_keys, lanes) > budget) --lanes;
        return lanes;
    }

    /// As many keys as partitions (at least 128, at most 4096), halved while a router with 2
    /// lanes would hold more than the budget, down to 128, for up to 1024 partitions (above that
    /// the state grows with the partitions).
    [[nodiscard]] static auto automatic_hot_keys(std::uint64_t partitions) noexcept
        -> std::uint32_t {
        auto keys = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(partitions, 128U, 4096U));
        while (partitions <= 1024U && keys > 128U && state_bytes(partitions, keys, 2) > budget)
            keys = std::max(keys / 2U, 128U);
        return keys;
    }
};

}  // namespace keyroute::detail
