// ordered_consumer's throughput against a plain librdkafka consumer loop over the same topic on
// librdkafka's mock cluster (bench/README.md, "ordered_consumer").
//
//     bench_consumer [events [partitions [rounds]]]     (defaults: 500000 32 3)
//
// Fills a topic through the salting router (a 90% hot key, stamped), then reads it from the
// beginning `rounds` times each way, alternating, every read with a new group: the plain loop
// reads every message (one rd_kafka_consumer_poll each; the consumer queue in batches of 500;
// each partition's own queue in batches of 500, in turn), adds up its key and value sizes and
// destroys it; ordered_consumer does the same in its sink and restores each key's order. Every
// reader fetches with the same fetch.wait.max.ms. Prints the events/s and the process's CPU time
// per event of each round, and the ratios of the medians. Exit status 1 if a read does not see
// every event.
#include <keyroute/kafka/ordered_consumer.hpp>
#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <sys/resource.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

// Every reader fetches with the same fetch.wait.max.ms: ordered_consumer's default (20 ms), or
// KEYROUTE_BENCH_FETCH_WAIT_MS.
auto fetch_wait_ms() -> long {
    const char* wait = std::getenv("KEYROUTE_BENCH_FETCH_WAIT_MS");
    return wait != nullptr
               ? std::strtol(wait, nullptr, 10)
               : static_cast<long>(keyroute::kafka::ordered_consumer_config{}.fetch_wait.count());
}

auto conf_for(const std::string& brokers, const std::string& group) -> rd_kafka_conf_t* {
    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", group.c_str(), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
    if (const char* backoff = std::getenv("KEYROUTE_BENCH_BACKOFF_MS")) {
        rd_kafka_conf_set(conf, "fetch.error.backoff.ms", backoff, errstr, sizeof errstr);
    }
    rd_kafka_conf_set(conf, "fetch.wait.max.ms", std::to_string(fetch_wait_ms()).c_str(), errstr,
                      sizeof errstr);
    return conf;
}

auto seconds_since(std::chrono::steady_clock::time_point t) -> double {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// CPU seconds of the whole process so far: this thread, librdkafka's and the mock brokers'.
auto cpu_seconds() -> double {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto s = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    return s(u.ru_utime) + s(u.ru_stime);
}

// One read: events per second of wall time, and CPU microseconds per event.
struct rate {
    double per_second = -1;
    double cpu_us = 0;
};

enum class loop {
    poll,           // one rd_kafka_consumer_poll per message
    batched,        // the consumer queue, 500 at a time (rd_kafka_consume_batch_queue)
    per_partition,  // each partition's own queue, 500 at a time, in turn: ordered_consumer's layout
};

// The plain loop: assign every partition, read until `events` messages came.
auto plain(const std::string& brokers, const char* topic, int partitions, std::uint64_t events,
           const std::string& group, loop how) -> rate {
    char errstr[512];
    rd_kafka_t* rk =
        rd_kafka_new(RD_KAFKA_CONSUMER, conf_for(brokers, group), errstr, sizeof errstr);
    if (rk == nullptr) return {};
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; ++p) {
        rd_kafka_topic_partition_list_add(list, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    std::vector<rd_kafka_queue_t*> queues;  // what the batched loops read, in turn
    if (how == loop::batched) queues.push_back(rd_kafka_queue_get_consumer(rk));
    if (how == loop::per_partition) {
        for (int p = 0; p < partitions; ++p) {
            queues.push_back(rd_kafka_queue_get_partition(rk, topic, p));
            rd_kafka_queue_forward(queues.back(), nullptr);
        }
    }
    rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    std::uint64_t read = 0;
    std::uint64_t bytes = 0;
    const auto take = [&](rd_kafka_message_t* m) {
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            ++read;
            bytes += m->key_len + m->len;
        }
        rd_kafka_message_destroy(m);
    };
    std::vector<rd_kafka_message_t*> batch(500);
    // With nothing fetched, the batched loops wait up to 1 ms on the consumer queue (taking what
    // comes): a batch read with a timeout waits for a full batch.
    const auto wait = [&] {
        if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 1)) take(m);
    };
    const double cpu = cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    while (read < events && seconds_since(start) < 120) {
        if (how == loop::poll) {
            if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100)) take(m);
            continue;
        }
        ssize_t all = 0;
        for (rd_kafka_queue_t* q : queues) {
            const ssize_t got = rd_kafka_consume_batch_queue(q, 0, batch.data(), batch.size());
            for (ssize_t i = 0; i < got; ++i) take(batch[static_cast<std::size_t>(i)]);
            all += std::max<ssize_t>(got, 0);
        }
        if (all == 0) wait();
    }
    const double s = seconds_since(start);
    const double cpu_used = cpu_seconds() - cpu;
    for (rd_kafka_queue_t* q : queues) rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    if (read != events || bytes == 0) return {};
    return {static_cast<double>(events) / s, cpu_used * 1e6 / static_cast<double>(events)};
}

