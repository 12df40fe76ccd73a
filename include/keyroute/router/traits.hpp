#pragma once

/// @file
/// detail::router_traits: the salting router's test seams, as a type (its third template
/// parameter). Tests derive their own to reach the end of an episode's numbers, to pause a
/// thread at a named point of the route path, or to route on a lane they name; the default does
/// nothing and costs nothing, and no two translation units can see different definitions of it.

#include <cstdint>

namespace keyroute::detail {

struct router_traits {
    /// The largest sequence number a lane writes in one episode.
    static constexpr std::uint32_t last_sequence = 0xfffffffeU;
    /// Called at the named points of the route path; does nothing.
    static void point(const char*) noexcept {}
    /// When true, each event routes on lane lane() instead of the calling thread's (the
    /// simulator replays several producer threads on one thread).
    static constexpr bool explicit_lane = false;
    static auto lane() noexcept -> std::uint32_t { return 0; }
};

}  // namespace keyroute::detail
