#pragma once

/// @file
/// Hash functors: XXH3 (the default) and exact re-implementations of the hashes the real
/// clients partition with (Kafka, librdkafka, Pulsar).
///
/// The hash functor interface (what any user hash must provide):
///
///     struct my_hash {
///         std::uint64_t operator()(std::string_view key) const noexcept;  // or std::uint32_t
///     };
///
/// - It is called as `const`, must be copyable, and must be deterministic: the same bytes
///   always give the same value, in every process and on every platform.
/// - The result type is `std::uint32_t` or `std::uint64_t`; its full range should be used
///   (the partitioner reduces it to a partition).
/// - `noexcept` is recommended; the partitioners' `route()` is `noexcept` exactly when the hash is.
/// - A functor may declare `static constexpr std::uint32_t max_partitions`: the largest partition
///   count its scheme allows (int32 partition ids in Kafka and Pulsar). Without it, 2^32-1.
///
/// The values of every functor below are a compatibility contract: they never change between
/// releases. The tests pin them against the projects they match.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#define KEYROUTE_UNDEF_XXH_INLINE_ALL
#endif
#include <xxhash.h>
// XXH3's output is fixed from xxHash 0.8.0 on; hash_partitioner<>'s mapping builds on it.
#if !defined(XXH_VERSION_NUMBER) || XXH_VERSION_NUMBER < 800
#error "keyroute needs xxHash 0.8 or later (xxhash.h; Debian: libxxhash-dev)"
#endif
#ifdef KEYROUTE_UNDEF_XXH_INLINE_ALL
#undef XXH_INLINE_ALL
#undef KEYROUTE_UNDEF_XXH_INLINE_ALL
#endif

namespace keyroute {

namespace detail {

inline auto load_u32_le(const unsigned char* p) noexcept -> std::uint32_t {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8U) |
           (static_cast<std::uint32_t>(p[2]) << 16U) | (static_cast<std::uint32_t>(p[3]) << 24U);
}

constexpr auto rotl32(std::uint32_t x, unsigned r) noexcept -> std::uint32_t {
    return (x << r) | (x >> (32U - r));
}

inline auto bytes(std::string_view key) noexcept -> const unsigned char* {
    return reinterpret_cast<const unsigned char*>(key.data());
}

}  // namespace detail

/// XXH3 64-bit (xxHash 0.8), the default hash of keyroute::hash_partitioner.
///
/// `xxh3{}(key)` equals `XXH3_64bits(key.data(), key.size())`; with a seed, it equals
/// `XXH3_64bits_withSeed(key.data(), key.size(), seed)`. Any length, any bytes; an empty key is
/// fine. O(len), about 1 ns per 16 bytes on a current core. Thread-safe (no state but the seed).
struct xxh3 {
    std::uint64_t seed = 0;

    constexpr xxh3() noexcept = default;
    constexpr explicit xxh3(std::uint64_t seed_value) noexcept : seed(seed_value) {}

    /// XXH3_64bits_withSeed of the key's bytes.
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint64_t {
        return XXH3_64bits_withSeed(key.data(), key.size(), seed);
    }
};

/// Murmur2 as Kafka's Java client computes it (`org.apache.kafka.common.utils.Utils.murmur2`,
/// seed 0x9747b28c), which librdkafka's `rd_murmur2` reproduces.
///
/// Returns the raw 32-bit value; Kafka's partitioner masks it with 0x7fffffff (see
/// keyroute::kafka_partitioner). Keys over 4 GiB hash their length modulo 2^32, as Java's int
/// length would have wrapped. O(len). Thread-safe.
struct murmur2 {
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint32_t {
        constexpr std::uint32_t seed = 0x9747b28cU;
        constexpr std::uint32_t m = 0x5bd1e995U;
        constexpr unsigned r = 24;
        const unsigned char* p = detail::bytes(key);
        const std::size_t len = key.size();
        std::uint32_t h = seed ^ static_cast<std::uint32_t>(len);
        const std::size_t blocks = len / 4;
        for (std::size_t i = 0; i < blocks; ++i) {
            std::uint32_t k = detail::load_u32_le(p + 4 * i);
            k *= m;
            k ^= k >> r;
            k *= m;
            h *= m;
            h ^= k;
        }
        const unsigned char* tail = p + 4 * blocks;
        switch (len & 3U) {
        case 3: h ^= static_cast<std::uint32_t>(tail[2]) << 16U; [[fallthrough]];
        case 2: h ^= static_cast<std::uint32_t>(tail[1]) << 8U; [[fallthrough]];
        case 1:
            h ^= static_cast<std::uint32_t>(tail[0]);
            h *= m;
            break;
        default: break;
        }
        h ^= h >> 13U;
        h *= m;
        h ^= h >> 15U;
        return h;
    }
};

