#pragma once
// The family of workloads the salting router is evaluated on (bench/simulate, docs/evaluation.md):
// a seed draws one member. Every member has a base key distribution, keys whose share changes
// within windows, a total rate that changes within windows, producer threads whose event times
// disagree, late events, and one or several independent routers sharing the traffic.
//
//   partitions       log-uniform in [4, 4096]
//   keys             log-uniform in [1k, 1M]
//   base             Zipf with exponent in [0.6, 1.6] (60%); one dominant tenant with 30% to 95%
//                    of the events over Zipf or uniform others (20%); uniform over at least
//                    20 keys per partition (20%)
//   dynamic keys     0 to 3 keys with 0.5/n to 40% of the events that appear, grow, shrink or
//                    vanish at any point of any window (not on uniform members)
//   rate             flat, a ramp within each window (x0.5 to x2), or bursts (x3 for a tenth of
//                    a window)
//   threads          1 to 4 producer threads on one router, each with an event-time offset of
//                    0 to 3 windows back (one thread is current)
//   late events      none, or 1% to 5% of the events up to two windows old
//   routers          1, or 2 to 8 independent routers (one per producer process), each seeing a
//                    random share of the events
//   events           per window log-uniform in [300k, 1.5M], at least 150 per partition
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace keyroute_bench {

/// O(1) sampling from a discrete distribution (Walker's alias method).
class alias_table {
public:
    alias_table() = default;
    explicit alias_table(const std::vector<double>& weights)
        : m_prob(weights.size()),
          m_alias(weights.size()) {
        const std::size_t n = weights.size();
        double total = 0;
        for (double w : weights) total += w;
        std::vector<double> scaled(n);
        std::vector<std::uint32_t> small;
        std::vector<std::uint32_t> large;
        for (std::size_t i = 0; i < n; ++i) {
            scaled[i] = weights[i] * static_cast<double>(n) / total;
            (scaled[i] < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(i));
        }
        while (!small.empty() && !large.empty()) {
            const std::uint32_t s = small.back();
            small.pop_back();
            const std::uint32_t l = large.back();
            m_prob[s] = scaled[s];
            m_alias[s] = l;
            scaled[l] -= 1.0 - scaled[s];
            if (scaled[l] < 1.0) {
                large.pop_back();
                small.push_back(l);
            }
        }
        for (std::uint32_t i : small) m_prob[i] = 1.0;
        for (std::uint32_t i : large) m_prob[i] = 1.0;
    }
    template <class Rng>
    auto operator()(Rng& rng) const -> std::uint32_t {
        const std::uint64_t r = rng();
        const auto i = static_cast<std::uint32_t>((r >> 32U) * m_prob.size() >> 32U);
        const double u = static_cast<double>(r & 0xffffffffU) / 4294967296.0;
        return u < m_prob[i] ? i : m_alias[i];
    }
    [[nodiscard]] auto size() const -> std::size_t { return m_prob.size(); }

private:
    std::vector<double> m_prob;
    std::vector<std::uint32_t> m_alias;
};

/// A key whose share of the events changes with time (measured in windows from the start).
struct dynamic_key {
    enum shape_kind { appear, vanish, grow, shrink, burst } shape = appear;
    double share = 0;  // its share of the events at its peak
    double from = 0;   // when the change starts (windows)
    double until = 0;  // when it ends (grow, shrink, burst)
    [[nodiscard]] auto share_at(double t) const -> double {
        switch (shape) {
        case appear: return t >= from ? share : 0;
        case vanish: return t < from ? share : 0;
        case grow: return t < from ? 0 : t >= until ? share : share * (t - from) / (until - from);
        case shrink:
            return t < from ? share : t >= until ? 0 : share * (until - t) / (until - from);
        case burst: return t >= from && t < until ? share : 0;
        }
        return 0;
    }
    [[nodiscard]] auto name() const -> const char* {
        static const char* const names[] = {"appears", "vanishes", "grows", "shrinks", "bursts"};
        return names[shape];
    }
};

struct family_member {
    std::uint64_t seed = 0;
    std::uint32_t partitions = 0;
    int windows = 4;
    std::uint64_t events = 0;  // per window, at the flat rate
    std::size_t keys = 0;
    double zipf = 0;    // 0: uniform
    double tenant = 0;  // share of the dominant tenant, 0: none
    std::vector<dynamic_key> dynamic;
    enum rate_kind { flat, ramp, bursts } rate = flat;
    double ramp_from = 1, ramp_to = 1;
    double burst_at = 0;  // within each window
    std::uint32_t threads = 1;
    std::vector<double> thread_lag;  // windows back, per thread; thread 0's is 0
    double late = 0;                 // fraction of events up to two windows old
    std::uint32_t routers = 1;
    std::vector<double> router_share;

    [[nodiscard]] auto uniform() const -> bool {
        return zipf == 0 && tenant == 0 && dynamic.empty();
    }

    [[nodiscard]] auto describe() const -> std::string {
        char buf[256];
        std::snprintf(buf, sizeof buf, "n=%u keys=%zu %s", partitions, keys,
                      tenant > 0 ? "tenant"
                      : zipf > 0 ? "zipf"
                                 : "uniform");
        std::string s = buf;
        if (tenant > 0) {
            std::snprintf(buf, sizeof buf, " %.0f%%", tenant * 100);
            s += buf;
        }
        if (zipf > 0) {
            std::snprintf(buf, sizeof buf, " s=%.2f", zipf);
            s += buf;
        }
        for (const auto& d : dynamic) {
            std::snprintf(buf, sizeof buf, " +key %.1f%% %s@%.2f", d.share * 100, d.name(), d.from);
            s += buf;
        }
        if (rate == ramp) s += " ramp";
        if (rate == bursts) s += " bursts";
        if (threads > 1) {
            std::snprintf(buf, sizeof buf, " threads=%u", threads);
            s += buf;
        }
        if (late > 0) {
            std::snprintf(buf, sizeof buf, " late=%.0f%%", late * 100);
            s += buf;
        }
        if (routers > 1) {
            std::snprintf(buf, sizeof buf, " routers=%u", routers);
            s += buf;
        }
        std::snprintf(buf, sizeof buf, " E=%llu", static_cast<unsigned long long>(events));
        return s + buf;
    }
};

/// Member `seed` of the family.
inline auto family(std::uint64_t seed) -> family_member {
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + 12345);
    const auto uni = [&](double a, double b) {
        return std::uniform_real_distribution<double>(a, b)(rng);
    };
    const auto log_uni = [&](double a, double b) {
        return std::exp(uni(std::log(a), std::log(b)));
    };
    family_member m;
    m.seed = seed;
    m.partitions = static_cast<std::uint32_t>(std::lround(log_uni(4, 4096)));
    m.keys = static_cast<std::size_t>(std::lround(log_uni(1000, 1000000)));
    m.events = std::max<std::uint64_t>(static_cast<std::uint64_t>(log_uni(300000, 1500000)),
                                       150ULL * m.partitions);
    const double kind = uni(0, 1);
    if (kind < 0.6) {
        m.zipf = uni(0.6, 1.6);
    } else if (kind < 0.8) {
        m.tenant = uni(0.3, 0.95);
        if (uni(0, 1) < 0.5) m.zipf = uni(0.6, 1.2);
    } else {
        m.keys = std::max<std::size_t>(m.keys, 20U * m.partitions);
    }
    if (!m.uniform()) {
        const int dyn = static_cast<int>(uni(0, 4));
        for (int i = 0; i < dyn; ++i) {
            dynamic_key d;
            d.shape = static_cast<dynamic_key::shape_kind>(static_cast<int>(uni(0, 5)));
            d.share = log_uni(0.5 / m.partitions, 0.4);
            d.from = uni(0.2, m.windows - 0.2);
            d.until = std::min(d.from + uni(0.05, 1.5), static_cast<double>(m.windows));
            m.dynamic.push_back(d);
        }
    }
    const double r = uni(0, 1);
    if (r < 0.3) {
        m.rate = family_member::ramp;
        m.ramp_from = uni(0.5, 2);
        m.ramp_to = uni(0.5, 2);
    } else if (r < 0.5) {
        m.rate = family_member::bursts;
        m.burst_at = uni(0, 0.9);
    }
    if (uni(0, 1) < 0.4) {
        m.threads = 2 + static_cast<std::uint32_t>(uni(0, 3));
        m.thread_lag.push_back(0);
        for (std::uint32_t j = 1; j < m.threads; ++j) m.thread_lag.push_back(uni(0, 3));
    } else {
        m.thread_lag.push_back(0);
    }
    if (uni(0, 1) < 0.3) m.late = uni(0.01, 0.05);
    if (uni(0, 1) < 0.25) {
        m.routers = 2 + static_cast<std::uint32_t>(uni(0, 7));
        for (std::uint32_t j = 0; j < m.routers; ++j) m.router_share.push_back(uni(0.5, 2));
    } else {
        m.router_share.push_back(1);
    }
    return m;
}

}  // namespace keyroute_bench
