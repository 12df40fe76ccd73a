// What the producer blocks use and do not define: the events to send, and what the application
// does with an event librdkafka would not queue.
#pragma once
#include <librdkafka/rdkafka.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern std::vector<std::pair<std::string, std::string>> events;  // key, value
void report_failure(std::string_view key, rd_kafka_resp_err_t error);
