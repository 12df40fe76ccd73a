#pragma once

/// @file
/// Reading the clock cheaply on the route path.

#include <chrono>
#include <ctime>  // with POSIX's clock_gettime and CLOCK_REALTIME_COARSE on Linux
#include <type_traits>

namespace keyroute::detail {

/// `Clock::now()`, except for std::chrono::system_clock on Linux, where it reads
/// CLOCK_REALTIME_COARSE: the same epoch, a resolution of one scheduler tick (1 to 4 ms), and a
/// few nanoseconds per call from the vDSO instead of a full clock read. Windows are seconds to
/// minutes long, so the tick does not matter.
template <class Clock>
inline auto cheap_now() noexcept -> typename Clock::time_point {
#if defined(__linux__) && defined(CLOCK_REALTIME_COARSE)
    if constexpr (std::is_same_v<Clock, std::chrono::system_clock>) {
        ::timespec ts{};
        if (::clock_gettime(CLOCK_REALTIME_COARSE, &ts) == 0) {
            const auto since_epoch =
                std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
            return typename Clock::time_point(
                std::chrono::duration_cast<typename Clock::duration>(since_epoch));
        }
    }
#endif
    return Clock::now();
}

}  // namespace keyroute::detail
