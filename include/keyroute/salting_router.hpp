#pragma once

/// @file
/// keyroute::salting_router: every key goes where the base partitioner puts it, except the keys
/// whose volume unbalances the partitions; those are placed, while the window lasts, where the
/// load is lowest, on as few partitions as their volume needs. docs/router.md has the design.
///
/// Per event (no lock, no allocation, memory fixed at construction):
/// 1. the key's home is `Partitioner::route(key)`; its window is `floor(time / window)`;
/// 2. a key that is not tracked goes home. One untracked event in a few is drawn for admission:
///    a key drawn twice in quick succession is tracked (router/key_table.hpp);
/// 3. a tracked key is counted exactly; once its count in this window passes the threshold it
///    may be spread, and goes where the current plan sends it, in runs, each run to the lighter
///    on this thread's counts of two of the plan's pieces (router/plan.hpp);
/// 4. every few thousand events a plan is made from what the window measured so far: each
///    partition's load and each key's rate, with the rest of the window filled to a common
///    level (router/planner.hpp). So a key that turns hot, grows, shrinks or vanishes, a burst,
///    late events: each is seen in the next measurement and corrected by the next plan.
/// Stamps (router/sequencer.hpp) go on the events of a key while it is spread, from its first
/// event placed off home on, and on one event home at each end of such a stretch, so a
/// resequencer can put them back in order; events that are all home need none.
///
/// Threads: one router is shared by all producer threads; each thread claims a lane (its own
/// counters) on its first event and gives it back when it ends. Threads beyond
/// `salting_config::lanes` at once share an overflow lane that sends every event home, until a
/// lane is given back.
///
/// The configuration and its checks are in router/config.hpp, the sizes in router/sizing.hpp,
/// the statistics in router/stats.hpp, the test seams in router/traits.hpp.

#include "detail/clock.hpp"
#include "detail/config.hpp"
#include "detail/mix.hpp"
#include "hash.hpp"
#include "partitioner.hpp"
#include "router/availability.hpp"
#include "router/config.hpp"
#include "router/key_table.hpp"
#include "router/lanes.hpp"
#include "router/plan.hpp"
#include "router/planner.hpp"
#include "router/sequencer.hpp"
#include "router/sizing.hpp"
#include "router/stats.hpp"
#include "router/traits.hpp"
#include "router/window_clock.hpp"
#include "stamp.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace keyroute {

/// The whole routing decision for one event.
struct route_decision {
    std::uint32_t partition = 0;  ///< where to publish
    std::uint32_t home = 0;       ///< the base partitioner's partition for the key
    bool salted = false;          ///< placed by the hot-key logic (it may still equal home)
    keyroute::stamp stamp{};      ///< publish it with the event when `bool(stamp)`
};

/// A load-aware salting router. See the file comment and docs/router.md.
///
/// @tparam Partitioner the static scheme cold keys follow exactly: any partitioner whose route()
///         returns a partition below its partitions() (rendezvous and maglev over an id set other
///         than 0 to n - 1 are refused); with kafka_partitioner, cold keys land where the Java
///         client would put them.
/// @tparam Clock a std::chrono clock with integer ticks; route(key) reads it (cheaply, see
///         detail::cheap_now).
/// @tparam Traits test seams (detail::router_traits); leave the default.
///
/// Thread-safety: every member may be called from any number of threads at once; route() and
/// decide() take no lock and allocate nothing. stats() allocates.
template <class Partitioner = hash_partitioner<>, class Clock = std::chrono::system_clock,
          class Traits = detail::router_traits>
class salting_router {
    static_assert(std::is_integral_v<typename Clock::rep>,
                  "keyroute::salting_router: the clock must count integer ticks (Clock::rep): "
                  "windows are whole numbers of ticks");

public:
    using partitioner_type = Partitioner;
    using clock_type = Clock;
    using time_point = typename Clock::time_point;

    /// The largest partitions, max_hot_keys and lanes a configuration may ask for.
    static constexpr std::uint32_t max_partitions = detail::router_limits::partitions;
    static constexpr std::uint32_t max_tracked_keys = detail::router_limits::tracked_keys;
    static constexpr std::uint32_t max_lanes = detail::router_limits::lanes;
    /// Automatic lanes keep the state within this (see salting_config::lanes).
    static constexpr std::size_t auto_memory_budget = detail::router_sizing<0>::budget;

