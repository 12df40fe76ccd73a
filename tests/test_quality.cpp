// Hash quality reports: the incomplete gamma function against closed forms and published
// chi-square tables, and the report's verdict on good, linear and deliberately bad hashes.
#include "keyroute_catch.hpp"

#include <keyroute/quality.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

// Deliberately bad: the sum of the bytes. Anagrams collide, sequential ids clump.
struct byte_sum_hash {
    auto operator()(std::string_view key) const noexcept -> std::uint64_t {
        std::uint64_t sum = 0;
        for (const char c : key) sum += static_cast<unsigned char>(c);
        return sum;
    }
};

// FNV-1 64 with no finalizer: spreads keys well, but a flip of a key's last bits only reaches
// the output's low bits through one multiplication.
struct fnv1_64 {
    auto operator()(std::string_view key) const noexcept -> std::uint64_t {
        std::uint64_t h = 0xcbf29ce484222325ULL;
        for (const char c : key) {
            h *= 0x100000001b3ULL;
            h ^= static_cast<unsigned char>(c);
        }
        return h;
    }
};

auto rel_diff(double a, double b) -> double { return std::fabs(a - b) / std::fabs(b); }

// Q(k, x) for integer k: e^-x * sum_{i<k} x^i / i!, the Poisson tail, in long double.
auto poisson_q(int k, double x) -> double {
    long double term = std::exp(static_cast<long double>(-x));
    long double sum = 0;
    for (int i = 0; i < k; ++i) {
        sum += term;
        term *= static_cast<long double>(x) / (i + 1);
    }
    return static_cast<double>(sum);
}

auto small_options() -> keyroute::quality_options {
    keyroute::quality_options o;
    o.partitions = 64;
    o.keys = 200000;
    o.avalanche_keys = 4000;
    return o;
}

}  // namespace

TEST_CASE("chi-square p-values: closed forms", "[quality]") {
    for (const double x : {0.01, 0.5, 1.0, 3.0, 10.0, 50.0, 200.0, 700.0}) {
        CAPTURE(x);
        // df = 2: the exponential tail.
        CHECK(rel_diff(keyroute::chi_square_p_value(x, 2), std::exp(-x / 2)) < 1e-12);
        // df = 1: erfc(sqrt(x / 2)).
        const double df1 = std::erfc(std::sqrt(x / 2));
        if (df1 > 1e-300) CHECK(rel_diff(keyroute::chi_square_p_value(x, 1), df1) < 1e-10);
        // df = 3: erfc(sqrt(x / 2)) + sqrt(2x / pi) e^(-x / 2).
        const double df3 = df1 + std::sqrt(2 * x / 3.14159265358979323846) * std::exp(-x / 2);
        if (df3 > 1e-300) CHECK(rel_diff(keyroute::chi_square_p_value(x, 3), df3) < 1e-10);
    }
    // Even df = 2k: the Poisson tail, on both sides of the mean (series and continued fraction).
    for (const int k : {2, 5, 10, 50, 200}) {
        for (const double ratio : {0.3, 0.8, 0.99, 1.0, 1.01, 1.2, 2.0, 4.0}) {
            const double x = ratio * k;
            CAPTURE(k, x);
            CHECK(rel_diff(keyroute::regularized_gamma_q(k, x), poisson_q(k, x)) < 1e-10);
            CHECK(std::fabs(keyroute::regularized_gamma_p(k, x) +
                            keyroute::regularized_gamma_q(k, x) - 1) < 1e-14);
        }
    }
    // a = 1/2: P = erf(sqrt(x)); a = 1: P = 1 - e^-x.
    for (const double x : {0.001, 0.2, 1.5, 7.0, 30.0}) {
        CHECK(std::fabs(keyroute::regularized_gamma_p(0.5, x) - std::erf(std::sqrt(x))) < 1e-14);
        CHECK(std::fabs(keyroute::regularized_gamma_p(1.0, x) - (1 - std::exp(-x))) < 1e-14);
    }
}

TEST_CASE("chi-square p-values: published critical values", "[quality]") {
    // Upper-tail critical values, NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.4
    // (3 decimals), and R's qchisq() for df = 99 and 1000.
    struct row {
        double df, critical, p;
    };
    const row table[] = {{1, 3.841, 0.05},    {1, 6.635, 0.01},      {5, 11.070, 0.05},
                         {10, 18.307, 0.05},  {10, 23.209, 0.01},    {30, 43.773, 0.05},
                         {99, 123.225, 0.05}, {100, 135.807, 0.01},  {100, 124.342, 0.05},
                         {100, 77.929, 0.95}, {1000, 1074.679, 0.05}};
    for (const row& r : table) {
        CAPTURE(r.df, r.critical);
        // Three decimals on the statistic move the p-value by well under 0.2%.
        CHECK(rel_diff(keyroute::chi_square_p_value(r.critical, r.df), r.p) < 2e-3);
    }
    CHECK(keyroute::chi_square_p_value(0, 10) == 1.0);
    CHECK(keyroute::chi_square_p_value(1e6, 99) == 0.0);
    const double tiny = keyroute::chi_square_p_value(400, 99);
    CHECK(tiny > 0);
    CHECK(tiny < 1e-35);
}

