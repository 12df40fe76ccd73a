#pragma once

/// @file
/// Maglev hashing (Eisenbud et al., "Maglev: A Fast and Reliable Software Network Load
/// Balancer", NSDI 2016, section 3.4): a lookup table that gives O(1) routing over an explicit
/// set of partition ids, with near-minimal key movement when the set changes.

#include "detail/config.hpp"
#include "detail/id_set.hpp"
#include "detail/mix.hpp"
#include "hash.hpp"
#include "reduce.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace keyroute {

namespace detail {

constexpr auto is_prime(std::uint64_t m) noexcept -> bool {
    if (m < 2) return false;
    for (std::uint64_t d = 2; d * d <= m; ++d) {
        if (m % d == 0) return false;
    }
    return true;
}

}  // namespace detail

/// Routes a key to `table[hash64(key) % M]`, a table of M slots (M prime) filled by Maglev's
/// round-robin population: each partition id p walks its own permutation of the slots,
/// `(offset(p) + j * skip(p)) % M` with offset(p) = fmix64(p ^ 0x5851f42d4c957f2d) % M and
/// skip(p) = fmix64(p ^ 0x14057b7ef767814f) % (M - 1) + 1, and ids take turns (ascending id
/// order) claiming their next free slot until the table is full. Every id gets floor(M/n) or
/// ceil(M/n) slots, so loads differ by at most one slot in M.
///
/// Resizing: keep M fixed (it is part of the contract: a different M reshuffles every key).
/// Adding or removing one of n partitions moves the minimum, 1/(n+1) resp. 1/n of the keys, plus
/// slots reshuffled between surviving ids, an excess that grows with n and shrinks with M.
/// Measured when removing one id (docs/resize.md): 1.03x the minimum at n = 12 and 1.6x at
/// n = 100 with M = 65537; 1.04x at n = 100 with M = 6553621; 6.5x at n = 1000 with M = 100003
/// and 3x with M = 1000003. Where movement matters more than O(1) routing at large n, use
/// rendezvous_partitioner or jump_partitioner. For load balance choose M >= 100 n (the paper's
/// advice); table_size_for(n) gives such a prime.
///
/// Compatibility contract: for a given key, id set and M the partition never changes between
/// releases (integer arithmetic only). The order of `ids` given to the constructor does not matter.
///
/// Thread-safety: `route()` is const and touches no shared mutable state; one instance may be
/// shared by any number of threads. Complexity: route is one hash, one exact reduction and one
/// table load, no allocation; construction is O(M log M) expected time, and keeps 4 M + 4 n bytes
/// (8 M + 20 n at its peak, while building; n = M, the most, makes that 8 M and 28 M).
///
/// Moves: a moved-from maglev_partitioner has an empty table; it may only be assigned to or
/// destroyed (route() on it is undefined). Copies are independent and complete.
template <class Hash = xxh3>
class maglev_partitioner {
    static_assert((detail::check_hash_functor<Hash>(), true));

public:
    using hash_type = Hash;

    /// The table size used when none is given: 65537, the paper's example, fine up to ~650 ids.
    static constexpr std::uint32_t default_table_size = 65537;

    /// The largest table size accepted: 2^31 - 1 (a prime; 8 GiB of table, 16 GiB while built, plus
    /// 4 resp. 20 bytes per id).
    static constexpr std::uint32_t max_table_size = 0x7fffffffU;

    /// The smallest prime >= max(65537, 100 * max_partitions): a table size that keeps the load
    /// of each of up to `max_partitions` ids within 1% of the mean. Compute it once for the
    /// largest count you will grow to, and keep it.
    /// @throws std::invalid_argument if the result would exceed `max_table_size`.
    [[nodiscard]] static auto table_size_for(std::uint64_t max_partitions) -> std::uint32_t {
        if (max_partitions == 0 || max_partitions > max_table_size / 100U) {
            detail::invalid_argument(std::string(who) + ": max_partitions must be in [1, " +
                                     std::to_string(max_table_size / 100U) + "], got " +
                                     std::to_string(max_partitions));
        }
        std::uint64_t m =
            max_partitions * 100U < default_table_size ? default_table_size : max_partitions * 100U;
        while (!detail::is_prime(m)) ++m;
        return static_cast<std::uint32_t>(m);
    }

