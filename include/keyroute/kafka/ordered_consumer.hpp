#pragma once

/// @file
/// keyroute::kafka::ordered_consumer: reads every partition of one topic with librdkafka and
/// hands the application each event in per-key, per-producer-lane order (a resequencer fed by
/// the consumer loop that resequencer.hpp's "Reading" paragraph asks for).
///
/// What it owns, so that the application does not:
/// - Assignment: every partition of the topic, with rd_kafka_assign (not subscribe: a group
///   that splits the partitions between members cannot restore a spread key's order). The
///   group id only keeps the committed offsets; run one such consumer per group id.
/// - The watermark clock: processing time, advanced every poll(), but standing still while a
///   readable partition still has messages to read (its position below its high watermark and
///   no end-of-partition event since), and until every partition has started (delivered a
///   message or reached its end). A partition that makes no progress for `idle_timeout`
///   (a broker that does not answer) is idle: it no longer holds the clock, as Flink's
///   withIdleness; the default (60 s) outlasts a broker failover (session timeouts of 9 s in
///   KRaft and 18 s in ZooKeeper, then an election), during which waiting keeps the order. So a
///   sequence is given up (max_delay) only when every readable partition is at its end or idle:
///   when its partition truly has nothing more to give now. "At its end" is as of its last
///   fetch: an event written since then and still unfetched when max_delay runs out comes late
///   (flagged), so max_delay must cover producer linger, replication and fetch_wait.
/// - Retention: held offsets of a restored checkpoint that retention deleted before the re-read
///   are passed once the partition's reading does (stats().lost_rereads counts them), so the
///   committable offset never sticks on them.
/// - Reading as a merge: each partition's messages stay on its own librdkafka queue
///   (rd_kafka_queue_get_partition, not forwarded) and poll() takes them oldest message
///   timestamp first, waiting for a partition that has more to read but nothing fetched yet
///   (unless it is paused, refused or idle). librdkafka's broker threads fetch independently
///   and far ahead, so reading the consumer queue as it fills runs some partitions far ahead
///   of others and the resequencer holds tens of thousands of events; the merge holds few.
/// - Backpressure instead of giving up: once the held events reach `pause_fraction` of
///   max_events, partitions whose last message is more than `max_drift` newer than the oldest
///   still being read are paused (rd_kafka_pause_partitions: librdkafka stops fetching them)
///   while the lagging ones are read, and resumed at half that level (Flink's watermark
///   alignment). The resequencer runs with full_policy::refuse: a message it cannot hold stays
///   first in its partition's run and is pushed again next turn. Held events never exceed
///   max_events. If every partition with more to read is refused so, the clock runs, and
///   max_delay gives up the oldest gaps: the only way forward then.
/// - Commits: every `commit_interval`, the resequencer's checkpoint goes to the application's
///   checkpoint_store (if any) and then the committable offsets to the group
///   (rd_kafka_commit_queue, on a queue of its own: a conf's offset_commit_cb is not called for
///   them; stats().commit_failures counts the failed ones). A store that makes the sink's output
///   durable atomically with the checkpoint gets exactly-once delivery across crashes: a restart
///   restores the checkpoint, re-reads from its offsets, and the resequencer drops what was
///   delivered before it. Without a store, delivery is at-least-once (the group offsets alone), and
///   the commits' metadata carries a hint (commit_hint.hpp): the next sequence of the most recently
///   active episodes, so that a restart does not wait max_delay for what was delivered before it
///   and report it as a gap. Why not the whole checkpoint there: it holds every remembered
///   episode, more than the brokers' offset.metadata.max.bytes (4 KiB by default) allows.
///   A broker whose limit is lower refuses the commit: it goes again with half the metadata
///   it sent, down to none, so the offsets keep advancing whatever the limit.
/// - Errors: a topic that does not exist or disappears, a partition count that differs from
///   the checkpoint's or changes while running (checked every `metadata_interval`), and
///   librdkafka's fatal errors throw std::runtime_error naming them. Transient errors (a broker
///   down) are counted and librdkafka recovers. A malformed stamp header is counted and the
///   message delivered as unstamped, or handed to the on_malformed callback.
///
/// Thread-safety: none; one thread calls poll() (the resequencer's rule).

#include "../resequencer.hpp"
#include "../stamp.hpp"
#include "checkpoint.hpp"
#include "commit_hint.hpp"
#include "handles.hpp"
#include "rdkafka.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace keyroute::kafka {

/// One message handed to the application, in order. Views are valid during the sink call only.
struct ordered_message {
    std::string_view key;
    std::string_view value;
    keyroute::stamp stamp;  ///< false for an unstamped message (or a malformed stamp)
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::int64_t timestamp = -1;  ///< the message's timestamp (ms since the epoch), -1 if none
    delivery_order order = delivery_order::in_order;  ///< see keyroute::delivery_order
    /// Late at a sequence its episode may have delivered before (below a restart's hint, or
    /// below the given-up ranges it still remembers): a possible second delivery. Never set
    /// for a message known to be new; not set on every second delivery (at least once: see
    /// docs/ordering.md).
    bool possibly_duplicate = false;
};

/// Where an ordered_consumer keeps its checkpoint. For exactly-once output, save() makes the
/// application's output so far durable atomically with the checkpoint (one transaction, or the
/// output's length recorded in the same atomically replaced file), and load() returns the last
/// one saved, with the output rolled back to it.
class checkpoint_store {
public:
    checkpoint_store() = default;
    checkpoint_store(const checkpoint_store&) = default;
    checkpoint_store(checkpoint_store&&) = default;
    auto operator=(const checkpoint_store&) -> checkpoint_store& = default;
    auto operator=(checkpoint_store&&) -> checkpoint_store& = default;
    virtual ~checkpoint_store() = default;