/// FNV-1a 32-bit as librdkafka's `rd_fnv1a` computes it: plain FNV-1a, then the absolute value
/// of the result read as int32 (Sarama's NewHashPartitioner does the same). So the result is in
/// [0, 2^31], and 0x80000000 stays 0x80000000 (two's complement negation of INT32_MIN).
/// O(len). Thread-safe.
struct fnv1a {
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint32_t {
        std::uint32_t h = 0x811c9dc5U;
        const unsigned char* p = detail::bytes(key);
        for (std::size_t i = 0; i < key.size(); ++i) {
            h ^= p[i];
            h *= 0x01000193U;
        }
        // librdkafka: `if (h < 0) h = -h;` on an int32, done here without signed overflow.
        return (h & 0x80000000U) != 0 ? 0U - h : h;
    }
};

namespace detail {

constexpr auto make_crc32_table() noexcept -> std::array<std::uint32_t, 256> {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int bit = 0; bit < 8; ++bit) {
            c = (c & 1U) != 0 ? 0xedb88320U ^ (c >> 1U) : c >> 1U;
        }
        table[i] = c;
    }
    return table;
}

inline constexpr std::array<std::uint32_t, 256> crc32_table = make_crc32_table();

}  // namespace detail

/// CRC-32 (IEEE 802.3, reflected polynomial 0xedb88320, the value of zlib's `crc32(0, key, len)`),
/// which librdkafka's "consistent" and "consistent_random" partitioners use (`rd_crc32`).
/// O(len), table-driven. Thread-safe.
struct crc32 {
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint32_t {
        std::uint32_t c = 0xffffffffU;
        const unsigned char* p = detail::bytes(key);
        for (std::size_t i = 0; i < key.size(); ++i) {
            c = detail::crc32_table[(c ^ p[i]) & 0xffU] ^ (c >> 8U);
        }
        return c ^ 0xffffffffU;
    }
};

/// Java's `String.hashCode()` of the string a Java client would hold for this UTF-8 key:
/// `h = 31 * h + c` over the UTF-16 code units (supplementary characters count as two
/// surrogates). Pulsar's JavaStringHash scheme uses it.
///
/// Keys are decoded as UTF-8 exactly as Java's `new String(bytes, StandardCharsets.UTF_8)` does:
/// each ill-formed sequence (overlong forms, code points above U+10FFFF, truncated sequences,
/// stray continuation bytes) becomes one U+FFFD per maximal subpart, as in the Unicode
/// Standard's "U+FFFD substitution of maximal subparts", except that, as in Java, an encoded
/// surrogate (ED A0..BF xx) is one U+FFFD. So any bytes are accepted and hash the way Java would
/// see them; tests/java checks this against the JDK on random and ill-formed keys. Pulsar's own C++
/// client differs for non-ASCII keys (it adds each byte as a signed char); this functor matches the
/// Java client. Returns the raw 32-bit value (Java's int, as unsigned). O(len). Thread-safe.
struct java_string_hash {
    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint32_t {
        const unsigned char* p = detail::bytes(key);
        const std::size_t n = key.size();
        std::uint32_t h = 0;
        std::size_t i = 0;
        while (i < n) {
            const std::uint32_t b0 = p[i];
            if (b0 < 0x80U) {
                h = 31U * h + b0;
                ++i;
                continue;
            }
            std::uint32_t cp = 0;
            std::size_t need = 0;
            unsigned char lo = 0x80;
            unsigned char hi = 0xbf;
            if (b0 >= 0xc2U && b0 <= 0xdfU) {
                need = 1;
                cp = b0 & 0x1fU;
            } else if (b0 >= 0xe0U && b0 <= 0xefU) {
                need = 2;
                cp = b0 & 0x0fU;
                lo = b0 == 0xe0U ? 0xa0 : 0x80;  // no overlong forms
            } else if (b0 >= 0xf0U && b0 <= 0xf4U) {
                need = 3;
                cp = b0 & 0x07U;
                lo = b0 == 0xf0U ? 0x90 : 0x80;  // no overlong forms
                hi = b0 == 0xf4U ? 0x8f : 0xbf;  // nothing above U+10FFFF
            } else {
                h = 31U * h + 0xfffdU;  // a byte that never starts a sequence
                ++i;
                continue;
            }
            std::size_t used = 1;
            bool ok = true;
            for (std::size_t k = 0; k < need; ++k) {
                if (i + used >= n) {
                    ok = false;
                    break;
                }
                const unsigned char c = p[i + used];
                const unsigned char min = k == 0 ? lo : 0x80;
                const unsigned char max = k == 0 ? hi : 0xbf;
                if (c < min || c > max) {
                    ok = false;
                    break;
                }
                cp = (cp << 6U) | (c & 0x3fU);
                ++used;
            }
            i += used;
            if (!ok || (cp >= 0xd800U && cp <= 0xdfffU)) {
                // One replacement for the subpart consumed; Java, unlike the Unicode practice,
                // reads ED A0..BF as a prefix, so an encoded surrogate is one U+FFFD, not three.
                h = 31U * h + 0xfffdU;
            } else if (cp < 0x10000U) {
                h = 31U * h + cp;
            } else {
                cp -= 0x10000U;
                h = 31U * h + (0xd800U + (cp >> 10U));
                h = 31U * h + (0xdc00U + (cp & 0x3ffU));
            }
        }
        return h;
    }
};

