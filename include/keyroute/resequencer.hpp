#pragma once

/// @file
/// The consumer-side resequencer: puts back in order the events of a key that the salting router
/// spread over several partitions, using their ordering stamps (stamp.hpp).
///
/// What it relies on (the router's contract):
/// - within an episode (one producer lane tracking one key), `sequence` counts the lane's
///   events of the key from 0 without gaps;
/// - an episode's first stamped events go to the key's home partition, after the key's earlier
///   unstamped events there; when the key cools, at least one stamped event goes home again
///   before the lane's next unstamped event of the key (the salting router keeps this but for a
///   lane whose key's slot went to another key about a window after the lane last spread it:
///   docs/router.md, "Stamps");
/// - unstamped events of a key go to its home partition only (the salting router's
///   `failover_cold_keys` sends them, and the stamped ones bound home, to one failover partition
///   per key while the home partition is down: the two points above hold there instead, but not
///   across the change);
/// - the consumer hands the resequencer each partition's events in partition order.
///
/// What it guarantees (the *ordering rules*), for events pushed and not reported as duplicates:
/// 1. Episode order: the events of one episode (producer, lane, episode) are delivered in
///    `sequence` order. An early event is held until the sequences before it are delivered or
///    given up as missing; every sequence given up is reported in a gap_report, never silently.
///    An event whose sequence was already given up when it arrives is delivered with
///    `delivery_order::late` (it is out of episode order, and flagged so), or `out_of_order` if
///    it is the event released to break a waiting cycle (see below).
/// 2. Partition order: of two events of the same key read from the same partition, the later
///    one is never delivered before the earlier one when the later one is unstamped, when the
///    earlier one is unstamped, or when both carry stamps of the same (producer, lane) from
///    different episodes. In particular an unstamped event passes straight through unless an
///    earlier event of its key from its partition is still held; then it queues behind it.
/// 3. Lanes never mix: stamped events of different (producer, lane) do not wait for each other
///    except through rule 2's unstamped events, since no order exists between them.
/// Hence, for one producer lane and one key, across the cold -> hot transition (unstamped
/// events, then stamped events from sequence 0 on home, then stamped runs elsewhere) and the
/// hot -> cold transition (stamped events home again, then unstamped events), the lane's events
/// are delivered exactly in the order the lane routed them, provided none of the lane's stamped
/// events of that key is given up (each arrives within max_delay of the events waiting for it,
/// and the buffer does not overflow under release_early). When one is given up, rules 1 and 2
/// still hold, but a cold event read later may come out before it (it is then `late`), and if
/// every stamped event the lane sent home at the end of an episode is lost, the next cold events
/// can pass the episode's unread events: nothing on home is left to wait behind.
///
/// Bounded waiting, measured on the watermark clock (the `time` passed to push() and the value
/// passed to advance_watermark(), in the same unit and epoch: event time or processing time):
/// an event held since push time `t` is delivered at the latest by the advance_watermark(w) call
/// with `w >= t + max_delay` (or by flush()). Releasing it releases first, in the rule order,
/// every held event it waits for (even younger ones) and gives up the missing sequences in the
/// way (gap_reason::timeout). If events wait for each other in a cycle, which the contract above
/// excludes but a producer that breaks it (retries that reorder a partition, a partition count
/// that changed under a key) can create, the cycle is broken by delivering one of its events
/// with `delivery_order::out_of_order`.
///
/// The invariant (nothing is lost): every push is, exactly one of,
/// - delivered exactly once (`accepted`: now or later, in order, late or out of order);
/// - refused (`refused`: not taken, left with the caller, its offset not passed by
///   committable_offset);
/// - a `duplicate`, only when that very event was taken before (an event with the same stamp,
///   or with the same partition and offset) and the resequencer still remembers it.
/// An event whose history was forgotten is delivered, never dropped: in an episode that gave up
/// more ranges than it remembers, a sequence below the remembered ones comes `late` with
/// `delivery::possibly_duplicate`; an event of a forgotten episode starts the episode afresh.
/// Either may then be a second delivery of an event delivered before (a re-read with an offset
/// is still recognised by its offset). Memory stays within the configured bounds (see
/// resequencer).
///
/// Reading: one resequencer must be fed every partition a key's events can be on (with the
/// salting router, every partition of the topic). A consumer group that splits the partitions
/// between members cannot restore a spread key's order, unless it brings each key's events to
/// one resequencer first, as kafka::ordered_group does (docs/kafka.md, "Consuming spread keys";
/// a consumer loop over another queue: docs/ordering.md, "Without Kafka").
/// Prefer processing time for the watermark clock
/// (message timestamps come from producers' clocks), and hold that clock still, for push() as
/// well as advance_watermark(), until every partition has been read from: max_delay runs from an
/// event's push time. After that, max_delay must cover the worst lag between partitions.
///
/// Thread-safety: none. One resequencer belongs to one consumer thread; calls must not overlap,
/// and the sinks must not call back into the resequencer that invoked them (checked: such a call
/// throws std::logic_error). Different resequencers are independent.

#include "detail/config.hpp"
#include "hash.hpp"
#include "resequencer/checkpoint.hpp"
#include "resequencer/deadlines.hpp"
#include "resequencer/episode_table.hpp"
#include "resequencer/given_up.hpp"
#include "resequencer/hashed_index.hpp"
#include "resequencer/key_queue.hpp"
#include "resequencer/node_pool.hpp"
#include "resequencer/offsets.hpp"
#include "resequencer/sequence_window.hpp"
#include "resequencer/slab.hpp"
#include "resequencer/slot_list.hpp"
#include "stamp.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace keyroute {

/// What the resequencer does with an event that must be held while the buffer is full.
enum class full_policy {
    /// give up the oldest held event's gaps now (gap_reason::full), then hold; never the
    /// pushed event's own sequence: if the oldest waits for it, it is delivered at once (out
    /// of order if it waits for the oldest in turn)
    release_early,
    /// return push_result::refused; the caller keeps the event (backpressure)
    refuse,
};

/// Limits of a resequencer. Every field is checked by the resequencer's constructor.
struct resequencer_config {
    /// Most events held at once (events delivered straight through are not held). >= 1.
    std::size_t max_events = 100000;
    /// Most bytes held at once, as counted by the EventSize functor plus the key's size. >= 1.
    std::size_t max_bytes = std::size_t{64} << 20U;
    /// How long, on the watermark clock, an event may be held waiting. >= 0; 0 releases every
    /// held event at the next advance_watermark() that reaches its time.
    std::chrono::milliseconds max_delay{5000};
    /// What push() does when an event must be held and the buffer is full.
    full_policy on_full = full_policy::release_early;
    /// An episode with nothing held is remembered (for duplicate detection) at least this long
    /// after its last event's time, on the watermark clock. >= 0.
    std::chrono::milliseconds episode_ttl{std::chrono::minutes(10)};
    /// ... and among at most this many idle episodes (least recently used forgotten first). >= 1.
    std::size_t max_idle_episodes = 100000;
};

/// Where an event was read from.
struct origin {
    std::uint32_t partition = 0;  ///< the partition it was read from (rule 2 is per partition)
    /// Its offset in the partition, or a negative value for "no offset": such an event takes
    /// no part in committable_offset() and is not checked for re-reads by offset.
    std::int64_t offset = -1;
};

/// Result of resequencer::push().
enum class push_result {
    accepted,   ///< delivered now or held; it will be delivered exactly once
    duplicate,  ///< already delivered or held (same stamp, or an offset already read): dropped,
                ///< not delivered
    refused,    ///< buffer full under full_policy::refuse: not taken, the event is left intact
};

/// How a delivered event stands with respect to the ordering rules.
/// One value per delivery: `out_of_order` wins over `late`, since it is the one that says rule 2
/// may not hold (a late event's sequence was reported missing in a gap_report anyway).
enum class delivery_order {
    in_order,      ///< rules 1 and 2 hold for it
    late,          ///< its sequence had been given up as missing (and reported) before it
                   ///< arrived: out of episode order (rule 1), but rule 2 holds for it
    out_of_order,  ///< released to break a waiting cycle (only when the producer broke its
                   ///< contract), late or not: it may pass events it should have waited for
};

/// Why sequences were given up.
enum class gap_reason {
    timeout,  ///< advance_watermark() passed max_delay after an event waiting behind them
    full,     ///< the buffer was full under full_policy::release_early
    flush,    ///< flush() was called
};

/// A readable name for a gap_reason.
[[nodiscard]] constexpr auto to_string(gap_reason r) noexcept -> const char* {
    switch (r) {
    case gap_reason::timeout: return "timeout";
    case gap_reason::full: return "full";
    case gap_reason::flush: return "flush";
    }
    return "unknown gap reason";
}