    /// The last checkpoint saved, or nullopt before the first.
    virtual auto load() -> std::optional<consumer_checkpoint> = 0;
    /// Stores `cp` with everything delivered so far; called from poll() and close().
    virtual void save(const consumer_checkpoint& cp) = 0;
};

/// The settings of an ordered_consumer.
struct ordered_consumer_config {
    std::string topic;  ///< the topic to read, every partition of it
    /// The resequencer's limits; `on_full` is ignored (always full_policy::refuse, see above).
    resequencer_config reseq{};
    /// A partition without a message or end-of-partition event this long (while not paused)
    /// stops holding the watermark clock. > 0; longer than a broker failover.
    std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
    /// How often poll() commits (checkpoint, then offsets). > 0.
    std::chrono::milliseconds commit_interval{std::chrono::seconds(1)};
    /// How often poll() checks the topic's partition count. > 0.
    std::chrono::milliseconds metadata_interval{std::chrono::seconds(10)};
    /// How long the constructor waits for the topic's metadata. > 0.
    std::chrono::milliseconds metadata_timeout{std::chrono::seconds(10)};
    /// Held events, as a fraction of max_events, at which partitions ahead are paused. (0, 1].
    double pause_fraction = 0.5;
    /// How far (message timestamps) a partition may run ahead of the oldest one being read
    /// before it is paused under pressure. >= 0.
    std::chrono::milliseconds max_drift{0};
    /// librdkafka's fetch.wait.max.ms, set on the conf unless 0. A partition resumed after a
    /// pause is fetched only once its broker answers the fetch in flight, which waits up to
    /// this long when the other partitions have nothing new: librdkafka's 500 ms would make
    /// each pause cost half a second.
    std::chrono::milliseconds fetch_wait{20};
    /// Without a checkpoint_store: the most bytes of hint (commit_hint.hpp) in each partition's
    /// commit metadata, at most 4096; 0 sends none. A commit that a broker refuses for its
    /// metadata's size (above offset.metadata.max.bytes, 4096 by default) goes again with half
    /// of what it sent, and later commits keep the smaller budget (stats().commit_hint_bytes).
    std::size_t commit_hint_bytes = 3072;
};

/// Counters since construction.
struct ordered_consumer_stats {
    std::uint64_t read = 0;              ///< messages read from librdkafka
    std::uint64_t delivered = 0;         ///< messages handed to the sink
    std::uint64_t duplicates = 0;        ///< re-read messages delivered before (dropped)
    std::uint64_t malformed_stamps = 0;  ///< messages whose stamp header did not decode
    std::uint64_t late = 0;              ///< deliveries with delivery_order::late
    std::uint64_t out_of_order = 0;      ///< deliveries with delivery_order::out_of_order
    std::uint64_t gaps = 0;              ///< gap reports (sequences given up)
    std::uint64_t missing = 0;           ///< sequences given up
    std::uint64_t refused = 0;           ///< pushes refused (buffer full), retried later
    std::uint64_t pauses = 0;            ///< partitions paused (ahead of the lagging ones)
    std::uint64_t commits = 0;           ///< commits (checkpoint saves)
    std::uint64_t consume_errors = 0;    ///< transient librdkafka errors (recovered)
    std::size_t max_held = 0;            ///< most events held at once
    /// Events held at the restored checkpoint that retention deleted before they were re-read
    /// (lost to the log; see resequencer_stats::lost_rereads).
    std::uint64_t lost_rereads = 0;
    /// Episodes restored from the commits' hints at construction (no checkpoint_store).
    std::uint64_t hinted_episodes = 0;
    /// Commits that failed or that a broker refused, in whole or for some partitions (an async
    /// commit's result comes in on a later poll()). Their offsets go with the next commit.
    std::uint64_t commit_failures = 0;
    /// The hint's budget now (no checkpoint_store; else 0): commit_hint_bytes, or half the
    /// metadata of the last commit a broker refused for its size (offset.metadata.max.bytes).
    std::size_t commit_hint_bytes = 0;
};

/// Reads one topic in per-key order; see the file comment.
class ordered_consumer {
public:
    /// Receives each message, in order.
    using message_sink = std::function<void(const ordered_message&)>;
    /// Receives each gap given up (see keyroute::gap_report).
    using gap_sink = std::function<void(const gap_report&)>;
    /// Receives a message whose stamp header is malformed; true: deliver it as unstamped, false:
    /// the callback took it (it is not delivered, and is handed again after a restart if it is
    /// at or after the partition's committed offset). Called once per message.
    using malformed_sink = std::function<bool(const rd_kafka_message_t&, stamp_error)>;

    /// Creates the consumer from `conf` (ownership taken, also on failure) and assigns it every
    /// partition of `config.topic`, from the store's checkpoint if it has one, else from the
    /// group's committed offsets, else where auto.offset.reset says. A partition's first position
    /// (its first message or end-of-partition event) is committed with the next commit even
    /// before it gives an event, so that a restart does not resolve auto.offset.reset again
    /// ("latest" would skip what came meanwhile). Sets enable.partition.eof=true,
    /// enable.auto.commit=false, enable.auto.offset.store=false, allow.auto.create.topics=false,
    /// fetch.wait.max.ms (config.fetch_wait, unless 0), and a group.id of
    /// "keyroute-ordered-<topic>" when `conf` has none. `store`, if given, outlives the consumer.
    /// @throws std::invalid_argument for a config field out of range or an empty sink;
    ///         std::runtime_error when the consumer cannot be created, the topic does not exist
    ///         (or its metadata does not come within metadata_timeout), or the checkpoint is of
    ///         another topic or partition count.
    ordered_consumer(rd_kafka_conf_t* conf, ordered_consumer_config config, message_sink on_message,
                     checkpoint_store* store = nullptr)
        : m_conf(conf),
          m_config(check(std::move(config), conf)),
          m_on_message(std::move(on_message)),
          m_store(store),
          m_reseq(
              reseq_config(m_config.reseq), [this](delivery_type&& d) { deliver(d); },
              [this](const gap_report& g) { gap(g); }) {
        if (!m_on_message) {
            keyroute::detail::invalid_argument("keyroute::kafka::ordered_consumer: empty sink");
        }
        m_stats.commit_hint_bytes = m_store == nullptr ? m_config.commit_hint_bytes : 0;
        create();
        m_partitions = topic_partitions(m_config.metadata_timeout, true);
        m_parts = std::vector<part>(static_cast<std::size_t>(m_partitions));
        m_blocked.assign(m_parts.size(), false);
        restore_and_assign();
        const auto now = std::chrono::steady_clock::now();
        m_last_tick = m_last_commit = m_last_metadata = now;
        for (auto& p : m_parts) p.last_progress = now;
    }