auto ordered(const std::string& brokers, const char* topic, std::uint64_t events,
             const std::string& group) -> rate {
    keyroute::kafka::ordered_consumer_config config;
    config.topic = topic;
    config.fetch_wait = std::chrono::milliseconds(fetch_wait_ms());
    if (const char* max = std::getenv("KEYROUTE_BENCH_MAX_EVENTS")) {
        config.reseq.max_events = std::strtoull(max, nullptr, 10);
    }
    if (const char* f = std::getenv("KEYROUTE_BENCH_PAUSE_FRACTION")) {
        config.pause_fraction = std::strtod(f, nullptr);
    }
    if (const char* d = std::getenv("KEYROUTE_BENCH_DRIFT_MS")) {
        config.max_drift = std::chrono::milliseconds(std::strtoll(d, nullptr, 10));
    }
    std::uint64_t read = 0;
    std::uint64_t bytes = 0;
    keyroute::kafka::ordered_consumer consumer(conf_for(brokers, group), config,
                                               [&](const keyroute::kafka::ordered_message& m) {
                                                   ++read;
                                                   bytes += m.key.size() + m.value.size();
                                               });
    const double cpu = cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    auto last = start;
    while (!consumer.at_end() && seconds_since(start) < 120) {
        consumer.poll(std::chrono::milliseconds(100));
        if (std::getenv("KEYROUTE_BENCH_VERBOSE") != nullptr && seconds_since(last) > 0.5) {
            last = std::chrono::steady_clock::now();
            std::printf("  t %.1f read %llu held %zu paused %zu\n", seconds_since(start),
                        static_cast<unsigned long long>(consumer.stats().read),
                        consumer.held_events(), consumer.paused());
        }
    }
    const double s = seconds_since(start);
    const double cpu_used = cpu_seconds() - cpu;
    if (std::getenv("KEYROUTE_BENCH_VERBOSE") != nullptr) {
        const auto& st = consumer.stats();
        std::printf("  read %llu pauses %llu refused %llu max held %zu commits %llu errors %llu\n",
                    static_cast<unsigned long long>(st.read),
                    static_cast<unsigned long long>(st.pauses),
                    static_cast<unsigned long long>(st.refused), st.max_held,
                    static_cast<unsigned long long>(st.commits),
                    static_cast<unsigned long long>(st.consume_errors));
    }
    consumer.close();
    if (read != events || bytes == 0 || consumer.stats().gaps != 0) return {};
    return {static_cast<double>(events) / s, cpu_used * 1e6 / static_cast<double>(events)};
}

auto median(std::vector<rate> v, double rate::*field) -> double {
    std::sort(v.begin(), v.end(),
              [&](const rate& a, const rate& b) { return a.*field < b.*field; });
    return v[v.size() / 2].*field;
}

}  // namespace

