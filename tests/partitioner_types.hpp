#pragma once
// The list every typed test runs over: every static partitioner of keyroute. Aliases keep
// commas out of Catch2's macro arguments.
#include <keyroute/partitioner.hpp>

namespace keyroute_test {
using xxh3_default = keyroute::hash_partitioner<>;
using xxh3_fastmod = keyroute::hash_partitioner<keyroute::xxh3, keyroute::fastmod_reduction>;
using xxh3_modulo = keyroute::hash_partitioner<keyroute::xxh3, keyroute::modulo_reduction>;
using xxh3_fastrange = keyroute::hash_partitioner<keyroute::xxh3, keyroute::fastrange_reduction>;
using murmur3_fastmod =
    keyroute::hash_partitioner<keyroute::murmur3_32, keyroute::fastmod_reduction>;
}  // namespace keyroute_test

#define KEYROUTE_STATIC_PARTITIONERS                                                      \
    keyroute_test::xxh3_default, keyroute_test::xxh3_fastmod, keyroute_test::xxh3_modulo, \
        keyroute_test::xxh3_fastrange, keyroute_test::murmur3_fastmod,                    \
        keyroute::kafka_partitioner, keyroute::rdkafka_consistent_partitioner,            \
        keyroute::rdkafka_fnv1a_partitioner, keyroute::pulsar_java_string_partitioner,    \
        keyroute::pulsar_murmur3_partitioner
