#pragma once

/// @file
/// 64-bit mixing shared by the resize-friendly partitioners (jump, rendezvous, maglev).

#include "../hash.hpp"

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
