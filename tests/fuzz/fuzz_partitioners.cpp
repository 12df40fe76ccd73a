// libFuzzer target for every hash functor and partitioner: a partition count and the key bytes
// come from the input. Every route is below the partition count, `route == reduce(hash)` where a
// partitioner exposes both, the exact reductions agree with `%`, and a constructor given a bad
// count throws std::invalid_argument and nothing else (a good count never throws).
// Build: -DKEYROUTE_BUILD_FUZZERS=ON with clang; run: fuzz_partitioners
// tests/fuzz/corpus/partitioners
#include "fuzz_input.hpp"

#include <keyroute/hash.hpp>
#include <keyroute/jump.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/reduce.hpp>
#include <keyroute/rendezvous.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using keyroute_fuzz::input;

// Builds with `make()`: expects std::invalid_argument exactly when `bad`, any other exception
// (or none where one is due) aborts.
template <class Make>
auto construct(bool bad, Make make) -> std::optional<decltype(make())> {
    try {
        auto p = make();
        FUZZ_REQUIRE(!bad);
        return p;
    } catch (const std::invalid_argument&) {
        FUZZ_REQUIRE(bad);
    } catch (...) {
        std::abort();
    }
    return std::nullopt;
}

// A partition count shaped by a selector byte: small, around 2^31 and 2^32, zero, or anything.
auto partition_count(input& in) -> std::uint64_t {
    const std::uint8_t shape = in.byte();
    switch (shape % 8U) {
    case 0: return 0;
    case 1: return 0x7fffffffULL - 2 + in.byte() % 5U;  // around int32's limit
    case 2: return 0xffffffffULL - 2 + in.byte() % 5U;  // around uint32's limit
    case 3: return in.u64(8);                           // anything
    case 4: return 1 + in.u64(4) % 0xffffffffULL;       // any valid uint32 count
    default: return 1 + in.byte();                      // small
    }
}

// Checks one hash_partitioner-shaped scheme against its hash and, for exact reductions, `%`.
template <class P>
void check_hash_partitioner(std::uint64_t n, std::string_view key, bool exact,
                            bool folded = false) {
    const bool bad = n == 0 || n > P::max_partitions;
    const auto p = construct(bad, [&] { return P(n); });
    if (!p) return;
    FUZZ_REQUIRE(p->partitions() == n);
    const std::uint32_t r = p->route(key);
    FUZZ_REQUIRE(r < n);
    FUZZ_REQUIRE(r == p->reduce(p->hash(key)));
    FUZZ_REQUIRE(r == p->route(key));
    if (exact) FUZZ_REQUIRE(r == static_cast<std::uint32_t>(p->hash(key) % n));
    if (folded) FUZZ_REQUIRE(r == keyroute::fold32(p->hash(key)) % n);
}

void check_hashes(std::string_view key, std::uint64_t seed) {
    // Deterministic, and the documented ranges.
    FUZZ_REQUIRE(keyroute::xxh3{seed}(key) == keyroute::xxh3{seed}(key));
    FUZZ_REQUIRE(keyroute::xxh3{}(key) == XXH3_64bits(key.data(), key.size()));
    FUZZ_REQUIRE(keyroute::murmur2{}(key) == keyroute::murmur2{}(key));
    FUZZ_REQUIRE(keyroute::fnv1a{}(key) <= 0x80000000U);
    const auto seed32 = static_cast<std::uint32_t>(seed);
    FUZZ_REQUIRE(keyroute::murmur3_32{seed32}(key) == keyroute::murmur3_32{seed32}(key));

    // CRC-32 and FNV-1a against bit-by-bit references.
    std::uint32_t crc = 0xffffffffU;
    std::uint32_t fnv = 0x811c9dc5U;
    bool ascii = true;
    std::uint32_t java = 0;
    for (const char ch : key) {
        const auto b = static_cast<unsigned char>(ch);
        crc ^= b;
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1U) ^ (0xedb88320U & (0U - (crc & 1U)));
        fnv = (fnv ^ b) * 0x01000193U;
        ascii = ascii && b < 0x80U;
        java = 31U * java + b;
    }
    FUZZ_REQUIRE(keyroute::crc32{}(key) == (crc ^ 0xffffffffU));
    const auto signed_fnv = static_cast<std::int64_t>(static_cast<std::int32_t>(fnv));
    FUZZ_REQUIRE(keyroute::fnv1a{}(key) == static_cast<std::uint32_t>(std::llabs(signed_fnv)));

    // java_string_hash: plain `31 h + c` over ASCII; otherwise any bytes hash without fault,
    // and appending an ASCII byte after a complete decode multiplies by 31 and adds it.
    const std::uint32_t jh = keyroute::java_string_hash{}(key);
    if (ascii) FUZZ_REQUIRE(jh == java);
}

