// ordered_consumer killed with SIGKILL at a random point and restarted: every event exactly once
// in the sink. The sink is a file whose length is stored with each checkpoint (one atomically
// replaced file), so that what it wrote after the last checkpoint is cut off at the restart: the
// pattern checkpoint_store documents. The consumers run in child processes (the mock
// cluster stays in this process); the kill point is a random share of the output (seed printed).
// A second case restarts one in-process consumer many times from its checkpoints.
#include "keyroute_catch.hpp"
#include "child_process.hpp"
#include "kafka_mock.hpp"
#include "kafka_stream.hpp"
#include "ordered_consumer_check.hpp"

#include <keyroute/kafka/checkpoint.hpp>
#include <keyroute/kafka/ordered_consumer.hpp>

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace kt = keyroute_test::kafka;
namespace fs = std::filesystem;

// The sink's output and the checkpoint, which records the output's length.
class file_store final : public keyroute::kafka::checkpoint_store {
public:
    explicit file_store(fs::path dir) : m_dir(std::move(dir)) {}
    file_store(const file_store&) = delete;
    file_store(file_store&&) = delete;
    auto operator=(const file_store&) -> file_store& = delete;
    auto operator=(file_store&&) -> file_store& = delete;
    ~file_store() override {
        if (m_out != nullptr) std::fclose(m_out);
    }

    // Rolls the output back to the checkpoint's length and opens it for appending.
    auto load() -> std::optional<keyroute::kafka::consumer_checkpoint> override {
        std::optional<keyroute::kafka::consumer_checkpoint> cp;
        std::uintmax_t length = 0;
        std::ifstream in(m_dir / "checkpoint", std::ios::binary);
        if (in) {
            std::stringstream text;
            text << in.rdbuf();
            const std::string all = text.str();
            const auto nl = all.find('\n');
            length = std::stoull(all.substr(0, nl));
            cp = keyroute::kafka::decode_checkpoint(std::string_view(all).substr(nl + 1));
        }
        if (fs::exists(output())) fs::resize_file(output(), length);
        m_out = std::fopen(output().c_str(), "ab");
        if (m_out == nullptr) throw std::runtime_error("cannot open the output");
        return cp;
    }

    void save(const keyroute::kafka::consumer_checkpoint& cp) override {
        std::fflush(m_out);
        const auto length = fs::file_size(output());
        const fs::path tmp = m_dir / "checkpoint.tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out << length << '\n' << keyroute::kafka::encode_checkpoint(cp);
        }
        fs::rename(tmp, m_dir / "checkpoint");  // atomic: the old or the new, never half
        ++saves;
    }

    void write(const keyroute::kafka::ordered_message& m) {
        std::fprintf(m_out, "%.*s %.*s\n", static_cast<int>(m.key.size()), m.key.data(),
                     static_cast<int>(m.value.size()), m.value.data());
    }

    [[nodiscard]] auto output() const -> fs::path { return m_dir / "output"; }
    std::size_t saves = 0;

private:
    fs::path m_dir;
    std::FILE* m_out = nullptr;
};

// One consumer run in this (child) process, to the end of the topic; its exit status.
auto run_consumer(const std::string& bootstraps, const std::string& topic, const fs::path& dir)
    -> int {
    try {
        file_store store(dir);
        keyroute::kafka::ordered_consumer_config config;
        config.topic = topic;
        config.commit_interval = std::chrono::milliseconds(20);
        std::size_t n = 0;
        keyroute::kafka::ordered_consumer consumer(
            kt::consumer_conf(bootstraps, "restart"), config,
            [&](const keyroute::kafka::ordered_message& m) {
                store.write(m);
                // Slow enough that the kill lands among several checkpoints.
                if (++n % 200 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            },
            &store);
        kt::drain(consumer, std::chrono::seconds(40));
        consumer.close();
        std::ofstream(dir / "stats") << consumer.stats().duplicates << ' ' << store.saves << '\n';
        return consumer.stats().gaps == 0 ? 0 : 3;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "consumer: %s\n", e.what());
        return 2;
    }
}

KEYROUTE_TEST_CHILD(restart_consumer, [](const std::vector<std::string>& a) {
    return a.size() == 3 ? run_consumer(a[0], a[1], a[2]) : 2;
});

auto start(const std::string& bootstraps, const std::string& topic, const fs::path& dir) -> pid_t {
    return keyroute_test::spawn_child("restart_consumer", {bootstraps, topic, dir.string()});
}

