// keyroute::kafka::ordered_group in this process, one member at a time, on the mock cluster:
// a member alone owns every home and reports its metrics; bad settings and foreign records are
// refused by name; repartition records deleted before they are read are reported; a full home
// moves on under continuous production.
#include "keyroute_catch.hpp"
#include "group_member.hpp"
#include "kafka_mock.hpp"
#include "kafka_stream.hpp"
#include "ordered_consumer_check.hpp"

#include <keyroute/kafka/ordered_group.hpp>
#include <keyroute/kafka/rdkafka.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace kt = keyroute_test::kafka;
using steady = std::chrono::steady_clock;

}  // namespace

namespace {

auto in_process_config(const std::string& topic) -> keyroute::kafka::ordered_group_config {
    keyroute::kafka::ordered_group_config c;
    c.topic = topic;
    c.commit_interval = std::chrono::milliseconds(100);
    c.metadata_timeout = std::chrono::seconds(5);
    return c;
}

auto echo_handlers(std::vector<kt::seen>& out) -> keyroute::kafka::group_handlers {
    keyroute::kafka::group_handlers on;
    on.process = [](const keyroute::kafka::group_event& e) { return std::string(e.value); };
    on.apply = [&out](const keyroute::kafka::group_event& e) {
        out.push_back(kt::seen{std::string(e.key), std::string(e.value), e.partition, e.offset,
                               e.order, static_cast<bool>(e.stamp)});
    };
    return on;
}

template <class Done>
void poll_until(keyroute::kafka::ordered_group<keyroute::kafka_partitioner>& member, Done done,
                std::chrono::seconds timeout) {
    const auto deadline = steady::now() + timeout;
    while (!done()) {
        REQUIRE(steady::now() < deadline);
        member.poll(std::chrono::milliseconds(20));
    }
}

}  // namespace

TEST_CASE("one member alone owns every home and reports its metrics", "[kafka][group]") {
    constexpr int n = 8;
    kt::mock_cluster cluster(3);
    kt::create_group_topics(cluster, "solo-group", "solo", n);
    const kt::stream s = kt::skewed_stream(2000, 2, 0.9, 50, 5);
    kt::router_type router(kt::router_config(n));
    kt::produce_stream(cluster.bootstraps(), "solo", router, s);
    {  // a progress record of an earlier build's member (format 1): left unheard, not an error
        kt::delivery_log log(1);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        REQUIRE(keyroute::kafka::produce_to(
                    rk.get(),
                    keyroute::kafka::default_repartition_topic("solo-group", "solo").c_str(), 0,
                    keyroute::stamp{}, {}, "keyroute-progress-1 1 0 5 1 end",
                    {keyroute::kafka::header{keyroute::kafka::progress_header_name.data(), ""}}) ==
                RD_KAFKA_RESP_ERR_NO_ERROR);
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(10)));
    }
    std::vector<kt::seen> out;
    keyroute::kafka::ordered_group<keyroute::kafka_partitioner> member(
        kt::consumer_conf(cluster.bootstraps(), "solo-group"), in_process_config("solo"),
        echo_handlers(out));
    CHECK(member.partitions() == n);
    poll_until(
        member, [&] { return out.size() >= s.keys.size() && member.caught_up(); },
        std::chrono::seconds(60));
    CHECK(kt::order_problems(out, s).empty());
    CHECK(member.homes().size() == static_cast<std::size_t>(n));
    CHECK(member.stats().forwarded > 0);
    CHECK(member.stats().received == member.stats().forwarded);  // every forward came home
    CHECK(member.stats().applied == s.keys.size());
    const auto metrics = member.metrics();
    REQUIRE(metrics.size() == static_cast<std::size_t>(n));
    for (const auto& m : metrics) {
        CHECK(m.held_events == 0);
        CHECK(m.source_lag == 0);
        CHECK(m.repartition_lag >= 0);
        CHECK(m.watermark_lag.count() >= 0);
    }
    CHECK(member.commit());
    CHECK(member.forward_rate() >= 0.0);
    member.close();
}

