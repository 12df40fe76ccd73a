#pragma once

/// @file
/// How good is a hash for partitioning? A report on any hash functor, with no dependency:
/// chi-square goodness of fit over partitions (statistic and p-value) on random and on
/// sequential keys, max/mean partition load, and the avalanche of single-bit flips (how often
/// each output bit flips when one input bit flips: mean and worst bias).
///
///     struct my_hash { std::uint64_t operator()(std::string_view) const noexcept; };
///     auto report = keyroute::hash_quality("my_hash", my_hash{});
///     report.write_text(std::cout);
///     if (!report.passed()) { /* report.failures says why */ }
///
/// The p-values come from the regularized incomplete gamma function, implemented here
/// (keyroute::regularized_gamma_p / regularized_gamma_q) and tested against closed forms and
/// published chi-square tables.

#include "detail/config.hpp"
#include "detail/json.hpp"
#include "hash.hpp"
#include "reduce.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <locale>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace keyroute {

namespace detail {

/// The largest `a` the incomplete gamma functions take: their sums need O(sqrt(a)) steps, and
/// up to here they stay within the step limit with about 1e-12 relative accuracy (2^31, checked
/// with mpmath at 40 digits). A chi-square p-value then takes up to 2^33 degrees of freedom.
inline constexpr double max_gamma_a = 4294967296.0;  // 2^32

inline void check_gamma_arguments(double a, double x, const char* who) {
    if (!(a > 0) || !(a <= max_gamma_a)) {
        invalid_argument(std::string(who) + ": a must be in (0, 2^32], got " + std::to_string(a));
    }
    if (!(x >= 0) || std::isnan(x)) {
        invalid_argument(std::string(who) + ": x must be >= 0, got " + std::to_string(x));
    }
}

/// log(1 + t) - t for |t| < 1/4, by its series (log1p(t) - t would cancel there):
/// -t^2/2 + t^3/3 - t^4/4 + ..., 30 terms reach below 1e-17 relative.
inline auto log1p_minus_small(double t) -> double {
    double power = t * t;
    double sum = 0;
    for (int k = 2; k < 32; ++k) {
        sum += (k % 2 == 0 ? -power : power) / k;
        power *= t;
    }
    return sum;
}

/// lgamma(a) - ((a - 1/2) ln a - a + ln(2 pi) / 2), by Stirling's series (the Bernoulli-number
/// coefficients 1/12, 1/360, 1/1260, 1/1680, 1/1188, 691/360360, 1/156), for a >= 10: the next
/// term, 3617 / (122400 a^15), is below 3e-17 there.
inline auto stirling_error(double a) -> double {
    const double r = 1.0 / a;
    const double r2 = r * r;
    double sum = 1.0 / 156.0;
    sum = 691.0 / 360360.0 - r2 * sum;
    sum = 1.0 / 1188.0 - r2 * sum;
    sum = 1.0 / 1680.0 - r2 * sum;
    sum = 1.0 / 1260.0 - r2 * sum;
    sum = 1.0 / 360.0 - r2 * sum;
    sum = 1.0 / 12.0 - r2 * sum;
    return r * sum;
}

/// x^a e^-x / Gamma(a): the common factor of both expansions below. For a >= 10 it is
/// computed as sqrt(a / 2 pi) exp(a ln(x / a) - (x - a) - stirling_error(a)), the first two
/// terms as a (log1p(t) - t), t = (x - a) / a, by its series where |t| < 1/4: the direct
/// exp(a ln x - x - lgamma(a)) loses about a * 1e-16 of relative accuracy to the cancellation of
/// its large terms near x = a (1e-9 at a = 1e6, 5e-6 at a = 2^31, checked with mpmath). Far from
/// a (x << a) ln(x / a) is taken as it is: 1 + t would cancel there.
inline auto gamma_prefactor(double a, double x) -> double {
    if (a < 10) return std::exp(a * std::log(x) - x - std::lgamma(a));
    constexpr double two_pi = 6.283185307179586476925286766559;
    const double t = (x - a) / a;
    const double main =
        std::fabs(t) < 0.25 ? a * log1p_minus_small(t) : a * std::log(x / a) - (x - a);
    return std::sqrt(a / two_pi) * std::exp(main - stirling_error(a));
}

/// P(a, x) by its power series, sum_{n>=0} x^n / (a (a+1) ... (a+n)); converges fast for
/// x < a + 1.
inline auto gamma_p_series(double a, double x) -> double {
    double term = 1.0 / a;
    double sum = term;
    for (double n = 1; n < 1e7; ++n) {
        term *= x / (a + n);
        sum += term;
        if (term < sum * 1e-16) break;
    }
    return std::min(1.0, sum * gamma_prefactor(a, x));
}

/// Q(a, x) by Legendre's continued fraction, evaluated with the modified Lentz method;
/// converges fast for x >= a + 1.
inline auto gamma_q_fraction(double a, double x) -> double {
    constexpr double tiny = 1e-300;
    double b = x + 1.0 - a;
    double c = 1.0 / tiny;
    double d = 1.0 / b;
    double f = d;
    for (double i = 1; i < 1e7; ++i) {
        const double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (std::fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        const double delta = d * c;
        f *= delta;
        if (std::fabs(delta - 1.0) < 1e-16) break;
    }
    return std::min(1.0, f * gamma_prefactor(a, x));
}

}  // namespace detail

/// The regularized lower incomplete gamma function P(a, x) = γ(a, x) / Γ(a), in [0, 1].
///
/// @pre 0 < a <= 2^32, x >= 0 (x may be +infinity: P = 1).
/// @throws std::invalid_argument naming the argument otherwise.
/// Accuracy (against mpmath at 40 digits, x from a - 6 sqrt(a) to a + 10 sqrt(a)): about 2e-14
/// relative up to a = 1e6, 7e-13 at a = 2^31, where the result is not tiny. Cost: O(sqrt(a))
/// steps at worst.
/// Thread-safe where std::lgamma is (glibc's also sets the global `signgam`).
[[nodiscard]] inline auto regularized_gamma_p(double a, double x) -> double {
    detail::check_gamma_arguments(a, x, "keyroute::regularized_gamma_p");
    if (x == 0) return 0.0;
    if (std::isinf(x)) return 1.0;
    return x < a + 1.0 ? detail::gamma_p_series(a, x) : 1.0 - detail::gamma_q_fraction(a, x);
}

/// The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), computed directly in
/// the upper tail, so tiny values (p-values of 1e-300) keep their relative accuracy.
/// Same preconditions and exceptions as regularized_gamma_p.
[[nodiscard]] inline auto regularized_gamma_q(double a, double x) -> double {
    detail::check_gamma_arguments(a, x, "keyroute::regularized_gamma_q");
    if (x == 0) return 1.0;
    if (std::isinf(x)) return 0.0;
    return x < a + 1.0 ? 1.0 - detail::gamma_p_series(a, x) : detail::gamma_q_fraction(a, x);
}

/// The p-value of a chi-square statistic: P(X >= statistic) for X ~ chi-square with
/// `degrees_of_freedom`, that is Q(df / 2, statistic / 2).
/// @pre 0 < degrees_of_freedom <= 2^33, statistic >= 0. @throws std::invalid_argument otherwise.
[[nodiscard]] inline auto chi_square_p_value(double statistic, double degrees_of_freedom)
    -> double {
    if (!(degrees_of_freedom > 0) || !(degrees_of_freedom <= 2 * detail::max_gamma_a)) {
        detail::invalid_argument(
            "keyroute::chi_square_p_value: degrees_of_freedom must be in (0, 2^33], got " +
            std::to_string(degrees_of_freedom));
    }
    if (!(statistic >= 0) || std::isnan(statistic)) {
        detail::invalid_argument("keyroute::chi_square_p_value: statistic must be >= 0, got " +
                                 std::to_string(statistic));
    }
    return regularized_gamma_q(degrees_of_freedom / 2.0, statistic / 2.0);
}

/// What hash_quality() measures and the limits it judges by. Every limit of 0 means "automatic":
/// a value a good hash meets with overwhelming probability at the chosen sample sizes.
struct quality_options {
    /// Partitions the keys are reduced to. >= 2.
    std::uint32_t partitions = 100;
    /// Keys per distribution test (random keys, then sequential ids). >= 5 * partitions.
    std::uint64_t keys = 1000000;
    /// Keys whose every bit is flipped once for the avalanche test. >= 100.
    std::uint64_t avalanche_keys = 20000;
    /// Bytes per avalanche key (8 * size input bits are flipped). In [1, 256].
    std::size_t avalanche_key_size = 16;
    /// Seed of the generated keys (same keys on every platform and release).
    std::uint64_t seed = 1;
    /// A distribution test fails below this p-value. In [0, 1).
    double min_p_value = 1e-4;
    /// A distribution test fails above this max/mean load; 0 = automatic: the load a uniform
    /// hash's busiest partition exceeds with probability below 1e-9 (Poisson tail with a union
    /// bound over the partitions; 1.068 with the defaults).
    double max_load_ratio = 0;
    /// Avalanche fails above this mean bias; 0 = 1.5 / sqrt(avalanche_keys).
    double max_mean_bias = 0;
    /// Avalanche fails above this worst bias; 0 = 6 / sqrt(avalanche_keys).
    double max_worst_bias = 0;
};

/// One distribution test: keys reduced to partitions, counted, compared with the uniform.
struct distribution_quality {
    std::string keys;               ///< which keys, e.g. "random 16-byte keys"
    std::uint64_t count = 0;        ///< how many
    double chi_square = 0;          ///< Pearson's statistic against equal expected counts
    double degrees_of_freedom = 0;  ///< partitions - 1
    double p_value = 0;             ///< chi_square_p_value(chi_square, degrees_of_freedom)
    double max_over_mean = 0;       ///< busiest partition's count / mean count
    double min_over_mean = 0;       ///< idlest partition's count / mean count
};

/// The avalanche test. The bias of (input bit i, output bit j) is |2 p - 1|, where p is the
/// share of keys whose output bit j flips when input bit i flips: 0 is ideal, 1 means the
/// output bit always or never flips. A good hash's biases are noise of about 1 / sqrt(samples).
struct avalanche_quality {
    std::uint32_t input_bits = 0;
    std::uint32_t output_bits = 0;      ///< 32 or 64, the hash's width
    std::uint64_t samples = 0;          ///< keys per input bit
    double mean_bias = 0;               ///< over all (input bit, output bit) pairs
    double worst_bias = 0;              ///< the largest
    std::uint32_t worst_input_bit = 0;  ///< where the largest is (bit 0 = lowest bit of byte 0)
    std::uint32_t worst_output_bit = 0;
};

/// The result of hash_quality(). Plain data; the writers are const and thread-safe.
struct quality_report {
    std::string name;
    std::uint32_t partitions = 0;
    std::vector<distribution_quality> distribution;  ///< random keys, then sequential ids
    avalanche_quality avalanche;
    double min_p_value = 0;  ///< the limits applied (automatic ones resolved)
    double max_load_ratio = 0;
    double max_mean_bias = 0;
    double max_worst_bias = 0;
    std::vector<std::string> failures;  ///< one sentence per failed criterion; empty = passed