/// Sequences of one episode given up as missing: [first_missing, last_missing], both included.
struct gap_report {
    std::uint64_t producer = 0;
    std::uint16_t lane = 0;
    std::uint64_t episode = 0;
    std::uint64_t first_missing = 0;
    std::uint64_t last_missing = 0;
    std::string_view key;  ///< valid only during the gap sink call
    gap_reason reason = gap_reason::timeout;
};

/// One released event, handed to the delivery sink.
template <class Event>
struct delivery {
    Event event;              ///< the event as pushed (moved along, never copied by the buffer)
    std::string_view key;     ///< valid only during the delivery sink call
    keyroute::stamp stamp;    ///< `stamp{}` (false) for an unstamped event
    keyroute::origin source;  ///< where it was read from, as pushed
    std::chrono::milliseconds time{};                 ///< the time given to push()
    delivery_order order = delivery_order::in_order;  ///< in order, late or out of order
    /// Late (or out of order) at a sequence whose history its episode has forgotten (more
    /// given-up ranges than it keeps: see resequencer): it was given up, or it is a second
    /// delivery of an event delivered before. Never set for an event known to be new.
    bool possibly_duplicate = false;
};

/// Counters since construction (or restore), for monitoring and tests.
struct resequencer_stats {
    std::uint64_t pushed = 0;               ///< push() calls that returned accepted or duplicate
    std::uint64_t delivered = 0;            ///< events handed to the delivery sink
    std::uint64_t held = 0;                 ///< events that had to wait in the buffer
    std::uint64_t duplicates = 0;           ///< push() calls that returned duplicate
    std::uint64_t refused = 0;              ///< push() calls that returned refused
    std::uint64_t late = 0;                 ///< deliveries with delivery_order::late
    std::uint64_t out_of_order = 0;         ///< deliveries with delivery_order::out_of_order
    std::uint64_t gaps = 0;                 ///< gap reports
    std::uint64_t missing = 0;              ///< sequences given up, summed over gap reports
    std::uint64_t forgotten_episodes = 0;   ///< idle episodes forgotten (ttl or count)
    std::uint64_t possible_duplicates = 0;  ///< deliveries with delivery::possibly_duplicate
    /// Offsets held at the restored checkpoint that were never re-read: the partition's reading
    /// passed them (retention or compaction deleted them). Those events are lost to the log.
    std::uint64_t lost_rereads = 0;
};

/// The default EventSize: `sizeof(Event)`. A custom one is any copyable functor callable as
/// `std::size_t(const Event&) const` (say, `sizeof(Event) + e.payload.size()`).
struct sizeof_event {
    template <class Event>
    [[nodiscard]] constexpr auto operator()(const Event&) const noexcept -> std::size_t {
        return sizeof(Event);
    }
};

namespace detail {

/// Whether every T moves (constructs and assigns) without throwing.
template <class... T>
inline constexpr bool nothrow_movable_v = ((std::is_nothrow_move_constructible_v<T> &&
                                            std::is_nothrow_move_assignable_v<T>)&&...);

/// A resequencer was called from one of its own sinks: a logic error (std::logic_error, or
/// abort without exceptions).
[[noreturn]] inline void reentered() {
    const char* message = "keyroute resequencer: called from one of its own sinks (not reentrant)";
#if KEYROUTE_HAS_EXCEPTIONS
    throw std::logic_error(message);
#else
    std::fprintf(stderr, "%s\n", message);
    std::abort();
#endif
}

[[nodiscard]] inline auto saturating_add(std::chrono::milliseconds t,
                                         std::chrono::milliseconds d) noexcept
    -> std::chrono::milliseconds {
    using rep = std::chrono::milliseconds::rep;
    if (d.count() > 0 && t.count() > std::numeric_limits<rep>::max() - d.count()) {
        return std::chrono::milliseconds::max();
    }
    return t + d;
}

inline auto check_resequencer_config(const resequencer_config& c) -> const resequencer_config& {
    const auto fail = [](const char* field, const std::string& value) {
        invalid_argument(std::string("keyroute resequencer_config: ") + field + " " + value);
    };
    if (c.max_events == 0) fail("max_events", "must be >= 1, got 0");
    if (c.max_bytes == 0) fail("max_bytes", "must be >= 1, got 0");
    if (c.max_delay.count() < 0) {
        fail("max_delay", "must be >= 0 ms, got " + std::to_string(c.max_delay.count()) + " ms");
    }
    if (c.episode_ttl.count() < 0) {
        fail("episode_ttl",
             "must be >= 0 ms, got " + std::to_string(c.episode_ttl.count()) + " ms");
    }
    if (c.max_idle_episodes == 0) fail("max_idle_episodes", "must be >= 1, got 0");
    if (c.on_full != full_policy::release_early && c.on_full != full_policy::refuse) {
        fail("on_full",
             "is not a full_policy value: " + std::to_string(static_cast<int>(c.on_full)));
    }
    return c;
}

}  // namespace detail

/// Puts stamped events back in episode order without breaking partition order (see the file
/// comment for the exact rules and the router contract they rely on).
///
/// @tparam Event the application's event type; move-constructible. It is moved into the
///         buffer when held and moved into the delivery.
/// @tparam EventSize counts a held event's bytes (plus the key's size) against max_bytes.
///
/// Memory: at most `max_events` events and `max_bytes` bytes are ever held (one event larger
/// than max_bytes on its own is never held, under either full_policy: the held events it must
/// follow, of its key and partition or earlier in its episode, are released first, then its
/// gaps are given up and it is delivered at once; other held events stay);
/// bookkeeping adds O(1) per held event and per partition seen, and per remembered episode
/// (bounded by the held events plus max_idle_episodes) O(1) plus a copy of its key and at most
/// 256 given-up ranges of 16 bytes, which max_bytes does not count: with long keys or many
/// gaps, bound max_idle_episodes too. The storage of held events (their slots, their episodes'
/// windows of held sequences, 256 bytes for each episode holding any, and map nodes for
/// sequences far ahead, the per-key partition queues, the indexes) is kept at its peak and
/// reused, so that holding and releasing in a steady state allocates almost nothing (a reused
/// queue may grow the buffer of a key longer than 24 bytes): the memory bound is the peak's.
///
/// Duplicates: a re-read event is recognised (a) by its offset, when it is below the highest
/// offset already accepted on its partition, and (b) by its stamp, when its sequence is below the
/// episode's next expected sequence or already held. (b) holds while the episode is remembered:
/// always while it holds events, then for episode_ttl after its last event and among the
/// max_idle_episodes most recently used idle episodes. An event of a forgotten episode (with no
/// usable offset) starts a new episode: if its sequence is not 0 it waits max_delay, its earlier
/// sequences are reported missing, and it is delivered again. An episode remembers its newest
/// 256 given-up ranges (the sequences given up and not delivered since), merged when adjacent;
/// past that it forgets the oldest, and what came below them: a sequence there is delivered
/// `late` with `possibly_duplicate` set (it was given up, or delivered before), never answered
/// `duplicate`. Sequence 2^64-1 is an episode's
/// last: once it is delivered the episode is finished, its next expected sequence stays at
/// 2^64-1 instead of wrapping to 0, and every later push of the episode is a duplicate or, if
/// its sequence was given up, late. (The router writes at most 2^32 - 2: only a corrupt
/// or hostile stamp gets there.) Exactly-once across a restart needs checkpoint()/restore() and
/// offsets.
///
/// Sinks run inside push(), advance_watermark() and flush(); they should not throw. An exception
/// from a sink propagates out of that call; the event being delivered is lost to the
/// resequencer, which stays usable: events that were ready go at the start of the next call,
/// before its own work, and every held event keeps its deadline. A gap whose report threw
/// stays given up (its sequences come `late`). When push() throws, stats().pushed tells whether
/// its event was taken (it counts the event once taken; taken, it was held or delivered); an
/// event whose copy or move throws is not taken, and a held event whose move throws as it is
/// released stays held. An allocation that fails inside the
/// resequencer (std::bad_alloc) is another matter: the state may then be inconsistent, and the
/// resequencer must be discarded (restore the last checkpoint into a new one).
///
/// Thread-safety: not thread-safe; one consumer thread (see the file comment).
template <class Event, class EventSize = sizeof_event>
class resequencer {
    static_assert(std::is_move_constructible_v<Event>,
                  "keyroute::resequencer: Event must be move-constructible");
    static_assert(std::is_invocable_r_v<std::size_t, const EventSize&, const Event&>,
                  "keyroute::resequencer: EventSize must be callable as "
                  "`std::size_t(const Event&) const`");

public:
    using event_type = Event;
    using time_type = std::chrono::milliseconds;
    using delivery_type = delivery<Event>;
    /// Receives every released event, in release order.
    using delivery_sink = std::function<void(delivery_type&&)>;
    /// Receives every gap given up, as it is given up.
    using gap_sink = std::function<void(const gap_report&)>;

