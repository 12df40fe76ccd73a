#pragma once

/// @file
/// keyroute: decide an event's partition before the producer publishes it.
/// This umbrella header includes every core header; the Kafka adapter
/// (<keyroute/kafka/rdkafka.hpp>) is separate because it needs librdkafka.

#include "version.hpp"
#include "hash.hpp"
#include "reduce.hpp"
#include "partitioner.hpp"
#include "stamp.hpp"
#include "jump.hpp"
#include "rendezvous.hpp"
#include "maglev.hpp"
#include "key_group.hpp"
#include "migration.hpp"
#include "salting_router.hpp"
#include "resequencer.hpp"