    [[nodiscard]] auto passed() const noexcept -> bool { return failures.empty(); }

    /// A human-readable report: one line per test, the limits, and PASS or the failures.
    void write_text(std::ostream& out) const {
        std::ostringstream s;
        s.imbue(std::locale::classic());
        s << "hash quality: " << (name.empty() ? "(unnamed)" : name) << ", " << partitions
          << " partitions\n";
        for (const distribution_quality& d : distribution) {
            s << "  " << std::left << std::setw(30) << d.keys << std::right << " chi2 "
              << std::fixed << std::setprecision(1) << std::setw(10) << d.chi_square << " (df "
              << std::setprecision(0) << d.degrees_of_freedom << ")  p " << std::scientific
              << std::setprecision(2) << d.p_value << std::fixed << std::setprecision(3)
              << "  max/mean " << d.max_over_mean << "  min/mean " << d.min_over_mean << "\n";
        }
        s << "  avalanche, " << avalanche.samples << " keys x " << avalanche.input_bits
          << " input bits -> " << avalanche.output_bits << " output bits: mean bias "
          << std::setprecision(4) << avalanche.mean_bias << ", worst " << avalanche.worst_bias
          << " (input bit " << avalanche.worst_input_bit << ", output bit "
          << avalanche.worst_output_bit << ")\n";
        s << "  limits: p >= " << std::scientific << std::setprecision(0) << min_p_value
          << std::fixed << std::setprecision(3) << ", max/mean <= " << max_load_ratio
          << ", mean bias <= " << std::setprecision(4) << max_mean_bias
          << ", worst bias <= " << max_worst_bias << "\n";
        if (passed()) {
            s << "  PASS\n";
        } else {
            for (const std::string& f : failures) s << "  FAIL: " << f << "\n";
        }
        out << s.str();
    }

