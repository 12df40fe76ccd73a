// ordered_consumer's errors: a topic that does not exist, a checkpoint of another partition
// count or topic, a malformed stamp header (counted and delivered as unstamped, or handed to
// the on_malformed callback), a bad setting. (The checkpoint encoding: test_checkpoint_encoding.)
#include "keyroute_catch.hpp"
#include "kafka_mock.hpp"
#include "ordered_consumer_check.hpp"

#include <keyroute/kafka/checkpoint.hpp>
#include <keyroute/kafka/ordered_consumer.hpp>
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/stamp.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace kt = keyroute_test::kafka;
namespace kk = keyroute::kafka;

class fixed_store final : public kk::checkpoint_store {
public:
    explicit fixed_store(kk::consumer_checkpoint cp) : m_cp(std::move(cp)) {}
    auto load() -> std::optional<kk::consumer_checkpoint> override { return m_cp; }
    void save(const kk::consumer_checkpoint& cp) override { m_cp = cp; }

private:
    kk::consumer_checkpoint m_cp;
};

auto config_for(const std::string& topic) -> kk::ordered_consumer_config {
    kk::ordered_consumer_config c;
    c.topic = topic;
    c.metadata_timeout = std::chrono::milliseconds(3000);
    return c;
}

auto message_of(const std::exception& e) -> std::string { return e.what(); }

}  // namespace

TEST_CASE("ordered_consumer: clear errors for a missing topic and a changed partition count",
          "[kafka][consumer]") {
    kt::mock_cluster cluster(3);
    cluster.create_topic("events", 16);
    const auto ignore = [](const kk::ordered_message&) {};

    SECTION("a topic that does not exist") {
        // Metadata v4 carries AllowAutoTopicCreation=false; at the mock's default version, any
        // topic asked for is created.
        REQUIRE(rd_kafka_mock_set_apiversion(cluster.get(), 3 /* Metadata */, 0, 4) ==
                RD_KAFKA_RESP_ERR_NO_ERROR);
        try {
            kk::ordered_consumer c(kt::consumer_conf(cluster.bootstraps(), "errors"),
                                   config_for("no-such-topic"), ignore);
            FAIL("constructed");
        } catch (const std::runtime_error& e) {
            CHECK_THAT(message_of(e), Catch::Matchers::Contains("no-such-topic") &&
                                          Catch::Matchers::Contains("does not exist"));
        }
    }
    SECTION("a checkpoint taken at another partition count") {
        fixed_store store(kk::consumer_checkpoint{"events", 8, {}});
        try {
            kk::ordered_consumer c(kt::consumer_conf(cluster.bootstraps(), "errors"),
                                   config_for("events"), ignore, &store);
            FAIL("constructed");
        } catch (const std::runtime_error& e) {
            CHECK_THAT(message_of(e), Catch::Matchers::Contains("partition count changed from 8") &&
                                          Catch::Matchers::Contains("to 16"));
        }
    }
    SECTION("a checkpoint of another topic") {
        fixed_store store(kk::consumer_checkpoint{"other", 16, {}});
        CHECK_THROWS_WITH(kk::ordered_consumer(kt::consumer_conf(cluster.bootstraps(), "errors"),
                                               config_for("events"), ignore, &store),
                          Catch::Matchers::Contains("checkpoint is of topic other"));
    }
    SECTION("settings out of range, an empty sink") {
        auto bad = config_for("events");
        bad.pause_fraction = 0;
        CHECK_THROWS_AS(
            kk::ordered_consumer(kt::consumer_conf(cluster.bootstraps(), "errors"), bad, ignore),
            std::invalid_argument);
        bad = config_for("events");
        bad.reseq.max_events = 0;
        CHECK_THROWS_AS(
            kk::ordered_consumer(kt::consumer_conf(cluster.bootstraps(), "errors"), bad, ignore),
            std::invalid_argument);
        CHECK_THROWS_AS(
            kk::ordered_consumer(kt::consumer_conf(cluster.bootstraps(), "errors"),
                                 config_for("events"), kk::ordered_consumer::message_sink{}),
            std::invalid_argument);
    }
    SECTION("durations too long for the clock, fetch_wait above librdkafka's, no brokers") {
        // milliseconds::max() ("never") overflowed the clock's sums: every partition was idle at
        // once, and a commit went out at every poll.
        const auto refused = [&](const kk::ordered_consumer_config& c, const char* words,
                                 rd_kafka_conf_t* conf) {
            try {
                kk::ordered_consumer consumer(conf, c, ignore);
                FAIL("constructed");
            } catch (const std::invalid_argument& e) {
                CHECK_THAT(message_of(e), Catch::Matchers::Contains(words));
            }
        };
        auto bad = config_for("events");
        bad.idle_timeout = std::chrono::milliseconds::max();
        refused(bad, "idle_timeout must be in [1, 2147483647] ms, got 9223372036854775807 ms",
                kt::consumer_conf(cluster.bootstraps(), "errors"));
        bad = config_for("events");
        bad.commit_interval = std::chrono::hours(24 * 365);
        refused(bad, "commit_interval", kt::consumer_conf(cluster.bootstraps(), "errors"));
        bad = config_for("events");
        bad.metadata_timeout = std::chrono::milliseconds(-5);
        refused(bad, "metadata_timeout must be in [1, 2147483647] ms, got -5 ms",
                kt::consumer_conf(cluster.bootstraps(), "errors"));
        bad = config_for("events");
        bad.fetch_wait = std::chrono::milliseconds(400000);
        refused(bad, "fetch_wait must be in [0, 300000] ms, got 400000 ms",
                kt::consumer_conf(cluster.bootstraps(), "errors"));
        // Before this check, a missing bootstrap.servers failed after metadata_timeout (10 s)
        // as a broker transport failure.
        refused(config_for("events"), "names no brokers", kt::make_conf({{"group.id", "g"}}));
        // The longest accepted duration works.
        auto longest = config_for("events");
        longest.idle_timeout = std::chrono::milliseconds(2147483647);
        longest.commit_interval = std::chrono::milliseconds(2147483647);
        CHECK_NOTHROW(kk::ordered_consumer(kt::consumer_conf(cluster.bootstraps(), "errors"),
                                           longest, ignore));
    }
}

