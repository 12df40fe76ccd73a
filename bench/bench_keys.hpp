#pragma once
// Key sets for the benchmarks, generated once, outside every timed loop.
#include <keyroute/hash.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace keyroute_bench {

/// 4096 random alphanumeric keys of exactly `size` bytes (a power-of-two count, so the timed
/// loops pick a key with a mask, not a division).
inline auto keys_of_size(std::size_t size) -> const std::vector<std::string>& {
    static std::vector<std::vector<std::string>> cache(2049);
    auto& keys = cache.at(size);
    if (keys.empty()) {
        std::mt19937_64 rng(size);
        static constexpr char alphabet[] =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        for (int i = 0; i < 4096; ++i) {
            std::string k(size, '\0');
            for (auto& c : k) c = alphabet[rng() % (sizeof alphabet - 1)];
            keys.push_back(std::move(k));
        }
    }
    return keys;
}

inline constexpr std::size_t key_mask = 4095;

/// XXH3 alone, the floor of every benchmark, called the way the keyroute schemes call it: out of
/// line. GCC inlines xxHash's XXH3 (about 330 instructions with its short-key paths) only into a
/// translation unit that calls it once, which no program using a partitioner does; the benchmarks
/// also time the inlined-once call (`xxh3_inlined`) to show what the call itself costs.
[[gnu::noinline]] inline auto xxh3_call(const char* data, std::size_t size) -> std::uint64_t {
    return XXH3_64bits(data, size);
}

}  // namespace keyroute_bench