    /// The report as one JSON object: `name`, `partitions`, `passed`, `failures` (strings),
    /// `distribution` (objects with the fields of distribution_quality), `avalanche` (the fields
    /// of avalanche_quality) and `limits`. Numbers in the C locale, 17 significant digits.
    void write_json(std::ostream& out) const {
        std::ostringstream s;
        s.imbue(std::locale::classic());
        s << std::setprecision(17) << "{\"name\":";
        detail::write_json_string(s, name);
        s << ",\"partitions\":" << partitions << ",\"passed\":" << (passed() ? "true" : "false")
          << ",\"failures\":[";
        for (std::size_t i = 0; i < failures.size(); ++i) {
            s << (i == 0 ? "" : ",");
            detail::write_json_string(s, failures[i]);
        }
        s << "],\"distribution\":[";
        for (std::size_t i = 0; i < distribution.size(); ++i) {
            const distribution_quality& d = distribution[i];
            s << (i == 0 ? "" : ",") << "{\"keys\":";
            detail::write_json_string(s, d.keys);
            s << ",\"count\":" << d.count << ",\"chi_square\":" << d.chi_square
              << ",\"degrees_of_freedom\":" << d.degrees_of_freedom << ",\"p_value\":" << d.p_value
              << ",\"max_over_mean\":" << d.max_over_mean
              << ",\"min_over_mean\":" << d.min_over_mean << "}";
        }
        s << R"(],"avalanche":{"input_bits":)" << avalanche.input_bits
          << ",\"output_bits\":" << avalanche.output_bits << ",\"samples\":" << avalanche.samples
          << ",\"mean_bias\":" << avalanche.mean_bias << ",\"worst_bias\":" << avalanche.worst_bias
          << ",\"worst_input_bit\":" << avalanche.worst_input_bit
          << ",\"worst_output_bit\":" << avalanche.worst_output_bit << "},\"limits\":{"
          << "\"min_p_value\":" << min_p_value << ",\"max_load_ratio\":" << max_load_ratio
          << ",\"max_mean_bias\":" << max_mean_bias << ",\"max_worst_bias\":" << max_worst_bias
          << "}}\n";
        out << s.str();
    }
};

namespace detail {

/// splitmix64: the generated keys of the quality tests.
class quality_rng {
public:
    explicit quality_rng(std::uint64_t seed) noexcept : m_state(seed) {}
    auto operator()() noexcept -> std::uint64_t {
        std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31U);
    }
    void fill(std::string& bytes) noexcept {
        for (std::size_t i = 0; i < bytes.size(); i += 8) {
            std::uint64_t bits = (*this)();
            for (std::size_t b = i; b < bytes.size() && b < i + 8; ++b, bits >>= 8U) {
                bytes[b] = static_cast<char>(bits & 0xffU);
            }
        }
    }

private:
    std::uint64_t m_state;
};

inline void check_quality_options(const quality_options& o) {
    const auto fail = [](const std::string& field, const std::string& rule,
                         const std::string& got) {
        invalid_argument("keyroute::hash_quality: quality_options." + field + " must be " + rule +
                         ", got " + got);
    };
    if (o.partitions < 2) fail("partitions", ">= 2", std::to_string(o.partitions));
    if (o.keys < 5ULL * o.partitions) {
        fail("keys", ">= 5 * partitions (" + std::to_string(5ULL * o.partitions) + ")",
             std::to_string(o.keys));
    }
    if (o.avalanche_keys < 100) fail("avalanche_keys", ">= 100", std::to_string(o.avalanche_keys));
    if (o.avalanche_key_size < 1 || o.avalanche_key_size > 256) {
        fail("avalanche_key_size", "in [1, 256]", std::to_string(o.avalanche_key_size));
    }
    if (!(o.min_p_value >= 0 && o.min_p_value < 1)) {
        fail("min_p_value", "in [0, 1)", std::to_string(o.min_p_value));
    }
    const std::pair<const char*, double> limits[] = {{"max_load_ratio", o.max_load_ratio},
                                                     {"max_mean_bias", o.max_mean_bias},
                                                     {"max_worst_bias", o.max_worst_bias}};
    for (const auto& [field, value] : limits) {
        if (!(value >= 0) || !std::isfinite(value)) {
            fail(field, "finite and >= 0 (0 = automatic)", std::to_string(value));
        }
    }
}

/// The automatic max/mean limit: a partition's count is about Poisson(mean) (binomial, whose
/// tail is lighter), so the busiest of `partitions` exceeds the smallest k with
/// P(X >= k) <= 1e-9 / partitions with probability below 1e-9 (a union bound); the limit is
/// k / mean. P(X >= k) = P(k, mean), the regularized lower incomplete gamma function. Beyond
/// 2^31 keys per partition (past what the gamma functions take), the normal tail with the same
/// union bound: 1 + sqrt(2 ln(partitions / 1e-9) / mean).
inline auto automatic_load_limit(double mean, std::uint32_t partitions) -> double {
    const double alpha = 1e-9 / partitions;
    if (mean > max_gamma_a / 2) {
        return 1.0 + std::sqrt(2.0 * std::log(partitions / 1e-9) / mean);
    }
    const auto tail = [mean](double k) { return regularized_gamma_p(k, mean); };
    double lo = std::max(1.0, std::ceil(mean));
    if (tail(lo) <= alpha) return lo / mean;
    // tail(lo) > alpha >= tail(hi): bisect on whole k.
    double step = std::ceil(std::sqrt(mean)) + 1.0;
    double hi = lo + step;
    while (tail(hi) > alpha) {
        lo = hi;
        step *= 2;
        hi = lo + step;
    }
    while (hi - lo > 1) {
        const double mid = std::floor((lo + hi) / 2);
        (tail(mid) <= alpha ? hi : lo) = mid;
    }
    return hi / mean;
}

template <class Hash, class Reduction>
auto distribution_test(const Hash& hash, const Reduction& reduce, std::uint32_t partitions,
                       std::uint64_t count, bool sequential, std::uint64_t seed)
    -> distribution_quality {
    std::vector<std::uint64_t> counts(partitions, 0);
    distribution_quality d;
    d.count = count;
    if (sequential) {
        d.keys = "sequential ids key-0, key-1...";
        std::string key = "key-";
        for (std::uint64_t i = 0; i < count; ++i) {
            key.resize(4);
            key += std::to_string(i);
            ++counts[reduce(hash(key))];
        }
    } else {
        d.keys = "random 16-byte keys";
        quality_rng rng(seed);
        std::string key(16, '\0');
        for (std::uint64_t i = 0; i < count; ++i) {
            rng.fill(key);
            ++counts[reduce(hash(key))];
        }
    }
    const double mean = static_cast<double>(count) / partitions;
    double chi = 0;
    for (const std::uint64_t c : counts) {
        const double diff = static_cast<double>(c) - mean;
        chi += diff * diff / mean;
    }
    const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
    d.chi_square = chi;
    d.degrees_of_freedom = partitions - 1.0;
    d.p_value = chi_square_p_value(chi, d.degrees_of_freedom);
    d.max_over_mean = static_cast<double>(*hi) / mean;
    d.min_over_mean = static_cast<double>(*lo) / mean;
    return d;
}

template <class Hash>
auto avalanche_test(const Hash& hash, std::uint64_t samples, std::size_t key_size,
                    std::uint64_t seed) -> avalanche_quality {
    using result = hash_result_t<Hash>;
    constexpr std::uint32_t out_bits = sizeof(result) * 8U;
    const auto in_bits = static_cast<std::uint32_t>(key_size * 8U);
    // flips[i * out_bits + j]: keys whose output bit j flipped when input bit i flipped.
    std::vector<std::uint64_t> flips(std::size_t{in_bits} * out_bits, 0);
    quality_rng rng(seed);
    std::string key(key_size, '\0');
    for (std::uint64_t s = 0; s < samples; ++s) {
        rng.fill(key);
        const result base = hash(key);
        for (std::uint32_t i = 0; i < in_bits; ++i) {
            const auto mask = static_cast<char>(1U << (i % 8U));
            key[i / 8U] = static_cast<char>(key[i / 8U] ^ mask);
            auto diff = static_cast<std::uint64_t>(hash(key) ^ base);
            key[i / 8U] = static_cast<char>(key[i / 8U] ^ mask);
            std::uint64_t* row = flips.data() + std::size_t{i} * out_bits;
            for (std::uint32_t j = 0; diff != 0; ++j, diff >>= 1U) row[j] += diff & 1U;
        }
    }
    avalanche_quality a;
    a.input_bits = in_bits;
    a.output_bits = out_bits;
    a.samples = samples;
    double total = 0;
    for (std::size_t k = 0; k < flips.size(); ++k) {
        const double bias =
            std::fabs(2.0 * static_cast<double>(flips[k]) / static_cast<double>(samples) - 1.0);
        total += bias;
        if (bias > a.worst_bias) {
            a.worst_bias = bias;
            a.worst_input_bit = static_cast<std::uint32_t>(k / out_bits);
            a.worst_output_bit = static_cast<std::uint32_t>(k % out_bits);
        }
    }
    a.mean_bias = total / static_cast<double>(flips.size());
    return a;
}

inline auto format_number(double v, int precision) -> std::string {
    std::ostringstream s;
    s.imbue(std::locale::classic());
    s << std::setprecision(precision) << v;
    return s.str();
}

}  // namespace detail