TEST_CASE("ordered_consumer: a malformed stamp is counted and delivered unstamped, or routed",
          "[kafka][consumer]") {
    kt::mock_cluster cluster(3);
    cluster.create_topic("stamps", 4);
    {
        kt::delivery_log log(20);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        for (std::size_t i = 0; i < 20; ++i) {
            const auto partition = static_cast<std::int32_t>(i % 4);
            const std::string key = "k" + std::to_string(i % 3);
            REQUIRE((i % 2 == 0
                         ? kt::produce_with_stamp_bytes(rk.get(), "stamps", partition, key,
                                                        std::to_string(i), "not a stamp",
                                                        kt::delivery_log::opaque(i))
                         : kk::produce_to(rk.get(), "stamps", partition, keyroute::stamp{}, key,
                                          std::to_string(i), {}, kt::delivery_log::opaque(i))) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(10)));
        REQUIRE(log.failures == 0);
    }
    std::vector<kt::seen> out;
    const auto record = [&](const kk::ordered_message& m) {
        out.push_back(kt::seen{std::string(m.key), std::string(m.value), m.partition, m.offset,
                               m.order, static_cast<bool>(m.stamp)});
    };
    SECTION("counted and delivered as unstamped") {
        kk::ordered_consumer c(kt::consumer_conf(cluster.bootstraps(), "stamps-a"),
                               config_for("stamps"), record);
        kt::drain(c, std::chrono::seconds(20));
        CHECK(c.stats().malformed_stamps == 10);
        CHECK(out.size() == 20);
        for (const auto& d : out) CHECK_FALSE(d.stamped);
    }
    SECTION("routed to the callback") {
        kk::ordered_consumer c(kt::consumer_conf(cluster.bootstraps(), "stamps-b"),
                               config_for("stamps"), record);
        std::vector<keyroute::stamp_error> errors;
        c.on_malformed([&](const rd_kafka_message_t& m, keyroute::stamp_error e) {
            CHECK(std::stoi(std::string(static_cast<const char*>(m.payload), m.len)) % 2 == 0);
            errors.push_back(e);
            return false;
        });
        kt::drain(c, std::chrono::seconds(20));
        CHECK(c.stats().malformed_stamps == 10);
        CHECK(errors.size() == 10);
        for (const auto e : errors) CHECK(e != keyroute::stamp_error::none);
        REQUIRE(out.size() == 10);
        for (const auto& d : out) CHECK(std::stoi(d.value) % 2 == 1);
    }
}

