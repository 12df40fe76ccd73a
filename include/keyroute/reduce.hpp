#pragma once

/// @file
/// Reductions: how a partitioner turns a 32- or 64-bit hash into a partition in [0, n).
///
/// The reduction interface (robin-map's growth policies are the model):
///
///     struct my_reduction {
///         explicit my_reduction(std::uint32_t n);           // n >= 1, checked by the caller
///         std::uint32_t operator()(std::uint32_t h) const noexcept;
///         std::uint32_t operator()(std::uint64_t h) const noexcept;
///     };
///
/// modulo_reduction and fastmod_reduction return exactly `h % n` (the contract of every named
/// partitioner); fold32_reduction (hash_partitioner's default) returns `fold32(h) % n`, the exact
/// remainder of the hash folded to 32 bits; fastrange_reduction returns `(h * n) >> bits`, a
/// different but equally uniform mapping for users who need no compatibility with another client.

#include "detail/int128.hpp"

#include <cstdint>

namespace keyroute {

/// Exact `h % n` with the hardware divider.
class modulo_reduction {
public:
    constexpr explicit modulo_reduction(std::uint32_t n) noexcept : m_n(n) {}

    [[nodiscard]] constexpr auto operator()(std::uint32_t h) const noexcept -> std::uint32_t {
        return h % m_n;
    }
    [[nodiscard]] constexpr auto operator()(std::uint64_t h) const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(h % m_n);
    }

private:
    std::uint32_t m_n;
};

/// Exact `h % n` by multiplication with a precomputed inverse (Lemire, Kaser and Kurz, "Faster
/// Remainder by Direct Computation", 2019): with M = floor((2^F - 1) / n) + 1 and F = 2N bits for
/// N-bit hashes, h % n = ((M * h mod 2^F) * n) >> F for every h and every n >= 1.
class fastmod_reduction {
public:
    constexpr explicit fastmod_reduction(std::uint32_t n) noexcept
        : m_m32(~std::uint64_t{0} / n + 1),
          m_m64(~detail::uint128{0} / n + 1),
          m_n(n) {}

    [[nodiscard]] constexpr auto operator()(std::uint32_t h) const noexcept -> std::uint32_t {
        const std::uint64_t low = m_m32 * h;
        return static_cast<std::uint32_t>((detail::uint128{low} * m_n) >> 64U);
    }
    [[nodiscard]] constexpr auto operator()(std::uint64_t h) const noexcept -> std::uint32_t {
        const detail::uint128 low = m_m64 * h;
        // (low * n) >> 128, with low split in 64-bit halves so every product fits 128 bits.
        const detail::uint128 bottom =
            (detail::uint128{static_cast<std::uint64_t>(low)} * m_n) >> 64U;
        const detail::uint128 top = static_cast<detail::uint128>(low >> 64U) * m_n;
        return static_cast<std::uint32_t>((bottom + top) >> 64U);
    }

private:
    std::uint64_t m_m32;
    detail::uint128 m_m64;
    std::uint32_t m_n;
};

/// Multiply-shift (Lemire's "fastrange"): `(h * n) >> 32` or `>> 64`. Uses the hash's high bits;
/// not `h % n`, so it matches no other client. The cheapest uniform reduction.
class fastrange_reduction {
public:
    constexpr explicit fastrange_reduction(std::uint32_t n) noexcept : m_n(n) {}

    [[nodiscard]] constexpr auto operator()(std::uint32_t h) const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>((std::uint64_t{h} * m_n) >> 32U);
    }
    [[nodiscard]] constexpr auto operator()(std::uint64_t h) const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>((detail::uint128{h} * m_n) >> 64U);
    }

private:
    std::uint32_t m_n;
};

/// A 64-bit hash folded to 32 bits: `uint32_t(h ^ (h >> 32))`, the value of Java's
/// `Long.hashCode(h)` read as unsigned. A 32-bit hash is returned unchanged.
[[nodiscard]] constexpr auto fold32(std::uint64_t h) noexcept -> std::uint32_t {
    return static_cast<std::uint32_t>(h ^ (h >> 32U));
}
[[nodiscard]] constexpr auto fold32(std::uint32_t h) noexcept -> std::uint32_t { return h; }

/// Exact `fold32(h) % n`: the hash folded to 32 bits (both halves of a 64-bit hash count), then
/// its remainder by n, computed by `Exact` (modulo_reduction or fastmod_reduction: the same
/// partitions). hash_partitioner's default, because a 32-bit remainder is nearly free where a
/// 64-bit one is not: the 64-bit divide or its multiply-based replacements cost about 1 ns per
/// key on the reference machine, half of what XXH3 takes for a 16-byte key, while the 32-bit
/// divide hides behind the hash (bench/README.md, "The exact reduction"). The remainder of a
/// uniform 32-bit value is uniform within n / 2^32 relative: 2.3e-7 for 1000 partitions, 0.1%
/// for 4 million. Above 2^31 partitions the low partitions (those below 2^32 mod n) get two of
/// the 32-bit values and the others one: up to twice the load. Use modulo_reduction there.
///
/// For another language: `Integer.remainderUnsigned(Long.hashCode(h), n)` in Java,
/// `uint32(h ^ (h >> 32)) % n` in Go.
template <class Exact = modulo_reduction>
class fold32_reduction {
public:
    constexpr explicit fold32_reduction(std::uint32_t n) noexcept : m_exact(n) {}

    [[nodiscard]] constexpr auto operator()(std::uint32_t h) const noexcept -> std::uint32_t {
        return m_exact(h);
    }
    [[nodiscard]] constexpr auto operator()(std::uint64_t h) const noexcept -> std::uint32_t {
        return m_exact(fold32(h));
    }

private:
    Exact m_exact;
};

/// hash_partitioner's default reduction: `fold32(h) % n` with the hardware divide, measured
/// fastest on the reference machine (AMD Zen 5). On CPUs with a slow divide (Intel before Ice
/// Lake: tens of cycles, per Agner Fog's instruction tables) measure
/// `hash_partitioner<xxh3, fold32_reduction<fastmod_reduction>>` with bench_partitioners: the
/// same partitions.
using default_reduction = fold32_reduction<modulo_reduction>;

}  // namespace keyroute
