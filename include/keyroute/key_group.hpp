#pragma once

/// @file
/// Key groups as Apache Flink assigns keyed state: keys hash into a fixed number of key groups,
/// and each partition owns one contiguous range of groups. Rescaling moves whole groups.

#include "detail/config.hpp"
#include "hash.hpp"
#include "partitioner.hpp"
#include "reduce.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace keyroute {

/// An inclusive range of key groups, [first, last].
struct key_group_range {
    std::uint32_t first;
    std::uint32_t last;
};

/// Routes a key to key group g = Hash{}(key) % G (G = max_key_groups, fixed for the life of the
/// data), then g to partition floor(g * n / G).
///
/// The second step is Flink's `KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup`
/// (`keyGroupId * parallelism / maxParallelism`, flink-runtime, org.apache.flink.runtime.state),
/// and key_groups_of() is its `computeKeyGroupRangeForOperatorIndex`. The first step is not
/// Flink's (`MathUtils.murmurHash(key.hashCode()) % maxParallelism` of a Java object): keyroute
/// hashes the key's bytes with `Hash`, so groups match Flink's layout, not Flink's keys.
/// Flink computes in 32-bit ints and so caps G at 32768; keyroute computes in 64 bits and
/// accepts any G up to 2^32-1. G defaults to 128, Flink's default lower bound of max parallelism.
///
/// Resizing n -> m moves exactly the groups g with floor(g n / G) != floor(g m / G), each whole
/// (docs/resize.md gives the shares); n can never exceed G, so pick G for the largest count you
/// will need. When G is a multiple of both n and m, every partition owns G/n groups exactly.
///
/// @tparam Hash a hash functor (see hash.hpp); 32-bit ones are reduced as they are.
///
/// Compatibility contract: for a given key, n and G the partition never changes between releases.
/// Thread-safety: `route()` is const and touches no shared mutable state; one instance may be
/// shared by any number of threads. Complexity: one hash, one exact reduction, one 64-bit
/// multiply and division; no allocation, no table.
template <class Hash = xxh3>
class key_group_partitioner {
    static_assert((detail::check_hash_functor<Hash>(), true));

public:
    using hash_type = Hash;

    /// Flink's default (lower bound of) max parallelism, the number of key groups.
    static constexpr std::uint32_t default_max_key_groups = 128;

    /// The largest partition count, and the largest number of key groups, accepted.
    static constexpr std::uint32_t max_partitions = detail::hash_max_partitions<Hash>::value;

    /// n = `partitions` partitions over G = `max_key_groups` key groups.
    /// @throws std::invalid_argument if `max_key_groups` is 0 or above `max_partitions`, or
    ///         `partitions` is 0 or above `max_key_groups`; the message names the value.
    explicit key_group_partitioner(std::uint64_t partitions,
                                   std::uint64_t max_key_groups = default_max_key_groups,
                                   Hash hash = Hash{})
        : m_hash(hash),
          m_groups(check_groups(max_key_groups)),
          m_reduce(m_groups),
          m_partitions(check_partitions(partitions, m_groups)) {}

    /// The partition of `key`, in [0, partitions()): `partition_of_group(key_group(key))`.
    [[nodiscard]] auto route(std::string_view key) const
        noexcept(std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> std::uint32_t {
        return partition_of_group(key_group(key));
    }

    /// The key group of `key`, in [0, max_key_groups()): `Hash{}(key) % G`.
    [[nodiscard]] auto key_group(std::string_view key) const
        noexcept(std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> std::uint32_t {
        return m_reduce(m_hash(key));
    }

    /// The partition owning key group `group`: floor(group * n / G).
    /// @pre `group < max_key_groups()`.
    [[nodiscard]] auto partition_of_group(std::uint32_t group) const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(std::uint64_t{group} * m_partitions / m_groups);
    }

    /// The key groups partition `partition` owns: [ceil(p G / n), floor(((p + 1) G - 1) / n)],
    /// never empty.
    /// @pre `partition < partitions()`.
    [[nodiscard]] auto key_groups_of(std::uint32_t partition) const noexcept -> key_group_range {
        const std::uint64_t p = partition;
        const std::uint64_t n = m_partitions;
        const std::uint64_t g = m_groups;
        return {static_cast<std::uint32_t>((p * g + n - 1) / n),
                static_cast<std::uint32_t>(((p + 1) * g - 1) / n)};
    }

    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t { return m_partitions; }

    /// G, the number of key groups.
    [[nodiscard]] auto max_key_groups() const noexcept -> std::uint32_t { return m_groups; }

    [[nodiscard]] auto hash_function() const noexcept -> const Hash& { return m_hash; }

private:
    static constexpr const char* who = "keyroute::key_group_partitioner";

    static auto check_groups(std::uint64_t groups) -> std::uint32_t {
        if (groups == 0 || groups > max_partitions) {
            detail::invalid_argument(std::string(who) + ": max_key_groups must be in [1, " +
                                     std::to_string(max_partitions) + "], got " +
                                     std::to_string(groups));
        }
        return static_cast<std::uint32_t>(groups);
    }

    static auto check_partitions(std::uint64_t partitions, std::uint32_t groups) -> std::uint32_t {
        if (partitions == 0 || partitions > groups) {
            detail::invalid_argument(
                std::string(who) + ": partitions must be in [1, max_key_groups = " +
                std::to_string(groups) + "], got " + std::to_string(partitions));
        }
        return static_cast<std::uint32_t>(partitions);
    }

    Hash m_hash;
    std::uint32_t m_groups;
    modulo_reduction m_reduce;
    std::uint32_t m_partitions;
};

}  // namespace keyroute
