// A Kafka consumer that reads keyroute's stamp headers and puts each key's events back in order
// with a resequencer, committing only offsets that are safe to restart from.
//
//     kafka_consumer [bootstrap.servers [topic [group]]]
//
// Without a broker address it starts librdkafka's in-process mock cluster (3 brokers on
// 127.0.0.1, a 16-partition topic), fills it with a skewed stream routed by the salting router,
// and consumes that. It stops after 3 seconds without new messages.
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
    for (int i = 0; i < 20000 && ok; ++i) {
        const std::string key =
            rng() % 10 < 6 ? std::string("user-42") : "user-" + std::to_string(rng() % 1000);
        ok = static_cast<bool>(keyroute::kafka::produce(rk, topic, router, key, std::to_string(i)));
        rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 30000);
    rd_kafka_destroy(rk);
    return ok;
}

// Commits, for every assigned partition, the offset the resequencer says is safe.
template <class Resequencer>
void commit_safe_offsets(rd_kafka_t* rk, const Resequencer& reseq) {
    rd_kafka_topic_partition_list_t* assigned = nullptr;
    if (rd_kafka_assignment(rk, &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(assigned->cnt);
    for (int i = 0; i < assigned->cnt; ++i) {
        const auto& tp = assigned->elems[i];
        if (const auto safe = reseq.committable_offset(static_cast<std::uint32_t>(tp.partition))) {
            rd_kafka_topic_partition_list_add(offsets, tp.topic, tp.partition)->offset = *safe;
        }
    }
    if (offsets->cnt > 0) rd_kafka_commit(rk, offsets, 1 /* async */);
    rd_kafka_topic_partition_list_destroy(offsets);
    rd_kafka_topic_partition_list_destroy(assigned);
}

}  // namespace

int main(int argc, char** argv) {
    std::string brokers = argc > 1 ? argv[1] : "";
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
    }

    rd_kafka_t* rk = make(RD_KAFKA_CONSUMER, {{"bootstrap.servers", brokers},
                                              {"group.id", group},
                                              {"auto.offset.reset", "earliest"},
                                              {"enable.auto.commit", "false"}});
    if (rk == nullptr) return 1;
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);

    // Events are held at most 5 s of message time waiting for a missing sequence.
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

    std::int64_t newest = 0;
    std::uint64_t read = 0;
    auto last_message = std::chrono::steady_clock::now();
    // Stop after 3 s without messages (15 s before the first: joining the group takes a while).
    while (std::chrono::steady_clock::now() - last_message <
           std::chrono::seconds(read == 0 ? 15 : 3)) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
        if (m == nullptr) continue;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            last_message = std::chrono::steady_clock::now();
            keyroute::stamp_error error = keyroute::stamp_error::none;
            const auto st = keyroute::kafka::try_read_stamp(m, &error);
            if (error != keyroute::stamp_error::none) ++malformed;  // then treated as unstamped
            const std::int64_t ts = rd_kafka_message_timestamp(m, nullptr);
            newest = std::max(newest, ts);
            reseq.push(std::string_view(static_cast<const char*>(m->key), m->key_len),
                       st.value_or(keyroute::stamp{}),
                       std::string(static_cast<const char*>(m->payload), m->len),
                       keyroute::origin{static_cast<std::uint32_t>(m->partition), m->offset},
                       std::chrono::milliseconds(ts));
            reseq.advance_watermark(std::chrono::milliseconds(newest));
            if (++read % 5000 == 0) commit_safe_offsets(rk, reseq);
        }
        rd_kafka_message_destroy(m);
    }
    // Shutting down: process what is held, then commit everything read.
    reseq.flush();
    commit_safe_offsets(rk, reseq);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);

    const auto& stats = reseq.stats();
    const auto hot = delivered.find("user-42");
    std::printf(
        "read %llu, delivered %llu (held on the way: %llu, duplicates %llu, "
        "missing %llu, malformed stamps %llu), %zu keys; user-42: %llu\n",
        static_cast<unsigned long long>(read), static_cast<unsigned long long>(stats.delivered),
        static_cast<unsigned long long>(stats.held),
        static_cast<unsigned long long>(stats.duplicates),
        static_cast<unsigned long long>(stats.missing), static_cast<unsigned long long>(malformed),
        delivered.size(),
        static_cast<unsigned long long>(hot != delivered.end() ? hot->second : 0));
    if (mock != nullptr) rd_kafka_mock_cluster_destroy(mock);
    if (mock_rk != nullptr) rd_kafka_destroy(mock_rk);
    return 0;
}
