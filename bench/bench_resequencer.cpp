// Resequencer throughput per core: events pushed per second through keyroute::resequencer, on
// pre-generated consumer read orders (generation is not timed):
//   pass_through  : unstamped events only (the fast path)
//   in_order      : every event stamped, nothing out of order
//   reordered_1pct: half the keys hot (stamped, 16 partitions); 1% of all events (2% of the
//                   stamped ones) reach the consumer late, through another partition
//   shuffled_64   : every event stamped and salted over 64 partitions, read in random batches
// Counters: `held` = fraction of events that had to wait, `max_held` = most events held at once
// (sampled every 256 events), `gaps` = gaps given up (0 expected).
// Run: build/bench/bench_resequencer (see bench/README.md).
#include <keyroute/resequencer.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr std::size_t events_per_run = std::size_t{1} << 18;
constexpr std::size_t key_count = 1000;

struct input {
    std::uint32_t key;
    keyroute::stamp st;
    keyroute::origin source;
};

struct workload {
    std::vector<std::string> keys;
    std::vector<input> reads;  // in consumer read order
};

auto make_keys() -> std::vector<std::string> {
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < key_count; ++i) {
        std::string k = "key-" + std::to_string(1000000000000ULL + i);  // 17 bytes
        keys.push_back(std::move(k));
    }
    return keys;
}

struct produced {
    input in;
    std::uint64_t arrival;
    std::uint64_t order;
};

// Builds partition logs from (arrival, production order) and gives each read its offset; the
// consumer then reads partitions either in arrival order (`batches` = 0) or in random batches.
auto consume(std::vector<produced> items, std::uint32_t partitions, std::size_t batches,
             std::mt19937_64& rng) -> std::vector<input> {
    std::sort(items.begin(), items.end(), [](const produced& a, const produced& b) {
        return a.arrival != b.arrival ? a.arrival < b.arrival : a.order < b.order;
    });
    std::vector<std::vector<input>> logs(partitions);
    std::vector<input> reads;
    for (auto& p : items) {
        auto& log = logs[p.in.source.partition];
        p.in.source.offset = static_cast<std::int64_t>(log.size());
        log.push_back(p.in);
        if (batches == 0) reads.push_back(p.in);
    }
    if (batches == 0) return reads;
    // Round robin over the partitions in a random order per round, a random batch from each
    // (as a fetch returns): partitions stay within about one batch of each other.
    std::vector<std::size_t> pos(partitions, 0);
    std::vector<std::uint32_t> round(partitions);
    for (std::uint32_t q = 0; q < partitions; ++q) round[q] = q;
    while (reads.size() < items.size()) {
        std::shuffle(round.begin(), round.end(), rng);
        for (const std::uint32_t q : round) {
            const std::size_t n = 1 + rng() % batches;
            for (std::size_t i = 0; i < n && pos[q] < logs[q].size(); ++i) {
                reads.push_back(logs[q][pos[q]++]);
            }
        }
    }
    return reads;
}

auto make_workload(int kind) -> workload {
    std::mt19937_64 rng(42);
    workload w;
    w.keys = make_keys();
    const std::uint32_t partitions = kind == 3 ? 64 : 16;
    std::vector<std::uint64_t> next_seq(key_count, 0);
    std::vector<std::uint64_t> last_arrival(partitions, 0);
    std::vector<produced> items;
    for (std::size_t i = 0; i < events_per_run; ++i) {
        const auto k = static_cast<std::uint32_t>(rng() % key_count);
        const auto home = static_cast<std::uint32_t>(keyroute::xxh3{}(w.keys[k]) % partitions);
        input in{k, keyroute::stamp{}, keyroute::origin{home, -1}};
        std::uint64_t arrival = i;
        const bool stamped = kind == 1 || kind == 3 || (kind == 2 && k % 2 == 0);
        if (stamped) {
            in.st = keyroute::stamp{1, 0, 1 + k, next_seq[k]++, kind == 3};
            if (kind == 3) {
                in.source.partition = static_cast<std::uint32_t>(rng() % partitions);
            } else if (kind == 2 && next_seq[k] > 1 && rng() % 50 == 0) {
                // In flight longer, through another partition: its key's next events (about one
                // per key_count / 2 events) overtake it.
                in.source.partition = static_cast<std::uint32_t>(rng() % partitions);
                in.st.salted = true;
                arrival += 1 + rng() % (2 * key_count);
            }
        }
        // A partition receives its on-time events in production order; a late one lands
        // wherever it arrives.
        if (arrival == i) {
            arrival = std::max(arrival, last_arrival[in.source.partition]);
            last_arrival[in.source.partition] = arrival;
        }
        items.push_back({in, arrival, i});
    }
    w.reads = consume(std::move(items), partitions, kind == 3 ? 64 : 0, rng);
    return w;
}

const workload& workload_of(int kind) {
    static std::map<int, workload> cache;
    auto it = cache.find(kind);
    if (it == cache.end()) it = cache.emplace(kind, make_workload(kind)).first;
    return it->second;
}

void BM_resequencer(benchmark::State& state, int kind) {
    const workload& w = workload_of(kind);
    keyroute::resequencer_config config;
    config.max_delay = std::chrono::milliseconds(100000);
    std::uint64_t delivered = 0;
    std::uint64_t held = 0;
    std::uint64_t gaps = 0;
    std::size_t max_held = 0;
    for (auto _ : state) {
        keyroute::resequencer<std::uint64_t> r(
            config, [&](keyroute::delivery<std::uint64_t>&& d) { delivered += d.event; },
            [&](const keyroute::gap_report&) { ++gaps; });
        std::int64_t t = 0;
        for (const input& in : w.reads) {
            ++t;
            r.push(w.keys[in.key], in.st, static_cast<std::uint64_t>(t), in.source,
                   std::chrono::milliseconds(t));
            if ((t & 255) == 0) {
                r.advance_watermark(std::chrono::milliseconds(t));
                max_held = std::max(max_held, r.held_events());
            }
        }
        r.flush();
        held += r.stats().held;
    }
    benchmark::DoNotOptimize(delivered);
    const auto events =
        static_cast<double>(state.iterations()) * static_cast<double>(w.reads.size());
    state.SetItemsProcessed(static_cast<std::int64_t>(events));
    state.counters["held"] = static_cast<double>(held) / events;
    state.counters["max_held"] = static_cast<double>(max_held);
    state.counters["gaps"] = static_cast<double>(gaps) / static_cast<double>(state.iterations());
}

}  // namespace

BENCHMARK_CAPTURE(BM_resequencer, pass_through, 0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_resequencer, in_order, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_resequencer, reordered_1pct, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_resequencer, shuffled_64, 3)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