    /// Builds the router and the base partitioner `Partitioner(config.partitions)`.
    /// @throws std::invalid_argument naming the field for any invalid configuration value.
    explicit salting_router(const salting_config& config)
        : salting_router(config, detail::make_base<Partitioner>(config)) {}

    /// Builds the router around an existing base partitioner.
    /// @throws std::invalid_argument if `base.partitions() != config.partitions`, if the base has
    ///         an id set (`ids()`) with an id not below that count, or any value is invalid.
    salting_router(const salting_config& config, Partitioner base)
        : m_base(detail::checked_base(std::move(base), config)),
          m_config(resolve(detail::checked_config<Clock>(config))),
          m_n(static_cast<std::uint32_t>(m_config.partitions)),
          m_slots(detail::router_sizing<sizeof(salting_router)>::slot_count(m_n,
                                                                            m_config.max_hot_keys)),
          m_secret(detail::mix64(m_config.seed ^ 0x243f6a8885a308d3ULL)),
          m_secret_out(detail::mix64(m_secret) | 1U),
          m_tracking_hash(m_config.seed),
          m_clock(detail::window_ticks<Clock>(m_config.window),
                  detail::jump_windows(m_config.window)),
          m_table(m_slots),
          m_lanes(m_config.lanes, m_n, m_slots, detail::random_nonzero_u64(),
                  detail::mix64(m_secret_out + 0x632be59bd9b4e019ULL), m_config.episode_base),
          m_plans(m_slots, detail::planner::plan_capacity(m_n, m_slots)),
          m_planner(detail::planner_config{m_n, m_slots, m_config.threshold, m_config.auto_fraction,
                                           m_config.min_threshold, m_config.run_length}),
          m_avail(m_n) {}

    salting_router(const salting_router&) = delete;
    auto operator=(const salting_router&) -> salting_router& = delete;

    /// The partition for `key`, reading the clock. Same as `decide(key).partition`.
    [[nodiscard]] auto route(std::string_view key) noexcept -> std::uint32_t {
        return decide_as<false>(key, detail::cheap_now<Clock>());
    }
    /// The partition for `key` at event time `now` (for tests, replays and event-time routing).
    [[nodiscard]] auto route(std::string_view key, time_point now) noexcept -> std::uint32_t {
        return decide_as<false>(key, now);
    }
    /// The whole decision for `key`, reading the clock.
    [[nodiscard]] auto decide(std::string_view key) noexcept -> route_decision {
        return decide_as<true>(key, detail::cheap_now<Clock>());
    }

    /// The whole decision for `key` at event time `now`. A later time than the current window
    /// opens its window (more than an hour ahead, at the second event near it); an earlier time
    /// (a late event, a backlog, a clock set back) counts in the current window.
    [[nodiscard]] auto decide(std::string_view key, time_point now) noexcept -> route_decision {
        return decide_as<true>(key, now);
    }

    /// Marks a partition unavailable (false) or available again (true). Spread keys avoid
    /// unavailable partitions at once, and the next plan places them elsewhere; cold keys keep
    /// their home unless failover_cold_keys is set. Not a barrier: a route already under way on
    /// another thread may still pick the partition.
    /// @throws std::invalid_argument if partition >= partitions.
    void set_available(std::uint32_t partition, bool available) {
        if (partition >= m_n) {
            detail::invalid_argument("keyroute::salting_router::set_available: partition " +
                                     std::to_string(partition) + " is not below partitions (" +
                                     std::to_string(m_n) + ")");
        }
        m_avail.set(partition, available);
    }

    /// True unless set_available(partition, false) is in force.
    [[nodiscard]] auto available(std::uint32_t partition) const noexcept -> bool {
        return partition < m_n && !m_avail.down(partition);
    }

    /// Where an event of `key` goes when the router does not spread it (a cold key): its home,
    /// or, with failover_cold_keys and home unavailable, its failover partition. A query: reads
    /// no clock, counts nothing, changes nothing.
    [[nodiscard]] auto cold_partition(std::string_view key) const noexcept -> std::uint32_t {
        const std::uint32_t home = m_base.route(key);
        return m_avail.any_down() ? failover(home, key) : home;
    }

