// libFuzzer target for keyroute::salting_router, driven by a fuzzed configuration and a fuzzed
// sequence of keys, event times (steps, jumps back an hour, forward a year, anywhere, the clock's
// first and last ticks; a jump of more than an hour takes effect at its second event) and
// partitions going down and up. Checked after every call:
// - every partition is below the partition count, and `home` is the base partitioner's;
// - a decision that is not salted stays home (failover off) or goes home or to an available
//   partition (failover on);
// - with an absolute threshold, a key is salted only after more than `threshold` of its events
//   in the window; with a threshold above the number of calls nothing is ever salted;
// - stats().routed equals the number of calls, salted and stamped never exceed it;
// - a bad configuration throws std::invalid_argument and nothing else.
// Build: -DKEYROUTE_BUILD_FUZZERS=ON with clang; run: fuzz_router tests/fuzz/corpus/router
#include "fuzz_input.hpp"

#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using keyroute_fuzz::input;

using router_type = keyroute::salting_router<keyroute::kafka_partitioner>;
using clock_type = std::chrono::system_clock;

constexpr std::int64_t hour_ms = 3600LL * 1000;
constexpr std::int64_t year_ms = 365LL * 24 * hour_ms;
// system_clock counts nanoseconds in 64 bits: keep event times within +-200 years of the epoch.
constexpr std::int64_t time_limit_ms = 200 * year_ms;

