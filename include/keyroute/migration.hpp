#pragma once

/// @file
/// What moves when a partitioning changes: route a sample of keys through the old and the new
/// partitioner and report the share of keys and of traffic that changes partition, and each
/// partition's inflow, outflow, old load and new load.
///
///     keyroute::kafka_partitioner before(12), after(13);
///     auto report = keyroute::compare_partitioners(before, after);   // 1M generated keys
///     report.write_text(std::cout);  // or, with real keys and their traffic:
///     auto real = keyroute::compare_partitioners(before, after, keys, events_per_key);

#include "detail/config.hpp"
#include "detail/json.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <iterator>
#include <locale>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace keyroute {

/// One partition id's share of a migration. Traffic is the sum of the keys' weights (their key
/// count when the sample is unweighted).
struct partition_flow {
    std::uint32_t partition = 0;  ///< the partition id
    bool in_old = false;          ///< the old partitioner has this partition
    bool in_new = false;          ///< the new partitioner has this partition
    std::uint64_t old_keys = 0;   ///< sampled keys the old partitioner routes here
    std::uint64_t new_keys = 0;   ///< sampled keys the new partitioner routes here
    std::uint64_t keys_in = 0;    ///< keys routed here now that went elsewhere before
    std::uint64_t keys_out = 0;   ///< keys routed here before that go elsewhere now
    double old_traffic = 0;       ///< traffic routed here before (old load)
    double new_traffic = 0;       ///< traffic routed here now (new load)
    double traffic_in = 0;        ///< traffic that arrives from other partitions (inflow)
    double traffic_out = 0;       ///< traffic that leaves for other partitions (outflow)
};

/// The result of compare_partitioners(). Plain data; the writers are const and thread-safe.
struct migration_report {
    std::string old_label;  ///< optional names for the writers, e.g. "kafka n=12"
    std::string new_label;
    std::uint64_t keys = 0;        ///< keys in the sample
    std::uint64_t moved_keys = 0;  ///< keys whose partition changes
    double traffic = 0;            ///< total weight of the sample (= keys when unweighted)
    double moved_traffic = 0;      ///< weight of the keys whose partition changes
    bool weighted = false;         ///< per-key weights were given
    /// Sorted by id: every partition of either side (when the partitioner exposes `ids()`, or
    /// has at most 2^20 partitions), and any other id a key was routed to. `in_old` and `in_new`
    /// hold either way: a partitioner without `ids()` has the partitions [0, partitions()).
    std::vector<partition_flow> partitions;

    /// moved_keys / keys, in [0, 1]; 0 for an empty sample.
    [[nodiscard]] auto moved_key_share() const noexcept -> double {
        return keys == 0 ? 0.0 : static_cast<double>(moved_keys) / static_cast<double>(keys);
    }

    /// moved_traffic / traffic, in [0, 1]; 0 when there is no traffic.
    [[nodiscard]] auto moved_traffic_share() const noexcept -> double {
        return traffic > 0 ? moved_traffic / traffic : 0.0;
    }

    /// A human-readable summary and a per-partition table (loads and flows as % of all traffic),
    /// listing at most `max_rows` partitions (by id) and counting the rest.
    void write_text(std::ostream& out, std::size_t max_rows = 64) const {
        std::ostringstream s;
        s.imbue(std::locale::classic());
        s << "migration";
        if (!old_label.empty() || !new_label.empty()) {
            s << ": " << (old_label.empty() ? "old" : old_label) << " -> "
              << (new_label.empty() ? "new" : new_label);
        }
        s << "\nsample: " << keys << " keys, "
          << (weighted ? "weighted (traffic = sum of weights)" : "unweighted (traffic = key count)")
          << "\n"
          << std::fixed << std::setprecision(2) << "moved: " << moved_keys << " keys ("
          << 100 * moved_key_share() << "%), " << 100 * moved_traffic_share() << "% of traffic\n";
        s << std::setw(10) << "partition" << std::setw(10) << "old %" << std::setw(10) << "new %"
          << std::setw(10) << "in %" << std::setw(10) << "out %" << std::setw(12) << "old keys"
          << std::setw(12) << "new keys" << std::setw(12) << "keys in" << std::setw(12)
          << "keys out"
          << "\n";
        // Share first, then percent: 100 / traffic overflows when the traffic is below ~1e-306.
        const auto percent = [&](double part) {
            return traffic > 0 ? 100 * (part / traffic) : 0.0;
        };
        const std::size_t rows = std::min(max_rows, partitions.size());
        for (std::size_t i = 0; i < rows; ++i) {
            const partition_flow& f = partitions[i];
            s << std::setw(10) << f.partition << std::setw(10) << percent(f.old_traffic)
              << std::setw(10) << percent(f.new_traffic) << std::setw(10) << percent(f.traffic_in)
              << std::setw(10) << percent(f.traffic_out) << std::setw(12) << f.old_keys
              << std::setw(12) << f.new_keys << std::setw(12) << f.keys_in << std::setw(12)
              << f.keys_out << (f.in_old || f.in_new ? "" : "  (outside both)")
              << (f.in_old && !f.in_new ? "  (removed)" : "")
              << (f.in_new && !f.in_old ? "  (added)" : "") << "\n";
        }
        if (rows < partitions.size()) {
            s << "... " << partitions.size() - rows << " more partitions\n";
        }
        out << s.str();
    }

