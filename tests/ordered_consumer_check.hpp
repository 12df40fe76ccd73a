#pragma once

// What the ordered_consumer tests share: a consumer configuration on the mock cluster, a sink
// that records every delivery, and the checks of exactly-once, per-key order.

#include "kafka_mock.hpp"
#include "kafka_stream.hpp"

#include <keyroute/kafka/ordered_consumer.hpp>

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace keyroute_test::kafka {

/// A consumer conf for `bootstraps` (log level from KEYROUTE_KAFKA_LOG_LEVEL).
inline auto consumer_conf(const std::string& bootstraps, const std::string& group,
                          const settings& extra = {}) -> rd_kafka_conf_t* {
    rd_kafka_conf_t* conf = make_conf({{"bootstrap.servers", bootstraps},
                                       {"group.id", group},
                                       {"auto.offset.reset", "earliest"},
                                       {"fetch.wait.max.ms", "10"}});
    for (const auto& [name, value] : extra) set(conf, name, value);
    return conf;
}

/// One delivery as the sink saw it.
struct seen {
    std::string key;
    std::string value;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    keyroute::delivery_order order = keyroute::delivery_order::in_order;
    bool stamped = false;
};

/// Runs `c.poll()` until the consumer is at the end of the topic; throws after `timeout`.
inline void drain(keyroute::kafka::ordered_consumer& c, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!c.at_end()) {
        if (std::chrono::steady_clock::now() > deadline) {
            throw std::runtime_error("drain: timed out, " + std::to_string(c.held_events()) +
                                     " held, " + std::to_string(c.stats().read) + " read");
        }
        c.poll(std::chrono::milliseconds(50));
    }
}

/// The problems with `out` as the delivery of events 0..count-1 of `s` (values are event ids;
/// other values are ignored): an id missing or delivered twice, or a key's ids out of order.
/// Empty when every event came exactly once and each key's events in production order (one
/// producer lane routed them).
inline auto order_problems(const std::vector<seen>& out, const stream& s)
    -> std::vector<std::string> {
    std::vector<std::string> problems;
    std::vector<int> times(s.keys.size(), 0);
    std::map<std::string, std::int64_t> last;
    for (const auto& d : out) {
        if (d.value.empty() || d.value[0] < '0' || d.value[0] > '9') continue;
        const auto id = std::stoll(d.value);
        if (id < 0 || static_cast<std::size_t>(id) >= s.keys.size()) {
            problems.push_back("unknown id " + d.value);
            continue;
        }
        ++times[static_cast<std::size_t>(id)];
        if (s.keys[static_cast<std::size_t>(id)] != d.key) problems.push_back("key of " + d.value);
        auto [it, fresh] = last.emplace(d.key, id);
        if (!fresh) {
            if (it->second >= id && problems.size() < 20) {
                problems.push_back(d.key + ": " + std::to_string(id) + " after " +
                                   std::to_string(it->second));
            }
            it->second = id;
        }
    }
    for (std::size_t id = 0; id < times.size(); ++id) {
        if (times[id] != 1 && problems.size() < 40) {
            problems.push_back("event " + std::to_string(id) + " delivered " +
                               std::to_string(times[id]) + " times");
        }
    }
    return problems;
}

}  // namespace keyroute_test::kafka
