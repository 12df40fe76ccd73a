#pragma once

/// @file
/// detail::window_clock: which window an event time falls in, and the router's current window.
///
/// Window k holds the times [k * len, (k + 1) * len), in the clock's own ticks, aligned to the
/// clock's epoch, so producers that share a clock switch windows together. The router's current
/// window only moves forward: to the window of an event time after it. A time before it (a late
/// event, a producer replaying a backlog, a clock set back) counts in the current window. A jump
/// of more than an hour (and more than one window) takes a second event within one window of the
/// first, so one garbage time far ahead moves nothing.

#include <atomic>
#include <cstdint>
#include <limits>

namespace keyroute::detail {

/// The window index of "no window yet".
inline constexpr std::int64_t no_window = std::numeric_limits<std::int64_t>::min() / 2;

/// Tick bounds [lo, hi) of one window; lo == hi marks a window at the ends of the clock's range,
/// whose bounds do not fit (every time is then outside it, and its window is computed).
struct window_bounds {
    std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    std::int64_t hi = std::numeric_limits<std::int64_t>::min();
    std::int64_t index = no_window;
};

class window_clock {
public:
    /// @pre len_ticks > 0; jump_windows >= 1 (windows in an hour, at least one).
    window_clock(std::int64_t len_ticks, std::int64_t jump_windows) noexcept
        : m_len(len_ticks),
          m_jump(jump_windows) {}

    [[nodiscard]] auto length() const noexcept -> std::int64_t { return m_len; }

    /// floor(ticks / len), also before the epoch.
    [[nodiscard]] auto window_of(std::int64_t ticks) const noexcept -> std::int64_t {
        return ticks / m_len - (ticks % m_len < 0 ? 1 : 0);
    }

    /// Window w's bounds, or an empty [lo, lo) where they overflow the tick range.
    [[nodiscard]] auto bounds(std::int64_t w) const noexcept -> window_bounds {
        window_bounds b;
        b.index = w;
        std::int64_t lo = 0;
        std::int64_t hi = 0;
        if (__builtin_mul_overflow(m_len, w, &lo) || __builtin_add_overflow(lo, m_len, &hi)) {
            return b;
        }
        b.lo = lo;
        b.hi = hi;
        return b;
    }

    /// How far into window w a time is, in [0, 1] (0 before it, 1 after it).
    [[nodiscard]] auto position(std::int64_t ticks, std::int64_t w) const noexcept -> double {
        const window_bounds b = bounds(w);
        if (b.hi <= b.lo || ticks < b.lo) return 0.0;
        if (ticks >= b.hi) return 1.0;
        const auto into = static_cast<std::uint64_t>(ticks) - static_cast<std::uint64_t>(b.lo);
        return static_cast<double>(into) / static_cast<double>(m_len);
    }

    /// The router's current window (no_window before the first event).
    [[nodiscard]] auto current() const noexcept -> std::int64_t {
        return m_window.load(std::memory_order_acquire);
    }

    /// An event in window w: moves the current window to w if w is later (the jump rule above
    /// applies) and returns the window the event counts in. Lock-free; safe from any thread.
    auto observe(std::int64_t w) noexcept -> std::int64_t {
        std::int64_t current = m_window.load(std::memory_order_acquire);
        while (w > current) {
            std::int64_t far = 0;
            if (current != no_window && !__builtin_add_overflow(current, m_jump, &far) && w > far) {
                // The first far event only leaves its window here; the next near it moves.
                // |seen - w| <= 1, computed modulo 2^64 (seen may be no_window).
                const std::int64_t seen = m_jump_to.exchange(w, std::memory_order_relaxed);
                const std::uint64_t apart =
                    static_cast<std::uint64_t>(seen) - static_cast<std::uint64_t>(w) + 1U;
                if (apart > 2U) return current;
            }
            if (m_window.compare_exchange_weak(current, w, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
                return w;
            }
        }
        return current;
    }

private:
    std::int64_t m_len;
    std::int64_t m_jump;
    alignas(64) std::atomic<std::int64_t> m_window{no_window};
    std::atomic<std::int64_t> m_jump_to{no_window};
};

}  // namespace keyroute::detail
