// One translation unit that includes every public header, for clang-tidy (see .clang-tidy):
//   clang-tidy tests/tidy_headers.cpp -- -std=c++17 -Iinclude   (ctest -L tidy: as errors)
// Needs Google Benchmark's and librdkafka's headers (scripts/deps.sh installs both).
#include <keyroute/bench.hpp>
#include <keyroute/hash.hpp>
#include <keyroute/jump.hpp>
#include <keyroute/kafka/checkpoint.hpp>
#include <keyroute/kafka/commit_hint.hpp>
#include <keyroute/kafka/group_wire.hpp>
#include <keyroute/kafka/handles.hpp>
#include <keyroute/kafka/ordered_consumer.hpp>
#include <keyroute/kafka/ordered_group.hpp>
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/keyroute.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/migration.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/quality.hpp>
#include <keyroute/reduce.hpp>
#include <keyroute/rendezvous.hpp>
#include <keyroute/resequencer.hpp>
#include <keyroute/salting_router.hpp>
#include <keyroute/stamp.hpp>
#include <keyroute/version.hpp>

// Instantiate the templates, so that their bodies are checked too.
template class keyroute::hash_partitioner<>;
template class keyroute::jump_partitioner<>;
template class keyroute::rendezvous_partitioner<>;
template class keyroute::maglev_partitioner<>;
template class keyroute::key_group_partitioner<>;
template class keyroute::salting_router<>;
template class keyroute::salting_router<keyroute::kafka_partitioner>;
template class keyroute::kafka::ordered_group<keyroute::kafka_partitioner>;
template class keyroute::resequencer<int>;
