// A Kafka consumer that puts each key's events back in order with
// keyroute::kafka::ordered_consumer (docs/ordering.md), and checks what it got.
//
//     kafka_consumer [bootstrap.servers [topic [group]]]
//     kafka_consumer --slow-first-fetch
//
// Without a broker address it starts librdkafka's in-process mock cluster (3 brokers on
// 127.0.0.1, a 16-partition topic), fills it with a skewed stream routed by the salting router,
// and consumes that; with --slow-first-fetch, one broker answers its first fetch 6.5 s late,
// more than max_delay (ctest runs it that way too). It stops once every partition is read to its
// end. Exit status 1 on an error, and with the mock cluster unless every seeded event was
// delivered once, each key's events in order, with nothing given up.
//
// ordered_consumer does what a hand-written loop gets wrong: it reads every partition itself
// (rd_kafka_assign), runs the watermark clock on processing time held still until every
// partition has started and while one still has a backlog, pauses partitions that run ahead
// instead of giving sequences up, and commits only offsets that are safe to restart from.
#include <keyroute/kafka/ordered_consumer.hpp>
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
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
    char errstr[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", group.c_str(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", errstr, sizeof errstr);

    // The application, 10 lines (and 5 that check the seeded stream's order). Events are held
    // at most 5 s (max_delay) waiting for a missing sequence once no partition has more to read.
    std::map<std::string, std::uint64_t> delivered;  // per key
    std::map<std::string, long long> last_id;        // check: seeded ids increase per key
    bool in_order = true;                            // check
    keyroute::kafka::ordered_consumer_config config;
    config.topic = topic;
    config.reseq.max_delay = std::chrono::seconds(5);
    try {
        keyroute::kafka::ordered_consumer consumer(conf, config, [&](const auto& m) {
            ++delivered[std::string(m.key)];  // the application's processing goes here
            const long long id = std::stoll(std::string(m.value));  // check
            const auto [it, fresh] = last_id.emplace(m.key, id);    // check
            in_order = in_order && (fresh || it->second < id);      // check
            it->second = id;                                        // check
        });
        while (!consumer.at_end()) consumer.poll(std::chrono::milliseconds(100));
        consumer.close();
        const auto& st = consumer.stats();
        std::printf(
            "read %llu, delivered %llu (duplicates %llu, missing %llu, malformed stamps "
            "%llu, paused %llu times), %zu keys; user-42: %llu\n",
            static_cast<unsigned long long>(st.read), static_cast<unsigned long long>(st.delivered),
            static_cast<unsigned long long>(st.duplicates),
            static_cast<unsigned long long>(st.missing),
            static_cast<unsigned long long>(st.malformed_stamps),
            static_cast<unsigned long long>(st.pauses), delivered.size(),
            static_cast<unsigned long long>(delivered["user-42"]));
        const bool seeded_ok = st.read == seeded_events && st.delivered == seeded_events &&
                               st.missing == 0 && st.duplicates == 0 && in_order;
        if (mock != nullptr && !seeded_ok) return 1;
    } catch (const std::exception& e) {  // a missing topic, a changed partition count
        std::fprintf(stderr, "consume: %s\n", e.what());
        return 1;
    }
    if (mock != nullptr) rd_kafka_mock_cluster_destroy(mock);
    if (mock_rk != nullptr) rd_kafka_destroy(mock_rk);
    return 0;
}
