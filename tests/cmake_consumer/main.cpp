#include <keyroute/keyroute.hpp>

#include <cstdio>

int main() {
    const keyroute::kafka_partitioner kafka(16);
    const keyroute::hash_partitioner<> xxh(16);
    // Kafka's UtilsTest: murmur2("21") = -973932308; (that & 0x7fffffff) % 16 = 12.
    const auto p = kafka.route("21");
    std::printf("keyroute %d.%d.%d: kafka(\"21\") = %u, xxh3(\"21\") = %u\n",
                KEYROUTE_VERSION_MAJOR, KEYROUTE_VERSION_MINOR, KEYROUTE_VERSION_PATCH, p,
                xxh.route("21"));
    return p == 12U && xxh.route("21") < 16U ? 0 : 1;
}
