// Links the Kafka adapter through keyroute::rdkafka (no broker needed: the callback is called
// directly, as librdkafka would).
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/partitioner.hpp>

int main() {
    const keyroute::kafka::partitioner_cb<keyroute::kafka_partitioner> cb(16);
    // Kafka's UtilsTest: murmur2("21") = -973932308; (that & 0x7fffffff) % 16 = 12.
    return cb.partition("21", 16) == 12 && rd_kafka_version() > 0 ? 0 : 1;
}