TEST_CASE("an ordered_group refuses bad settings and foreign records, by name", "[kafka][group]") {
    using keyroute_test::contains;
    using member_type = keyroute::kafka::ordered_group<keyroute::kafka_partitioner>;
    kt::mock_cluster cluster(1);
    // Metadata v4 at most: the mock then honours allow.auto.create.topics=false.
    REQUIRE(rd_kafka_mock_set_apiversion(cluster.get(), 3, 0, 4) == RD_KAFKA_RESP_ERR_NO_ERROR);
    cluster.create_topic("bad", 4);
    cluster.create_topic(keyroute::kafka::default_repartition_topic("g", "bad"), 4);
    cluster.create_topic(keyroute::kafka::default_changelog_topic("g", "bad"), 3);  // not 4
    std::vector<kt::seen> out;
    const auto bootstraps = cluster.bootstraps();

    CHECK_THROWS_WITH(member_type(kt::consumer_conf(bootstraps, "g"), in_process_config("bad"),
                                  echo_handlers(out)),
                      contains("g-bad-keyroute-changelog has 3 partitions"));
    auto no_apply = echo_handlers(out);
    no_apply.apply = nullptr;
    CHECK_THROWS_AS(
        member_type(kt::consumer_conf(bootstraps, "g"), in_process_config("bad"), no_apply),
        std::invalid_argument);
    auto bad_interval = in_process_config("bad");
    bad_interval.progress_interval = std::chrono::milliseconds(0);
    CHECK_THROWS_WITH(
        member_type(kt::consumer_conf(bootstraps, "g"), bad_interval, echo_handlers(out)),
        contains("progress_interval"));
    auto forever = in_process_config("bad");
    forever.flush_timeout = std::chrono::milliseconds::max();  // overflowed the clock's sums
    CHECK_THROWS_WITH(member_type(kt::consumer_conf(bootstraps, "g"), forever, echo_handlers(out)),
                      contains("flush_timeout must be in [1, 2147483647] ms"));
    CHECK_THROWS_WITH(member_type(kt::make_conf({{"group.id", "g"}}), in_process_config("bad"),
                                  echo_handlers(out)),
                      contains("names no brokers"));
    auto same = in_process_config("bad");
    same.repartition_topic = "bad";
    CHECK_THROWS_WITH(member_type(kt::consumer_conf(bootstraps, "g"), same, echo_handlers(out)),
                      contains("must differ"));
    rd_kafka_conf_t* no_group = kt::make_conf({{"bootstrap.servers", bootstraps}});
    CHECK_THROWS_WITH(member_type(no_group, in_process_config("bad"), echo_handlers(out)),
                      contains("group.id"));
    CHECK_THROWS_WITH(member_type(kt::consumer_conf(bootstraps, "g"), in_process_config("none"),
                                  echo_handlers(out)),
                      contains("does not exist"));

    // A record in the repartition topic that no member wrote: the member fails, by name.
    kt::create_group_topics(cluster, "foreign-group", "foreign", 2);
    {
        kt::delivery_log log(1);
        kt::handle rk = kt::make_producer(bootstraps, log);
        REQUIRE(keyroute::kafka::produce_to(
                    rk.get(),
                    keyroute::kafka::default_repartition_topic("foreign-group", "foreign").c_str(),
                    1, keyroute::stamp{}, "k", "v") == RD_KAFKA_RESP_ERR_NO_ERROR);
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(10)));
    }
    member_type member(kt::consumer_conf(bootstraps, "foreign-group"), in_process_config("foreign"),
                       echo_handlers(out));
    const auto deadline = steady::now() + std::chrono::seconds(30);
    bool threw = false;
    while (!threw && steady::now() < deadline) {
        try {
            member.poll(std::chrono::milliseconds(20));
        } catch (const std::runtime_error& e) {
            threw = true;
            CHECK_THAT(e.what(), contains("no origin header"));
        }
    }
    CHECK(threw);
    CHECK(member.failed());
    CHECK_THROWS_WITH(member.poll(std::chrono::milliseconds(1)), contains("after an exception"));
}

