#pragma once

// Fixtures for the Kafka tests: librdkafka's in-process mock cluster (real Kafka protocol over
// 127.0.0.1), and small RAII producers and readers on it.

#include <keyroute/kafka/rdkafka.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyroute_test::kafka {

struct rk_deleter {
    void operator()(rd_kafka_t* rk) const noexcept { rd_kafka_destroy(rk); }
};
using handle = std::unique_ptr<rd_kafka_t, rk_deleter>;

using settings = std::vector<std::pair<std::string, std::string>>;

/// librdkafka's log level for the tests: errors only, unless KEYROUTE_KAFKA_LOG_LEVEL says
/// (KEYROUTE_KAFKA_DEBUG sets librdkafka's `debug` contexts, e.g. "cgrp,mock").
inline auto log_level() -> std::string {
    const char* env = std::getenv("KEYROUTE_KAFKA_LOG_LEVEL");
    return env != nullptr ? env : "3";
}

inline void set(rd_kafka_conf_t* conf, const std::string& name, const std::string& value) {
    char errstr[512];
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        throw std::runtime_error("config " + name + "=" + value + ": " + errstr);
    }
}

inline void set(rd_kafka_topic_conf_t* conf, const std::string& name, const std::string& value) {
    char errstr[512];
    if (rd_kafka_topic_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
        rd_kafka_topic_conf_destroy(conf);
        throw std::runtime_error("topic config " + name + "=" + value + ": " + errstr);
    }
}

inline auto make_conf(const settings& s) -> rd_kafka_conf_t* {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    set(conf, "log_level", log_level());
    if (const char* debug = std::getenv("KEYROUTE_KAFKA_DEBUG")) set(conf, "debug", debug);
    for (const auto& [name, value] : s) set(conf, name, value);
    return conf;
}

/// Takes ownership of `conf`.
inline auto make_client(rd_kafka_type_t type, rd_kafka_conf_t* conf) -> handle {
    char errstr[512];
    rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (rk == nullptr) {
        rd_kafka_conf_destroy(conf);
        throw std::runtime_error(std::string("rd_kafka_new: ") + errstr);
    }
    return handle(rk);
}

/// A mock Kafka cluster inside this process, listening on 127.0.0.1.
class mock_cluster {
public:
    explicit mock_cluster(int brokers)
        : m_rk(make_client(RD_KAFKA_PRODUCER, make_conf({}))),
          m_cluster(rd_kafka_mock_cluster_new(m_rk.get(), brokers)) {
        if (m_cluster == nullptr) throw std::runtime_error("rd_kafka_mock_cluster_new failed");
    }
    mock_cluster(const mock_cluster&) = delete;
    auto operator=(const mock_cluster&) -> mock_cluster& = delete;
    ~mock_cluster() { rd_kafka_mock_cluster_destroy(m_cluster); }

    [[nodiscard]] auto bootstraps() const -> std::string {
        return rd_kafka_mock_cluster_bootstraps(m_cluster);
    }
    void create_topic(const std::string& name, int partitions, int replication = 3) const {
        const auto err =
            rd_kafka_mock_topic_create(m_cluster, name.c_str(), partitions, replication);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            throw std::runtime_error("create topic " + name + ": " + rd_kafka_err2str(err));
        }
    }
    [[nodiscard]] auto get() const noexcept -> rd_kafka_mock_cluster_t* { return m_cluster; }

private:
    handle m_rk;
    rd_kafka_mock_cluster_t* m_cluster;
};

/// Delivery reports by message id (the id travels as the per-message opaque).
struct delivery_log {
    struct report {
        int count = 0;  // reports for this id: exactly 1 once flushed
        std::int32_t partition = RD_KAFKA_PARTITION_UA;
        rd_kafka_resp_err_t error = RD_KAFKA_RESP_ERR_NO_ERROR;
        std::chrono::steady_clock::time_point at{};
    };
    std::vector<report> by_id;
    std::size_t failures = 0;
    std::size_t unknown_ids = 0;

    explicit delivery_log(std::size_t ids) : by_id(ids) {}

