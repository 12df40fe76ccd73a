#pragma once
// Goodness of fit for the distribution tests.
#include <cmath>
#include <cstdint>
#include <vector>

namespace keyroute_test {

/// Pearson's chi-square statistic of `counts` against a uniform expectation.
inline auto chi_square_uniform(const std::vector<std::uint64_t>& counts) -> double {
    double total = 0;
    for (auto c : counts) total += static_cast<double>(c);
    const double expected = total / static_cast<double>(counts.size());
    double chi = 0;
    for (auto c : counts) {
        const double d = static_cast<double>(c) - expected;
        chi += d * d / expected;
    }
    return chi;
}

/// Upper-tail critical value of chi-square with `df` degrees of freedom at the significance
/// whose standard normal quantile is `z` (Wilson-Hilferty approximation; z = 5.0 is p ~ 2.9e-7).
inline auto chi_square_critical(double df, double z = 5.0) -> double {
    const double a = 2.0 / (9.0 * df);
    const double t = 1.0 - a + z * std::sqrt(a);
    return df * t * t * t;
}

}  // namespace keyroute_test
