#pragma once

/// @file
/// keyroute::kafka::ordered_group: one member of a consumer group that runs the application's
/// `process` step on every event in parallel across the members, and its ordered `apply` step
/// at the member that owns the key's home partition, in each producer lane's order. The design
/// and the guarantee are in docs/ordering.md ("Consumer groups"); in short:
///
/// - Topics: the source topic, and a repartition topic and a changelog topic of the group's own
///   (default_repartition_topic, default_changelog_topic), all with the source's partition count
///   (the member checks). Members subscribe to the source and the repartition
///   topic with the range assignor, which gives each member the same partition numbers of both
///   (co-partitioned, as Kafka Streams requires; the member checks every assignment). Owning
///   partition h of both makes a member the owner of home h.
/// - Reading source partition p: every event is processed here. An event whose key's home
///   (`Partitioner::route(key)`) is p goes to home p's resequencer; any other is forwarded to the
///   repartition topic's partition home(key), value = process's result, with the stamp, the
///   timestamp and its source position (origin header). Always so, even when this member owns
///   that home too: a home's state then depends on its own two partitions only, and can move
///   alone.
/// - Home h's resequencer reads source h directly and repartition h, ordering forwarded events by
///   their source position: it sees each source partition's events of h's keys in that
///   partition's order, as one consumer of the whole topic would, and a re-forward after a crash
///   (same source position, read before) is a duplicate it drops.
/// - Watermarks over the shuffle (Flink's: the least of the inputs'): each member writes, every
///   progress_interval, a progress record (group_wire.hpp) to every repartition partition: for
///   each of its source partitions, its watermark (the newest message timestamp it has handled,
///   capped at its wall clock; its wall clock at the partition's end) and, for monitoring,
///   whether it is reading, at its end or blocked. Written after the forwards, it comes after
///   them. Home h's watermark clock (ms since the epoch, never going back, starting at the wall
///   clock of the takeover) runs to the least watermark of what can still reach it: source h's
///   own, and every other source partition's last record, except one silent for idle_timeout
///   (a dead member); a source not heard from since the takeover holds it, for idle_timeout at
///   most. So a sequence is given up (max_delay) only once every source that can forward it
///   has read max_delay past it, under continuous production too. A full home (one of its two
///   partitions blocked by a refusal) can take nothing that fills its gaps: its clock runs at
///   the wall clock's pace, and max_delay gives up its oldest gaps first. Message timestamps
///   are taken as the producers wrote them: a producer whose clock is behind the others' by
///   more than max_delay makes its events late; one ahead makes its partition's watermark run
///   ahead (to the reader's clock at most), and events behind it in that partition may come
///   late. A source partition without timestamps holds the homes it forwards to until its end.
/// - Commits, every commit_interval, on a rebalance's revoke and on close(): the producer is
///   flushed (every forward acknowledged), then each home's checkpoint is written to the
///   changelog topic's partition h (its resequencer state, the offsets to resume source h and
///   repartition h from, and what the application's save_state returned) and acknowledged, then
///   the same offsets are committed to the group (for lag monitoring; the changelog's are the
///   ones a new owner uses). A source offset is never passed before its forwards are
///   acknowledged. A home's new owner reads its last checkpoint, hands the application's state
///   to restore_state, restores the resequencer and resumes both partitions from the
///   checkpoint's offsets: events applied after that checkpoint are applied again, unless the
///   application's state rolls them back (then apply is exactly once).
/// - Backpressure: a home's resequencer refuses what it cannot hold (full_policy::refuse); the
///   refused message's partition is paused and the message retried each turn, so nothing is
///   given up for lack of room while Kafka can hold it; so is a source partition whose forward
///   finds the producer's queue full (the repartition topic's leader down, say).
///
/// Thread-safety: none; one thread calls poll(). Members are independent objects (one per
/// thread or process); the callbacks run inside poll(), commit() and close().

#include "../partitioner.hpp"
#include "../resequencer.hpp"
#include "../stamp.hpp"
#include "checkpoint.hpp"
#include "group_wire.hpp"
#include "handles.hpp"
#include "rdkafka.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace keyroute::kafka {

/// One event as process() and apply() see it. Views are valid during the call only.
struct group_event {
    std::string_view key;
    /// process(): the event's value as produced; apply(): what process() returned for it.
    std::string_view value;
    keyroute::stamp stamp;        ///< false for an unstamped event (or a malformed stamp)
    std::int32_t partition = 0;   ///< the source partition it was read from
    std::int64_t offset = 0;      ///< its offset there
    std::int64_t timestamp = -1;  ///< the message's timestamp (ms since the epoch), -1 if none
    std::int32_t home = 0;        ///< the key's home partition (where apply() runs)
    delivery_order order = delivery_order::in_order;  ///< apply() only; see delivery_order
};

/// What the application gives a member.
struct group_handlers {
    /// The order-insensitive work, run on every event where it is read (at least once: again
    /// for events read since the last checkpoint after a takeover); returns what apply() gets
    /// as the event's value (and what is forwarded to the home). Required.
    std::function<std::string(const group_event&)> process;
    /// The ordered step, run at the home's owner in each producer lane's order. Required.
    std::function<void(const group_event&)> apply;
    /// Called at each commit for each home owned: makes what apply() did for the home durable
    /// and returns the state to store with the home's checkpoint (e.g. an output's length).
    /// Optional (then "" is stored).
    std::function<std::string(std::int32_t home)> save_state;
    /// Called when the member takes over a home, before any apply() of it: the state the last
    /// checkpoint stored, or nullptr when the home has none. An application that rolls its
    /// output back to that state gets exactly-once apply(). Optional.
    std::function<void(std::int32_t home, const std::string* state)> restore_state;
    /// Called when a home is taken from the member (after its last commit). Optional.
    std::function<void(std::int32_t home)> release;
    /// Receives each gap a home's resequencer gives up. Optional (gaps are counted).
    std::function<void(std::int32_t home, const gap_report&)> on_gap;
    /// Receives each run of repartition records [first, last] of a home deleted (retention)
    /// before the member read them: forwarded events lost to it, and progress records among
    /// them (which cannot be told apart once deleted); their stamped sequences are then given up
    /// as gaps. Optional (counted in stats().lost_forwards).
    std::function<void(std::int32_t home, std::int64_t first, std::int64_t last)> on_lost;
};

