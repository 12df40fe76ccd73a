// A Kafka consumer that reads keyroute's stamp headers and puts each key's events back in order
// with a resequencer, committing only offsets that are safe to restart from.
//
//     kafka_consumer [bootstrap.servers [topic [group]]]
//     kafka_consumer --slow-first-fetch
//
// Without a broker address it starts librdkafka's in-process mock cluster (3 brokers on
// 127.0.0.1, a 16-partition topic), fills it with a skewed stream routed by the salting router,
// and consumes that; with --slow-first-fetch, one broker answers its first fetch 6.5 s late,
// more than max_delay (ctest runs it that way too). It stops once every partition is read to its
// end (or, on a live topic, 3 s without new messages). Exit status 1 on a consume or commit error,
// and with the mock cluster unless every seeded event was delivered once, in order, with nothing
// given up.
//
// Three choices matter for order (docs/kafka.md, "Consuming spread keys"):
// - It reads EVERY partition of the topic itself (rd_kafka_assign; the group only keeps the
//   committed offsets): the salting router spreads a hot key over many partitions, and a
//   resequencer can only put the key back in order if it reads all of them. A consumer group
//   that splits the partitions between members (rd_kafka_subscribe) cannot. So: one such
//   consumer per group id; partitions added to the topic later are read after a restart.
// - Its watermark is processing time (the system clock, which a checkpoint's watermark stays
//   meaningful against after a restart), not the messages' timestamps: producers set those, one
//   skewed clock would move the watermark a day ahead for good, and while one partition's
//   backlog is read, its newest timestamps would give up sequences still unread on the others.
// - The watermark clock stands still until every partition has delivered a message or reached
//   its end, for push() as well as advance_watermark(): a partition whose first fetch comes
//   seconds after the others' (a busy machine, a slow broker) would otherwise find its sequences
//   given up. After that, max_delay must cover the worst lag between partitions.
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/resequencer.hpp>
#include <keyroute/salting_router.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

auto make(rd_kafka_type_t type, const std::map<std::string, std::string>& settings) -> rd_kafka_t* {
    char errstr[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    for (const auto& [name, value] : settings) {
        if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) !=
            RD_KAFKA_CONF_OK) {
            std::fprintf(stderr, "%s: %s\n", name.c_str(), errstr);
            rd_kafka_conf_destroy(conf);
            return nullptr;
        }
    }
    rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (rk == nullptr) std::fprintf(stderr, "rd_kafka_new: %s\n", errstr);
    return rk;
}

constexpr std::uint64_t seeded_events = 20000;

// Fills `topic` with a skewed stream (one key at 60%) routed by the salting router.
auto seed(const std::string& brokers, const char* topic, int partitions) -> bool {
    rd_kafka_t* rk = make(RD_KAFKA_PRODUCER, {{"bootstrap.servers", brokers}, {"linger.ms", "5"}});
    if (rk == nullptr) return false;
    keyroute::salting_config config;
    config.partitions = static_cast<std::uint64_t>(partitions);
    config.window = std::chrono::seconds(1);
    keyroute::salting_router<keyroute::kafka_partitioner> router(config);
    std::mt19937_64 rng(2);
    bool ok = true;
    for (std::uint64_t i = 0; i < seeded_events && ok; ++i) {
        const std::string key =
            rng() % 10 < 6 ? std::string("user-42") : "user-" + std::to_string(rng() % 1000);
        ok = static_cast<bool>(keyroute::kafka::produce(rk, topic, router, key, std::to_string(i)));
        rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 30000);
    rd_kafka_destroy(rk);
    return ok;
}

// Every partition of `topic` (its count from the cluster's metadata), from the group's committed
// offsets (RD_KAFKA_OFFSET_INVALID: the committed one, else auto.offset.reset); nullptr when the
// topic is not found.
auto all_partitions(rd_kafka_t* rk, const char* topic) -> rd_kafka_topic_partition_list_t* {
    std::int32_t n = -1;
    for (int attempt = 0; attempt < 10 && n <= 0; ++attempt) {
        if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
        n = keyroute::kafka::partition_count(rk, topic, 2000);
    }
    if (n <= 0) return nullptr;
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(n);
    for (std::int32_t p = 0; p < n; ++p)
        rd_kafka_topic_partition_list_add(list, topic, p)->offset = RD_KAFKA_OFFSET_INVALID;
    return list;
}

// Processing time in milliseconds since the epoch: the watermark clock's base.
auto processing_time() -> std::chrono::milliseconds {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
}

