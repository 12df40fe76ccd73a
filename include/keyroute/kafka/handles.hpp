#pragma once

/// @file
/// Owning pointers for librdkafka's objects, shared by keyroute's consumers (ordered_consumer,
/// ordered_group): each destroys its object with librdkafka's own destroy call; and the words
/// of an error both report.

#include <librdkafka/rdkafka.h>

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

/// RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET on `m`'s partition: librdkafka stops reading it for
/// good, so a consumer must fail rather than wait for its events.
[[nodiscard]] inline auto no_start_offset(const rd_kafka_message_t& m) -> std::string {
    return "partition " + std::to_string(m.partition) +
           " has no offset to start from (auto.offset.reset=error, or an offset that retention " +
           "deleted): " + rd_kafka_message_errstr(&m);
}

}  // namespace keyroute::kafka::detail