    /// cold_partition() as a partitioner (a const `route()` and `partitions()`), for
    /// compare_partitioners(): `compare_partitioners(router.base(), router.cold_partitioner(),
    /// keys)` reports which keys the partitions marked unavailable move, and where. It refers
    /// to the router (which must outlive it) and follows set_available() as it changes.
    class cold_view {
    public:
        explicit cold_view(const salting_router& router) noexcept : m_router(&router) {}
        [[nodiscard]] auto route(std::string_view key) const noexcept -> std::uint32_t {
            return m_router->cold_partition(key);
        }
        [[nodiscard]] auto partitions() const noexcept -> std::uint32_t {
            return m_router->partitions();
        }

    private:
        const salting_router* m_router;
    };
    [[nodiscard]] auto cold_partitioner() const noexcept -> cold_view { return cold_view(*this); }

    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t { return m_n; }
    [[nodiscard]] auto config() const noexcept -> const salting_config& { return m_config; }
    [[nodiscard]] auto base() const noexcept -> const Partitioner& { return m_base; }
    /// The producer id this router writes into stamps.
    [[nodiscard]] auto producer_id() const noexcept -> std::uint64_t {
        return m_config.producer_id;
    }

    /// A snapshot of the counters, the current window's loads and the tracked keys. Allocates;
    /// not for the hot path. Each counter is exact at some instant during the call.
    [[nodiscard]] auto stats() const -> salting_stats {
        salting_stats s;
        s.window = m_clock.current();
        const std::uint64_t t = m_planner.threshold(s.window);
        s.threshold = t == detail::planner::unplanned ? 0 : t;
        s.level = m_planner.level();
        s.memory_bytes = memory_bytes();
        detail::gather_stats(s, m_lanes, m_table, m_n);
        return s;
    }

    /// Bytes of state allocated at construction (the router never allocates after it).
    [[nodiscard]] auto memory_bytes() const noexcept -> std::size_t {
        return state_bytes(m_n, m_config.max_hot_keys, m_config.lanes);
    }

    /// The bytes of state a router with `partitions`, `max_hot_keys` (0: automatic) and `lanes`
    /// exclusive lanes holds once built: to size a configuration before building. A
    /// configuration a router refuses gives SIZE_MAX.
    [[nodiscard]] static auto state_bytes(std::uint64_t partitions, std::uint32_t max_hot_keys,
                                          std::uint32_t lanes) noexcept -> std::size_t {
        return detail::router_sizing<sizeof(salting_router)>::state_bytes(partitions, max_hot_keys,
                                                                          lanes);
    }

    /// The lanes automatic mode takes on a machine with `hardware_threads` threads: 8, or that
    /// many if more, at most 16; fewer only to keep state_bytes() within auto_memory_budget (with
    /// max_hot_keys 0, as automatic_hot_keys() sizes it for 2 lanes), and at least 2.
    [[nodiscard]] static auto automatic_lanes(std::uint64_t partitions, std::uint32_t max_hot_keys,
                                              unsigned hardware_threads) noexcept -> std::uint32_t {
        return detail::router_sizing<sizeof(salting_router)>::automatic_lanes(
            partitions, max_hot_keys, hardware_threads);
    }

    /// The max_hot_keys automatic mode takes: as many keys as partitions (at least 128, at most
    /// 4096), halved while a router with 2 lanes would hold more than auto_memory_budget, down to
    /// 128, for up to 1024 partitions (above that the state grows with the partitions).
    [[nodiscard]] static auto automatic_hot_keys(std::uint64_t partitions) noexcept
        -> std::uint32_t {
        return detail::router_sizing<sizeof(salting_router)>::automatic_hot_keys(partitions);
    }

private:
    /// A key's home and tracking fingerprint (odd, so never an empty slot's 0).
    struct hashed {
        std::uint32_t home;
        std::uint64_t fp;
    };