    /// @throws std::invalid_argument naming the field and value if a config field is out of
    ///         range or a sink is empty.
    resequencer(const resequencer_config& config, delivery_sink on_delivery, gap_sink on_gap,
                EventSize event_size = EventSize{})
        : m_config(detail::check_resequencer_config(config)),
          m_on_delivery(std::move(on_delivery)),
          m_on_gap(std::move(on_gap)),
          m_event_size(std::move(event_size)) {
        if (!m_on_delivery) detail::invalid_argument("keyroute resequencer: on_delivery is empty");
        if (!m_on_gap) detail::invalid_argument("keyroute resequencer: on_gap is empty");
    }

    resequencer(const resequencer&) = delete;
    auto operator=(const resequencer&) -> resequencer& = delete;
    /// Moves throw only if EventSize's do (every other member's move is noexcept: checked below).
    /// They take every held event and remembered episode: the moved-from resequencer holds
    /// nothing, and its sinks went too: destroy it or assign to it. (Its calls do not touch the
    /// new one; a push() it would deliver at once throws std::bad_function_call from the empty
    /// sink, and that event is lost.)
    resequencer(resequencer&&) noexcept(std::is_nothrow_move_constructible_v<EventSize>) = default;
    auto operator=(resequencer&&) noexcept(std::is_nothrow_move_assignable_v<EventSize>)
        -> resequencer& = default;
    ~resequencer() = default;

    /// Takes one event read from `source`: delivers it now (and whatever it unblocks), holds it,
    /// or reports it as a duplicate.
    ///
    /// @param key the event's key (any bytes); copied if the event is held, and by the episode a
    ///        stamped event starts.
    /// @param st its decoded stamp, or `stamp{}` for none
    ///        (`try_decode_stamp(h).value_or(keyroute::stamp{})`).
    /// @param event moved from only if the result is `accepted`.
    /// @param time its time on the watermark clock (event or processing time).
    /// @pre events of one partition are pushed in partition order; after `refused`, the same
    ///      event is pushed again before any later event of its partition.
    /// @throws std::invalid_argument if `source.offset` is 2^63 - 1, or is above the offset of
    ///         an event of its partition that was refused and not pushed again
    ///         (docs/bad-input.md); the event is not taken, and nothing else is lost (events
    ///         that a sink's exception left ready may go first).
    /// Complexity: O(1) hash look-ups for an event that passes straight through; O(log n) plus
    /// the events it releases otherwise (O(h) where h is the number of events of its key held
    /// from its partition).
    auto push(std::string_view key, const stamp& st, Event&& event, const origin& source,
              time_type time) -> push_result {
        return push_impl(key, st, event, source, time);
    }

    /// Same as above for a copyable event, copied only if accepted.
    auto push(std::string_view key, const stamp& st, const Event& event, const origin& source,
              time_type time) -> push_result {
        return push_impl(key, st, event, source, time);
    }

    /// Moves the watermark to `w` (a lower value than the current one is ignored), releases every
    /// event held since a time t with `t + max_delay <= w` (see the file comment), and forgets
    /// idle episodes past episode_ttl.
    /// Complexity: O(r log n) for r events released, plus the episodes forgotten.
    void advance_watermark(time_type w) {
        const reentry_guard guard(*this);
        if (w > m_watermark) m_watermark = w;
        resume_after_exception();
        while (!m_deadlines.empty() && m_deadlines.top().deadline <= m_watermark) {
            release_due(gap_reason::timeout);
        }
        forget_idle_episodes();
    }

    /// Releases every held event now, oldest deadline first, giving up their gaps
    /// (gap_reason::flush). Use at shutdown when the buffered events must be processed anyway.
    void flush() {
        const reentry_guard guard(*this);
        resume_after_exception();
        while (!m_deadlines.empty()) release_due(gap_reason::flush);
        forget_idle_episodes();
    }

    /// The offset to commit for `partition` (Kafka convention: the next offset to read): the
    /// lowest offset still held (or, after restore(), still to be re-read), else one past the
    /// highest offset accepted. Re-reading from it after a crash loses nothing held.
    /// nullopt if no event with an offset was accepted from `partition`. O(1) average.
    [[nodiscard]] auto committable_offset(std::uint32_t partition) const
        -> std::optional<std::int64_t> {
        const auto it = m_partitions.find(partition);
        if (it == m_partitions.end()) return std::nullopt;
        const partition_state& ps = it->second;
        return ps.offsets.committable(
            ps.held.first == no_slot ? std::nullopt : std::optional(at(ps.held.first).offset));
    }

    /// The most recently active episodes, for a summary smaller than checkpoint() (the commit
    /// hint of keyroute::kafka::ordered_consumer): every episode that holds events or waits for
    /// re-reads, then at most `idle` idle ones, most recently idle first. Each has its id, key
    /// and next sequence only. Visits every remembered episode, copies only those.
    [[nodiscard]] auto recent_episodes(std::size_t idle) const
        -> std::vector<resequencer_checkpoint::episode_state> {
        std::vector<resequencer_checkpoint::episode_state> out;
        const auto add = [&out](const episode_state& ep) {
            resequencer_checkpoint::episode_state e;
            e.producer = ep.id().producer;
            e.lane = ep.id().lane;
            e.episode = ep.id().episode;
            e.key = ep.key;
            e.next_sequence = ep.next;
            out.push_back(std::move(e));
        };
        m_episodes.for_each([&](const episode_state& ep) {
            if (!ep.idle()) add(ep);
        });
        m_episodes.for_each_newest_idle(idle, add);
        return out;
    }

    /// The state to store with committed offsets (see resequencer_checkpoint). O(n log n) in the
    /// remembered state.
    [[nodiscard]] auto checkpoint() const -> resequencer_checkpoint {
        resequencer_checkpoint cp;
        cp.watermark = m_watermark;
        for (const auto& [partition, ps] : m_partitions) {
            if (ps.offsets.next() < 0) continue;
            resequencer_checkpoint::partition_state out;
            out.partition = partition;
            out.next_offset = ps.offsets.next();
            for (std::uint32_t k = ps.held.first; k != no_slot; k = at(k).part_next) {
                out.held_offsets.push_back(at(k).offset);
            }
            const auto& rereads = ps.offsets.rereads();
            out.held_offsets.insert(out.held_offsets.end(), rereads.begin(), rereads.end());
            std::sort(out.held_offsets.begin(), out.held_offsets.end());
            cp.partitions.push_back(std::move(out));
        }
        std::unordered_map<detail::episode_key, std::size_t, detail::episode_key_hash> index;
        m_episodes.for_each([&](const episode_state& ep) {
            const detail::episode_key& id = ep.id();
            index.emplace(id, cp.episodes.size());
            resequencer_checkpoint::episode_state out;
            out.producer = id.producer;
            out.lane = id.lane;
            out.episode = id.episode;
            out.key = ep.key;
            out.next_sequence = ep.next;
            out.last_time = ep.last_time;
            out.given_up = ep.given_up.ranges();
            out.forgotten_below = ep.given_up.forgotten_below();
            ep.held.find_if([&](std::uint64_t seq, std::uint32_t slot) {
                if (slot == tombstone) out.delivered_ahead.push_back(seq);
                return false;
            });
            if (ep.finished) out.delivered_ahead.push_back(last_sequence);
            out.held_events = ep.pinned;  // re-reads still to come after an earlier restore
            cp.episodes.push_back(std::move(out));
        });
        // A late event still held is not delivered: after a restore it must count as late again.
        for (std::uint32_t k = 0; k < m_slab.made(); ++k) {
            const entry& e = at(k);
            if (serial_of(k) == 0 || e.episode == nullptr) continue;
            const std::size_t i = index.at(e.episode->id());
            if (e.offset >= 0) ++cp.episodes[i].held_events;
            if (e.late && !e.unknown) {
                cp.episodes[i].given_up.emplace_back(e.st.sequence, e.st.sequence);
            }
        }
        return cp;
    }