/// The settings of a member.
struct ordered_group_config {
    std::string topic;  ///< the source topic
    /// "" for default_repartition_topic(group.id, topic). One per group: a group reading
    /// another's forwards would apply what the other's process() made.
    std::string repartition_topic;
    std::string
        changelog_topic;  ///< "" for default_changelog_topic(group.id, topic); one per group
    /// Each home's resequencer limits; `on_full` is ignored (always full_policy::refuse).
    resequencer_config reseq{};
    /// A source partition whose progress records stop this long (its member died) no longer
    /// holds a home's watermark clock. Longer than a member's failover; 0 (the default) derives
    /// it from the consumer's conf: max(2 session.timeout.ms, max.poll.interval.ms) for the
    /// death to be noticed and the rebalance done, plus 2 flush_timeout (the commits inside
    /// the rebalance) and metadata_timeout (the new owner's checkpoint read): 330 s with
    /// librdkafka's defaults (300 s + 2 x 10 s + 10 s). >= 0.
    std::chrono::milliseconds idle_timeout{0};
    std::chrono::milliseconds commit_interval{std::chrono::seconds(1)};           ///< > 0
    std::chrono::milliseconds progress_interval{std::chrono::milliseconds(100)};  ///< > 0
    /// How long the constructor waits for metadata, and a takeover for a checkpoint. > 0.
    std::chrono::milliseconds metadata_timeout{std::chrono::seconds(10)};
    /// How long a commit waits for the forwards and checkpoints to be acknowledged; a commit
    /// that times out is skipped (counted) and tried again at the next one. > 0.
    std::chrono::milliseconds flush_timeout{std::chrono::seconds(10)};
    /// Extra settings of the member's producer (forwards, progress, checkpoints), after the
    /// connection settings copied from the consumer's conf, enable.idempotence=true,
    /// allow.auto.create.topics=false, linger.ms=5 and compression.type=lz4.
    std::vector<std::pair<std::string, std::string>> producer_settings;
};

/// The repartition topic of group `group` on `topic` by default:
/// "<group>-<topic>-keyroute-repartition" (create it with the topic's partition count).
[[nodiscard]] inline auto default_repartition_topic(std::string_view group, std::string_view topic)
    -> std::string {
    return std::string(group) + "-" + std::string(topic) + "-keyroute-repartition";
}
/// The changelog topic by default: "<group>-<topic>-keyroute-changelog" (the same count;
/// cleanup.policy=compact).
[[nodiscard]] inline auto default_changelog_topic(std::string_view group, std::string_view topic)
    -> std::string {
    return std::string(group) + "-" + std::string(topic) + "-keyroute-changelog";
}

/// Counters since construction.
struct ordered_group_stats {
    std::uint64_t read = 0;             ///< source messages read
    std::uint64_t processed = 0;        ///< process() calls
    std::uint64_t forwarded = 0;        ///< events forwarded to the repartition topic
    std::uint64_t received = 0;         ///< forwarded events read from the repartition topic
    std::uint64_t applied = 0;          ///< apply() calls
    std::uint64_t duplicates = 0;       ///< re-read or re-forwarded events applied before (dropped)
    std::uint64_t malformed = 0;        ///< malformed stamp headers (applied as unstamped)
    std::uint64_t late = 0;             ///< applies with delivery_order::late
    std::uint64_t out_of_order = 0;     ///< applies with delivery_order::out_of_order
    std::uint64_t gaps = 0;             ///< gap reports
    std::uint64_t missing = 0;          ///< sequences given up
    std::uint64_t refused = 0;          ///< pushes refused (a home full), retried
    std::uint64_t progress = 0;         ///< progress records written
    std::uint64_t commits = 0;          ///< commits done (checkpoints written and acknowledged)
    std::uint64_t skipped_commits = 0;  ///< commits skipped (an acknowledgement timed out)
    std::uint64_t assignments = 0;      ///< rebalances that gave the member partitions
    std::uint64_t consume_errors = 0;   ///< transient librdkafka errors (recovered)
    std::uint64_t lost_forwards = 0;    ///< repartition records deleted before read (on_lost)
};

/// What a user watches of one home partition the member owns.
struct home_metrics {
    std::int32_t home = 0;
    std::size_t held_events = 0;       ///< events its resequencer holds
    std::int64_t source_lag = 0;       ///< messages of source `home` not read yet
    std::int64_t repartition_lag = 0;  ///< messages of repartition `home` not read yet
    /// How far its watermark clock is behind the wall clock (what it still waits for).
    std::chrono::milliseconds watermark_lag{0};
};

/// One member of an ordered group; see the file comment.
/// @tparam Partitioner the producers' base partitioner (the salting router's), built as
///         `Partitioner(partitions)`: it names each key's home.
template <class Partitioner = hash_partitioner<>>
class ordered_group {
public:
    /// Creates the member from `conf` (ownership taken, also on failure): a consumer with a
    /// group.id (required), and a producer and a changelog reader with its connection settings
    /// (bootstrap.servers, security.*, sasl.*, ssl.*, client.id, log_level, debug). Sets the
    /// conf's rebalance callback and opaque, partition.assignment.strategy=range,
    /// enable.partition.eof, and turns automatic commits and topic creation off. Subscribes.
    /// @throws std::invalid_argument for a config field out of range, no group.id, or a missing
    ///         handler; std::runtime_error when a client cannot be created, or a topic does not
    ///         exist or has another partition count than the source.
    ordered_group(rd_kafka_conf_t* conf, ordered_group_config config, group_handlers handlers)
        : m_conf(conf),
          m_config(check(std::move(config), conf)),
          m_on(std::move(handlers)) {
        if (!m_on.process || !m_on.apply) fail_arg("process and apply are required");
        m_group = detail::conf_value(m_conf.get(), "group.id");
        if (m_group.empty()) fail_arg("the conf has no group.id");
        if (m_config.idle_timeout.count() == 0) m_config.idle_timeout = derived_idle_timeout();
        if (m_config.repartition_topic.empty()) {
            m_config.repartition_topic = default_repartition_topic(m_group, m_config.topic);
        }
        if (m_config.changelog_topic.empty()) {
            m_config.changelog_topic = default_changelog_topic(m_group, m_config.topic);
        }
        if (m_config.repartition_topic == m_config.topic ||
            m_config.changelog_topic == m_config.topic ||
            m_config.changelog_topic == m_config.repartition_topic) {
            fail_arg("the source, repartition and changelog topics must differ");
        }
        create_clients();
        m_partitions = partitions_of(m_config.topic);
        for (const auto* t : {&m_config.repartition_topic, &m_config.changelog_topic}) {
            const auto n = partitions_of(*t);
            if (n != m_partitions) {
                fail("topic " + *t + " has " + std::to_string(n) + " partitions, " +
                     m_config.topic + " has " + std::to_string(m_partitions) +
                     ": create it with the same count");
            }
        }
        m_base = std::make_unique<Partitioner>(static_cast<std::uint32_t>(m_partitions));
        now();
        m_last_tick = m_last_commit = m_last_progress = m_now;
        subscribe();
    }

    ordered_group(const ordered_group&) = delete;
    ordered_group(ordered_group&&) = delete;
    auto operator=(const ordered_group&) -> ordered_group& = delete;
    auto operator=(ordered_group&&) -> ordered_group& = delete;
    /// Leaves the group without committing (as a crash would: call close() to commit).
    ~ordered_group() {
        m_no_commit = true;
        if (m_consumer && !m_closed) rd_kafka_consumer_close(m_consumer.get());
        m_homes.clear();
    }

    /// One turn: takes part in rebalances, reads up to a batch of messages (waiting up to
    /// `timeout` for the first), processes, forwards and applies what it can, writes progress
    /// and commits when their intervals have passed.
    /// @throws std::runtime_error on a fatal error (a topic gone, an assignment that is not
    ///         co-partitioned, a forward that failed, members that disagree on the partitioner);
    ///         what the handlers throw. After any exception the member is failed: it commits
    ///         nothing more (destroy it and start a new one, which resumes from the last
    ///         checkpoints); poll() and commit() then throw std::runtime_error.
    void poll(std::chrono::milliseconds timeout) {
        refuse_if_failed("poll");
        failing_on_throw([&] { turn(timeout); });
    }

