// keyroute::kafka::ordered_group on the mock cluster (3 brokers): a 32-partition topic produced
// by the salting router with a 90% hot key and 2,000 cold keys, members in child processes with
// a process() that costs time, and at apply() every event exactly once, in each key's production
// order (one producer lane), with no gap given up. Then the same with a member killed (SIGKILL)
// mid-run and restarted, and a fifth member joining mid-run. (test_group_member: one member in
// this process, its metrics and errors.)
#include "keyroute_catch.hpp"
#include "group_member.hpp"
#include "kafka_mock.hpp"
#include "kafka_stream.hpp"
#include "ordered_consumer_check.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace kt = keyroute_test::kafka;
namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

constexpr int partitions = 32;

struct group_run {
    kt::mock_cluster cluster{3};
    std::string topic;
    fs::path dir;
    kt::stream s;
    std::vector<pid_t> members;

    explicit group_run(const std::string& name, std::size_t per_window, std::uint64_t seed)
        : topic(name),
          dir(fs::temp_directory_path() /
              ("keyroute_group_" + name + "_" + std::to_string(getpid()))),
          s(kt::skewed_stream(per_window, 4, 0.9, 2000, seed)) {
        fs::remove_all(dir);
        fs::create_directories(dir);
        kt::create_group_topics(cluster, kt::member_options{}.group, topic, partitions);
    }
    group_run(const group_run&) = delete;
    auto operator=(const group_run&) -> group_run& = delete;
    ~group_run() {
        for (const pid_t pid : members) {
            if (pid > 0 && kill(pid, 0) == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, nullptr, 0);
            }
        }
        fs::remove_all(dir);
    }

    void produce() {
        kt::router_type router(kt::router_config(partitions));
        const auto routed = kt::produce_stream(cluster.bootstraps(), topic, router, s);
        std::size_t stamped = 0;
        for (const auto& st : routed.stamp) stamped += st ? 1 : 0;
        INFO("stamped events " << stamped << " of " << s.keys.size());
        REQUIRE(stamped > s.keys.size() / 2);  // the hot key was spread
    }

    auto options(int id) const -> kt::member_options {
        kt::member_options o;
        o.bootstraps = cluster.bootstraps();
        o.topic = topic;
        o.dir = dir;
        o.id = id;
        o.cost = std::chrono::microseconds(100);
        return o;
    }

    auto start(int id) -> pid_t {
        const pid_t pid = kt::start_member(options(id));
        REQUIRE(pid > 0);
        members.push_back(pid);
        return pid;
    }

    /// Waits until `n` lines are applied and stay so for a second (a duplicate would add one).
    void wait_applied(std::size_t n, std::chrono::seconds timeout) {
        const auto deadline = steady::now() + timeout;
        auto stable_since = steady::now();
        std::size_t last = 0;
        for (;;) {
            const auto count = kt::count_applied(dir, partitions);
            if (count != last) stable_since = steady::now();
            last = count;
            if (count >= n && steady::now() - stable_since > std::chrono::seconds(1)) return;
            INFO("applied " << count << " of " << n);
            REQUIRE(steady::now() < deadline);
            for (const pid_t pid : members) {
                int status = 0;
                REQUIRE_FALSE((pid > 0 && waitpid(pid, &status, WNOHANG) == pid));  // one died
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }

    /// Stops every live member cleanly; the number that exited with status 0 within a minute
    /// (one still running then is killed).
    auto stop() -> int {
        std::ofstream(dir / "stop").close();
        int clean = 0;
        for (pid_t& pid : members) {
            if (pid <= 0) continue;
            const int status = keyroute_test::wait_child(pid, std::chrono::seconds(60));
            if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) ++clean;
            pid = 0;
        }
        return clean;
    }

    /// The output checks, and the counters of members `ids` (those of `busy` must have
    /// processed some).
    void check_output(const std::vector<int>& ids, const std::vector<int>& busy) {
        const auto out = kt::read_applied(dir, partitions);
        CHECK(out.size() == s.keys.size());
        const auto problems = kt::order_problems(out, s);
        for (const auto& p : problems) UNSCOPED_INFO(p);
        CHECK(problems.empty());
        std::uint64_t processed = 0;
        std::uint64_t forwarded = 0;
        std::uint64_t gaps = 0;
        std::uint64_t late = 0;
        std::uint64_t duplicates = 0;
        for (const int id : busy) CHECK(kt::read_report(dir, id).processed > 0);
        for (const int id : ids) {
            const auto r = kt::read_report(dir, id);
            processed += r.processed;
            forwarded += r.forwarded;
            gaps += r.gaps;
            late += r.late + r.out_of_order;
            duplicates += r.duplicates;
            std::ifstream in(kt::stats_path(dir, id));
            std::string line;
            while (std::getline(in, line))
                std::fprintf(stderr, "member %d: %s\n", id, line.c_str());
        }
        INFO("processed " << processed << ", forwarded " << forwarded << ", duplicates dropped "
                          << duplicates);
        CHECK(forwarded > 0);
        CHECK(gaps == 0);
        CHECK(late == 0);
    }
};

}  // namespace

TEST_CASE("four members apply every event of a spread key once, in order", "[kafka][group]") {
    group_run run("group4", 5000, 17);
    run.produce();
    for (int id = 0; id < 4; ++id) run.start(id);
    run.wait_applied(run.s.keys.size(), std::chrono::seconds(120));
    CHECK(run.stop() == 4);
    run.check_output({0, 1, 2, 3}, {0, 1, 2, 3});
    std::uint64_t processed = 0;
    for (int id = 0; id < 4; ++id) processed += kt::read_report(run.dir, id).processed;
    // Every event processed; more than once only after a rebalance (a member that joined
    // late), from the oldest event a revoked home held.
    INFO("processed " << processed);
    CHECK(processed >= run.s.keys.size());
}

TEST_CASE("a member killed and restarted and a fifth joining lose and repeat nothing",
          "[kafka][group]") {
    group_run run("group_faults", 10000, 29);
    run.produce();
    for (int id = 0; id < 4; ++id) run.start(id);
    const auto seed = std::random_device{}();
    std::mt19937 rng(seed);
    const double share = std::uniform_real_distribution<double>(0.15, 0.5)(rng);
    INFO("seed " << seed << ": member 1 killed at " << share << " of the events applied");
    const auto total = run.s.keys.size();
    const auto deadline = steady::now() + std::chrono::seconds(120);
    while (static_cast<double>(kt::count_applied(run.dir, partitions)) <
           share * static_cast<double>(total)) {
        REQUIRE(steady::now() < deadline);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const auto before = kt::count_applied(run.dir, partitions);
    REQUIRE(before < total);  // mid-run
    REQUIRE(kill(run.members[1], SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(run.members[1], &status, 0) == run.members[1]);
    REQUIRE(WIFSIGNALED(status));
    run.members[1] = 0;
    run.start(1);                                           // restarted
    run.start(4);                                           // a fifth member joins
    CHECK(kt::count_applied(run.dir, partitions) < total);  // still mid-run
    run.wait_applied(total, std::chrono::seconds(150));
    CHECK(run.stop() == 5);
    // The later members may come after their share's end: only the first three must be busy.
    run.check_output({0, 1, 2, 3, 4}, {0, 2, 3});
}