    /// Loads a checkpoint taken by another resequencer. Afterwards, push the events re-read from
    /// each partition's committable_offset(): those delivered before the checkpoint are reported
    /// as duplicates, the others are processed as if there had been no restart.
    /// @throws std::invalid_argument if this resequencer has already taken events, or if the
    ///         checkpoint is not one checkpoint() could have written (a partition or episode
    ///         listed twice, a negative next_offset, a held offset outside [0, next_offset), a
    ///         delivered_ahead sequence not above next_sequence, a given-up range whose first
    ///         sequence is above its last), naming it; nothing is restored then.
    void restore(const resequencer_checkpoint& cp) {
        const reentry_guard guard(*this);
        if (m_stats.pushed != 0 || !m_episodes.empty() || !m_partitions.empty()) {
            detail::invalid_argument(
                "keyroute resequencer::restore: the resequencer must be new, it has taken " +
                std::to_string(m_stats.pushed) + " events");
        }
        detail::check_checkpoint(cp);
        m_watermark = cp.watermark;
        for (const auto& p : cp.partitions) {
            partition_of(p.partition).offsets.restore(p.next_offset, p.held_offsets);
        }
        // Least recently used first, so that the idle list is in the order it had (checkpoint()
        // lists episodes in hash order, and the count limit forgets the front of the list).
        std::vector<const resequencer_checkpoint::episode_state*> by_time;
        by_time.reserve(cp.episodes.size());
        for (const auto& e : cp.episodes) by_time.push_back(&e);
        std::stable_sort(by_time.begin(), by_time.end(),
                         [](const auto* a, const auto* b) { return a->last_time < b->last_time; });
        for (const auto* restored : by_time) {
            const auto& e = *restored;
            episode_state& ep = new_episode(detail::episode_key{e.producer, e.lane, e.episode});
            ep.key = e.key;
            ep.next = e.next_sequence;
            ep.held.rebase(ep.next);
            ep.last_time = e.last_time;
            ep.given_up.assign(e.given_up, e.forgotten_below);
            for (const std::uint64_t seq : e.delivered_ahead) ep.held.insert(seq, tombstone);
            after_advance(ep, 0);  // only finishes an episode whose last sequence was delivered
            // An episode that held events is remembered until they are re-read, as it would
            // have been without the restart: forgotten during the replay, its re-read events
            // would start a new episode, wait max_delay, and report as missing sequences that
            // were delivered before the restart.
            ep.pinned = e.held_events;
            idle_if_unused(ep);
        }
        for (const auto& [partition, ps] : m_partitions) {
            m_book.rereads_left += ps.offsets.rereads().size();
        }
        if (m_book.rereads_left == 0) unpin_all();
        forget_idle_episodes();
    }

    /// Says that the next event pushed from `partition` has an offset of at least `offset` (a
    /// Kafka consumer's position after an end-of-partition event or an offset reset). Offsets
    /// held at the restored checkpoint below it, which retention or compaction deleted before
    /// they were re-read, are no longer waited for (counted in stats().lost_rereads), and
    /// committable_offset() is `offset` once nothing is held below it. A partition no event
    /// was taken from is left as it is. push() drops the re-reads below the offset it is given
    /// too, so only a partition that gives no event after such a jump needs this call.
    void skip_to(std::uint32_t partition, std::int64_t offset) {
        const reentry_guard guard(*this);
        partition_state* ps = find_partition(partition);
        if (ps == nullptr) return;
        drop_rereads(ps->offsets.skip_to(offset));
        forget_idle_episodes();
    }

    /// Events held now. O(1).
    [[nodiscard]] auto held_events() const noexcept -> std::size_t { return m_book.events; }
    /// Bytes held now (EventSize plus key sizes). O(1).
    [[nodiscard]] auto held_bytes() const noexcept -> std::size_t { return m_book.bytes; }
    /// Episodes remembered now (holding events or idle). O(1).
    [[nodiscard]] auto remembered_episodes() const noexcept -> std::size_t {
        return m_episodes.size();
    }
    /// The current watermark (milliseconds::min() before the first advance). O(1).
    [[nodiscard]] auto watermark() const noexcept -> time_type { return m_watermark; }
    /// Counters since construction. O(1).
    [[nodiscard]] auto stats() const noexcept -> const resequencer_stats& { return m_stats; }
    /// The validated configuration. O(1).
    [[nodiscard]] auto config() const noexcept -> const resequencer_config& { return m_config; }

private:
    static constexpr std::uint32_t tombstone = std::numeric_limits<std::uint32_t>::max();
    static constexpr std::uint32_t no_slot = tombstone;
    static_assert(no_slot == detail::slot_list::none, "a slot list ends where a slot is none");
    static constexpr std::uint32_t waits_for_pushed = tombstone - 1;  // blocker(): see protect
    static constexpr std::uint64_t last_sequence = std::numeric_limits<std::uint64_t>::max();

    // The held events of one key read from one partition (resequencer/key_queue.hpp).
    using fifo = detail::key_queue;
    struct episode_state;
    struct partition_state;

    /// An episode's held sequences: sequence -> slot, or tombstone (delivered ahead), all at or
    /// above the episode's next sequence (the window's base, kept equal to it). Its storage
    /// comes from the resequencer's node_pool.
    using held_map = detail::sequence_window;
    static_assert(held_map::vacant != tombstone && held_map::vacant != waits_for_pushed,
                  "the window's vacant mark is neither a slot nor a tombstone");

    /// The hash of (key, partition), computed on first use: a push that finds nothing held
    /// never needs it.
    struct lazy_hash {
        std::string_view key;
        std::uint32_t partition = 0;
        std::uint64_t value = 0;
        bool known = false;
        [[nodiscard]] auto get() noexcept -> std::uint64_t {
            if (!known) {
                value = fifo_hash(key, partition);
                known = true;
            }
            return value;
        }
    };

    /// scan()'s skipped stamps: per producer and lane, the episode of the first one, and
    /// whether another episode came too (blocks_stamp).
    struct seen_lane {
        std::uint64_t producer;
        std::uint16_t lane;
        std::uint64_t episode;
        bool mixed;
    };

    // Aligned to a cache line: what a scan, a wake-up and a push's look-ups read fills the first
    // 64 bytes; the rest of what a release reads comes next (the second line, for a small Event).
    struct alignas(64) entry {
        stamp st;
        episode_state* episode = nullptr;  // null when unstamped
        fifo* queue = nullptr;
        std::uint32_t queue_next = no_slot;  // its fifo's events, in partition order
        std::uint32_t queue_prev = no_slot;
        std::uint32_t part_prev = no_slot;  // the partition's held events with an offset
        std::uint32_t part_next = no_slot;
        partition_state* part = nullptr;  // null without an offset
        time_type time{};
        std::size_t bytes = 0;
        std::int64_t offset = -1;  // origin::offset; its partition is the fifo's
        bool late = false;
        bool unknown = false;  // late because its episode's history below it is forgotten
        std::optional<Event> event;
    };

    // What a push or a release reads comes first, after the table's hook (its key).
    struct episode_state : detail::episode_hook<episode_state> {
        std::uint64_t next = 0;
        std::size_t refs = 0;  // held entries pointing here
        time_type last_time = time_type::min();
        std::uint64_t pinned = 0;  // re-reads still to come of events held at the checkpoint
        bool finished = false;  // last_sequence is passed: next stays at it, every sequence is past
        held_map held;          // sequence -> slot, or tombstone
        std::string key;
        detail::given_up_ranges given_up;  // its given-up sequences not taken since, below next
    };

    struct partition_state {
        detail::partition_offsets offsets;
        // Its held events that have an offset, in push order (offset order when the caller keeps
        // push()'s contract), linked through entry::part_prev/part_next (part_links): the first
        // one's offset is the lowest held.
        detail::slot_list held;
    };
    using queue_links = detail::slot_links<entry, &entry::queue_prev, &entry::queue_next>;
    using part_links = detail::slot_links<entry, &entry::part_prev, &entry::part_next>;

    using deadline_item = typename detail::deadline_queue<time_type>::item;

    class reentry_guard {
    public:
        explicit reentry_guard(resequencer& r) : m_r(r) {
            if (m_r.m_busy) detail::reentered();
            m_r.m_busy = true;
        }
        reentry_guard(const reentry_guard&) = delete;
        auto operator=(const reentry_guard&) -> reentry_guard& = delete;
        ~reentry_guard() {
            m_r.m_busy = false;
            m_r.m_book.scanning = nullptr;  // in case a sink threw mid-scan
            m_r.m_book.protect = nullptr;
            // A sink (or an Event's move) threw: a scan or a cascade may have stopped half-way,
            // with events ready to go still held. The next call looks again.
            if (m_r.m_book.in_user_code) {
                m_r.m_book.in_user_code = false;
                m_r.m_book.interrupted = true;
            }
        }

