// Faults on a mock cluster (3 brokers, 16 partitions): an idempotent producer routing with
// keyroute::kafka::produce keeps going through injected Produce errors, forced disconnects and a
// broker that goes down and comes back; afterwards every event is in the topic exactly once, on
// its partition.
//
// librdkafka 2.0.2's mock broker does not deduplicate a retried batch by producer sequence (a
// real broker does): a batch whose response is lost is appended twice. So the test avoids lost
// responses, which only a real broker can absorb: one request in flight per connection (a forced
// disconnect then never follows an appended-but-unanswered request), and the broker goes down
// between flushes, while new events for it queue up.
#include "keyroute_catch.hpp"
#include "kafka_mock.hpp"

#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/partitioner.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace {

namespace kt = keyroute_test::kafka;

constexpr int partition_count = 16;
constexpr std::int16_t produce_api_key = 0;  // Kafka protocol: ProduceRequest
constexpr std::size_t phase_size = 3000;
constexpr std::size_t event_count = 3 * phase_size;

auto key_of(std::size_t id) -> std::string { return "account-" + std::to_string(id % 997); }

}  // namespace

TEST_CASE("an idempotent producer loses and duplicates nothing through broker faults",
          "[kafka][faults]") {
    kt::mock_cluster cluster(3);
    const std::string topic = "faults";
    cluster.create_topic(topic, partition_count);
    const keyroute::kafka_partitioner partitioner(partition_count);

    kt::delivery_log log(event_count);
    kt::handle rk = kt::make_producer(cluster.bootstraps(), log,
                                      {{"enable.idempotence", "true"},
                                       {"retry.backoff.ms", "20"},
                                       {"reconnect.backoff.ms", "20"},
                                       {"reconnect.backoff.max.ms", "200"},
                                       {"message.timeout.ms", "30000"},
                                       {"max.in.flight", "1"}});
    const std::vector<std::int32_t> leader = kt::leaders(rk.get(), topic);
    const std::int32_t down_broker = leader[0];
    const std::int32_t error_broker = down_broker == 1 ? 2 : 1;

    const auto produce_range = [&](std::size_t first, std::size_t last) {
        for (std::size_t id = first; id < last; ++id) {
            const auto r =
                keyroute::kafka::produce(rk.get(), topic.c_str(), partitioner, key_of(id),
                                         std::to_string(id), {}, kt::delivery_log::opaque(id));
            REQUIRE(r);
            rd_kafka_poll(rk.get(), 0);
        }
    };

    // Phase 1: a healthy cluster.
    produce_range(0, phase_size);

    // Phase 2: retriable Produce errors, cluster-wide and on one broker.
    rd_kafka_mock_push_request_errors(
        cluster.get(), produce_api_key, 5, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE);
    REQUIRE(rd_kafka_mock_broker_push_request_error_rtts(
                cluster.get(), error_broker, produce_api_key, 3,
                RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, 0, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, 0,
                RD_KAFKA_RESP_ERR__TRANSPORT, 0) == RD_KAFKA_RESP_ERR_NO_ERROR);
    produce_range(phase_size, 2 * phase_size);

    // Phase 3: a broker goes down while events for its partitions keep coming, then returns.
    REQUIRE(kt::flush(rk.get(), std::chrono::seconds(30)));
    REQUIRE(rd_kafka_mock_broker_set_down(cluster.get(), down_broker) ==
            RD_KAFKA_RESP_ERR_NO_ERROR);
    produce_range(2 * phase_size, 3 * phase_size);
    // Stay down long enough for retries and reconnect attempts to hit the closed port.
    const auto down_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
    while (std::chrono::steady_clock::now() < down_until) rd_kafka_poll(rk.get(), 20);
    const auto up_at = std::chrono::steady_clock::now();
    REQUIRE(rd_kafka_mock_broker_set_up(cluster.get(), down_broker) == RD_KAFKA_RESP_ERR_NO_ERROR);
    REQUIRE(kt::flush(rk.get(), std::chrono::seconds(30)));

    char errstr[256];
    CHECK(rd_kafka_fatal_error(rk.get(), errstr, sizeof errstr) == RD_KAFKA_RESP_ERR_NO_ERROR);
    std::size_t error_stack = 1;
    REQUIRE(rd_kafka_mock_broker_error_stack_cnt(cluster.get(), error_broker, produce_api_key,
                                                 &error_stack) == RD_KAFKA_RESP_ERR_NO_ERROR);
    CHECK(error_stack == 0U);  // the injected errors were all hit

    // Every event was acknowledged once, on its partition; none sent to the down broker's
    // partitions during phase 3 was acknowledged before the broker came back.
    std::size_t bad_reports = 0;
    std::size_t acked_while_down = 0;
    std::size_t waited_for_broker = 0;
    for (std::size_t id = 0; id < event_count; ++id) {
        const auto& r = log.by_id[id];
        const auto expected = static_cast<std::int32_t>(partitioner.route(key_of(id)));
        if (r.count != 1 || r.error != RD_KAFKA_RESP_ERR_NO_ERROR || r.partition != expected) {
            ++bad_reports;
        }
        if (id >= 2 * phase_size && leader[static_cast<std::size_t>(expected)] == down_broker) {
            ++waited_for_broker;
            if (r.at < up_at) ++acked_while_down;
        }
    }
    CHECK(bad_reports == 0U);
    CHECK(log.unknown_ids == 0U);
    CHECK(waited_for_broker > 0U);
    CHECK(acked_while_down == 0U);

    // Read back: each id exactly once, on its partition.
    const auto records = kt::read_all(cluster.bootstraps(), topic, partition_count);
    std::vector<int> seen(event_count, 0);
    std::size_t misplaced = 0;
    std::size_t foreign = 0;
    for (const auto& rec : records) {
        const auto id = std::stoul(rec.value);
        if (id >= event_count) {
            ++foreign;
            continue;
        }
        ++seen[id];
        if (rec.partition != static_cast<std::int32_t>(partitioner.route(key_of(id)))) {
            ++misplaced;
        }
    }
    std::size_t lost = 0;
    std::size_t duplicated = 0;
    for (const int s : seen) {
        if (s == 0) ++lost;
        if (s > 1) ++duplicated;
    }
    CHECK(records.size() == event_count);
    CHECK(lost == 0U);
    CHECK(duplicated == 0U);
    CHECK(misplaced == 0U);
    CHECK(foreign == 0U);
}
