// A consumer in a group that commits only the resequencer's safe offsets
// (committable_offset(partition)) is killed while the resequencer holds events, and a new
// consumer in the same group restarts from the committed offsets with the checkpoint stored at
// that commit: every event is delivered, none twice. Mock cluster: 3 brokers, 16 partitions; the
// stream is skewed (one key at 90%) and routed by the salting router with stamp headers.
//
// The application's output is "durable" only when committed with the offsets and the
// resequencer's checkpoint (the exactly-once pattern resequencer_checkpoint documents); what the
// killed consumer delivered after its last commit is lost with it and must be delivered again.
#include "keyroute_catch.hpp"
#include "kafka_mock.hpp"
#include "kafka_stream.hpp"

#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/resequencer.hpp>
#include <keyroute/salting_router.hpp>

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace kt = keyroute_test::kafka;

constexpr int partition_count = 16;
const std::string topic = "restart";
const std::string group = "keyroute-restart";

using reseq_type = keyroute::resequencer<std::size_t>;

// The partition kept paused until the first commit, so that stamped events read elsewhere wait
// for the sequences it holds.
std::int32_t g_paused = -1;

void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                  rd_kafka_topic_partition_list_t* partitions, void* /*opaque*/) {
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        rd_kafka_assign(rk, partitions);
        if (g_paused >= 0) {
            rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
            rd_kafka_topic_partition_list_add(list, topic.c_str(), g_paused);
            rd_kafka_pause_partitions(rk, list);
            rd_kafka_topic_partition_list_destroy(list);
        }
    } else {
        rd_kafka_assign(rk, nullptr);
    }
}

auto make_group_consumer(const std::string& bootstraps) -> kt::handle {
    rd_kafka_conf_t* conf = kt::make_conf({{"bootstrap.servers", bootstraps},
                                           {"group.id", group},
                                           {"enable.auto.commit", "false"},
                                           {"enable.auto.offset.store", "false"},
                                           {"auto.offset.reset", "earliest"},
                                           {"enable.partition.eof", "false"},
                                           {"fetch.wait.max.ms", "10"},
                                           {"session.timeout.ms", "4000"},
                                           {"heartbeat.interval.ms", "100"}});
    rd_kafka_conf_set_rebalance_cb(conf, &on_rebalance);
    kt::handle rk = kt::make_client(RD_KAFKA_CONSUMER, conf);
    rd_kafka_poll_set_consumer(rk.get());
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, topic.c_str(), RD_KAFKA_PARTITION_UA);
    const auto err = rd_kafka_subscribe(rk.get(), topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) throw std::runtime_error(rd_kafka_err2str(err));
    return rk;
}

// Reads records from `rk` into `reseq` until `done()` or a deadline; tracks the next offset to
// read per partition.
struct reader {
    rd_kafka_t* rk;
    reseq_type* reseq;
    const kt::stream* s;
    std::vector<std::int64_t> next = std::vector<std::int64_t>(partition_count, 0);
    std::size_t duplicates = 0;

    void run_until(const std::function<bool()>& done) {
        // A bound, not a measure: a restart waits out the dead member's session timeout and a
        // rebalance delay (about 8 s of the mock's timers) before the first fetch.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) {
                std::string at;
                for (const auto o : next) at += " " + std::to_string(o);
                throw std::runtime_error("reader: timed out; next offsets:" + at);
            }
            rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50);
            if (m == nullptr) continue;
            if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                const kt::record r = kt::to_record(m);
                const auto id = static_cast<std::size_t>(std::stoull(r.value));
                const auto result =
                    reseq->push(r.key, r.stamp.value_or(keyroute::stamp{}), id,
                                keyroute::origin{static_cast<std::uint32_t>(r.partition), r.offset},
                                s->millis_of(id));
                if (result == keyroute::push_result::duplicate) ++duplicates;
                auto& n = next[static_cast<std::size_t>(r.partition)];
                if (r.offset + 1 > n) n = r.offset + 1;
            }
            rd_kafka_message_destroy(m);
        }
    }
};

}  // namespace

