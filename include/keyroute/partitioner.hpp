#pragma once

/// @file
/// Static hash partitioners: a key always goes to the same partition, `reduce(hash(key))`.
///
/// Every named partitioner here is a compatibility contract: for a given key and partition count
/// it returns the partition the named client returns, in this and every later release.
///
/// The partitioner interface (what keyroute::salting_router and the adapters rely on):
///
///     explicit P(std::uint64_t partitions);                   // throws std::invalid_argument
///     std::uint32_t route(std::string_view key) const noexcept;  // in [0, partitions())
///     std::uint32_t partitions() const noexcept;

#include "detail/config.hpp"
#include "hash.hpp"
#include "reduce.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace keyroute {

namespace detail {

/// A named scheme's name, for its errors (a type of its own, so that no user argument converts
/// to it).
struct named_scheme {
    const char* name;
};

inline auto check_partition_count(std::uint64_t partitions, std::uint32_t max, const char* who)
    -> std::uint32_t {
    if (partitions == 0 || partitions > max) {
        invalid_argument(std::string(who) + ": partitions must be in [1, " + std::to_string(max) +
                         "], got " + std::to_string(partitions));
    }
    return static_cast<std::uint32_t>(partitions);
}

}  // namespace detail

/// Routes a key to `Reduction(n)(Hash{}(key))`.
///
/// With the defaults (XXH3 and default_reduction) the partition of a key is
/// `fold32(XXH3_64bits(key)) % n` with `fold32(h) = uint32_t(h ^ (h >> 32))` (Java:
/// `Integer.remainderUnsigned(Long.hashCode(xxh3), n)`), a compatibility contract pinned by the
/// tests since keyroute 0.2 (0.1 reduced all 64 bits: `XXH3_64bits(key) % n`, which
/// `modulo_reduction` still gives). With `fastrange_reduction` it is
/// `(XXH3_64bits(key) * n) >> 64`, also pinned. A 32-bit hash functor is reduced as it is:
/// `hash(key) % n`.
///
/// @tparam Hash a hash functor (see hash.hpp); its `max_partitions`, if any, bounds n.
/// @tparam Reduction default_reduction (`fold32(h) % n`), modulo_reduction or fastmod_reduction
///         (both `h % n`, all 64 bits), or fastrange_reduction (see reduce.hpp).
///
/// Thread-safety: `route()` is const and touches no shared mutable state; one instance may be
/// shared by any number of threads. Complexity: one hash of the key, one reduction; no
/// allocation, no lock, no clock.
template <class Hash = xxh3, class Reduction = default_reduction>
class hash_partitioner {
    static_assert((detail::check_hash_functor<Hash>(), true));

public:
    using hash_type = Hash;
    using reduction_type = Reduction;
    using hash_value_type = hash_result_t<Hash>;

    /// The largest partition count this scheme accepts.
    static constexpr std::uint32_t max_partitions = detail::hash_max_partitions<Hash>::value;

    /// @throws std::invalid_argument if `partitions` is 0 or above `max_partitions`; the message
    ///         names the value.
    explicit hash_partitioner(std::uint64_t partitions, Hash hash = Hash{})
        : hash_partitioner(detail::named_scheme{"keyroute::hash_partitioner"}, partitions, hash) {}

