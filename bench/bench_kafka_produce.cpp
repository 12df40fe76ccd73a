// Client-side cost per message of producing through keyroute::kafka::produce against a producer
// that calls rd_kafka_producev itself with kafka_partitioner's partition: the enqueue only (what
// the producing thread pays), on librdkafka's in-process mock cluster with its broker down while
// timing, so nothing is sent and no librdkafka thread competes for the cores.
//
// Variants, same keys and 100-byte values, interleaved repetition by repetition:
//   producev         kafka_partitioner.route(key), then rd_kafka_producev (the baseline)
//   produce_static   keyroute::kafka::produce with a kafka_partitioner (no stamp)
//   produce_salting  keyroute::kafka::produce_at with a salting_router<kafka_partitioner>, default
//                    configuration, in its second window (the first is routed before timing)
//   decide_only      the salting router's decide() alone (no produce)
//   producev_header  the baseline plus one 16-byte header (V_HEADER): what a header costs
// Traces: Zipf 1.0 over 100k keys on 64 partitions; one tenant at 90% of 1001 keys on 100
// partitions (bench/workloads.hpp). After the runs, a table: the best ns/message of each variant
// over the repetitions, produce/producev throughput ratios, and the fraction of stamped events.
//
//     bench_kafka_produce [--reps=N] [google benchmark flags]

#include "workloads.hpp"

#include <keyroute/kafka/rdkafka.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <benchmark/benchmark.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <malloc.h>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t trace_events = std::size_t{1} << 20U;
constexpr std::size_t trace_mask = trace_events - 1;
// A router window holds window_events events of the trace (the event clock advances a window per
// window_events); a run times one whole window, the second, so the stamped fraction is a
// window's (keys prove themselves anew in each window). The queue holds them all.
constexpr std::int64_t window_events = 131072;
constexpr std::int64_t timed_events = window_events;
constexpr std::size_t batch_events = 4096;  // the summary's unit of timing
constexpr std::size_t poll_every = 1024;    // rd_kafka_poll(rk, 0) as a producer would
constexpr std::size_t value_bytes = 100;

using clock_type = std::chrono::system_clock;
using router_type = keyroute::salting_router<keyroute::kafka_partitioner, clock_type>;
const clock_type::time_point t0{std::chrono::minutes(28333333)};  // a window boundary
constexpr std::chrono::minutes window{1};

enum class trace_kind { zipf, tenant90 };
enum class variant { producev, produce_static, produce_salting, decide_only, producev_header };

auto trace_name(trace_kind k) -> const char* { return k == trace_kind::zipf ? "zipf" : "tenant90"; }
auto variant_name(variant v) -> const char* {
    switch (v) {
    case variant::producev: return "producev";
    case variant::produce_static: return "produce_static";
    case variant::produce_salting: return "produce_salting";
    case variant::decide_only: return "decide_only";
    case variant::producev_header: return "producev_header";
    }
    return "?";
}

struct trace {
    const char* topic = nullptr;
    std::uint32_t partitions = 0;
    std::vector<std::string> universe;
    std::vector<std::string_view> events;
};

auto make_trace(trace_kind kind) -> trace {
    const keyroute_bench::workload wl = kind == trace_kind::zipf
                                            ? keyroute_bench::zipf(1.0, 100000, 64)
                                            : keyroute_bench::tenant90();
    trace t;
    t.topic = trace_name(kind);
    t.partitions = wl.partitions;
    t.universe = wl.keys;
    t.events.reserve(trace_events);
    std::mt19937_64 rng(20240601);
    for (std::size_t i = 0; i < trace_events; ++i)
        t.events.emplace_back(t.universe[wl.next(rng, 0)]);
    return t;
}

void must(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "bench_kafka_produce: %s\n", what.c_str());
        std::exit(1);
    }
}

void set(rd_kafka_conf_t* conf, const char* name, const std::string& value) {
    char errstr[512];
    must(rd_kafka_conf_set(conf, name, value.c_str(), errstr, sizeof errstr) == RD_KAFKA_CONF_OK,
         std::string(name) + ": " + errstr);
}