// Retention (here the mock's 5 MB per partition) deleting repartition records before a member
// read them: reported by range and counted, not silent.
TEST_CASE("repartition records deleted before they are read are reported", "[kafka][group]") {
    // Whatever the source's auto.offset.reset: the repartition topic restarts from its earliest
    // record (with `latest`, every forward left after the deleted ones was skipped and reported
    // lost).
    const std::string reset = GENERATE(as<std::string>{}, "earliest", "latest");
    INFO("auto.offset.reset " << reset);
    kt::mock_cluster cluster(1);
    kt::create_group_topics(cluster, "gone-group", "gone", 1, 1);
    std::vector<kt::seen> out;
    std::uint64_t first_progress = 0;  // the first member's progress records, ahead of the 8 MB
    {  // a first member leaves a checkpoint at the repartition topic's start
        keyroute::kafka::ordered_group<keyroute::kafka_partitioner> member(
            kt::consumer_conf(cluster.bootstraps(), "gone-group", {{"session.timeout.ms", "6000"}}),
            in_process_config("gone"), echo_handlers(out));
        poll_until(
            member, [&] { return !member.homes().empty() && member.caught_up(); },
            std::chrono::seconds(30));
        REQUIRE(member.commit());
        member.close();
        first_progress = member.stats().progress;
    }
    {  // 8 MB of forwarded-looking records while no member runs: the oldest are deleted
        kt::delivery_log log(1);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        const std::string value(1000, 'x');
        for (int i = 0; i < 8000; ++i) {
            const std::string where = keyroute::kafka::encode_origin({0, 1000000 + i, -1});
            REQUIRE(keyroute::kafka::produce_to(
                        rk.get(),
                        keyroute::kafka::default_repartition_topic("gone-group", "gone").c_str(), 0,
                        keyroute::stamp{}, "k", value,
                        {keyroute::kafka::header{keyroute::kafka::origin_header_name.data(),
                                                 where}}) == RD_KAFKA_RESP_ERR_NO_ERROR);
            rd_kafka_poll(rk.get(), 0);
        }
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(30)));
    }
    auto on = echo_handlers(out);
    std::int64_t first = -1;
    std::int64_t last = -1;
    on.on_lost = [&](std::int32_t home, std::int64_t a, std::int64_t b) {
        CHECK(home == 0);
        first = a;
        last = b;
    };
    keyroute::kafka::ordered_group<keyroute::kafka_partitioner> member(
        kt::consumer_conf(cluster.bootstraps(), "gone-group",
                          {{"session.timeout.ms", "6000"}, {"auto.offset.reset", reset}}),
        in_process_config("gone"), on);
    poll_until(
        member, [&] { return !out.empty() && member.caught_up(); }, std::chrono::seconds(60));
    CHECK(member.stats().lost_forwards < 8000);
    INFO("lost " << first << " to " << last << ", applied " << out.size());
    CHECK(first >= 0);  // from the checkpoint's offset (after the first member's progress record)
    CHECK(last > first);
    CHECK(member.stats().lost_forwards == static_cast<std::uint64_t>(last - first + 1));
    // The rest applied; the deleted run may begin with progress records the first member wrote
    // after its checkpoint's offset (retention cannot tell them from forwards).
    CHECK(out.size() + member.stats().lost_forwards >= 8000);
    CHECK(out.size() + member.stats().lost_forwards <= 8000 + first_progress);
}