    /// The partition of `key`, in [0, partitions()). Any bytes; an empty key is a key like any
    /// other (it does not mean "no key", which is the caller's to handle).
    [[nodiscard]] auto route(std::string_view key) const
        noexcept(std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> std::uint32_t {
        return m_reduce(m_hash(key));
    }

    /// The hash of `key` before reduction (what `route()` reduces).
    [[nodiscard]] auto hash(std::string_view key) const
        noexcept(std::is_nothrow_invocable_v<const Hash&, std::string_view>) -> hash_value_type {
        return m_hash(key);
    }

    /// The partition for a hash value computed by `hash()`: `route(k) == reduce(hash(k))`.
    [[nodiscard]] auto reduce(hash_value_type h) const noexcept -> std::uint32_t {
        return m_reduce(h);
    }

    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t { return m_partitions; }

    [[nodiscard]] auto hash_function() const noexcept -> const Hash& { return m_hash; }

protected:
    /// For the named schemes: `scheme` names the scheme in the error message.
    hash_partitioner(detail::named_scheme scheme, std::uint64_t partitions, Hash hash = Hash{})
        : m_hash(hash),
          m_reduce(detail::check_partition_count(partitions, max_partitions, scheme.name)),
          m_partitions(static_cast<std::uint32_t>(partitions)) {}

private:
    Hash m_hash;
    Reduction m_reduce;
    std::uint32_t m_partitions;
};

namespace detail {

/// Kafka and Pulsar hash to int32 and keep the sign bit off: `hash & 0x7fffffff`.
template <class Hash>
struct positive31 {
    static constexpr std::uint32_t max_partitions = 0x7fffffffU;
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint32_t {
        return Hash{}(key)&0x7fffffffU;
    }
};

/// librdkafka's partitioners take an int32 partition count but reduce the unsigned hash.
template <class Hash>
struct int32_count {
    static constexpr std::uint32_t max_partitions = 0x7fffffffU;
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint32_t {
        return Hash{}(key);
    }
};

}  // namespace detail

/// Kafka's keyed partitioning: `(murmur2(key) & 0x7fffffff) % n`.
///
/// Matches the Java client's default partitioner for records with a key
/// (`Utils.toPositive(Utils.murmur2(keyBytes)) % numPartitions`) and librdkafka's `murmur2` and
/// `murmur2_random` partitioners (for non-NULL keys). n in [1, 2^31-1]. Compatibility contract.
class kafka_partitioner final : public hash_partitioner<detail::positive31<murmur2>> {
public:
    /// @throws std::invalid_argument if `partitions` is 0 or above 2^31 - 1, naming the scheme.
    explicit kafka_partitioner(std::uint64_t partitions)
        : hash_partitioner(detail::named_scheme{"keyroute::kafka_partitioner"}, partitions) {}
};

/// librdkafka's `consistent` partitioner (and `consistent_random` for non-empty keys: librdkafka
/// sends an empty key, like a NULL one, to a random or sticky partition there; `consistent`
/// hashes it, crc32("") = 0, to partition 0): `crc32(key) % n`. n in [1, 2^31-1]. Compatibility
/// contract.
class rdkafka_consistent_partitioner final : public hash_partitioner<detail::int32_count<crc32>> {
public:
    /// @throws std::invalid_argument if `partitions` is 0 or above 2^31 - 1, naming the scheme.
    explicit rdkafka_consistent_partitioner(std::uint64_t partitions)
        : hash_partitioner(detail::named_scheme{"keyroute::rdkafka_consistent_partitioner"},
                           partitions) {}
};

/// librdkafka's `fnv1a` partitioner (and `fnv1a_random` for non-NULL keys), compatible with
/// Sarama's default hash partitioner: `keyroute::fnv1a(key) % n`. n in [1, 2^31-1].
/// Compatibility contract.
class rdkafka_fnv1a_partitioner final : public hash_partitioner<detail::int32_count<fnv1a>> {
public:
    /// @throws std::invalid_argument if `partitions` is 0 or above 2^31 - 1, naming the scheme.
    explicit rdkafka_fnv1a_partitioner(std::uint64_t partitions)
        : hash_partitioner(detail::named_scheme{"keyroute::rdkafka_fnv1a_partitioner"},
                           partitions) {}
};

/// Pulsar's JavaStringHash routing (the Java client's default `hashingScheme`):
/// `signSafeMod(String.hashCode(key) & 0x7fffffff, n)`, as the Java client computes it (see
/// keyroute::java_string_hash for non-ASCII keys). n in [1, 2^31-1]. Compatibility contract.
class pulsar_java_string_partitioner final
    : public hash_partitioner<detail::positive31<java_string_hash>> {
public:
    /// @throws std::invalid_argument if `partitions` is 0 or above 2^31 - 1, naming the scheme.
    explicit pulsar_java_string_partitioner(std::uint64_t partitions)
        : hash_partitioner(detail::named_scheme{"keyroute::pulsar_java_string_partitioner"},
                           partitions) {}
};

/// Pulsar's Murmur3_32Hash routing (opt-in in its Java and C++ clients, whose defaults are
/// JavaStringHash and BoostHash):
/// `signSafeMod(murmur3_32(key, seed 0) & 0x7fffffff, n)`. n in [1, 2^31-1].
/// Compatibility contract for keys that are valid UTF-8 (every key a Java producer can send).
/// The raw bytes are hashed, as the C++ client does; the Java client hashes the key's String
/// re-encoded in UTF-8, so a key with ill-formed UTF-8 (from a C++ producer) hashes there with
/// each ill-formed sequence replaced by U+FFFD (EF BF BD), to another partition in general.
class pulsar_murmur3_partitioner final : public hash_partitioner<detail::positive31<murmur3_32>> {
public:
    /// @throws std::invalid_argument if `partitions` is 0 or above 2^31 - 1, naming the scheme.
    explicit pulsar_murmur3_partitioner(std::uint64_t partitions)
        : hash_partitioner(detail::named_scheme{"keyroute::pulsar_murmur3_partitioner"},
                           partitions) {}
};

}  // namespace keyroute