auto read_output(const fs::path& file) -> std::vector<kt::seen> {
    std::vector<kt::seen> out;
    std::ifstream in(file);
    std::string key;
    std::string value;
    while (in >> key >> value) out.push_back(kt::seen{key, value});
    return out;
}

}  // namespace

TEST_CASE("a consumer killed with SIGKILL and restarted delivers every event exactly once",
          "[kafka][consumer]") {
    constexpr int partitions = 16;
    const std::string topic = "restart";
    kt::mock_cluster cluster(3);
    cluster.create_topic(topic, partitions);
    const kt::stream s = kt::skewed_stream(10000, 4, 0.9, 300, 7);
    kt::router_type router(kt::router_config(partitions));
    kt::produce_stream(cluster.bootstraps(), topic, router, s);

    std::uintmax_t total = 0;  // the output's length once everything is delivered
    for (std::size_t id = 0; id < s.keys.size(); ++id) {
        total += s.keys[id].size() + std::to_string(id).size() + 2;
    }
    const auto seed = std::random_device{}();
    std::mt19937 rng(seed);
    const double share = std::uniform_real_distribution<double>(0.1, 0.9)(rng);
    INFO("seed " << seed << ": killed at " << share << " of the output");

    const fs::path dir =
        fs::temp_directory_path() / ("keyroute_consumer_restart_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path output = dir / "output";

    const pid_t first = start(cluster.bootstraps(), topic, dir);
    REQUIRE(first > 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
    bool exited = false;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        if (waitpid(first, &status, WNOHANG) == first) {
            exited = true;
            break;
        }
        std::error_code ec;
        const auto size = fs::file_size(output, ec);
        if (!ec && static_cast<double>(size) >= share * static_cast<double>(total)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    REQUIRE_FALSE(exited);  // it must die mid-way
    REQUIRE(kill(first, SIGKILL) == 0);
    REQUIRE(waitpid(first, &status, 0) == first);
    REQUIRE(WIFSIGNALED(status));
    const auto before = read_output(output).size();

    const pid_t second = start(cluster.bootstraps(), topic, dir);
    REQUIRE(second > 0);
    status = keyroute_test::wait_child(second, std::chrono::seconds(120));
    REQUIRE(status != -1);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);

    std::ifstream stats(dir / "stats");
    std::size_t duplicates = 0;
    std::size_t saves = 0;
    stats >> duplicates >> saves;
    INFO("lines before the restart " << before << ", duplicates dropped after it " << duplicates);
    const auto out = read_output(output);
    CHECK(out.size() == s.keys.size());
    const auto problems = kt::order_problems(out, s);
    for (const auto& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());
    fs::remove_all(dir);
}

namespace {

// The sink's output in memory, stored with each checkpoint; load() rolls it back to the last
// one saved, as a crash would.
class memory_store final : public keyroute::kafka::checkpoint_store {
public:
    auto load() -> std::optional<keyroute::kafka::consumer_checkpoint> override {
        out.resize(m_saved_length);
        if (m_saved.empty()) return std::nullopt;
        return keyroute::kafka::decode_checkpoint(m_saved);
    }
    void save(const keyroute::kafka::consumer_checkpoint& cp) override {
        m_saved = keyroute::kafka::encode_checkpoint(cp);
        m_saved_length = out.size();
    }
    [[nodiscard]] auto saved_length() const noexcept -> std::size_t { return m_saved_length; }
    std::vector<kt::seen> out;

private:
    std::string m_saved;
    std::size_t m_saved_length = 0;
};

}  // namespace

// Restarts from checkpoints taken at random points (6 to 19 of them per run): every event once,
// in order. (The loss this file's first case found at a restart's start-up shows there, under a
// second process's load, and not here.)
TEST_CASE("a consumer dropped without a commit and restarted many times loses nothing",
          "[kafka][consumer]") {
    constexpr int partitions = 16;
    const std::string topic = "restarts";
    kt::mock_cluster cluster(3);
    cluster.create_topic(topic, partitions);
    const kt::stream s = kt::skewed_stream(5000, 4, 0.9, 300, 11);
    kt::router_type router(kt::router_config(partitions));
    kt::produce_stream(cluster.bootstraps(), topic, router, s);

    const auto seed = std::random_device{}();
    std::mt19937 rng(seed);
    INFO("seed " << seed);
    memory_store store;
    int restarts = 0;
    bool done = false;
    while (!done) {
        REQUIRE(restarts < 200);
        keyroute::kafka::ordered_consumer_config config;
        config.topic = topic;
        config.commit_interval = std::chrono::milliseconds(1);
        // The "crash": a few polls after the first checkpoint that holds new output (what was
        // delivered since the last checkpoint is lost), so that every run makes progress.
        const int extra_polls = static_cast<int>(rng() % 4);
        std::size_t delivered = 0;
        keyroute::kafka::ordered_consumer consumer(
            kt::consumer_conf(cluster.bootstraps(), "restarts"), config,
            [&](const keyroute::kafka::ordered_message& m) {
                store.out.push_back(kt::seen{std::string(m.key), std::string(m.value)});
                ++delivered;
            },
            &store);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        const std::size_t loaded = store.out.size();
        int after = -1;  // polls since the store's output passed `loaded`
        while (after < extra_polls && !consumer.at_end()) {
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            consumer.poll(std::chrono::milliseconds(20));
            if (after >= 0 || store.saved_length() > loaded) ++after;
        }
        CHECK(consumer.stats().gaps == 0);
        if (consumer.at_end()) {
            consumer.close();
            done = true;
        } else {
            ++restarts;  // destroyed without close(): what it delivered since the last save is lost
        }
    }
    INFO(restarts << " restarts");
    CHECK(restarts >= 3);
    CHECK(store.out.size() == s.keys.size());
    const auto problems = kt::order_problems(store.out, s);
    for (const auto& p : problems) UNSCOPED_INFO(p);
    CHECK(problems.empty());
}

namespace {

// A consumer without a store that starts from group `group`'s commits and reads to the end.
struct restart_run {
    std::vector<kt::seen> out;
    std::vector<std::string> possibly_duplicate;  // the values flagged so
    std::size_t gaps = 0;
    keyroute::kafka::ordered_consumer_stats stats;  // at close()
};

auto restart_and_drain(const kt::mock_cluster& cluster, const std::string& group,
                       const keyroute::kafka::ordered_consumer_config& config) -> restart_run {
    restart_run run;
    keyroute::kafka::ordered_consumer consumer(
        kt::consumer_conf(cluster.bootstraps(), group), config,
        [&](const keyroute::kafka::ordered_message& m) {
            run.out.push_back(kt::seen{std::string(m.key), std::string(m.value)});
            if (m.possibly_duplicate) run.possibly_duplicate.emplace_back(m.value);
        });
    consumer.on_gap([&](const keyroute::gap_report&) { ++run.gaps; });
    kt::drain(consumer, std::chrono::seconds(30));
    consumer.close();
    run.stats = consumer.stats();
    return run;
}

// The distinct values of two runs.
auto distinct_values(const std::vector<kt::seen>& a, const std::vector<kt::seen>& b)
    -> std::size_t {
    std::set<std::string> values;
    for (const auto* run : {&a, &b}) {
        for (const auto& d : *run) values.insert(d.value);
    }
    return values.size();
}

}  // namespace

// Without a store, delivery is at least once; the commits' metadata tells where the spread
// keys' episodes stood (commit_hint.hpp), so a restart neither waits max_delay for what was
// delivered before it nor reports it as a gap. Without the hint: one gap report of thousands
// of sequences, max_delay after the restart.
TEST_CASE("without a store, a restart after close() reports no gap for what came before it",
          "[kafka][consumer]") {
    constexpr int partitions = 16;
    const std::string topic = "hinted";
    kt::mock_cluster cluster(3);
    cluster.create_topic(topic, partitions);
    const kt::stream s = kt::skewed_stream(5000, 4, 0.9, 300, 23);
    kt::router_type router(kt::router_config(partitions));
    const auto routed = kt::produce_stream(cluster.bootstraps(), topic, router, s);
    std::size_t stamped = 0;
    for (const auto& st : routed.stamp) stamped += st ? 1 : 0;
    REQUIRE(stamped > s.keys.size() / 2);  // the hot key was spread

    keyroute::kafka::ordered_consumer_config config;
    config.topic = topic;
    config.reseq.max_delay = std::chrono::seconds(2);
    std::vector<kt::seen> first;
    {
        keyroute::kafka::ordered_consumer consumer(
            kt::consumer_conf(cluster.bootstraps(), "hinted"), config,
            [&](const keyroute::kafka::ordered_message& m) {
                first.push_back(kt::seen{std::string(m.key), std::string(m.value)});
            });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (first.size() < s.keys.size() / 2) {
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            consumer.poll(std::chrono::milliseconds(5));
        }
        REQUIRE_FALSE(consumer.at_end());
        consumer.close();  // commits the offsets, and the hint in their metadata
        CHECK(consumer.stats().hinted_episodes == 0);  // nothing was committed before
    }
    const restart_run again = restart_and_drain(cluster, "hinted", config);
    const std::vector<kt::seen>& second = again.out;
    INFO("episodes hinted " << again.stats.hinted_episodes << ", delivered " << first.size()
                            << " then " << second.size() << " (" << again.stats.late << " late)");
    CHECK(again.stats.hinted_episodes > 0);
    CHECK(again.gaps == 0);
    // At least once: every event delivered, some twice (re-read from the committed offsets).
    CHECK(distinct_values(first, second) == s.keys.size());
    // Each key's order: the first run's, and the second run's events new to it.
    std::set<std::string> before;
    for (const auto& d : first) before.insert(d.value);
    // A message flagged as a possible second delivery was delivered before.
    INFO(again.possibly_duplicate.size() << " flagged possibly_duplicate");
    for (const auto& v : again.possibly_duplicate) CHECK(before.count(v) == 1);
    const std::vector<kt::seen>& before_restart = first;
    for (const auto* run : {&before_restart, &second}) {
        std::map<std::string, long long> last;
        std::size_t backwards = 0;
        for (const auto& d : *run) {
            if (run == &second && before.count(d.value) != 0) continue;
            const long long id = std::stoll(d.value);
            const auto [it, fresh] = last.emplace(d.key, id);
            if (!fresh && id <= it->second) ++backwards;
            it->second = id;
        }
        CHECK(backwards == 0);
    }
}

// A broker whose offset.metadata.max.bytes is below the hint refuses the whole commit
// (OFFSET_METADATA_TOO_LARGE, injected here: the mock cluster has no such limit). The consumer
// lowers the hint's budget to half of what the commit sent and commits again, so the offsets
// advance. Without that, every commit was refused and nothing was ever committed: a restart read
// the whole topic again.
TEST_CASE("a commit refused for its metadata's size goes again with a smaller hint",
          "[kafka][consumer]") {
    constexpr int partitions = 16;
    constexpr std::int16_t offset_commit_api_key = 8;  // Kafka protocol: OffsetCommit
    const std::string topic = "refused-hint";
    kt::mock_cluster cluster(3);
    cluster.create_topic(topic, partitions);
    const kt::stream s = kt::skewed_stream(4000, 4, 0.9, 300, 29);
    kt::router_type router(kt::router_config(partitions));
    static_cast<void>(kt::produce_stream(cluster.bootstraps(), topic, router, s));

    keyroute::kafka::ordered_consumer_config config;
    config.topic = topic;
    config.reseq.max_delay = std::chrono::seconds(2);
    config.commit_interval = std::chrono::hours(1);  // only the commits this test asks for
    const auto refuse_commits = [&](std::size_t n) {
        const std::vector<rd_kafka_resp_err_t> errors(n,
                                                      RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE);
        rd_kafka_mock_push_request_errors_array(cluster.get(), offset_commit_api_key, n,
                                                errors.data());
    };
    std::vector<kt::seen> first;
    {
        keyroute::kafka::ordered_consumer consumer(
            kt::consumer_conf(cluster.bootstraps(), "refused"), config,
            [&](const keyroute::kafka::ordered_message& m) {
                first.push_back(kt::seen{std::string(m.key), std::string(m.value)});
            });
        CHECK(consumer.stats().commit_hint_bytes == 3072);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (first.size() < s.keys.size() / 2) {
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            consumer.poll(std::chrono::milliseconds(5));
        }
        const auto committed = [&] {  // partitions with a committed offset; metadata sizes
            std::size_t n = 0;
            rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
            for (int p = 0; p < partitions; ++p) {
                rd_kafka_topic_partition_list_add(list, topic.c_str(), p);
            }
            REQUIRE(rd_kafka_committed(consumer.handle(), list, 10000) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR);
            for (int i = 0; i < list->cnt; ++i) {
                if (list->elems[i].offset < 0) continue;
                ++n;
                CHECK(list->elems[i].metadata_size <= consumer.stats().commit_hint_bytes);
            }
            rd_kafka_topic_partition_list_destroy(list);
            return n;
        };
        // A sync commit refused: it goes again at once, with less metadata, and lands.
        refuse_commits(1);
        consumer.commit(true);
        CHECK(consumer.stats().commit_failures == 1);
        CHECK(consumer.stats().commit_hint_bytes < 3072);
        CHECK(committed() > 0);
        // An async commit refused: its result comes in on a later poll() (which commits again
        // if there was metadata left to shrink).
        refuse_commits(1);
        consumer.commit(false);
        while (consumer.stats().commit_failures == 1) {
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            consumer.poll(std::chrono::milliseconds(5));
        }
        CHECK(consumer.stats().commit_failures == 2);
        consumer.close();
        CHECK(consumer.stats().commit_failures == 2);
    }
    const restart_run again = restart_and_drain(cluster, "refused", config);
    INFO("episodes hinted " << again.stats.hinted_episodes << ", delivered " << first.size()
                            << " then " << again.out.size());
    CHECK(again.stats.commit_failures == 0);
    CHECK(again.out.size() < s.keys.size());  // the restart began at the committed offsets
    CHECK(distinct_values(first, again.out) == s.keys.size());
}

namespace {

// Produces events first..first+n-1 (unstamped, value = the id) to one partition.
void produce_plain(const std::string& bootstraps, const std::string& topic, std::int32_t partition,
                   int first, int n) {
    kt::delivery_log log(static_cast<std::size_t>(first + n));
    kt::handle rk = kt::make_producer(bootstraps, log);
    for (int id = first; id < first + n; ++id) {
        const std::string value = std::to_string(id);
        REQUIRE(keyroute::kafka::produce_to(
                    rk.get(), topic.c_str(), partition, keyroute::stamp{}, "key-" + value, value,
                    {}, kt::delivery_log::opaque(static_cast<std::size_t>(id))) ==
                RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    REQUIRE(kt::flush(rk.get(), std::chrono::seconds(10)));
}

auto values(const std::vector<kt::seen>& out) -> std::multiset<std::string> {
    std::multiset<std::string> v;
    for (const auto& d : out) v.insert(d.value);
    return v;
}

auto ids(int first, int n) -> std::multiset<std::string> {
    std::multiset<std::string> v;
    for (int id = first; id < first + n; ++id) v.insert(std::to_string(id));
    return v;
}

}  // namespace

TEST_CASE("after a sink's exception the consumer commits nothing more: the event comes again",
          "[kafka][consumer]") {
    kt::mock_cluster cluster(1);
    cluster.create_topic("sink-throws", 1);
    produce_plain(cluster.bootstraps(), "sink-throws", 0, 0, 10);
    memory_store store;
    keyroute::kafka::ordered_consumer_config config;
    config.topic = "sink-throws";
    bool thrown = false;
    {
        keyroute::kafka::ordered_consumer consumer(
            kt::consumer_conf(cluster.bootstraps(), "sink-throws"), config,
            [&](const keyroute::kafka::ordered_message& m) {
                if (m.value == "5" && !thrown) {
                    thrown = true;
                    throw std::runtime_error("the application's sink failed");
                }
                store.out.push_back(kt::seen{std::string(m.key), std::string(m.value)});
            },
            &store);
        CHECK_THROWS_WITH(kt::drain(consumer, std::chrono::seconds(20)),
                          "the application's sink failed");
        CHECK(consumer.failed());
        CHECK_THROWS_WITH(consumer.poll(std::chrono::milliseconds(1)),
                          keyroute_test::contains("restart from the last checkpoint"));
        CHECK_THROWS(consumer.commit());
        consumer.close();  // closes without a commit
    }
    keyroute::kafka::ordered_consumer again(
        kt::consumer_conf(cluster.bootstraps(), "sink-throws"), config,
        [&](const keyroute::kafka::ordered_message& m) {
            store.out.push_back(kt::seen{std::string(m.key), std::string(m.value)});
        },
        &store);
    kt::drain(again, std::chrono::seconds(20));
    again.close();
    CHECK(values(store.out) == ids(0, 10));
}

TEST_CASE("a partition that gave no event before a restart is not skipped with latest",
          "[kafka][consumer]") {
    kt::mock_cluster cluster(1);
    const std::string topic = "quiet";
    cluster.create_topic(topic, 2);
    std::vector<kt::seen> out;
    const auto sink = [&](const keyroute::kafka::ordered_message& m) {
        out.push_back(kt::seen{std::string(m.key), std::string(m.value)});
    };
    keyroute::kafka::ordered_consumer_config config;
    config.topic = topic;
    const kt::settings latest{{"auto.offset.reset", "latest"}};
    {
        keyroute::kafka::ordered_consumer consumer(
            kt::consumer_conf(cluster.bootstraps(), "quiet", latest), config, sink);
        kt::drain(consumer, std::chrono::seconds(20));  // both partitions at their (empty) end
        produce_plain(cluster.bootstraps(), topic, 0, 0, 3);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (out.size() < 3 && std::chrono::steady_clock::now() < deadline) {
            consumer.poll(std::chrono::milliseconds(20));
        }
        consumer.close();
    }
    REQUIRE(values(out) == ids(0, 3));
    // While it is down, both partitions get events: partition 1 never gave one before.
    produce_plain(cluster.bootstraps(), topic, 0, 3, 3);
    produce_plain(cluster.bootstraps(), topic, 1, 6, 3);
    keyroute::kafka::ordered_consumer again(
        kt::consumer_conf(cluster.bootstraps(), "quiet", latest), config, sink);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (out.size() < 9 && std::chrono::steady_clock::now() < deadline) {
        again.poll(std::chrono::milliseconds(20));
    }
    again.close();
    CHECK(values(out) == ids(0, 9));
}

// An event held at the checkpoint (it waits for a sequence that never comes) is deleted by
// retention (the mock keeps about 5 MB per partition) while the consumer is down: after the
// restart it is counted as lost, and the commit moves past it instead of sticking there.
TEST_CASE("held events that retention deleted while the consumer was down do not pin the commit",
          "[kafka][consumer]") {
    kt::mock_cluster cluster(1);
    const std::string topic = "expired";
    cluster.create_topic(topic, 2);
    {
        kt::delivery_log log(2);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        // Sequence 0 on partition 0, sequence 2 on partition 1; sequence 1 is never written.
        REQUIRE(keyroute::kafka::produce_to(rk.get(), topic.c_str(), 0,
                                            keyroute::stamp{5, 0, 1, 0, true}, "hot",
                                            "0") == RD_KAFKA_RESP_ERR_NO_ERROR);
        REQUIRE(keyroute::kafka::produce_to(rk.get(), topic.c_str(), 1,
                                            keyroute::stamp{5, 0, 1, 2, true}, "hot",
                                            "2") == RD_KAFKA_RESP_ERR_NO_ERROR);
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(10)));
    }
    memory_store store;
    const auto sink = [&](const keyroute::kafka::ordered_message& m) {
        store.out.push_back(kt::seen{std::string(m.key), std::string(m.value)});
    };
    keyroute::kafka::ordered_consumer_config config;
    config.topic = topic;
    config.reseq.max_delay = std::chrono::hours(1);  // sequence 2 waits for 1 all along
    config.commit_interval = std::chrono::milliseconds(1);
    {
        keyroute::kafka::ordered_consumer consumer(
            kt::consumer_conf(cluster.bootstraps(), "expired"), config, sink, &store);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!(store.out.size() == 1 && consumer.held_events() == 1)) {
            REQUIRE(std::chrono::steady_clock::now() < deadline);
            consumer.poll(std::chrono::milliseconds(20));
        }
        consumer.close();  // the checkpoint holds partition 1's offset 0
    }
    {  // 8 MB to partition 1 while it is down: its first records are deleted
        kt::delivery_log log(8000);
        kt::handle rk = kt::make_producer(cluster.bootstraps(), log);
        const std::string value(1000, 'x');
        for (int i = 0; i < 8000; ++i) {
            REQUIRE(keyroute::kafka::produce_to(rk.get(), topic.c_str(), 1, keyroute::stamp{},
                                                "cold-" + std::to_string(i),
                                                value) == RD_KAFKA_RESP_ERR_NO_ERROR);
            rd_kafka_poll(rk.get(), 0);
        }
        REQUIRE(kt::flush(rk.get(), std::chrono::seconds(30)));
    }
    keyroute::kafka::ordered_consumer again(kt::consumer_conf(cluster.bootstraps(), "expired"),
                                            config, sink, &store);
    kt::drain(again, std::chrono::seconds(60));
    CHECK(again.stats().lost_rereads == 1);
    CHECK(again.held_events() == 0);
    again.commit(true);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, topic.c_str(), 1);
    REQUIRE(rd_kafka_committed(again.handle(), list, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR);
    const std::int64_t committed = list->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(list);
    CHECK(committed == 8001);  // past everything; it was stuck at 0, the deleted held offset
    // What retention left was delivered (the deleted ones are lost to the log, not to us).
    INFO("delivered " << store.out.size());
    CHECK(store.out.size() > 1);
    CHECK(store.out.size() < 1 + 8000);
    again.close();
}
