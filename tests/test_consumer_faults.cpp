// ordered_consumer through broker faults on a 3-broker mock cluster: a broker taken down and
// brought back, then a leader change of half the partitions, while it consumes; every event is
// delivered once, each key's events in production order.
#include "keyroute_catch.hpp"
#include "kafka_mock.hpp"
#include "kafka_stream.hpp"
#include "ordered_consumer_check.hpp"

#include <keyroute/kafka/ordered_consumer.hpp>
#include <keyroute/partitioner.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace kt = keyroute_test::kafka;

TEST_CASE(
    "a broker down and back, and a leader change, during consumption: nothing lost or "
    "doubled",
    "[kafka][consumer]") {
    constexpr int partitions = 16;
    const std::string topic = "faults";
    kt::mock_cluster cluster(3);
    cluster.create_topic(topic, partitions);
    const kt::stream s = kt::skewed_stream(10000, 4, 0.9, 300, 11);
    kt::router_type router(kt::router_config(partitions));
    kt::produce_stream(cluster.bootstraps(), topic, router, s);

    keyroute::kafka::ordered_consumer_config config;
    config.topic = topic;
    std::vector<kt::seen> out;
    keyroute::kafka::ordered_consumer consumer(
        // Small fetches: the topic is read in many of them, so the faults land mid-read.
        kt::consumer_conf(
            cluster.bootstraps(), "faults",
            {{"max.partition.fetch.bytes", "2048"}, {"queued.max.messages.kbytes", "64"}}),
        config, [&](const keyroute::kafka::ordered_message& m) {
            out.push_back(kt::seen{std::string(m.key), std::string(m.value), m.partition, m.offset,
                                   m.order, static_cast<bool>(m.stamp)});
            // Slow enough that the faults land while there is still much to read.
            if (out.size() % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
    const auto leaders = kt::leaders(consumer.handle(), topic);
    enum class phase { before, down, up, moved } at = phase::before;
    auto down_since = std::chrono::steady_clock::now();
    const auto started = std::chrono::steady_clock::now();
    while (!consumer.at_end()) {
        if (std::chrono::steady_clock::now() - started > std::chrono::seconds(50)) {
            FAIL("not at the end after 50 s: " << consumer.stats().read << " read");
        }
        consumer.poll(std::chrono::milliseconds(20));
        const auto share = static_cast<double>(out.size()) / static_cast<double>(s.keys.size());
        if (at == phase::before && share > 0.05) {
            REQUIRE(rd_kafka_mock_broker_set_down(cluster.get(), 2) == RD_KAFKA_RESP_ERR_NO_ERROR);
            down_since = std::chrono::steady_clock::now();
            at = phase::down;
        } else if (at == phase::down && std::chrono::steady_clock::now() - down_since >
                                            std::chrono::milliseconds(1000)) {
            REQUIRE(rd_kafka_mock_broker_set_up(cluster.get(), 2) == RD_KAFKA_RESP_ERR_NO_ERROR);
            at = phase::up;
        } else if (at == phase::up && share > 0.5) {
            for (int p = 0; p < partitions; p += 2) {
                const auto now = leaders[static_cast<std::size_t>(p)];
                REQUIRE(rd_kafka_mock_partition_set_leader(cluster.get(), topic.c_str(), p,
                                                           now % 3 + 1) ==
                        RD_KAFKA_RESP_ERR_NO_ERROR);
            }
            at = phase::moved;
        }
    }
    CHECK(at == phase::moved);  // every fault happened before the end
    const auto& st = consumer.stats();
    INFO("read " << st.read << ", transient errors " << st.consume_errors << ", duplicates "
                 << st.duplicates << ", gaps " << st.gaps);
    CHECK(st.gaps == 0);
    CHECK(out.size() == s.keys.size());
    const auto problems = kt::order_problems(out, s);
    for (const auto& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());
    consumer.close();
}

TEST_CASE(
    "a partition that never answers does not stall the watermark; its events come late, "
    "none lost",
    "[kafka][consumer]") {
    constexpr int partitions = 8;
    const std::string topic = "idle";
    kt::mock_cluster cluster(3);
    cluster.create_topic(topic, partitions);
    // Broker 2 leads the hot key's home partition, where its episodes start: what the other
    // partitions hold of the key waits for sequences there.
    const auto home =
        static_cast<std::int32_t>(keyroute::kafka_partitioner(partitions).route(kt::hot_key));
    REQUIRE(rd_kafka_mock_partition_set_leader(cluster.get(), topic.c_str(), home, 2) ==
            RD_KAFKA_RESP_ERR_NO_ERROR);
    const kt::stream s = kt::skewed_stream(5000, 2, 0.9, 100, 5);
    kt::router_type router(kt::router_config(partitions));
    kt::produce_stream(cluster.bootstraps(), topic, router, s);
    REQUIRE(rd_kafka_mock_broker_set_down(cluster.get(), 2) == RD_KAFKA_RESP_ERR_NO_ERROR);

    keyroute::kafka::ordered_consumer_config config;
    config.topic = topic;
    config.idle_timeout = std::chrono::milliseconds(1000);
    config.reseq.max_delay = std::chrono::milliseconds(500);
    std::vector<kt::seen> out;
    keyroute::kafka::ordered_consumer consumer(
        kt::consumer_conf(cluster.bootstraps(), "idle"), config,
        [&](const keyroute::kafka::ordered_message& m) {
            out.push_back(kt::seen{std::string(m.key), std::string(m.value), m.partition, m.offset,
                                   m.order, static_cast<bool>(m.stamp)});
        });
    const auto clock_start = consumer.clock();
    // Broker 2's partitions never start: after idle_timeout the clock runs anyway, and what
    // waits for their sequences is given up after max_delay.
    const auto started = std::chrono::steady_clock::now();
    while (consumer.stats().gaps == 0 || consumer.held_events() > 0) {
        if (std::chrono::steady_clock::now() - started > std::chrono::seconds(20)) {
            FAIL("the watermark stalled: " << consumer.held_events() << " held");
        }
        consumer.poll(std::chrono::milliseconds(20));
    }
    CHECK(consumer.clock() >= clock_start + config.reseq.max_delay);
    CHECK(consumer.stats().missing > 0);
    CHECK_FALSE(consumer.at_end());

    REQUIRE(rd_kafka_mock_broker_set_up(cluster.get(), 2) == RD_KAFKA_RESP_ERR_NO_ERROR);
    kt::drain(consumer, std::chrono::seconds(40));
    CHECK(consumer.stats().late > 0);  // the given-up sequences, delivered when they came
    std::vector<int> times(s.keys.size(), 0);
    for (const auto& d : out) ++times[static_cast<std::size_t>(std::stoul(d.value))];
    std::size_t wrong = 0;
    for (const int t : times) wrong += t == 1 ? 0U : 1U;
    CHECK(wrong == 0);
    CHECK(out.size() == s.keys.size());
    consumer.close();
}