// Commits, for every assigned partition, the offset the resequencer says is safe. False on an
// error (printed).
template <class Resequencer>
auto commit_safe_offsets(rd_kafka_t* rk, const Resequencer& reseq) -> bool {
    rd_kafka_topic_partition_list_t* assigned = nullptr;
    if (rd_kafka_assignment(rk, &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR) return false;
    bool ok = true;
    rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(assigned->cnt);
    for (int i = 0; i < assigned->cnt; ++i) {
        const auto& tp = assigned->elems[i];
        if (const auto safe = reseq.committable_offset(static_cast<std::uint32_t>(tp.partition))) {
            rd_kafka_topic_partition_list_add(offsets, tp.topic, tp.partition)->offset = *safe;
        }
    }
    if (offsets->cnt > 0) {
        const rd_kafka_resp_err_t err = rd_kafka_commit(rk, offsets, 0 /* synchronous */);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            std::fprintf(stderr, "commit: %s\n", rd_kafka_err2str(err));
            ok = false;
        }
    }
    rd_kafka_topic_partition_list_destroy(offsets);
    rd_kafka_topic_partition_list_destroy(assigned);
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    const bool slow_first_fetch = argc == 2 && std::string_view(argv[1]) == "--slow-first-fetch";
    std::string brokers = argc > 1 && !slow_first_fetch ? argv[1] : "";
    const char* topic = argc > 2 ? argv[2] : "keyroute-events";
    const std::string group = argc > 3 ? argv[3] : "keyroute-example";

    rd_kafka_t* mock_rk = nullptr;
    rd_kafka_mock_cluster_t* mock = nullptr;
    if (brokers.empty()) {
        mock_rk = make(RD_KAFKA_PRODUCER, {{"log_level", "4"}});  // a bookkeeping handle
        mock = mock_rk != nullptr ? rd_kafka_mock_cluster_new(mock_rk, 3) : nullptr;
        if (mock == nullptr || rd_kafka_mock_topic_create(mock, topic, 16, 3) != 0) {
            std::fprintf(stderr, "cannot start the mock cluster\n");
            return 1;
        }
        brokers = rd_kafka_mock_cluster_bootstraps(mock);
        std::printf("mock cluster at %s, seeding %s\n", brokers.c_str(), topic);
        if (!seed(brokers, topic, 16)) return 1;
        // Broker 2's first Fetch answered 6.5 s late: its partitions start after max_delay.
        if (slow_first_fetch && rd_kafka_mock_broker_push_request_error_rtts(
                                    mock, 2, 1 /* Fetch */, 1, RD_KAFKA_RESP_ERR_NO_ERROR, 6500) !=
                                    RD_KAFKA_RESP_ERR_NO_ERROR) {
            std::fprintf(stderr, "cannot slow the mock cluster's broker 2\n");
            return 1;
        }
    }

    rd_kafka_t* rk = make(RD_KAFKA_CONSUMER, {{"bootstrap.servers", brokers},
                                              {"group.id", group},
                                              {"auto.offset.reset", "earliest"},
                                              {"enable.auto.commit", "false"},
                                              {"enable.partition.eof", "true"}});
    if (rk == nullptr) return 1;
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t* partitions = all_partitions(rk, topic);
    if (partitions == nullptr) {
        std::fprintf(stderr, "topic %s not found\n", topic);
        rd_kafka_destroy(rk);
        return 1;
    }
    const auto partition_count = static_cast<std::size_t>(partitions->cnt);
    const rd_kafka_resp_err_t assigned = rd_kafka_assign(rk, partitions);
    rd_kafka_topic_partition_list_destroy(partitions);
    if (assigned != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::fprintf(stderr, "assign: %s\n", rd_kafka_err2str(assigned));
        rd_kafka_destroy(rk);
        return 1;
    }

    // Events are held at most 5 s of processing time waiting for a missing sequence.
    std::map<std::string, std::uint64_t> delivered;
    std::uint64_t malformed = 0;
    keyroute::resequencer_config config;
    config.max_delay = std::chrono::seconds(5);
    keyroute::resequencer<std::string> reseq(
        config,
        [&](keyroute::delivery<std::string>&& d) {
            // The application's processing goes here; events of one key arrive in order.
            ++delivered[std::string(d.key)];
        },
        [](const keyroute::gap_report& g) {
            std::fprintf(stderr, "gave up sequences %llu..%llu of key %.*s (%s)\n",
                         static_cast<unsigned long long>(g.first_missing),
                         static_cast<unsigned long long>(g.last_missing),
                         static_cast<int>(g.key.size()), g.key.data(),
                         keyroute::to_string(g.reason));
        });

    std::uint64_t read = 0;
    std::uint64_t refused = 0;
    bool errors = false;
    // Per partition: has it delivered a message or reached its end yet; is it at its end now.
    std::vector<bool> started(partition_count, false);
    std::vector<bool> at_end(partition_count, false);
    std::size_t started_count = 0;
    std::size_t at_end_count = 0;
    // The watermark clock: processing time that stands still until every partition has started
    // (a partition's first fetch can come seconds after the others'). An event read before then
    // waits its max_delay from the moment the last partition starts, not from its own read:
    // holding only advance_watermark() back would release it at that moment, before the last
    // partition's backlog is read.
    const auto clock_start = processing_time();
    std::chrono::milliseconds clock_lag{0};  // how long the start took, once every one started
    const auto watermark_clock = [&] {
        return started_count == partition_count ? processing_time() - clock_lag : clock_start;
    };
    const auto mark = [&](std::int32_t partition, bool end) {
        const auto p = static_cast<std::size_t>(partition);
        if (p >= partition_count) return;
        if (!started[p] && ++started_count == partition_count) {
            clock_lag = std::max(processing_time() - clock_start, std::chrono::milliseconds{0});
        }
        started[p] = true;
        if (at_end[p] != end) at_end_count = end ? at_end_count + 1 : at_end_count - 1;
        at_end[p] = end;
    };
    const auto begin = std::chrono::steady_clock::now();
    auto last_message = begin;
    // Until every partition is at its end; on a live topic, until 3 s without messages once
    // every partition has started (30 s at most for that). On the mock cluster, whose topic ends,
    // until every partition is at its end (60 s at most): a busy machine can pause 3 s.
    while (at_end_count < partition_count) {
        const auto now = std::chrono::steady_clock::now();
        const bool stop = mock == nullptr && started_count == partition_count
                              ? now - last_message > std::chrono::seconds(3)
                              : now - begin > std::chrono::seconds(mock == nullptr ? 30 : 60);
        if (stop) {
            if (started_count < partition_count) {
                std::fprintf(stderr, "consume: %zu of %zu partitions never started\n",
                             partition_count - started_count, partition_count);
                errors = true;
            } else if (mock != nullptr) {
                std::fprintf(stderr, "consume: %zu of %zu partitions not read to their end\n",
                             partition_count - at_end_count, partition_count);
                errors = true;
            }
            break;
        }
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
        if (m != nullptr && m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            last_message = std::chrono::steady_clock::now();
            mark(m->partition, false);
            keyroute::stamp_error error = keyroute::stamp_error::none;
            const auto st = keyroute::kafka::try_read_stamp(m, &error);
            if (error != keyroute::stamp_error::none) ++malformed;  // then treated as unstamped
            const auto result =
                reseq.push(std::string_view(static_cast<const char*>(m->key), m->key_len),
                           st.value_or(keyroute::stamp{}),
                           std::string(static_cast<const char*>(m->payload), m->len),
                           keyroute::origin{static_cast<std::uint32_t>(m->partition), m->offset},
                           watermark_clock());
            // Refused only under overflow_policy::refuse (not this example's): the event stays
            // with the caller, to retry once held events are released.
            if (result == keyroute::push_result::refused) ++refused;
            if (++read % 5000 == 0 && !commit_safe_offsets(rk, reseq)) errors = true;
        } else if (m != nullptr && m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            mark(m->partition, true);
        } else if (m != nullptr) {
            std::fprintf(stderr, "consume: %s\n", rd_kafka_message_errstr(m));
            errors = true;
        }
        if (m != nullptr) rd_kafka_message_destroy(m);
        // Every turn, with or without a message, once every partition has started: held events
        // leave on time while nothing comes.
        if (started_count == partition_count) reseq.advance_watermark(watermark_clock());
    }
    // Shutting down: process what is held, then commit everything read.
    reseq.flush();
    if (!commit_safe_offsets(rk, reseq)) errors = true;
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);

    const auto& stats = reseq.stats();
    const auto hot = delivered.find("user-42");
    std::printf(
        "read %llu, delivered %llu (held on the way: %llu, duplicates %llu, "
        "missing %llu, malformed stamps %llu, refused %llu), %zu keys; user-42: %llu\n",
        static_cast<unsigned long long>(read), static_cast<unsigned long long>(stats.delivered),
        static_cast<unsigned long long>(stats.held),
        static_cast<unsigned long long>(stats.duplicates),
        static_cast<unsigned long long>(stats.missing), static_cast<unsigned long long>(malformed),
        static_cast<unsigned long long>(refused), delivered.size(),
        static_cast<unsigned long long>(hot != delivered.end() ? hot->second : 0));
    if (mock != nullptr) rd_kafka_mock_cluster_destroy(mock);
    if (mock_rk != nullptr) rd_kafka_destroy(mock_rk);
    // With the mock cluster, what was seeded is known: every event once, nothing given up.
    const bool seeded_ok = read == seeded_events && stats.delivered == read && stats.missing == 0 &&
                           stats.duplicates == 0 && refused == 0;
    return errors || (mock != nullptr && !seeded_ok) ? 1 : 0;
}
