#pragma once
// Realistic key sets for the distribution tests, generated from fixed seeds.
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace keyroute_test {

/// "user_1", "user_2", ...: sequential ids, the shape hashes find hardest.
inline auto sequential_keys(std::size_t n, const char* prefix = "user_")
    -> std::vector<std::string> {
    std::vector<std::string> keys;
    keys.reserve(n);
    for (std::size_t i = 1; i <= n; ++i) keys.push_back(prefix + std::to_string(i));
    return keys;
}

/// Random version-4 UUID strings, 36 characters.
inline auto uuid_keys(std::size_t n, std::uint64_t seed) -> std::vector<std::string> {
    std::mt19937_64 rng(seed);
    std::vector<std::string> keys;
    keys.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t a = rng();
        const std::uint64_t b = rng();
        char buf[40];
        std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx",
                      static_cast<unsigned>(a >> 32U), static_cast<unsigned>((a >> 16U) & 0xffffU),
                      static_cast<unsigned>(a & 0xfffU),
                      static_cast<unsigned>(0x8000U | ((b >> 48U) & 0x3fffU)),
                      static_cast<unsigned long long>(b & 0xffffffffffffULL));
        keys.emplace_back(buf);
    }
    return keys;
}

/// Random binary keys of 8 to 40 bytes (long enough that 1M of them are distinct).
inline auto random_binary_keys(std::size_t n, std::uint64_t seed) -> std::vector<std::string> {
    std::mt19937_64 rng(seed);
    std::vector<std::string> keys;
    keys.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::string k(8 + rng() % 33, '\0');
        for (auto& c : k) c = static_cast<char>(rng());
        keys.push_back(std::move(k));
    }
    return keys;
}

}  // namespace keyroute_test