/// MurmurHash3 x86 32-bit with seed 0, as Pulsar's Murmur3_32Hash scheme (its Java and C++
/// clients) computes it before masking with 0x7fffffff. Blocks are read little-endian on every
/// platform. O(len). Thread-safe.
struct murmur3_32 {
    std::uint32_t seed = 0;

    [[nodiscard]] auto operator()(std::string_view key) const noexcept -> std::uint32_t {
        constexpr std::uint32_t c1 = 0xcc9e2d51U;
        constexpr std::uint32_t c2 = 0x1b873593U;
        const unsigned char* p = detail::bytes(key);
        const std::size_t len = key.size();
        std::uint32_t h = seed;
        const std::size_t blocks = len / 4;
        for (std::size_t i = 0; i < blocks; ++i) {
            std::uint32_t k = detail::load_u32_le(p + 4 * i);
            k *= c1;
            k = detail::rotl32(k, 15);
            k *= c2;
            h ^= k;
            h = detail::rotl32(h, 13);
            h = h * 5U + 0xe6546b64U;
        }
        const unsigned char* tail = p + 4 * blocks;
        std::uint32_t k = 0;
        switch (len & 3U) {
        case 3: k ^= static_cast<std::uint32_t>(tail[2]) << 16U; [[fallthrough]];
        case 2: k ^= static_cast<std::uint32_t>(tail[1]) << 8U; [[fallthrough]];
        case 1:
            k ^= static_cast<std::uint32_t>(tail[0]);
            k *= c1;
            k = detail::rotl32(k, 15);
            k *= c2;
            h ^= k;
            break;
        default: break;
        }
        h ^= static_cast<std::uint32_t>(len);
        h ^= h >> 16U;
        h *= 0x85ebca6bU;
        h ^= h >> 13U;
        h *= 0xc2b2ae35U;
        h ^= h >> 16U;
        return h;
    }
};

/// True when `Hash` fits the hash functor interface: a const call with std::string_view that
/// returns std::uint32_t or std::uint64_t.
template <class Hash, class = void>
struct is_hash_functor : std::false_type {};

template <class Hash>
struct is_hash_functor<
    Hash, std::void_t<decltype(std::declval<const Hash&>()(std::declval<std::string_view>()))>>
    : std::bool_constant<
          std::is_same_v<decltype(std::declval<const Hash&>()(std::declval<std::string_view>())),
                         std::uint32_t> ||
          std::is_same_v<decltype(std::declval<const Hash&>()(std::declval<std::string_view>())),
                         std::uint64_t>> {};

template <class Hash>
inline constexpr bool is_hash_functor_v = is_hash_functor<Hash>::value;

namespace detail {

template <class Hash>
constexpr void check_hash_functor() noexcept {
    static_assert(std::is_invocable_v<const Hash&, std::string_view>,
                  "keyroute: a hash functor must be callable as `hash(std::string_view) const`; "
                  "add `std::uint64_t operator()(std::string_view key) const noexcept`");
    if constexpr (std::is_invocable_v<const Hash&, std::string_view>) {
        static_assert(is_hash_functor_v<Hash>,
                      "keyroute: a hash functor must return exactly std::uint32_t or "
                      "std::uint64_t; cast the result of your hash");
    }
    static_assert(std::is_copy_constructible_v<Hash>,
                  "keyroute: a hash functor must be copy-constructible");
}

template <class Hash, class = void>
struct hash_max_partitions : std::integral_constant<std::uint32_t, 0xffffffffU> {};

template <class Hash>
struct hash_max_partitions<Hash, std::void_t<decltype(Hash::max_partitions)>>
    : std::integral_constant<std::uint32_t, Hash::max_partitions> {};

}  // namespace detail

/// The result type of `Hash` (std::uint32_t or std::uint64_t).
template <class Hash>
using hash_result_t = std::invoke_result_t<const Hash&, std::string_view>;

}  // namespace keyroute