    /// Commits now (see the file comment), waiting for the acknowledgements. Returns false when
    /// one timed out (the commit is skipped). @throws as poll().
    auto commit() -> bool {
        refuse_if_failed("commit");
        bool done = false;
        failing_on_throw([&] { done = commit_all(true); });
        return done;
    }

    /// Commits (unless failed), leaves the group and flushes the producer. If it throws (a
    /// handler, the commit), the member is failed and closed without committing more.
    void close() {
        if (m_closed) return;
        failing_on_throw([&] {
            if (!m_failed) static_cast<void>(commit_all(true));
        });
        m_no_commit = true;  // the revoke inside close: committed just now, or must not be
        rd_kafka_consumer_close(m_consumer.get());
        m_closed = true;
        failing_on_throw([&] { rethrow_pending(); });
        m_homes.clear();
        rd_kafka_flush(m_producer.get(), static_cast<int>(m_config.flush_timeout.count()));
    }

    /// True after poll(), commit() or close() threw.
    [[nodiscard]] auto failed() const noexcept -> bool { return m_failed; }
    /// True when every partition the member owns is read to its end, nothing is waiting to be
    /// pushed and no home holds an event. A snapshot: the members' own progress records land in
    /// the repartition topic every `progress_interval`, so on an idle topic it goes false now
    /// and then; a "done" test should also watch that nothing is applied for a while.
    [[nodiscard]] auto caught_up() const -> bool {
        for (const auto& [h, home] : m_homes) {
            if (!home->source.at_end() || !home->repart.at_end() ||
                home->reseq->held_events() > 0) {
                return false;
            }
        }
        return true;
    }

    /// The homes this member owns now, in increasing order.
    [[nodiscard]] auto homes() const -> std::vector<std::int32_t> {
        std::vector<std::int32_t> out;
        for (const auto& entry : m_homes) out.push_back(entry.first);
        return out;
    }
    /// Held events, lags and watermark lag of each home owned (lags from librdkafka's cached
    /// high watermarks: no request).
    [[nodiscard]] auto metrics() const -> std::vector<home_metrics> {
        std::vector<home_metrics> out;
        const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        for (const auto& [h, home] : m_homes) {
            home_metrics m;
            m.home = h;
            m.held_events = home->reseq->held_events();
            m.source_lag = lag(m_config.topic, h, home->source.next);
            m.repartition_lag = lag(m_config.repartition_topic, h, home->repart.next);
            m.watermark_lag = std::max(std::chrono::milliseconds(0), wall - time_of(*home));
            out.push_back(m);
        }
        return out;
    }
    /// Events forwarded per second over the last commit interval.
    [[nodiscard]] auto forward_rate() const noexcept -> double { return m_forward_rate; }
    [[nodiscard]] auto stats() const noexcept -> const ordered_group_stats& { return m_stats; }
    [[nodiscard]] auto partitions() const noexcept -> std::int32_t { return m_partitions; }
    [[nodiscard]] auto consumer() const noexcept -> rd_kafka_t* { return m_consumer.get(); }
    [[nodiscard]] auto producer() const noexcept -> rd_kafka_t* { return m_producer.get(); }
    [[nodiscard]] auto config() const noexcept -> const ordered_group_config& { return m_config; }

private:
    using steady = std::chrono::steady_clock;

    /// A held event: what process() returned, and where apply() finds its repartition offset.
    struct payload {
        std::string value;
        std::int64_t timestamp = -1;
        std::int64_t repartition_offset = -1;  ///< -1: read from the source directly
    };
    struct payload_size {
        auto operator()(const payload& p) const noexcept -> std::size_t {
            return sizeof(payload) + p.value.size();
        }
    };
    using reseq_type = resequencer<payload, payload_size>;

    using message_ptr = detail::message_ptr;
    using handle_ptr = detail::handle_ptr;
    using conf_ptr = detail::conf_ptr;

    /// A message read and not handled yet; `result` once processed (kept across a refusal).
    struct pending {
        message_ptr message;
        std::optional<std::string> result;
        keyroute::stamp stamp;
    };

    /// One owned partition of the source or the repartition topic.
    struct lane_state {
        std::deque<pending> queue;  ///< read, not handled yet, in offset order
        std::int64_t next = -1;     ///< one past the last offset handled (or its first position)
        std::int64_t end = -1;      ///< the last end-of-partition offset, -1 after a newer message
        bool paused = false;        ///< paused after a refusal or a full producer queue
        std::int64_t newest = -1;   ///< the newest message timestamp handled, -1 for none

        /// Read to the partition's end as librdkafka last reported it.
        [[nodiscard]] auto at_end() const noexcept -> bool {
            return queue.empty() && end >= 0 && next >= end;
        }
        /// Held back by a refused message: nothing behind it moves until its home takes it.
        [[nodiscard]] auto blocked() const noexcept -> bool { return paused && !queue.empty(); }
    };

    /// What home h's clock knows of a source partition's forwarding: its last progress record.
    struct source_seen {
        progress_known known;
        steady::time_point when{};  ///< when a record of it was last read, stale or not
    };

    /// Everything of one owned home partition.
    struct home_state {
        std::int32_t home = 0;
        lane_state source;
        lane_state repart;
        std::int64_t pushed_next = -1;  ///< one past the last source offset pushed here
        std::set<std::int64_t> held;    ///< repartition offsets of events held
        std::vector<source_seen> seen;  ///< by source partition
        steady::time_point since{};     ///< when this member took it over
        std::int64_t clock = 0;  ///< its watermark clock, ms since the epoch; never goes back
        std::unique_ptr<reseq_type> reseq;
    };

    static constexpr int batch = 2000;  ///< messages taken from librdkafka per turn at most

    // ---- set-up ---------------------------------------------------------------------------

    [[noreturn]] static void fail_arg(const std::string& what) {
        keyroute::detail::invalid_argument("keyroute::kafka::ordered_group: " + what);
    }
    [[noreturn]] void fail(const std::string& what) const {
        keyroute::detail::runtime_error("keyroute::kafka::ordered_group(" + m_config.topic +
                                        "): " + what);
    }

    static auto check(ordered_group_config c, const rd_kafka_conf_t* conf) -> ordered_group_config {
        if (conf == nullptr) fail_arg("null conf");
        if (c.topic.empty()) fail_arg("topic is empty");
        detail::check_duration(fail_arg, "idle_timeout", c.idle_timeout, 0);
        detail::check_duration(fail_arg, "commit_interval", c.commit_interval, 1);
        detail::check_duration(fail_arg, "progress_interval", c.progress_interval, 1);
        detail::check_duration(fail_arg, "metadata_timeout", c.metadata_timeout, 1);
        detail::check_duration(fail_arg, "flush_timeout", c.flush_timeout, 1);
        if (!detail::names_brokers(conf))
            fail_arg("the conf names no brokers (set bootstrap.servers)");
        c.reseq.on_full = full_policy::refuse;
        return c;
    }

