#pragma once

/// @file
/// detail::availability: which partitions are marked unavailable, and where a cold key goes
/// while its home is (failover_cold_keys): the first available partition of a sequence drawn
/// from the key's XXH3 hash with seed 0 alone, so that every producer, and the same one after a
/// restart, picks the same partition, and only the unavailable partition's keys move (a key
/// moves only when the partition it failed over to goes down, or an earlier one of its sequence
/// comes back). The sequence is `max_probes` long: n / available probes on average, whatever
/// n; past it (most partitions down), the available partition with the highest rendezvous score
/// of the key's hash, which scans every partition.

#include "../detail/mix.hpp"

#include <atomic>
#include <cstdint>
#include <memory>

namespace keyroute::detail {

class availability {
public:
    explicit availability(std::uint32_t partitions)
        : m_n(partitions),
          m_down(std::make_unique<std::atomic<std::uint8_t>[]>(partitions)) {}

    [[nodiscard]] static constexpr auto bytes(std::uint32_t partitions) noexcept -> std::size_t {
        return partitions * sizeof(std::atomic<std::uint8_t>);
    }

    /// Marks p down or up; returns whether that changed anything. The count of unavailable
    /// partitions, which the route path reads first, never falls below the number of flags set
    /// (it is raised before a flag is set and lowered after one is cleared), so no route that
    /// reads it as 0 misses a partition that is down, whatever calls race.
    auto set(std::uint32_t p, bool available) noexcept -> bool {
        if (available) {
            if (m_down[p].exchange(0, std::memory_order_acq_rel) == 0) return false;
            m_count.fetch_sub(1, std::memory_order_acq_rel);
        } else {
            m_count.fetch_add(1, std::memory_order_acq_rel);
            if (m_down[p].exchange(1, std::memory_order_acq_rel) != 0) {
                m_count.fetch_sub(1, std::memory_order_acq_rel);  // it was down already
                return false;
            }
        }
        m_changes.fetch_add(1, std::memory_order_release);
        return true;
    }

    [[nodiscard]] auto down(std::uint32_t p) const noexcept -> bool {
        return m_down[p].load(std::memory_order_relaxed) != 0;
    }
    /// True when some partition is down (one load: the route path's test).
    [[nodiscard]] auto any_down() const noexcept -> bool {
        return m_count.load(std::memory_order_acquire) != 0;
    }
    /// Counts the changes made by set(), so a planner can tell it must plan again.
    [[nodiscard]] auto changes() const noexcept -> std::uint64_t {
        return m_changes.load(std::memory_order_acquire);
    }

    /// Draws before failover() scans every partition instead.
    static constexpr std::uint32_t max_probes = 64;

    /// The failover partition of a key whose home is down: see the file comment. `seed0_hash`
    /// is XXH3_64bits(key) (seed 0). Returns home when every partition is down.
    [[nodiscard]] auto failover(std::uint32_t home, std::uint64_t seed0_hash) const noexcept
        -> std::uint32_t {
        for (std::uint32_t i = 1; i <= max_probes; ++i) {
            const std::uint64_t draw = mix64(seed0_hash + 0x9e3779b97f4a7c15ULL * i);
            // The draw's top 32 bits scaled to [0, n): Lemire's multiply-shift.
            const auto p = static_cast<std::uint32_t>(((draw >> 32U) * m_n) >> 32U);
            if (!down(p)) return p;
        }
        std::uint32_t best = home;
        std::uint64_t best_score = 0;
        for (std::uint32_t p = 0; p < m_n; ++p) {
            if (down(p)) continue;
            const std::uint64_t score = mix64(seed0_hash ^ (0x9e3779b97f4a7c15ULL * (p + 1ULL)));
            if (score >= best_score) {
                best_score = score;
                best = p;
            }
        }
        return best;
    }

private:
    std::uint32_t m_n;
    std::unique_ptr<std::atomic<std::uint8_t>[]> m_down;
    std::atomic<std::uint32_t> m_count{0};
    std::atomic<std::uint64_t> m_changes{0};
};

}  // namespace keyroute::detail