    ordered_consumer(const ordered_consumer&) = delete;
    ordered_consumer(ordered_consumer&&) = delete;
    auto operator=(const ordered_consumer&) -> ordered_consumer& = delete;
    auto operator=(ordered_consumer&&) -> ordered_consumer& = delete;
    /// Closes the consumer without committing (as a crash would: call close() to commit).
    ~ordered_consumer() {
        release_queues();
        if (m_rk && !m_closed) rd_kafka_consumer_close(m_rk.get());
    }

    /// Sets the gap callback (default: none; gaps are counted in stats()).
    void on_gap(gap_sink sink) { m_on_gap = std::move(sink); }
    /// Sets the malformed-stamp callback (default: none; delivered as unstamped).
    void on_malformed(malformed_sink sink) { m_on_malformed = std::move(sink); }

    /// One turn: reads what librdkafka has (waiting up to `timeout` for the first message),
    /// delivers what is in order, pauses or resumes partitions, advances the watermark clock and
    /// commits when commit_interval has passed.
    /// @throws std::runtime_error on a fatal error (file comment); what the sinks or the store
    ///         throw. After any exception the consumer is failed: the event that was being
    ///         delivered is lost to it, so it must not commit again (a later checkpoint would
    ///         count that event as delivered). Destroy it (or close() it: then nothing is
    ///         committed) and restart from the last checkpoint; poll() and commit() then throw
    ///         std::runtime_error.
    void poll(std::chrono::milliseconds timeout) {
        refuse_if_failed("poll");
        m_failed = true;  // until this call returns normally
        turn(timeout);
        m_failed = false;
    }

    /// True when every partition is read to its end (as far as librdkafka knows) and nothing
    /// is held: everything the topic had was delivered.
    [[nodiscard]] auto at_end() const -> bool {
        if (m_reseq.held_events() > 0) return false;
        for (std::size_t p = 0; p < m_parts.size(); ++p) {
            if (!m_parts[p].local.empty() || behind(p)) return false;
        }
        return true;
    }

    /// Saves the checkpoint to the store (if any), then commits the committable offsets to the
    /// group (synchronously when `sync`). @throws what the store throws (the consumer is then
    /// failed, see poll()); std::runtime_error on a failed consumer.
    void commit(bool sync = true) {
        refuse_if_failed("commit");
        m_failed = true;
        save_and_commit(sync);
        m_failed = false;
    }

    /// Commits (held events stay uncommitted: a restart re-reads them) and closes the consumer.
    /// A failed consumer (see poll()) is closed without a commit.
    void close() {
        if (m_closed) return;
        if (!m_failed) commit(true);
        release_queues();
        rd_kafka_consumer_close(m_rk.get());
        m_closed = true;
    }

    /// True after poll() or commit() threw: only a restart from the last checkpoint is valid.
    [[nodiscard]] auto failed() const noexcept -> bool { return m_failed; }

    /// The librdkafka handle (for rd_kafka_mock_*, statistics, or an extra poll of its events).
    [[nodiscard]] auto handle() const noexcept -> rd_kafka_t* { return m_rk.get(); }
    [[nodiscard]] auto partitions() const noexcept -> std::int32_t { return m_partitions; }
    [[nodiscard]] auto held_events() const noexcept -> std::size_t { return m_reseq.held_events(); }
    [[nodiscard]] auto stats() const noexcept -> const ordered_consumer_stats& { return m_stats; }
    /// The watermark clock now (milliseconds; processing time held still as described above).
    [[nodiscard]] auto clock() const noexcept -> std::chrono::milliseconds {
        return m_clock_origin + std::chrono::duration_cast<std::chrono::milliseconds>(m_running);
    }
    /// Partitions paused now (ahead of the lagging ones; a partition whose message was refused
    /// is skipped for the rest of that poll instead).
    [[nodiscard]] auto paused() const -> std::size_t {
        return static_cast<std::size_t>(
            std::count_if(m_parts.begin(), m_parts.end(), [](const part& p) { return p.paused; }));
    }

private:
    /// A held message's payload and timestamp.
    struct payload {
        std::string value;
        std::int64_t timestamp = -1;
    };
    struct payload_size {
        auto operator()(const payload& p) const noexcept -> std::size_t {
            return sizeof(payload) + p.value.size();
        }
    };
    using reseq_type = resequencer<payload, payload_size>;
    using delivery_type = reseq_type::delivery_type;
    using steady = std::chrono::steady_clock;

    using message_ptr = detail::message_ptr;

    struct part {
        detail::queue_ptr queue;        ///< its own, not forwarded
        std::deque<message_ptr> local;  ///< taken from `queue`, not pushed yet (in order)
        bool started = false;
        bool at_end = false;             ///< an end-of-partition event since its last message
        bool paused = false;             ///< paused in librdkafka (it ran ahead)
        std::int64_t next = -1;          ///< one past the last offset pushed, -1 before the first
        std::int64_t start = -1;         ///< its first position read (message or end), -1 before
        std::int64_t malformed_at = -1;  ///< the last message whose stamp was found malformed
        bool malformed_keep = true;      ///< ... and whether on_malformed let it be delivered
        std::int64_t last_ts = -1;       ///< the last message's timestamp
        steady::time_point last_progress{};
        /// librdkafka's high watermark as of merge() call `high_serial` (-1: unknown); asked once
        /// per call, not per merge step (it takes the partition's lock).
        mutable std::int64_t high = -1;
        mutable std::uint64_t high_serial = 0;
    };

