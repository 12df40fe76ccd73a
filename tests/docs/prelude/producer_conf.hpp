// What the partitioner-callback blocks use and do not define: a producer, and what the
// application does with a topic handle.
#pragma once
#include <librdkafka/rdkafka.h>

extern rd_kafka_t* rk;
void use_topic(rd_kafka_topic_t* topic);
