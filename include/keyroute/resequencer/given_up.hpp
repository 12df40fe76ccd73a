#pragma once

/// @file
/// What one resequencer episode remembers of the sequences it gave up, to tell a late arrival
/// (delivered `late`) from a re-read of an event taken before (a duplicate).
///
/// Invariants: the ranges are disjoint, not adjacent, in increasing order, each first <= last,
/// all below the episode's next expected sequence; at most max_ranges of them. When a gap would
/// make more, the oldest ranges are dropped and everything below the highest dropped sequence is
/// forgotten (forgotten_below): a sequence there may have been delivered or given up, so it is
/// delivered `late` with possibly_duplicate, never answered duplicate.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace keyroute::detail {

class given_up_ranges {
public:
    using range = std::pair<std::uint64_t, std::uint64_t>;  ///< [first, last], both included
    /// Ranges remembered at most (16 bytes each).
    static constexpr std::size_t max_ranges = 256;

    /// How a sequence below the episode's next expected one stands.
    enum class status {
        taken,      ///< delivered (or held) before: a second push is a duplicate
        given_up,   ///< given up and not taken since: an arrival is late
        forgotten,  ///< below forgotten_below: late, possibly a duplicate
    };

    /// O(log ranges).
    [[nodiscard]] auto of(std::uint64_t seq) const noexcept -> status {
        if (seq < m_forgotten_below) return status::forgotten;
        return find(seq) != m_ranges.end() ? status::given_up : status::taken;
    }

    /// Records [first, last] given up; `first` is above every range recorded (the episode moved
    /// past them), so it extends the last range when adjacent. Trims to max_ranges.
    void append(std::uint64_t first, std::uint64_t last) {
        if (!m_ranges.empty() && m_ranges.back().second + 1 == first) {
            m_ranges.back().second = last;
            return;
        }
        m_ranges.emplace_back(first, last);
        trim();
    }

    /// A given-up sequence arrived late and is taken: from now on it is `taken`. No effect on a
    /// sequence that is not in a range.
    void take(std::uint64_t seq) {
        const auto it = find(seq);
        if (it == m_ranges.end()) return;
        range& r = *it;
        if (r.first == r.second) {
            m_ranges.erase(it);
        } else if (seq == r.first) {
            ++r.first;
        } else if (seq == r.second) {
            --r.second;
        } else {
            const range upper{seq + 1, r.second};
            r.second = seq - 1;
            m_ranges.insert(it + 1, upper);
            trim();
        }
    }

    /// Loads a checkpoint's ranges (any order, possibly overlapping or adjacent: given-up ranges
    /// and late singletons) and bound, then sorts, merges and trims them (the bound is taken as
    /// written: a checkpoint of exactly max_ranges ranges with bound 0 forgot nothing).
    void assign(std::vector<range> ranges, std::uint64_t forgotten_below) {
        m_ranges = std::move(ranges);
        m_forgotten_below = forgotten_below;
        std::sort(m_ranges.begin(), m_ranges.end());
        std::size_t out = 0;
        for (const range& r : m_ranges) {  // out <= its index: writes land on it or before
            if (out != 0 &&
                (m_ranges[out - 1].second == std::numeric_limits<std::uint64_t>::max() ||
                 r.first <= m_ranges[out - 1].second + 1)) {
                m_ranges[out - 1].second = std::max(m_ranges[out - 1].second, r.second);
            } else {
                m_ranges[out++] = r;
            }
        }
        m_ranges.resize(out);
        trim();
    }

    [[nodiscard]] auto ranges() const noexcept -> const std::vector<range>& { return m_ranges; }
    [[nodiscard]] auto forgotten_below() const noexcept -> std::uint64_t {
        return m_forgotten_below;
    }

private:
    [[nodiscard]] auto find(std::uint64_t seq) const noexcept
        -> std::vector<range>::const_iterator {
        auto it =
            std::upper_bound(m_ranges.begin(), m_ranges.end(), seq,
                             [](std::uint64_t value, const range& r) { return value < r.first; });
        if (it == m_ranges.begin()) return m_ranges.end();
        --it;
        return seq <= it->second ? it : m_ranges.end();
    }
    [[nodiscard]] auto find(std::uint64_t seq) noexcept -> std::vector<range>::iterator {
        const auto c = std::as_const(*this).find(seq);
        return m_ranges.begin() + (c - m_ranges.cbegin());
    }

    // Keeps the newest max_ranges; below the ones dropped, history is forgotten. The highest
    // range is never dropped.
    void trim() {
        if (m_ranges.size() <= max_ranges) return;
        const std::size_t drop = m_ranges.size() - max_ranges;
        m_forgotten_below = std::max(m_forgotten_below, m_ranges[drop - 1].second + 1);
        m_ranges.erase(m_ranges.begin(), m_ranges.begin() + static_cast<std::ptrdiff_t>(drop));
    }

    std::vector<range> m_ranges;
    std::uint64_t m_forgotten_below = 0;
};

}  // namespace keyroute::detail