    template <class P, class = void>
    struct has_wide_hash : std::false_type {};
    template <class P>
    struct has_wide_hash<P, std::void_t<decltype(std::declval<const P&>().hash(std::string_view{})),
                                        decltype(std::declval<const P&>().reduce(std::uint64_t{}))>>
        : std::is_same<decltype(std::declval<const P&>().hash(std::string_view{})), std::uint64_t> {
    };

    /// The key hashed once: when the base partitioner hashes to 64 bits (hash_partitioner over
    /// XXH3, the default), the fingerprint is that hash mixed with the router's secret; otherwise
    /// a seeded XXH3 of the key. (Keys whose base hashes collide share a fingerprint, and a
    /// partition: docs/bad-input.md.)
    [[nodiscard]] auto hash_key(std::string_view key) const noexcept -> hashed {
        if constexpr (has_wide_hash<Partitioner>::value) {
            const std::uint64_t h = m_base.hash(key);
            return {m_base.reduce(h), detail::mul_fold64(h ^ m_secret, m_secret_out) | 1U};
        } else {
            return {m_base.route(key), m_tracking_hash(key) | 1U};
        }
    }

    /// The key's hash that every router computes alike (its base hash when that has 64 bits,
    /// else XXH3 with seed 0): spread keys take partitions in an order drawn from it.
    [[nodiscard]] auto order_of(std::string_view key) const noexcept -> std::uint64_t {
        if constexpr (has_wide_hash<Partitioner>::value) {
            return detail::mix64(m_base.hash(key));
        } else {
            return detail::mix64(xxh3{}(key));
        }
    }

    /// What decide() returns, or (`whole` false) only its partition: route() has no use for a
    /// stamp, so its common tracked case builds none. The router's state moves the same way.
    template <bool whole>
    using answer = std::conditional_t<whole, route_decision, std::uint32_t>;
    template <bool whole>
    static auto answer_of(const route_decision& d) noexcept -> answer<whole> {
        if constexpr (whole) {
            return d;
        } else {
            return d.partition;
        }
    }

    template <bool whole>
    auto decide_as(std::string_view key, time_point now) noexcept -> answer<whole> {
        detail::lane* lp = Traits::explicit_lane
                               ? &m_lanes.at(std::min(Traits::lane(), m_lanes.count() - 1U))
                               : &m_lanes.mine();
        const auto ticks = static_cast<std::int64_t>(now.time_since_epoch().count());
        if (__builtin_expect(lp->shared, false)) {
            if (!Traits::explicit_lane) lp = &m_lanes.leave_overflow();
            if (lp->shared) return answer_of<whole>(decide_overflow(*lp, key, ticks));
        }
        detail::lane& ln = *lp;
        const hashed hk = hash_key(key);
        if (__builtin_expect(ticks >= ln.bounds.hi || m_clock.current() != ln.bounds.index, false))
            enter_window(ln, ticks);
        if (__builtin_expect(ln.count_down(), false)) check(ln, ticks);
        const std::uint32_t slot = m_table.find(hk.fp);
        if (slot == detail::key_table::npos) return answer_of<whole>(untracked(ln, hk, key));
        Traits::point("found");
        return tracked<whole>(ln, slot, hk, key);
    }

    /// An untracked key's event: home (or, with failover_cold_keys, where failover sends it),
    /// and now and then a draw for admission.
    auto untracked(detail::lane& ln, const hashed& hk, std::string_view key) noexcept
        -> route_decision {
        route_decision d;
        d.home = hk.home;
        d.partition = m_avail.any_down() ? failover(hk.home, key) : hk.home;
        detail::bump_saturating(ln.cold[d.partition], false);
        if (__builtin_expect(--ln.sample_left == 0, false)) draw(ln, hk, key);
        return d;
    }

