#pragma once

/// @file
/// keyroute::salting_config, the salting router's configuration, and the checks a router runs
/// on it once, at construction (detail::checked_config, detail::checked_base): every field in
/// range, a window that is a whole number of the clock's ticks and fits its tick count, a base
/// partitioner with the same partition count and ids below it. Each failure throws
/// std::invalid_argument naming the field and the value.

#include "../detail/config.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <ratio>
#include <string>

namespace keyroute {

/// Configuration of a salting_router. Validated once, at construction.
struct salting_config {
    /// Number of partitions; must equal the base partitioner's. In [1, 2^20].
    std::uint64_t partitions = 0;
    /// Events of a key in a window above which it may be spread; 0 = automatic: `auto_fraction`
    /// of the per-partition mean (the larger of the previous window's and the current one's
    /// expected), at least `min_threshold`. Counted exactly from the key's admission.
    std::uint64_t threshold = 0;
    /// Window length; > 0, at most a year, a whole number of the clock's ticks. Windows are
    /// aligned to the clock's epoch: window k holds the times in [k * window, (k + 1) * window).
    std::chrono::milliseconds window = std::chrono::minutes(1);
    /// Automatic mode: a key may be spread above this fraction of the per-partition mean. In
    /// (0, 1]. Keys under a tenth of the mean never move; the margin above a tenth absorbs a
    /// window whose volume ends higher than expected.
    double auto_fraction = 0.10;
    /// Automatic mode: never spread a key below this many events in a window. In [1, 2^32).
    std::uint64_t min_threshold = 32;
    /// Most events a spread key sends to one partition before choosing again (batching); fewer
    /// when the mean per partition is small (a 64th of it). In [1, 65536].
    std::uint32_t run_length = 32;
    /// Sizes the table of tracked keys: the next power of two of at least twice this, at least
    /// 16 slots; 0 = automatic: as many as the partitions, at least 128 and at most 4096, fewer
    /// where that would take the state of a router with 2 lanes above 256 KiB (up to 1024
    /// partitions). In [0, 4096]. config() reports the value in force.
    std::uint32_t max_hot_keys = 0;
    /// Lanes: threads that route through this router at once without sharing counters; more
    /// threads share one overflow lane, which sends every event home. A thread keeps its lane
    /// until it ends, then the lane goes to the next thread that needs one (one on the overflow
    /// lane included): size this to the threads routing at once. 0 = automatic: 8, or the
    /// hardware threads if more (at most 16), fewer only to keep the state within 256 KiB, at
    /// least 2. At most 256. salting_router::state_bytes() sizes a configuration.
    std::uint32_t lanes = 0;
    /// Identifies this router in stamps; 0 = a random id drawn at construction (never 0;
    /// salting_router::config() reports it). An id given here may be a router's before this one
    /// (a restarted process): see episode_base. Two routers that run at the same time must not
    /// share an id: to a consumer they would be one producer.
    std::uint64_t producer_id = 0;
    /// Where the lanes' episode ids start: lane i gives episode_base + i + 1, then steps of
    /// lanes + 1 (episode_base rounded down to a multiple of lanes + 1). Below 2^56. 0 =
    /// automatic: with producer_id given, a random start (7 to 8 bytes of stamp instead of 1
    /// to 3), so that a router that reuses an id never repeats its predecessor's stamps, which a
    /// resequencer that remembers them would drop as duplicates; with producer_id drawn, 1.
    /// config() reports the value in force (build from it to replay a router's stamps; not to
    /// restart one: leave it 0 then).
    std::uint64_t episode_base = 0;
    /// Seed of the tracking hash and of the lanes' draws (a router built with a fixed seed
    /// replays a trace exactly on one thread); 0 = a random seed drawn at construction (never 0;
    /// config() reports it).
    std::uint64_t seed = 0;
    /// Send events bound for an unavailable home partition (cold keys', and a hot key's that go
    /// home: before it proves itself, and the stamped ones that close or open a spread stretch)
    /// to another available partition (the first available one of a sequence drawn from the
    /// key's XXH3 hash with seed 0, so that every producer picks the same one; a few draws on
    /// average, whatever the partition count); they come back when it returns. This gives up the
    /// order of those keys' home-bound events across the change, which no resequencer can restore,
    /// and of a spread key whose home goes down, the order between its episodes around it (the
    /// stamped events that close one and open the next no longer meet on home), spread events
    /// included.
    /// Off, they wait for their home, held by the client.
    bool failover_cold_keys = false;
};

namespace detail {

/// The largest partitions, max_hot_keys and lanes a configuration may ask for.
struct router_limits {
    static constexpr std::uint32_t partitions = 1U << 20U;
    static constexpr std::uint32_t tracked_keys = 4096;
    static constexpr std::uint32_t lanes = 256;
};

/// Throws naming the field unless config.partitions is in [1, 2^20].
inline void check_partitions(const salting_config& c) {
    if (c.partitions == 0)
        invalid_argument(
            "keyroute::salting_router: salting_config.partitions must be at least 1, got 0");
    if (c.partitions > router_limits::partitions) {
        invalid_argument(
            "keyroute::salting_router: salting_config.partitions must be at most 2^20 (1048576), "
            "got " +
            std::to_string(c.partitions));
    }
}

/// `config` if every field is valid for a router on Clock; otherwise throws naming the field.
template <class Clock>
auto checked_config(const salting_config& c) -> salting_config {
    const auto fail = [](const std::string& what) {
        invalid_argument("keyroute::salting_router: salting_config." + what);
    };
    check_partitions(c);
    if (c.window.count() <= 0)
        fail("window must be positive, got " + std::to_string(c.window.count()) + " ms");
    if (c.window > std::chrono::hours(24 * 366)) {
        fail("window must be at most a year (31,622,400,000 ms), got " +
             std::to_string(c.window.count()) + " ms");
    }
    // Ticks per millisecond, as a ratio: a window must fit the clock's 64-bit count before it is
    // converted (a year in picoseconds does not; the conversion would overflow). duration_cast
    // multiplies by the conversion ratio's numerator before it divides by its denominator,
    // whatever their sizes: both ways are checked.
    using per_ms = std::ratio_divide<std::milli, typename Clock::period>;
    using ms_per_tick = std::ratio_divide<typename Clock::period, std::milli>;
    constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
    if (c.window.count() > int64_max / per_ms::num ||
        std::chrono::duration_cast<typename Clock::duration>(c.window).count() >
            int64_max / ms_per_tick::num) {
        fail("window does not fit the clock's 64-bit tick count, got " +
             std::to_string(c.window.count()) + " ms");
    }
    // A clock whose ticks are narrower than 64 bits (Clock::rep): the window's ticks must fit
    // them too, or they would be cut.
    using wide_ticks = std::chrono::duration<std::int64_t, typename Clock::period>;
    const auto wide = std::chrono::duration_cast<wide_ticks>(c.window);
    constexpr auto rep_max =
        static_cast<std::uint64_t>(std::numeric_limits<typename Clock::rep>::max());
    if (static_cast<std::uint64_t>(wide.count()) > rep_max) {
        fail("window of " + std::to_string(c.window.count()) + " ms is " +
             std::to_string(wide.count()) + " ticks of the clock, more than its tick count (" +
             std::to_string(std::numeric_limits<typename Clock::rep>::digits +
                            (std::numeric_limits<typename Clock::rep>::is_signed ? 1 : 0)) +
             " bits) holds");
    }
    const auto ticks = std::chrono::duration_cast<typename Clock::duration>(c.window);
    if (ticks.count() <= 0 ||
        std::chrono::duration_cast<std::chrono::milliseconds>(ticks) != c.window) {
        fail("window must be a whole number of the clock's ticks, got " +
             std::to_string(c.window.count()) + " ms");
    }
    if (!(c.auto_fraction > 0.0 && c.auto_fraction <= 1.0))
        fail("auto_fraction must be in (0, 1], got " + exact_number(c.auto_fraction));
    if (c.min_threshold == 0) fail("min_threshold must be at least 1, got 0");
    if (c.min_threshold > 0xffffffffULL)  // as threshold: levels are derived from it in 64 bits
        fail("min_threshold must be below 2^32, got " + std::to_string(c.min_threshold));
    if (c.run_length == 0 || c.run_length > 65536)
        fail("run_length must be in [1, 65536], got " + std::to_string(c.run_length));
    if (c.max_hot_keys > router_limits::tracked_keys)
        fail("max_hot_keys must be in [0, 4096], got " + std::to_string(c.max_hot_keys));
    if (c.lanes > router_limits::lanes)
        fail("lanes must be at most 256, got " + std::to_string(c.lanes));
    if (c.threshold > 0xffffffffULL)
        fail("threshold must be below 2^32, got " + std::to_string(c.threshold));
    if (c.episode_base >= (std::uint64_t{1} << 56U))
        fail("episode_base must be below 2^56, got " + std::to_string(c.episode_base));
    return c;
}

/// The base partitioner `Partitioner(config.partitions)`, once the count is known to be valid.
template <class Partitioner>
auto make_base(const salting_config& config) -> Partitioner {
    check_partitions(config);
    return Partitioner(config.partitions);
}

/// `base` if it has config.partitions partitions, with ids (if it has an id set) below that
/// count: the router indexes its per-partition state by the base's partition.
template <class Partitioner>
auto checked_base(Partitioner base, const salting_config& config) -> Partitioner {
    if (base.partitions() != config.partitions) {
        invalid_argument("keyroute::salting_router: salting_config.partitions (" +
                         std::to_string(config.partitions) +
                         ") differs from the base partitioner's (" +
                         std::to_string(base.partitions()) + ")");
    }
    if constexpr (has_ids<Partitioner>::value) {
        for (const std::uint32_t id : base.ids()) {
            if (id >= config.partitions) {
                invalid_argument("keyroute::salting_router: the base partitioner's partition id " +
                                 std::to_string(id) + " is not below its partition count (" +
                                 std::to_string(config.partitions) +
                                 "): the salting router needs ids 0 to partitions - 1");
            }
        }
    }
    return base;
}

/// A random 64-bit value, never 0: the producer id and seed a configuration leaves at 0.
inline auto random_nonzero_u64() -> std::uint64_t {
    std::random_device rd;
    std::uint64_t v = 0;
    while (v == 0) v = (static_cast<std::uint64_t>(rd()) << 32U) ^ rd();
    return v;
}

/// The window in Clock's ticks (checked_config made sure it fits).
template <class Clock>
[[nodiscard]] auto window_ticks(std::chrono::milliseconds window) noexcept -> std::int64_t {
    return static_cast<std::int64_t>(
        std::chrono::duration_cast<typename Clock::duration>(window).count());
}

/// Windows in more than an hour: a jump of more than that takes a second event (window_clock).
[[nodiscard]] inline auto jump_windows(std::chrono::milliseconds window) noexcept -> std::int64_t {
    const std::int64_t ms = std::max<std::int64_t>(window.count(), 1);
    return std::max<std::int64_t>((3600000 + ms - 1) / ms, 1);
}

}  // namespace detail
}  // namespace keyroute