    /// idle_timeout's default (see ordered_group_config).
    [[nodiscard]] auto derived_idle_timeout() const -> std::chrono::milliseconds {
        const auto ms = [this](const char* name, long long fallback) {
            const std::string text = detail::conf_value(m_conf.get(), name);
            long long value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            // librdkafka validated it when it was set.
            return ec == std::errc() && end == text.data() + text.size() ? value : fallback;
        };
        const long long failover =
            std::max(2 * ms("session.timeout.ms", 45000), ms("max.poll.interval.ms", 300000));
        return std::chrono::milliseconds(failover) + 2 * m_config.flush_timeout +
               m_config.metadata_timeout;
    }

    void set(rd_kafka_conf_t* conf, const std::string& name, const std::string& value) const {
        char errstr[512];
        if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) !=
            RD_KAFKA_CONF_OK) {
            fail(name + ": " + errstr);
        }
    }

    /// A conf with `from`'s connection settings only (no consumer properties: a producer warns
    /// of each).
    auto connection_conf(rd_kafka_conf_t* from) const -> conf_ptr {
        conf_ptr out(rd_kafka_conf_new());
        std::map<std::string, std::string, std::less<>> defaults;
        std::size_t n = 0;
        const char** dump = rd_kafka_conf_dump(out.get(), &n);
        for (std::size_t i = 0; i + 1 < n; i += 2) defaults[dump[i]] = dump[i + 1];
        rd_kafka_conf_dump_free(dump, n);
        dump = rd_kafka_conf_dump(from, &n);
        for (std::size_t i = 0; i + 1 < n; i += 2) {
            const std::string_view name = dump[i];
            const bool copy = name == "metadata.broker.list" || name == "client.id" ||
                              name == "log_level" || name == "debug" ||
                              name == "security.protocol" || name.rfind("sasl.", 0) == 0 ||
                              name.rfind("ssl.", 0) == 0 || name == "broker.address.family";
            const auto d = defaults.find(name);
            if (copy && (d == defaults.end() || d->second != dump[i + 1])) {  // set by the user
                set(out.get(), std::string(name), dump[i + 1]);
            }
        }
        rd_kafka_conf_dump_free(dump, n);
        return out;
    }

    void create_clients() {
        auto producer_conf = connection_conf(m_conf.get());
        set(producer_conf.get(), "enable.idempotence", "true");
        set(producer_conf.get(), "allow.auto.create.topics", "false");  // metadata checks
        set(producer_conf.get(), "linger.ms", "5");
        set(producer_conf.get(), "compression.type", "lz4");  // repeated header names, mostly
        for (const auto& [name, value] : m_config.producer_settings) {
            set(producer_conf.get(), name, value);
        }
        rd_kafka_conf_set_dr_msg_cb(producer_conf.get(), &ordered_group::on_delivery);
        rd_kafka_conf_set_opaque(producer_conf.get(), this);
        m_producer = make(RD_KAFKA_PRODUCER, std::move(producer_conf), "producer");

        auto reader_conf = connection_conf(m_conf.get());
        set(reader_conf.get(), "group.id", m_group + ".changelog-reader");
        set(reader_conf.get(), "enable.auto.commit", "false");
        set(reader_conf.get(), "enable.partition.eof", "false");
        m_reader = make(RD_KAFKA_CONSUMER, std::move(reader_conf), "changelog reader");

        rd_kafka_conf_t* conf = m_conf.get();
        set(conf, "partition.assignment.strategy", "range");
        set(conf, "enable.partition.eof", "true");
        set(conf, "enable.auto.commit", "false");
        set(conf, "enable.auto.offset.store", "false");
        set(conf, "allow.auto.create.topics", "false");
        rd_kafka_conf_set_rebalance_cb(conf, &ordered_group::on_rebalance);
        rd_kafka_conf_set_opaque(conf, this);
        m_consumer = make(RD_KAFKA_CONSUMER, std::move(m_conf), "consumer");
        rd_kafka_poll_set_consumer(m_consumer.get());
        // The repartition topic restarts from its earliest record when an offset is out of range
        // (retention deleted what it pointed to), whatever auto.offset.reset says for the
        // source: what was deleted is reported to on_lost, the rest is applied. librdkafka keeps
        // the configuration of a topic's first handle, so this one is made first and kept.
        rd_kafka_topic_conf_t* tconf = rd_kafka_topic_conf_new();
        char errstr[512];
        if (rd_kafka_topic_conf_set(tconf, "auto.offset.reset", "earliest", errstr,
                                    sizeof errstr) != RD_KAFKA_CONF_OK) {
            rd_kafka_topic_conf_destroy(tconf);
            fail(std::string("auto.offset.reset: ") + errstr);
        }
        m_repart_handle.reset(
            rd_kafka_topic_new(m_consumer.get(), m_config.repartition_topic.c_str(), tconf));
        if (!m_repart_handle) fail("rd_kafka_topic_new failed for the repartition topic");
    }

    auto make(rd_kafka_type_t type, conf_ptr conf, const char* what) const -> handle_ptr {
        char errstr[512];
        rd_kafka_t* rk = rd_kafka_new(type, conf.get(), errstr, sizeof errstr);
        if (rk == nullptr) fail(std::string("rd_kafka_new (") + what + "): " + errstr);
        static_cast<void>(conf.release());  // rd_kafka_new took it
        return handle_ptr(rk);
    }

    /// A topic's partition count; throws when it does not exist or its metadata does not come.
    auto partitions_of(const std::string& topic) const -> std::int32_t {
        const auto deadline = steady::now() + m_config.metadata_timeout;
        rd_kafka_topic_t* rkt = rd_kafka_topic_new(m_producer.get(), topic.c_str(), nullptr);
        if (rkt == nullptr) fail("rd_kafka_topic_new failed");
        std::string why = "timed out";
        while (steady::now() < deadline) {
            const rd_kafka_metadata_t* md = nullptr;
            const auto err = rd_kafka_metadata(m_producer.get(), 0, rkt, &md, 1000);
            std::int32_t n = -1;
            rd_kafka_resp_err_t topic_err = err;
            if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                topic_err =
                    md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
                if (topic_err == RD_KAFKA_RESP_ERR_NO_ERROR) n = md->topics[0].partition_cnt;
                rd_kafka_metadata_destroy(md);
            }
            if (n > 0) {
                rd_kafka_topic_destroy(rkt);
                return n;
            }
            why = rd_kafka_err2str(topic_err);
            if (topic_err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                topic_err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) {
                rd_kafka_topic_destroy(rkt);
                fail("topic " + topic + " does not exist (create it with the source's count)");
            }
        }
        rd_kafka_topic_destroy(rkt);
        fail("no metadata for topic " + topic + ": " + why);
    }

    void subscribe() {
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(2);
        rd_kafka_topic_partition_list_add(list, m_config.topic.c_str(), RD_KAFKA_PARTITION_UA);
        rd_kafka_topic_partition_list_add(list, m_config.repartition_topic.c_str(),
                                          RD_KAFKA_PARTITION_UA);
        const auto err = rd_kafka_subscribe(m_consumer.get(), list);
        rd_kafka_topic_partition_list_destroy(list);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
            fail(std::string("subscribe: ") + rd_kafka_err2str(err));
    }

    // ---- the turn -------------------------------------------------------------------------

    void refuse_if_failed(const char* call) const {
        if (m_closed) fail(std::string(call) + "() after close()");
        if (m_failed) {
            fail(std::string(call) + "() after an exception: destroy this member and start a " +
                 "new one (it resumes from the last checkpoints)");
        }
    }

    /// Runs `f`; if it throws, the member is failed (it commits nothing more) and the exception
    /// goes on. Only a throw fails it: the revoke inside a poll() must still commit.
    template <class F>
    void failing_on_throw(F&& f) {
#if KEYROUTE_HAS_EXCEPTIONS
        try {
            std::forward<F>(f)();
        } catch (...) {
            m_failed = true;
            throw;
        }
#else
        std::forward<F>(f)();
#endif
    }

    void rethrow_pending() {
        if (m_pending_error) {
            auto e = std::exchange(m_pending_error, nullptr);
            std::rethrow_exception(e);
        }
    }

    void turn(std::chrono::milliseconds timeout) {
        rd_kafka_poll(m_producer.get(), 0);  // delivery reports
        check_forwards();
        int taken = 0;
        bool waiting_work = false;  // held back by a full producer queue: retry without a wait
        for (const auto& [h, home] : m_homes) {
            for (const lane_state* l : {&home->source, &home->repart}) {
                waiting_work = waiting_work || (!l->queue.empty() && !l->paused);
            }
        }
        auto wait = waiting_work
                        ? 0
                        : static_cast<int>(std::clamp<std::int64_t>(timeout.count(), 0, 1 << 30));
        while (taken < batch) {
            rd_kafka_message_t* m = rd_kafka_consumer_poll(m_consumer.get(), wait);
            rethrow_pending();  // what a rebalance callback could not throw through librdkafka
            if (m == nullptr) break;
            wait = 0;
            ++taken;
            take(message_ptr(m));
        }
        now();
        tick();
        for (auto& [h, home] : m_homes) {
            drain(*home, home->source, &ordered_group::handle_source);
            drain(*home, home->repart, &ordered_group::handle_forwarded);
        }
        now();
        tick();
        for (auto& [h, home] : m_homes) {
            resume_if_drained(home->source, m_config.topic, h);
            resume_if_drained(home->repart, m_config.repartition_topic, h);
            home->reseq->advance_watermark(time_of(*home));
        }
        if (m_now - m_last_progress >= m_config.progress_interval) send_progress();
        if (m_now - m_last_commit >= m_config.commit_interval) static_cast<void>(commit_all(false));
    }

    /// Files a message (or an event of librdkafka's) with the partition it belongs to.
    void take(message_ptr m) {
        const auto err = m->err;
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (rd_kafka_fatal_error(m_consumer.get(), nullptr, 0) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                fail(std::string("fatal error: ") + rd_kafka_message_errstr(m.get()));
            }
            if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) {
                fail(std::string("a topic or partition is gone: ") +
                     rd_kafka_message_errstr(m.get()));
            }
            if (err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) fail(detail::no_start_offset(*m));
            ++m_stats.consume_errors;
            return;
        }
        const auto it = m_homes.find(m->partition);
        if (it == m_homes.end() || m->rkt == nullptr) return;  // revoked meanwhile: re-read there
        const bool source = m_config.topic == rd_kafka_topic_name(m->rkt);
        lane_state& lane = source ? it->second->source : it->second->repart;
        if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            // Everything before the end was handled (control records of transactions, which
            // are never delivered, included), or it is an empty start.
            // The repartition topic has no holes but what retention deleted: a jump to its end
            // past what was read is such a run (the source's may be transaction markers).
            if (!source && lane.queue.empty() && lane.next >= 0 && m->offset > lane.next) {
                lost(it->second->home, lane.next, m->offset);
            }
            if (lane.queue.empty()) lane.next = std::max(lane.next, m->offset);
            lane.end = m->offset;
            // Everything before it was pushed: held offsets of the home's restored checkpoint
            // below it were deleted (retention) and will not come.
            if (source && lane.queue.empty()) {
                it->second->reseq->skip_to(static_cast<std::uint32_t>(m->partition), m->offset);
            }
            return;
        }
        if (source) {
            ++m_stats.read;
        } else {
            // The repartition topic is written by idempotent producers only, without
            // transactions or compaction: its offsets have no holes but what retention deleted
            // before it was read.
            const std::int64_t expected =
                lane.queue.empty() ? lane.next : lane.queue.back().message->offset + 1;
            if (expected >= 0 && m->offset > expected) lost(it->second->home, expected, m->offset);
        }
        lane.end = -1;
        lane.queue.push_back(pending{std::move(m), std::nullopt, {}});
    }

    /// Repartition records [first, end) of `home` were deleted before they were read.
    void lost(std::int32_t home, std::int64_t first, std::int64_t end) {
        m_stats.lost_forwards += static_cast<std::uint64_t>(end - first);
        if (m_on.on_lost) m_on.on_lost(home, first, end - 1);
    }

    /// Handles `lane`'s messages in order until one must wait (`handle` returns false).
    template <class Handle>
    void drain(home_state& home, lane_state& lane, Handle handle) {
        while (!lane.queue.empty()) {
            pending& p = lane.queue.front();
            if (!(this->*handle)(home, p)) break;
            lane.next = p.message->offset + 1;
            // A timestamp ahead of this turn's wall clock counts as now: one message from a
            // producer whose clock is ahead must not lift the partition's watermark past it.
            const auto ts = rd_kafka_message_timestamp(p.message.get(), nullptr);
            lane.newest = std::max(lane.newest, std::min(ts, m_wall));
            lane.queue.pop_front();
        }
    }

    static auto key_of(const rd_kafka_message_t& m) -> std::string_view {
        return m.key != nullptr ? std::string_view(static_cast<const char*>(m.key), m.key_len)
                                : std::string_view();
    }
    static auto value_of(const rd_kafka_message_t& m) -> std::string_view {
        return m.payload != nullptr ? std::string_view(static_cast<const char*>(m.payload), m.len)
                                    : std::string_view();
    }

    /// The stamp of `m`; a malformed one is counted and read as none.
    auto stamp_of(const rd_kafka_message_t& m) -> keyroute::stamp {
        stamp_error error = stamp_error::none;
        const auto st = try_read_stamp(&m, &error);
        if (error != stamp_error::none) ++m_stats.malformed;
        return st.value_or(keyroute::stamp{});
    }

    /// A key's home; a message without a key stays with its partition.
    auto home_of(const rd_kafka_message_t& m) const -> std::int32_t {
        if (m.key == nullptr) return m.partition;
        return static_cast<std::int32_t>(m_base->route(key_of(m)));
    }

    /// Processes a source message and pushes it home or forwards it; false when it must wait
    /// (refused at home, or the producer's queue is full).
    auto handle_source(home_state& home, pending& p) -> bool {
        const rd_kafka_message_t& m = *p.message;
        const std::int32_t to = home_of(m);
        const std::int64_t ts = rd_kafka_message_timestamp(&m, nullptr);
        if (!p.result) {
            p.stamp = stamp_of(m);
            p.result = m_on.process(
                group_event{key_of(m), value_of(m), p.stamp, m.partition, m.offset, ts, to, {}});
            ++m_stats.processed;
        }
        const keyroute::stamp& st = p.stamp;
        if (to == home.home) {
            if (!push(home, key_of(m), st, payload{*p.result, ts, -1},
                      origin{static_cast<std::uint32_t>(m.partition), m.offset})) {
                pause(home.source, m_config.topic, home.home);
                return false;
            }
            home.pushed_next = m.offset + 1;
            return true;
        }
        if (!forward(m, st, to, *p.result, ts)) {
            // The producer's queue is full: the partition waits in Kafka, not in this member.
            pause(home.source, m_config.topic, home.home);
            return false;
        }
        return true;
    }

    /// Produces a processed event to its home's repartition partition.
    auto forward(const rd_kafka_message_t& m, const keyroute::stamp& st, std::int32_t to,
                 const std::string& result, std::int64_t ts) -> bool {
        const std::string where = encode_origin(source_position{m.partition, m.offset, ts});
        const auto err = produce_to(m_producer.get(), m_config.repartition_topic.c_str(), to, st,
                                    key_of(m), result, {header{origin_header_name.data(), where}});
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(m_producer.get(), 1);
            return false;
        }
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
            fail(std::string("forward: ") + rd_kafka_err2str(err));
        ++m_stats.forwarded;
        return true;
    }

    /// Pushes a forwarded event (or reads a progress record); false when refused.
    auto handle_forwarded(home_state& home, pending& p) -> bool {
        const rd_kafka_message_t& m = *p.message;
        rd_kafka_headers_t* headers = nullptr;
        const void* value = nullptr;
        std::size_t size = 0;
        const bool has_headers =
            rd_kafka_message_headers(&m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR;
        if (has_headers && rd_kafka_header_get_last(headers, progress_header_name.data(), &value,
                                                    &size) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            // A record of a member of an earlier build (format 1, no watermarks): left unheard,
            // as its writer is gone once every member runs this one.
            if (value_of(m).rfind("keyroute-progress-1 ", 0) == 0) return true;
            for (const auto& s : decode_progress(value_of(m))) {
                if (s.partition < 0 || s.partition >= m_partitions) continue;
                auto& seen = home.seen[static_cast<std::size_t>(s.partition)];
                seen.known.take(s);
                seen.when = m_now;  // someone forwards it, if only from behind what is known
            }
            return true;
        }
        if (!has_headers ||
            rd_kafka_header_get_last(headers, origin_header_name.data(), &value, &size) !=
                RD_KAFKA_RESP_ERR_NO_ERROR ||
            value == nullptr) {
            fail("record " + std::to_string(m.offset) + " of " + m_config.repartition_topic +
                 " partition " + std::to_string(m.partition) +
                 " has no origin header: the topic is written by something else");
        }
        const source_position from =
            decode_origin(std::string_view(static_cast<const char*>(value), size));
        if (from.partition >= m_partitions || (m.key != nullptr && home_of(m) != home.home)) {
            fail("a forwarded event of partition " + std::to_string(m.partition) +
                 " does not belong there: the members disagree on the partitioner or the "
                 "partition count");
        }
        if (!p.result) {  // the stamp, read once (not again after a refusal)
            p.stamp = stamp_of(m);
            p.result.emplace();
            ++m_stats.received;
        }
        const keyroute::stamp& st = p.stamp;
        home.held.insert(m.offset);
        if (!push(home, key_of(m), st, payload{std::string(value_of(m)), from.timestamp, m.offset},
                  origin{static_cast<std::uint32_t>(from.partition), from.offset})) {
            home.held.erase(m.offset);
            pause(home.repart, m_config.repartition_topic, home.home);
            return false;
        }
        return true;
    }

    /// Pushes into a home's resequencer; false when refused.
    auto push(home_state& home, std::string_view key, const keyroute::stamp& st, payload&& event,
              const origin& from) -> bool {
        const auto repart_offset = event.repartition_offset;
        const auto r = home.reseq->push(key, st, std::move(event), from, time_of(home));
        if (r == push_result::refused) {
            ++m_stats.refused;
            return false;
        }
        if (r == push_result::duplicate) {
            ++m_stats.duplicates;
            if (repart_offset >= 0) home.held.erase(repart_offset);
        }
        return true;
    }

    void pause(lane_state& lane, const std::string& topic, std::int32_t partition) {
        if (lane.paused) return;
        toggle(topic, partition, true);
        lane.paused = true;
    }

    void resume_if_drained(lane_state& lane, const std::string& topic, std::int32_t partition) {
        if (!lane.paused || !lane.queue.empty()) return;
        toggle(topic, partition, false);
        lane.paused = false;
    }

    void toggle(const std::string& topic, std::int32_t partition, bool pause_it) {
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(list, topic.c_str(), partition);
        const auto err = pause_it ? rd_kafka_pause_partitions(m_consumer.get(), list)
                                  : rd_kafka_resume_partitions(m_consumer.get(), list);
        rd_kafka_topic_partition_list_destroy(list);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fail(std::string(pause_it ? "pause: " : "resume: ") + rd_kafka_err2str(err));
        }
    }

    void deliver(home_state& home, typename reseq_type::delivery_type& d) {
        if (d.event.repartition_offset >= 0) home.held.erase(d.event.repartition_offset);
        ++m_stats.applied;
        if (d.order == delivery_order::late) ++m_stats.late;
        if (d.order == delivery_order::out_of_order) ++m_stats.out_of_order;
        m_on.apply(group_event{d.key, d.event.value, d.stamp,
                               static_cast<std::int32_t>(d.source.partition), d.source.offset,
                               d.event.timestamp, home.home, d.order});
    }

    // ---- the watermark clock --------------------------------------------------------------

    [[nodiscard]] static auto wall_ms() -> std::int64_t {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    }
    void now() {
        m_now = steady::now();
        m_wall = wall_ms();
    }

    /// How far home h's clock may run while it is not full (see the file comment): the least
    /// watermark of what can still reach it. Its own source partition bounds it by the newest
    /// timestamp handled unless it is at its end; every other source partition by its last
    /// progress record, unless that is older than idle_timeout (its member is gone).
    [[nodiscard]] auto bound(const home_state& home, std::int64_t wall) const -> std::int64_t {
        std::int64_t least = wall;
        if (!home.source.at_end()) least = std::min(least, home.source.newest);
        for (std::size_t q = 0; q < home.seen.size(); ++q) {
            if (static_cast<std::int32_t>(q) == home.home) continue;
            const source_seen& s = home.seen[q];
            if (!s.known.heard) {  // not heard since the takeover: hold, for idle_timeout at most
                if (m_now - home.since <= m_config.idle_timeout)
                    least = std::min(least, home.clock);
                continue;
            }
            if (m_now - s.when <= m_config.idle_timeout) least = std::min(least, s.known.watermark);
        }
        return least;
    }

    /// Moves every home's clock. A full home (a partition of its blocked by a refusal) can take
    /// nothing that would fill its gaps, so waiting for its sources would never end: its clock
    /// runs at the wall clock's pace instead, and max_delay gives up its oldest gaps first.
    void tick() {
        const auto step =
            std::chrono::duration_cast<std::chrono::milliseconds>(m_now - m_last_tick);
        m_last_tick += step;  // whole milliseconds: a fast turn's fraction is kept for the next
        for (auto& [h, home] : m_homes) {
            const bool full = home->source.blocked() || home->repart.blocked();
            const std::int64_t to =
                full ? std::min(m_wall, home->clock + step.count()) : bound(*home, m_wall);
            home->clock = std::max(home->clock, to);
        }
    }

    [[nodiscard]] static auto time_of(const home_state& home) -> std::chrono::milliseconds {
        return std::chrono::milliseconds(home.clock);
    }

    /// Writes this member's progress record to every repartition partition, every
    /// progress_interval even when nothing changed: its watermarks run with the clock at a
    /// partition's end, and a silent member is a dead one (idle_timeout).
    void send_progress() {
        m_last_progress = m_now;
        if (m_homes.empty()) return;
        const std::int64_t wall = m_wall;
        std::vector<source_progress> list;
        for (const auto& [h, home] : m_homes) {
            const lane_state& l = home->source;
            const auto state = l.at_end()    ? source_state::at_end
                               : l.blocked() ? source_state::blocked
                                             : source_state::reading;
            list.push_back(
                source_progress{h, l.next, state, state == source_state::at_end ? wall : l.newest});
        }
        const std::string bytes = encode_progress(list);
        for (std::int32_t to = 0; to < m_partitions; ++to) {
            const auto err =
                produce_to(m_producer.get(), m_config.repartition_topic.c_str(), to,
                           keyroute::stamp{}, {}, bytes, {header{progress_header_name.data(), ""}});
            if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return;  // the queue is full: next interval
            ++m_stats.progress;
        }
    }

    // ---- commits --------------------------------------------------------------------------

    static void on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m, void* opaque) {
        auto* self = static_cast<ordered_group*>(opaque);
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && self->m_delivery_error.empty()) {
            self->m_delivery_error = std::string(rd_kafka_topic_name(m->rkt)) + " partition " +
                                     std::to_string(m->partition) + ": " + rd_kafka_err2str(m->err);
        }
    }

    void check_forwards() const {
        if (!m_delivery_error.empty()) {
            fail("a forward or checkpoint was not delivered (" + m_delivery_error +
                 "): restart from the last checkpoints");
        }
    }

    /// The next source offset of `home` that a restart must read: its first held event, or
    /// (when its events since were all forwarded and acknowledged) the next to read.
    [[nodiscard]] static auto source_resume(const home_state& home) -> std::int64_t {
        const auto c = home.reseq->committable_offset(static_cast<std::uint32_t>(home.home));
        if (c && *c < home.pushed_next) return *c;
        return home.source.next;
    }
    [[nodiscard]] static auto repartition_resume(const home_state& home) -> std::int64_t {
        if (home.held.empty() || home.repart.next < 0) return home.repart.next;
        return std::min(*home.held.begin(), home.repart.next);
    }

    /// Flushes, writes every owned home's checkpoint, then commits the offsets. False when an
    /// acknowledgement timed out (nothing is committed then).
    auto commit_all(bool sync) -> bool {
        now();
        const auto interval = std::chrono::duration<double>(m_now - m_last_commit).count();
        m_forward_rate = interval > 0
                             ? static_cast<double>(m_stats.forwarded - m_forwarded_then) / interval
                             : 0.0;
        m_forwarded_then = m_stats.forwarded;
        m_last_commit = m_now;
        if (m_homes.empty()) return true;
        const int wait = static_cast<int>(m_config.flush_timeout.count());
        if (rd_kafka_flush(m_producer.get(), wait) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            ++m_stats.skipped_commits;
            return false;
        }
        check_forwards();
        rd_kafka_topic_partition_list_t* offsets =
            rd_kafka_topic_partition_list_new(static_cast<int>(2 * m_homes.size()));
        for (auto& [h, home] : m_homes) {
            home_checkpoint cp;
            cp.home = h;
            cp.source_offset = source_resume(*home);
            cp.repartition_offset = repartition_resume(*home);
            if (m_on.save_state) cp.application = m_on.save_state(h);
            cp.state = consumer_checkpoint{m_config.topic, m_partitions, home->reseq->checkpoint()};
            const std::string bytes = encode_home_checkpoint(cp);
            const std::string key = changelog_key(h);
            const auto err = produce_to(m_producer.get(), m_config.changelog_topic.c_str(), h,
                                        keyroute::stamp{}, key, bytes);
            if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_topic_partition_list_destroy(offsets);
                ++m_stats.skipped_commits;
                return false;
            }
            if (cp.source_offset >= 0) {
                rd_kafka_topic_partition_list_add(offsets, m_config.topic.c_str(), h)->offset =
                    cp.source_offset;
            }
            if (cp.repartition_offset >= 0) {
                rd_kafka_topic_partition_list_add(offsets, m_config.repartition_topic.c_str(), h)
                    ->offset = cp.repartition_offset;
            }
        }
        if (rd_kafka_flush(m_producer.get(), wait) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            rd_kafka_topic_partition_list_destroy(offsets);
            ++m_stats.skipped_commits;
            return false;
        }
        check_forwards();
        if (offsets->cnt > 0) {
            const auto err = rd_kafka_commit(m_consumer.get(), offsets, sync ? 0 : 1);
            if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
                ++m_stats.consume_errors;  // monitoring only: the changelog has the offsets
            }
        }
        rd_kafka_topic_partition_list_destroy(offsets);
        ++m_stats.commits;
        return true;
    }

    [[nodiscard]] auto changelog_key(std::int32_t home) const -> std::string {
        return m_group + "/" + m_config.topic + "/" + std::to_string(home);
    }

    // ---- rebalances -----------------------------------------------------------------------

    static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t* list, void* opaque) {
        auto* self = static_cast<ordered_group*>(opaque);
#if KEYROUTE_HAS_EXCEPTIONS
        try {
#endif
            if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                self->assign(list);
            } else {
                self->revoke();
            }
#if KEYROUTE_HAS_EXCEPTIONS
        } catch (...) {
            if (!self->m_pending_error) self->m_pending_error = std::current_exception();
            rd_kafka_assign(rk, nullptr);
            self->m_homes.clear();
        }