    /// The report as one JSON object: the scalar fields above (`old_label` and `new_label`
    /// spelled `old` and `new`), `moved_key_share`, `moved_traffic_share`, and `partitions`, an
    /// array of objects with the fields of partition_flow (`partition` spelled `id`). Numbers in
    /// the C locale, 17 significant digits.
    void write_json(std::ostream& out) const {
        std::ostringstream s;
        s.imbue(std::locale::classic());
        s << std::setprecision(17);
        s << "{\"old\":";
        detail::write_json_string(s, old_label);
        s << ",\"new\":";
        detail::write_json_string(s, new_label);
        s << ",\"keys\":" << keys << ",\"moved_keys\":" << moved_keys
          << ",\"moved_key_share\":" << moved_key_share() << ",\"traffic\":" << traffic
          << ",\"moved_traffic\":" << moved_traffic
          << ",\"moved_traffic_share\":" << moved_traffic_share()
          << ",\"weighted\":" << (weighted ? "true" : "false") << ",\"partitions\":[";
        for (std::size_t i = 0; i < partitions.size(); ++i) {
            const partition_flow& f = partitions[i];
            s << (i == 0 ? "" : ",") << "{\"id\":" << f.partition
              << ",\"in_old\":" << (f.in_old ? "true" : "false")
              << ",\"in_new\":" << (f.in_new ? "true" : "false") << ",\"old_keys\":" << f.old_keys
              << ",\"new_keys\":" << f.new_keys << ",\"keys_in\":" << f.keys_in
              << ",\"keys_out\":" << f.keys_out << ",\"old_traffic\":" << f.old_traffic
              << ",\"new_traffic\":" << f.new_traffic << ",\"traffic_in\":" << f.traffic_in
              << ",\"traffic_out\":" << f.traffic_out << "}";
        }
        s << "]}\n";
        out << s.str();
    }
};

/// A generated key sample: `count` keys of `key_size` random alphanumeric bytes, from a
/// splitmix64 stream seeded with `seed` (the same keys on every platform and release).
struct generated_keys {
    std::uint64_t count = 1000000;
    std::uint64_t seed = 0;
    std::size_t key_size = 16;
};

namespace detail {

constexpr auto splitmix64(std::uint64_t& state) noexcept -> std::uint64_t {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31U);
}

/// Enumerates a partitioner's ids: `ids()` where it has one, else 0..partitions()-1 when there
/// are at most `limit`. Returns false when it does not enumerate.
template <class P, class Fn>
auto enumerate_ids(const P& p, std::uint64_t limit, Fn&& fn) -> bool {
    if constexpr (has_ids<P>::value) {
        for (const std::uint32_t id : p.ids()) fn(id);
        return true;
    } else {
        if (p.partitions() > limit) return false;
        for (std::uint32_t id = 0; id < p.partitions(); ++id) fn(id);
        return true;
    }
}

/// The ids enumerate_ids() lists for `p` with `limit`.
template <class P>
auto listed_ids(const P& p, std::uint64_t limit) -> std::uint64_t {
    if constexpr (has_ids<P>::value) {
        return p.ids().size();
    } else {
        return p.partitions() > limit ? 0 : p.partitions();
    }
}

template <class P>
auto max_partition_id(const P& p) -> std::uint64_t {
    if constexpr (has_ids<P>::value) {
        // One call: ids() may return by value, and begin() and end() must be of one container.
        const auto& ids = p.ids();
        return ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end());
    } else {
        return p.partitions() == 0 ? 0 : p.partitions() - 1U;
    }
}

/// Flow accumulators by partition id: a dense array where the ids are not too sparse (the
/// largest below 8 x the ids both sides list + 1024), a hash map otherwise: the array takes at
/// most 8 entries a listed id (plus 1024), where the map takes several times an entry each.
class flow_table {
public:
    /// Partitioners without ids() are listed up to this many partitions (above it, only the ids
    /// that keys reach are counted, in the hash map).
    static constexpr std::uint64_t dense_limit = std::uint64_t{1} << 20U;