    private:
        resequencer& m_r;
    };

    // After a call that a sink's exception cut short: every fifo is scanned again, so what was
    // ready to go when the exception struck goes now (O(held events), once per exception).
    void resume_after_exception() {
        if (!m_book.interrupted) return;
        m_book.interrupted = false;
        for (std::uint32_t id = 0; id < m_fifo_store.made(); ++id) {
            if (m_fifo_store[id].size() != 0) mark_dirty(m_fifo_store[id]);
        }
        cascade();
    }

    // A push refused for lack of room; its offset is to come again before any later one of its
    // partition (partition_offsets checks it). Out of push()'s text: inline, it cost in-order
    // pushes 15 to 19 instructions each.
    [[gnu::cold, gnu::noinline]] auto refuse(const origin& source) -> push_result {
        ++m_stats.refused;
        if (source.offset >= 0) partition_of(source.partition).offsets.refuse(source.offset);
        return push_result::refused;
    }

    // The outcome of looking at an event before changing any state.
    enum class verdict { duplicate, deliver, hold };
    struct plan {
        verdict what = verdict::hold;
        bool late = false;
        bool unknown = false;  // late with a forgotten history (possibly a duplicate)
        bool reread = false;
        bool offset_taken = false;  // a duplicate by its offset (else by its stamp, if one)
        episode_state* episode = nullptr;
        fifo* queue = nullptr;
        partition_state* part = nullptr;  // the event's partition, if its offset was seen before
    };

    template <class E>
    auto push_impl(std::string_view key, const stamp& st, E& event, const origin& source,
                   time_type time) -> push_result {
        const reentry_guard guard(*this);
        if (source.offset == std::numeric_limits<std::int64_t>::max()) {
            detail::invalid_argument(
                "keyroute resequencer::push: origin.offset must be below 2^63 - 1 (one past it "
                "is the partition's next offset), got 9223372036854775807");
        }
        resume_after_exception();
        if (m_book.rereads_left != 0 && source.offset >= 0) {
            skip_rereads(source.partition, source.offset);
        }
        lazy_hash key_hash{key, source.partition};
        std::size_t bytes = 0;
        bool sized = false;
        bool must_go = false;      // what the buffer must release first waits for this very event
        bool break_cycle = false;  // what it must follow waits for it: it goes out of order
        for (;;) {
            const plan p = classify(key, key_hash, st, source);
            if (p.what == verdict::duplicate) {
                ++m_stats.pushed;
                ++m_stats.duplicates;
                if (p.reread) {
                    // Held at the checkpoint, yet a duplicate by its stamp (another copy came
                    // first): re-read all the same, or committable_offset would stay on it.
                    note_offset(source, true, p.part);
                    if (p.episode != nullptr) {
                        unpin_one(*p.episode, true);
                        idle_if_unused(*p.episode);
                    }
                    forget_idle_episodes();
                } else if (!p.offset_taken) {
                    // A copy by its stamp (a producer's retry): its offset is read, so that the
                    // committable offset passes it and a restart does not read it again after
                    // its episode is forgotten (it would then look new).
                    note_offset(source, false, p.part);
                }
                return push_result::duplicate;
            }
            if (p.what == verdict::deliver || break_cycle) {
                accept_and_deliver(
                    key, st, event, source, time, p,
                    break_cycle ? delivery_order::out_of_order : delivery_order::in_order);
                forget_idle_episodes();
                return push_result::accepted;
            }
            if (!sized) {
                bytes = static_cast<std::size_t>(m_event_size(std::as_const(event))) + key.size();
                sized = true;
            }
            if (!must_go && bytes <= m_config.max_bytes) {
                const std::size_t room =
                    m_config.max_bytes - std::min(m_book.bytes, m_config.max_bytes);
                if (m_book.events < m_config.max_events && bytes <= room) {
                    accept_and_hold(key, key_hash.get(), st, event, source, time, p, bytes);
                    forget_idle_episodes();
                    return push_result::accepted;
                }
                if (m_config.on_full == full_policy::refuse) return refuse(source);
                // The oldest held event's gaps are given up, but never this event's own sequence:
                // if the oldest waits for it, it goes at once instead (as an oversized one),
                // rather than come `late` behind a gap reported for itself.
                m_book.protect = st && !p.late ? p.episode : nullptr;
                m_book.protect_seq = st.sequence;
                m_book.protect_hit = false;
                const bool released = release_oldest(gap_reason::full);
                m_book.protect = nullptr;
                must_go = m_book.protect_hit;
                if (released) continue;
                // Nothing left to release, yet no room (only an accounting slip gets here):
                // delivered at once like an event too big to hold, rather than a loop forever.
            }
            // Too big to ever be held, under either policy: what it must follow goes first, one
            // step at a time (then it is classified again, and comes out deliverable), and no
            // unrelated held event is released or refused for it. If what it must follow waits
            // for it in turn (a cycle), it is the event that breaks the cycle.
            break_cycle = clear_ahead_of(key, st, time, p);
        }
    }

    // One step towards delivering at once an event classified `hold`: releases the first held
    // event it must follow (of its fifo, one that rule 2 makes it wait for; else its episode's
    // lowest held sequence below its own), or else gives up its episode's missing sequences
    // below it. One of them is always there (an event with none of them ahead is deliverable,
    // and classify() says so). The event's own sequence is never given up: when the event it
    // must follow waits for that very sequence, true is returned, and the event goes at once,
    // out of order, to break the cycle. All of it happens before the event is taken, so a sink
    // that throws here leaves the event with the caller.
    auto clear_ahead_of(std::string_view key, const stamp& st, time_type time, const plan& p)
        -> bool {
        if (p.queue != nullptr) {
            const fifo& q = *p.queue;
            for (std::uint32_t k = q.events.first; k != no_slot; k = at(k).queue_next) {
                const entry& y = at(k);
                if (!st || !y.st || blocks_stamp(y.st, st)) {
                    m_book.protect = st && !p.late ? p.episode : nullptr;
                    m_book.protect_seq = st.sequence;
                    m_book.protect_hit = false;
                    const std::uint64_t serial = serial_of(k);
                    force(k, serial, gap_reason::full);
                    m_book.protect = nullptr;
                    return m_book.protect_hit && is_pending(k, serial);
                }
            }
        }
        if (p.episode != nullptr) {
            std::uint32_t first = no_slot;
            p.episode->held.find_if([&](std::uint64_t seq, std::uint32_t slot) {
                if (seq >= st.sequence) return true;
                if (slot == tombstone) return false;
                first = slot;
                return true;
            });
            if (first != no_slot) {
                force(first, serial_of(first), gap_reason::full);
                return false;
            }
        }
        episode_state& ep = episode_for(st, key, time, p.episode);
        idle_if_unused(ep);
        give_up_below(ep, st.sequence, gap_reason::full);
        return false;
    }

    [[nodiscard]] static auto fifo_hash(std::string_view key, std::uint32_t partition) noexcept
        -> std::uint64_t {
        return xxh3{partition}(key);
    }

    [[nodiscard]] auto find_fifo(std::string_view key, std::uint64_t h,
                                 std::uint32_t partition) const -> fifo* {
        return m_fifos.find(
            h, [&](const fifo& q) { return q.partition == partition && q.key() == key; });
    }

    [[nodiscard]] auto find_episode(const stamp& st) -> episode_state* {
        const detail::episode_key id{st.producer, st.lane, st.episode};
        return m_episodes.find(id);
    }

    // Rule 2 between two stamped events: `y`, ahead in the same fifo, blocks `x` when both come
    // from the same lane and different episodes.
    [[nodiscard]] static auto blocks_stamp(const stamp& y, const stamp& x) noexcept -> bool {
        return y.producer == x.producer && y.lane == x.lane && y.episode != x.episode;
    }
    /// A stamp's producer and lane, as an episode key with episode 0 (scan's index).
    [[nodiscard]] static auto lane_of(const stamp& st) noexcept -> detail::episode_key {
        return detail::episode_key{st.producer, st.lane, 0};
    }

    /// The lanes scan() has skipped stamps of: searched in place while there are few (no
    /// allocation once the vector has grown), through an index past `seen_linear` of them.
    static constexpr std::size_t seen_linear = 16;

    [[nodiscard]] auto seen_of(const stamp& st) -> seen_lane* {
        if (m_seen.size() <= seen_linear) {
            for (seen_lane& s : m_seen) {
                if (s.producer == st.producer && s.lane == st.lane) return &s;
            }
            return nullptr;
        }
        const auto it = m_seen_index.find(lane_of(st));
        return it == m_seen_index.end() ? nullptr : &m_seen[it->second];
    }

