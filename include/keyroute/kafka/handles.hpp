#pragma once

/// @file
/// Owning pointers for librdkafka's objects, shared by keyroute's consumers (ordered_consumer,
/// ordered_group): each destroys its object with librdkafka's own destroy call; the checks of
/// a conf and of a duration both make; and the words of an error both report.

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace keyroute::kafka::detail {

struct message_deleter {
    void operator()(rd_kafka_message_t* m) const noexcept { rd_kafka_message_destroy(m); }
};
struct conf_deleter {
    void operator()(rd_kafka_conf_t* c) const noexcept { rd_kafka_conf_destroy(c); }
};
struct handle_deleter {
    void operator()(rd_kafka_t* rk) const noexcept { rd_kafka_destroy(rk); }
};
struct queue_deleter {
    void operator()(rd_kafka_queue_t* q) const noexcept { rd_kafka_queue_destroy(q); }
};
struct topic_deleter {
    void operator()(rd_kafka_topic_t* t) const noexcept { rd_kafka_topic_destroy(t); }
};

using message_ptr = std::unique_ptr<rd_kafka_message_t, message_deleter>;
using conf_ptr = std::unique_ptr<rd_kafka_conf_t, conf_deleter>;
using handle_ptr = std::unique_ptr<rd_kafka_t, handle_deleter>;
using queue_ptr = std::unique_ptr<rd_kafka_queue_t, queue_deleter>;
using topic_ptr = std::unique_ptr<rd_kafka_topic_t, topic_deleter>;

/// `name`'s value in `conf`, or "" when it is not set.
[[nodiscard]] inline auto conf_value(const rd_kafka_conf_t* conf, const char* name) -> std::string {
    std::size_t size = 0;
    if (rd_kafka_conf_get(conf, name, nullptr, &size) != RD_KAFKA_CONF_OK || size <= 1) return {};
    std::string out(size, '\0');
    rd_kafka_conf_get(conf, name, out.data(), &size);
    out.resize(size - 1);
    return out;
}

/// Whether `conf` names brokers to connect to: bootstrap.servers, metadata.broker.list, or a
/// mock cluster of its own (test.mock.num.brokers). Without one, librdkafka would only time out.
[[nodiscard]] inline auto names_brokers(const rd_kafka_conf_t* conf) -> bool {
    const std::string mock = conf_value(conf, "test.mock.num.brokers");
    return !conf_value(conf, "bootstrap.servers").empty() ||
           !conf_value(conf, "metadata.broker.list").empty() || (!mock.empty() && mock != "0");
}

/// The longest duration a consumer's config takes: librdkafka's longest timeout (2^31 - 1 ms,
/// 24.8 days). Longer ones, milliseconds::max() among them, would overflow the clock's sums.
inline constexpr std::int64_t longest_ms = 2147483647;

/// Calls `fail(message)` unless `value` is in [least, longest_ms] ms; the message names `name`
/// and the value.
template <class Fail>
void check_duration(Fail&& fail, const char* name, std::chrono::milliseconds value,
                    std::int64_t least) {
    if (value.count() >= least && value.count() <= longest_ms) return;
    fail(std::string(name) + " must be in [" + std::to_string(least) + ", " +
         std::to_string(longest_ms) + "] ms, got " + std::to_string(value.count()) + " ms");
}

/// RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET on `m`'s partition: librdkafka stops reading it for
/// good, so a consumer must fail rather than wait for its events.
[[nodiscard]] inline auto no_start_offset(const rd_kafka_message_t& m) -> std::string {
    return "partition " + std::to_string(m.partition) +
           " has no offset to start from (auto.offset.reset=error, or an offset that retention " +
           "deleted): " + rd_kafka_message_errstr(&m);
}

}  // namespace keyroute::kafka::detail