    /// One poll() turn.
    void turn(std::chrono::milliseconds timeout) {
        m_now = std::chrono::steady_clock::now();
        tick();
        if (m_now - m_last_metadata >= m_config.metadata_interval) check_partition_count();
        const auto deadline = m_now + timeout;
        for (;;) {
            for (int k = 0; k < 100; ++k) {  // errors and events: the consumer queue
                rd_kafka_message_t* m = rd_kafka_consumer_poll(m_rk.get(), 0);
                if (m == nullptr) break;
                handle(message_ptr(m));
            }
            if (merge() > 0 || steady::now() >= deadline) break;
            // Nothing to read yet: wait a little on the consumer queue (errors wake it).
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
            rd_kafka_message_t* m = rd_kafka_consumer_poll(
                m_rk.get(), static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 5)));
            if (m != nullptr) handle(message_ptr(m));
            m_now = steady::now();
        }
        m_now = std::chrono::steady_clock::now();
        tick();
        regulate();
        m_reseq.advance_watermark(clock());
        m_stats.lost_rereads = m_reseq.stats().lost_rereads;
        rd_kafka_queue_poll_callback(m_commit_results.get(), 0);  // earlier commits' results
        if (m_commit_now || m_now - m_last_commit >= m_config.commit_interval) {
            save_and_commit(false);
        }
    }

    /// Saves the checkpoint, then commits the offsets (commit() without the failure guard). A
    /// sync commit whose hint a broker refused as too large goes again at once with a smaller
    /// one (commit_result() lowered the budget); an async one goes again on the next turn.
    void save_and_commit(bool sync) {
        m_last_commit = m_now;
        if (m_store != nullptr) {
            m_store->save(consumer_checkpoint{m_config.topic, m_partitions, m_reseq.checkpoint()});
        }
        for (;;) {
            const std::size_t budget = m_stats.commit_hint_bytes;
            rd_kafka_topic_partition_list_t* list = commit_list(budget);
            if (list->cnt == 0) {
                rd_kafka_topic_partition_list_destroy(list);
                break;
            }
            // Sync: a temporary queue, and commit_result() runs within the call.
            const auto err =
                rd_kafka_commit_queue(m_rk.get(), list, sync ? nullptr : m_commit_results.get(),
                                      &ordered_consumer::commit_result, this);
            rd_kafka_topic_partition_list_destroy(list);
            if (!sync && err != RD_KAFKA_RESP_ERR_NO_ERROR) ++m_stats.commit_failures;
            if (!sync || m_stats.commit_hint_bytes == budget) break;
        }
        m_commit_now = false;  // a sync commit's refusal was retried above
        ++m_stats.commits;
    }

    /// The committable offsets, each with up to `hint_bytes` of hint when there is no store.
    auto commit_list(std::size_t hint_bytes) const -> rd_kafka_topic_partition_list_t* {
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(m_partitions);
        for (std::int32_t p = 0; p < m_partitions; ++p) {
            const auto off = m_reseq.committable_offset(static_cast<std::uint32_t>(p));
            const std::int64_t start = m_parts[static_cast<std::size_t>(p)].start;
            if (off || start >= 0) {
                rd_kafka_topic_partition_list_add(list, m_config.topic.c_str(), p)->offset =
                    off ? *off : start;
            }
        }
        if (m_store != nullptr || hint_bytes == 0 || list->cnt == 0) return list;
        const auto slots = static_cast<std::size_t>(list->cnt);
        // Each told episode takes at least 12 bytes of hint: no more can fit.
        const auto hints = detail::encode_hints(m_reseq.recent_episodes(slots * hint_bytes / 12),
                                                slots, hint_bytes);
        for (int i = 0; i < list->cnt; ++i) {
            const std::string& text = hints[static_cast<std::size_t>(i)];
            if (text.empty()) continue;
            void* bytes = rd_kafka_mem_malloc(m_rk.get(), text.size());
            std::memcpy(bytes, text.data(), text.size());
            list->elems[i].metadata = bytes;  // the list frees it
            list->elems[i].metadata_size = text.size();
        }
        return list;
    }

    /// A commit's result (librdkafka calls it from rd_kafka_commit_queue for a sync commit, and
    /// from turn()'s poll of m_commit_results for an async one). A refusal for the metadata's
    /// size sets the hint's budget to half the largest metadata that commit sent (0 below 64
    /// bytes: a hint that small tells little), unless the budget is already below it (another
    /// refusal of a commit sent before lowered it), and makes the next turn commit.
    static void commit_result(rd_kafka_t* /*rk*/, rd_kafka_resp_err_t err,
                              rd_kafka_topic_partition_list_t* offsets, void* opaque) {
        auto& self = *static_cast<ordered_consumer*>(opaque);
        bool failed = err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET;
        bool too_large = err == RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE;
        std::size_t sent = 0;  // the largest metadata of the commit (the result lists it)
        for (int i = 0; offsets != nullptr && i < offsets->cnt; ++i) {
            const auto e = offsets->elems[i].err;
            failed = failed || e != RD_KAFKA_RESP_ERR_NO_ERROR;
            too_large = too_large || e == RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE;
            sent = std::max(sent, offsets->elems[i].metadata_size);
        }
        if (failed) ++self.m_stats.commit_failures;
        auto& budget = self.m_stats.commit_hint_bytes;
        if (too_large && sent > 0 && sent <= budget) {
            budget = sent / 2 < 64 ? 0 : sent / 2;
            self.m_commit_now = true;
        }
    }

    void refuse_if_failed(const char* call) const {
        if (m_closed) fail(std::string(call) + "() after close()");
        if (m_failed) {
            fail(std::string(call) + "() after an exception from poll() or commit(): restart " +
                 "from the last checkpoint (the event being delivered then is lost to this " +
                 "consumer)");
        }
    }

    static constexpr int batch = 1000;          ///< messages pushed per poll() at most
    static constexpr std::size_t refill = 500;  ///< messages taken from a partition at once

    static auto check(ordered_consumer_config c, const rd_kafka_conf_t* conf)
        -> ordered_consumer_config {
        const auto fail = [](const std::string& what) {
            keyroute::detail::invalid_argument("keyroute::kafka::ordered_consumer: " + what);
        };
        if (conf == nullptr) {
            keyroute::detail::invalid_argument("keyroute::kafka::ordered_consumer: null conf");
        }
        if (c.topic.empty()) fail("topic is empty");
        detail::check_duration(fail, "idle_timeout", c.idle_timeout, 1);
        detail::check_duration(fail, "commit_interval", c.commit_interval, 1);
        detail::check_duration(fail, "metadata_interval", c.metadata_interval, 1);
        detail::check_duration(fail, "metadata_timeout", c.metadata_timeout, 1);
        if (!(c.pause_fraction > 0.0 && c.pause_fraction <= 1.0)) {
            fail("pause_fraction must be in (0, 1], got " + std::to_string(c.pause_fraction));
        }
        detail::check_duration(fail, "max_drift", c.max_drift, 0);
        if (c.fetch_wait.count() < 0 || c.fetch_wait.count() > 300000) {  // fetch.wait.max.ms
            fail("fetch_wait must be in [0, 300000] ms, got " +
                 std::to_string(c.fetch_wait.count()) + " ms");
        }
        if (c.commit_hint_bytes > 4096) {
            fail(
                "commit_hint_bytes must be at most 4096 (brokers' default "
                "offset.metadata.max.bytes), got " +
                std::to_string(c.commit_hint_bytes));
        }
        if (!detail::names_brokers(conf)) {
            fail("the conf names no brokers (set bootstrap.servers)");
        }
        return c;
    }

    static auto reseq_config(resequencer_config c) -> resequencer_config {
        c.on_full = full_policy::refuse;
        return c;
    }

    [[noreturn]] void fail(const std::string& what) const {
        keyroute::detail::runtime_error("keyroute::kafka::ordered_consumer(" + m_config.topic +
                                        "): " + what);
    }

    void create() {
        char errstr[512];
        rd_kafka_conf_t* conf = m_conf.get();
        const auto set = [&](const char* name, const char* value) {
            if (rd_kafka_conf_set(conf, name, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
                fail(std::string(name) + ": " + errstr);
            }
        };
        set("enable.partition.eof", "true");
        set("enable.auto.commit", "false");
        set("enable.auto.offset.store", "false");
        set("allow.auto.create.topics", "false");  // a misspelt topic is an error, not a new one
        if (m_config.fetch_wait.count() > 0) {
            set("fetch.wait.max.ms", std::to_string(m_config.fetch_wait.count()).c_str());
        }
        std::size_t size = 0;
        if (rd_kafka_conf_get(conf, "group.id", nullptr, &size) != RD_KAFKA_CONF_OK || size <= 1) {
            set("group.id", ("keyroute-ordered-" + m_config.topic).c_str());
        }
        rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
        if (rk == nullptr) fail(std::string("rd_kafka_new: ") + errstr);  // conf still ours
        static_cast<void>(m_conf.release());                              // rd_kafka_new took it
        m_rk.reset(rk);
        rd_kafka_poll_set_consumer(rk);
        m_commit_results.reset(rd_kafka_queue_new(rk));
    }

    /// The topic's partition count; throws when the topic does not exist. When `patient`,
    /// retries until `timeout` while the metadata is missing or the topic is being created;
    /// otherwise returns -1 when the metadata does not come.
    auto topic_partitions(std::chrono::milliseconds timeout, bool patient) const -> std::int32_t {
        const auto deadline = steady::now() + timeout;
        rd_kafka_topic_t* rkt = rd_kafka_topic_new(m_rk.get(), m_config.topic.c_str(), nullptr);
        if (rkt == nullptr) fail("rd_kafka_topic_new failed");
        rd_kafka_resp_err_t last = RD_KAFKA_RESP_ERR__TIMED_OUT;
        for (;;) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
            const rd_kafka_metadata_t* md = nullptr;
            const auto err = rd_kafka_metadata(
                m_rk.get(), 0, rkt, &md, static_cast<int>(std::max<std::int64_t>(left.count(), 1)));
            std::int32_t n = -1;
            if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                last = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
                if (last == RD_KAFKA_RESP_ERR_NO_ERROR) n = md->topics[0].partition_cnt;
                rd_kafka_metadata_destroy(md);
            } else {
                last = err;
            }
            if (n > 0) {
                rd_kafka_topic_destroy(rkt);
                return n;
            }
            if (last == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                last == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) {
                rd_kafka_topic_destroy(rkt);
                fail("the topic does not exist");
            }
            if (!patient || steady::now() >= deadline) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a topic being created
        }
        rd_kafka_topic_destroy(rkt);
        if (!patient) return -1;
        fail(std::string("no metadata for the topic within ") + std::to_string(timeout.count()) +
             " ms: " + rd_kafka_err2str(last));
    }

    /// Restores the episodes the group's last commit told (commit_hint.hpp). Without them (no
    /// commit yet, or the committed offsets do not come within metadata_timeout) the restart
    /// is the hint-less one: correct, with gaps reported for what was delivered before it.
    void restore_hints() {
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(m_partitions);
        for (std::int32_t p = 0; p < m_partitions; ++p) {
            rd_kafka_topic_partition_list_add(list, m_config.topic.c_str(), p);
        }
        resequencer_checkpoint told;
        const auto err = rd_kafka_committed(m_rk.get(), list,
                                            static_cast<int>(m_config.metadata_timeout.count()));
        for (int i = 0; err == RD_KAFKA_RESP_ERR_NO_ERROR && i < list->cnt; ++i) {
            const auto& e = list->elems[i];
            if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR || e.metadata == nullptr) continue;
            auto hinted = detail::try_decode_hint(
                std::string_view(static_cast<const char*>(e.metadata), e.metadata_size),
                m_clock_origin);
            if (!hinted) {
                ++m_stats.consume_errors;  // damaged: restart without it
                continue;
            }
            for (auto& ep : *hinted) told.episodes.push_back(std::move(ep));
        }
        rd_kafka_topic_partition_list_destroy(list);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) ++m_stats.consume_errors;
        // An episode told twice (a partition left out of later commits keeps an older hint):
        // the higher next sequence, the later of two lower bounds.
        std::sort(told.episodes.begin(), told.episodes.end(), [](const auto& a, const auto& b) {
            return std::tie(a.producer, a.lane, a.episode, b.next_sequence) <
                   std::tie(b.producer, b.lane, b.episode, a.next_sequence);
        });
        told.episodes.erase(std::unique(told.episodes.begin(), told.episodes.end(),
                                        [](const auto& a, const auto& b) {
                                            return a.producer == b.producer && a.lane == b.lane &&
                                                   a.episode == b.episode;
                                        }),
                            told.episodes.end());
        m_reseq.restore(told);
        m_stats.hinted_episodes = told.episodes.size();
    }

    void restore_and_assign() {
        std::optional<consumer_checkpoint> cp;
        if (m_store != nullptr) cp = m_store->load();
        m_clock_origin = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        if (cp) {
            if (cp->topic != m_config.topic) {
                fail("the checkpoint is of topic " + cp->topic);
            }
            if (cp->partitions != m_partitions) {
                fail("the partition count changed from " + std::to_string(cp->partitions) +
                     " (checkpoint) to " + std::to_string(m_partitions) +
                     ": the events of a key are on other partitions now; drain the old "
                     "checkpoint's offsets with a consumer of the old count, then start afresh");
            }
            m_reseq.restore(cp->state);
            // The clock goes on from the checkpoint's watermark: events re-read are not older.
            if (cp->state.watermark > m_clock_origin) m_clock_origin = cp->state.watermark;
        } else if (m_store == nullptr) {
            restore_hints();
        }
        // Each partition's messages stay on its own queue: poll() merges them by timestamp, so
        // that librdkafka's fetches running ahead on one broker do not run one partition far
        // ahead of the others into the resequencer. Before rd_kafka_assign: a queue unforwarded
        // after it may already have sent its first messages to the consumer queue, behind
        // which later ones were read first (offset order broken: events lost as re-reads).
        for (std::int32_t p = 0; p < m_partitions; ++p) {
            rd_kafka_queue_t* q =
                rd_kafka_queue_get_partition(m_rk.get(), m_config.topic.c_str(), p);
            if (q == nullptr) fail("no queue for partition " + std::to_string(p));
            rd_kafka_queue_forward(q, nullptr);  // and assign's fetch start will not forward it
            m_parts[static_cast<std::size_t>(p)].queue.reset(q);
        }
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(m_partitions);
        for (std::int32_t p = 0; p < m_partitions; ++p) {
            const auto off = m_reseq.committable_offset(static_cast<std::uint32_t>(p));
            rd_kafka_topic_partition_list_add(list, m_config.topic.c_str(), p)->offset =
                off ? *off : RD_KAFKA_OFFSET_INVALID;
        }
        const auto err = rd_kafka_assign(m_rk.get(), list);
        rd_kafka_topic_partition_list_destroy(list);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
            fail(std::string("assign: ") + rd_kafka_err2str(err));
    }

    void check_partition_count() {
        m_last_metadata = m_now;
        const auto n = topic_partitions(std::chrono::milliseconds(1000), false);
        if (n > 0 && n != m_partitions) {
            fail("the partition count changed from " + std::to_string(m_partitions) + " to " +
                 std::to_string(n) + " while reading: restart the consumer (events of a key " +
                 "now go to other partitions; commit, drain, and start afresh)");
        }
    }

    void tick() {
        if (!m_frozen) m_running += m_now - m_last_tick;
        m_last_tick = m_now;
    }

    void handle(message_ptr m) {
        const auto err = m->err;
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (m->partition < 0 || m->partition >= m_partitions) {
                fail("a message of partition " + std::to_string(m->partition) + ", beyond the " +
                     std::to_string(m_partitions) + " assigned: the partition count changed");
            }
            // A partition's own queue is not forwarded here; should librdkafka deliver one of
            // its messages on the consumer queue anyway, it goes into its run in offset order.
            part& p = m_parts[static_cast<std::size_t>(m->partition)];
            if (err == RD_KAFKA_RESP_ERR_NO_ERROR && m->offset < p.next) {
                // Pushed now, it would be taken for a re-read and dropped: say so instead.
                fail("message " + std::to_string(m->offset) + " of partition " +
                     std::to_string(m->partition) + " came after offset " +
                     std::to_string(p.next - 1) + " was read");
            }
            const auto at = std::upper_bound(
                p.local.begin(), p.local.end(), m->offset,
                [](std::int64_t offset, const message_ptr& x) { return offset < x->offset; });
            p.local.insert(at, std::move(m));
            note_start(p);
            return;
        }
        if (rd_kafka_fatal_error(m_rk.get(), nullptr, 0) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fail(std::string("fatal error: ") + rd_kafka_message_errstr(m.get()));
        }
        if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
            err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
            err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION) {
            fail(std::string("the topic or one of its partitions is gone: ") +
                 rd_kafka_message_errstr(m.get()));
        }
        if (err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) fail(detail::no_start_offset(*m));
        ++m_stats.consume_errors;  // transport errors, a broker down: librdkafka retries
    }

    /// Records a partition's first position (see the constructor) once its run has one.
    static void note_start(part& p) noexcept {
        if (p.start < 0 && !p.local.empty() && p.local.front()->offset >= 0) {
            p.start = p.local.front()->offset;
        }
    }

    /// Takes what partition `i`'s queue has into its local run, if that is empty.
    void fill(std::size_t i) {
        part& p = m_parts[i];
        if (!p.local.empty() || !p.queue) return;
        std::array<rd_kafka_message_t*, refill> got{};
        const auto n = rd_kafka_consume_batch_queue(p.queue.get(), 0, got.data(), got.size());
        for (ssize_t k = 0; k < n; ++k) p.local.emplace_back(got[static_cast<std::size_t>(k)]);
        note_start(p);
    }

    /// Pushes the partitions' messages oldest timestamp first, a partition at a time while it
    /// is not newer than the next one; a refused message stays first in its run (its
    /// partition is skipped this turn). Returns the messages pushed.
    auto merge() -> int {
        ++m_merge_serial;
        int pushed = 0;
        m_blocked.assign(m_parts.size(), false);
        while (pushed < batch) {
            std::size_t best = m_parts.size();
            std::int64_t best_ts = 0;
            std::int64_t second_ts = std::numeric_limits<std::int64_t>::max();
            for (std::size_t i = 0; i < m_parts.size(); ++i) {
                if (m_blocked[i]) continue;
                fill(i);
                part& p = m_parts[i];
                while (!p.local.empty() && p.local.front()->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                    message_ptr m = std::move(p.local.front());
                    p.local.pop_front();
                    event(i, std::move(m));
                    fill(i);
                }
                if (p.local.empty()) continue;
                const std::int64_t ts = rd_kafka_message_timestamp(p.local.front().get(), nullptr);
                if (best == m_parts.size() || ts < best_ts) {
                    if (best != m_parts.size()) second_ts = std::min(second_ts, best_ts);
                    best = i;
                    best_ts = ts;
                } else {
                    second_ts = std::min(second_ts, ts);
                }
            }
            if (best == m_parts.size()) break;
            // A partition with more to read but nothing fetched yet may hold older messages:
            // wait for it (its fetch is in flight) unless it is paused, refused or idle.
            std::int64_t floor = std::numeric_limits<std::int64_t>::max();
            for (std::size_t i = 0; i < m_parts.size(); ++i) {
                const part& q = m_parts[i];
                if (!q.local.empty() || q.paused || m_blocked[i] || idle(q) || !behind(i)) continue;
                floor = std::min(floor, q.started ? q.last_ts : std::int64_t{-1});
            }
            if (floor != std::numeric_limits<std::int64_t>::max()) {
                if (best_ts > floor + m_config.max_drift.count()) break;
                second_ts = std::min(second_ts, floor + m_config.max_drift.count());
            }
            part& p = m_parts[best];
            while (pushed < batch && !p.local.empty() &&
                   p.local.front()->err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                   rd_kafka_message_timestamp(p.local.front().get(), nullptr) <= second_ts) {
                if (!push(p, *p.local.front())) {
                    m_blocked[best] = true;
                    break;
                }
                p.local.pop_front();
                p.started = true;
                p.at_end = false;
                p.last_progress = m_now;
                ++m_stats.read;
                ++pushed;
                if (p.local.empty()) fill(best);
            }
        }
        return pushed;
    }

    /// An end-of-partition event or an error from partition `i`'s own queue.
    void event(std::size_t i, message_ptr m) {
        part& p = m_parts[i];
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            p.started = true;
            p.last_progress = m_now;
            if (p.next < 0 || m->offset >= p.next) p.at_end = true;
            // Everything before it was pushed: held offsets of a restored checkpoint below it
            // were deleted (retention) and will not come.
            m_reseq.skip_to(static_cast<std::uint32_t>(i), m->offset);
            return;
        }
        handle(std::move(m));
    }

    void release_queues() {
        for (auto& p : m_parts) {
            p.local.clear();
            p.queue.reset();
        }
    }

    /// Pushes one message; false if refused (the message is left intact).
    auto push(part& p, const rd_kafka_message_t& m) -> bool {
        stamp_error error = stamp_error::none;
        const auto st = try_read_stamp(&m, &error);
        const auto offset = m.offset;
        if (error != stamp_error::none) {
            if (p.malformed_at != offset) {  // once per message, not per retry after a refusal
                p.malformed_at = offset;
                ++m_stats.malformed_stamps;
                p.malformed_keep = !m_on_malformed || m_on_malformed(m, error);
            }
            if (!p.malformed_keep) {
                p.next = offset + 1;
                return true;
            }
        }
        const std::string_view key =
            m.key != nullptr ? std::string_view(static_cast<const char*>(m.key), m.key_len)
                             : std::string_view();
        payload held{m.payload != nullptr ? std::string(static_cast<const char*>(m.payload), m.len)
                                          : std::string(),
                     rd_kafka_message_timestamp(&m, nullptr)};
        const auto ts = held.timestamp;
        const auto r =
            m_reseq.push(key, st.value_or(keyroute::stamp{}), std::move(held),
                         origin{static_cast<std::uint32_t>(m.partition), offset}, clock());
        if (r == push_result::refused) {
            ++m_stats.refused;
            return false;
        }
        if (r == push_result::duplicate) ++m_stats.duplicates;
        p.next = offset + 1;
        p.last_ts = ts;
        m_stats.max_held = std::max(m_stats.max_held, m_reseq.held_events());
        return true;
    }

    /// Whether partition `i` has more to read now, as far as librdkafka knows.
    [[nodiscard]] auto behind(std::size_t i) const -> bool {
        const part& p = m_parts[i];
        if (!p.local.empty() || !p.started) return true;
        if (p.at_end || p.next < 0) return !p.at_end;
        if (p.high_serial != m_merge_serial) {
            p.high_serial = m_merge_serial;
            std::int64_t low = 0;
            std::int64_t high = -1;
            if (rd_kafka_get_watermark_offsets(m_rk.get(), m_config.topic.c_str(),
                                               static_cast<std::int32_t>(i), &low,
                                               &high) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                high = -1;
            }
            p.high = high;
        }
        return !(p.high >= 0 && p.next >= p.high);
    }

    [[nodiscard]] auto idle(const part& p) const -> bool {
        return m_now - p.last_progress > m_config.idle_timeout;
    }

    /// Pauses partitions that run ahead under pressure, resumes them when it is gone or nothing
    /// else can be read, and decides whether the watermark clock runs.
    void regulate() {
        const std::size_t held = m_reseq.held_events();
        const auto high = static_cast<std::size_t>(m_config.pause_fraction *
                                                   static_cast<double>(m_config.reseq.max_events));
        // The oldest position among the partitions being read (message timestamps).
        std::int64_t oldest = std::numeric_limits<std::int64_t>::max();
        bool lagging = false;  // a readable partition with more to read, not idle
        for (std::size_t i = 0; i < m_parts.size(); ++i) {
            const part& p = m_parts[i];
            if (p.paused || m_blocked[i] || idle(p) || !behind(i)) continue;
            lagging = true;
            oldest = std::min(oldest, p.started ? p.last_ts : std::int64_t{-1});
        }
        if (held >= std::max<std::size_t>(high, 1) && lagging) {
            for (std::size_t i = 0; i < m_parts.size(); ++i) {
                const part& p = m_parts[i];
                if (p.paused || !p.started || p.last_ts < 0) continue;
                if (p.last_ts > oldest + m_config.max_drift.count()) {
                    pause(static_cast<std::int32_t>(i));
                }
            }
        } else if (held <= high / 2 || !lagging) {
            for (std::size_t i = 0; i < m_parts.size(); ++i) {
                if (m_parts[i].paused) resume(static_cast<std::int32_t>(i));
            }
            if (!lagging) {  // the resumed ones may have more to read: decide again next turn
                for (std::size_t i = 0; i < m_parts.size() && !lagging; ++i) {
                    const part& p = m_parts[i];
                    lagging = !p.paused && !m_blocked[i] && !idle(p) && behind(i);
                }
            }
        }
        bool all_started = true;
        for (const part& p : m_parts) all_started = all_started && (p.started || idle(p));
        m_frozen = !all_started || lagging;
    }

    void pause(std::int32_t partition) {
        part& p = m_parts[static_cast<std::size_t>(partition)];
        if (!p.paused) {
            toggle(partition, true);
            ++m_stats.pauses;
        }
        p.paused = true;
    }

    void resume(std::int32_t partition) {
        part& p = m_parts[static_cast<std::size_t>(partition)];
        if (!p.paused) return;
        toggle(partition, false);
        p.paused = false;
        p.last_progress = m_now;
    }

    /// Pauses or resumes `partition` in librdkafka: it stops or starts fetching. Messages already
    /// in the partition's run stay; what librdkafka prefetched but did not hand out is dropped
    /// and fetched again on resume, from just after the last message handed out.
    void toggle(std::int32_t partition, bool pause_it) {
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(list, m_config.topic.c_str(), partition);
        const auto err = pause_it ? rd_kafka_pause_partitions(m_rk.get(), list)
                                  : rd_kafka_resume_partitions(m_rk.get(), list);
        rd_kafka_topic_partition_list_destroy(list);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fail(std::string(pause_it ? "pause: " : "resume: ") + rd_kafka_err2str(err));
        }
    }

    void deliver(delivery_type& d) {
        ++m_stats.delivered;
        if (d.order == delivery_order::late) ++m_stats.late;
        if (d.order == delivery_order::out_of_order) ++m_stats.out_of_order;
        m_on_message(ordered_message{d.key, d.event.value, d.stamp,
                                     static_cast<std::int32_t>(d.source.partition), d.source.offset,
                                     d.event.timestamp, d.order, d.possibly_duplicate});
    }

    void gap(const gap_report& g) {
        ++m_stats.gaps;
        m_stats.missing += g.last_missing - g.first_missing + 1;
        if (m_on_gap) m_on_gap(g);
    }

    detail::conf_ptr m_conf;             // until rd_kafka_new takes it
    detail::handle_ptr m_rk;             // before the rest: destroyed last
    detail::queue_ptr m_commit_results;  // async commits' results, served by turn()
    ordered_consumer_config m_config;
    message_sink m_on_message;
    gap_sink m_on_gap;
    malformed_sink m_on_malformed;
    checkpoint_store* m_store;
    ordered_consumer_stats m_stats;
    reseq_type m_reseq;
    std::int32_t m_partitions = 0;
    std::vector<part> m_parts;
    std::vector<bool> m_blocked;       // merge()'s partitions refused this turn
    std::uint64_t m_merge_serial = 0;  // merge() calls: the watermark cache's age
    std::chrono::milliseconds m_clock_origin{};
    steady::duration m_running{};
    bool m_frozen = true;
    bool m_closed = false;
    bool m_failed = false;  // poll() or commit() threw: see poll()
    steady::time_point m_now{};
    steady::time_point m_last_tick{};
    steady::time_point m_last_commit{};
    bool m_commit_now = false;  // a commit was refused for its hint's size: again next turn
    steady::time_point m_last_metadata{};
};

}  // namespace keyroute::kafka