TEST_CASE("incomplete gamma: large a keeps its accuracy", "[quality]") {
    // References: mpmath 1.3 at 40 digits, by the same series and continued fraction in
    // arbitrary precision (P(a, x) by the series below a + 1, Q by Legendre's fraction above).
    // The common factor exp(a ln x - x - lgamma(a)), computed as it reads, loses about a * 1e-16
    // of relative accuracy: 1e-9 at a = 1e6, 5e-6 at a = 2^31.
    struct row {
        double a, x, p, q;
    };
    const row table[] = {
        {1e6, 1003000.0, 0.99863825935378240852, 0.0013617406462175914794},
        {1e6, 997000.0, 0.0013381041673135996923, 0.99866189583268640031},
        {2047.5, 2318.99585632197, 0.99999999581630004989, 4.1836999501095698419e-9},
        {50.5, 80.0, 0.99983172266702870694, 0.00016827733297129305947},
        {2147483647.0, 2147576328.9, 0.97724870298091892646, 0.022751297019081073538},
        {1e9, 1e9, 0.50000420522087005696, 0.49999579477912994304},
        // Far below a: the first 0.2.8 change took ln(1 + t) there, which cancels (5.3e-9 at
        // a = 10, 2.5e-6 at a = 30).
        {10.0, 1e-6, 2.7557294171888974953e-67, 1.0},
        {20.0, 1e-6, 4.1103137087258167858e-139, 1.0},
        {30.0, 1e-8, 3.7699875923321569403e-273, 1.0},
    };
    for (const row& r : table) {
        CAPTURE(r.a, r.x);
        CHECK(rel_diff(keyroute::regularized_gamma_p(r.a, r.x), r.p) < 1e-11);
        CHECK(rel_diff(keyroute::regularized_gamma_q(r.a, r.x), r.q) < 1e-11);
    }
}

// P(X >= k) for X ~ Poisson(mean), summed term by term from k up in long double: independent of
// the incomplete gamma function the automatic limit uses.
auto poisson_tail(double mean, double k) -> long double {
    const long double m = mean;
    long double sum = 0;
    for (long double i = k;; ++i) {
        const long double term = std::exp(i * std::log(m) - m - std::lgamma(i + 1));
        sum += term;
        if (i > m && term < sum * 1e-20L) break;
    }
    return sum;
}

TEST_CASE("the automatic max/mean limit fails a uniform hash with probability below 1e-9",
          "[quality]") {
    // A limit of 1 + 7 / sqrt(mean), one partition's normal 7 sigma, is too tight with many
    // partitions of few keys each (5 per partition, 1e6 partitions: 4.13): xxh3 would fail 2
    // reports in 40. The limit is now the smallest whole count k with P(X >= k) <= 1e-9 /
    // partitions.
    struct row {
        std::uint64_t keys;
        std::uint32_t partitions;
    };
    for (const row r : {row{1000000, 100}, row{1000000, 2}, row{5000000, 1000000},
                        row{500000, 100000}, row{20000, 4000}}) {
        keyroute::quality_options o;
        o.partitions = r.partitions;
        o.keys = r.keys;
        const double mean = static_cast<double>(r.keys) / r.partitions;
        const double k =
            std::round(keyroute::detail::automatic_load_limit(mean, r.partitions) * mean);
        CAPTURE(r.keys, r.partitions, k);
        const long double alpha = 1e-9L / r.partitions;
        CHECK(poisson_tail(mean, k) <= alpha);
        CHECK(poisson_tail(mean, k - 1) > alpha);  // the smallest such k
        // A failure means a count above k: probability below 1e-9 over all partitions.
        CHECK(poisson_tail(mean, k + 1) * r.partitions < 1e-9L);
    }
}

TEST_CASE("incomplete gamma: bad arguments throw", "[quality]") {
    // Beyond 2^32 the sums would be cut short by their step limit (Q(1e16, 1e16) came out 1).
    CHECK_THROWS_WITH(keyroute::regularized_gamma_q(4294967297.0, 4294967297.0),
                      keyroute_test::contains("a must be in (0, 2^32]"));
    CHECK_THROWS_AS(keyroute::chi_square_p_value(1e10, 2e10), std::invalid_argument);
    CHECK(keyroute::regularized_gamma_q(4294967296.0, 4294967296.0) > 0.49);
    CHECK_THROWS_AS(keyroute::regularized_gamma_p(0, 1), std::invalid_argument);
    CHECK_THROWS_AS(keyroute::regularized_gamma_q(-1, 1), std::invalid_argument);
    CHECK_THROWS_AS(keyroute::regularized_gamma_p(1, -0.5), std::invalid_argument);
    CHECK_THROWS_AS(keyroute::regularized_gamma_q(1, std::nan("")), std::invalid_argument);
    CHECK_THROWS_WITH(keyroute::chi_square_p_value(5, 0),
                      keyroute_test::contains("degrees_of_freedom"));
    CHECK_THROWS_WITH(keyroute::chi_square_p_value(-1, 3), keyroute_test::contains("statistic"));
}