    void note_seen(const stamp& st) {
        if (seen_lane* s = seen_of(st)) {
            if (s->episode != st.episode) s->mixed = true;
            return;
        }
        m_seen.push_back(seen_lane{st.producer, st.lane, st.episode, false});
        if (m_seen.size() == seen_linear + 1) {
            for (std::size_t k = 0; k < m_seen.size(); ++k) {
                m_seen_index.emplace(detail::episode_key{m_seen[k].producer, m_seen[k].lane, 0}, k);
            }
        } else if (m_seen.size() > seen_linear + 1) {
            m_seen_index.emplace(lane_of(st), m_seen.size() - 1);
        }
    }

    [[nodiscard]] auto fifo_blocks(const fifo& q, const stamp& st) const noexcept -> bool {
        if (q.size() == 0) return false;
        if (!st || q.unstamped != 0) return true;
        for (std::uint32_t k = q.events.first; k != no_slot; k = at(k).queue_next) {
            if (blocks_stamp(at(k).st, st)) return true;
        }
        return false;
    }

    [[nodiscard]] auto classify(std::string_view key, lazy_hash& h, const stamp& st,
                                const origin& source) -> plan {
        plan p;
        if (source.offset >= 0) {
            p.part = find_partition(source.partition);
            if (p.part != nullptr) {
                const auto seen = p.part->offsets.classify(source.offset, source.partition);
                if (seen == detail::partition_offsets::seen::duplicate) {
                    p.what = verdict::duplicate;
                    p.offset_taken = true;
                    return p;
                }
                p.reread = seen == detail::partition_offsets::seen::reread;
            }
        }
        bool seq_ready = true;
        if (st) {
            p.episode = find_episode(st);
            if (p.episode != nullptr) {
                episode_state& ep = *p.episode;
                if (passed(ep, st.sequence)) {
                    // A duplicate only when it is known to have been taken: delivered (not
                    // given up) at a sequence whose history is remembered.
                    const auto status = ep.given_up.of(st.sequence);
                    if (status == detail::given_up_ranges::status::taken) {
                        p.what = verdict::duplicate;
                        return p;
                    }
                    p.unknown = status == detail::given_up_ranges::status::forgotten;
                    p.late = true;
                } else {
                    if (!ep.held.empty() && ep.held.get(st.sequence) != held_map::vacant) {
                        p.what = verdict::duplicate;
                        return p;
                    }
                    seq_ready = st.sequence == ep.next;
                }
            } else {
                seq_ready = st.sequence == 0;
            }
        }
        p.queue = m_fifos.size() == 0 ? nullptr : find_fifo(key, h.get(), source.partition);
        const bool blocked = p.queue != nullptr && fifo_blocks(*p.queue, st);
        p.what = (seq_ready && !blocked) ? verdict::deliver : verdict::hold;
        return p;
    }

    /// Partitions below it are found through a vector (m_partition_index) rather than a hash.
    static constexpr std::uint32_t direct_partitions = 4096;

    [[nodiscard]] auto find_partition(std::uint32_t id) -> partition_state* {
        if (id < direct_partitions) {
            return id < m_partition_index.size() ? m_partition_index[id] : nullptr;
        }
        const auto it = m_partitions.find(id);
        return it == m_partitions.end() ? nullptr : &it->second;
    }

    // The state of partition `id`, made if it is new (every insertion goes through here, so that
    // m_partition_index lists every partition below direct_partitions).
    auto partition_of(std::uint32_t id) -> partition_state& {
        if (partition_state* known = find_partition(id)) return *known;
        if (id < direct_partitions && id >= m_partition_index.size()) {
            m_partition_index.resize(std::size_t{id} + 1, nullptr);
        }
        partition_state& ps = m_partitions[id];
        if (id < direct_partitions) m_partition_index[id] = &ps;
        return ps;
    }

    // Notes an accepted offset; returns its partition's state (`known` if classify() found it),
    // or null for an event without an offset.
    auto note_offset(const origin& source, bool reread, partition_state* known)
        -> partition_state* {
        if (source.offset < 0) return nullptr;
        if (known != nullptr && !reread) {  // the common case, kept small enough to inline
            known->offsets.take(source.offset, false);
            return known;
        }
        return note_new_offset(source, reread, known);
    }

    // note_offset() for a partition's first offset or a re-read.
    [[gnu::noinline]] auto note_new_offset(const origin& source, bool reread,
                                           partition_state* known) -> partition_state* {
        partition_state& ps = known != nullptr ? *known : partition_of(source.partition);
        if (reread) {
            note_reread(ps, source.offset);
        } else {
            ps.offsets.take(source.offset, false);
        }
        return &ps;
    }

    // An offset held at the restored checkpoint is read again (out of line: after a restore only).
    void note_reread(partition_state& ps, std::int64_t offset) {
        if (ps.offsets.take(offset, true) && --m_book.rereads_left == 0) unpin_all();
    }

    // Reading `partition` reached `offset`: the re-reads expected below it are lost (see
    // skip_to()).
    void skip_rereads(std::uint32_t partition, std::int64_t offset) {
        partition_state* ps = find_partition(partition);
        if (ps == nullptr) return;
        ps->offsets.check_owed(offset, partition);  // before anything changes
        drop_rereads(ps->offsets.skip_rereads_below(offset));
    }

    void drop_rereads(std::size_t n) {
        if (n == 0) return;
        m_stats.lost_rereads += n;
        m_book.rereads_left -= n;
        if (m_book.rereads_left == 0) unpin_all();
    }

    // A re-read event of an episode that held events at the restored checkpoint.
    static void unpin_one(episode_state& ep, bool reread) noexcept {
        if (reread && ep.pinned != 0) --ep.pinned;
    }

    // Every offset held at the checkpoint is re-read (once per restore): no episode waits for a
    // re-read any more (one whose events went to another episode's count, or whose stamps
    // changed, included).
    void unpin_all() {
        m_episodes.for_each([&](episode_state& ep) {
            if (ep.pinned == 0) return;
            ep.pinned = 0;
            idle_if_unused(ep);
        });
    }

    // An episode that neither holds events nor waits for re-reads goes to (or moves to the back
    // of) the idle list, where forget_idle_episodes() may drop it.
    void idle_if_unused(episode_state& ep) {
        if (ep.refs == 0 && ep.pinned == 0) m_episodes.set_idle(ep);
    }

    // The episode `id`, made if it is not remembered (its held map drawing on the node pool).
    auto new_episode(const detail::episode_key& id) -> episode_state& {
        return m_episodes.find_or_make(
            id, [&](episode_state& ep) { ep.held = held_map(held_map::allocator_type(m_pool)); });
    }

    auto episode_for(const stamp& st, std::string_view key, time_type time, episode_state* known)
        -> episode_state& {
        episode_state* ep = known;
        if (ep == nullptr) {
            ep = &new_episode(detail::episode_key{st.producer, st.lane, st.episode});
            ep->key.assign(key.data(), key.size());
        }
        if (time > ep->last_time) ep->last_time = time;
        return *ep;
    }

    template <class E>
    void accept_and_deliver(std::string_view key, const stamp& st, E& event, const origin& source,
                            time_type time, const plan& p, delivery_order order) {
        // First, and the event's only copy or move: if it throws, nothing has changed (a second
        // move after the bookkeeping could lose it).
        delivery_type d{Event(std::forward<E>(event)),
                        key,
                        st,
                        source,
                        time,
                        p.late && order == delivery_order::in_order ? delivery_order::late : order,
                        p.unknown};
        ++m_stats.pushed;
        note_offset(source, p.reread, p.part);
        episode_state* ep = nullptr;
        if (st) {
            ep = &episode_for(st, key, time, p.episode);
            if (p.late) {
                ep->given_up.take(st.sequence);
            } else {
                step_next(*ep);
                after_advance(*ep, 0);
            }
            unpin_one(*ep, p.reread);
            idle_if_unused(*ep);
        }
        deliver(std::move(d));
        cascade();
    }