    /// Ids 0..partitions-1 over a table of `table_size` slots.
    /// @throws std::invalid_argument if `partitions` is 0 or above `table_size`, or `table_size`
    ///         is not a prime in [2, max_table_size]; the message names the value.
    explicit maglev_partitioner(std::uint64_t partitions,
                                std::uint64_t table_size = default_table_size, Hash hash = Hash{})
        : maglev_partitioner(detail::iota_ids(partitions, checked_table_size(table_size), who),
                             table_size, hash) {}

    /// The given partition ids (any order) over a table of `table_size` slots. Name the type for
    /// one id: `maglev_partitioner<>({7})` is the count constructor (7 partitions), and
    /// `std::vector<std::uint32_t>{7}` the id set {7}.
    /// @throws std::invalid_argument if `ids` is empty, holds an id twice, or has more ids than
    ///         `table_size`, or `table_size` is not a prime in [2, max_table_size].
    explicit maglev_partitioner(std::vector<std::uint32_t> ids,
                                std::uint64_t table_size = default_table_size, Hash hash = Hash{})
        : m_hash(hash),
          m_ids(std::move(ids)),
          m_reduce(checked_table_size(table_size)),
          m_table_size(static_cast<std::uint32_t>(table_size)) {
        std::vector<double> no_weights;
        detail::check_id_set(m_ids, no_weights, m_table_size, who);
        populate();
    }

    /// The partition id of `key`, one of `ids()`. Any bytes; an empty key is a key like any other.
    [[nodiscard]] auto route(std::string_view key) const
        noexcept(std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> std::uint32_t {
        return m_table[m_reduce(detail::hash64(m_hash, key))];
    }

    /// The number of partitions (the size of `ids()`).
    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(m_ids.size());
    }

    /// The partition ids, sorted ascending.
    [[nodiscard]] auto ids() const noexcept -> const std::vector<std::uint32_t>& { return m_ids; }

    /// M, the number of slots of the lookup table.
    [[nodiscard]] auto table_size() const noexcept -> std::uint32_t { return m_table_size; }

    /// The lookup table: slot -> partition id (`route(k) == table()[hash64(k) % M]`).
    [[nodiscard]] auto table() const noexcept -> const std::vector<std::uint32_t>& {
        return m_table;
    }

    [[nodiscard]] auto hash_function() const noexcept -> const Hash& { return m_hash; }

private:
    static constexpr const char* who = "keyroute::maglev_partitioner";

    static auto checked_table_size(std::uint64_t m) -> std::uint32_t {
        if (m < 2 || m > max_table_size || !detail::is_prime(m)) {
            detail::invalid_argument(std::string(who) + ": table_size must be a prime in [2, " +
                                     std::to_string(max_table_size) + "], got " +
                                     std::to_string(m));
        }
        return static_cast<std::uint32_t>(m);
    }

    void populate() {
        const std::uint64_t m = m_table_size;
        const std::size_t n = m_ids.size();
        constexpr std::uint32_t empty = 0xffffffffU;
        std::vector<std::uint32_t> owner(m_table_size, empty);  // slot -> index into m_ids
        std::vector<std::uint64_t> position(n);                 // next slot each id tries
        std::vector<std::uint64_t> skip(n);
        for (std::size_t i = 0; i < n; ++i) {
            position[i] = detail::fmix64(std::uint64_t{m_ids[i]} ^ 0x5851f42d4c957f2dULL) % m;
            skip[i] = detail::fmix64(std::uint64_t{m_ids[i]} ^ 0x14057b7ef767814fULL) % (m - 1) + 1;
        }
        std::uint64_t filled = 0;
        while (filled < m) {
            for (std::size_t i = 0; i < n && filled < m; ++i) {
                // M is prime, so each walk visits every slot: a free one is always found.
                while (owner[position[i]] != empty) position[i] = (position[i] + skip[i]) % m;
                owner[position[i]] = static_cast<std::uint32_t>(i);
                position[i] = (position[i] + skip[i]) % m;
                ++filled;
            }
        }
        m_table.resize(m_table_size);
        for (std::size_t s = 0; s < m_table.size(); ++s) m_table[s] = m_ids[owner[s]];
    }

    Hash m_hash;
    std::vector<std::uint32_t> m_ids;
    modulo_reduction m_reduce;
    std::uint32_t m_table_size;
    std::vector<std::uint32_t> m_table;
};

}  // namespace keyroute