int main(int argc, char** argv) {
    const std::uint64_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 500000;
    const int partitions = argc > 2 ? std::atoi(argv[2]) : 32;
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
    const char* topic = "bench";

    char errstr[512];
    rd_kafka_conf_t* owner_conf = rd_kafka_conf_new();
    rd_kafka_conf_set(owner_conf, "log_level", "3", errstr, sizeof errstr);
    rd_kafka_t* owner = rd_kafka_new(RD_KAFKA_PRODUCER, owner_conf, errstr, sizeof errstr);
    rd_kafka_mock_cluster_t* mock =
        owner != nullptr ? rd_kafka_mock_cluster_new(owner, 3) : nullptr;
    if (mock == nullptr || rd_kafka_mock_topic_create(mock, topic, partitions, 3) != 0) {
        std::fprintf(stderr, "cannot start the mock cluster\n");
        return 1;
    }
    const std::string brokers = rd_kafka_mock_cluster_bootstraps(mock);

    rd_kafka_conf_t* pconf = conf_for(brokers, "unused");
    rd_kafka_conf_set(pconf, "linger.ms", "20", errstr, sizeof errstr);
    rd_kafka_conf_set(pconf, "queue.buffering.max.messages", "500000", errstr, sizeof errstr);
    rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr);
    keyroute::salting_config rc;
    rc.partitions = static_cast<std::uint64_t>(partitions);
    keyroute::salting_router<keyroute::kafka_partitioner> router(rc);
    std::mt19937_64 rng(28);
    const auto t0 = keyroute::salting_router<keyroute::kafka_partitioner>::time_point(
        std::chrono::hours(480000));
    for (std::uint64_t i = 0; i < events; ++i) {
        const std::string key =
            rng() % 10 < 9 ? std::string("hot-key") : "cold-" + std::to_string(rng() % 1000);
        const auto now = t0 + std::chrono::microseconds(50 * i);  // 20,000 events/s of event time
        while (!keyroute::kafka::produce_at(producer, topic, router, now, key, std::to_string(i))) {
            rd_kafka_poll(producer, 10);  // a full queue (the decision is made: see produce_to)
        }
        rd_kafka_poll(producer, 0);
    }
    if (rd_kafka_flush(producer, 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::fprintf(stderr, "flush timed out\n");
        return 1;
    }
    rd_kafka_destroy(producer);

    std::vector<rate> plain_rates;
    std::vector<rate> batched_rates;
    std::vector<rate> queue_rates;
    std::vector<rate> ordered_rates;
    for (int r = 0; r < rounds; ++r) {
        const std::string round = std::to_string(r);
        plain_rates.push_back(
            plain(brokers, topic, partitions, events, "plain-" + round, loop::poll));
        batched_rates.push_back(
            plain(brokers, topic, partitions, events, "batched-" + round, loop::batched));
        queue_rates.push_back(
            plain(brokers, topic, partitions, events, "queues-" + round, loop::per_partition));
        ordered_rates.push_back(ordered(brokers, topic, events, "ordered-" + round));
        std::printf(
            "round %d: events/s (CPU us/event): plain loop %.0f (%.2f), batched %.0f (%.2f), "
            "per-partition queues %.0f (%.2f), ordered_consumer %.0f (%.2f)\n",
            r, plain_rates.back().per_second, plain_rates.back().cpu_us,
            batched_rates.back().per_second, batched_rates.back().cpu_us,
            queue_rates.back().per_second, queue_rates.back().cpu_us,
            ordered_rates.back().per_second, ordered_rates.back().cpu_us);
        if (plain_rates.back().per_second < 0 || batched_rates.back().per_second < 0 ||
            queue_rates.back().per_second < 0 || ordered_rates.back().per_second < 0) {
            std::fprintf(stderr, "a read did not see every event once\n");
            return 1;
        }
    }
    const double p = median(plain_rates, &rate::per_second);
    const double b = median(batched_rates, &rate::per_second);
    const double q = median(queue_rates, &rate::per_second);
    const double o = median(ordered_rates, &rate::per_second);
    std::printf(
        "%llu events, %d partitions, fetch.wait.max.ms %ld, medians of %d rounds: plain %.0f/s, "
        "batched %.0f/s, per-partition queues %.0f/s, ordered %.0f/s; ordered_consumer over "
        "each: %.2f, %.2f, %.2f\n",
        static_cast<unsigned long long>(events), partitions, fetch_wait_ms(), rounds, p, b, q, o,
        o / p, o / b, o / q);
    std::printf(
        "CPU us/event of the whole process (mock brokers included), medians: plain %.2f, batched "
        "%.2f, per-partition queues %.2f, ordered %.2f\n",
        median(plain_rates, &rate::cpu_us), median(batched_rates, &rate::cpu_us),
        median(queue_rates, &rate::cpu_us), median(ordered_rates, &rate::cpu_us));
    rd_kafka_mock_cluster_destroy(mock);
    rd_kafka_destroy(owner);
    return 0;
}
