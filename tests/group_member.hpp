#pragma once

// One member of a keyroute::kafka::ordered_group run in a child process against the mock cluster
// of the parent (the ordered_group tests and bench/bench_group.cpp). apply() appends "key value"
// lines to one file per home; the home's checkpoint stores the file's length and a takeover cuts
// the file back to it, the pattern group_handlers documents for exactly-once apply.

#include "child_process.hpp"
#include "kafka_mock.hpp"
#include "ordered_consumer_check.hpp"

#include <keyroute/kafka/ordered_group.hpp>
#include <keyroute/partitioner.hpp>

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace keyroute_test::kafka {

namespace fs = std::filesystem;

/// Creates `topic` and group `group`'s repartition and changelog topics on it, all with
/// `partitions` partitions.
inline void create_group_topics(const mock_cluster& cluster, const std::string& group,
                                const std::string& topic, int partitions, int replication = 3) {
    cluster.create_topic(topic, partitions, replication);
    cluster.create_topic(keyroute::kafka::default_repartition_topic(group, topic), partitions,
                         replication);
    cluster.create_topic(keyroute::kafka::default_changelog_topic(group, topic), partitions,
                         replication);
}

/// The apply output: one file per home partition, owned while the member owns the home.
class home_files {
public:
    explicit home_files(fs::path dir) : m_dir(std::move(dir)) {}
    home_files(const home_files&) = delete;
    auto operator=(const home_files&) -> home_files& = delete;
    ~home_files() {
        for (auto& [h, f] : m_files) std::fclose(f);
    }

    [[nodiscard]] auto path(std::int32_t home) const -> fs::path {
        return m_dir / ("home-" + std::to_string(home) + ".out");
    }

    /// Cuts the file back to the checkpoint's length (none: empty) and opens it for appending.
    void restore(std::int32_t home, const std::string* state) {
        release(home);
        const std::uintmax_t length = state != nullptr ? std::stoull(*state) : 0;
        if (!fs::exists(path(home))) std::ofstream(path(home)).close();
        fs::resize_file(path(home), length);
        std::FILE* f = std::fopen(path(home).c_str(), "ab");
        if (f == nullptr) throw std::runtime_error("cannot open " + path(home).string());
        m_files[home] = f;
    }
    auto save(std::int32_t home) -> std::string {
        std::FILE* f = file(home);
        std::fflush(f);
        return std::to_string(fs::file_size(path(home)));
    }
    void release(std::int32_t home) {
        const auto it = m_files.find(home);
        if (it == m_files.end()) return;
        std::fclose(it->second);
        m_files.erase(it);
    }
    void write(const keyroute::kafka::group_event& e) {
        std::fprintf(file(e.home), "%.*s %.*s\n", static_cast<int>(e.key.size()), e.key.data(),
                     static_cast<int>(e.value.size()), e.value.data());
    }

private:
    auto file(std::int32_t home) -> std::FILE* {
        const auto it = m_files.find(home);
        if (it == m_files.end()) throw std::runtime_error("apply for a home not restored");
        return it->second;
    }
    fs::path m_dir;
    std::map<std::int32_t, std::FILE*> m_files;
};

/// What a member child does.
struct member_options {
    std::string bootstraps;
    std::string topic;
    std::string group = "ordered-group";
    fs::path dir;  ///< outputs, and the "stop" file that ends the members
    int id = 0;
    /// process()'s cost: a sleep of `cost * batch` after every `batch` events processed.
    std::chrono::microseconds cost{0};
    int batch = 50;
    std::chrono::milliseconds commit_interval{200};
};

/// The member's counters and when it processed its first and last event (ms since the epoch),
/// as it writes them to member-<id>.stats at a clean stop.
struct member_report {
    std::uint64_t processed = 0;
    std::uint64_t forwarded = 0;
    std::uint64_t applied = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t gaps = 0;
    std::uint64_t late = 0;
    std::uint64_t out_of_order = 0;
    std::int64_t first_ms = 0;
    std::int64_t last_ms = 0;
};

inline auto now_ms() -> std::int64_t {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

inline auto stats_path(const fs::path& dir, int id) -> fs::path {
    return dir / ("member-" + std::to_string(id) + ".stats");
}

/// Runs one member until the stop file appears; its exit status (0: stopped cleanly).
inline auto run_member(const member_options& o) -> int {
    try {
        home_files files(o.dir);
        member_report r;
        keyroute::kafka::ordered_group_config config;
        config.topic = o.topic;
        config.commit_interval = o.commit_interval;
        keyroute::kafka::group_handlers on;
        int in_batch = 0;
        on.process = [&](const keyroute::kafka::group_event& e) {
            if (r.first_ms == 0) r.first_ms = now_ms();
            if (++in_batch == o.batch) {
                in_batch = 0;
                std::this_thread::sleep_for(o.cost * o.batch);
            }
            r.last_ms = now_ms();
            return std::string(e.value);
        };
        on.apply = [&](const keyroute::kafka::group_event& e) { files.write(e); };
        on.save_state = [&](std::int32_t h) { return files.save(h); };
        on.restore_state = [&](std::int32_t h, const std::string* s) { files.restore(h, s); };
        on.release = [&](std::int32_t h) { files.release(h); };
        keyroute::kafka::ordered_group<keyroute::kafka_partitioner> member(
            consumer_conf(o.bootstraps, o.group,
                          {{"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "300"}}),
            config, on);
        std::size_t owned = 0;
        std::size_t turns = 0;
        while (!fs::exists(o.dir / "stop")) {
            member.poll(std::chrono::milliseconds(20));
            if (std::getenv("KEYROUTE_GROUP_DEBUG") != nullptr && ++turns % 50 == 0) {
                const auto& st = member.stats();
                std::fprintf(
                    stderr,
                    "member %d: read %llu processed %llu fwd %llu recv %llu applied %llu dup %llu "
                    "refused %llu gaps %llu commits %llu skipped %llu errors %llu\n",
                    o.id, (unsigned long long)st.read, (unsigned long long)st.processed,
                    (unsigned long long)st.forwarded, (unsigned long long)st.received,
                    (unsigned long long)st.applied, (unsigned long long)st.duplicates,
                    (unsigned long long)st.refused, (unsigned long long)st.gaps,
                    (unsigned long long)st.commits, (unsigned long long)st.skipped_commits,
                    (unsigned long long)st.consume_errors);
                for (const auto& m : member.metrics()) {
                    if (m.held_events > 0 || m.source_lag > 0 || m.repartition_lag > 0)
                        std::fprintf(stderr, "  home %d held %zu slag %lld rlag %lld wlag %lld\n",
                                     m.home, m.held_events, (long long)m.source_lag,
                                     (long long)m.repartition_lag,
                                     (long long)m.watermark_lag.count());
                }
            }
            if (member.homes().size() != owned) {  // for a bench that waits for the group
                owned = member.homes().size();
                std::ofstream(o.dir / ("member-" + std::to_string(o.id) + ".homes")) << owned;
            }
        }
        member.close();
        const auto& s = member.stats();
        std::ofstream(stats_path(o.dir, o.id))
            << s.processed << ' ' << s.forwarded << ' ' << s.applied << ' ' << s.duplicates << ' '
            << s.gaps << ' ' << s.late << ' ' << s.out_of_order << ' ' << r.first_ms << ' '
            << r.last_ms << '\n'
            << "received " << s.received << " commits " << s.commits << " skipped "
            << s.skipped_commits << " assignments " << s.assignments << " refused " << s.refused
            << " read " << s.read << '\n';
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "member %d: %s\n", o.id, e.what());
        return 2;
    }
}

/// member_options as a child's arguments, and back.
inline auto member_args(const member_options& o) -> std::vector<std::string> {
    return {o.bootstraps,
            o.topic,
            o.group,
            o.dir.string(),
            std::to_string(o.id),
            std::to_string(o.cost.count()),
            std::to_string(o.batch),
            std::to_string(o.commit_interval.count())};
}
inline auto member_from_args(const std::vector<std::string>& a) -> member_options {
    if (a.size() != 8) throw std::invalid_argument("a member takes 8 arguments");
    member_options o;
    o.bootstraps = a[0];
    o.topic = a[1];
    o.group = a[2];
    o.dir = a[3];
    o.id = std::stoi(a[4]);
    o.cost = std::chrono::microseconds(std::stoll(a[5]));
    o.batch = std::stoi(a[6]);
    o.commit_interval = std::chrono::milliseconds(std::stoll(a[7]));
    return o;
}

KEYROUTE_TEST_CHILD(group_member, [](const std::vector<std::string>& args) {
    return run_member(member_from_args(args));
});

/// Starts a member child; its pid.
inline auto start_member(const member_options& o) -> pid_t {
    return keyroute_test::spawn_child("group_member", member_args(o));
}

inline auto read_report(const fs::path& dir, int id) -> member_report {
    member_report r;
    std::ifstream in(stats_path(dir, id));
    in >> r.processed >> r.forwarded >> r.applied >> r.duplicates >> r.gaps >> r.late >>
        r.out_of_order >> r.first_ms >> r.last_ms;
    return r;
}

/// Every line applied so far, home by home.
inline auto read_applied(const fs::path& dir, int partitions) -> std::vector<seen> {
    std::vector<seen> out;
    for (int h = 0; h < partitions; ++h) {
        std::ifstream in(dir / ("home-" + std::to_string(h) + ".out"));
        std::string key;
        std::string value;
        while (in >> key >> value) out.push_back(seen{key, value, h, 0, {}, false});
    }
    return out;
}

inline auto count_applied(const fs::path& dir, int partitions) -> std::size_t {
    std::size_t n = 0;
    for (int h = 0; h < partitions; ++h) {
        std::ifstream in(dir / ("home-" + std::to_string(h) + ".out"));
        std::string line;
        while (std::getline(in, line)) ++n;
    }
    return n;
}

}  // namespace keyroute_test::kafka