// The deadlock the group's clock must not have: a home full of events that wait for a sequence
// that never comes, while the other partitions are never at their end (production runs faster
// than the member reads). The home's clock must still run (its own partition is blocked, the
// others' watermarks move), give the sequence up after max_delay, and apply what waited for it
// while the production still runs; nothing else is lost or applied twice, and the home never
// holds more than max_events.
TEST_CASE("a full home moves on under continuous production: its gap is given up meanwhile",
          "[kafka][group]") {
    constexpr int n = 4;
    constexpr std::uint64_t hot_events = 300;
    constexpr std::uint64_t missing = 3;  // never produced
    kt::mock_cluster cluster(1);
    kt::create_group_topics(cluster, "full-group", "full", n);
    const keyroute::kafka_partitioner p(n);
    const std::string hot = "tenant-hot";
    const auto home = static_cast<std::int32_t>(p.route(hot));
    {  // the hot key's stamped events, on its home, with one sequence missing
        kt::delivery_log log(1);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        for (std::uint64_t i = 0; i < hot_events; ++i) {
            if (i == missing) continue;
            REQUIRE(keyroute::kafka::produce_to(rk.get(), "full", home,
                                                keyroute::stamp{7, 0, 1, i, true}, hot,
                                                std::to_string(i)) == RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(10)));
    }

    auto config = in_process_config("full");
    config.reseq.max_events = 50;
    config.reseq.max_delay = std::chrono::milliseconds(100);
    std::atomic<bool> producing{false};
    std::uint64_t hot_applied = 0;
    std::atomic<std::uint64_t> hot_applied_while_producing{0};
    std::uint64_t cold_applied = 0;
    keyroute::kafka::group_handlers on;
    on.process = [](const keyroute::kafka::group_event& e) {
        const auto until = steady::now() + std::chrono::microseconds(100);  // a slow step
        while (steady::now() < until) {
        }
        return std::string(e.value);
    };
    on.apply = [&](const keyroute::kafka::group_event& e) {
        if (e.key != hot) {
            ++cold_applied;
            return;
        }
        ++hot_applied;
        if (e.stamp.sequence > missing && producing) ++hot_applied_while_producing;
    };
    keyroute::kafka::ordered_group<keyroute::kafka_partitioner> member(
        kt::consumer_conf(cluster.bootstraps(), "full-group"), config, on);
    poll_until(
        member, [&] { return !member.homes().empty(); }, std::chrono::seconds(30));

    // Cold keys on every partition, twice as fast as the member reads, until the gap is given up
    // (20 s at most: the member is then far behind).
    std::atomic<std::uint64_t> cold_produced{0};
    producing = true;
    std::thread producer([&] {
        kt::delivery_log log(1);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        const auto start = steady::now();
        while (hot_applied_while_producing == 0 &&
               steady::now() - start < std::chrono::seconds(20)) {
            for (int i = 0; i < 20; ++i) {
                const std::string key = "cold-" + std::to_string(cold_produced.load() % 1000);
                if (keyroute::kafka::produce(rk.get(), "full", p, key, "c")) ++cold_produced;
            }
            rd_kafka_poll(rk.get(), 1);  // 20 per ms at most: 20,000/s
        }
        kt::flush(rk.get(), std::chrono::seconds(10));
        producing = false;
    });
    std::size_t most_held = 0;
    const auto deadline = steady::now() + std::chrono::seconds(90);
    while (producing || cold_applied < cold_produced || !member.caught_up()) {
        if (steady::now() > deadline) break;
        member.poll(std::chrono::milliseconds(20));
        for (const auto& m : member.metrics()) most_held = std::max(most_held, m.held_events);
    }
    producer.join();
    INFO("hot applied " << hot_applied << " (" << hot_applied_while_producing
                        << " after the gap while producing), cold " << cold_applied << " of "
                        << cold_produced << ", refused " << member.stats().refused);
    CHECK(member.stats().refused > 0);  // the home was full
    CHECK(hot_applied_while_producing > 0);
    CHECK(hot_applied == hot_events - 1);
    CHECK(cold_applied == cold_produced);
    CHECK(member.stats().missing == 1);
    CHECK(most_held <= config.reseq.max_events);
    member.close();
}