    static auto opaque(std::size_t id) noexcept -> void* {
        return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id));
    }

    void record(const rd_kafka_message_t* m) {
        const auto id = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(m->_private));
        if (id >= by_id.size()) {
            ++unknown_ids;
            return;
        }
        auto& r = by_id[id];
        ++r.count;
        r.partition = m->partition;
        r.error = m->err;
        r.at = std::chrono::steady_clock::now();
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) ++failures;
    }

    static void on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m, void* opaque) {
        static_cast<delivery_log*>(opaque)->record(m);
    }
};

/// A producer on `bootstraps` that reports deliveries to `log`; `topic_conf`, if given, becomes
/// the default topic configuration (ownership taken).
inline auto make_producer(const std::string& bootstraps, delivery_log& log,
                          const settings& extra = {}, rd_kafka_topic_conf_t* topic_conf = nullptr)
    -> handle {
    rd_kafka_conf_t* conf = make_conf({{"bootstrap.servers", bootstraps},
                                       {"linger.ms", "5"},
                                       {"queue.buffering.max.messages", "200000"},
                                       {"message.timeout.ms", "20000"}});
    for (const auto& [name, value] : extra) set(conf, name, value);
    rd_kafka_conf_set_dr_msg_cb(conf, &delivery_log::on_delivery);
    rd_kafka_conf_set_opaque(conf, &log);
    if (topic_conf != nullptr) rd_kafka_conf_set_default_topic_conf(conf, topic_conf);
    return make_client(RD_KAFKA_PRODUCER, conf);
}

