// Prints the tables of bench/README.md from Google Benchmark JSON output (the medians of
// --benchmark_repetitions runs) of bench_partitioners and bench_router, and checks the targets:
//
//   bench_summary partitioners.json router.json
//
// Benchmark names are "<group>/<scheme>/<key bytes>/real_time/threads:<n>". Two times per event:
// CPU time (Google Benchmark's cpu_time: all threads' CPU seconds / all events), which time
// slices taken by other processes do not inflate, and wall-clock time per event per core
// (1e9 * threads / items_per_second). The tables and targets use CPU time; the scaling table
// shows both, because on a machine shared with other jobs the wall-clock figure mostly measures
// how much of the second core the other jobs left.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using object = std::map<std::string, std::string>;

// A tolerant reader for the flat objects of the "benchmarks" array (all Google Benchmark writes).
class reader {
public:
    explicit reader(std::string text) : m_s(std::move(text)) {}

    auto benchmarks() -> std::vector<object> {
        std::vector<object> out;
        const std::size_t at = m_s.find("\"benchmarks\"");
        if (at == std::string::npos) return out;
        m_i = m_s.find('[', at);
        if (m_i == std::string::npos) return out;
        ++m_i;
        while (true) {
            skip();
            if (m_i >= m_s.size() || m_s[m_i] == ']') break;
            if (m_s[m_i] == ',') {
                ++m_i;
                continue;
            }
            if (m_s[m_i] != '{') break;
            out.push_back(parse_object());
        }
        return out;
    }

private:
    void skip() {
        while (m_i < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_i])) != 0) ++m_i;
    }

    auto parse_string() -> std::string {
        std::string v;
        ++m_i;  // opening quote
        while (m_i < m_s.size() && m_s[m_i] != '"') {
            if (m_s[m_i] == '\\' && m_i + 1 < m_s.size()) ++m_i;
            v += m_s[m_i++];
        }
        ++m_i;
        return v;
    }

    auto parse_value() -> std::string {
        skip();
        if (m_s[m_i] == '"') return parse_string();
        if (m_s[m_i] == '{' || m_s[m_i] == '[') {  // nested: skipped
            int depth = 0;
            do {
                if (m_s[m_i] == '{' || m_s[m_i] == '[') ++depth;
                if (m_s[m_i] == '}' || m_s[m_i] == ']') --depth;
                ++m_i;
            } while (m_i < m_s.size() && depth > 0);
            return {};
        }
        const std::size_t start = m_i;
        while (m_i < m_s.size() && m_s[m_i] != ',' && m_s[m_i] != '}') ++m_i;
        std::string v = m_s.substr(start, m_i - start);
        while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back())) != 0) v.pop_back();
        return v;
    }

    auto parse_object() -> object {
        object o;
        ++m_i;
        while (true) {
            skip();
            if (m_i >= m_s.size()) break;
            if (m_s[m_i] == '}') {
                ++m_i;
                break;
            }
            if (m_s[m_i] == ',') {
                ++m_i;
                continue;
            }
            const std::string key = parse_string();
            skip();
            ++m_i;  // colon
            o[key] = parse_value();
        }
        return o;
    }

    std::string m_s;
    std::size_t m_i = 0;
};

struct result {
    double cpu_ns = 0;   // CPU nanoseconds per event
    double wall_ns = 0;  // wall-clock nanoseconds per event per core
};

// (group/scheme, size, threads) -> median result
using table = std::map<std::tuple<std::string, int, int>, result>;

auto load(const char* path, table& t) -> bool {
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "bench_summary: cannot open %s\n", path);
        return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    for (const object& o : reader(ss.str()).benchmarks()) {
        const auto agg = o.find("aggregate_name");
        if (agg == o.end() || agg->second != "median") continue;
        const std::string run = o.count("run_name") != 0 ? o.at("run_name") : o.at("name");
        // "<group>/<scheme>/<size>/real_time/threads:<n>"
        std::vector<std::string> parts;
        std::stringstream rs(run);
        for (std::string p; std::getline(rs, p, '/');) parts.push_back(p);
        if (parts.size() < 4 || o.count("items_per_second") == 0) continue;
        const int size = std::atoi(parts[2].c_str());
        const std::string& last = parts.back();
        const int threads = last.rfind("threads:", 0) == 0 ? std::atoi(last.c_str() + 8) : 1;
        result r;
        r.wall_ns = 1e9 * threads / std::strtod(o.at("items_per_second").c_str(), nullptr);
        const std::string unit = o.count("time_unit") != 0 ? o.at("time_unit") : "ns";
        const double scale = unit == "us" ? 1e3 : unit == "ms" ? 1e6 : unit == "s" ? 1e9 : 1.0;
        r.cpu_ns = std::strtod(o.at("cpu_time").c_str(), nullptr) * scale;
        t[{parts[0] + "/" + parts[1], size, threads}] = r;
    }
    return true;
}

const int sizes[] = {8, 16, 36, 128, 1024};