TEST_CASE("a consumer killed while holding events loses none and repeats none after restart",
          "[kafka][restart]") {
    kt::mock_cluster cluster(3);
    cluster.create_topic(topic, partition_count);
    const kt::stream s = kt::skewed_stream(4000, 2, 0.9, 200, 23);
    kt::router_type router(kt::router_config(partition_count));
    (void)kt::produce_stream(cluster.bootstraps(), topic, router, s);
    const std::size_t n = s.keys.size();
    const keyroute::kafka_partitioner base(partition_count);
    g_paused = static_cast<std::int32_t>(base.route(kt::hot_key));

    std::vector<std::int64_t> high(partition_count, 0);
    {
        kt::handle probe = kt::make_client(
            RD_KAFKA_CONSUMER, kt::make_conf({{"bootstrap.servers", cluster.bootstraps()},
                                              {"group.id", "keyroute-probe"}}));
        for (int p = 0; p < partition_count; ++p) {
            std::int64_t lo = 0;
            REQUIRE(rd_kafka_query_watermark_offsets(probe.get(), topic.c_str(), p, &lo,
                                                     &high[static_cast<std::size_t>(p)],
                                                     5000) == RD_KAFKA_RESP_ERR_NO_ERROR);
        }
    }
    const auto fully_read = [&](const reader& rd, int p) {
        return rd.next[static_cast<std::size_t>(p)] >= high[static_cast<std::size_t>(p)];
    };

    // What survives the crash: output committed together with offsets and checkpoint.
    std::vector<std::size_t> durable;
    std::vector<std::size_t> pending;
    keyroute::resequencer_checkpoint checkpoint;
    std::map<std::int32_t, std::int64_t> committed;
    const auto sink = [](std::vector<std::size_t>& out) {
        return [&out](keyroute::delivery<std::size_t>&& d) { out.push_back(d.event); };
    };
    const auto no_gap = [](const keyroute::gap_report&) {};

    // First consumer: reads everything but the paused partition, commits, reads a third of the
    // paused partition, and is killed.
    {
        reseq_type reseq(keyroute::resequencer_config{}, sink(pending), no_gap);
        kt::handle rk = make_group_consumer(cluster.bootstraps());
        reader rd{rk.get(), &reseq, &s};
        rd.run_until([&] {
            for (int p = 0; p < partition_count; ++p) {
                if (p != g_paused && !fully_read(rd, p)) return false;
            }
            return true;
        });
        REQUIRE(reseq.held_events() > 0U);  // stamped events wait for the paused partition

        checkpoint = reseq.checkpoint();
        rd_kafka_topic_partition_list_t* offsets =
            rd_kafka_topic_partition_list_new(partition_count);
        std::size_t pinned = 0;  // partitions whose safe offset is below what was read
        for (int p = 0; p < partition_count; ++p) {
            const auto safe = reseq.committable_offset(static_cast<std::uint32_t>(p));
            if (!safe) continue;
            rd_kafka_topic_partition_list_add(offsets, topic.c_str(), p)->offset = *safe;
            committed[p] = *safe;
            if (*safe < rd.next[static_cast<std::size_t>(p)]) ++pinned;
        }
        REQUIRE(rd_kafka_commit(rk.get(), offsets, 0) == RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(offsets);
        CHECK(pinned > 0U);
        durable.insert(durable.end(), pending.begin(), pending.end());
        pending.clear();

        rd_kafka_topic_partition_list_t* resume = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(resume, topic.c_str(), g_paused);
        rd_kafka_resume_partitions(rk.get(), resume);
        rd_kafka_topic_partition_list_destroy(resume);
        const std::int64_t third = high[static_cast<std::size_t>(g_paused)] / 3;
        rd.run_until([&] { return rd.next[static_cast<std::size_t>(g_paused)] >= third; });
        CHECK(reseq.held_events() > 0U);
        CHECK_FALSE(pending.empty());
        // Killed: no commit, no LeaveGroup; its uncommitted output is lost with it.
        rd_kafka_destroy_flags(rk.release(), RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        pending.clear();
    }

    // Restart: a new consumer in the same group, a resequencer restored from the checkpoint.
    g_paused = -1;
    std::vector<std::size_t> after;
    reseq_type reseq(keyroute::resequencer_config{}, sink(after), no_gap);
    reseq.restore(checkpoint);
    kt::handle rk = make_group_consumer(cluster.bootstraps());
    reader rd{rk.get(), &reseq, &s};
    for (const auto& [p, offset] : committed) rd.next[static_cast<std::size_t>(p)] = offset;
    rd.run_until([&] {
        for (int p = 0; p < partition_count; ++p) {
            if (!fully_read(rd, p)) return false;
        }
        return true;
    });
    CHECK(reseq.held_events() == 0U);
    reseq.flush();
    rd_kafka_consumer_close(rk.get());

    CHECK(rd.duplicates > 0U);  // re-read events delivered before the commit were recognised
    CHECK(reseq.stats().missing == 0U);
    CHECK(reseq.stats().late == 0U);
    CHECK(reseq.stats().out_of_order == 0U);

    durable.insert(durable.end(), after.begin(), after.end());
    std::vector<int> times(n, 0);
    for (const auto id : durable) ++times[id];
    std::size_t lost = 0;
    std::size_t repeated = 0;
    for (const int t : times) {
        if (t == 0) ++lost;
        if (t > 1) ++repeated;
    }
    CHECK(durable.size() == n);
    CHECK(lost == 0U);
    CHECK(repeated == 0U);

    // And the hot key's events came out in the order they were produced, across the restart.
    std::size_t hot_inversions = 0;
    std::size_t last_hot = 0;
    bool first = true;
    for (const auto id : durable) {
        if (s.keys[id] != kt::hot_key) continue;
        if (!first && id < last_hot) ++hot_inversions;
        last_hot = id;
        first = false;
    }
    CHECK(hot_inversions == 0U);
}
