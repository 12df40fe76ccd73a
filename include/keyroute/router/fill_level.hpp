#pragma once

/// @file
/// detail::fill_level: the load, over the mean, that the planner fills partitions to. A higher
/// level leaves more room on each partition, so a hot key needs fewer of them; a lower one
/// leaves more margin for what plans cannot foresee. The level corrects itself from what each
/// window measures:
/// - it starts at 1 + `start`;
/// - at every plan, note() records how far tracked keys' events took a partition over the level
///   (at most their events there: the level cannot move untracked load) and the most untracked
///   load on a partition, both over the mean;
/// - when a window opens right after another, next_window() sets the level from the other's last
///   note, if that came in its last quarter: the balance goal (max/mean `goal`, or the most
///   untracked load plus 0.02 where that is higher) less `margin`, less that overshoot, within
///   1 + [min_headroom, max_headroom]. So a partition that tracked keys took over the level ends
///   the next window near the goal less the margin. A window that does not follow the last
///   note's (a gap) leaves the level as it is; in the window after a router's first (whose
///   plans were projections) or after a gap's first, it only rises.
/// One thread at a time (the planner's) but for published(), which any thread may read.

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace keyroute::detail {

class fill_level {
public:
    static constexpr double start = 0.05;
    static constexpr double min_headroom = 0.02;
    static constexpr double max_headroom = 0.08;
    static constexpr double goal = 1.10;
    static constexpr double margin = 0.01;

    /// The level in force, over the mean.
    [[nodiscard]] auto level() const noexcept -> double { return 1.0 + m_headroom; }

    /// At a plan, `at` of the way into its window: `load(p)` and `untracked(p)` are partition p's
    /// events so far and those of untracked keys (taken at most `load(p)`), `mean` the events so
    /// far per partition (taken at least 1). The overshoot noted is at least 0.
    template <class Load, class Untracked>
    void note(std::uint32_t partitions, double mean, double at, const Load& load,
              const Untracked& untracked) noexcept {
        mean = std::max(mean, 1.0);
        m_note = measured{at, 0, 0};
        for (std::uint32_t p = 0; p < partitions; ++p) {
            const double l = load(p);
            const double u = std::min(untracked(p), l);
            m_note.untracked = std::max(m_note.untracked, u / mean);
            m_note.over =
                std::max(m_note.over, std::min(l / mean - 1.0 - m_headroom, (l - u) / mean));
        }
    }

    /// A window opens; `follows` if it comes right after the window of the last note.
    void next_window(bool follows) noexcept {
        if (follows && m_note.at >= 0.75) {
            const double target =
                std::max(goal, m_note.untracked + 0.02) - 1.0 - margin - m_note.over;
            if (m_followed || target > m_headroom)
                m_headroom = std::clamp(target, min_headroom, max_headroom);
        }
        m_followed = follows;
        m_note = measured{};
    }

    /// Makes the level in force the one published() reads.
    void publish() noexcept { m_published.store(m_headroom, std::memory_order_relaxed); }
    /// The level last published, over the mean (1 + start before any).
    [[nodiscard]] auto published() const noexcept -> double {
        return 1.0 + m_published.load(std::memory_order_relaxed);
    }

private:
    struct measured {
        double at = 0;         // how far into its window the note was taken
        double over = 0;       // the most tracked keys took a partition over the level, / mean
        double untracked = 0;  // the most untracked load on a partition, / mean
    };
    double m_headroom = start;
    // The running window opened right after another (so the next may lower the level: this
    // one's plans were not projections).
    bool m_followed = false;
    measured m_note;
    std::atomic<double> m_published{start};
};

}  // namespace keyroute::detail