    flow_table(std::uint64_t max_id, std::uint64_t listed_ids) {
        if (max_id < 8 * listed_ids + 1024) m_dense.resize(static_cast<std::size_t>(max_id) + 1);
    }

    /// An id past the enumerated ones (a partitioner that routes outside its own ids) goes to
    /// the hash map, never past the dense array's end.
    auto at(std::uint32_t id) -> partition_flow& {
        partition_flow& f = id < m_dense.size() ? m_dense[id] : m_sparse[id];
        f.partition = id;
        return f;
    }

    /// Ids the dense array covers (0 when every id goes to the hash map).
    [[nodiscard]] auto dense_ids() const noexcept -> std::size_t { return m_dense.size(); }

    auto take_sorted() -> std::vector<partition_flow> {
        std::vector<partition_flow> out;
        const auto used = [](const partition_flow& f) {
            return f.in_old || f.in_new || f.old_keys != 0 || f.new_keys != 0;
        };
        for (const auto& f : m_dense) {
            if (used(f)) out.push_back(f);
        }
        for (const auto& entry : m_sparse) {
            if (used(entry.second)) out.push_back(entry.second);
        }
        std::sort(out.begin(), out.end(), [](const partition_flow& a, const partition_flow& b) {
            return a.partition < b.partition;
        });
        return out;
    }

private:
    std::vector<partition_flow> m_dense;
    std::unordered_map<std::uint32_t, partition_flow> m_sparse;
};

template <class Old, class New>
class migration_accumulator {
public:
    migration_accumulator(const Old& before, const New& after)
        : m_old(before),
          m_new(after),
          m_flows(std::max(max_partition_id(before), max_partition_id(after)),
                  listed_ids(before, flow_table::dense_limit) +
                      listed_ids(after, flow_table::dense_limit)) {
        enumerate_ids(before, flow_table::dense_limit,
                      [&](std::uint32_t id) { m_flows.at(id).in_old = true; });
        enumerate_ids(after, flow_table::dense_limit,
                      [&](std::uint32_t id) { m_flows.at(id).in_new = true; });
    }

    void add(std::string_view key, double weight) {
        const std::uint32_t from = m_old.route(key);
        const std::uint32_t to = m_new.route(key);
        ++m_report.keys;
        m_report.traffic += weight;
        partition_flow& src = m_flows.at(from);
        ++src.old_keys;
        src.old_traffic += weight;
        partition_flow& dst = m_flows.at(to);
        ++dst.new_keys;
        dst.new_traffic += weight;
        if (from != to) {
            ++m_report.moved_keys;
            m_report.moved_traffic += weight;
            ++src.keys_out;
            src.traffic_out += weight;
            ++dst.keys_in;
            dst.traffic_in += weight;
        }
    }

    auto finish(bool weighted) -> migration_report {
        m_report.weighted = weighted;
        m_report.partitions = m_flows.take_sorted();
        // Ids a side with more than 2^20 partitions did not list: membership is still known
        // from the partition count, so none of them reads as removed or added.
        for (partition_flow& f : m_report.partitions) {
            if constexpr (!has_ids<Old>::value) f.in_old = f.partition < m_old.partitions();
            if constexpr (!has_ids<New>::value) f.in_new = f.partition < m_new.partitions();
        }
        return std::move(m_report);
    }

private:
    const Old& m_old;
    const New& m_new;
    flow_table m_flows;
    migration_report m_report;
};

template <class Keys, class = void>
struct is_key_range : std::false_type {};
template <class Keys>
struct is_key_range<Keys, std::void_t<decltype(std::begin(std::declval<const Keys&>())),
                                      decltype(std::end(std::declval<const Keys&>()))>>
    : std::is_convertible<decltype(*std::begin(std::declval<const Keys&>())), std::string_view> {};

/// Weights other than a std::vector<double>: a range with `size()` and `[]` whose values are
/// numbers (integers or floating point; not bool, not characters).
template <class W, class = void>
struct is_weight_range : std::false_type {};
template <class W>
struct is_weight_range<W, std::void_t<decltype(std::declval<const W&>().size()),
                                      decltype(std::declval<const W&>()[0])>> {
    using item = std::decay_t<decltype(std::declval<const W&>()[0])>;
    static constexpr bool value_is_number =
        std::is_arithmetic_v<item> && !std::is_same_v<item, bool> && !std::is_same_v<item, char> &&
        !std::is_same_v<item, signed char> && !std::is_same_v<item, unsigned char> &&
        !std::is_same_v<item, wchar_t> && !std::is_same_v<item, char16_t> &&
        !std::is_same_v<item, char32_t>;
    static constexpr bool value = value_is_number && !std::is_same_v<W, std::vector<double>>;
};