auto get(const table& t, const std::string& name, int size, int threads) -> const result* {
    const auto it = t.find({name, size, threads});
    return it == t.end() ? nullptr : &it->second;
}

auto names_with_prefix(const table& t, const std::string& prefix) -> std::vector<std::string> {
    std::vector<std::string> names;
    for (const auto& [key, r] : t) {
        const std::string& name = std::get<0>(key);
        if (name.rfind(prefix, 0) == 0 &&
            std::find(names.begin(), names.end(), name) == names.end()) {
            names.push_back(name);
        }
    }
    return names;
}

void header(const char* first) {
    std::printf("| %s |", first);
    for (const int s : sizes) std::printf(" %d B |", s);
    std::printf("\n|---|");
    for (std::size_t i = 0; i < std::size(sizes); ++i) std::printf("---|");
    std::printf("\n");
}

// ns per event at 1 thread, with the ratio to `base` (same size) in parentheses.
void time_table(const table& t, const std::vector<std::string>& names, const std::string& base) {
    header("scheme (CPU ns per event, 1 thread; x = time / baseline)");
    for (const std::string& n : names) {
        std::printf("| %s |", n.c_str());
        for (const int s : sizes) {
            const result* r = get(t, n, s, 1);
            const result* b = get(t, base, s, 1);
            if (r == nullptr) {
                std::printf(" - |");
            } else if (b == nullptr || n == base) {
                std::printf(" %.1f |", r->cpu_ns);
            } else {
                std::printf(" %.1f (%.2fx) |", r->cpu_ns, r->cpu_ns / b->cpu_ns);
            }
        }
        std::printf("\n");
    }
}

// Per-core throughput at 2 threads as a share of 1 thread's (t1 / t2 per core): by CPU time,
// then by wall-clock time.
void scaling_table(const table& t, const std::vector<std::string>& names) {
    header("scheme (2 threads' per-core throughput / 1 thread's: CPU time, wall clock)");
    for (const std::string& n : names) {
        std::printf("| %s |", n.c_str());
        for (const int s : sizes) {
            const result* r1 = get(t, n, s, 1);
            const result* r2 = get(t, n, s, 2);
            if (r1 == nullptr || r2 == nullptr) {
                std::printf(" - |");
            } else {
                std::printf(" %.0f%%, %.0f%% |", 100 * r1->cpu_ns / r2->cpu_ns,
                            100 * r1->wall_ns / r2->wall_ns);
            }
        }
        std::printf("\n");
    }
}

// The worst (largest) ratio a/b over sizes and the listed thread counts, with where it is.
struct worst {
    double ratio = 0;
    std::string where;
};

