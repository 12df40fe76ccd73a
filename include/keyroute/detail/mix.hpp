#pragma once

/// @file
/// 64-bit mixing shared by the resize-friendly partitioners (jump, rendezvous, maglev).

#include "../hash.hpp"
#include "int128.hpp"

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace keyroute::detail {

/// MurmurHash3's 64-bit finalizer (fmix64): a bijection of the 64-bit integers in which every
/// input bit flips each output bit with probability close to 1/2. Compatibility contract: the
/// resize partitioners' results depend on it.
constexpr auto fmix64(std::uint64_t x) noexcept -> std::uint64_t {
    x ^= x >> 33U;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33U;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33U;
    return x;
}

/// SplitMix64's finalizer (Steele, Lea and Flood, 2014): the salting router's mixer for seeds,
/// lane draws and failover scores.
constexpr auto mix64(std::uint64_t x) noexcept -> std::uint64_t {
    x ^= x >> 30U;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27U;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31U;
    return x;
}

/// The 128-bit product of a and b, its halves xored: the fold XXH3 mixes short inputs with
/// (xxhash.h, XXH3_mul128_fold64). With a secret odd b it spreads every bit of a over both
/// halves of the result in three instructions.
inline auto mul_fold64(std::uint64_t a, std::uint64_t b) noexcept -> std::uint64_t {
    const uint128 p = static_cast<uint128>(a) * b;
    return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64U);
}

/// The 64-bit value a resize partitioner routes on: the hash itself when `Hash` returns 64 bits,
/// fmix64 of it when `Hash` returns 32 bits (so that all 64 bits vary; the map is one-to-one, so
/// two keys share a value exactly when their 32-bit hashes are equal).
template <class Hash>
inline auto hash64(const Hash& hash, std::string_view key) noexcept(
    std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> std::uint64_t {
    if constexpr (std::is_same_v<hash_result_t<Hash>, std::uint64_t>) {
        return hash(key);
    } else {
        return fmix64(hash(key));
    }
}

}  // namespace keyroute::detail
