#pragma once

/// @file
/// keyroute::salting_router: static hashing for every key, except the hot ones, which are spread
/// in runs over as many partitions as their volume needs, placed where the load is lowest.
///
/// How it decides, per event (all in memory fixed at construction, no lock, no allocation):
/// 1. The event's window is `floor(time / window)`, aligned to the clock's epoch, so producers
///    sharing a clock switch windows together.
/// 2. Its home partition is `Partitioner::route(key)`. A key that is not tracked goes home.
/// 3. Every untracked key is counted in a Count-Min sketch (2 rows, conservative update, cells
///    tagged with their window so nothing needs clearing), hashed with a per-instance secret seed
///    so nobody can craft keys that collide with a victim's cells. Once the admission level
///    allows it, the sketch is sampled: about one untracked event in `stride` (2 to 4 for one
///    thread, 2 to 8 for several, as the admission level allows) adds `stride` times its weight,
///    which spares most cold events the two sketch cells. While several threads route in the
///    same window, each lane counts its own events in its own slice of the sketch's rows, with
///    the weight of the active lanes: the sketch was the only memory every thread wrote on the
///    route path. One thread counts in the whole rows.
/// 4. A key whose estimate reaches the admission level becomes a *candidate*: it takes a slot
///    in a small table of tracked keys and is counted exactly from then on. Its events still go
///    home, but carry ordering stamps. The level is half the hot threshold, lower early in a
///    window in automatic mode (what the window's projected volume asks for, at least
///    max(threshold / 16, min_threshold)), and never below 4 times the sketch's background.
/// 5. When its exact count *since admission* passes the threshold (so a sketch overestimate can
///    never split a cold key), or in automatic mode when that count projected to the window's
///    end clears it by 4 standard deviations, the key is *hot* for the rest of the window: its
///    events go in runs of `run_length` to the partition of its plan that the routing lane saw
///    least loaded. A key hot in the previous window is planned at the rollover, into the
///    partitions with the most room, home first; a key turning hot mid-window is planned then,
///    against the window's projected loads. Without a plan, its runs go to a key-specific pool
///    among the previous window's least-loaded partitions, max(1.25 * share * n, low * share /
///    salted share) of them and at least 2 (low: the partitions with room), so fan-out follows
///    volume; where no such order is known (the router's first window, or above 16384
///    partitions), the pool is a key-specific sequence of partitions that starts at home.
/// 6. Each window a key must earn hotness again; a key that stays cold for a whole window after
///    being hot is forgotten, and its events go home unstamped.
///
/// Ordering: see stamp.hpp and resequencer.hpp. Every event of a tracked key carries a stamp
/// (producer, lane, episode, sequence); the first stamped events of an episode go home, after the
/// key's unstamped ones, and so do the last ones before the key is forgotten. (A lane that routes
/// none of the key's events in that cold window sends its next one home unstamped, a whole window
/// or more after its last stamped one in event time, which may be off home: a consumer orders the
/// two only if it lags between partitions by less than that; with event times that jump, they
/// may be published back to back. Two lanes that admit a key at the same instant give it two
/// slots, two episodes at once: an event of the one that stays tracked may then overtake the
/// other's on home. `failover_cold_keys` gives up the order it moves, see salting_config.)
///
/// Threads: one router is shared by all producer threads. Each thread claims a *lane* (a private
/// slice of the counters) on its first route; threads beyond `salting_config::lanes` share one
/// overflow lane, which stays correct but uses atomic read-modify-writes.

#include "detail/clock.hpp"
#include "detail/config.hpp"
#include "detail/lane.hpp"
#include "hash.hpp"
#include "partitioner.hpp"
#include "stamp.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <ratio>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

/// A point on the route path where a test may pause the calling thread to force one
/// interleaving of two threads (tests/test_interleavings.cpp defines it before including this
/// header). Not an interface: it expands to nothing unless defined, and costs nothing then.
#ifndef KEYROUTE_INTERLEAVING_POINT
#define KEYROUTE_INTERLEAVING_POINT(name) static_cast<void>(0)
#endif

namespace keyroute {

/// Configuration of a salting_router. Validated once, at construction.
struct salting_config {
    /// Number of partitions; must equal the base partitioner's. >= 1.
    std::uint64_t partitions = 0;
    /// Events per key per window above which a key is hot; 0 = automatic: `auto_fraction` of the
    /// per-partition mean of the larger of the previous window and the current one so far.
    /// Counted exactly from the key's admission, so a key newly tracked in a window turns hot
    /// with somewhat more events in it (about 1.5 times the threshold with an absolute one).
    std::uint64_t threshold = 0;
    /// Window length; > 0, at most a year, a whole number of the clock's ticks. Windows are
    /// aligned to the clock's epoch: window k holds the times in [k * window, (k + 1) * window).
    std::chrono::milliseconds window = std::chrono::minutes(1);
    /// Automatic mode: a key is hot above this fraction of the per-partition mean. In (0, 1].
    double auto_fraction = 0.11;
    /// Automatic mode: never call a key hot below this many events in a window. In [1, 2^32).
    std::uint64_t min_threshold = 32;
    /// Events a hot key sends to one partition before choosing the next one (batching). In
    /// [1, 65536].
    std::uint32_t run_length = 32;
    /// Sizes the table of tracked keys (candidates and hot keys): the next power of two of at
    /// least twice this, at least 8 slots, in probe groups of 8. In [1, 4096].
    std::uint32_t max_hot_keys = 128;
    /// Lanes: threads that route through this router without sharing counters; more threads
    /// share one overflow lane (correct, but slower). 0 = automatic: the hardware threads, at
    /// least 2 and at most 8, and no more than keep the router's state within 256 KiB (with 1024
    /// partitions and the default max_hot_keys that is 2; with 4096 hot keys the state exceeds
    /// 256 KiB whatever the lanes). At most 256. Each lane holds about 8 bytes per partition and 24
    /// per tracked-key slot; salting_router::state_bytes() sizes a configuration.
    std::uint32_t lanes = 0;
    /// Identifies this producer in stamps; 0 = a random id drawn at construction (never 0;
    /// salting_router::config() reports it).
    std::uint64_t producer_id = 0;
    /// Seed of the hot-key sketch's hash and of the lanes' random draws (a router built with a
    /// fixed seed replays a trace exactly); 0 = a random seed drawn at construction (never 0;
    /// salting_router::config() reports it, so a router built from another's config() replays
    /// its decisions).
    std::uint64_t seed = 0;
    /// Send cold keys whose home partition is unavailable to another available partition
    /// (rendezvous hashing among the available ones, on the key's XXH3 hash with seed 0, so that
    /// every producer picks the same one); they come back when it returns.
    /// Order: this gives up the order of those keys' unstamped events across the change (events
    /// sent home before it went down, to the other partition while it was down, home again
    /// after), which the resequencer cannot restore: a consumer reading home first delivers
    /// the later ones first. The same holds for the events a tracked key sends where its
    /// unstamped events go (its lanes' first stamped events, a cooling key's). Off, a key's
    /// events wait for its home, held by the client.
    bool failover_cold_keys = false;
};

/// The whole routing decision for one event.
struct route_decision {
    std::uint32_t partition = 0;  ///< where to publish
    std::uint32_t home = 0;       ///< the base partitioner's partition for the key
    bool salted = false;          ///< placed by the hot-key logic (it may still equal home)
    keyroute::stamp stamp{};      ///< publish it with the event when `bool(stamp)`
};

/// One tracked key, as reported by salting_router::stats().
struct hot_key_info {
    std::string key;  ///< the key, or its first 24 bytes when `truncated`
    bool truncated = false;
    std::uint64_t events = 0;  ///< exact events counted in the current window since admission
    bool salted = false;       ///< hot (spread) in the current window
};

/// A snapshot of a salting_router's state.
struct salting_stats {
    std::int64_t window = 0;      ///< current window index
    std::uint64_t threshold = 0;  ///< the hot threshold now in force
    std::uint64_t routed = 0;     ///< events routed since construction
    std::uint64_t salted = 0;     ///< of which placed by the hot-key logic
    std::uint64_t stamped = 0;    ///< of which carried a stamp
    std::uint64_t admissions_refused =
        0;  ///< candidates not tracked: their probe group of 8 slots was full
    /// Untracked events that did not update the hot-key sketch because it was sampled: all but
    /// about one in `stride` (up to 4 while one thread routes, 8 while several do) once the
    /// admission level allows it (see the file comment, step 3).
    std::uint64_t sketch_skipped = 0;
    std::vector<std::uint64_t> partition_load;  ///< events per partition, current window
    std::vector<hot_key_info> hot_keys;         ///< tracked keys, hottest first
    std::size_t memory_bytes = 0;               ///< state allocated at construction
};

namespace detail {

inline constexpr std::int64_t no_window = std::numeric_limits<std::int64_t>::min() / 2;

inline auto random_u64() -> std::uint64_t {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32U) ^ rd();
}

/// A random value other than 0 (0 means "draw one" in salting_config).
inline auto random_nonzero_u64() -> std::uint64_t {
    std::uint64_t v = 0;
    while (v == 0) v = random_u64();
    return v;
}

/// The smallest power of two >= v; 2^63 for any v above it (the loop would never end there).
constexpr auto next_pow2(std::uint64_t v) noexcept -> std::uint64_t {
    std::uint64_t p = 1;
    while (p < v && p < (std::uint64_t{1} << 63U)) p <<= 1U;
    return p;
}

constexpr auto mix64(std::uint64_t x) noexcept -> std::uint64_t {
    x ^= x >> 30U;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27U;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31U;
    return x;
}

/// The 128-bit product of a and b, its halves xored: the fold XXH3 mixes short inputs with
/// (xxhash.h, XXH3_mul128_fold64). With a secret odd b it spreads every bit of a over both
/// halves of the result in three instructions.
inline auto mul_fold64(std::uint64_t a, std::uint64_t b) noexcept -> std::uint64_t {
    __extension__ using u128 = unsigned __int128;
    const u128 p = static_cast<u128>(a) * b;
    return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64U);
}

