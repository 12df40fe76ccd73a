#pragma once

/// @file
/// Rendezvous (highest random weight) hashing over an explicit set of partition ids, optionally
/// weighted: any partition can be added or removed, and only the keys that must move do.

#include "detail/config.hpp"
#include "detail/id_set.hpp"
#include "detail/mix.hpp"
#include "hash.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace keyroute {

/// Routes a key to the partition id with the highest score for that key (Thaler and Ravishankar's
/// highest random weight; weighted as in Schindelhauer and Schomaker's logarithmic method).
///
/// With h = hash64(key) (the 64-bit hash, or fmix64 of a 32-bit one) and, for partition id p,
/// s(p) = fmix64(h ^ fmix64(p ^ 0x9e3779b97f4a7c15)):
/// - unweighted (no weights, or all weights equal): the id with the largest s(p);
/// - weighted: the id with the largest w(p) / -ln(u(p)), u(p) = ((s(p) >> 11) + 0.5) / 2^53 as
///   a double (from s(p) >> 11 = 2^52 on, the + 0.5 rounds to even, so pairs of draws share a u;
///   the top one rounds up to 1 and is taken as the double below 1), and
///   w(p) the weight times the one power of two that puts the largest weight in [1, 2): exact,
///   so only ratios matter at any magnitude (weights near DBL_MAX cannot overflow the score to
///   inf, nor subnormal ones underflow it). A key then lands on p with probability
///   w(p) / sum(w).
/// Ties (probability ~2^-64 per key unweighted, ~2^-53 weighted) go to the smaller id. The order
/// of `ids` given to the constructor does not matter.
///
/// Resizing: adding a partition moves only the keys it wins (w(new) / sum of the new weights;
/// 1/(n+1) unweighted); removing one moves only its own keys; changing one weight moves keys only
/// to or from that partition. See docs/resize.md.
///
/// Compatibility contract: for a given key and id set (and weights) the partition never changes
/// between releases. The unweighted result is integer-only; the weighted one calls std::log, so
/// it is the same wherever the same libm log is used (and the code is not built with
/// -ffast-math, which may use another), and elsewhere may differ in the rare key whose two best
/// scores are within an ulp.
///
/// Thread-safety: `route()` is const and touches no shared mutable state; one instance may be
/// shared by any number of threads. Complexity: one hash of the key plus O(n) per route (n mixes,
/// and n logarithms when weighted: ~1 ns resp. ~7 ns per partition, see bench/README.md); no
/// allocation. For hundreds of partitions or more, keyroute::maglev_partitioner is O(1).
///
/// Moves: a moved-from rendezvous_partitioner has no ids; it may only be assigned to or destroyed
/// (route() on it is undefined). Copies are independent and complete.
template <class Hash = xxh3>
class rendezvous_partitioner {
    static_assert((detail::check_hash_functor<Hash>(), true));

public:
    using hash_type = Hash;

    /// The largest id set accepted (2^24): beyond, O(n) routing is not a sensible choice.
    static constexpr std::uint32_t max_partitions = 1U << 24U;

    /// Ids 0..partitions-1, unweighted.
    /// @throws std::invalid_argument if `partitions` is 0 or above `max_partitions`.
    explicit rendezvous_partitioner(std::uint64_t partitions, Hash hash = Hash{})
        : rendezvous_partitioner(detail::iota_ids(partitions, max_partitions, who), {}, hash) {}

    /// The given partition ids (any order), unweighted. (For a custom hash without weights, pass
    /// `(ids, {}, hash)`.) Name the type for one id: `rendezvous_partitioner<>({5})` is the count
    /// constructor (5 partitions), and `std::vector<std::uint32_t>{5}` the id set {5}.
    /// @throws std::invalid_argument if `ids` is empty, larger than `max_partitions`, or holds an
    ///         id twice; the message names the id.
    explicit rendezvous_partitioner(std::vector<std::uint32_t> ids)
        : rendezvous_partitioner(std::move(ids), {}, Hash{}) {}

    /// The given partition ids with one weight each (`weights[i]` for `ids[i]`): a key goes to id
    /// p with probability weights[p] / sum(weights). Only ratios matter. An empty `weights` means
    /// unweighted.
    /// @throws std::invalid_argument as above, or if `weights.size() != ids.size()`, or a weight
    ///         is zero, negative, infinite or NaN (the message names its index, value and id), or
    ///         the largest weight is more than 2^960 (about 1e289) times the smallest.
    rendezvous_partitioner(std::vector<std::uint32_t> ids, std::vector<double> weights,
                           Hash hash = Hash{})
        : m_hash(hash),
          m_ids(std::move(ids)),
          m_weights(std::move(weights)) {
        detail::check_id_set(m_ids, m_weights, max_partitions, who);
        m_seeds.reserve(m_ids.size());
        for (const std::uint32_t id : m_ids) m_seeds.push_back(seed_of(id));
        bool weighted = false;
        for (const double w : m_weights) weighted = weighted || w != m_weights.front();
        if (weighted) m_scaled = scaled(m_weights);
    }

