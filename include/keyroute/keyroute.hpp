#pragma once

/// @file
/// keyroute: decide an event's partition before the producer publishes it.
/// This umbrella header includes every core header but quality.hpp (hash quality reports) and
/// bench.hpp (which needs Google Benchmark); the Kafka adapter (<keyroute/kafka/rdkafka.hpp>)
/// is separate because it needs librdkafka.

#include "hash.hpp"
#include "jump.hpp"
#include "key_group.hpp"
#include "maglev.hpp"
#include "migration.hpp"
#include "partitioner.hpp"
#include "reduce.hpp"
#include "rendezvous.hpp"
#include "resequencer.hpp"
#include "salting_router.hpp"
#include "stamp.hpp"
#include "version.hpp"