// A message with a header named keyroute-stamp holding `stamp_bytes` (a malformed stamp, say; a
// default string_view is a null value), produced with librdkafka alone: keyroute's produce_to
// refuses a caller's stamp header.
inline auto produce_with_stamp_bytes(rd_kafka_t* rk, const char* topic, std::int32_t partition,
                                     const std::string& key, const std::string& value,
                                     std::string_view stamp_bytes, void* opaque)
    -> rd_kafka_resp_err_t {
    rd_kafka_headers_t* headers = rd_kafka_headers_new(1);
    rd_kafka_header_add(headers, "keyroute-stamp", -1, stamp_bytes.data(),
                        static_cast<ssize_t>(stamp_bytes.size()));
    // rd_kafka_produceva, not the RD_KAFKA_V_* macros (GNU statement expressions: -Wpedantic).
    std::array<rd_kafka_vu_t, 7> vus{};
    vus[0].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[0].u.cstr = topic;
    vus[1].vtype = RD_KAFKA_VTYPE_PARTITION;
    vus[1].u.i32 = partition;
    vus[2].vtype = RD_KAFKA_VTYPE_KEY;
    vus[2].u.mem.ptr = const_cast<char*>(key.data());
    vus[2].u.mem.size = key.size();
    vus[3].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[3].u.mem.ptr = const_cast<char*>(value.data());
    vus[3].u.mem.size = value.size();
    vus[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[4].u.i = RD_KAFKA_MSG_F_COPY;
    vus[5].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vus[5].u.ptr = opaque;
    vus[6].vtype = RD_KAFKA_VTYPE_HEADERS;
    vus[6].u.headers = headers;
    rd_kafka_error_t* error = rd_kafka_produceva(rk, vus.data(), vus.size());
    if (error == nullptr) return RD_KAFKA_RESP_ERR_NO_ERROR;
    const rd_kafka_resp_err_t err = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    rd_kafka_headers_destroy(headers);  // not taken over on failure
    return err;
}

/// Flushes `rk`; true when every queued message got its delivery report in time. (Not also
/// rd_kafka_outq_len() == 0 afterwards: that counts error and log events too, which a broker
/// reconnect can queue after the flush; each test checks its delivery reports one by one.)
inline auto flush(rd_kafka_t* rk, std::chrono::milliseconds timeout) -> bool {
    return rd_kafka_flush(rk, static_cast<int>(timeout.count())) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

/// One consumed message.
struct record {
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::string key;
    std::string value;
    std::optional<keyroute::stamp> stamp;
    keyroute::stamp_error stamp_error = keyroute::stamp_error::none;
    std::vector<std::pair<std::string, std::optional<std::string>>> headers;  // all, in order
};

inline auto to_record(const rd_kafka_message_t* m) -> record {
    record r;
    r.partition = m->partition;
    r.offset = m->offset;
    if (m->key != nullptr) r.key.assign(static_cast<const char*>(m->key), m->key_len);
    if (m->payload != nullptr) r.value.assign(static_cast<const char*>(m->payload), m->len);
    r.stamp = keyroute::kafka::try_read_stamp(m, &r.stamp_error);
    rd_kafka_headers_t* hdrs = nullptr;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name = nullptr;
        const void* value = nullptr;
        std::size_t size = 0;
        for (std::size_t i = 0;
             rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
            r.headers.emplace_back(name, value != nullptr
                                             ? std::optional<std::string>(std::string(
                                                   static_cast<const char*>(value), size))
                                             : std::nullopt);
        }
    }
    return r;
}

/// Reads every partition of `topic` from the beginning up to its high watermark at the time of
/// the call, without a consumer group. Throws if that takes longer than `timeout`.
inline auto read_all(const std::string& bootstraps, const std::string& topic, int partitions,
                     std::chrono::milliseconds timeout = std::chrono::seconds(20))
    -> std::vector<record> {
    handle rk = make_client(RD_KAFKA_CONSUMER, make_conf({{"bootstrap.servers", bootstraps},
                                                          {"group.id", "keyroute-test-reader"},
                                                          {"enable.auto.commit", "false"},
                                                          {"enable.partition.eof", "false"},
                                                          {"fetch.wait.max.ms", "10"}}));
    std::vector<std::int64_t> high(static_cast<std::size_t>(partitions), 0);
    std::vector<std::int64_t> next(static_cast<std::size_t>(partitions), 0);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; ++p) {
        std::int64_t lo = 0;
        std::int64_t hi = 0;
        const auto err = rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), p, &lo, &hi,
                                                          static_cast<int>(timeout.count()));
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            rd_kafka_topic_partition_list_destroy(list);
            throw std::runtime_error("watermarks of " + topic + ": " + rd_kafka_err2str(err));
        }
        high[static_cast<std::size_t>(p)] = hi;
        next[static_cast<std::size_t>(p)] = lo;
        rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = lo;
    }
    rd_kafka_assign(rk.get(), list);
    rd_kafka_topic_partition_list_destroy(list);

    const auto done = [&] {
        for (std::size_t p = 0; p < high.size(); ++p) {
            if (next[p] < high[p]) return false;
        }
        return true;
    };
    std::vector<record> out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) {
            throw std::runtime_error("read_all(" + topic + "): timed out after " +
                                     std::to_string(out.size()) + " records");
        }
        rd_kafka_message_t* m = rd_kafka_consumer_poll(rk.get(), 50);
        if (m == nullptr) continue;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            out.push_back(to_record(m));
            auto& n = next[static_cast<std::size_t>(m->partition)];
            if (m->offset + 1 > n) n = m->offset + 1;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk.get());
    return out;
}

/// The leader broker id of each partition of `topic`, from `rk`'s metadata.
inline auto leaders(rd_kafka_t* rk, const std::string& topic) -> std::vector<std::int32_t> {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    const auto err = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
    rd_kafka_topic_destroy(rkt);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || md->topic_cnt != 1) {
        if (md != nullptr) rd_kafka_metadata_destroy(md);
        throw std::runtime_error("metadata of " + topic + ": " + rd_kafka_err2str(err));
    }
    std::vector<std::int32_t> out(static_cast<std::size_t>(md->topics[0].partition_cnt), -1);
    for (int i = 0; i < md->topics[0].partition_cnt; ++i) {
        const auto& p = md->topics[0].partitions[i];
        out[static_cast<std::size_t>(p.id)] = p.leader;
    }
    rd_kafka_metadata_destroy(md);
    return out;
}

}  // namespace keyroute_test::kafka