TEST_CASE("a member that joins cleanly: the revoke commits, nothing is applied twice",
          "[kafka][group]") {
    // Member A alone applies everything, no periodic commit due; B joins: A's homes are revoked
    // (eager assignor) and must be committed there. The revoke used to see the member as failed
    // (the flag held for the whole poll) and skip the commit: every event was applied again.
    using member_t = keyroute::kafka::ordered_group<keyroute::kafka_partitioner>;
    constexpr int n = 4;
    kt::mock_cluster cluster(1);
    kt::create_group_topics(cluster, "rejoin", "rejoin-src", n, 1);
    const kt::stream s = kt::skewed_stream(500, 2, 0.9, 50, 5);
    kt::router_type router(kt::router_config(n));
    kt::produce_stream(cluster.bootstraps(), "rejoin-src", router, s);
    auto config = in_process_config("rejoin-src");
    config.commit_interval = std::chrono::hours(1);
    std::vector<kt::seen> out;
    const auto conf = [&] {
        return kt::consumer_conf(
            cluster.bootstraps(), "rejoin",
            {{"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "300"}});
    };
    member_t a(conf(), config, echo_handlers(out));
    poll_until(
        a, [&] { return out.size() >= s.keys.size() && a.caught_up() && !a.homes().empty(); },
        std::chrono::seconds(40));
    CHECK(a.stats().commits == 0);
    member_t b(conf(), config, echo_handlers(out));
    const auto deadline = steady::now() + std::chrono::seconds(40);
    while (!(!a.homes().empty() && !b.homes().empty() && a.caught_up() && b.caught_up() &&
             a.stats().assignments >= 2)) {
        REQUIRE(steady::now() < deadline);
        a.poll(std::chrono::milliseconds(10));
        b.poll(std::chrono::milliseconds(10));
    }
    for (int i = 0; i < 100; ++i) {
        a.poll(std::chrono::milliseconds(5));
        b.poll(std::chrono::milliseconds(5));
    }
    CHECK(a.stats().commits >= 1);
    CHECK(out.size() == s.keys.size());
    const auto problems = kt::order_problems(out, s);
    CHECK(problems.empty());
    b.close();
    a.close();
    CHECK_THROWS_WITH(a.poll(std::chrono::milliseconds(5)),
                      Catch::Matchers::Contains("poll() after close()"));
    CHECK_THROWS_WITH(a.commit(), Catch::Matchers::Contains("commit() after close()"));
}

TEST_CASE("a full producer queue pauses the source partition: the backlog waits in Kafka",
          "[kafka][group]") {
    // The repartition topic's leader goes down with a producer queue of 100 messages: forwards
    // wait, and the source partition must be paused rather than read into the member's memory
    // (it took the whole backlog, 29,900 messages with max_events 100). Then the leader comes
    // back and every event is applied.
    using member_t = keyroute::kafka::ordered_group<keyroute::kafka_partitioner>;
    constexpr int n = 2;
    constexpr int events = 10000;
    kt::mock_cluster cluster(2);
    kt::create_group_topics(cluster, "qfull", "qfull-src", n, 1);
    const auto repart = keyroute::kafka::default_repartition_topic("qfull", "qfull-src");
    const auto changelog = keyroute::kafka::default_changelog_topic("qfull", "qfull-src");
    for (int p = 0; p < n; ++p) {
        rd_kafka_mock_partition_set_leader(cluster.get(), "qfull-src", p, 1);
        rd_kafka_mock_partition_set_leader(cluster.get(), changelog.c_str(), p, 1);
        rd_kafka_mock_partition_set_leader(cluster.get(), repart.c_str(), p, 2);
    }
    rd_kafka_mock_coordinator_set(cluster.get(), "group", "qfull", 1);
    rd_kafka_mock_coordinator_set(cluster.get(), "group", "qfull.changelog-reader", 1);
    auto config = in_process_config("qfull-src");
    config.reseq.max_events = 100;
    config.flush_timeout = std::chrono::milliseconds(300);
    config.producer_settings = {{"queue.buffering.max.messages", "100"}};
    std::vector<kt::seen> out;
    member_t m(kt::consumer_conf(cluster.bootstraps(), "qfull"), config, echo_handlers(out));
    poll_until(
        m, [&] { return m.homes().size() == n && m.caught_up(); }, std::chrono::seconds(20));
    rd_kafka_mock_broker_set_down(cluster.get(), 2);
    {
        // Keys whose home is 1, written to partition 0: every one is forwarded.
        const keyroute::kafka_partitioner base(n);
        kt::delivery_log log(events);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        const std::string value(100, 'v');
        int made = 0;
        for (int i = 0; made < events; ++i) {
            const std::string key = "k" + std::to_string(i);
            if (base.route(key) != 1) continue;
            REQUIRE(keyroute::kafka::produce_to(
                        rk.get(), "qfull-src", 0, keyroute::stamp{}, key, value, {},
                        kt::delivery_log::opaque(static_cast<std::size_t>(made))) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR);
            ++made;
            rd_kafka_poll(rk.get(), 0);
        }
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(20)));
        REQUIRE(log.failures == 0);
    }
    const auto outage = steady::now() + std::chrono::seconds(3);
    while (steady::now() < outage) m.poll(std::chrono::milliseconds(20));
    // Read but not forwarded: at most what one turn takes (2,000) and the producer's queue.
    CHECK(m.stats().read - m.stats().forwarded < 4000);
    rd_kafka_mock_broker_set_up(cluster.get(), 2);
    poll_until(
        m, [&] { return out.size() >= static_cast<std::size_t>(events) && m.caught_up(); },
        std::chrono::seconds(60));
    CHECK(out.size() == static_cast<std::size_t>(events));
    CHECK(m.stats().forwarded == static_cast<std::uint64_t>(events));
}
