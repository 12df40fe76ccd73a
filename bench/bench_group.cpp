// The process stage of keyroute::kafka::ordered_group with 1 and with N members (bench/README.md,
// "ordered_group"):
//
//     bench_group [events [members [cost_us]]]     (defaults: 40000 4 100)
//
// On librdkafka's mock cluster (3 brokers, a 32-partition topic), for 1 and then `members`
// members, each in its own child process: the members join an empty group and wait until the
// assignment covers every partition, then the parent produces `events` events through the
// salting router (a 90% hot key, 2,000 cold keys), and every member's process() sleeps
// `cost_us` microseconds per event (a sleep per batch of 50). The process stage's throughput is
// the events processed over the time from the first process() call to the last, across the
// members; the run ends when apply() has seen every event. Prints both and their ratio; exit
// status 1 when apply() did not see every event exactly once in order.
#include "group_member.hpp"
#include "kafka_mock.hpp"
#include "kafka_stream.hpp"
#include "ordered_consumer_check.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace kt = keyroute_test::kafka;
namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

constexpr int partitions = 32;

struct outcome {
    double events_per_second = 0;
    double seconds = 0;
    std::uint64_t processed = 0;
    bool ok = false;
};

auto owned_homes(const fs::path& dir, int members) -> int {
    int sum = 0;
    for (int id = 0; id < members; ++id) {
        std::ifstream in(dir / ("member-" + std::to_string(id) + ".homes"));
        int n = 0;
        if (in >> n) sum += n;
    }
    return sum;
}

auto run(kt::mock_cluster& cluster, const std::string& topic, const kt::stream& s, int members,
         std::chrono::microseconds cost) -> outcome {
    outcome out;
    kt::create_group_topics(cluster, "bench-" + topic, topic, partitions);
    const fs::path dir = fs::temp_directory_path() /
                         ("keyroute_bench_group_" + topic + "_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<pid_t> pids;
    for (int id = 0; id < members; ++id) {
        kt::member_options o;
        o.bootstraps = cluster.bootstraps();
        o.topic = topic;
        o.group = "bench-" + topic;
        o.dir = dir;
        o.id = id;
        o.cost = cost;
        pids.push_back(kt::start_member(o));
    }
    // Every member in the group and every partition assigned before the first event.
    const auto join_deadline = steady::now() + std::chrono::seconds(60);
    while (owned_homes(dir, members) != partitions && steady::now() < join_deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    bool all_busy = true;
    for (int id = 0; id < members; ++id) {
        all_busy = all_busy && fs::exists(dir / ("member-" + std::to_string(id) + ".homes"));
    }
    if (owned_homes(dir, members) == partitions && all_busy) {
        kt::router_type router(kt::router_config(partitions));
        kt::produce_stream(cluster.bootstraps(), topic, router, s);
        const auto deadline = steady::now() + std::chrono::seconds(300);
        while (kt::count_applied(dir, partitions) < s.keys.size() && steady::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    } else {
        std::fprintf(stderr, "the group did not form within 60 s\n");
    }
    std::ofstream(dir / "stop").close();
    bool clean = true;
    for (const pid_t pid : pids) {
        int status = 0;
        waitpid(pid, &status, 0);
        clean = clean && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    std::int64_t last = 0;
    for (int id = 0; id < members; ++id) {
        const auto r = kt::read_report(dir, id);
        out.processed += r.processed;
        if (r.processed > 0) {
            first = std::min(first, r.first_ms);
            last = std::max(last, r.last_ms);
        }
    }
    out.seconds = last > first ? static_cast<double>(last - first) / 1000.0 : 0.0;
    out.events_per_second = out.seconds > 0 ? static_cast<double>(out.processed) / out.seconds : 0;
    const auto applied = kt::read_applied(dir, partitions);
    out.ok = clean && applied.size() == s.keys.size() && kt::order_problems(applied, s).empty();
    fs::remove_all(dir);
    return out;
}

}  // namespace

auto main(int argc, char** argv) -> int {
    const std::size_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 40000;
    const int members = argc > 2 ? std::atoi(argv[2]) : 4;
    const auto cost = std::chrono::microseconds(argc > 3 ? std::atoll(argv[3]) : 100);
    if (events < 4 || members < 1) {
        std::fprintf(stderr, "usage: bench_group [events >= 4 [members >= 1 [cost_us]]]\n");
        return 2;
    }
    kt::mock_cluster cluster(3);
    const kt::stream s = kt::skewed_stream(events / 4, 4, 0.9, 2000, 20261203);
    std::printf("ordered_group, process stage: %zu events, 32 partitions, %lld us per event\n",
                s.keys.size(), static_cast<long long>(cost.count()));
    const outcome one = run(cluster, "bench1", s, 1, cost);
    std::printf("  1 member : %9.0f events/s (%.2f s)%s\n", one.events_per_second, one.seconds,
                one.ok ? "" : "  APPLY CHECK FAILED");
    const outcome many =
        run(cluster, "bench-" + std::to_string(members) + "-members", s, members, cost);
    std::printf("  %d members: %9.0f events/s (%.2f s)%s\n", members, many.events_per_second,
                many.seconds, many.ok ? "" : "  APPLY CHECK FAILED");
    if (one.events_per_second > 0) {
        std::printf("  speed-up  : %.2fx\n", many.events_per_second / one.events_per_second);
    }
    return one.ok && many.ok ? 0 : 1;
}