    /// A tracked key's event: home until its count passes the threshold, then where the plan
    /// spreads it (or home, if the plan keeps it there), stamped by the sequencer.
    template <bool whole>
    [[gnu::noinline]] auto tracked(detail::lane& ln, std::uint32_t slot, const hashed& hk,
                                   const std::string_view& key) noexcept -> answer<whole> {
        detail::lane_slot& ls = ln.slots[slot];
        const detail::key_table::entry& e = m_table.at(slot);
        const std::uint32_t incarnation = e.incarnation.load(std::memory_order_acquire);
        // The two common cases, when the lane's state is for this key and every partition is up;
        // what tracked_steps() would do then, without its branches:
        // - a spread key's event within a run of an open stretch (which keeps the slot from
        //   being handed over): the run's partition, stamped;
        // - a key under the threshold with no stretch open: home, unstamped (safe for whichever
        //   key the slot holds by then). `next_check` is never above the threshold plus one, so
        //   a count under it is under the threshold too.
        const std::int64_t w = ln.bounds.index;
        if (__builtin_expect(m_table.fingerprint(slot) == hk.fp &&
                                 ls.incarnation.load(std::memory_order_relaxed) == incarnation &&
                                 !m_avail.any_down(),
                             true)) {
            const bool proven = detail::key_table::proven_in(e, w);
            if (ls.run_left != 0 && proven) {
                route_decision d;
                if (ls.seq.continue_stretch(Traits::last_sequence, d.stamp.episode,
                                            d.stamp.sequence)) {
                    Traits::point("tracked");
                    count_event(ls);
                    --ls.run_left;
                    d.home = hk.home;
                    d.partition = ls.run_partition;
                    d.stamp.producer = m_config.producer_id;
                    d.stamp.lane = ln.index;
                    d.stamp.salted = true;
                    d.salted = true;
                    detail::bump(ln.salted, std::uint64_t{1}, false);
                    detail::bump_saturating(ln.tracked[d.partition], false);
                    return answer_of<whole>(d);
                }
            } else if (!proven && !ls.seq.open() &&
                       ls.count.load(std::memory_order_relaxed) + 1U < ls.next_check) {
                Traits::point("tracked");
                count_event(ls);
                route_decision d;
                d.home = hk.home;
                d.partition = hk.home;
                detail::bump_saturating(ln.tracked[d.partition], false);
                return answer_of<whole>(d);
            }
        }
        return answer_of<whole>(tracked_steps(ln, slot, hk, key));
    }

    /// Counts a tracked key's event on its lane (saturating); returns the count before it.
    static auto count_event(detail::lane_slot& ls) noexcept -> std::uint32_t {
        const std::uint32_t count = ls.count.load(std::memory_order_relaxed);
        ls.count.store(count == 0xffffffffU ? count : count + 1U, std::memory_order_relaxed);
        return count;
    }

    /// tracked(), every case: the slot's owner checked, the proof, the placement, the stamp
    /// protocol.
    [[gnu::noinline]] auto tracked_steps(detail::lane& ln, std::uint32_t slot, const hashed& hk,
                                         const std::string_view& key) noexcept -> route_decision {
        detail::lane_slot& ls = ln.slots[slot];
        detail::key_table::entry& e = m_table.at(slot);
        const std::uint32_t incarnation = e.incarnation.load(std::memory_order_acquire);
        // The slot may have gone to another key since find(): its fingerprint, read again after
        // the incarnation, tells (a hand-over clears it before it changes the incarnation).
        if (__builtin_expect(m_table.fingerprint(slot) != hk.fp, false))
            return untracked(ln, hk, key);
        if (__builtin_expect(ls.incarnation.load(std::memory_order_relaxed) != incarnation, false))
            restart(ln, ls, incarnation);
        Traits::point("tracked");  // the slot's incarnation and fingerprint read
        const std::uint32_t count = count_event(ls);
        const std::int64_t w = ln.bounds.index;
        route_decision d;
        d.home = hk.home;
        d.partition = hk.home;
        bool spread = false;
        const proof pr = proven(e, ls, slot, incarnation, count + 1U, w);
        if (pr != proof::no && !ls.seq.closing()) {
            spread = place(ln, ls, slot, d.partition);
            if (!spread && pr == proof::now)
                spread = place_now(ln, ls, slot, hk.home, count + 1U, d.partition);
        } else {
            ls.run_left = 0;  // a run ends with its key's proof: a later one is picked afresh
        }
        // A stretch opens at the first event placed off home: until then the key's events are
        // all home, in the partition's order, like a cold key's, and need no stamp.
        if (spread && d.partition == hk.home && !ls.seq.open()) spread = false;
        const detail::sequenced sq =
            ls.seq.next(spread, ln.episodes, ln.episode_step, Traits::last_sequence);
        if (__builtin_expect(sq.opened || sq.closed, false)) {
            if (!stretch_changed(e, ls, incarnation, sq)) return untracked(ln, hk, key);
        }
        if (sq.must_go_home) d.partition = hk.home;
        // Marked at each run's first event (every run passes here): a run carried into the next
        // window by tracked()'s fast path is at most run_length events.
        if (sq.spread) detail::key_table::note_active(e, w);
        if (sq.episode != 0) {
            d.stamp = stamp{m_config.producer_id, ln.index, sq.episode, sq.sequence, sq.spread};
            if (!sq.spread) detail::bump(ln.stamped_home, std::uint64_t{1}, false);
        }
        d.salted = sq.spread;
        if (d.salted) detail::bump(ln.salted, std::uint64_t{1}, false);
        // Events bound home (unstamped, or the stamped ones that open or close a stretch) fail
        // over as a cold key's do, all to one partition per key: rule 2 orders them there as at
        // home. A plan never picks a partition that is down.
        if (d.partition == hk.home && m_avail.any_down()) d.partition = failover(hk.home, key);
        detail::bump_saturating(ln.tracked[d.partition], false);
        return d;
    }