void check_java_suffix(std::string_view key) {
    std::vector<char> extended(key.begin(), key.end());
    extended.push_back('a');
    const std::string_view with_a(extended.data(), extended.size());
    // Java decodes a truncated trailing sequence into one U+FFFD whether or not more bytes follow
    // only when the next byte cannot continue it: 'a' never continues a sequence.
    FUZZ_REQUIRE(keyroute::java_string_hash{}(with_a) ==
                 31U * keyroute::java_string_hash{}(key) + 'a');
}

void check_jump(std::uint64_t n, std::string_view key) {
    using partitioner = keyroute::jump_partitioner<>;
    const bool bad = n == 0 || n > partitioner::max_partitions;
    const auto p = construct(bad, [&] { return partitioner(n); });
    if (!p) return;
    const std::uint32_t r = p->route(key);
    FUZZ_REQUIRE(r < n);
    FUZZ_REQUIRE(r == keyroute::jump_consistent_hash(p->hash(key), static_cast<std::uint32_t>(n)));
    // Growing by one moves a key only to the new partition.
    if (n < partitioner::max_partitions) {
        const std::uint32_t grown =
            keyroute::jump_consistent_hash(p->hash(key), static_cast<std::uint32_t>(n + 1));
        FUZZ_REQUIRE(grown == r || grown == n);
    }
    // A 32-bit hash goes through the same path.
    const auto p32 =
        construct(bad, [&] { return keyroute::jump_partitioner<keyroute::murmur2>(n); });
    if (p32) FUZZ_REQUIRE(p32->route(key) < n);
}

void check_key_group(input& in, std::uint64_t n, std::string_view key) {
    using partitioner = keyroute::key_group_partitioner<>;
    std::uint64_t groups = in.byte() % 4U == 0 ? in.u64(8) : in.u64(2);
    const bool bad = groups == 0 || groups > partitioner::max_partitions || n == 0 || n > groups;
    const auto p = construct(bad, [&] { return partitioner(n, groups); });
    if (!p) return;
    const std::uint32_t g = p->key_group(key);
    FUZZ_REQUIRE(g < groups);
    FUZZ_REQUIRE(g == static_cast<std::uint32_t>(keyroute::xxh3{}(key) % groups));
    const std::uint32_t r = p->route(key);
    FUZZ_REQUIRE(r < n);
    FUZZ_REQUIRE(r == p->partition_of_group(g));
    const keyroute::key_group_range range = p->key_groups_of(r);
    FUZZ_REQUIRE(range.first <= g && g <= range.last);
}

void check_rendezvous(input& in, std::uint64_t n, std::string_view key) {
    using partitioner = keyroute::rendezvous_partitioner<>;
    // The O(n) table is built only for small counts; large ones exercise the refusal.
    if (n == 0 || n > partitioner::max_partitions || n <= 512) {
        const bool bad = n == 0 || n > partitioner::max_partitions;
        const auto p = construct(bad, [&] { return partitioner(n); });
        if (p) FUZZ_REQUIRE(p->route(key) < n);
    }
    // Explicit ids and weights, possibly duplicated, zero, negative or not finite.
    const std::size_t count = in.byte() % 9U;
    std::vector<std::uint32_t> ids;
    std::vector<double> weights;
    const bool weighted = in.byte() % 2U == 0;
    bool bad = count == 0;
    for (std::size_t i = 0; i < count; ++i) {
        const auto id = static_cast<std::uint32_t>(in.u64(in.byte() % 2U == 0 ? 1 : 4));
        for (const std::uint32_t other : ids) bad = bad || other == id;
        ids.push_back(id);
        if (weighted) {
            double w = 0;
            const std::uint64_t bits = in.u64(8);
            std::memcpy(&w, &bits, sizeof w);
            if (in.byte() % 2U == 0) w = static_cast<double>(bits % 100U) / 4.0;  // plain values
            bad = bad || !(w > 0.0) || !std::isfinite(w);
            weights.push_back(w);
        }
    }
    if (!bad && !weights.empty()) {
        // Unequal weights more than a factor of 2^960 apart are refused (0.2.9). Scaling the
        // smallest up by 2^960 is exact (or overflows, and then no weight is that large).
        const double lo = *std::min_element(weights.begin(), weights.end());
        const double hi = *std::max_element(weights.begin(), weights.end());
        bad = hi > std::ldexp(lo, 960);
    }
    const auto p = construct(bad, [&] { return partitioner(ids, weights); });
    if (!p) return;
    const std::uint32_t r = p->route(key);
    bool found = false;
    for (const std::uint32_t id : ids) found = found || id == r;
    FUZZ_REQUIRE(found);
    FUZZ_REQUIRE(p->partitions() == ids.size());
}