void consider(worst& w, double ratio, const std::string& where) {
    if (ratio > w.ratio) {
        w.ratio = ratio;
        w.where = where;
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_summary results.json...\n");
        return 2;
    }
    table t;
    for (int i = 1; i < argc; ++i) {
        if (!load(argv[i], t)) return 1;
    }
    std::vector<std::string> targets;
    const auto statics = names_with_prefix(t, "static/");
    if (!statics.empty()) {
        std::vector<std::string> all = statics;
        for (const auto& n : names_with_prefix(t, "librdkafka/")) all.push_back(n);
        for (const auto& n : names_with_prefix(t, "resize/")) all.push_back(n);
        std::printf("### Partitioners, 100 partitions, uniform random keys\n\n");
        time_table(t, all, "static/xxh3_alone");
        std::printf("\n");
        scaling_table(t, all);
        std::printf("\n");
        // Targets: the default hash_partitioner<> (XXH3, fold32 %) within 1.3x XXH3 alone; kafka
        // at least librdkafka's speed: CPU time per key on one thread (a per-core cost; the
        // 2-thread cells are printed beside it, and the scaling table covers threads). XXH3
        // alone is timed twice (called out of line, and inlined into the timed loop, as the
        // partitioner's route() inlines it); the target is judged against the faster of the two.
        // The opt-in reductions are in the table, not the target.
        const auto static_target = [&](int threads, worst& w, worst& w_call, worst& k) {
            for (const int s : sizes) {
                const std::string where = std::to_string(s) + " B";
                const result* r = get(t, "static/hash_partitioner", s, threads);
                const result* call = get(t, "static/xxh3_alone", s, threads);
                const result* inl = get(t, "static/xxh3_inlined", s, threads);
                if (r != nullptr && call != nullptr) {
                    const double floor =
                        inl != nullptr ? std::min(call->cpu_ns, inl->cpu_ns) : call->cpu_ns;
                    consider(w, r->cpu_ns / floor, where);
                    consider(w_call, r->cpu_ns / call->cpu_ns, where);
                }
                const result* kr = get(t, "static/kafka_partitioner", s, threads);
                const result* kb = get(t, "librdkafka/murmur2", s, threads);
                if (kr != nullptr && kb != nullptr) consider(k, kr->cpu_ns / kb->cpu_ns, where);
            }
        };
        worst w1;
        worst w1_call;
        worst k1;
        worst w2;
        worst w2_call;
        worst k2;
        static_target(1, w1, w1_call, k1);
        static_target(2, w2, w2_call, k2);
        char line[640];
        std::snprintf(line, sizeof line,
                      "hash_partitioner<> (XXH3, fold32 %%), CPU time per key within 1.3x XXH3 "
                      "alone, 1 thread: %s, worst %.2fx the faster XXH3 floor (%s), %.2fx the "
                      "out-of-line call (%s); at 2 threads %.2fx (%s) and %.2fx (%s)",
                      w1.ratio <= 1.3 ? "MET" : "MISSED", w1.ratio, w1.where.c_str(), w1_call.ratio,
                      w1_call.where.c_str(), w2.ratio, w2.where.c_str(), w2_call.ratio,
                      w2_call.where.c_str());
        targets.emplace_back(line);
        if (!k1.where.empty()) {
            std::snprintf(line, sizeof line,
                          "kafka_partitioner at least as fast as librdkafka's murmur2, 1 thread: "
                          "%s, worst time ratio %.2fx (%s); at 2 threads %.2fx (%s)",
                          k1.ratio <= 1.0 ? "MET" : "MISSED", k1.ratio, k1.where.c_str(), k2.ratio,
                          k2.where.c_str());
            targets.emplace_back(line);
        }
    }
    bool any_router = false;
    worst router_cost;
    double worst_scaling = 10;
    std::string worst_scaling_where;
    double worst_wall_scaling = 10;
    std::string worst_wall_where;
    for (const char* trace : {"zipf", "tenant90", "uniform"}) {
        const auto names = names_with_prefix(t, std::string(trace) + "/");
        if (names.empty()) continue;
        any_router = true;
        std::vector<std::string> ordered;
        for (const char* s : {"xxh3_alone", "hash_partitioner", "keyroute_route_now",
                              "keyroute_route_clock", "seed_router_md5"}) {
            const std::string n = std::string(trace) + "/" + s;
            if (std::find(names.begin(), names.end(), n) != names.end()) ordered.push_back(n);
        }
        std::printf("### Router, trace %s\n\n", trace);
        time_table(t, ordered, std::string(trace) + "/xxh3_alone");
        std::printf("\n");
        scaling_table(t, ordered);
        std::printf("\n");
        header("seed router time / keyroute route(key, now) time, 1 thread");
        std::printf("| %s |", trace);
        for (const int s : sizes) {
            const result* seed = get(t, std::string(trace) + "/seed_router_md5", s, 1);
            const result* kr = get(t, std::string(trace) + "/keyroute_route_now", s, 1);
            if (seed != nullptr && kr != nullptr) {
                std::printf(" %.1fx |", seed->cpu_ns / kr->cpu_ns);
            } else {
                std::printf(" - |");
            }
        }
        std::printf("\n\n");
        for (const char* scheme : {"keyroute_route_now", "keyroute_route_clock"}) {
            const std::string n = std::string(trace) + "/" + scheme;
            for (const int s : sizes) {
                const result* r1 = get(t, n, s, 1);
                const result* r2 = get(t, n, s, 2);
                const result* b = get(t, std::string(trace) + "/xxh3_alone", s, 1);
                if (r1 != nullptr && b != nullptr) {
                    consider(router_cost, r1->cpu_ns / b->cpu_ns,
                             n + " " + std::to_string(s) + " B");
                }
                if (r1 != nullptr && r2 != nullptr) {
                    if (r1->cpu_ns / r2->cpu_ns < worst_scaling) {
                        worst_scaling = r1->cpu_ns / r2->cpu_ns;
                        worst_scaling_where = n + " " + std::to_string(s) + " B";
                    }
                    if (r1->wall_ns / r2->wall_ns < worst_wall_scaling) {
                        worst_wall_scaling = r1->wall_ns / r2->wall_ns;
                        worst_wall_where = n + " " + std::to_string(s) + " B";
                    }
                }
            }
        }
    }
    if (any_router) {
        char line[512];
        std::snprintf(line, sizeof line,
                      "router, CPU time within 3x XXH3 alone (1 thread): %s, worst %.2fx (%s)",
                      router_cost.ratio <= 3 ? "MET" : "MISSED", router_cost.ratio,
                      router_cost.where.c_str());
        targets.emplace_back(line);
        std::snprintf(line, sizeof line,
                      "router, 2 threads at >= 80%% of 1 thread's per-core throughput, by CPU "
                      "time: %s, worst %.0f%% (%s)",
                      worst_scaling >= 0.8 ? "MET" : "MISSED", 100 * worst_scaling,
                      worst_scaling_where.c_str());
        targets.emplace_back(line);
        std::snprintf(
            line, sizeof line,
            "the same by wall clock (includes time other processes took): %s, worst %.0f%% (%s)",
            worst_wall_scaling >= 0.8 ? "MET" : "MISSED", 100 * worst_wall_scaling,
            worst_wall_where.c_str());
        targets.emplace_back(line);
    }
    std::printf("### Targets\n\n");
    for (const auto& line : targets) std::printf("- %s\n", line.c_str());
    return 0;
}