    /// A key this event proved, with no plan for it: placed now, at the rate it has shown on
    /// this lane, then placed as any spread key.
    [[gnu::noinline]] auto place_now(detail::lane& ln, detail::lane_slot& ls, std::uint32_t slot,
                                     std::uint32_t home, std::uint32_t count,
                                     std::uint32_t& partition) noexcept -> bool {
        Traits::point("place_new");
        const auto since = static_cast<std::uint32_t>(ln.routed_in_window()) -
                           ls.first_seen.load(std::memory_order_relaxed);
        m_planner.place_new(ln.bounds.index, slot, home,
                            static_cast<double>(count) / std::max(since, 1U), m_table, m_plans);
        return place(ln, ls, slot, partition);
    }

    /// Whether a tracked key with `count` events on this lane (this one included) may be spread
    /// in w: past the threshold as a plan or a lane found it, or on this lane, or summed over the
    /// lanes (`now`: this event took it past, and no plan has seen it proven yet). A lane sums
    /// the lanes' counts from a fraction of the threshold on, every few of its events, so a key
    /// whose events are split between threads sends about the threshold home, not that many
    /// per lane.
    enum class proof { no, yes, now };
    auto proven(detail::key_table::entry& e, detail::lane_slot& ls, std::uint32_t slot,
                std::uint32_t incarnation, std::uint32_t count, std::int64_t w) noexcept -> proof {
        if (detail::key_table::proven_in(e, w)) return proof::yes;
        const std::uint64_t t = m_planner.threshold(w);
        if (count <= t) {
            if (count < ls.next_check || t == detail::planner::unplanned) return proof::no;
            const std::uint32_t lanes = m_lanes.count() - 1U;
            if (lanes >= 2 && lane_sum(slot, incarnation, w) > t) {
                e.proven.store(detail::window_tag(w), std::memory_order_relaxed);
                m_planner.request();
                return proof::now;
            }
            // The next count at which this lane looks again: the threshold's, or sooner where
            // other lanes count the key too.
            const std::uint64_t step = lanes >= 2 ? t / (std::uint64_t{4} * lanes) : t;
            ls.next_check = static_cast<std::uint32_t>(std::min<std::uint64_t>(
                {count + std::max<std::uint64_t>(step, 1U), t + 1U, 0xffffffffU}));
            return proof::no;
        }
        if (count != t + 1U) return proof::yes;
        m_planner.request();
        return proof::now;
    }

    /// The key's events in window w over the exclusive lanes (a lane's count is read only while it
    /// is for this incarnation of the slot and this window; a stale read is low, never high).
    [[nodiscard]] auto lane_sum(std::uint32_t slot, std::uint32_t incarnation,
                                std::int64_t w) const noexcept -> std::uint64_t {
        std::uint64_t sum = 0;
        for (std::uint32_t i = 0; i + 1U < m_lanes.count(); ++i) {
            const detail::lane& other = m_lanes.at(i);
            if (other.window.load(std::memory_order_acquire) != w) continue;
            const detail::lane_slot& os = other.slots[slot];
            if (os.incarnation.load(std::memory_order_relaxed) == incarnation)
                sum += os.count.load(std::memory_order_relaxed);
        }
        return sum;
    }