    template <class E>
    void accept_and_hold(std::string_view key, std::uint64_t h, const stamp& st, E& event,
                         const origin& source, time_type time, const plan& p, std::size_t bytes) {
        const std::uint32_t slot = m_slab.allocate();
        entry& e = at(slot);
#if KEYROUTE_HAS_EXCEPTIONS
        try {
            e.event.emplace(std::forward<E>(event));  // first: if it throws, nothing has changed
        } catch (...) {
            m_slab.release(slot);
            throw;
        }
#else
        e.event.emplace(std::forward<E>(event));
#endif
        ++m_stats.pushed;
        ++m_stats.held;
        e.part = note_offset(source, p.reread, p.part);
        e.st = st;
        e.offset = source.offset;
        e.time = time;
        e.bytes = bytes;
        m_slab.set_tag(slot, ++m_serial);
        e.late = p.late;
        e.unknown = p.unknown;
        fifo* q = p.queue;
        if (q == nullptr) {
            // Empty fifos are recycled: a long key's buffer keeps its capacity.
            const std::uint32_t id = m_fifo_store.allocate();
            q = &m_fifo_store[id];
            q->id = id;
            q->set_key(key);
            q->partition = source.partition;
            q->hash = h;
            m_fifos.insert(h, q);
        }
        e.queue = q;
        queue_links::push_back(q->events, slot, e, slot_of());
        ++q->count;
        if (!st) ++q->unstamped;
        if (st) {
            episode_state& ep = episode_for(st, key, time, p.episode);
            e.episode = &ep;
            if (p.late) {
                ep.given_up.take(st.sequence);
            } else {
                ep.held.insert(st.sequence, slot);
            }
            if (ep.refs++ == 0) m_episodes.set_busy(ep);
            unpin_one(ep, p.reread);
        }
        if (e.part != nullptr) part_links::push_back(e.part->held, slot, e, slot_of());
        m_book.events += 1;
        m_book.bytes += bytes;
        m_deadlines.push({detail::saturating_add(time, m_config.max_delay), m_serial, slot});
        m_deadlines.compact(m_book.events,
                            [&](const deadline_item& d) { return is_pending(d.slot, d.serial); });
    }

    /// at(), as the slot lists take it.
    [[nodiscard]] auto slot_of() noexcept {
        return [this](std::uint32_t slot) -> entry& { return at(slot); };
    }

    [[nodiscard]] auto at(std::uint32_t slot) noexcept -> entry& { return m_slab[slot]; }
    [[nodiscard]] auto at(std::uint32_t slot) const noexcept -> const entry& {
        return m_slab[slot];
    }

    [[nodiscard]] auto is_pending(std::uint32_t slot, std::uint64_t serial) const noexcept -> bool {
        return slot < m_slab.made() && serial_of(slot) == serial;
    }

    /// The serial of the event held in `slot` (unique, increasing with hold order), 0 if the
    /// slot is free: the slab's tag, so that checking it loads no entry.
    [[nodiscard]] auto serial_of(std::uint32_t slot) const noexcept -> std::uint64_t {
        return m_slab.tag(slot);
    }

    // Releases the event of the earliest deadline (after what it waits for), or drops the
    // deadline if its event is gone. The deadline leaves the queue only once its event is
    // released: if a sink throws while force() delivers what the event waits for, the event
    // keeps its deadline, so advance_watermark and flush still reach it.
    void release_due(gap_reason why) {
        const deadline_item item = m_deadlines.top();
        if (is_pending(item.slot, item.serial)) force(item.slot, item.serial, why);
        // force() leaves the deadlines as they were (nothing is held meanwhile): `item` is still
        // first. It stays if force() stopped at the event being pushed.
        if (is_pending(item.slot, item.serial)) return;
        m_deadlines.pop();
    }

    auto release_oldest(gap_reason why) -> bool {
        while (!m_deadlines.empty()) {
            const bool pending = is_pending(m_deadlines.top().slot, m_deadlines.top().serial);
            release_due(why);
            if (pending) return true;
        }
        return false;
    }

    // Moves the episode's next sequence on by one. Past last_sequence there is nothing to expect:
    // the episode is finished instead of wrapping to 0 (which would take every given-up or
    // delivered sequence for a new one).
    static void step_next(episode_state& ep) {
        if (ep.next == last_sequence) {
            ep.finished = true;
        } else {
            ++ep.next;
            ep.held.rebase(ep.next);
        }
    }

    // Whether `seq` is behind the episode's progress: delivered or given up (or delivered ahead).
    [[nodiscard]] static auto passed(const episode_state& ep, std::uint64_t seq) noexcept -> bool {
        return ep.finished || seq < ep.next;
    }

    // Moves the episode's next sequence past the sequences already delivered ahead of it.
    static void skip_delivered_ahead(episode_state& ep) {
        while (!ep.finished && !ep.held.empty() && ep.held.get(ep.next) == tombstone) {
            ep.held.erase(ep.next);
            step_next(ep);
        }
    }

    // The episode's next sequence moved: skip tombstones, and wake the fifo of the next one if
    // it is held. `after` is the serial of the event just released from a fifo being scanned.
    void after_advance(episode_state& ep, std::uint64_t scanning_serial) {
        if (!ep.held.empty()) wake_next(ep, scanning_serial);  // nothing held: nothing to do
    }

    // after_advance() for an episode that holds something.
    void wake_next(episode_state& ep, std::uint64_t scanning_serial) {
        skip_delivered_ahead(ep);
        if (ep.finished || ep.held.empty()) return;
        const std::uint32_t slot = ep.held.get(ep.next);
        if (slot == held_map::vacant) return;
        const entry& nxt = at(slot);
        // A forward scan of the same fifo reaches events pushed after the one it released.
        if (scanning_serial != 0 && nxt.queue == m_book.scanning &&
            serial_of(slot) > scanning_serial)
            return;
        mark_dirty(*nxt.queue);
    }

    void mark_dirty(fifo& q) {
        if (q.dirty) return;
        q.dirty = true;
        m_dirty.push_back(&q);
    }

    // Gives up the missing sequences of `ep` below `limit` (not the held ones), and not the
    // protected one (the event being pushed) nor above it.
    void give_up_below(episode_state& ep, std::uint64_t limit, gap_reason why) {
        if (&ep == m_book.protect && ep.next <= m_book.protect_seq && m_book.protect_seq < limit) {
            limit = m_book.protect_seq;
            m_book.protect_hit = true;
        }
        while (ep.next < limit) {
            std::uint64_t first_seq = 0;
            std::uint32_t first_slot = 0;
            const bool any = ep.held.first(first_seq, first_slot);
            if (any && first_seq == ep.next) {
                if (first_slot != tombstone) return;
                ep.held.erase(first_seq);
                ++ep.next;
                ep.held.rebase(ep.next);
                continue;
            }
            const std::uint64_t upto = any ? std::min(limit, first_seq) : limit;
            const std::uint64_t from = ep.next;
            // The episode moves past the range (and the sequences delivered ahead right after
            // it) before the gap sink runs: if it throws, the range is given up all the same,
            // and the next call finds the event at the new next sequence ready.
            ep.next = upto;
            ep.held.rebase(ep.next);
            skip_delivered_ahead(ep);
            report_gap(ep, from, upto - 1, why);
        }
        after_advance(ep, 0);
    }

    void report_gap(episode_state& ep, std::uint64_t first, std::uint64_t last, gap_reason why) {
        ++m_stats.gaps;
        m_stats.missing += last - first + 1;
        ep.given_up.append(first, last);  // every range before is below `first` (below next)
        gap_report r;
        r.producer = ep.id().producer;
        r.lane = ep.id().lane;
        r.episode = ep.id().episode;
        r.first_missing = first;
        r.last_missing = last;
        r.key = ep.key;
        r.reason = why;
        m_book.in_user_code = true;
        m_on_gap(r);
        m_book.in_user_code = false;
    }

    [[nodiscard]] auto seq_ready(const entry& e) const noexcept -> bool {
        return e.episode == nullptr || e.late || e.st.sequence == e.episode->next;
    }

    // Releases every event of `q` that rules 1 and 2 allow, front to back.
    void scan(fifo& q) {
        q.dirty = false;
        m_book.scanning = &q;
        m_seen.clear();
        // A fresh index, not clear(): clear() zeroes every bucket, as many as the most lanes one
        // scan ever indexed (the index exists only past seen_linear lanes).
        if (!m_seen_index.empty()) m_seen_index = decltype(m_seen_index){};
        bool seen_any = false;
        std::uint32_t slot = q.events.first;
        while (slot != no_slot) {
            const entry& e = at(slot);
            const std::uint32_t after = e.queue_next;
            bool blocked = seen_any && !e.st;
            if (!blocked && e.st) {
                // blocks_stamp by any stamp skipped before it, from their lanes: O(1) per
                // event, where a pass over every skipped stamp would make a scan O(h^2).
                const seen_lane* seen = seen_of(e.st);
                blocked = seen != nullptr && (seen->mixed || seen->episode != e.st.episode);
            }
            if (!blocked && seq_ready(e)) {
                release(slot, delivery_order::in_order);  // takes nothing else from q
                slot = after;
                continue;
            }
            seen_any = true;
            if (!e.st) break;  // nothing behind an unstamped held event can pass it
            note_seen(e.st);
            slot = after;
        }
        m_book.scanning = nullptr;
    }