TEST_CASE("ordered_consumer: on_malformed runs once per message, also when the push is refused",
          "[kafka][consumer]") {
    kt::mock_cluster cluster(1);
    cluster.create_topic("refused", 1);
    {
        kt::delivery_log log(2);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        // Sequence 1 of an episode whose 0 never comes: held until max_delay gives 0 up.
        REQUIRE(kk::produce_to(rk.get(), "refused", 0, keyroute::stamp{7, 0, 1, 1, true}, "k", "0",
                               {}, kt::delivery_log::opaque(0)) == RD_KAFKA_RESP_ERR_NO_ERROR);
        // Behind it, same key and partition: it must wait, and with max_events 1 it is refused
        // (and pushed again) until the first goes.
        REQUIRE(kt::produce_with_stamp_bytes(rk.get(), "refused", 0, "k", "1", "not a stamp",
                                             kt::delivery_log::opaque(1)) ==
                RD_KAFKA_RESP_ERR_NO_ERROR);
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(10)));
        REQUIRE(log.failures == 0);
    }
    auto config = config_for("refused");
    config.reseq.max_events = 1;
    config.reseq.max_delay = std::chrono::milliseconds(300);
    std::vector<std::string> out;
    kk::ordered_consumer c(kt::consumer_conf(cluster.bootstraps(), "refused"), config,
                           [&](const kk::ordered_message& m) { out.emplace_back(m.value); });
    int calls = 0;
    c.on_malformed([&](const rd_kafka_message_t&, keyroute::stamp_error) {
        ++calls;
        return true;  // deliver it unstamped
    });
    kt::drain(c, std::chrono::seconds(20));
    CHECK(c.stats().refused > 0);
    CHECK(calls == 1);
    CHECK(c.stats().malformed_stamps == 1);
    CHECK(out == std::vector<std::string>{"0", "1"});
}

TEST_CASE("ordered_consumer: a partition with no offset to start from is an error, not a stall",
          "[kafka][consumer]") {
    // auto.offset.reset=error and nothing committed: librdkafka stops reading both partitions for
    // good. Counted as a transient error, their events were never delivered nor reported.
    kt::mock_cluster cluster(1);
    cluster.create_topic("reset", 2);
    {
        kt::delivery_log log(4);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        for (int i = 0; i < 4; ++i) {
            REQUIRE(kk::produce_to(rk.get(), "reset", i % 2, keyroute::stamp{}, "k",
                                   std::to_string(i), {},
                                   kt::delivery_log::opaque(static_cast<std::size_t>(i))) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(10)));
        REQUIRE(log.failures == 0);
    }
    auto config = config_for("reset");
    config.idle_timeout = std::chrono::milliseconds(500);
    kk::ordered_consumer c(
        kt::consumer_conf(cluster.bootstraps(), "reset", {{"auto.offset.reset", "error"}}), config,
        [](const kk::ordered_message&) {});
    std::string error;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    try {
        while (std::chrono::steady_clock::now() < until && !c.at_end())
            c.poll(std::chrono::milliseconds(100));
    } catch (const std::runtime_error& e) {
        error = e.what();
    }
    CHECK_THAT(error, Catch::Matchers::Contains("no offset to start from"));
    CHECK(c.failed());
}

TEST_CASE("ordered_consumer: poll() and commit() after close() are errors", "[kafka][consumer]") {
    kt::mock_cluster cluster(1);
    cluster.create_topic("closed", 1);
    kk::ordered_consumer c(kt::consumer_conf(cluster.bootstraps(), "closed"), config_for("closed"),
                           [](const kk::ordered_message&) {});
    c.poll(std::chrono::milliseconds(100));
    c.close();
    c.close();  // again: nothing
    CHECK_THROWS_WITH(c.poll(std::chrono::milliseconds(10)),
                      Catch::Matchers::Contains("poll() after close()"));
    CHECK_THROWS_WITH(c.commit(), Catch::Matchers::Contains("commit() after close()"));
}