    /// The partition of a spread key's event: the current run's, or for a new run the lighter,
    /// on this lane, of two of the plan's pieces. Returns false when the plan keeps the key home.
    auto place(const detail::lane& ln, detail::lane_slot& ls, std::uint32_t slot,
               std::uint32_t& partition) noexcept -> bool {
        const bool any_down = m_avail.any_down();
        if (ls.run_left != 0 && !(any_down && m_avail.down(ls.run_partition))) {
            --ls.run_left;
            partition = ls.run_partition;
            return true;
        }
        // Golden-ratio steps: each piece gets its share of the runs, evenly spaced.
        ls.cursor = static_cast<std::uint16_t>(ls.cursor + 0x9e37U);
        std::uint32_t p = 0;
        const auto down = [this](std::uint32_t q) { return m_avail.down(q); };
        const auto load = [&ln](std::uint32_t q) { return ln.load(q); };
        switch (m_plans.pick_lighter(slot, std::uint32_t{ls.cursor} << 16U, down, load, p)) {
        case detail::plan_store::outcome::picked:
            ls.run_partition = p;
            ls.run_left = static_cast<std::uint16_t>(m_planner.run_length() - 1U);
            partition = p;
            return true;
        case detail::plan_store::outcome::busy:
            // The run goes on while the plan is replaced, unless its partition went down: then
            // the stretch closes (home, or home's failover), as when the plan has no pieces.
            if (!ls.seq.open() || m_avail.down(ls.run_partition)) break;
            partition = ls.run_partition;
            return true;
        case detail::plan_store::outcome::none: break;
        }
        ls.run_left = 0;
        return false;
    }

    /// Records a stretch opened or closed with the slot's open count; false when the slot went to
    /// another key meanwhile (then nothing was opened, and the event is routed as untracked).
    static auto stretch_changed(detail::key_table::entry& e, detail::lane_slot& ls,
                                std::uint32_t incarnation, const detail::sequenced& sq) noexcept
        -> bool {
        if (sq.closed) {
            detail::key_table::close_stretch(e, incarnation);
            return true;
        }
        if (detail::key_table::open_stretch(e, incarnation)) return true;
        ls.seq.reset();
        return false;
    }

    /// A lane's state of a slot that another key took over: it starts afresh.
    [[gnu::noinline]] static void restart(const detail::lane& ln, detail::lane_slot& ls,
                                          std::uint32_t incarnation) noexcept {
        ls.first_seen.store(static_cast<std::uint32_t>(ln.routed_in_window()),
                            std::memory_order_relaxed);
        ls.count.store(0, std::memory_order_relaxed);
        ls.incarnation.store(incarnation, std::memory_order_relaxed);
        ls.run_left = 0;
        ls.next_check = 0;
        ls.seq.reset();
    }

    /// An untracked event the sampler drew: a step towards admission of its key.
    [[gnu::noinline]] void draw(detail::lane& ln, const hashed& hk, std::string_view key) noexcept {
        const std::uint32_t gap = m_planner.sample_gap();
        ln.sample_left =
            gap <= 1 ? 1U : 1U + static_cast<std::uint32_t>(ln.next_random() % (2U * gap - 1U));
        const std::uint32_t slot =
            m_table.admit(hk.fp, static_cast<std::uint32_t>(order_of(key)), key, hk.home,
                          ln.bounds.index, m_planner.plans(), m_planner.last_threshold());
        detail::bump(ln.drawn, std::uint64_t{1}, false);
        if (slot == detail::key_table::refused) {
            detail::bump(ln.refused, std::uint64_t{1}, false);
            // One key refused draw after draw (8: its refusals outweigh others' by that many):
            // plan soon, so that the planner can make room for it, rather than a whole plan
            // interval later, which on thousands of partitions is much of a window.
            if (m_table.pressure_of(hk.fp) >= 8) m_planner.request();
        }
    }