#else
        static_cast<void>(rk);  // an error aborts, in the assign or revoke
#endif
    }

    /// Commits the homes unless the assignment was lost (the group moved them on without this
    /// member: their new owners may have checkpointed since). A checkpoint still queued from a
    /// commit that timed out may land after a new owner's; it is a consistent older snapshot
    /// (resequencer, offsets and application state together), so a takeover from it repeats
    /// work and loses none.
    void revoke() {
        const bool lost = rd_kafka_assignment_lost(m_consumer.get()) != 0;
        if (!m_no_commit && !m_failed && m_pending_error == nullptr && !lost) {
            static_cast<void>(commit_all(true));
        }
        for (auto& [h, home] : m_homes) {
            if (home->source.paused) toggle(m_config.topic, h, false);
            if (home->repart.paused) toggle(m_config.repartition_topic, h, false);
            if (m_on.release) m_on.release(h);
        }
        m_homes.clear();
        rd_kafka_assign(m_consumer.get(), nullptr);
    }

    void assign(rd_kafka_topic_partition_list_t* list) {
        std::set<std::int32_t> source;
        std::set<std::int32_t> repart;
        for (int i = 0; i < list->cnt; ++i) {
            const auto& tp = list->elems[i];
            (m_config.topic == tp.topic ? source : repart).insert(tp.partition);
        }
        if (source != repart) {
            fail("the assignment is not co-partitioned (source and repartition partitions " +
                 std::string("differ): every member must subscribe to both topics with the ") +
                 "range assignor, and both topics have the same count");
        }
        ++m_stats.assignments;
        const auto checkpoints = load_checkpoints(source);
        now();
        for (const auto h : source) {
            auto home = std::make_unique<home_state>();
            home->home = h;
            home->seen.assign(static_cast<std::size_t>(m_partitions), source_seen{});
            home->since = m_now;
            home->clock = m_wall;
            home_state* raw = home.get();
            home->reseq = std::make_unique<reseq_type>(
                m_config.reseq,
                [this, raw](typename reseq_type::delivery_type&& d) { deliver(*raw, d); },
                [this, raw](const gap_report& g) {
                    ++m_stats.gaps;
                    m_stats.missing += g.last_missing - g.first_missing + 1;
                    if (m_on.on_gap) m_on.on_gap(raw->home, g);
                });
            const auto found = checkpoints.find(h);
            const home_checkpoint* cp = found != checkpoints.end() ? &found->second : nullptr;
            if (cp != nullptr) {
                if (cp->state.topic != m_config.topic || cp->state.partitions != m_partitions) {
                    fail("home " + std::to_string(h) + "'s checkpoint is of " + cp->state.topic +
                         " with " + std::to_string(cp->state.partitions) + " partitions");
                }
                home->reseq->restore(cp->state.state);
                home->clock = std::max(home->clock, cp->state.state.watermark.count());
            }
            if (m_on.restore_state)
                m_on.restore_state(h, cp != nullptr ? &cp->application : nullptr);
            m_homes.emplace(h, std::move(home));
        }
        // Where to read from: the checkpoint's offsets, else the group's, else auto.offset.reset
        // for the source and the beginning for the repartition topic.
        rd_kafka_topic_partition_list_t* committed = rd_kafka_topic_partition_list_copy(list);
        const auto err = rd_kafka_committed(m_consumer.get(), committed,
                                            static_cast<int>(m_config.metadata_timeout.count()));
        for (int i = 0; i < list->cnt; ++i) {
            auto& tp = list->elems[i];
            const bool is_source = m_config.topic == tp.topic;
            const auto found = checkpoints.find(tp.partition);
            std::int64_t at = -1;
            if (found != checkpoints.end()) {
                at = is_source ? found->second.source_offset : found->second.repartition_offset;
            }
            if (at < 0 && err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                const auto* c =
                    rd_kafka_topic_partition_list_find(committed, tp.topic, tp.partition);
                if (c != nullptr && c->offset >= 0) at = c->offset;
            }
            tp.offset =
                at >= 0 ? at : (is_source ? RD_KAFKA_OFFSET_INVALID : RD_KAFKA_OFFSET_BEGINNING);
            if (at >= 0) {  // handled up to there: what comes first is checked against it
                home_state& home = *m_homes.at(tp.partition);
                (is_source ? home.source : home.repart).next = at;
            }
        }
        rd_kafka_topic_partition_list_destroy(committed);
        const auto aerr = rd_kafka_assign(m_consumer.get(), list);
        if (aerr != RD_KAFKA_RESP_ERR_NO_ERROR)
            fail(std::string("assign: ") + rd_kafka_err2str(aerr));
        m_last_commit = m_now;
    }

    /// The last checkpoint of each of `homes` in the changelog (the last record of its
    /// partition), by home.
    auto load_checkpoints(const std::set<std::int32_t>& homes)
        -> std::map<std::int32_t, home_checkpoint> {
        std::map<std::int32_t, home_checkpoint> out;
        const int wait = static_cast<int>(m_config.metadata_timeout.count());
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
        std::map<std::int32_t, std::int64_t> last;
        for (const auto h : homes) {
            std::int64_t low = 0;
            std::int64_t high = 0;
            const auto err = rd_kafka_query_watermark_offsets(
                m_reader.get(), m_config.changelog_topic.c_str(), h, &low, &high, wait);
            if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_topic_partition_list_destroy(list);
                fail("cannot read the changelog's end for home " + std::to_string(h) + ": " +
                     rd_kafka_err2str(err));
            }
            if (high <= low) continue;  // no checkpoint yet
            rd_kafka_topic_partition_list_add(list, m_config.changelog_topic.c_str(), h)->offset =
                high - 1;
            last[h] = high - 1;
        }
        if (last.empty()) {
            rd_kafka_topic_partition_list_destroy(list);
            return out;
        }
        rd_kafka_assign(m_reader.get(), list);
        rd_kafka_topic_partition_list_destroy(list);
        const auto deadline = steady::now() + m_config.metadata_timeout;
        while (out.size() < last.size() && steady::now() < deadline) {
            message_ptr m(rd_kafka_consumer_poll(m_reader.get(), 100));
            if (!m || m->err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
            const auto want = last.find(m->partition);
            if (want == last.end() || m->offset != want->second) continue;
            if (key_of(*m) != changelog_key(m->partition)) {
                rd_kafka_assign(m_reader.get(), nullptr);
                fail("the changelog's last record of partition " + std::to_string(m->partition) +
                     " is another group's (" + std::string(key_of(*m)) +
                     "): give each group its own changelog topic");
            }
            out.emplace(m->partition, decode_home_checkpoint(value_of(*m)));
        }
        rd_kafka_assign(m_reader.get(), nullptr);
        if (out.size() < last.size()) {
            fail("the changelog's checkpoints did not come within metadata_timeout");
        }
        return out;
    }

    [[nodiscard]] auto lag(const std::string& topic, std::int32_t partition,
                           std::int64_t next) const -> std::int64_t {
        std::int64_t low = 0;
        std::int64_t high = 0;
        if (rd_kafka_get_watermark_offsets(m_consumer.get(), topic.c_str(), partition, &low,
                                           &high) != RD_KAFKA_RESP_ERR_NO_ERROR ||
            high < 0) {
            return 0;
        }
        return std::max<std::int64_t>(0, high - std::max(next, low));
    }

    conf_ptr m_conf;  // until rd_kafka_new takes it
    ordered_group_config m_config;
    group_handlers m_on;
    std::string m_group;
    std::int32_t m_partitions = 0;
    std::unique_ptr<Partitioner> m_base;
    std::map<std::int32_t, std::unique_ptr<home_state>> m_homes;
    ordered_group_stats m_stats;
    std::string m_delivery_error;
    std::exception_ptr m_pending_error;
    steady::time_point m_now{};
    std::int64_t m_wall = 0;  ///< the wall clock (ms since the epoch) at m_now
    steady::time_point m_last_tick{};
    steady::time_point m_last_commit{};
    steady::time_point m_last_progress{};
    std::uint64_t m_forwarded_then = 0;
    double m_forward_rate = 0.0;
    bool m_failed = false;
    bool m_no_commit = false;
    bool m_closed = false;
    // Last: destroyed first, before anything their callbacks touch.
    handle_ptr m_producer;
    handle_ptr m_reader;
    handle_ptr m_consumer;
    detail::topic_ptr m_repart_handle;  // the consumer's, destroyed before it
};

}  // namespace keyroute::kafka