/// Measures how well `hash` spreads keys over `options.partitions` partitions with `Reduction`
/// (hash_partitioner's default_reduction, `fold32(h) % n`, by default) and how well single-bit
/// flips avalanche.
///
/// The report fails (failures non-empty) when either distribution test (1M random 16-byte
/// keys; 1M sequential ids "key-0", "key-1"...) has a p-value below `min_p_value` or a max/mean
/// above `max_load_ratio`, or when the avalanche mean or worst bias exceeds its limit. With the
/// defaults, keyroute::xxh3 passes; a linear hash (CRC-32, Java's String.hashCode) or one
/// without a finalizer (plain FNV) fails the avalanche test even where its distribution passes:
/// its output bits depend on the input in patterns that structured keys can hit.
///
/// @tparam Hash a hash functor (see hash.hpp). @tparam Reduction see reduce.hpp.
/// @throws std::invalid_argument naming the field of an invalid `options`.
/// Cost: 2 * keys + avalanche_keys * (8 * avalanche_key_size + 1) hashes (about 0.5 s with the
/// defaults); allocates O(partitions + 8 * avalanche_key_size * 64) counters. Deterministic.
template <class Hash, class Reduction = default_reduction>
auto hash_quality(std::string name, const Hash& hash = Hash{}, const quality_options& options = {})
    -> quality_report {
    static_assert((detail::check_hash_functor<Hash>(), true));
    detail::check_quality_options(options);
    quality_report r;
    r.name = std::move(name);
    r.partitions = options.partitions;
    const double mean = static_cast<double>(options.keys) / options.partitions;
    const auto samples = static_cast<double>(options.avalanche_keys);
    r.min_p_value = options.min_p_value;
    r.max_load_ratio = options.max_load_ratio > 0
                           ? options.max_load_ratio
                           : detail::automatic_load_limit(mean, options.partitions);
    r.max_mean_bias = options.max_mean_bias > 0 ? options.max_mean_bias : 1.5 / std::sqrt(samples);
    r.max_worst_bias =
        options.max_worst_bias > 0 ? options.max_worst_bias : 6.0 / std::sqrt(samples);

    const Reduction reduce(options.partitions);
    for (const bool sequential : {false, true}) {
        distribution_quality d = detail::distribution_test(hash, reduce, options.partitions,
                                                           options.keys, sequential, options.seed);
        if (d.p_value < r.min_p_value) {
            r.failures.push_back(d.keys + ": chi-square p-value " +
                                 detail::format_number(d.p_value, 3) + " < " +
                                 detail::format_number(r.min_p_value, 3) +
                                 " (the partition counts are not uniform)");
        }
        if (d.max_over_mean > r.max_load_ratio) {
            r.failures.push_back(d.keys + ": max/mean load " +
                                 detail::format_number(d.max_over_mean, 4) + " > " +
                                 detail::format_number(r.max_load_ratio, 4));
        }
        r.distribution.push_back(std::move(d));
    }
    r.avalanche = detail::avalanche_test(hash, options.avalanche_keys, options.avalanche_key_size,
                                         options.seed ^ 0x5bd1e995ULL);
    if (r.avalanche.mean_bias > r.max_mean_bias) {
        r.failures.push_back("avalanche: mean bias " +
                             detail::format_number(r.avalanche.mean_bias, 3) + " > " +
                             detail::format_number(r.max_mean_bias, 3));
    }
    if (r.avalanche.worst_bias > r.max_worst_bias) {
        r.failures.push_back("avalanche: worst bias " +
                             detail::format_number(r.avalanche.worst_bias, 3) + " > " +
                             detail::format_number(r.max_worst_bias, 3) + " (input bit " +
                             std::to_string(r.avalanche.worst_input_bit) + " -> output bit " +
                             std::to_string(r.avalanche.worst_output_bit) + ")");
    }
    return r;
}

}  // namespace keyroute