/// The mock cluster, a producer that knows both topics' partitions, the broker then set down.
struct kafka_env {
    rd_kafka_t* cluster_rk = nullptr;
    rd_kafka_mock_cluster_t* cluster = nullptr;
    rd_kafka_t* rk = nullptr;

    kafka_env() {
        char errstr[512];
        rd_kafka_conf_t* cconf = rd_kafka_conf_new();
        set(cconf, "log_level", "0");
        cluster_rk = rd_kafka_new(RD_KAFKA_PRODUCER, cconf, errstr, sizeof errstr);
        must(cluster_rk != nullptr, errstr);
        cluster = rd_kafka_mock_cluster_new(cluster_rk, 1);
        must(cluster != nullptr, "rd_kafka_mock_cluster_new");
        must(rd_kafka_mock_topic_create(cluster, "zipf", 64, 1) == RD_KAFKA_RESP_ERR_NO_ERROR,
             "topic zipf");
        must(rd_kafka_mock_topic_create(cluster, "tenant90", 100, 1) == RD_KAFKA_RESP_ERR_NO_ERROR,
             "topic tenant90");
        rd_kafka_conf_t* conf = rd_kafka_conf_new();
        set(conf, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(cluster));
        set(conf, "log_level", "0");
        set(conf, "queue.buffering.max.messages", "10000000");
        set(conf, "queue.buffering.max.kbytes", "2097151");
        set(conf, "linger.ms", "1000");
        set(conf, "message.timeout.ms", "0");  // never time out while the broker is down
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
        must(rk != nullptr, errstr);
        must(keyroute::kafka::partition_count(rk, "zipf", 10000) == 64, "zipf metadata");
        must(keyroute::kafka::partition_count(rk, "tenant90", 10000) == 100, "tenant90 metadata");
        // One message per topic delivered, so the partitions' leaders are known and connected.
        for (const char* topic : {"zipf", "tenant90"}) {
            must(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                   RD_KAFKA_V_VALUE(const_cast<char*>("x"), 1),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR,
                 "warm-up produce");
        }
        must(rd_kafka_flush(rk, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR, "warm-up flush");
        must(rd_kafka_mock_broker_set_down(cluster, 1) == RD_KAFKA_RESP_ERR_NO_ERROR,
             "broker down");
    }
    kafka_env(const kafka_env&) = delete;
    auto operator=(const kafka_env&) -> kafka_env& = delete;
    ~kafka_env() {
        drain();
        rd_kafka_destroy(rk);
        rd_kafka_mock_cluster_destroy(cluster);
        rd_kafka_destroy(cluster_rk);
    }

    /// Drops every queued message (outside timing).
    void drain() const {
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        for (int i = 0; i < 1000 && rd_kafka_outq_len(rk) > 0; ++i) rd_kafka_poll(rk, 1);
        must(rd_kafka_outq_len(rk) == 0, "purge left messages queued");
    }
};

kafka_env* g_env = nullptr;
trace g_traces[2];
// Per trace and variant, the best time of each batch of batch_events over the repetitions: every
// run walks the same events from the start, so batch b holds the same keys in every variant.
std::map<std::pair<trace_kind, variant>, std::vector<double>> g_best_batches;
std::map<trace_kind, double> g_stamped;  // fraction of timed events stamped

/// One run's state: the trace, the producer, the router (warmed through its first window).
struct run_state {
    const trace& t;
    variant v;
    rd_kafka_t* rk;
    std::string value = std::string(value_bytes, 'v');
    keyroute::kafka_partitioner base;
    std::unique_ptr<router_type> router;
    clock_type::duration step =
        std::chrono::duration_cast<clock_type::duration>(window) / window_events;
    std::int64_t n = 0;  // the event clock, in events
    std::int64_t failed = 0;
    std::uint64_t stamped_before = 0;

    run_state(const trace& tr, variant var, rd_kafka_t* producer)
        : t(tr),
          v(var),
          rk(producer),
          base(tr.partitions) {
        // The first window, produced through this same variant before timing, then purged:
        // the router is in its second window, and the allocator's free lists hold what this
        // variant frees, as in a producer's steady state (a run right after another variant
        // would find that one's). Every variant times the same events, the second window's.
        if (v == variant::produce_salting || v == variant::decide_only) {
            keyroute::salting_config config;
            config.partitions = t.partitions;
            config.producer_id = 1;
            config.seed = 7;
            router = std::make_unique<router_type>(config);
        }
        for (std::size_t i = 0; i < static_cast<std::size_t>(window_events); ++i) event(i);
        must(failed == 0, "the warm-up window failed to produce");
        g_env->drain();
        if (router) stamped_before = router->stats().stamped;
    }

