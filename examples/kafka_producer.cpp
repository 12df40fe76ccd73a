// A Kafka producer that routes with keyroute's salting router before publishing: hot keys are
// spread over partitions, every event goes to an explicit partition, and events whose order a
// consumer could lose carry a stamp header (see kafka_consumer.cpp for the other side).
//
//     kafka_producer [bootstrap.servers [topic [events]]]
//
// Without a broker address it starts librdkafka's in-process mock cluster (3 brokers on
// 127.0.0.1, a 16-partition topic) and produces there.
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

struct delivery_counts {
    std::vector<std::uint64_t> per_partition;
    std::uint64_t failed = 0;
};

void on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m, void* opaque) {
    auto* counts = static_cast<delivery_counts*>(opaque);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++counts->failed;
        std::fprintf(stderr, "delivery failed: %s\n", rd_kafka_err2str(m->err));
    } else if (m->partition >= 0 &&
               static_cast<std::size_t>(m->partition) < counts->per_partition.size()) {
        ++counts->per_partition[static_cast<std::size_t>(m->partition)];
    }
}

auto set(rd_kafka_conf_t* conf, const char* name, const char* value) -> bool {
    char errstr[256];
    if (rd_kafka_conf_set(conf, name, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        std::fprintf(stderr, "%s: %s\n", name, errstr);
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    std::string brokers = argc > 1 ? argv[1] : "";
    const char* topic = argc > 2 ? argv[2] : "keyroute-events";
    const long events = argc > 3 ? std::atol(argv[3]) : 100000;

    // No broker given: an in-process mock cluster, kept alive by its own handle.
    rd_kafka_t* mock_rk = nullptr;
    rd_kafka_mock_cluster_t* mock = nullptr;
    if (brokers.empty()) {
        char errstr[256];
        rd_kafka_conf_t* mock_conf = rd_kafka_conf_new();
        set(mock_conf, "log_level", "4");  // it is a bookkeeping handle with no bootstrap servers
        mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, mock_conf, errstr, sizeof errstr);
        mock = mock_rk != nullptr ? rd_kafka_mock_cluster_new(mock_rk, 3) : nullptr;
        if (mock == nullptr || rd_kafka_mock_topic_create(mock, topic, 16, 3) != 0) {
            std::fprintf(stderr, "cannot start the mock cluster\n");
            return 1;
        }
        brokers = rd_kafka_mock_cluster_bootstraps(mock);
        std::printf("mock cluster at %s\n", brokers.c_str());
    }

    delivery_counts counts;
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    if (!set(conf, "bootstrap.servers", brokers.c_str()) || !set(conf, "linger.ms", "5") ||
        !set(conf, "enable.idempotence", "true")) {
        return 1;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, &on_delivery);
    rd_kafka_conf_set_opaque(conf, &counts);
    char errstr[256];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (rk == nullptr) {
        std::fprintf(stderr, "rd_kafka_new: %s\n", errstr);
        return 1;
    }
    // The router must be built for exactly the topic's partition count.
    const std::int32_t partitions = keyroute::kafka::partition_count(rk, topic, 10000);
    if (partitions <= 0) {
        std::fprintf(stderr, "topic %s not found\n", topic);
        return 1;
    }
    counts.per_partition.assign(static_cast<std::size_t>(partitions), 0);

    // Cold keys land where the Java client would put them; hot keys are spread.
    keyroute::salting_config config;
    config.partitions = static_cast<std::uint64_t>(partitions);
    config.window = std::chrono::seconds(1);
    keyroute::salting_router<keyroute::kafka_partitioner> router(config);

    // A skewed stream: one key is half of the traffic.
    std::mt19937_64 rng(1);
    std::uint64_t stamped = 0;
    long produced = 0;
    bool produce_failed = false;
    for (long i = 0; i < events; ++i) {
        const std::string key =
            rng() % 2 == 0 ? std::string("user-42") : "user-" + std::to_string(rng() % 10000);
        const std::string value = "event " + std::to_string(i);
        auto r = keyroute::kafka::produce(rk, topic, router, key, value);
        // On a full queue, serve delivery reports and retry the same decision, not a new one.
        while (r.error == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_poll(rk, 10);
            r.error = keyroute::kafka::produce_to(rk, topic, r.partition, r.stamp, key, value);
        }
        if (!r) {
            std::fprintf(stderr, "produce: %s\n", rd_kafka_err2str(r.error));
            produce_failed = true;
            break;
        }
        ++produced;
        if (r.stamp) ++stamped;
        rd_kafka_poll(rk, 0);
    }
    // What is still queued when flush gives up was neither delivered nor reported (librdkafka
    // would drop it silently at rd_kafka_destroy): purge it, so that each such message gets its
    // delivery report, as failed, and is counted there.
    if (rd_kafka_flush(rk, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::fprintf(stderr, "flush: timed out with %d messages or reports outstanding\n",
                     rd_kafka_outq_len(rk));
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(rk, 5000);  // serves the purged messages' delivery reports
    }

    std::printf("%ld of %ld events produced to %s, %llu stamped, %llu failed\n", produced, events,
                topic, static_cast<unsigned long long>(stamped),
                static_cast<unsigned long long>(counts.failed));
    for (std::size_t p = 0; p < counts.per_partition.size(); ++p) {
        std::printf("  partition %2zu: %llu\n", p,
                    static_cast<unsigned long long>(counts.per_partition[p]));
    }
    rd_kafka_destroy(rk);
    if (mock != nullptr) rd_kafka_mock_cluster_destroy(mock);
    if (mock_rk != nullptr) rd_kafka_destroy(mock_rk);
    return counts.failed == 0 && !produce_failed ? 0 : 1;
}
