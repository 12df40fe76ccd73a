// What the consumer blocks use and do not define: a consumer assigned every partition, the
// application's accessors and sinks, and the watermark clock.
#pragma once
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <string>
#include <string_view>

extern rd_kafka_t* rk;
auto key_of(const rd_kafka_message_t* m) -> std::string_view;
auto value_of(const rd_kafka_message_t* m) -> std::string;
auto now_ms() -> std::chrono::milliseconds;  // system_clock, in milliseconds
void process(std::string_view key, const std::string& value);
template <class GapReport>
void report_missing(const GapReport& gap);