    /// The partition id of `key`, one of `ids()`. Any bytes; an empty key is a key like any other.
    [[nodiscard]] auto route(std::string_view key) const
        noexcept(std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> std::uint32_t {
        const std::uint64_t h = detail::hash64(m_hash, key);
        return weighted() ? m_ids[best_weighted(h)] : m_ids[best_unweighted(h)];
    }

    /// The number of partitions (the size of `ids()`).
    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(m_ids.size());
    }

    /// The partition ids, sorted ascending.
    [[nodiscard]] auto ids() const noexcept -> const std::vector<std::uint32_t>& { return m_ids; }

    /// The weights, aligned with `ids()`; empty when constructed without weights.
    [[nodiscard]] auto weights() const noexcept -> const std::vector<double>& { return m_weights; }

    /// False when routing is unweighted (no weights, or all equal).
    [[nodiscard]] auto weighted() const noexcept -> bool { return !m_scaled.empty(); }

    [[nodiscard]] auto hash_function() const noexcept -> const Hash& { return m_hash; }

private:
    static constexpr const char* who = "keyroute::rendezvous_partitioner";

    static constexpr auto seed_of(std::uint32_t id) noexcept -> std::uint64_t {
        return detail::fmix64(std::uint64_t{id} ^ 0x9e3779b97f4a7c15ULL);
    }

    /// The weights times 2^-e, e the largest's binary exponent: the largest in [1, 2), the
    /// smallest at least 2^-960 (the ratio is checked on the scaled values, where 2^-960 times
    /// the largest is exact), so every score w / -ln(u) (-ln(u) in [2^-54, 37.5]) is a normal
    /// double and scaling changes no comparison.
    static auto scaled(const std::vector<double>& weights) -> std::vector<double> {
        const double largest = *std::max_element(weights.begin(), weights.end());
        const double smallest = *std::min_element(weights.begin(), weights.end());
        const int e = std::ilogb(largest);
        if (std::ldexp(smallest, -e) < std::ldexp(std::ldexp(largest, -e), -960)) {
            std::ostringstream msg;
            msg << who << ": weights must be within a factor of 2^960 of each other, got "
                << largest << " and " << smallest;
            detail::invalid_argument(msg.str());
        }
        std::vector<double> out(weights.size());
        for (std::size_t i = 0; i < weights.size(); ++i) out[i] = std::ldexp(weights[i], -e);
        return out;
    }

    [[nodiscard]] auto best_unweighted(std::uint64_t h) const noexcept -> std::size_t {
        std::size_t best = 0;
        std::uint64_t best_score = detail::fmix64(h ^ m_seeds[0]);
        for (std::size_t i = 1; i < m_seeds.size(); ++i) {
            const std::uint64_t s = detail::fmix64(h ^ m_seeds[i]);
            // Strictly greater: on a tie the smaller id (earlier in sorted order) stays.
            if (s > best_score) {
                best_score = s;
                best = i;
            }
        }
        return best;
    }

    [[nodiscard]] auto best_weighted(std::uint64_t h) const noexcept -> std::size_t {
        std::size_t best = 0;
        double best_score = -1.0;
        for (std::size_t i = 0; i < m_seeds.size(); ++i) {
            const std::uint64_t s = detail::fmix64(h ^ m_seeds[i]);
            // u in (0, 1): the top 53 bits, centred, and kept below 1 (2^53 - 1 + 0.5 rounds to
            // 2^53, and -ln(1) = 0 gave that id the score -inf: it could never win).
            const double u =
                std::min((static_cast<double>(s >> 11U) + 0.5) * 0x1.0p-53, 0x1.fffffffffffffp-1);
            const double score = m_scaled[i] / -std::log(u);
            if (score > best_score) {
                best_score = score;
                best = i;
            }
        }
        return best;
    }

    Hash m_hash;
    std::vector<std::uint32_t> m_ids;
    std::vector<double> m_weights;
    std::vector<double> m_scaled;  // the weights scaled (see scaled()); empty: unweighted
    std::vector<std::uint64_t> m_seeds;
};

}  // namespace keyroute
