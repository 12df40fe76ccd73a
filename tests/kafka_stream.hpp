#pragma once

// A skewed event stream for the Kafka tests: one hot key at `hot_share` of the events, the rest
// spread over cold keys, with explicit event times (so router windows pass without waiting), and
// its production through a salting router with keyroute::kafka::produce_at.

#include "kafka_mock.hpp"

#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <chrono>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace keyroute_test::kafka {

using router_type = keyroute::salting_router<keyroute::kafka_partitioner>;
using time_point = router_type::time_point;

inline constexpr const char* hot_key = "hot-key";

struct stream {
    std::chrono::milliseconds window{1000};
    std::size_t per_window = 0;
    std::vector<std::string> keys;  // by event id
    time_point start{};

    /// Event id `id`'s time: `per_window` events evenly spread over each window.
    [[nodiscard]] auto time_of(std::size_t id) const -> time_point {
        const auto step = std::chrono::duration_cast<time_point::duration>(window) /
                          static_cast<std::int64_t>(per_window);
        return start + step * static_cast<std::int64_t>(id);
    }
    [[nodiscard]] auto window_of(std::size_t id) const -> std::size_t { return id / per_window; }
    [[nodiscard]] auto millis_of(std::size_t id) const -> std::chrono::milliseconds {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
            time_of(id).time_since_epoch());
    }
};

inline auto skewed_stream(std::size_t per_window, std::size_t windows, double hot_share,
                          std::size_t cold_keys, std::uint64_t seed) -> stream {
    stream s;
    s.per_window = per_window;
    // A window boundary far from the epoch: the router aligns windows to the clock's epoch.
    s.start =
        time_point(std::chrono::duration_cast<time_point::duration>(std::chrono::hours(480000)));
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    for (std::size_t i = 0; i < per_window * windows; ++i) {
        s.keys.push_back(coin(rng) < hot_share ? std::string(hot_key)
                                               : "cold-" + std::to_string(rng() % cold_keys));
    }
    return s;
}

inline auto router_config(std::uint64_t partitions) -> keyroute::salting_config {
    keyroute::salting_config c;
    c.partitions = partitions;
    c.threshold = 0;  // automatic
    c.window = std::chrono::milliseconds(1000);
    c.producer_id = 0x6b6579726f757465ULL;
    c.seed = 20261201;
    return c;
}

/// What the router decided for each event, as produce_at() reported it.
struct routed {
    std::vector<std::int32_t> partition;
    std::vector<keyroute::stamp> stamp;
};

/// Produces every event of `s` to `topic` through `router` (event times explicit), waits for
/// every delivery report and throws if any event was not delivered exactly once, on its partition.
inline auto produce_stream(const std::string& bootstraps, const std::string& topic,
                           router_type& router, const stream& s) -> routed {
    routed out;
    delivery_log log(s.keys.size());
    handle rk = make_producer(bootstraps, log);
    for (std::size_t id = 0; id < s.keys.size(); ++id) {
        const auto r =
            keyroute::kafka::produce_at(rk.get(), topic.c_str(), router, s.time_of(id), s.keys[id],
                                        std::to_string(id), {}, delivery_log::opaque(id));
        if (!r) throw std::runtime_error(std::string("produce_at: ") + rd_kafka_err2str(r.error));
        out.partition.push_back(r.partition);
        out.stamp.push_back(r.stamp);
        rd_kafka_poll(rk.get(), 0);
    }
    if (!flush(rk.get(), std::chrono::seconds(20))) throw std::runtime_error("flush timed out");
    for (std::size_t id = 0; id < s.keys.size(); ++id) {
        const auto& d = log.by_id[id];
        if (d.count != 1 || d.error != RD_KAFKA_RESP_ERR_NO_ERROR ||
            d.partition != out.partition[id]) {
            throw std::runtime_error("event " + std::to_string(id) + " not delivered once on " +
                                     std::to_string(out.partition[id]));
        }
    }
    return out;
}

}  // namespace keyroute_test::kafka