template <class Old, class New, class Keys, class Weights>
auto compare_weighted(const Old& before, const New& after, const Keys& keys, const Weights& weights)
    -> migration_report {
    constexpr const char* who = "keyroute::compare_partitioners";
    const auto weight_count = static_cast<std::size_t>(weights.size());
    double sum = 0;
    for (std::size_t i = 0; i < weight_count; ++i) {
        const auto w = static_cast<double>(weights[i]);
        if (!(w >= 0) || !std::isfinite(w)) {
            std::ostringstream msg;
            msg << who << ": weights must be finite and >= 0, got weights[" << i << "] = " << w;
            invalid_argument(msg.str());
        }
        sum += w;
        if (!std::isfinite(sum)) {
            std::ostringstream msg;
            msg << who << ": the weights add up to more than a double holds (at weights[" << i
                << "] = " << w << "); scale them down";
            invalid_argument(msg.str());
        }
    }
    // Keys are counted as they are read (a single-pass range cannot be read twice); keys past
    // the weights are only counted, for the error.
    migration_accumulator<Old, New> acc(before, after);
    std::size_t i = 0;
    for (const auto& key : keys) {
        if (weight_count == 0) {
            acc.add(std::string_view(key), 1.0);
        } else if (i < weight_count) {
            acc.add(std::string_view(key), static_cast<double>(weights[i]));
        }
        ++i;
    }
    if (weight_count != 0 && i != weight_count) {
        invalid_argument(
            std::string(who) + ": weights must be empty or have one entry per key, got " +
            std::to_string(weight_count) + " weights for " + std::to_string(i) + " keys");
    }
    return acc.finish(weight_count != 0);
}

}  // namespace detail

/// Routes every key of `keys` through `before` and `after` and reports what moves.
///
/// @param before, after any two partitioners (the keyroute partitioner interface: a const
///        `route(std::string_view) -> std::uint32_t` and `partitions()`), of the same or of
///        different types: e.g. kafka_partitioner(12) and kafka_partitioner(13), or two
///        rendezvous_partitioner id sets.
/// @param keys a range (with a const `begin()` and `end()`) of anything convertible to
///        std::string_view (std::vector<std::string>, std::vector<std::string_view>, ...),
///        read once: a single-pass range (keys streamed from a file) works too. Duplicates
///        count as separate keys.
/// @param weights empty (each key weighs 1), or one weight per key, `weights[i]` for the i-th
///        key (e.g. its events per second): finite and >= 0. The overload below takes other
///        ranges of numbers (event counts as std::vector<std::uint64_t>).
/// @throws std::invalid_argument if `weights` is neither empty nor as long as `keys`, or a
///         weight is negative, infinite or NaN (the message names the index and value), or the
///         weights add up to more than a double holds (every total of the report is then
///         finite).
/// Complexity: two routes per key; memory O(keys + partitions), plus, where the ids are not
/// sparse (see detail::flow_table), 72 bytes per id up to the largest. Thread-safe if
/// the partitioners' `route()` is.
template <class Old, class New, class Keys,
          std::enable_if_t<detail::is_key_range<Keys>::value, int> = 0>
auto compare_partitioners(const Old& before, const New& after, const Keys& keys,
                          const std::vector<double>& weights = {}) -> migration_report {
    return detail::compare_weighted(before, after, keys, weights);
}

/// As above, with weights in any range with `size()` and `[]` of integers or floating-point
/// values (not bool, not characters): std::vector<std::uint64_t> event counts, std::array, ...
template <
    class Old, class New, class Keys, class Weights,
    std::enable_if_t<detail::is_key_range<Keys>::value && detail::is_weight_range<Weights>::value,
                     int> = 0>
auto compare_partitioners(const Old& before, const New& after, const Keys& keys,
                          const Weights& weights) -> migration_report {
    return detail::compare_weighted(before, after, keys, weights);
}

/// As above, on a generated sample (default: 1M keys of 16 bytes): the share of keys that move
/// for keys whose hashes are uniform. Traffic equals key count (unweighted).
template <class Old, class New>
auto compare_partitioners(const Old& before, const New& after,
                          const generated_keys& sample = generated_keys{}) -> migration_report {
    static constexpr char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    detail::migration_accumulator<Old, New> acc(before, after);
    std::uint64_t state = sample.seed;
    std::string key(sample.key_size, '\0');
    for (std::uint64_t i = 0; i < sample.count; ++i) {
        for (std::size_t c = 0; c < key.size(); c += 8) {
            std::uint64_t bits = detail::splitmix64(state);
            for (std::size_t b = c; b < key.size() && b < c + 8; ++b, bits >>= 8U) {
                key[b] = alphabet[(bits & 0xffU) % (sizeof alphabet - 1)];
            }
        }
        acc.add(key, 1.0);
    }
    return acc.finish(false);
}

}  // namespace keyroute