void check_maglev(input& in, std::uint64_t n, std::string_view key) {
    using partitioner = keyroute::maglev_partitioner<>;
    // Small tables keep each input fast; a non-prime or out-of-range size must be refused.
    const std::uint64_t table = in.byte() % 8U == 0 ? in.u64(8) : in.u64(1) * 8 + in.byte() % 8U;
    const bool table_ok =
        table >= 2 && table <= partitioner::max_table_size && keyroute::detail::is_prime(table);
    if (table_ok && table > 4099) return;
    const bool bad = !table_ok || n == 0 || n > table;
    const auto p = construct(bad, [&] { return partitioner(n, table); });
    if (!p) return;
    const std::uint32_t r = p->route(key);
    FUZZ_REQUIRE(r < n);
    FUZZ_REQUIRE(p->table().size() == table);
    FUZZ_REQUIRE(r == p->table()[keyroute::detail::hash64(keyroute::xxh3{}, key) % table]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    input in(data, size);
    const std::uint64_t n = partition_count(in);
    const std::uint64_t seed = in.u64(8);
    // Options for the table schemes come before the key so the key can be any suffix.
    std::uint8_t option_bytes[64];
    for (auto& b : option_bytes) b = in.byte();
    const std::string_view key = in.rest();

    check_hashes(key, seed);
    check_java_suffix(key);
    using namespace keyroute;
    check_hash_partitioner<hash_partitioner<>>(n, key, false, true);
    check_hash_partitioner<hash_partitioner<xxh3, fold32_reduction<fastmod_reduction>>>(
        n, key, false, true);
    check_hash_partitioner<hash_partitioner<xxh3, fastmod_reduction>>(n, key, true);
    check_hash_partitioner<hash_partitioner<xxh3, modulo_reduction>>(n, key, true);
    check_hash_partitioner<hash_partitioner<xxh3, fastrange_reduction>>(n, key, false);
    check_hash_partitioner<hash_partitioner<murmur3_32, fastmod_reduction>>(n, key, true);
    check_hash_partitioner<hash_partitioner<fnv1a, fastmod_reduction>>(n, key, true);
    check_hash_partitioner<kafka_partitioner>(n, key, true);
    check_hash_partitioner<rdkafka_consistent_partitioner>(n, key, true);
    check_hash_partitioner<rdkafka_fnv1a_partitioner>(n, key, true);
    check_hash_partitioner<pulsar_java_string_partitioner>(n, key, true);
    check_hash_partitioner<pulsar_murmur3_partitioner>(n, key, true);
    if (n != 0 && n <= 0xffffffffULL) {
        const auto k =
            construct(n > kafka_partitioner::max_partitions, [&] { return kafka_partitioner(n); });
        if (k) FUZZ_REQUIRE(k->route(key) == (murmur2{}(key)&0x7fffffffU) % n);
        // The two exact reductions agree on every hash, 32 and 64 bits.
        const auto n32 = static_cast<std::uint32_t>(n);
        const std::uint64_t h = xxh3{seed}(key);
        FUZZ_REQUIRE(fastmod_reduction(n32)(h) == modulo_reduction(n32)(h));
        FUZZ_REQUIRE(fastmod_reduction(n32)(static_cast<std::uint32_t>(h)) ==
                     static_cast<std::uint32_t>(h) % n32);
        FUZZ_REQUIRE(fastrange_reduction(n32)(h) < n32);
        FUZZ_REQUIRE(fastrange_reduction(n32)(static_cast<std::uint32_t>(h)) < n32);
    }
    check_jump(n, key);

    input options(option_bytes, sizeof option_bytes);
    check_key_group(options, n, key);
    check_rendezvous(options, n, key);
    check_maglev(options, n, key);
    return 0;
}
