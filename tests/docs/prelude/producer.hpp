// What the producer blocks that are handed a producer use and do not define: `rk`, a librdkafka
// producer (rd_kafka_new(RD_KAFKA_PRODUCER, ...)).
#pragma once
#include <librdkafka/rdkafka.h>

extern rd_kafka_t* rk;
