#pragma once
// Key sets for the benchmarks, generated once, outside every timed loop.
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

}  // namespace keyroute_bench