    void cascade() {
        while (!m_dirty.empty()) {
            fifo* q = m_dirty.back();
            m_dirty.pop_back();
            if (q->dirty) scan(*q);
        }
        drop_empty_fifos();
    }

    void drop_empty_fifos() {
        for (fifo* q : m_emptied) {
            q->emptied = false;
            if (q->size() != 0) continue;
            m_fifos.erase(q->hash, q);
            q->recycle();
            m_fifo_store.release(q->id);
        }
        m_emptied.clear();
    }

    // Removes the held event `slot` from every index and delivers it.
    void release(std::uint32_t slot, delivery_order order) {
        entry& e = at(slot);
        fifo& q = *e.queue;
        // Breaking a cycle breaks rule 2, which `late` alone would let the consumer assume held.
        const delivery_order final_order =
            e.late && order == delivery_order::in_order ? delivery_order::late : order;
        // First, and the event's only move: an Event whose move throws stays held, with its
        // deadline, and nothing changes (a second move after the bookkeeping could lose it).
        m_book.in_user_code = true;
        delivery_type d{Event(std::move(*e.event)),
                        q.key(),
                        e.st,
                        origin{q.partition, e.offset},
                        e.time,
                        final_order,
                        e.unknown};
        m_book.in_user_code = false;
        queue_links::erase(q.events, e, slot_of());
        --q.count;
        if (!e.st) --q.unstamped;
        if (q.size() == 0 && !q.emptied) {
            q.emptied = true;
            m_emptied.push_back(&q);
        }
        if (m_book.scanning != &q) mark_dirty(q);
        if (e.episode != nullptr) {
            episode_state& ep = *e.episode;
            if (!e.late) {
                if (e.st.sequence == ep.next) {
                    ep.held.erase(ep.next);
                    step_next(ep);
                    after_advance(ep, serial_of(slot));
                } else {
                    ep.held.assign(e.st.sequence, tombstone);
                }
            }
            --ep.refs;
            idle_if_unused(ep);
        }
        if (e.part != nullptr) part_links::erase(e.part->held, e, slot_of());
        m_book.events -= 1;
        m_book.bytes -= e.bytes;
        e.event.reset();
        e.queue = nullptr;
        e.episode = nullptr;
        e.part = nullptr;
        e.late = e.unknown = false;
        m_slab.release(slot);
        deliver(std::move(d));
    }

    void deliver(delivery_type&& d) {
        ++m_stats.delivered;
        if (d.possibly_duplicate) ++m_stats.possible_duplicates;
        if (d.order == delivery_order::late) ++m_stats.late;
        if (d.order == delivery_order::out_of_order) ++m_stats.out_of_order;
        m_book.in_user_code = true;
        m_on_delivery(std::move(d));
        m_book.in_user_code = false;
    }

    // The first held event that `slot` waits for, or no_slot. Gives up missing sequences of its
    // episode below it first: whoever forces an event forces its whole wait chain.
    [[nodiscard]] auto blocker(std::uint32_t slot, gap_reason why) -> std::uint32_t {
        entry& e = at(slot);
        if (e.episode != nullptr && !e.late) {
            give_up_below(*e.episode, e.st.sequence, why);
            if (e.episode->next < e.st.sequence) {
                const std::uint32_t first = e.episode->held.get(e.episode->next);
                // Not held there: the protected sequence, whose event is being pushed.
                return first != held_map::vacant ? first : waits_for_pushed;
            }
        }
        const fifo& q = *e.queue;
        for (std::uint32_t k = q.events.first; k != slot; k = at(k).queue_next) {
            const entry& y = at(k);
            if (!e.st || !y.st || blocks_stamp(y.st, e.st)) return k;
        }
        return no_slot;
    }

    // Delivers the held event (slot, serial) now, after what it waits for.
    void force(std::uint32_t slot, std::uint64_t serial, gap_reason why) {
        // Nothing is held meanwhile, so the slab does not grow during the walks.
        if (m_visits.size() < m_slab.made()) m_visits.resize(m_slab.made(), 0);
        while (is_pending(slot, serial)) {
            const std::uint64_t walk = ++m_walk;
            std::uint32_t y = slot;
            for (;;) {
                m_visits[y] = walk;
                const std::uint32_t b = blocker(y, why);
                if (b == waits_for_pushed) return;  // the event being pushed goes first
                if (b == no_slot) {
                    release(y, delivery_order::in_order);
                    break;
                }
                if (m_visits[b] == walk) {
                    release(y, delivery_order::out_of_order);
                    break;
                }
                y = b;
            }
            cascade();
        }
    }

    void forget_idle_episodes() {
        m_stats.forgotten_episodes +=
            m_episodes.forget_idle(m_config.max_idle_episodes, [&](const episode_state& ep) {
                return detail::saturating_add(ep.last_time, m_config.episode_ttl) <= m_watermark;
            });
    }

    resequencer_config m_config;
    delivery_sink m_on_delivery;
    gap_sink m_on_gap;
    EventSize m_event_size;

    // Declared before the containers drawing on it (each keeps it alive anyway).
    std::shared_ptr<detail::node_pool> m_pool = std::make_shared<detail::node_pool>();
    detail::slab<entry> m_slab;  // held events (an entry never moves; a slot number finds it)
    detail::hashed_index<fifo> m_fifos;  // hash of (key, partition) -> its fifo, if it holds events
    detail::slab<fifo> m_fifo_store;     // every fifo ever made (<= peak held), empty ones free
    detail::episode_table<episode_state> m_episodes;
    std::unordered_map<std::uint32_t, partition_state> m_partitions;
    std::vector<partition_state*> m_partition_index;  // partition -> its node in m_partitions
    detail::deadline_queue<time_type> m_deadlines;    // of the held events, lazily deleted

    std::vector<fifo*> m_dirty;
    std::vector<fifo*> m_emptied;
    std::vector<seen_lane> m_seen;
    std::unordered_map<detail::episode_key, std::size_t, detail::episode_key_hash> m_seen_index;

    /// The pointers and counts a move takes from its source, leaving it empty, as the
    /// containers' moves leave theirs: a moved-from resequencer must not keep an idle list that
    /// points into the episodes the move took.
    struct bookkeeping {
        fifo* scanning = nullptr;
        bool interrupted = false;      // a sink threw: see resume_after_exception
        bool in_user_code = false;     // inside a sink or an Event's move (reentry_guard)
        std::size_t rereads_left = 0;  // offsets held at the restored checkpoint, not re-read
        // While push() makes room: the episode and sequence of the event being pushed, which
        // give_up_below() leaves alone, and whether it had to.
        episode_state* protect = nullptr;
        std::uint64_t protect_seq = 0;
        bool protect_hit = false;
        std::size_t events = 0;
        std::size_t bytes = 0;

        bookkeeping() = default;
        bookkeeping(const bookkeeping&) = default;
        bookkeeping(bookkeeping&& o) noexcept { *this = std::move(o); }
        auto operator=(const bookkeeping&) -> bookkeeping& = default;
        auto operator=(bookkeeping&& o) noexcept -> bookkeeping& {
            if (this != &o) {
                *this = static_cast<const bookkeeping&>(o);
                o.clear();
            }
            return *this;
        }
        ~bookkeeping() = default;
        void clear() noexcept { *this = static_cast<const bookkeeping&>(bookkeeping{}); }
    };
    bookkeeping m_book;
    std::uint64_t m_serial = 0;
    std::uint64_t m_walk = 0;
    std::vector<std::uint64_t> m_visits;  // per slot: the last force() walk that reached it
    time_type m_watermark = time_type::min();
    resequencer_stats m_stats;
    bool m_busy = false;

    // Each member type but EventSize and the scalars: the standard does not promise them all.
    static_assert(
        detail::nothrow_movable_v<resequencer_config, delivery_sink, gap_sink, decltype(m_slab),
                                  decltype(m_fifos), decltype(m_fifo_store), decltype(m_episodes),
                                  decltype(m_partitions), decltype(m_partition_index),
                                  decltype(m_deadlines), decltype(m_seen), decltype(m_seen_index),
                                  time_type, resequencer_stats>,
        "keyroute::resequencer: a member's move may throw, so its moves cannot be noexcept");
};

}  // namespace keyroute