auto fuzzed_config(input& in, bool& bad) -> keyroute::salting_config {
    keyroute::salting_config c;
    const std::uint8_t shape = in.byte();
    c.partitions = 1 + in.byte() % 64U;
    // Zero and counts beyond the router's 2^20 (and kafka's 2^31-1) are refused.
    if (shape % 16U == 0)
        c.partitions = in.byte() % 2U == 0 ? 0 : 0x80000000ULL + (in.u64(8) >> 1U);
    if (shape % 64U == 1) c.partitions = 16385 + in.u64(1);  // a large topic
    switch (in.byte() % 4U) {
    case 0: c.threshold = 0; break;
    case 1: c.threshold = 1 + in.byte() % 64U; break;
    case 2: c.threshold = 0xffffffffULL - in.byte(); break;
    default: c.threshold = in.u64(8) >> (in.byte() % 64U); break;
    }
    const std::uint8_t window_shape = in.byte();
    std::int64_t window_ms = 1 + static_cast<std::int64_t>(in.u64(2));
    if (window_shape % 16U == 0) window_ms = -static_cast<std::int64_t>(in.u64(1));
    // Up to ~4 years, on both sides of the one-year limit.
    if (window_shape % 16U == 1) window_ms = 1 + static_cast<std::int64_t>(in.u64(8) >> 27U);
    c.window = std::chrono::milliseconds(window_ms);
    c.auto_fraction = in.byte() % 16U == 0 ? static_cast<double>(in.byte()) / 128.0 - 0.5
                                           : (1.0 + in.byte()) / 256.0;
    c.min_threshold = in.byte() % 8U == 0 ? 0 : 1 + in.byte() % 64U;
    c.run_length =
        in.byte() % 16U == 0 ? static_cast<std::uint32_t>(in.u64(4)) : 1 + in.byte() % 64U;
    c.max_hot_keys =
        in.byte() % 16U == 0 ? static_cast<std::uint32_t>(in.u64(2)) : 1 + in.byte() % 32U;
    c.lanes = in.byte() % 16U == 0 ? static_cast<std::uint32_t>(in.u64(2)) : in.byte() % 4U;
    c.producer_id = in.u64(2);
    c.seed = 1 + in.u64(2);
    c.failover_cold_keys = in.byte() % 2U == 0;
    bad = c.partitions == 0 || c.partitions > router_type::max_partitions ||
          c.window.count() <= 0 || c.window > std::chrono::hours(24 * 366) ||
          !(c.auto_fraction > 0.0 && c.auto_fraction <= 1.0) || c.min_threshold == 0 ||
          c.run_length == 0 || c.run_length > 65536 || c.max_hot_keys > 4096 || c.lanes > 256 ||
          c.threshold > 0xffffffffULL;
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    input in(data, size);
    bool bad = false;
    const keyroute::salting_config config = fuzzed_config(in, bad);
    std::unique_ptr<router_type> router;
    try {
        router = std::make_unique<router_type>(config);
        FUZZ_REQUIRE(!bad);
    } catch (const std::invalid_argument&) {
        FUZZ_REQUIRE(bad);
        return 0;
    } catch (...) {
        std::abort();
    }
    const keyroute::kafka_partitioner base(config.partitions);
    const std::uint32_t n = router->partitions();
    FUZZ_REQUIRE(n == config.partitions);

    // A handful of keys so that some repeat often enough to turn hot; a key may be any bytes.
    std::vector<std::string> keys;
    const std::size_t key_count = 1 + in.byte() % 8U;
    for (std::size_t i = 0; i < key_count; ++i) keys.emplace_back(in.bytes(in.byte() % 12U));
    if (std::getenv("KEYROUTE_FUZZ_TRACE") != nullptr) {
        std::fprintf(
            stderr,
            "partitions %llu threshold %llu window %lld ms lanes %u max_hot_keys %u seed %llu\n",
            static_cast<unsigned long long>(config.partitions),
            static_cast<unsigned long long>(config.threshold),
            static_cast<long long>(config.window.count()), config.lanes, config.max_hot_keys,
            static_cast<unsigned long long>(config.seed));
        for (std::size_t i = 0; i < keys.size(); ++i) {
            std::fprintf(stderr, "key#%zu:", i);
            for (const char ch : keys[i])
                std::fprintf(stderr, " %02x",
                             static_cast<unsigned>(static_cast<unsigned char>(ch)));
            std::fprintf(stderr, "\n");
        }
    }

    std::int64_t now_ms = static_cast<std::int64_t>(in.u64(6)) % time_limit_ms;
    std::int64_t window = std::numeric_limits<std::int64_t>::min();  // the router's, never back
    std::map<std::string, std::uint64_t> in_window;                  // events per key, this window
    // A jump of more than an hour's windows (and more than one) moves the router's window at the
    // second event within a window of the first (the first counts in the window it left); the
    // router remembers the last such event's window.
    std::int64_t jump_to = std::numeric_limits<std::int64_t>::min();
    std::uint64_t calls = 0;
    std::uint64_t salted = 0;
    const std::int64_t len = config.window.count();
    const bool trace = std::getenv("KEYROUTE_FUZZ_TRACE") != nullptr;  // every decision, for triage
    int edge = 0;  // 1: time_point::min(), 2: time_point::max(), 0: now_ms

    while (!in.empty()) {
        const std::uint8_t op = in.byte();
        if (op < 16) {  // the clock moves
            switch (op % 8U) {
            case 0: now_ms -= hour_ms; break;
            case 1: now_ms += year_ms; break;
            case 2:
                now_ms = static_cast<std::int64_t>(in.u64(8) % (2 * time_limit_ms)) - time_limit_ms;
                break;
            case 3: now_ms += len; break;
            case 5: edge = 1 + in.byte() % 2; continue;  // the clock's very first or last tick
            default: now_ms += static_cast<std::int64_t>(in.u64(2)); break;
            }
            edge = 0;
            now_ms = std::max(-time_limit_ms, std::min(time_limit_ms, now_ms));
            continue;
        }
        if (op < 24) {  // a partition goes down or comes back
            const auto p = static_cast<std::uint32_t>(in.u64(2) % (n + 1ULL));
            const bool up = op % 2U == 0;
            try {
                router->set_available(p, up);
                FUZZ_REQUIRE(p < n);
                FUZZ_REQUIRE(router->available(p) == up);
            } catch (const std::invalid_argument&) {
                FUZZ_REQUIRE(p >= n);
            }
            continue;
        }
        // Route a burst of one key.
        const std::string& key = keys[op % keys.size()];
        const std::size_t burst = 1 + in.byte() % 64U;
        const auto t = edge == 1   ? clock_type::time_point::min()
                       : edge == 2 ? clock_type::time_point::max()
                                   : clock_type::time_point(std::chrono::milliseconds(now_ms));
        const auto t_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
        std::int64_t ew = t_ms / len;
        if (t_ms % len < 0) --ew;
        const std::int64_t jump_windows = std::max<std::int64_t>((hour_ms + len - 1) / len, 1);
        for (std::size_t i = 0; i < burst; ++i) {
            if (ew > window) {
                bool moves = true;
                if (window != std::numeric_limits<std::int64_t>::min() &&
                    ew - window > jump_windows) {
                    const std::int64_t before = jump_to;
                    jump_to = ew;
                    moves = before >= ew - 1 && before <= ew + 1;
                }
                if (moves) {
                    window = ew;
                    in_window.clear();
                }
            }
            const keyroute::route_decision d = router->decide(key, t);
            ++calls;
            const std::uint64_t seen = ++in_window[key];
            if (trace) {
                std::fprintf(stderr,
                             "t %lld window %lld key#%zu seen %llu -> partition %u home %u salted "
                             "%d stamp %d\n",
                             static_cast<long long>(t_ms), static_cast<long long>(window),
                             static_cast<std::size_t>(op % keys.size()),
                             static_cast<unsigned long long>(seen), d.partition, d.home,
                             d.salted ? 1 : 0, d.stamp ? 1 : 0);
            }
            FUZZ_REQUIRE(d.partition < n);
            FUZZ_REQUIRE(d.home == base.route(key));
            if (d.salted) {
                ++salted;
                FUZZ_REQUIRE(bool(d.stamp) && d.stamp.salted);
                // Exact counts gate salting: more than `threshold` events of the key this window.
                if (config.threshold != 0) FUZZ_REQUIRE(seen > config.threshold);
            } else if (!config.failover_cold_keys) {
                FUZZ_REQUIRE(d.partition == d.home);
            } else if (d.partition != d.home) {
                FUZZ_REQUIRE(!router->available(d.home) && router->available(d.partition));
            }
            if (d.stamp)
                FUZZ_REQUIRE(d.stamp.producer == router->producer_id() && d.stamp.episode >= 1);
        }
        const keyroute::salting_stats s = router->stats();
        FUZZ_REQUIRE(s.routed == calls);
        FUZZ_REQUIRE(s.salted == salted);
        FUZZ_REQUIRE(s.stamped <= calls);
        FUZZ_REQUIRE(s.partition_load.size() == n);
        std::uint64_t load = 0;
        for (const std::uint64_t l : s.partition_load) load += l;
        FUZZ_REQUIRE(load <= calls);
    }
    // A threshold above every event there was: nothing is ever salted.
    if (config.threshold >= calls && config.threshold != 0) FUZZ_REQUIRE(salted == 0);
    FUZZ_REQUIRE(router->stats().routed == calls);
    return 0;
}
