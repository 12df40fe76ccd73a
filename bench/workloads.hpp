#pragma once
// Generated workloads for the simulator, the benchmarks and the skew tool: Zipf, uniform, one
// tenant at 90%, and a hot set that shifts at a window boundary. Fixed seeds, so every run
// replays the same events.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace keyroute_bench {

/// Draws key ranks 0..n-1 with P(rank k) proportional to 1 / (k + 1)^s (s = 0: uniform).
class zipf_sampler {
public:
    zipf_sampler(std::size_t n, double s) : m_cdf(n) {
        double total = 0;
        for (std::size_t k = 0; k < n; ++k) {
            total += 1.0 / std::pow(static_cast<double>(k + 1), s);
            m_cdf[k] = total;
        }
        for (auto& c : m_cdf) c /= total;
    }
    template <class Rng>
    auto operator()(Rng& rng) const -> std::size_t {
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        const auto it = std::lower_bound(m_cdf.begin(), m_cdf.end(), u);
        return std::min<std::size_t>(static_cast<std::size_t>(it - m_cdf.begin()),
                                     m_cdf.size() - 1);
    }

private:
    std::vector<double> m_cdf;
};

/// A workload: a key universe, a sampler of key indices per window, and its partition count.
struct workload {
    std::string name;
    std::uint32_t partitions = 0;
    std::vector<std::string> keys;
    // Returns the key index of the next event in window `w`.
    std::function<std::size_t(std::mt19937_64&, int w)> next;
};

inline auto make_keys(std::size_t n, const char* prefix) -> std::vector<std::string> {
    std::vector<std::string> keys;
    keys.reserve(n);
    for (std::size_t i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i));
    return keys;
}

inline auto tenant90() -> workload {
    workload w{
        "one tenant at 90%, 1000 others, 100 partitions", 100, make_keys(1001, "tenant-"), {}};
    w.next = [](std::mt19937_64& rng, int) -> std::size_t {
        return rng() % 10 < 9 ? 0 : 1 + static_cast<std::size_t>(rng() % 1000);
    };
    return w;
}

inline auto zipf(double s, std::size_t n, std::uint32_t partitions) -> workload {
    char name[96];
    std::snprintf(name, sizeof name, "%s %.1f, %zuk keys, %u partitions",
                  s == 0 ? "uniform" : "Zipf", s, n / 1000, partitions);
    workload w{s == 0 ? std::string("uniform, ") + std::to_string(n / 1000) + "k keys, " +
                            std::to_string(partitions) + " partitions"
                      : name,
               partitions,
               make_keys(n, "key-"),
               {}};
    auto sampler = std::make_shared<zipf_sampler>(n, s);
    w.next = [sampler](std::mt19937_64& rng, int) { return (*sampler)(rng); };
    return w;
}

/// Zipf 1.0 over 100k keys on 64 partitions, whose ranking is reshuffled from window 2 on: the
/// hottest keys of windows 0-1 turn cold and others turn hot at the boundary.
inline auto shifting_hot_set() -> workload {
    const std::size_t n = 100000;
    workload w{
        "shifting hot set (Zipf 1.0, 100k keys, 64 partitions)", 64, make_keys(n, "key-"), {}};
    auto sampler = std::make_shared<zipf_sampler>(n, 1.0);
    auto perm = std::make_shared<std::vector<std::size_t>>(n);
    std::iota(perm->begin(), perm->end(), std::size_t{0});
    std::mt19937_64 shuffle_rng(99);
    std::shuffle(perm->begin(), perm->end(), shuffle_rng);
    w.next = [sampler, perm](std::mt19937_64& rng, int window) {
        const std::size_t rank = (*sampler)(rng);
        return window >= 2 ? (*perm)[rank] : rank;
    };
    return w;
}

inline auto all_workloads() -> std::vector<workload> {
    return {tenant90(),
            zipf(1.0, 100000, 64),
            zipf(1.5, 100000, 64),
            zipf(0.8, 1000000, 16),
            zipf(0.0, 1000000, 64),
            shifting_hot_set()};
}

}  // namespace keyroute_bench