    /// Moves the lane to the router's current window (first moving that to the event's window
    /// when the event is later), and plans the window if nobody has.
    [[gnu::noinline]] void enter_window(detail::lane& ln, std::int64_t ticks) noexcept {
        std::int64_t w = m_clock.current();
        if (ticks >= ln.bounds.hi || w == detail::no_window)
            w = m_clock.observe(m_clock.window_of(ticks));
        if (w != ln.bounds.index) {
            detail::bump(ln.routed, ln.routed_in_window(), false);
            ln.enter(m_clock.bounds(w), ln.bounds.index, m_n, m_slots);
        }
    }

    /// Every few dozen events: the lane's latest time, and a plan when one is due.
    [[gnu::noinline]] void check(detail::lane& ln, std::int64_t ticks) noexcept {
        ln.next_batch(check_every);
        if (ticks >= ln.bounds.lo && ticks > ln.latest.load(std::memory_order_relaxed))
            ln.latest.store(ticks, std::memory_order_relaxed);
        const std::int64_t w = ln.bounds.index;
        if (m_planner.due(w, m_lanes, m_avail)) {
            m_planner.run(w, m_lanes, m_table, m_plans, m_clock, m_avail,
                          [] { Traits::point("plan_written"); });
        }
    }

    /// The overflow lane: home (or failover), counted with read-modify-writes.
    [[gnu::noinline]] auto decide_overflow(detail::lane& ln, std::string_view key,
                                           std::int64_t ticks) noexcept -> route_decision {
        const hashed hk = hash_key(key);
        const std::int64_t w = m_clock.observe(m_clock.window_of(ticks));
        std::int64_t seen = ln.window.load(std::memory_order_acquire);
        if (seen < w && ln.window.compare_exchange_strong(seen, w, std::memory_order_acq_rel)) {
            Traits::point("overflow_enter");  // the window moved, the counters not yet reset
            ln.enter(m_clock.bounds(w), seen, m_n, m_slots);
        }
        route_decision d;
        d.home = hk.home;
        d.partition = m_avail.any_down() ? failover(hk.home, key) : hk.home;
        // Per-window counts may lose a racing thread's event at a window change (the planner's
        // loads are estimates); the total routed is exact.
        detail::bump_saturating(ln.cold[d.partition], true);
        ln.events.fetch_add(1, std::memory_order_relaxed);
        ln.routed.fetch_add(1, std::memory_order_relaxed);
        return d;
    }

    /// Where an unstamped event of a key goes while partitions are down: home, unless
    /// failover_cold_keys is set and home is down.
    [[nodiscard]] auto failover(std::uint32_t home, std::string_view key) const noexcept
        -> std::uint32_t {
        if (!m_config.failover_cold_keys || !m_avail.down(home)) return home;
        return m_avail.failover(home, xxh3{}(key));
    }

    static constexpr std::uint32_t check_every = 64;

    static auto resolve(salting_config c) -> salting_config {
        if (c.max_hot_keys == 0) c.max_hot_keys = automatic_hot_keys(c.partitions);
        if (c.lanes == 0) {
            c.lanes =
                automatic_lanes(c.partitions, c.max_hot_keys, std::thread::hardware_concurrency());
        }
        if (c.episode_base == 0) {
            // A producer id the caller chose may be a router's before this one (a restart).
            c.episode_base = c.producer_id != 0 ? (detail::random_nonzero_u64() >> 8U) | 1U : 1U;
        }
        if (c.producer_id == 0) c.producer_id = detail::random_nonzero_u64();
        if (c.seed == 0) c.seed = detail::random_nonzero_u64();
        return c;
    }

    Partitioner m_base;
    salting_config m_config;
    std::uint32_t m_n;
    std::uint32_t m_slots;
    std::uint64_t m_secret;
    std::uint64_t m_secret_out;
    xxh3 m_tracking_hash;
    detail::window_clock m_clock;
    detail::key_table m_table;
    detail::lane_registry m_lanes;
    detail::plan_store m_plans;
    detail::planner m_planner;
    detail::availability m_avail;
};

}  // namespace keyroute
