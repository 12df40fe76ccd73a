#pragma once

/// @file
/// Jump consistent hash (Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm",
/// 2014, arXiv:1406.2294): partition counts can grow or shrink by one at the end with the least
/// possible key movement, and no table at all.

#include "detail/config.hpp"
#include "detail/mix.hpp"
#include "hash.hpp"
#include "partitioner.hpp"

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace keyroute {

/// The bucket in [0, buckets) of a 64-bit key under jump consistent hash, exactly as the paper's
/// reference function `JumpConsistentHash(key, num_buckets)` returns it.
///
/// Going from n to n+1 buckets moves a key only to the new bucket n, and a uniformly random key
/// moves with probability 1/(n+1); going from n to n-1 moves only the keys of bucket n-1.
///
/// @pre `buckets >= 1`. For `buckets == 0` (no answer exists) it returns 0.
/// Complexity: O(ln buckets) expected steps of a 64-bit LCG and one double division each.
/// Thread-safe (pure). The values are a compatibility contract, pinned in tests/test_jump.cpp
/// against published vectors of the paper's C++ code.
constexpr auto jump_consistent_hash(std::uint64_t key, std::uint32_t buckets) noexcept
    -> std::uint32_t {
    // b is the last bucket the key jumped to; j is the next bucket it would jump to.
    std::int64_t b = 0;
    std::int64_t j = 0;
    while (j < static_cast<std::int64_t>(buckets)) {
        b = j;
        key = key * 2862933555777941757ULL + 1U;
        // The next jump is (b + 1) / r, r uniform in (0, 1] from the LCG's top 31 bits; computed
        // as (b + 1) * (2^31 / d), the paper's order of rounding, so that results match it bit
        // for bit.
        const double inv_r =
            static_cast<double>(1ULL << 31U) / static_cast<double>((key >> 33U) + 1U);
        j = static_cast<std::int64_t>(static_cast<double>(b + 1) * inv_r);
    }
    return static_cast<std::uint32_t>(b);
}

/// Routes a key to `jump_consistent_hash(hash64(key), n)`.
///
/// `hash64` is `Hash{}(key)` for a 64-bit hash functor; for a 32-bit one it is
/// `detail::fmix64(Hash{}(key))`, MurmurHash3's 64-bit finalizer, so that jump's LCG starts from
/// a value whose 64 bits all vary (keys still collide exactly when their 32-bit hashes do).
///
/// Resizing: n -> n+1 moves ~1/(n+1) of the keys, all to partition n; n -> 2n moves ~1/2;
/// n -> n-1 moves only the keys of partition n-1. Only the last partition can be removed: to take
/// an arbitrary partition out, use keyroute::rendezvous_partitioner. See docs/resize.md.
///
/// @tparam Hash a hash functor (see hash.hpp); its `max_partitions`, if any, bounds n.
///
/// Compatibility contract: for a given key and n the partition never changes between releases.
/// Thread-safety: `route()` is const and touches no shared mutable state; one instance may be
/// shared by any number of threads. Complexity: one hash of the key plus O(ln n) arithmetic
/// steps; no allocation, no table, no lock.
template <class Hash = xxh3>
class jump_partitioner {
    static_assert((detail::check_hash_functor<Hash>(), true));

public:
    using hash_type = Hash;

    /// The largest partition count this scheme accepts.
    static constexpr std::uint32_t max_partitions = detail::hash_max_partitions<Hash>::value;

    /// @throws std::invalid_argument if `partitions` is 0 or above `max_partitions`; the message
    ///         names the value.
    explicit jump_partitioner(std::uint64_t partitions, Hash hash = Hash{})
        : m_hash(hash),
          m_partitions(detail::check_partition_count(partitions, max_partitions,
                                                     "keyroute::jump_partitioner")) {}

    /// The partition of `key`, in [0, partitions()). Any bytes; an empty key is a key like any
    /// other.
    [[nodiscard]] auto route(std::string_view key) const
        noexcept(std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> std::uint32_t {
        return jump_consistent_hash(detail::hash64(m_hash, key), m_partitions);
    }

    /// The 64-bit value `route()` feeds to jump_consistent_hash.
    [[nodiscard]] auto hash(std::string_view key) const
        noexcept(std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> std::uint64_t {
        return detail::hash64(m_hash, key);
    }

    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t { return m_partitions; }

    [[nodiscard]] auto hash_function() const noexcept -> const Hash& { return m_hash; }

private:
    Hash m_hash;
    std::uint32_t m_partitions;
};

}  // namespace keyroute