TEST_CASE("xxh3 passes the quality report with the defaults", "[quality]") {
    const auto r = keyroute::hash_quality<keyroute::xxh3>("xxh3");
    INFO(r.failures.size());
    CHECK(r.passed());
    REQUIRE(r.distribution.size() == 2);
    for (const auto& d : r.distribution) {
        CHECK(d.count == 1000000);
        CHECK(d.degrees_of_freedom == 99);
        CHECK(d.p_value >= 1e-4);
        CHECK(d.max_over_mean < 1.07);
    }
    CHECK(r.avalanche.input_bits == 128);
    CHECK(r.avalanche.output_bits == 64);
    CHECK(r.avalanche.mean_bias < 0.0106);
    CHECK(r.avalanche.worst_bias < 0.0425);
}

TEST_CASE("a byte-sum hash fails on sequential ids and on avalanche", "[quality]") {
    const auto r = keyroute::hash_quality<byte_sum_hash>("byte sum", {}, small_options());
    CHECK_FALSE(r.passed());
    CHECK(r.distribution.at(1).p_value < 1e-100);
    CHECK(r.distribution.at(1).max_over_mean > 2);
    CHECK(r.avalanche.worst_bias == 1.0);
    std::ostringstream text;
    r.write_text(text);
    CHECK_THAT(text.str(), keyroute_test::contains("FAIL: sequential ids"));
    CHECK_THAT(text.str(), keyroute_test::contains("FAIL: avalanche"));
}

TEST_CASE("FNV-1 without a finalizer spreads keys but fails avalanche", "[quality]") {
    const auto r = keyroute::hash_quality<fnv1_64>("fnv1_64", {}, small_options());
    CHECK(r.distribution.at(0).p_value >= 1e-4);
    CHECK_FALSE(r.passed());
    CHECK(r.avalanche.worst_bias > 0.9);
    for (const auto& f : r.failures) CHECK_THAT(f, keyroute_test::contains("avalanche"));
}

TEST_CASE("linear hashes fail avalanche; murmur-family hashes pass", "[quality]") {
    CHECK_FALSE(keyroute::hash_quality<keyroute::crc32>("crc32", {}, small_options()).passed());
    CHECK_FALSE(
        keyroute::hash_quality<keyroute::java_string_hash>("java", {}, small_options()).passed());
    CHECK(keyroute::hash_quality<keyroute::murmur2>("murmur2", {}, small_options()).passed());
    CHECK(keyroute::hash_quality<keyroute::murmur3_32>("murmur3", {}, small_options()).passed());
    const auto fastrange = keyroute::hash_quality<keyroute::xxh3, keyroute::fastrange_reduction>(
        "xxh3 fastrange", {}, small_options());
    CHECK(fastrange.passed());
    CHECK(fastrange.avalanche.output_bits == 64);
}

TEST_CASE("hash quality: options are validated, JSON names every field", "[quality]") {
    keyroute::quality_options o = small_options();
    o.partitions = 1;
    CHECK_THROWS_WITH(keyroute::hash_quality<keyroute::xxh3>("x", {}, o),
                      keyroute_test::contains("partitions"));
    o = small_options();
    o.keys = 10;
    CHECK_THROWS_WITH(keyroute::hash_quality<keyroute::xxh3>("x", {}, o),
                      keyroute_test::contains("quality_options.keys"));
    o = small_options();
    o.avalanche_key_size = 0;
    CHECK_THROWS_WITH(keyroute::hash_quality<keyroute::xxh3>("x", {}, o),
                      keyroute_test::contains("avalanche_key_size"));
    o = small_options();
    o.max_worst_bias = -1;
    CHECK_THROWS_AS(keyroute::hash_quality<keyroute::xxh3>("x", {}, o), std::invalid_argument);

    o = small_options();
    o.max_worst_bias = 1e-9;  // an impossible limit fails even a good hash
    const auto r = keyroute::hash_quality<keyroute::xxh3>("quote\"d", {}, o);
    CHECK_FALSE(r.passed());
    std::ostringstream json;
    r.write_json(json);
    for (const char* field :
         {"\"name\":\"quote\\\"d\"", "\"passed\":false", "\"p_value\":", "\"chi_square\":",
          "\"max_over_mean\":", "\"mean_bias\":", "\"worst_bias\":", "\"limits\":"}) {
        CHECK_THAT(json.str(), keyroute_test::contains(field));
    }
}