    /// The i-th event of the run (the trace's and the event clock's n-th).
    void event(std::size_t i) {
        static constexpr char header_value[16] = {1, 0, 1, 2,  3,  4,  5,  6,
                                                  7, 8, 9, 10, 11, 12, 13, 14};
        const std::string_view key = t.events[static_cast<std::size_t>(n) & trace_mask];
        switch (v) {
        case variant::producev:
        case variant::producev_header: {
            const auto p = static_cast<std::int32_t>(base.route(key));
            const rd_kafka_resp_err_t err =
                v == variant::producev
                    ? rd_kafka_producev(
                          rk, RD_KAFKA_V_TOPIC(t.topic), RD_KAFKA_V_PARTITION(p),
                          RD_KAFKA_V_KEY(key.data(), key.size()),
                          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)
                    : rd_kafka_producev(
                          rk, RD_KAFKA_V_TOPIC(t.topic), RD_KAFKA_V_PARTITION(p),
                          RD_KAFKA_V_KEY(key.data(), key.size()),
                          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                          RD_KAFKA_V_HEADER("keyroute-stamp", header_value,
                                            static_cast<ssize_t>(sizeof header_value)),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            failed += err != RD_KAFKA_RESP_ERR_NO_ERROR ? 1 : 0;
            break;
        }
        case variant::produce_static:
            failed += keyroute::kafka::produce(rk, t.topic, base, key, value) ? 0 : 1;
            break;
        case variant::produce_salting:
            failed += keyroute::kafka::produce_at(rk, t.topic, *router, t0 + step * n, key, value)
                          ? 0
                          : 1;
            break;
        case variant::decide_only:
            benchmark::DoNotOptimize(router->decide(key, t0 + step * n));
            break;
        }
        ++n;
        if (((i + 1) & (poll_every - 1)) == 0) rd_kafka_poll(rk, 0);
    }

    /// The fraction of the `events` timed events that carried a stamp.
    [[nodiscard]] auto stamped(std::int64_t events) const -> double {
        if (!router || events == 0) return 0.0;
        return static_cast<double>(router->stats().stamped - stamped_before) /
               static_cast<double>(events);
    }

    void check(trace_kind kind) const {
        must(failed == 0, std::string(trace_name(kind)) + "/" + variant_name(v) + ": " +
                              std::to_string(failed) + " produce calls failed");
    }
};

void run(benchmark::State& state, trace_kind kind, variant v) {
    g_env->drain();
    run_state rs(g_traces[static_cast<int>(kind)], v, g_env->rk);
    std::size_t i = 0;
    std::vector<double>& best = g_best_batches[{kind, v}];
    best.resize(static_cast<std::size_t>(timed_events) / batch_events,
                std::numeric_limits<double>::infinity());
    auto batch_start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        rs.event(i);
        ++i;
        if (i % batch_events == 0) {
            const auto now = std::chrono::steady_clock::now();
            const std::size_t b = i / batch_events - 1;
            if (b < best.size()) {
                best[b] = std::min(
                    best[b], std::chrono::duration<double, std::nano>(now - batch_start).count());
            }
            batch_start = now;
        }
    }
    rs.check(kind);
    const auto iterations = static_cast<std::int64_t>(state.iterations());
    state.SetItemsProcessed(iterations);
    if (rs.router) {
        const double stamped = rs.stamped(iterations);
        state.counters["stamped"] = stamped;
        g_stamped[kind] = stamped;
    }
    g_env->drain();
}

/// The timed events of one variant, outside Google Benchmark: what `--instructions` runs under
/// callgrind (scripts/produce_instructions.sh counts the instructions inside this function).
[[gnu::noinline]] void measured_events(run_state& rs, std::size_t events) {
    for (std::size_t i = 0; i < events; ++i) rs.event(i);
}

void summary() {
    std::printf(
        "\n| trace | producev | produce (static) | produce (salting) | decide() | "
        "producev + 1 header | salting/producev | static/producev | stamped |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const trace_kind k : {trace_kind::zipf, trace_kind::tenant90}) {
        const auto ns = [k](variant v) {
            const auto it = g_best_batches.find({k, v});
            if (it == g_best_batches.end() || it->second.empty()) return 0.0;
            double total = 0;
            for (const double t : it->second) total += t;
            return total / static_cast<double>(it->second.size() * batch_events);
        };
        const double base = ns(variant::producev);
        const auto ratio = [base](double x) { return x > 0 ? base / x : 0.0; };
        std::printf(
            "| %s | %.0f ns | %.0f ns | %.0f ns | %.0f ns | %.0f ns | %.2f | %.2f | %.1f%% |\n",
            trace_name(k), base, ns(variant::produce_static), ns(variant::produce_salting),
            ns(variant::decide_only), ns(variant::producev_header),
            ratio(ns(variant::produce_salting)), ratio(ns(variant::produce_static)),
            100.0 * g_stamped[k]);
    }
    std::printf(
        "(ns/message: the sum over batches of %zu events of each batch's best time over the "
        "repetitions; ratios are throughput: producev's ns / the variant's ns)\n",
        batch_events);
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 20;
    const char* instructions = nullptr;
    std::vector<char*> args;
    for (int a = 0; a < argc; ++a) {
        if (a > 0 && std::strncmp(argv[a], "--instructions=", 15) == 0) {
            instructions = argv[a] + 15;
        } else if (a > 0 && std::strncmp(argv[a], "--reps=", 7) == 0) {
            reps = std::max(1, std::atoi(argv[a] + 7));
        } else {
            args.push_back(argv[a]);
        }
    }
    int args_count = static_cast<int>(args.size());
    // Freed message memory stays in the heap between runs: every run enqueues into memory the
    // process already touched, as a long-running producer does, instead of the first runs after
    // a purge paying the page faults of memory returned to the system.
    mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
    mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
    g_traces[0] = make_trace(trace_kind::zipf);
    g_traces[1] = make_trace(trace_kind::tenant90);
    kafka_env env;
    g_env = &env;
    if (instructions != nullptr) {  // --instructions=<trace>/<variant>: one run, no timing
        for (const trace_kind k : {trace_kind::zipf, trace_kind::tenant90}) {
            for (const variant v :
                 {variant::producev, variant::produce_static, variant::produce_salting,
                  variant::decide_only, variant::producev_header}) {
                if (std::string(trace_name(k)) + "/" + variant_name(v) != instructions) continue;
                run_state rs(g_traces[static_cast<int>(k)], v, env.rk);
                measured_events(rs, static_cast<std::size_t>(timed_events));
                rs.check(k);
                std::printf("%s: %lld events, stamped %.4f\n", instructions,
                            static_cast<long long>(timed_events), rs.stamped(timed_events));
                g_env = nullptr;
                return 0;
            }
        }
        must(false, std::string("no variant ") + instructions);
    }
    // Interleaved: every variant of a trace once per repetition, repetition after repetition.
    for (const trace_kind k : {trace_kind::zipf, trace_kind::tenant90}) {
        for (int r = 0; r < reps; ++r) {
            // Each repetition starts at another variant: none always runs first.
            const variant order[] = {variant::producev, variant::produce_salting,
                                     variant::produce_static, variant::decide_only,
                                     variant::producev_header};
            for (std::size_t j = 0; j < std::size(order); ++j) {
                const variant v = order[(j + static_cast<std::size_t>(r)) % std::size(order)];
                const std::string name = std::string(trace_name(k)) + "/" + variant_name(v) +
                                         "/rep:" + std::to_string(r);
                benchmark::RegisterBenchmark(name.c_str(),
                                             [k, v](benchmark::State& s) { run(s, k, v); })
                    ->Iterations(timed_events)
                    ->UseRealTime()
                    ->Unit(benchmark::kNanosecond);
            }
        }
    }
    benchmark::Initialize(&args_count, args.data());
    if (benchmark::ReportUnrecognizedArguments(args_count, args.data())) return 1;
    benchmark::RunSpecifiedBenchmarks();
    summary();
    g_env = nullptr;
    return 0;
}