constexpr auto gcd32(std::uint32_t a, std::uint32_t b) noexcept -> std::uint32_t {
    while (b != 0) {
        const std::uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

}  // namespace detail

/// A load-aware salting router. See the file comment for the algorithm.
///
/// @tparam Partitioner the static scheme cold keys follow exactly: any partitioner whose route()
///         returns a partition below its partitions() (every keyroute partitioner, but
///         rendezvous and maglev over an id set other than 0 to n - 1, which the constructor
///         refuses); with kafka_partitioner, cold keys land where the Java client would put them.
/// @tparam Clock a std::chrono clock; route(key) reads it (cheaply, see detail::cheap_now).
///
/// Thread-safety: all const and non-const members may be called from any number of threads at
/// once; route() and decide() take no lock and allocate nothing. stats() allocates.
/// Memory: fixed at construction, reported by stats().memory_bytes (about 106 KiB for 64
/// partitions and 252 KiB for 1024 with the default configuration and 2 lanes; automatic lanes
/// keep it within 256 KiB up to 1024 partitions).
template <class Partitioner = hash_partitioner<>, class Clock = std::chrono::system_clock>
class salting_router {
    static_assert(std::is_integral_v<typename Clock::rep>,
                  "keyroute::salting_router: the clock must count integer ticks (Clock::rep): "
                  "windows are whole numbers of ticks");

public:
    using partitioner_type = Partitioner;
    using clock_type = Clock;
    using time_point = typename Clock::time_point;

    /// Builds the router and the base partitioner `Partitioner(config.partitions)`.
    /// @throws std::invalid_argument naming the field for any invalid configuration value.
    explicit salting_router(const salting_config& config)
        : salting_router(config, make_base(config)) {}

    /// Builds the router around an existing base partitioner.
    /// @throws std::invalid_argument if `base.partitions() != config.partitions`, if the base
    ///         has an id set (`ids()`) with an id not below that count, or any configuration
    ///         value is invalid.
    salting_router(const salting_config& config, Partitioner base)
        : m_base(std::move(base)),
          m_config(validate(config)) {
        if (m_base.partitions() != config.partitions) {
            detail::invalid_argument("salting_config.partitions (" +
                                     std::to_string(config.partitions) +
                                     ") differs from the base partitioner's (" +
                                     std::to_string(m_base.partitions()) + ")");
        }
        // The router indexes its per-partition state by the base's partition: a base over an
        // explicit id set (rendezvous_partitioner, maglev_partitioner) must use ids 0 to n - 1.
        // Until 0.2.12 one over, say, {0, 5, 9} was accepted, and its keys on 5 and 9 were
        // counted past the lanes' loads.
        if constexpr (detail::has_ids<Partitioner>::value) {
            for (const std::uint32_t id : m_base.ids()) {
                if (id >= config.partitions) {
                    detail::invalid_argument(
                        "the base partitioner's partition id " + std::to_string(id) +
                        " is not below its partition count (" + std::to_string(config.partitions) +
                        "): the salting router needs ids 0 to partitions - 1");
                }
            }
        }
        m_n = static_cast<std::uint32_t>(config.partitions);
        m_uid = detail::random_u64() | 1U;
        // Drawn ids and seeds go into m_config, so that config() gives what this router uses
        // (until 0.2.9 it kept 0, and a router with a random seed could not be replayed).
        if (m_config.producer_id == 0) m_config.producer_id = detail::random_nonzero_u64();
        if (m_config.seed == 0) m_config.seed = detail::random_nonzero_u64();
        m_sketch_hash = xxh3{m_config.seed};
        m_secret = detail::mix64(m_sketch_hash.seed ^ 0x243f6a8885a308d3ULL);
        m_secret_out = detail::mix64(m_secret) | 1U;
        const std::size_t width = sketch_width(m_n);
        m_sketch_mask = static_cast<std::uint32_t>(width - 1);
        m_sketch = std::make_unique<std::atomic<std::uint32_t>[]>(2 * width);
        const std::size_t slots = slot_count(m_config.max_hot_keys);
        m_slots = static_cast<std::uint32_t>(slots);
        m_group_mask = (m_slots - 1U) & ~(probe_group - 1U);
        m_fp = std::make_unique<std::atomic<std::uint64_t>[]>(slots);
        m_tags = std::make_unique<std::atomic<std::uint64_t>[]>(slots / probe_group);
        m_entries = std::make_unique<entry[]>(slots);
        m_lanes = m_config.lanes;
        m_lane = std::make_unique<lane[]>(m_lanes + 1U);
        m_lane[m_lanes].shared = true;
        m_load =
            std::make_unique<std::atomic<std::uint32_t>[]>(std::size_t{m_lanes + 1U} * 2U * m_n);
        m_slot_state = std::make_unique<slot_state[]>(std::size_t{m_lanes + 1U} * m_slots);
        m_down = std::make_unique<std::atomic<std::uint8_t>[]>(m_n);
        m_run_load = std::make_unique<std::atomic<std::uint32_t>[]>(2U * std::size_t{m_n});
        if (m_n <= max_ordered_partitions) {
            m_fill = std::make_unique<std::atomic<std::uint32_t>[]>(2U * std::size_t{m_n});
            m_scratch_base = std::make_unique<std::uint32_t[]>(m_n);
            m_scratch_order = std::make_unique<std::uint32_t[]>(m_n);
            m_scratch_room = std::make_unique<double[]>(2U * std::size_t{m_n});
            m_plan = std::make_unique<plan_piece[]>(2U * std::size_t{pieces_per_window()});
            m_reserved = std::make_unique<std::atomic<std::uint32_t>[]>(2U * std::size_t{m_n});
            m_scratch_keys = std::make_unique<key_volume[]>(m_slots);
        }
        // The lanes' random draws (sampling gaps, where a run scan starts) follow the seed, so a
        // router built with a fixed `seed` replays a trace exactly.
        for (std::uint32_t i = 0; i <= m_lanes; ++i) {
            m_lane[i].index = i;
            m_lane[i].load = m_load.get() + std::size_t{i} * 2U * m_n;
            m_lane[i].rng.store(detail::mix64(m_secret_out + 0x632be59bd9b4e019ULL * (i + 1U)),
                                std::memory_order_relaxed);
        }
    }

    salting_router(const salting_router&) = delete;
    auto operator=(const salting_router&) -> salting_router& = delete;

    /// The partition for `key`, reading the clock. Same as `decide(key).partition`.
    [[nodiscard]] auto route(std::string_view key) noexcept -> std::uint32_t {
        return route(key, detail::cheap_now<Clock>());
    }

    /// The partition for `key` at event time `now` (deterministic: for tests and replays).
    [[nodiscard]] auto route(std::string_view key, time_point now) noexcept -> std::uint32_t {
        return decide_at(key, now).partition;
    }

    /// The whole decision for `key`, reading the clock.
    [[nodiscard]] auto decide(std::string_view key) noexcept -> route_decision {
        return decide(key, detail::cheap_now<Clock>());
    }

    /// The whole decision for `key` at event time `now`. A later time than the current window
    /// opens its window (more than an hour ahead, at the second event near it: one stray time
    /// far ahead moves nothing); an earlier time (a late event, or a clock set back) counts in
    /// the current window, which then simply lasts until the clock reaches its end: windows
    /// never go back (docs/bad-input.md, Time: a clock that stays far ahead and steps back).
    [[nodiscard]] auto decide(std::string_view key, time_point now) noexcept -> route_decision {
        return decide_at(key, now);
    }

    /// Marks a partition unavailable (false) or available again (true). Hot-key runs avoid
    /// unavailable partitions at once; cold keys keep their home unless failover_cold_keys is set.
    /// Safe while other threads route. Not a barrier: a route already under way on another
    /// thread may still pick the partition (it writes the partition's flag, then the count of
    /// unavailable partitions, which cold keys read first); routes ordered after this call
    /// returns (by whatever told their thread of it) see it.
    /// @throws std::invalid_argument if partition >= partitions.
    void set_available(std::uint32_t partition, bool available) {
        if (partition >= m_n) {
            detail::invalid_argument("set_available: partition " + std::to_string(partition) +
                                     " is not below partitions (" + std::to_string(m_n) + ")");
        }
        const std::uint8_t down = available ? 0 : 1;
        if (m_down[partition].exchange(down, std::memory_order_acq_rel) != down) {
            if (available) {
                m_down_count.fetch_sub(1, std::memory_order_acq_rel);
            } else {
                m_down_count.fetch_add(1, std::memory_order_acq_rel);
            }
        }
    }

    /// True unless set_available(partition, false) is in force.
    [[nodiscard]] auto available(std::uint32_t partition) const noexcept -> bool {
        return partition < m_n && m_down[partition].load(std::memory_order_relaxed) == 0;
    }

    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t { return m_n; }
    [[nodiscard]] auto config() const noexcept -> const salting_config& { return m_config; }
    [[nodiscard]] auto base() const noexcept -> const Partitioner& { return m_base; }
    /// The producer id this router writes into stamps.
    [[nodiscard]] auto producer_id() const noexcept -> std::uint64_t {
        return m_config.producer_id;
    }

    /// A snapshot of the counters, the current window's loads and the tracked keys.
    /// Allocates; not for the hot path. Counters read while other threads route are each exact
    /// at some instant during the call.
    [[nodiscard]] auto stats() const -> salting_stats {
        salting_stats s;
        const std::int64_t w = m_window.load(std::memory_order_acquire);
        s.window = w;
        s.threshold = threshold(w);
        s.partition_load.assign(m_n, 0);
        for (std::uint32_t i = 0; i <= m_lanes; ++i) {
            const lane& ln = m_lane[i];
            s.routed += ln.routed.load(std::memory_order_relaxed);
            s.salted += ln.salted.load(std::memory_order_relaxed);
            s.stamped += ln.stamped.load(std::memory_order_relaxed);
            s.admissions_refused += ln.refused.load(std::memory_order_relaxed);
            s.sketch_skipped += ln.skipped.load(std::memory_order_relaxed);
        }
        for (std::uint32_t p = 0; p < m_n; ++p) s.partition_load[p] = load_of(p, w);

        for (std::uint32_t i = 0; i < m_slots; ++i) {
            const entry& e = m_entries[i];
            if (m_fp[i].load(std::memory_order_acquire) == 0 || !live(e, w)) continue;
            hot_key_info info;
            const std::uint32_t len = e.key_len.load(std::memory_order_relaxed);
            char buf[key_prefix_bytes];
            for (std::size_t k = 0; k < key_words; ++k) {
                const std::uint64_t word = e.key_word[k].load(std::memory_order_relaxed);
                std::memcpy(buf + 8 * k, &word, 8);
            }
            info.key.assign(buf, std::min<std::size_t>(len, key_prefix_bytes));
            info.truncated = len > key_prefix_bytes;
            info.events = exact_count(e, w) + unflushed(i, w);
            info.salted = e.hot_window.load(std::memory_order_relaxed) == w;
            s.hot_keys.push_back(std::move(info));
        }
        std::sort(s.hot_keys.begin(), s.hot_keys.end(),
                  [](const hot_key_info& a, const hot_key_info& b) { return a.events > b.events; });
        s.memory_bytes = memory_bytes();
        return s;
    }

    /// Bytes of state allocated at construction (the router never allocates after it).
    [[nodiscard]] auto memory_bytes() const noexcept -> std::size_t {
        return state_bytes(m_n, m_config.max_hot_keys, m_lanes);
    }

    /// The largest partitions, max_hot_keys and lanes a configuration may ask for.
    static constexpr std::uint32_t max_partitions = 0xffffffffU;
    static constexpr std::uint32_t max_tracked_keys = 4096;
    static constexpr std::uint32_t max_lanes = 256;

    /// Automatic mode (salting_config::lanes = 0) takes fewer lanes than hardware threads when
    /// more would take the router's state above this (with 1024 partitions: 2 lanes).
    static constexpr std::size_t auto_memory_budget = std::size_t{256} * 1024U;

    /// The bytes of state a router with `partitions`, `max_hot_keys` and `lanes` exclusive lanes
    /// holds once built (what memory_bytes() reports): to size a configuration before building.
    /// A configuration a router refuses (no partitions or hot keys, or above max_partitions,
    /// max_tracked_keys or max_lanes) gives SIZE_MAX. `lanes` counts exclusive lanes here, as
    /// built: 0 is none (salting_config::lanes = 0 is resolved by automatic_lanes()).
    [[nodiscard]] static auto state_bytes(std::uint64_t partitions, std::uint32_t max_hot_keys,
                                          std::uint32_t lanes) noexcept -> std::size_t {
        if (partitions == 0 || partitions > max_partitions || max_hot_keys == 0 ||
            max_hot_keys > max_tracked_keys || lanes > max_lanes)
            return std::numeric_limits<std::size_t>::max();
        const std::size_t n = partitions;
        const std::size_t width = sketch_width(partitions);
        const std::size_t slots = slot_count(max_hot_keys);
        const std::size_t pieces = pieces_for(n, slots);
        const std::size_t u32 = sizeof(std::atomic<std::uint32_t>);
        return sizeof(salting_router) + 2 * width * u32 +
               slots * (sizeof(std::atomic<std::uint64_t>) + sizeof(entry)) + slots +
               (std::size_t{lanes} + 1U) *
                   (sizeof(lane) + 2 * n * u32 + slots * sizeof(slot_state)) +
               n * sizeof(std::atomic<std::uint8_t>) + 2 * n * u32 +
               (n <= max_ordered_partitions
                    ? n * (2 * u32 + 2 * sizeof(std::uint32_t) + 2 * sizeof(double)) +
                          slots * sizeof(key_volume) + 2 * pieces * sizeof(plan_piece) + 2 * n * u32
                    : 0);
    }

    /// The lanes automatic mode takes on a machine with `hardware_threads` threads: that many,
    /// at least 2 and at most 8, and no more than keep state_bytes() within auto_memory_budget.
    [[nodiscard]] static auto automatic_lanes(std::uint64_t partitions, std::uint32_t max_hot_keys,
                                              unsigned hardware_threads) noexcept -> std::uint32_t {
        std::uint32_t lanes = std::clamp(hardware_threads, 2U, 8U);
        while (lanes > 2 && state_bytes(partitions, max_hot_keys, lanes) > auto_memory_budget) {
            --lanes;
        }
        return lanes;
    }

private:
    template <class P, class = void>
    struct has_wide_hash : std::false_type {};
    template <class P>
    struct has_wide_hash<P, std::void_t<decltype(std::declval<const P&>().hash(std::string_view{})),
                                        decltype(std::declval<const P&>().reduce(std::uint64_t{}))>>
        : std::is_same<decltype(std::declval<const P&>().hash(std::string_view{})), std::uint64_t> {
    };
    /// True when the base partitioner exposes a 64-bit hash and its reduction (hash_partitioner
    /// over a 64-bit hash, such as the default XXH3): the route path then hashes the key once.
    static constexpr bool reuses_base_hash = has_wide_hash<Partitioner>::value;

    static constexpr std::uint32_t no_slot = 0xffffffffU;
    static constexpr std::size_t key_words = 3;
    static constexpr std::size_t key_prefix_bytes = 8 * key_words;
    /// Count-Min width per row for n partitions, tracked-key slots for max_hot_keys, and plan
    /// piece space per window (plan_capacity() for the rollover, then n for in-window plans):
    /// the constructor allocates them, state_bytes() counts them.
    static constexpr auto sketch_width(std::uint64_t n) noexcept -> std::size_t {
        return std::clamp<std::uint64_t>(detail::next_pow2(32ULL * n), 1024, 8192);
    }
    static constexpr auto slot_count(std::uint32_t max_hot_keys) noexcept -> std::size_t {
        return std::max<std::uint64_t>(8, detail::next_pow2(2ULL * max_hot_keys));
    }
    static constexpr auto pieces_for(std::size_t n, std::size_t slots) noexcept -> std::size_t {
        return n + 2 * slots + n;
    }

    static constexpr std::uint32_t flush_every = 16;
    // Once a key is hot in the window its exact count no longer gates anything on the route
    // path: lanes flush it less often (the shared count line is what two threads fight over).
    // Rollover and stats() add the lanes' unflushed counts.
    static constexpr std::uint32_t flush_every_hot = 256;
    static constexpr std::uint32_t probe_group = 8;
    static constexpr std::uint32_t max_scan = 16;
    static constexpr std::uint64_t early_divisor = 16;
    static constexpr std::uint64_t levels_every = 256;
    static constexpr std::uint32_t max_sample_stride = 8;
    // One lane alone samples at most one event in 4: at 8 the window where the hot set shifts
    // came out worse (simulate --seeds 20: 12 of 20 placements within 1.10 max/mean, against 15
    // unsampled and at 4), for 5 fewer instructions per route than at 4.
    static constexpr std::uint32_t max_sample_stride_one_lane = 4;
    static constexpr std::uint32_t min_slice_width = 256;        // cells of a lane's slice of a row
    static constexpr std::uint32_t sketch_cell_max = 0xffffffU;  // a cell's count saturates here
    static constexpr std::uint32_t max_ordered_partitions = 16384;
    // Room above the level the hot keys' volume fills the partitions to, as a fraction of the
    // mean: plan_headroom for the rollover's plans, headroom for plans made inside a window from
    // its early counts (plan_now). Less headroom spreads keys over more partitions (fan-out);
    // more lets partitions run fuller (max/mean). Chosen with `simulate --seeds 10` (README,
    // "The salting router").
    static constexpr double plan_headroom = 0.075;
    static constexpr double headroom = 0.04;
    // The rollover's plans give no partition less than this fraction of the mean.
    static constexpr double plan_sliver = 0.005;

    // A lane's sequence numbers and exact counts take the low seq_bits of a word, a 24-bit tag
    // the rest. KEYROUTE_DETAIL_SEQ_BITS is a test hook (test_sequence_wrap runs with 12 bits
    // to reach the end of an episode's numbers); never define it elsewhere.
#ifdef KEYROUTE_DETAIL_SEQ_BITS
    static constexpr std::uint64_t seq_bits = KEYROUTE_DETAIL_SEQ_BITS;
#else
    static constexpr std::uint64_t seq_bits = 40;
#endif
    static_assert(seq_bits >= 8 && seq_bits <= 40, "a word holds seq_bits and a 24-bit tag");
    static constexpr std::uint64_t seq_mask = (std::uint64_t{1} << seq_bits) - 1;

    enum : std::uint32_t { state_free = 0, state_claiming = 1, state_live = 2 };

    /// A tracked key, shared by all lanes.
    struct alignas(64) entry {
        // Read on every event of the key; written at admission and once a window.
        std::atomic<std::uint32_t> state{state_free};
        std::atomic<std::uint32_t> stride{1};
        std::atomic<std::uint32_t> home{0};
        std::atomic<std::uint64_t> episode{0};  // router-wide admission number, >= 1
        std::atomic<std::int64_t> admit_window{detail::no_window};
        std::atomic<std::int64_t> hot_window{detail::no_window};
        std::atomic<std::uint32_t> key_len{0};
        std::atomic<std::uint64_t> key_word[key_words] = {};
        // The plan for one window: pieces [plan_first, plan_first + plan_pieces) of m_plan.
        std::atomic<std::int64_t> plan_window{detail::no_window};
        std::atomic<std::uint32_t> plan_first{0};
        std::atomic<std::uint64_t> admit_estimate{0};  // sketch estimate when admitted
        std::atomic<std::uint32_t> plan_pieces{0};
        // Window (24 bits) | the key's events in it when it turned hot (40 bits): what it sent
        // home before its runs, which the rollover's plan counts as the key's, not as base load.
        std::atomic<std::uint64_t> hot_at{0};
        // Window (24 bits) | the key's exact events in it (40 bits), added to every few events by
        // each lane that routes the key. One word, so that a lane still finishing an event of the
        // window before cannot reset, or add to, the new window's count.
        alignas(64) std::atomic<std::uint64_t> count_word{0};
    };

    /// A lane's view of one tracked slot.
    struct slot_state {
        std::atomic<std::uint64_t> seq_word{0};  // episode tag (24 bits) | next sequence (40 bits)
        std::atomic<std::uint64_t> run_word{0};  // partition (32) | window (8) | events left (24)
        std::atomic<std::uint64_t> pending{
            0};  // window (32) | events counted here, not yet in entry::count
    };

    /// Per-lane cache of the levels that gate admission and hotness (see levels_of).
    struct levels {
        std::atomic<std::int64_t> window{detail::no_window};
        std::atomic<std::uint64_t> until{0};  // recompute when the lane has seen this many events
        std::atomic<std::uint64_t> admit{0};  // sketch estimate that nominates a candidate
        std::atomic<std::uint64_t> threshold{0};  // exact count that proves a key hot
        std::atomic<double> scale{0};  // expected window volume / volume so far (0: no projection)
        std::atomic<double> bar{0};    // the threshold projections are held to
        std::atomic<std::uint32_t> sample_stride{1};  // see sampled()
        std::atomic<std::uint32_t> sample_weight{1};  // stride * active lanes: see sampled()
        // The lane's slice of each sketch row, set by refresh_levels before the lane's first
        // event of a window: the whole row while one lane routes.
        std::atomic<std::uint32_t> slice_base{0};
        std::atomic<std::uint32_t> slice_mask{0};
    };

    struct alignas(64) lane {
        // Set at construction.
        bool shared = false;
        std::uint32_t index = 0;                     // in m_lane
        std::atomic<std::uint32_t>* load = nullptr;  // [parity][partition] in m_load
        // The thread that claimed this exclusive lane (its lane cache's address; 0: none yet).
        // Set once, when claimed.
        std::atomic<std::uintptr_t> owner{0};
        // Read by every lane's placement decisions; written once a window.
        std::atomic<std::int64_t> window{detail::no_window};
        // Written by the owning thread on every event.
        alignas(64) std::atomic<std::uint64_t> window_events[2] = {};
        std::atomic<std::uint64_t> window_salted[2] = {};
        std::atomic<std::uint64_t> routed{0};
        std::atomic<std::uint64_t> salted{0};
        std::atomic<std::uint64_t> stamped{0};
        std::atomic<std::uint64_t> refused{0};
        std::atomic<std::uint64_t> skipped{0};
        std::atomic<std::uint64_t> rng{0};
        std::atomic<std::uint32_t> sample_left{0};  // untracked events until the next sample
        // The lane's current window, in clock ticks: [win_lo, win_hi) is window win_index. It
        // starts empty (lo = hi = INT64_MIN: every time is after it) and names no window.
        std::atomic<std::int64_t> win_lo{std::numeric_limits<std::int64_t>::min()};
        std::atomic<std::int64_t> win_hi{std::numeric_limits<std::int64_t>::min()};
        std::atomic<std::int64_t> win_index{detail::no_window};
        alignas(64) levels lv;
    };

    static auto make_base(const salting_config& config) -> Partitioner {
        if (config.partitions == 0) {
            detail::invalid_argument("salting_config.partitions must be at least 1, got 0");
        }
        return Partitioner(config.partitions);
    }

    static auto validate(const salting_config& c) -> salting_config {
        const auto fail = [](const std::string& what) {
            detail::invalid_argument("salting_config." + what);
        };
        if (c.partitions == 0) fail("partitions must be at least 1, got 0");
        if (c.partitions > max_partitions)
            fail("partitions must be below 2^32, got " + std::to_string(c.partitions));
        if (c.window.count() <= 0)
            fail("window must be positive, got " + std::to_string(c.window.count()) + " ms");
        if (c.window > std::chrono::hours(24 * 366)) {
            fail("window must be at most a year (31,622,400,000 ms), got " +
                 std::to_string(c.window.count()) + " ms");
        }
        // Ticks per millisecond, as a ratio: a window must fit the clock's 64-bit count before
        // it is converted (a year in picoseconds does not; the conversion would overflow).
        // duration_cast multiplies by the conversion ratio's numerator before it divides by its
        // denominator, whatever their sizes: both ways are checked.
        using per_ms = std::ratio_divide<std::milli, typename Clock::period>;
        using ms_per_tick = std::ratio_divide<typename Clock::period, std::milli>;
        constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
        if (c.window.count() > int64_max / per_ms::num ||
            std::chrono::duration_cast<typename Clock::duration>(c.window).count() >
                int64_max / ms_per_tick::num) {
            fail("window does not fit the clock's 64-bit tick count, got " +
                 std::to_string(c.window.count()) + " ms");
        }
        // A clock whose ticks are narrower than 64 bits (Clock::rep): the window's ticks must
        // fit them too (until 0.2.10 they were cut, and the refusal said "not a whole number").
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
        if (!(c.auto_fraction > 0.0 && c.auto_fraction <= 1.0)) {
            fail("auto_fraction must be in (0, 1], got " + detail::exact_number(c.auto_fraction));
        }
        if (c.min_threshold == 0) fail("min_threshold must be at least 1, got 0");
        if (c.min_threshold > 0xffffffffULL)  // as threshold: levels are derived from it in 64 bits
            fail("min_threshold must be below 2^32, got " + std::to_string(c.min_threshold));
        if (c.run_length == 0 || c.run_length > 65536) {
            fail("run_length must be in [1, 65536], got " + std::to_string(c.run_length));
        }
        if (c.max_hot_keys == 0 || c.max_hot_keys > max_tracked_keys) {
            fail("max_hot_keys must be in [1, 4096], got " + std::to_string(c.max_hot_keys));
        }
        if (c.lanes > max_lanes) fail("lanes must be at most 256, got " + std::to_string(c.lanes));
        if (c.threshold > 0xffffffffULL)
            fail("threshold must be below 2^32, got " + std::to_string(c.threshold));
        salting_config resolved = c;
        if (resolved.lanes == 0) {
            resolved.lanes =
                automatic_lanes(c.partitions, c.max_hot_keys, std::thread::hardware_concurrency());
        }
        return resolved;
    }

    /// How many windows ahead an event must be for its window to need a second event
    /// (enter_window): more than an hour's and more than one.
    [[nodiscard]] auto jump_windows() const noexcept -> std::int64_t {
        const auto window_ms = std::max<std::int64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(m_config.window).count(), 1);
        return std::max<std::int64_t>((3600000 + window_ms - 1) / window_ms, 1);
    }

    /// The window's length in the clock's ticks (validate() made it a whole, positive number).
    [[nodiscard]] auto window_ticks() const noexcept -> std::int64_t {
        return static_cast<std::int64_t>(
            std::chrono::duration_cast<typename Clock::duration>(m_config.window).count());
    }

    /// The window of time t: floor(t / window), in the clock's own ticks (as the lanes cache
    /// the bounds, so both agree on every time, before the epoch too).
    [[nodiscard]] auto window_of(time_point t) const noexcept -> std::int64_t {
        const auto ticks = static_cast<std::int64_t>(t.time_since_epoch().count());
        const std::int64_t len = window_ticks();
        return ticks / len - (ticks % len < 0 ? 1 : 0);
    }

    /// Caches window w's bounds, in clock ticks, in the lane.
    void cache_window(lane& ln, std::int64_t w) const noexcept {
        const std::int64_t len = window_ticks();
        std::int64_t lo = 0;
        std::int64_t hi = 0;
        if (__builtin_mul_overflow(len, w, &lo) || __builtin_add_overflow(lo, len, &hi)) {
            // A window at the ends of the clock's range: an empty cache (see decide_at), every
            // event's window computed.
            lo = std::numeric_limits<std::int64_t>::min();
            hi = lo;
        }
        ln.win_lo.store(lo, std::memory_order_relaxed);
        ln.win_hi.store(hi, std::memory_order_relaxed);
        ln.win_index.store(w, std::memory_order_relaxed);
    }

    /// An event's time in its lane's current window; `late` events (from an earlier window) count
    /// as at its end.
    struct moment {
        const lane* ln;
        std::int64_t ticks;
        bool late;
        [[nodiscard]] auto fraction() const noexcept -> double {
            return late ? 1.0 : position_in(*ln, ticks);
        }
    };

    /// How far into the lane's cached window a time is, in [0, 1]; a time before it is late, at
    /// its end (1).
    [[nodiscard]] static auto position_in(const lane& ln, std::int64_t ticks) noexcept -> double {
        const std::int64_t lo = ln.win_lo.load(std::memory_order_relaxed);
        KEYROUTE_INTERLEAVING_POINT("window_bounds");  // lo read, hi not yet
        const std::int64_t hi = ln.win_hi.load(std::memory_order_relaxed);
        if (!(hi > lo && ticks >= lo)) return 1.0;
        // Differences taken in 64-bit unsigned arithmetic: on the shared lane, an old lo (the
        // empty cache's INT64_MIN, or a window long past) may be read with a new hi, and the
        // signed differences overflowed (undefined behaviour; found by a review of 0.2.10).
        const std::uint64_t into =
            static_cast<std::uint64_t>(ticks) - static_cast<std::uint64_t>(lo);
        const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
        return std::min(static_cast<double>(into) / static_cast<double>(span), 1.0);
    }

    /// The events window w will hold, from the previous window's volume or, without one, from
    /// the events so far and how far into the window `frac` is (steady rates assumed).
    [[nodiscard]] auto expected_total(std::int64_t w, std::uint64_t total,
                                      double frac) const noexcept -> double {
        const std::uint64_t prev = previous_total(w);
        if (prev != 0) return static_cast<double>(std::max(prev, total));
        return static_cast<double>(total) / std::clamp(frac, 1.0 / 64, 1.0);
    }

    /// Moves the router's window forward to `ew` and returns the window the event counts in.
    /// One thread at a time moves it: that thread plans the next window, then publishes it, so
    /// no lane routes in a window whose plan, run counters and reservations are still being
    /// reset. Events of the next window that other threads route meanwhile count in the current
    /// one, as late events (they do not wait: the route path takes no lock).
    ///
    /// A jump of more than an hour and more than one window takes a second event within a
    /// window of the first: the first counts in the current window. Windows never go back, so
    /// one stray time far ahead (a garbage timestamp) would otherwise hold the router in its
    /// window until real time got there, every event counting in it: cold keys added up to the
    /// threshold and were spread (until 0.2.13). After a real gap the second event moves it.
    /// The router's first window is taken as it comes.
    auto enter_window(std::int64_t ew) noexcept -> std::int64_t {
        std::int64_t current = m_window.load(std::memory_order_acquire);
        if (ew <= current) return current;
        std::int64_t far = 0;
        if (current != detail::no_window &&
            !__builtin_add_overflow(current, jump_windows(), &far) && ew > far) {
            // Near: seen - ew in {-1, 0, 1}, computed modulo 2^64 (seen may be far from ew, or
            // no_window).
            const std::int64_t seen = m_jump_to.exchange(ew, std::memory_order_relaxed);
            const std::uint64_t apart =
                static_cast<std::uint64_t>(seen) - static_cast<std::uint64_t>(ew) + 1U;
            if (apart > 2U) return current;
        }
        bool busy = false;
        if (!m_rolling.compare_exchange_strong(busy, true, std::memory_order_acquire)) {
            return current;
        }
        current = m_window.load(std::memory_order_acquire);
        if (ew > current) {
            rollover(current, ew);
            m_window.store(ew, std::memory_order_release);
            current = ew;
        }
        m_rolling.store(false, std::memory_order_release);
        return current;
    }

    void rollover(std::int64_t from, std::int64_t to) noexcept {
        std::uint64_t total = 0;
        std::uint64_t salted = 0;
        if (to == from + 1) {
            const auto parity = static_cast<std::uint64_t>(from) & 1U;
            for (std::uint32_t i = 0; i <= m_lanes; ++i) {
                const lane& ln = m_lane[i];
                const std::int64_t lw = ln.window.load(std::memory_order_relaxed);
                if (lw == from || lw == to) {
                    total += ln.window_events[parity].load(std::memory_order_relaxed);
                    salted += ln.window_salted[parity].load(std::memory_order_relaxed);
                }
            }
        }
        m_prev_total.store(total, std::memory_order_relaxed);
        m_prev_salted.store(salted, std::memory_order_relaxed);
        const auto next = static_cast<std::uint64_t>(to) & 1U;
        // The new window's piece space starts empty, planned or not (after a gap, the count had
        // stayed where the window of that parity before the gap left it).
        m_plan_used[next].store(0, std::memory_order_release);
        if (to == from + 1 && total != 0 && m_fill) plan_window(from, to, total, salted);
        for (std::uint32_t p = 0; p < m_n; ++p) {
            if (m_reserved) m_reserved[next * m_n + p].store(0, std::memory_order_relaxed);
            m_run_load[next * m_n + p].store(0, std::memory_order_relaxed);
        }
        m_prev_window.store(to - 1, std::memory_order_release);
    }

    /// At a window's end, for the next window: (1) the partitions sorted by their *base* load,
    /// what did not come from hot keys (cold keys, and candidates that did not turn hot),
    /// lowest first, and how many lie below the level the hot keys' volume can fill them to:
    /// keys without a plan fill them in that order; (2) a plan for each key that was hot: its
    /// volume water-filled into its home first and then best fit into the partitions with the
    /// most room, so each key keeps to few partitions. The part of a key's volume that will go
    /// home before it turns hot again (it must earn hotness each window) is reserved at home
    /// before any key is placed. Traffic is assumed to change slowly between windows; keys that
    /// turn hot without a plan are planned when they do (plan_now).
    void plan_window(std::int64_t from, std::int64_t to, std::uint64_t total,
                     std::uint64_t salted) noexcept {
        const auto prev = static_cast<std::uint64_t>(from) & 1U;
        const auto next = static_cast<std::uint64_t>(to) & 1U;
        std::uint32_t* base = m_scratch_base.get();
        std::uint32_t* order = m_scratch_order.get();
        for (std::uint32_t p = 0; p < m_n; ++p) {
            const std::uint64_t all = load_of(p, from);
            const std::uint64_t runs = m_run_load[prev * m_n + p].load(std::memory_order_relaxed);
            base[p] = static_cast<std::uint32_t>(
                std::min<std::uint64_t>(all > runs ? all - runs : 0, 0xffffffffU));
            order[p] = p;
        }
        // The keys hot in `from`, with their volume in it. What each sent home before it turned
        // hot is its own volume, not base load of its home: taken out of the base here.
        const double mean = static_cast<double>(total) / static_cast<double>(m_n);
        key_volume* keys = m_scratch_keys.get();
        std::uint32_t k = 0;
        double runs_counted = 0;  // the keys' counts after they turned hot
        double before_sum = 0;
        for (std::uint32_t s = 0; s < m_slots && salted != 0; ++s) {
            const entry& e = m_entries[s];
            if (e.state.load(std::memory_order_acquire) != state_live ||
                e.hot_window.load(std::memory_order_relaxed) != from) {
                continue;
            }
            const auto c = static_cast<double>(exact_count(e, from) + unflushed(s, from) +
                                               estimated_before(e, from));
            const std::uint32_t home = e.home.load(std::memory_order_relaxed);
            double before = 0;
            if (home < m_n) {
                const auto cut = static_cast<std::uint32_t>(std::min<double>(
                    std::min(c, static_cast<double>(events_before_hot(e, from))), base[home]));
                base[home] -= cut;
                before = cut;
            }
            keys[k++] = key_volume{c, s, home, before};
            runs_counted += c - before;
            before_sum += before;
        }
        std::sort(order, order + m_n,
                  [&](std::uint32_t a, std::uint32_t b) { return base[a] < base[b]; });
        std::atomic<std::uint32_t>* fill = m_fill.get() + next * m_n;
        for (std::uint32_t p = 0; p < m_n; ++p) fill[p].store(order[p], std::memory_order_relaxed);
        m_fill_low[next].store(water_count(order, base, static_cast<double>(salted) + before_sum),
                               std::memory_order_relaxed);
        m_fill_window[next].store(to, std::memory_order_release);
        if (k == 0 || runs_counted <= 0) return;

        // Their volume: what they sent home before they turned hot, and their runs (the counts
        // scaled to the runs' exact volume). How much of it will go home next window before the
        // key turns hot again: at least as much as this window, and what the rules predict at
        // its rate (home_before_hot), which matters after a window whose levels were unlike the
        // next one's (a router's first window, whose threshold grows from nothing).
        // The next window's threshold as it starts: from this window's volume.
        const auto next_threshold = static_cast<double>(threshold_for(total));
        double planned = 0;
        for (std::uint32_t i = 0; i < k; ++i) {
            const double before = keys[i].at_home;
            keys[i].volume =
                before + (keys[i].volume - before) * static_cast<double>(salted) / runs_counted;
            planned += keys[i].volume;
            keys[i].at_home = std::min(
                keys[i].volume, std::max(before, home_before_hot(keys[i].volume, next_threshold)));
        }
        // Room below the level that the planned volume fills the base loads to.
        std::uint32_t below = water_count(order, base, planned);
        double level = planned;
        for (std::uint32_t i = 0; i < below; ++i) level += static_cast<double>(base[order[i]]);
        level /= static_cast<double>(below);
        // A little headroom above the exact level lets each key fill fewer, fuller partitions.
        level += plan_headroom * mean;
        double* room = m_scratch_room.get();
        for (std::uint32_t p = 0; p < m_n; ++p) room[p] = level - static_cast<double>(base[p]);
        for (std::uint32_t i = 0; i < k; ++i) {
            if (keys[i].home < m_n) room[keys[i].home] -= keys[i].at_home;
        }
        for (std::uint32_t p = 0; p < m_n; ++p) room[p] = std::max(0.0, room[p]);
        std::sort(keys, keys + k,
                  [](const key_volume& a, const key_volume& b) { return a.volume > b.volume; });
        const double sliver = plan_sliver * mean;
        plan_piece* out = m_plan.get() + next * pieces_per_window();
        std::uint32_t used = 0;
        double* vol = m_scratch_room.get() + m_n;  // one key's piece volumes
        // Home first, for every key before any key goes elsewhere: the key's first events of a
        // window land there anyway, so volume kept home costs no fan-out.
        for (std::uint32_t i = 0; i < k; ++i) {
            const std::uint32_t home = keys[i].home;
            if (home >= m_n) {
                keys[i].at_home = 0;
            } else if (room[home] > sliver) {
                const double more = std::min(room[home], keys[i].volume - keys[i].at_home);
                keys[i].at_home += more;
                room[home] -= more;
            }
        }
        for (std::uint32_t i = 0; i < k && keys[i].volume > 0; ++i) {
            entry& e = m_entries[keys[i].slot];
            double remaining = keys[i].volume;
            const std::uint32_t first = used;
            std::uint32_t pieces = 0;
            const std::uint32_t limit = std::min<std::uint32_t>(m_n, plan_capacity() - used);
            if (limit == 0) break;
            const std::uint32_t home = keys[i].home;
            if (keys[i].at_home > 0) {
                out[first + pieces].partition.store(home, std::memory_order_relaxed);
                vol[pieces++] = keys[i].at_home;
                remaining -= keys[i].at_home;
            }
            // Then best fit: the smallest room that holds the rest, else the largest room.
            while (remaining > sliver && pieces < limit) {
                std::uint32_t fit = no_slot;
                std::uint32_t largest = no_slot;
                for (std::uint32_t p = 0; p < m_n; ++p) {
                    if (room[p] <= sliver) continue;
                    if (room[p] >= remaining && (fit == no_slot || room[p] < room[fit])) fit = p;
                    if (largest == no_slot || room[p] > room[largest]) largest = p;
                }
                const std::uint32_t p = fit != no_slot ? fit : largest;
                if (p == no_slot) break;
                const double x = pieces + 1 == limit ? remaining : std::min(room[p], remaining);
                out[first + pieces].partition.store(p, std::memory_order_relaxed);
                vol[pieces++] = x;
                room[p] = std::max(0.0, room[p] - x);
                remaining -= x;
            }
            if (pieces == 0) {
                out[first].partition = home < m_n ? home : order[0];
                vol[pieces++] = remaining;
            } else if (remaining > 0) {
                vol[pieces - 1] += remaining;  // no room left anywhere: the last piece takes it
            }
            for (std::uint32_t j = 0; j < pieces; ++j) {
                out[first + j].hint.store(
                    static_cast<std::uint32_t>(std::min(vol[j], 4294967295.0)),
                    std::memory_order_relaxed);
            }
            used += pieces;
            e.plan_first.store(first, std::memory_order_relaxed);
            e.plan_pieces.store(pieces, std::memory_order_relaxed);
            e.plan_window.store(to, std::memory_order_release);
        }
        m_plan_used[next].store(used, std::memory_order_release);
    }

    /// A key with a plan from the rollover turned hot: its planned volumes now count as taken,
    /// so that keys planned later in the window look elsewhere.
    void reserve_plan(const entry& e, std::int64_t w) noexcept {
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        const std::uint32_t first = e.plan_first.load(std::memory_order_relaxed);
        const std::uint32_t pieces = e.plan_pieces.load(std::memory_order_relaxed);
        if (std::uint64_t{first} + pieces > pieces_per_window()) return;
        const plan_piece* begin = m_plan.get() + parity * pieces_per_window() + first;
        for (std::uint32_t i = 0; i < pieces; ++i) {
            const std::uint32_t p = begin[i].partition.load(std::memory_order_relaxed);
            if (p < m_n)
                m_reserved[parity * m_n + p].fetch_add(
                    begin[i].hint.load(std::memory_order_relaxed), std::memory_order_relaxed);
        }
    }

    /// A key turned hot in window w without a plan (it was not hot in the window before). Its
    /// volume for the window, at its share so far, is water-filled the way the rollover plans
    /// keys, against each partition's projected load: what cold keys sent so far scaled to the
    /// whole window, plus what hot keys' plans reserved. The pieces are reserved at once, so the
    /// next key planned sees them.
    void plan_now(entry& e, std::int64_t w, std::uint64_t exact, double frac) noexcept {
        if (!m_plan) return;
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        const std::uint64_t total = std::max<std::uint64_t>(window_total(w), 1);
        const std::uint64_t counted = exact + estimated_before(e, w);
        const double share =
            std::min(1.0, static_cast<double>(counted) / static_cast<double>(total));
        const double expected = expected_total(w, total, frac);
        const double scale = expected / static_cast<double>(total);
        const double mean = expected / static_cast<double>(m_n);
        const double level = (1.0 + headroom) * mean;
        const double sliver = 0.05 * mean;
        const std::uint32_t home = e.home.load(std::memory_order_relaxed);
        const auto cold_load = [&](std::uint32_t p) {
            const std::uint64_t all = load_of(p, w);
            const std::uint64_t runs = m_run_load[parity * m_n + p].load(std::memory_order_relaxed);
            return static_cast<double>(all > runs ? all - runs : 0);
        };
        // The key's events so far all went home: they are part of its volume, already placed,
        // not cold load to project over the rest of the window (which would leave home no room
        // and cost the key one more partition).
        const double own =
            home < m_n ? std::min(static_cast<double>(counted), cold_load(home)) : 0.0;
        // An early share is noisy: plan a quarter more room than it suggests.
        double remaining = std::max(0.0, 1.25 * share * expected - own);
        const auto most = static_cast<std::uint32_t>(
            std::min(static_cast<double>(m_n), 4.0 + std::ceil(3.0 * remaining / mean)));
        // Reserve `most` pieces of the window's piece space, or none: the count stays within the
        // space (adding unconditionally, failed plans had grown it without bound until it
        // wrapped, and a wrapped count passed the bounds check).
        std::uint32_t first = m_plan_used[parity].load(std::memory_order_acquire);
        do {
            if (std::uint64_t{first} + most > pieces_per_window())
                return;  // out of piece space: load-driven placement
        } while (!m_plan_used[parity].compare_exchange_weak(first, first + most,
                                                            std::memory_order_acq_rel));
        plan_piece* out = m_plan.get() + parity * pieces_per_window() + first;
        const auto room_of = [&](std::uint32_t p) {
            if (m_down[p].load(std::memory_order_relaxed) != 0) return 0.0;
            const double mine = p == home ? own : 0.0;
            const double projected =
                (cold_load(p) - mine) * scale + mine +
                static_cast<double>(m_reserved[parity * m_n + p].load(std::memory_order_relaxed));
            return std::max(0.0, level - projected);
        };
        std::uint32_t pieces = 0;
        const auto take = [&](std::uint32_t p, double x) {
            out[pieces].partition.store(p, std::memory_order_relaxed);
            out[pieces].hint.store(static_cast<std::uint32_t>(std::min(x, 4294967295.0)),
                                   std::memory_order_relaxed);
            m_reserved[parity * m_n + p].fetch_add(
                static_cast<std::uint32_t>(std::min(x, 4294967295.0)), std::memory_order_relaxed);
            ++pieces;
            remaining -= x;
        };
        if (home < m_n) {
            const double r = room_of(home);
            if (r > sliver) take(home, std::min(r, remaining));
        }
        // A last piece under a tenth of the mean would add a partition for little volume: the
        // pieces taken absorb it instead (runs go to the least loaded of them).
        while (remaining > (pieces == 0 ? sliver : 0.1 * mean) && pieces < most) {
            std::uint32_t fit = no_slot;
            std::uint32_t largest = no_slot;
            double fit_room = 0;
            double largest_room = 0;
            for (std::uint32_t p = 0; p < m_n; ++p) {
                const double r = room_of(p);
                if (r <= sliver) continue;
                if (r >= remaining && (fit == no_slot || r < fit_room)) {
                    fit = p;
                    fit_room = r;
                }
                if (r > largest_room) {
                    largest = p;
                    largest_room = r;
                }
            }
            if (fit != no_slot) {
                take(fit, remaining);
            } else if (largest != no_slot) {
                take(largest, pieces + 1 == most ? remaining : largest_room);
            } else {
                break;
            }
        }
        if (pieces == 0) return;  // no room anywhere: load-driven placement
        e.plan_first.store(first, std::memory_order_relaxed);
        e.plan_pieces.store(pieces, std::memory_order_relaxed);
        e.plan_window.store(w, std::memory_order_release);
    }

    /// How many of its events a key with `volume` events in a window sends home before it turns
    /// hot (each window it must earn hotness again), by the rules of refresh_levels and
    /// confirmed_early at a steady rate: all of them at or below the threshold t; above it, in
    /// automatic mode, about max(t / 16, min_threshold) before the sketch nominates it, then
    /// the count c whose projection, volume * (1 - 4 / sqrt(c)), clears t (at least
    /// 2 * min_threshold, at most t); with an absolute threshold, half of t before admission
    /// and t after.
    [[nodiscard]] auto home_before_hot(double volume, double t) const noexcept -> double {
        if (volume <= t) return volume;
        const auto floor_count = static_cast<double>(m_config.min_threshold);
        if (m_config.threshold != 0) return std::min(volume, 1.5 * t);
        const double gap = 1.0 - t / volume;
        const double confirm = std::min(t, std::max(2.0 * floor_count, 16.0 / (gap * gap)));
        return std::min(volume, std::max(t / 16.0, floor_count) + confirm);
    }

    /// How many of the lowest base loads (in `order`) a volume raises to a common level.
    [[nodiscard]] auto water_count(const std::uint32_t* order, const std::uint32_t* base,
                                   double volume) const noexcept -> std::uint32_t {
        double filled = 0;
        std::uint32_t low = 1;
        for (std::uint32_t i = 1; i < m_n; ++i) {
            filled += static_cast<double>(base[order[i]] - base[order[i - 1]]) * i;
            if (filled > volume) break;
            low = i + 1;
        }
        return low;
    }

    auto my_lane() noexcept -> lane& {
        auto& cache = detail::thread_lane_cache();
        for (const auto& e : cache.entries) {
            if (e.router_uid == m_uid) return m_lane[e.lane];
        }
        // Not in the thread's cache: the lane it claimed here before, if any (a thread that
        // routes through more than four routers is forgotten by its cache; until 0.2.9 it then
        // claimed a new lane, and its events of a key in the middle of an episode were numbered
        // afresh on it, which let the consumer deliver later ones first). The cache's address
        // tells live threads apart.
        const auto me = reinterpret_cast<std::uintptr_t>(&cache);
        std::uint32_t index = m_lanes;
        const std::uint32_t claimed =
            std::min(m_next_lane.load(std::memory_order_relaxed), m_lanes);
        for (std::uint32_t i = 0; i < claimed; ++i) {
            if (m_lane[i].owner.load(std::memory_order_relaxed) == me) {
                index = i;
                break;
            }
        }
        if (index == m_lanes) {
            index = m_next_lane.fetch_add(1, std::memory_order_relaxed);
            if (index >= m_lanes) {
                index = m_lanes;  // the shared overflow lane
                m_next_lane.store(m_lanes, std::memory_order_relaxed);
            } else {
                m_lane[index].owner.store(me, std::memory_order_relaxed);
            }
        }
        auto& victim = cache.entries[cache.next_victim++ % cache.entries.size()];
        victim.router_uid = m_uid;
        victim.lane = index;
        return m_lane[index];
    }

    /// Resets a lane's per-window counters the first time it routes in a new window.
    void observe(lane& ln, std::int64_t w) noexcept {
        const std::int64_t seen = ln.window.load(std::memory_order_relaxed);
        if (seen >= w) return;  // on the shared lane another thread may be a window ahead
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        std::atomic<std::uint32_t>* load = ln.load;
        const bool keep_previous = seen == w - 1;
        for (std::uint64_t par = 0; par < 2; ++par) {
            if (keep_previous && par != parity) continue;
            for (std::uint32_t p = 0; p < m_n; ++p)
                load[par * m_n + p].store(0, std::memory_order_relaxed);
            ln.window_events[par].store(0, std::memory_order_relaxed);
            ln.window_salted[par].store(0, std::memory_order_relaxed);
        }
        // Release: the router was moved to w before (enter_window); a thread that reads this
        // lane's window as w, then (after an acquire fence) the router's window, reads w or
        // later. tracked() relies on it: totals that leave out a lane that moved on are never
        // taken for the router's current window's.
        ln.window.store(w, std::memory_order_release);
    }

    /// This lane's loads in window w ([partition]: events it routed there), or nullptr when it
    /// has not routed in w (all 0). Runs are placed on this lane's own loads: each lane evens
    /// out its own events over a hot key's partitions, so the sum over lanes is even too, and the
    /// route path never reads the counters other threads write (with two threads, every such
    /// read was a cache miss).
    [[nodiscard]] auto own_loads(const lane& ln, std::int64_t w) const noexcept
        -> const std::atomic<std::uint32_t>* {
        if (ln.window.load(std::memory_order_relaxed) != w) return nullptr;  // all 0
        return ln.load + (static_cast<std::uint64_t>(w) & 1U) * m_n;
    }

    /// Events routed to partition p in window w, over all lanes.
    [[nodiscard]] auto load_of(std::uint32_t p, std::int64_t w) const noexcept -> std::uint64_t {
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        std::uint64_t sum = 0;
        for (std::uint32_t i = 0; i <= m_lanes; ++i) {
            const lane& ln = m_lane[i];
            if (ln.window.load(std::memory_order_relaxed) != w) continue;
            sum += ln.load[parity * m_n + p].load(std::memory_order_relaxed);
        }
        return sum;
    }

    /// Events routed, and of them salted, in window w so far, over all lanes.
    void window_totals(std::int64_t w, std::uint64_t& total, std::uint64_t& salted) const noexcept {
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        total = 0;
        salted = 0;
        for (std::uint32_t i = 0; i <= m_lanes; ++i) {
            const lane& ln = m_lane[i];
            if (ln.window.load(std::memory_order_relaxed) == w) {
                total += ln.window_events[parity].load(std::memory_order_relaxed);
                salted += ln.window_salted[parity].load(std::memory_order_relaxed);
            }
        }
    }

    /// Lanes that routed in window w.
    [[nodiscard]] auto active_lanes(std::int64_t w) const noexcept -> std::uint32_t {
        std::uint32_t n = 0;
        for (std::uint32_t i = 0; i <= m_lanes; ++i)
            n += m_lane[i].window.load(std::memory_order_relaxed) == w ? 1U : 0U;
        return n;
    }

    /// Events routed in window w so far, over all lanes.
    [[nodiscard]] auto window_total(std::int64_t w) const noexcept -> std::uint64_t {
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        std::uint64_t sum = 0;
        for (std::uint32_t i = 0; i <= m_lanes; ++i) {
            const lane& ln = m_lane[i];
            if (ln.window.load(std::memory_order_relaxed) == w) {
                sum += ln.window_events[parity].load(std::memory_order_relaxed);
            }
        }
        return sum;
    }

    /// The hot threshold in window w (events of one key in one window).
    [[nodiscard]] auto threshold(std::int64_t w) const noexcept -> std::uint64_t {
        return threshold(w, window_total(w));
    }

    /// The same, given the window's events so far (`total`, as window_total(w) returns them).
    [[nodiscard]] auto threshold(std::int64_t w, std::uint64_t total) const noexcept
        -> std::uint64_t {
        return threshold_for(std::max(previous_total(w), total));
    }

    /// The hot threshold of a window whose volume is taken to be `volume` events: the configured
    /// one, or (automatic mode) auto_fraction of the per-partition mean, at least min_threshold.
    [[nodiscard]] auto threshold_for(std::uint64_t volume) const noexcept -> std::uint64_t {
        if (m_config.threshold != 0) return m_config.threshold;
        const auto t = static_cast<std::uint64_t>(
            m_config.auto_fraction * static_cast<double>(volume) / static_cast<double>(m_n));
        return std::max(t, m_config.min_threshold);
    }

    /// Events in window w - 1, or 0 when that window saw none.
    [[nodiscard]] auto previous_total(std::int64_t w) const noexcept -> std::uint64_t {
        return m_prev_window.load(std::memory_order_acquire) == w - 1
                   ? m_prev_total.load(std::memory_order_relaxed)
                   : 0;
    }

    /// A lane's cached levels for window w, recomputed every `levels_every` of its events and at
    /// each new window, so the route path compares instead of summing counters over lanes.
    auto levels_of(lane& ln, std::int64_t w, const moment& at) noexcept -> const levels& {
        const levels& lv = ln.lv;
        const std::uint64_t seen =
            ln.window_events[static_cast<std::uint64_t>(w) & 1U].load(std::memory_order_relaxed);
        if (lv.window.load(std::memory_order_relaxed) == w &&
            seen < lv.until.load(std::memory_order_relaxed))
            return lv;
        refresh_levels(ln, w, at.fraction(), seen);
        return lv;
    }

    void refresh_levels(lane& ln, std::int64_t w, double frac, std::uint64_t seen) noexcept {
        levels& lv = ln.lv;
        const std::uint64_t total = window_total(w);
        const std::uint64_t t = threshold(w, total);
        // Admission: well above the sketch's background (4 times the average cell), and half the
        // threshold, or (automatic mode) on course to pass it at the key's rate so far.
        // While several lanes route in the window, each counts its own events in its own slice of
        // the sketch, with the weight of `active` lanes (a lane sees about 1 / active of a key's
        // events): the sketch was the one memory all threads wrote on the route path. A slice
        // holds 1 / slices of a row, so its average cell, in weighted counts, is `slices` times
        // the whole row's; the floor stays 4 times the whole row's average (2 times a slice's
        // with two lanes), which still leaves uniform keys untracked: scaled with the slices,
        // it kept keys under a quarter of the mean from ever being tracked with two lanes on
        // 64 partitions. A key that one thread routes more than the others is overestimated
        // in that thread's slice (nominated earlier; the exact count still gates hotness). In
        // the window where a second lane starts, the slices still hold the whole rows' counts:
        // more nominations, for the rest of that window. One lane uses the whole rows.
        const std::uint32_t active = std::max<std::uint32_t>(active_lanes(w), 1);
        const std::uint32_t width = m_sketch_mask + 1U;
        std::uint32_t slices = 1;
        if (active > 1) {
            while (slices < active && width / (2 * slices) >= min_slice_width) slices *= 2;
        }
        const std::uint64_t background = 4 * total / width;
        std::uint64_t admit_level = (t + 1) / 2;
        const projection pr = project(w, total, frac, t);
        if (pr.scale > 0) {
            const double early = static_cast<double>(
                std::max<std::uint64_t>(t / early_divisor, m_config.min_threshold));
            admit_level =
                std::min(admit_level,
                         static_cast<std::uint64_t>(std::max(early, std::ceil(pr.bar / pr.scale))));
        }
        // At most a sketch cell's largest count, where cells saturate: above it no key could be
        // admitted, and a threshold of 2^25 - 1 or more (or a window of more than 2^22 events
        // per sketch column) turned salting off without a word until 0.2.13.
        const std::uint64_t admit = std::min<std::uint64_t>(
            std::max<std::uint64_t>(std::max(admit_level, background), 2), sketch_cell_max);
        lv.admit.store(admit, std::memory_order_relaxed);
        // The sketch is sampled (see sampled()) at a stride that keeps the noise of a weight of
        // stride * active lanes, sqrt(stride * active * admit), under a tenth of the admission
        // level.
        std::uint32_t stride = 1;
        const std::uint32_t max_stride =
            active > 1 ? max_sample_stride : max_sample_stride_one_lane;
        while (stride < max_stride && std::uint64_t{200} * stride * active <= admit) stride *= 2;
        lv.sample_stride.store(stride, std::memory_order_relaxed);
        lv.sample_weight.store(stride * active, std::memory_order_relaxed);
        const std::uint32_t slice_width = width / slices;
        lv.slice_base.store((ln.index & (slices - 1U)) * slice_width, std::memory_order_relaxed);
        lv.slice_mask.store(slice_width - 1U, std::memory_order_relaxed);
        lv.threshold.store(t, std::memory_order_relaxed);
        lv.scale.store(pr.scale, std::memory_order_relaxed);
        lv.bar.store(pr.bar, std::memory_order_relaxed);
        lv.until.store(seen + levels_every, std::memory_order_relaxed);
        lv.window.store(w, std::memory_order_relaxed);
    }

    /// Automatic mode: `count` events so far are enough to call the key hot early when, at its
    /// share of the window so far, it will end the window above the threshold by 4 standard
    /// deviations of that projection (a count of c has a relative error of about 1 / sqrt(c)
    /// when events arrive at a steady rate). So a key that ends below the threshold is split
    /// about once in 30,000 windows, and a key well above it turns hot after a few hundred
    /// events instead of a threshold's worth.
    [[nodiscard]] auto confirmed_early(std::uint64_t count, const levels& lv) const noexcept
        -> bool {
        return projects_above(count, lv.scale.load(std::memory_order_relaxed),
                              lv.bar.load(std::memory_order_relaxed));
    }

    /// Automatic mode: the factor from a window's events so far to its expected volume (0: no
    /// projection, with an absolute threshold or no events yet), and the level projections are
    /// held to: the threshold t, or in a first window, where the threshold so far follows the
    /// events so far, the one the expected volume gives.
    struct projection {
        double scale;
        double bar;
    };
    [[nodiscard]] auto project(std::int64_t w, std::uint64_t total, double frac,
                               std::uint64_t t) const noexcept -> projection {
        projection pr{0.0, static_cast<double>(t)};
        if (m_config.threshold == 0 && total != 0) {
            const double expected = expected_total(w, total, frac);
            pr.scale = expected / static_cast<double>(total);
            pr.bar = std::max(pr.bar, m_config.auto_fraction * expected / static_cast<double>(m_n));
        }
        return pr;
    }

    /// confirmed_early's test: `count` scaled to the window, less 4 standard deviations, clears
    /// `bar`.
    [[nodiscard]] auto projects_above(std::uint64_t count, double scale, double bar) const noexcept
        -> bool {
        if (scale <= 0 || count < 2 * m_config.min_threshold) return false;
        const auto c = static_cast<double>(count);
        return c * scale * (1.0 - 4.0 / std::sqrt(c)) >= bar;
    }

    /// The check of the lane's cached levels (threshold, confirmed_early) redone with the
    /// window's totals now, before a key turns hot. The cache is refreshed every levels_every of
    /// the lane's own events, and meanwhile other lanes may route many more: a projection scaled
    /// from a total several times too small (a lane that started the window alone) would call
    /// a key hot that ends it cold. Only runs when the cached check passes.
    [[nodiscard]] auto hot_now(std::uint64_t count, std::int64_t w, const moment& at) const noexcept
        -> bool {
        const std::uint64_t total = window_total(w);
        const std::uint64_t t = threshold(w, total);
        if (count > t) return true;
        const projection pr = project(w, total, at.fraction(), t);
        return projects_above(count, pr.scale, pr.bar);
    }

    /// Whether this untracked event updates the sketch, and with what weight (0: it does not).
    /// While the admission level is low every event counts, with the weight of the active lanes
    /// (1 for one lane; with several each counts in its own slice, see refresh_levels); above
    /// it, one event in `sample_stride` on average counts with
    /// `sample_stride` times that weight, at gaps drawn at random from
    /// [1, 2 * stride - 1] so that no periodic pattern of keys can hide from the sample. The
    /// estimates keep their expectation (but for the one gap per lane that straddles a change of
    /// stride, a few times a window, which ends with the new weight); what sampling adds is
    /// noise of about sqrt(weight * count), under a tenth of the admission level by construction
    /// of the stride (see refresh_levels), and the exact count after admission gates hotness as
    /// before. It spares most cold events the two sketch cells.
    auto sampled(lane& ln, const levels& lv) noexcept -> std::uint32_t {
        const std::uint32_t stride = lv.sample_stride.load(std::memory_order_relaxed);
        if (stride <= 1) return lv.sample_weight.load(std::memory_order_relaxed);
        const std::uint32_t left = ln.sample_left.load(std::memory_order_relaxed);
        if (left > 1) {
            ln.sample_left.store(left - 1, std::memory_order_relaxed);
            detail::bump(ln.skipped, std::uint64_t{1}, ln.shared);
            return 0;
        }
        std::uint64_t r = ln.rng.load(std::memory_order_relaxed);
        r = detail::mix64(r + 0x9e3779b97f4a7c15ULL);
        ln.rng.store(r, std::memory_order_relaxed);
        ln.sample_left.store(1 + static_cast<std::uint32_t>(r % (2 * stride - 1)),
                             std::memory_order_relaxed);
        if (left == 1) return lv.sample_weight.load(std::memory_order_relaxed);
        detail::bump(ln.skipped, std::uint64_t{1}, ln.shared);  // the lane's first sampled event
        return 0;
    }

    /// Conservative-update Count-Min: raises each of the key's cells to at least its smallest
    /// plus `weight` (with weight 1: adds 1 to the smallest cells); returns the new estimate.
    /// Cells hold (window & 0xff) << 24 | count, so a cell from an older window reads 0.
    auto sketch_add(std::uint64_t h, std::int64_t w, std::uint32_t weight,
                    const levels& lv) noexcept -> std::uint32_t {
        const auto tag = static_cast<std::uint32_t>(static_cast<std::uint64_t>(w) & 0xffU) << 24U;
        const std::uint32_t base = lv.slice_base.load(std::memory_order_relaxed);
        KEYROUTE_INTERLEAVING_POINT("sketch_slice");  // the slice's base read, its mask not yet
        const std::uint32_t mask = lv.slice_mask.load(std::memory_order_relaxed);
        // On the shared lane another thread may be refreshing the levels between the two loads:
        // a new slice's base with the old, whole-row mask ran past the sketch (AddressSanitizer,
        // test_stress's slot churn, keyroute 0.2.9). A slice never crosses its row's end, so
        // `& m_sketch_mask` changes nothing for a consistent pair and keeps a torn one in its row.
        std::atomic<std::uint32_t>& a =
            m_sketch[(base + static_cast<std::uint32_t>(h & mask)) & m_sketch_mask];
        std::atomic<std::uint32_t>& b =
            m_sketch[(m_sketch_mask + 1U) +
                     ((base + static_cast<std::uint32_t>((h >> 32U) & mask)) & m_sketch_mask)];
        const std::uint32_t va = a.load(std::memory_order_relaxed);
        const std::uint32_t vb = b.load(std::memory_order_relaxed);
        const std::uint32_t ca = (va & 0xff000000U) == tag ? va & sketch_cell_max : 0;
        const std::uint32_t cb = (vb & 0xff000000U) == tag ? vb & sketch_cell_max : 0;
        const std::uint32_t m = std::min(ca, cb);
        if (m == sketch_cell_max) return m;  // saturated
        const std::uint32_t next = std::min<std::uint32_t>(m + weight, sketch_cell_max);
        // Both cells are written, without a test of which one was the smallest (on skewed keys
        // that branch was mispredicted on about one event in five). Racing threads may lose an
        // increment here; the sketch only nominates candidates.
        a.store(tag | std::max(ca, next), std::memory_order_relaxed);
        b.store(tag | std::max(cb, next), std::memory_order_relaxed);
        return next;
    }

    [[nodiscard]] auto group_of(std::uint64_t fp) const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(fp >> 20U) & m_group_mask;  // fp is mixed
    }

    /// A fingerprint's one-byte tag, never 0 (0 marks an empty slot).
    [[nodiscard]] static constexpr auto tag_of(std::uint64_t fp) noexcept -> std::uint64_t {
        return (fp >> 56U) | 1U;
    }

    /// The live slot holding fp, or no_slot: the group's 8 tags are compared at once (SWAR),
    /// and only the slots whose tag matches are read.
    [[nodiscard]] auto find(std::uint64_t fp) const noexcept -> std::uint32_t {
        constexpr std::uint64_t ones = 0x0101010101010101ULL;
        const std::uint32_t g = group_of(fp);
        const std::uint64_t x =
            m_tags[g / probe_group].load(std::memory_order_acquire) ^ (tag_of(fp) * ones);
        // High bit of each byte that is zero in x (and perhaps of a byte above one): candidates.
        std::uint64_t match = (x - ones) & ~x & (ones << 7U);
        while (match != 0) {
            const auto i = static_cast<std::uint32_t>(__builtin_ctzll(match)) / 8U;
            if (m_fp[g + i].load(std::memory_order_acquire) == fp &&
                m_entries[g + i].state.load(std::memory_order_acquire) == state_live) {
                return g + i;
            }
            match &= match - 1;
        }
        return no_slot;
    }

    void set_tag(std::uint32_t slot, std::uint64_t fp) noexcept {
        std::atomic<std::uint64_t>& word = m_tags[slot / probe_group];
        const unsigned shift = 8U * (slot % probe_group);
        std::uint64_t old = word.load(std::memory_order_relaxed);
        while (!word.compare_exchange_weak(
            old, (old & ~(std::uint64_t{0xff} << shift)) | (tag_of(fp) << shift),
            std::memory_order_acq_rel)) {
        }
    }

    /// A slot is live in window w while its key was admitted or hot in w - 1 or later. Later
    /// than w happens to a lane whose event began in w as the router moved on and another lane
    /// admitted the key or made it hot in a new window: the slot is live for that lane too
    /// (until 0.2.6 it was not, and the lane could admit the key again: a new episode in the
    /// middle of its runs). No entry carries a window after the router's.
    [[nodiscard]] static auto live(const entry& e, std::int64_t w) noexcept -> bool {
        const auto prev = static_cast<std::int64_t>(static_cast<std::uint64_t>(w) - 1U);
        return e.admit_window.load(std::memory_order_relaxed) >= prev ||
               e.hot_window.load(std::memory_order_relaxed) >= prev;
    }

    /// Tracks the key if its estimate truly reaches the admission level and a slot is free.
    /// A candidate that was never spread (not hot in this window or the previous one) sent all
    /// its events home, so it can give its slot to a key with a higher estimate at any time
    /// without breaking order; a key that was spread keeps its slot until it is stale.
    [[nodiscard]] auto reusable(std::uint32_t s, std::uint64_t fp, std::int64_t w,
                                std::uint32_t estimate) const noexcept -> bool {
        const entry& e = m_entries[s];
        const std::uint32_t st = e.state.load(std::memory_order_acquire);
        if (st == state_free) return true;
        if (st != state_live) return false;
        if (m_fp[s].load(std::memory_order_acquire) == fp || !live(e, w)) return true;
        // Spread in w - 1 or later, or admitted after this lane's window.
        const auto prev = static_cast<std::int64_t>(static_cast<std::uint64_t>(w) - 1U);
        const auto next = static_cast<std::int64_t>(static_cast<std::uint64_t>(w) + 1U);
        if (e.hot_window.load(std::memory_order_relaxed) >= prev ||
            e.admit_window.load(std::memory_order_relaxed) >= next)
            return false;
        // Its events so far this window: counted since admission, estimated before.
        const std::uint64_t c = exact_count(e, w) + estimated_before(e, w);
        return 2 * c < estimate;
    }

    auto admit(lane& ln, std::string_view key, std::uint64_t fp, std::uint32_t home, std::int64_t w,
               std::uint32_t estimate, std::uint32_t preferred) noexcept -> std::uint32_t {
        // Another lane may have admitted the key since this lane's find() missed it (a thread
        // paused in between): the key is tracked, its episode going on. Until 0.2.12 this lane
        // claimed its slot again (a matching fingerprint made it reusable), and the new episode
        // sent the other lanes' next events home as its first, ahead of their runs of the first
        // episode. Two lanes claiming the key at the same instant still take a slot each (find()
        // skips a slot being claimed): see the file comment.
        if (const std::uint32_t found = find(fp); found != no_slot && live(m_entries[found], w))
            return found;
        const std::uint32_t g = group_of(fp);
        for (std::uint32_t i = 0; i <= probe_group; ++i) {
            // The key's own stale slot first, then the group in order.
            const std::uint32_t s = i == 0 ? preferred : g + i - 1;
            if (s == no_slot || (i > 0 && s == preferred) || !reusable(s, fp, w, estimate))
                continue;
            entry& e = m_entries[s];
            std::uint32_t st = e.state.load(std::memory_order_acquire);
            if ((st != state_free && st != state_live) ||
                !e.state.compare_exchange_strong(st, state_claiming, std::memory_order_acq_rel)) {
                continue;
            }
            // Lanes tell a slot's episodes apart by 24 bits of the episode number: a lane whose
            // state for the slot still carries the new episode's tag (it last routed the slot's
            // key exactly 2^24 admissions ago, or a multiple) would continue that sequence
            // instead of starting from 0. Such a lane's word gets another tag. No other lane's
            // state is touched: a lane may be routing the slot's previous key right now.
            const std::uint64_t episode = m_admissions.fetch_add(1, std::memory_order_relaxed) + 1;
            // The slot names no episode while it changes hands (0 is never one): a lane that
            // reads the new fingerprint (m_fp's release below) reads 0 or the new episode, never
            // the one before, so tracked() can tell an A -> B -> A change of the slot from
            // "still A" (it checks that the episode it read is still there after the fingerprint).
            e.episode.store(0, std::memory_order_relaxed);
            // Every write below is ordered after the zero: a lane that reads one of them (the
            // new key's count, stride or home, or these resets) and then, after an acquire
            // fence, the episode, reads 0 or the new one, never the previous key's (tracked()).
            std::atomic_thread_fence(std::memory_order_release);
            // Before the new episode is published: a lane whose episode check passes reads
            // them as the new key's, never as the slot's previous key's.
            e.plan_window.store(detail::no_window, std::memory_order_relaxed);
            e.hot_window.store(detail::no_window, std::memory_order_relaxed);
            for (std::uint32_t l = 0; l <= m_lanes; ++l) {
                std::atomic<std::uint64_t>& word =
                    m_slot_state[std::size_t{l} * m_slots + s].seq_word;
                // A compare-and-swap: a plain store could wipe a number the lane took meanwhile.
                // The shared lane's word is also retagged when its tag looks later than the new
                // episode's (tracked() would then send every event of the episode home unstamped):
                // no episode of the slot in flight is later, so such a word is stale (its initial
                // 0 once episodes pass 2^23, or a tag left 2^23 or more admissions ago).
                std::uint64_t v = word.load(std::memory_order_relaxed);
                for (;;) {
                    const std::uint64_t ahead = tag_ahead(v, tag24(episode));
                    if (ahead != 0 && (l != m_lanes || ahead >= 0x800000U)) break;
                    if (word.compare_exchange_weak(v, tag24(episode ^ 0x800000U),
                                                   std::memory_order_relaxed))
                        break;
                }
            }
            m_fp[s].store(fp, std::memory_order_release);
            set_tag(s, fp);
            e.episode.store(episode, std::memory_order_release);  // after m_fp: see tracked()
            std::uint32_t stride =
                1 + static_cast<std::uint32_t>((fp >> 7U) % std::max<std::uint32_t>(1, m_n - 1));
            while (detail::gcd32(stride, m_n) != 1) ++stride;
            e.stride.store(stride % m_n == 0 ? 1 : stride, std::memory_order_relaxed);
            e.count_word.store(tag24(static_cast<std::uint64_t>(w)), std::memory_order_relaxed);
            e.admit_estimate.store(estimate, std::memory_order_relaxed);
            e.home.store(home, std::memory_order_relaxed);
            e.admit_window.store(w, std::memory_order_relaxed);
            e.key_len.store(
                static_cast<std::uint32_t>(std::min<std::size_t>(key.size(), 0xffffffffU)),
                std::memory_order_relaxed);
            char buf[key_prefix_bytes] = {};
            std::memcpy(buf, key.data(), std::min(key.size(), key_prefix_bytes));
            for (std::size_t k = 0; k < key_words; ++k) {
                std::uint64_t word = 0;
                std::memcpy(&word, buf + 8 * k, 8);
                e.key_word[k].store(word, std::memory_order_relaxed);
            }
            e.state.store(state_live, std::memory_order_release);
            return s;
        }
        detail::bump(ln.refused, std::uint64_t{1}, ln.shared);
        return no_slot;
    }

    /// Events of slot s in window w that lanes counted and have not flushed to its entry yet, for
    /// the key the slot holds: a lane's pending events count only if its sequence word is in the
    /// slot's episode (a lane resets them at its first event of a new episode). Until 0.2.12 a
    /// lane's unflushed events of the slot's previous key, in the same window, counted as the
    /// new key's (in stats() and in the rollover's volumes) until that lane routed the new key.
    [[nodiscard]] auto unflushed(std::uint32_t s, std::int64_t w) const noexcept -> std::uint64_t {
        const std::uint64_t tag = tag24(m_entries[s].episode.load(std::memory_order_acquire));
        std::uint64_t sum = 0;
        for (std::uint32_t i = 0; i <= m_lanes; ++i) {
            const slot_state& ss = m_slot_state[std::size_t{i} * m_slots + s];
            if ((ss.seq_word.load(std::memory_order_acquire) & ~seq_mask) != tag) continue;
            sum += pending_in(ss.pending.load(std::memory_order_relaxed), w);
        }
        return sum;
    }

    /// How many episodes the tag of a lane's sequence word is after `tag`, modulo 2^24 (0: the
    /// same episode; 2^23 and above: an earlier one, episodes in flight being far closer).
    [[nodiscard]] static constexpr auto tag_ahead(std::uint64_t word, std::uint64_t tag) noexcept
        -> std::uint64_t {
        return ((word - tag) >> seq_bits) & 0xffffffU;
    }

    /// Whether a lane's sequence word already counts a later episode of the slot than `tag`
    /// (the shared lane: another thread went on with a new key's).
    [[nodiscard]] static constexpr auto later_episode(std::uint64_t word,
                                                      std::uint64_t tag) noexcept -> bool {
        const std::uint64_t ahead = tag_ahead(word, tag);
        return ahead != 0 && ahead < 0x800000U;
    }

    /// A tag (an episode, a window) in the top 24 bits of a word whose low 40 bits count.
    [[nodiscard]] static constexpr auto tag24(std::uint64_t v) noexcept -> std::uint64_t {
        return (v & 0xffffffU) << seq_bits;
    }

    /// The key's events in window w when it turned hot in w (0 if it did not): what it sent home
    /// before its runs.
    [[nodiscard]] static auto events_before_hot(const entry& e, std::int64_t w) noexcept
        -> std::uint64_t {
        const std::uint64_t word = e.hot_at.load(std::memory_order_relaxed);
        return (word & ~seq_mask) == tag24(static_cast<std::uint64_t>(w)) ? word & seq_mask : 0;
    }

    /// The key's flushed exact count in window w (lanes add theirs every flush_every events).
    [[nodiscard]] static auto exact_count(const entry& e, std::int64_t w) noexcept
        -> std::uint64_t {
        const std::uint64_t word = e.count_word.load(std::memory_order_relaxed);
        return (word & ~seq_mask) == tag24(static_cast<std::uint64_t>(w)) ? word & seq_mask : 0;
    }

    /// Adds a lane's n events of window w to the key's count and returns the count, or drops
    /// them if the count holds a later window, one the router has moved to since the lane's
    /// event began (the lane routed it as the router moved on): window w's count is then
    /// complete, and the later one is not w's.
    auto add_count(entry& e, std::int64_t w, std::uint64_t n) noexcept -> std::uint64_t {
        const std::uint64_t tag = tag24(static_cast<std::uint64_t>(w));
        std::uint64_t old = e.count_word.load(std::memory_order_acquire);
        std::uint64_t next = 0;
        do {
            if ((old & ~seq_mask) == tag) {
                next = tag | std::min((old & seq_mask) + n, seq_mask);
            } else {
                // A lane that wrote a later window's count had seen the router there, and this
                // load sees at least that (the acquire above, or the compare-and-swap's).
                const std::int64_t now = m_window.load(std::memory_order_acquire);
                const std::uint64_t ahead =
                    ((old >> seq_bits) - static_cast<std::uint64_t>(w)) & 0xffffffU;
                if (now > w && ahead != 0 &&
                    ahead <= static_cast<std::uint64_t>(now) - static_cast<std::uint64_t>(w))
                    return 0;
                next = tag | std::min(n, seq_mask);  // an earlier window's count, or none
            }
        } while (!e.count_word.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                                     std::memory_order_acquire));
        return next & seq_mask;
    }

    /// The sketch's estimate of the key's events in window w before it was admitted (0 unless
    /// it was admitted in w).
    [[nodiscard]] static auto estimated_before(const entry& e, std::int64_t w) noexcept
        -> std::uint64_t {
        return e.admit_window.load(std::memory_order_relaxed) == w
                   ? e.admit_estimate.load(std::memory_order_relaxed)
                   : 0;
    }

    /// A lane's pending count word (window << 32 | events): its events if it belongs to window
    /// w, else 0 (events of an earlier window never count towards this one).
    [[nodiscard]] static constexpr auto pending_in(std::uint64_t word, std::int64_t w) noexcept
        -> std::uint32_t {
        return (word >> 32U) == (static_cast<std::uint64_t>(w) & 0xffffffffU)
                   ? static_cast<std::uint32_t>(word)
                   : 0U;
    }

    /// A lane's first event of an episode (the slot may have held another key): the lane starts
    /// from nothing pending and no run. False if the episode is over on the lane: on the shared
    /// lane another thread may already count a later episode of the slot (a new key's, see the
    /// stamp in tracked()), and the event goes home unstamped before it touches the lane's
    /// counts. Until 0.2.12 it reset them first, wiping up to 255 of the new key's unflushed
    /// events and its run. Out of line: inlined, tracked() cost 1 to 2 more instructions per
    /// event on every trace (callgrind).
    [[gnu::noinline]] static auto begin_episode(const lane& ln, slot_state& ss,
                                                std::uint64_t lane_word,
                                                std::uint64_t episode_tag) noexcept -> bool {
        if (ln.shared && later_episode(lane_word, episode_tag)) return false;
        ss.pending.store(0, std::memory_order_relaxed);
        ss.run_word.store(0, std::memory_order_relaxed);
        return true;
    }

    /// The decision for a tracked key: count it exactly, stamp it, and place it if it is hot.
    /// Inlined into decide(): the call's register saves and restores were about 20 of the 400
    /// instructions a hot key's event cost (callgrind, keyroute 0.2.1).
    [[gnu::always_inline]] void tracked(lane& ln, std::string_view key, std::uint32_t slot,
                                        std::uint64_t fp, std::int64_t w, const moment& at,
                                        const levels& lv, route_decision& d) noexcept {
        entry& e = m_entries[slot];
        slot_state& ss = m_slot_state[std::size_t{ln.index} * m_slots + slot];
        KEYROUTE_INTERLEAVING_POINT("tracked");  // the key's slot found, live
        // The episode is the key's only if the slot held the key's fingerprint after the episode
        // was published and the episode was still there after that (a seqlock on the episode:
        // admit() sets it to 0 before the new fingerprint and to the new episode after it).
        // Checked before the lane takes a sequence number: an event whose slot changed hands
        // goes home unstamped and takes none, on the shared lane too, and an event of a key
        // whose slot went to another key and back is never stamped with the other's episode.
        // Whether the key is hot is read inside the check, so it is this key's: until 0.2.11 it
        // was read after, and an event of a candidate whose slot went to a hot key meanwhile
        // was placed as that key's, off home, though the candidate, evicted, sends its next
        // events home unstamped (a consumer could deliver those first). The placement is
        // checked too (below).
        const std::uint64_t episode = e.episode.load(std::memory_order_acquire);
        KEYROUTE_INTERLEAVING_POINT("tracked_episode");  // the episode read, not yet checked
        // Acquire: had another key's turning hot (a release) been read, its episode would be.
        bool hot = e.hot_window.load(std::memory_order_acquire) == w;
        if (__builtin_expect(episode == 0 || m_fp[slot].load(std::memory_order_acquire) != fp ||
                                 e.episode.load(std::memory_order_relaxed) != episode,
                             0)) {
            d.partition = unplaced(d.home, key);
            return;
        }
        KEYROUTE_INTERLEAVING_POINT("tracked_checked");  // the episode checked, no number taken
        const std::uint64_t episode_tag = tag24(episode);
        const std::uint64_t lane_word = ss.seq_word.load(std::memory_order_relaxed);
        if (__builtin_expect((lane_word & ~seq_mask) != episode_tag, 0) &&
            !begin_episode(ln, ss, lane_word, episode_tag)) {
            d.partition = unplaced(d.home, key);
            return;
        }

        // Exact count, flushed to the shared entry every few events so that threads sharing a
        // hot key do not fight over one cache line.
        // The pending count is tagged with its window (see pending_in).
        const std::uint64_t window_tag = static_cast<std::uint64_t>(w) << 32U;
        const auto in_window = [w](std::uint64_t word) { return pending_in(word, w); };
        const std::uint32_t pending = in_window(ss.pending.load(std::memory_order_relaxed)) + 1;
        // 0 when the key is already hot and no flush was due: the shared count line is then not
        // read on every event (with threads sharing the key, each read would miss the cache).
        std::uint64_t counted = 0;
        if (pending >= (hot ? flush_every_hot : flush_every)) {
            const std::uint32_t n =
                ln.shared
                    ? in_window(ss.pending.exchange(window_tag, std::memory_order_relaxed)) + 1
                    : pending;
            if (!ln.shared) ss.pending.store(window_tag, std::memory_order_relaxed);
            counted = add_count(e, w, n);
        } else {
            if (!ln.shared) {
                ss.pending.store(window_tag | pending, std::memory_order_relaxed);
            } else {
                std::uint64_t old = ss.pending.load(std::memory_order_relaxed);
                while (!ss.pending.compare_exchange_weak(old, window_tag | (in_window(old) + 1U),
                                                         std::memory_order_relaxed)) {
                }
            }
            if (!hot) counted = exact_count(e, w) + pending;
        }

        if (!hot) {
            // Never in a window the router has left: a lane still in it (its event began before
            // the move) sums the window's events without the lanes that moved on, so its
            // levels refreshed then (automatic mode) put the threshold as low as min_threshold,
            // and until 0.2.11 such an event could split a cold candidate.
            if ((counted > lv.threshold.load(std::memory_order_relaxed) ||
                 confirmed_early(counted, lv)) &&
                hot_now(counted, w, at) &&
                (std::atomic_thread_fence(std::memory_order_acquire),
                 m_window.load(std::memory_order_relaxed) == w)) {
                // One thread turns the key hot; without a plan from the rollover, it makes one.
                // Only forward: a lane behind the router must not take back a later window's.
                std::int64_t seen = e.hot_window.load(std::memory_order_relaxed);
                const std::int64_t before = seen;
                const bool turned = seen < w && e.hot_window.compare_exchange_strong(
                                                    seen, w, std::memory_order_acq_rel);
                // The count read since the episode check may be another key's, the slot having
                // changed hands (until 0.2.11 this event could then turn that key hot on both
                // keys' counts, and plan it): the episode is checked again, after the fence
                // (admit() orders every write of a hand-over after zeroing it). If it changed,
                // the turning is taken back, unless another lane moved the hot window since.
                std::atomic_thread_fence(std::memory_order_acquire);
                hot = e.episode.load(std::memory_order_relaxed) == episode;
                if (turned && !hot) {
                    seen = w;
                    e.hot_window.compare_exchange_strong(seen, before, std::memory_order_relaxed);
                } else if (turned) {
                    e.hot_at.store(
                        tag24(static_cast<std::uint64_t>(w)) |
                            std::min<std::uint64_t>(counted + estimated_before(e, w), seq_mask),
                        std::memory_order_relaxed);
                    if (e.plan_window.load(std::memory_order_acquire) == w) {
                        reserve_plan(e, w);
                    } else {
                        plan_now(e, w, counted, at.fraction());
                    }
                }
            }
        }
        if (hot) {
            const std::uint32_t part = continue_run(ln, ss, w);
            d.partition = part != no_slot ? part : place(ln, ss, e, w, counted, d.home);
            d.salted = true;
            KEYROUTE_INTERLEAVING_POINT("hot_placed");  // placed, the episode not checked again
            // The placement read the entry (its plan, stride, home): a key hot in w keeps its
            // slot through w + 1, but a router that moved two windows on (event times may jump)
            // may have given it to another key since the check, whose state was read then. The
            // episode is checked again: if it changed, the event goes home, stamped (until
            // 0.2.11 it went to the other key's partitions, and this lane's next event of the
            // key, home and unstamped, could be delivered first).
            std::atomic_thread_fence(std::memory_order_acquire);
            if (__builtin_expect(e.episode.load(std::memory_order_relaxed) != episode, 0)) {
                d.partition = unplaced(d.home, key);
                d.salted = false;
            }
        } else {
            d.partition = unplaced(d.home, key);
        }

        // The stamp: (producer, lane, episode, sequence), the sequence restarting with each
        // episode. A lane's numbers of one episode end at seq_mask - 1 (2^40 - 2): that event
        // goes home, like the last of an episode that cools, and the lane's later events of the
        // episode go home unstamped (until 0.2.13 the number wrapped to 0, and a resequencer
        // dropped every later event of the episode as a duplicate). The word then holds
        // seq_mask, which no event takes.
        const std::uint64_t tag = episode_tag;
        std::uint64_t old = ss.seq_word.load(std::memory_order_relaxed);
        std::uint64_t seq = (old & ~seq_mask) == tag ? old & seq_mask : 0;
        if (!ln.shared) {
            // One test for three rare numbers: 0, the last (seq_mask - 1), none left (seq_mask).
            if (__builtin_expect(seq - 1 >= seq_mask - 2, 0)) {
                d.partition = unplaced(d.home, key);
                if (seq == seq_mask) {
                    d.salted = false;
                    return;
                }
            }
            // Release: unflushed() reads the lane's pending events after the tag (acquire).
            ss.seq_word.store(tag | (seq + 1), std::memory_order_release);
        } else {
            // On the shared lane another thread may already count a later episode of the slot
            // (a new key's): this event's episode is then over on the lane, and restarting it
            // would repeat sequences of both. Episodes in flight differ by far less than 2^23.
            // Over as well when the lane's numbers are used up (seq_mask).
            for (;;) {
                seq = (old & ~seq_mask) == tag ? old & seq_mask : 0;
                if (later_episode(old, tag) || __builtin_expect(seq == seq_mask, 0)) {
                    d.partition = unplaced(d.home, key);
                    d.salted = false;
                    return;
                }
                if (ss.seq_word.compare_exchange_weak(
                        old, tag | (seq + 1), std::memory_order_release, std::memory_order_relaxed))
                    break;
            }
            if (__builtin_expect(seq == 0 || seq == seq_mask - 1, 0)) {
                d.partition = unplaced(d.home, key);
            }
        }
        // (Both branches above.) The lane's sequence 0 of the episode goes where the key's
        // unstamped events go, after the lane's earlier events of the key there (the
        // resequencer's contract), even when the key is hot (another lane made it so, or this
        // event did), or that partition is down. Until 0.2.11 a lane joining a hot key placed it
        // in a run off home, and a consumer could deliver it before those. On the shared lane,
        // whichever thread took 0. The lane's last number goes home as well, as the last event
        // of an episode that cools does.
        // The slot may have been handed to another key since the check after the placement:
        // the stamp (this key's episode and number) orders the event. (Until 0.2.6 such an event
        // went home unstamped, after taking a number: the episode's number on the lane then had
        // a gap.)
        d.stamp.producer = m_config.producer_id;
        d.stamp.lane = static_cast<std::uint16_t>(ln.index);
        d.stamp.episode = episode;
        d.stamp.sequence = seq;
        d.stamp.salted = d.salted;
    }

    /// Where a hot key's event goes while its current run lasts: the run's partition (one event
    /// taken from the run), or no_slot when the run is over or its partition is unavailable.
    /// A run never outlives its window: the next window places the key afresh.
    auto continue_run(const lane& ln, slot_state& ss, std::int64_t w) const noexcept
        -> std::uint32_t {
        const auto tag = static_cast<std::uint64_t>(w) & 0xffU;
        std::uint64_t run = ss.run_word.load(std::memory_order_relaxed);
        while (run_goes_on(run, tag)) {
            const auto part = static_cast<std::uint32_t>(run >> 32U);
            if (!ln.shared) {
                ss.run_word.store(run - 1, std::memory_order_relaxed);
                return part;
            }
            if (ss.run_word.compare_exchange_weak(run, run - 1, std::memory_order_relaxed))
                return part;
        }
        return no_slot;
    }

    /// Whether a run word, partition (32 bits) | window tag (8) | events left (24), has events
    /// left in the window tagged `tag` on an available partition.
    [[nodiscard]] auto run_goes_on(std::uint64_t run, std::uint64_t tag) const noexcept -> bool {
        if ((run & 0xffffffU) == 0 || ((run >> 24U) & 0xffU) != tag) return false;
        const auto part = static_cast<std::uint32_t>(run >> 32U);
        return part < m_n && m_down[part].load(std::memory_order_relaxed) == 0;
    }

    /// Where a hot key's next run goes (continue_run found none): the least-loaded available
    /// partition among the key's plan's pieces or, without a plan, its first f candidates.
    auto place(lane& ln, slot_state& ss, entry& e, std::int64_t w, std::uint64_t counted,
               std::uint32_t home) noexcept -> std::uint32_t {
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        if (e.plan_window.load(std::memory_order_acquire) == w) {
            const std::uint32_t p = planned(ln, e, w);
            if (p != no_slot) {
                return start_run(ln, ss, p, w);
            }
        }
        // Fan-out follows volume. Hot keys fill the room cold keys leave on the `low` partitions
        // at the front of this window's fill order (the previous window's cold loads, lowest
        // first). A key with share s of the traffic, of which a share `spread` is salted, needs
        // about low * s / spread of them; at least 1.25 * s * n and 2. Its pool is a run of that
        // many fill-order positions from a key-specific offset, so keys cover the low partitions
        // evenly and each key keeps to its own few.
        std::uint64_t total = 0;
        std::uint64_t salted = 0;
        window_totals(w, total, salted);
        total = std::max<std::uint64_t>(total, 1);
        if (counted == 0) counted = exact_count(e, w);  // not read on the way here
        const double share = static_cast<double>(counted) / static_cast<double>(total);
        double spread = static_cast<double>(salted) / static_cast<double>(total);
        const std::uint64_t pt = previous_total(w);
        if (pt != 0) {
            spread = std::max(spread,
                              static_cast<double>(m_prev_salted.load(std::memory_order_relaxed)) /
                                  static_cast<double>(pt));
        }
        // A key tracked since the last window can count more events than the window has routed
        // so far (share > 1): std::clamp(spread, share, 1.0) was then undefined (an abort under
        // _GLIBCXX_ASSERTIONS).
        spread = std::min(std::max(spread, share), 1.0);
        const bool ordered = m_fill && m_fill_window[parity].load(std::memory_order_acquire) == w;
        const std::atomic<std::uint32_t>* fill = ordered ? m_fill.get() + parity * m_n : nullptr;
        const std::uint32_t low =
            ordered ? std::max<std::uint32_t>(1, m_fill_low[parity].load(std::memory_order_relaxed))
                    : m_n;
        const auto n = static_cast<double>(m_n);
        const double need = std::max(1.25 * share * n, static_cast<double>(low) * share / spread);
        // At least 2 partitions, but never more than there are (with one partition, clamp's
        // bounds were 2 and 1: undefined).
        const auto f = static_cast<std::uint32_t>(std::clamp(std::ceil(need), std::min(2.0, n), n));
        const std::uint32_t span = std::max(low, f);
        const auto offset = static_cast<std::uint32_t>(
            detail::mix64(e.episode.load(std::memory_order_relaxed)) % span);
        const std::uint32_t stride = e.stride.load(std::memory_order_relaxed);
        std::uint64_t r = ln.rng.load(std::memory_order_relaxed);
        r = detail::mix64(r + 0x9e3779b97f4a7c15ULL);
        ln.rng.store(r, std::memory_order_relaxed);
        const std::uint32_t scan = std::min(f, max_scan);
        const std::uint32_t start = f <= max_scan ? 0 : static_cast<std::uint32_t>(r % f);
        std::uint32_t best = home;
        std::uint64_t best_load = std::numeric_limits<std::uint64_t>::max();
        const std::atomic<std::uint32_t>* own = own_loads(ln, w);
        for (std::uint32_t i = 0; i < scan; ++i) {
            const std::uint32_t pos = (start + i) % f;
            const std::uint32_t p =
                ordered ? fill[(offset + pos) % span].load(std::memory_order_relaxed)
                        : static_cast<std::uint32_t>((home + std::uint64_t{pos} * stride) % m_n);
            if (m_down[p].load(std::memory_order_relaxed) != 0) continue;
            const std::uint64_t l = own != nullptr ? own[p].load(std::memory_order_relaxed) : 0;
            if (l < best_load) {
                best_load = l;
                best = p;
            }
        }
        if (best_load == std::numeric_limits<std::uint64_t>::max())
            best = least_loaded_available(w, home);
        return start_run(ln, ss, best, w);
    }

    /// Starts a run of the key on partition p with this event and returns where the event goes:
    /// p, or, on the shared lane, the run another thread started since this one found none (the
    /// event joins it, so that two threads do not both count a run of which only one is kept).
    auto start_run(const lane& ln, slot_state& ss, std::uint32_t p, std::int64_t w) noexcept
        -> std::uint32_t {
        const auto tag = static_cast<std::uint64_t>(w) & 0xffU;
        const std::uint64_t word =
            (std::uint64_t{p} << 32U) | (tag << 24U) | (m_config.run_length - 1U);
        if (!ln.shared) {
            ss.run_word.store(word, std::memory_order_relaxed);
        } else {
            std::uint64_t run = ss.run_word.load(std::memory_order_relaxed);
            for (;;) {
                if (run_goes_on(run, tag)) {
                    if (ss.run_word.compare_exchange_weak(run, run - 1, std::memory_order_relaxed))
                        return static_cast<std::uint32_t>(run >> 32U);
                } else if (ss.run_word.compare_exchange_weak(run, word,
                                                             std::memory_order_relaxed)) {
                    break;
                }
            }
        }
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        std::atomic<std::uint32_t>& runs = m_run_load[parity * m_n + p];
        std::uint32_t old = runs.load(std::memory_order_relaxed);
        while (!runs.compare_exchange_weak(
            old, old > 0xffffffffU - m_config.run_length ? 0xffffffffU : old + m_config.run_length,
            std::memory_order_relaxed)) {
        }
        return p;
    }

    /// A planned key's next run: the least-loaded available partition among its plan's pieces
    /// (up to max_scan of them, from a random start), or no_slot if none is available.
    auto planned(lane& ln, const entry& e, std::int64_t w) noexcept -> std::uint32_t {
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        const std::uint32_t first = e.plan_first.load(std::memory_order_relaxed);
        const std::uint32_t pieces = e.plan_pieces.load(std::memory_order_relaxed);
        if (pieces == 0 || first + pieces > pieces_per_window()) return no_slot;
        const plan_piece* begin = m_plan.get() + parity * pieces_per_window() + first;
        std::uint32_t start = 0;
        if (pieces > max_scan) {
            std::uint64_t r = ln.rng.load(std::memory_order_relaxed);
            r = detail::mix64(r + 0x9e3779b97f4a7c15ULL);
            ln.rng.store(r, std::memory_order_relaxed);
            start = static_cast<std::uint32_t>(r % pieces);
        }
        std::uint32_t best = no_slot;
        std::uint64_t best_load = std::numeric_limits<std::uint64_t>::max();
        const std::atomic<std::uint32_t>* own = own_loads(ln, w);
        std::uint32_t at = start;
        for (std::uint32_t i = 0; i < std::min(pieces, max_scan); ++i) {
            const std::uint32_t p = begin[at].partition.load(std::memory_order_relaxed);
            at = at + 1 == pieces ? 0 : at + 1;
            if (p >= m_n || m_down[p].load(std::memory_order_relaxed) != 0) continue;
            const std::uint64_t l = own != nullptr ? own[p].load(std::memory_order_relaxed) : 0;
            if (l < best_load) {
                best_load = l;
                best = p;
            }
        }
        return best;
    }

    [[nodiscard]] auto least_loaded_available(std::int64_t w, std::uint32_t fallback) const noexcept
        -> std::uint32_t {
        std::uint32_t best = fallback;
        std::uint64_t best_load = std::numeric_limits<std::uint64_t>::max();
        for (std::uint32_t p = 0; p < m_n; ++p) {
            if (m_down[p].load(std::memory_order_relaxed) != 0) continue;
            const std::uint64_t l = load_of(p, w);
            if (l < best_load) {
                best_load = l;
                best = p;
            }
        }
        return best;
    }

    /// Where an event the hot-key logic does not place goes: home, unless partitions are down
    /// (then failover decides; one load when none is).
    [[nodiscard]] auto unplaced(std::uint32_t home, std::string_view key) const noexcept
        -> std::uint32_t {
        return m_down_count.load(std::memory_order_relaxed) != 0 ? failover(home, key) : home;
    }

    /// Where a cold key goes when failover is on and its home is unavailable: the available
    /// partition with the highest rendezvous score, so only the unavailable partition's keys move.
    /// The score hashes the key with XXH3, seed 0, whatever the router's secret: every producer
    /// (and the same one after a restart) sends a key to the same partition (until 0.2.9 it used
    /// the router's secret-keyed tracking hash, so two producers agreed on 17% of such keys).
    [[nodiscard]] auto failover(std::uint32_t home, std::string_view key) const noexcept
        -> std::uint32_t {
        if (!m_config.failover_cold_keys || m_down[home].load(std::memory_order_relaxed) == 0)
            return home;
        const std::uint64_t h = xxh3{}(key);
        std::uint32_t best = home;
        std::uint64_t best_score = 0;
        for (std::uint32_t p = 0; p < m_n; ++p) {
            if (m_down[p].load(std::memory_order_relaxed) != 0) continue;
            const std::uint64_t score = detail::mix64(h ^ (0x9e3779b97f4a7c15ULL * (p + 1ULL)));
            if (score >= best_score) {
                best_score = score;
                best = p;
            }
        }
        return best;
    }

    /// decide(key, now)'s body, inlined into decide(key, now) and route(key, now): route() then
    /// keeps the decision in registers (13 to 20 fewer instructions per event, callgrind).
    /// The common case, an event before the end of the window the lane has cached, which is the
    /// router's current one, with the lane's levels fresh for it (so the lane has observed it:
    /// levels are only refreshed after observe), is tested first with four compares; anything
    /// else (a new window, levels due for a refresh every levels_every events) takes
    /// decide_anew, out of line (3 to 8 fewer instructions per event than with all of it inline,
    /// callgrind). An event before the window's start is late: it counts in the window as at
    /// its end (moment::fraction), without the detour.
    [[gnu::always_inline]] auto decide_at(std::string_view key, time_point now) noexcept
        -> route_decision {
        lane& ln = my_lane();
        const auto ticks = static_cast<std::int64_t>(now.time_since_epoch().count());
        const std::int64_t w = ln.win_index.load(std::memory_order_relaxed);
        const levels& lv = ln.lv;
        // An empty cache has lo = hi = INT64_MIN: nothing is before it, everything after it.
        if (ticks >= ln.win_hi.load(std::memory_order_relaxed) ||
            lv.window.load(std::memory_order_relaxed) != w ||
            m_window.load(std::memory_order_acquire) != w ||
            ln.window_events[static_cast<std::uint64_t>(w) & 1U].load(std::memory_order_relaxed) >=
                lv.until.load(std::memory_order_relaxed)) {
            return decide_anew(ln, key, now);
        }
        return decide_in(ln, key, w, moment{&ln, ticks, false}, lv);
    }

    /// decide_at's other cases: the event's window, from the lane's cache of its current
    /// window's bounds (no division unless the window changed), the router's window moved to it
    /// if it is later, the lane's counters and levels brought to the window. Late events count
    /// in the current window, as at its end, and leave the lane's cache on it: a late event
    /// before the cached current window is known late without a division, and the on-time
    /// events around it keep the fast path (the cache had followed each late event back, so
    /// while a producer's times straddled a boundary every event came here with a division).
    [[gnu::noinline]] auto decide_anew(lane& ln, std::string_view key, time_point now) noexcept
        -> route_decision {
        const auto ticks = static_cast<std::int64_t>(now.time_since_epoch().count());
        const std::int64_t cached = ln.win_index.load(std::memory_order_relaxed);
        const std::int64_t lo = ln.win_lo.load(std::memory_order_relaxed);
        std::int64_t event_window = cached;
        bool late = false;
        if (ticks < lo && cached == m_window.load(std::memory_order_acquire)) {
            late = true;  // before the router's current window, whichever window it is in
        } else if (ticks < lo || ticks >= ln.win_hi.load(std::memory_order_relaxed)) {
            event_window = window_of(now);  // always, from an empty cache
        }
        const std::int64_t w = enter_window(event_window);
        late = late || event_window < w;
        // The lane caches the window its on-time events are in: the router's, or a later one
        // while another thread is still moving the router there (those events count as late).
        const std::int64_t keep = late ? w : event_window;
        if (keep != cached) cache_window(ln, keep);
        // How far into the window the event is costs a division: computed only when needed.
        const moment at{&ln, ticks, late || event_window != w};
        observe(ln, w);
        return decide_in(ln, key, w, at, levels_of(ln, w, at));
    }

    /// The decision for `key` in window w, the lane's counters and levels ready for it.
    [[gnu::always_inline]] auto decide_in(lane& ln, std::string_view key, std::int64_t w,
                                          const moment& at, const levels& lv) noexcept
        -> route_decision {
        KEYROUTE_INTERLEAVING_POINT("decide_in");  // the lane's window w is known
        route_decision d;
        std::uint64_t h = 0;
        if constexpr (reuses_base_hash) {
            // The base partitioner hashes to 64 bits: key the tracking hash on it with the secret
            // instead of hashing the key twice (one 128-bit multiply: a full 64-bit finalizer
            // here cost about 6 to 9 more instructions per event). Keys whose full 64-bit base
            // hashes collide share the tracking hash (and its exact count), and they share a
            // partition. XXH3 is not built against crafted collisions: for 16-byte keys one can
            // be solved for directly (a review in 0.2.13 did), so an adversary's events can make
            // another key hot (spread, with stamps: nothing lost). Other pairs share it by
            // chance, about once in 2^64. docs/bad-input.md says to use a 32-bit base then.
            const auto base_hash = m_base.hash(key);
            d.home = m_base.reduce(base_hash);
            h = detail::mul_fold64(base_hash ^ m_secret, m_secret_out);
        } else {
            d.home = m_base.route(key);
            h = m_sketch_hash(key);
        }
        d.partition = d.home;
        const std::uint64_t fp = h | 1U;
        std::uint32_t slot = find(fp);
        if (slot == no_slot || !live(m_entries[slot], w)) {
            const std::uint32_t weight = sampled(ln, lv);
            if (weight != 0) {
                const std::uint32_t estimate = sketch_add(h, w, weight, lv);
                slot = estimate >= lv.admit.load(std::memory_order_relaxed)
                           ? admit(ln, key, fp, d.home, w, estimate, slot)
                           : no_slot;
            } else {
                slot = no_slot;
            }
        }
        if (slot != no_slot) {
            tracked(ln, key, slot, fp, w, at, lv, d);
        } else {
            d.partition = unplaced(d.home, key);
        }
        count(ln, w, d);
        return d;
    }

    void count(lane& ln, std::int64_t w, const route_decision& d) noexcept {
        // One test of `shared` for all the counters (each bump would test it again: the
        // compiler cannot assume the relaxed stores leave it unchanged).
        if (ln.shared) {
            count_as<true>(ln, w, d);
        } else {
            count_as<false>(ln, w, d);
        }
    }

    template <bool shared_lane>
    void count_as(lane& ln, std::int64_t w, const route_decision& d) noexcept {
        const auto parity = static_cast<std::uint64_t>(w) & 1U;
        detail::bump_saturating(ln.load[parity * m_n + d.partition], shared_lane);
        detail::bump(ln.window_events[parity], std::uint64_t{1}, shared_lane);
        detail::bump(ln.routed, std::uint64_t{1}, shared_lane);
        if (d.salted) {
            detail::bump(ln.window_salted[parity], std::uint64_t{1}, shared_lane);
            detail::bump(ln.salted, std::uint64_t{1}, shared_lane);
        }
        if (d.stamp) detail::bump(ln.stamped, std::uint64_t{1}, shared_lane);
    }

    Partitioner m_base;
    salting_config m_config;
    std::uint32_t m_n = 0;
    std::uint64_t m_uid = 0;
    xxh3 m_sketch_hash;
    std::uint64_t m_secret = 0;
    std::uint64_t m_secret_out = 0;
    std::uint32_t m_sketch_mask = 0;
    std::uint32_t m_slots = 0;
    std::uint32_t m_group_mask = 0;  // (m_slots - 1) & ~(probe_group - 1): a group's first slot
    std::uint32_t m_lanes = 0;
    std::unique_ptr<std::atomic<std::uint32_t>[]> m_sketch;
    std::unique_ptr<std::atomic<std::uint64_t>[]> m_fp;
    std::unique_ptr<std::atomic<std::uint64_t>[]> m_tags;  // per probe group: 8 one-byte tags
    std::unique_ptr<entry[]> m_entries;
    std::unique_ptr<lane[]> m_lane;
    std::unique_ptr<std::atomic<std::uint32_t>[]> m_load;
    std::unique_ptr<slot_state[]> m_slot_state;
    std::unique_ptr<std::atomic<std::uint8_t>[]> m_down;
    std::unique_ptr<std::atomic<std::uint32_t>[]>
        m_run_load;  // [parity][partition]: events sent in runs
    std::unique_ptr<std::atomic<std::uint32_t>[]> m_fill;  // [parity][rank]: fill order
    /// One piece of a plan: a partition, and a hint of how it was chosen (the planned volume,
    /// or the partition's load when an in-window plan chose it).
    struct plan_piece {
        std::atomic<std::uint32_t> partition{0};
        std::atomic<std::uint32_t> hint{0};
    };
    /// Pieces per window: every partition once, plus a home and a partial piece per key.
    [[nodiscard]] auto plan_capacity() const noexcept -> std::uint32_t { return m_n + 2 * m_slots; }
    /// Piece space per window: the rollover's plans, then plans made during the window.
    [[nodiscard]] auto pieces_per_window() const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(pieces_for(m_n, m_slots));
    }
    std::unique_ptr<plan_piece[]>
        m_plan;  // [parity][piece]: rollover plans, then plans made in-window
    std::atomic<std::uint32_t> m_plan_used[2] = {};
    std::unique_ptr<std::atomic<std::uint32_t>[]>
        m_reserved;  // [parity][partition]: volume hot keys' plans expect

    // The rollover's working space, allocated once.
    struct key_volume {
        double volume;
        std::uint32_t slot;
        std::uint32_t home;  // the entry's, or >= m_n
        double at_home;      // in turn: sent home before hot in `from`, forecast for `to`, planned
    };
    std::unique_ptr<std::uint32_t[]> m_scratch_base;
    std::unique_ptr<std::uint32_t[]> m_scratch_order;
    std::unique_ptr<double[]> m_scratch_room;
    std::unique_ptr<key_volume[]> m_scratch_keys;
    std::atomic<std::uint32_t> m_fill_low[2] = {};
    std::atomic<std::int64_t> m_fill_window[2] = {detail::no_window, detail::no_window};
    // Read on every event, written once a window.
    alignas(64) std::atomic<std::int64_t> m_window{detail::no_window};
    std::atomic<std::int64_t> m_jump_to{detail::no_window};  // a jump's first window (enter_window)
    std::atomic<bool> m_rolling{false};  // a thread is moving m_window (enter_window)
    std::atomic<std::int64_t> m_prev_window{detail::no_window};
    std::atomic<std::uint64_t> m_prev_total{0};
    std::atomic<std::uint64_t> m_prev_salted{0};
    std::atomic<std::uint32_t> m_down_count{0};
    // Written when a thread first routes or a key is admitted.
    alignas(64) std::atomic<std::uint32_t> m_next_lane{0};
    std::atomic<std::uint64_t> m_admissions{0};
};

}  // namespace keyroute
