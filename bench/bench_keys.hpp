#pragma once
// Key sets for the benchmarks, generated once, outside every timed loop.
#include <keyroute/hash.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace keyroute_bench {

/// 4096 random alphanumeric keys of exactly `size` bytes (a power-of-two count, so the timed
/// loops pick a key with a mask, not a division), `size` <= 2048. Thread-safe: each size is built
/// once (std::call_once). The threads of a benchmark all ask for its keys on entry; with
/// random interleaving a 2-thread run is often a size's first, and until keyroute 0.2.8 both
/// threads then filled the same vector at once (a data race: 4614 keys instead of 4096).
inline auto keys_of_size(std::size_t size) -> const std::vector<std::string>& {
    static std::vector<std::vector<std::string>> cache(2049);
    static std::vector<std::once_flag> built(2049);
    auto& keys = cache.at(size);
    std::call_once(built.at(size), [&keys, size] {
        std::mt19937_64 rng(size);
        static constexpr char alphabet[] =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        for (int i = 0; i < 4096; ++i) {
            std::string k(size, '\0');
            for (auto& c : k) c = alphabet[rng() % (sizeof alphabet - 1)];
            keys.push_back(std::move(k));
        }
    });
    return keys;
}

inline constexpr std::size_t key_mask = 4095;

/// XXH3 alone, one of the two floors of the benchmarks: called out of line. Whether GCC inlines
/// XXH3's short-key paths into a scheme's loop depends on its inlining budget at that call site
/// (`hash_partitioner<>`'s loop gets them, other schemes call XXH3), so the benchmarks also time
/// it inlined into the timed loop (`xxh3_inlined`); bench_summary judges the static target
/// against the faster of the two.
[[gnu::noinline]] inline auto xxh3_call(const char* data, std::size_t size) -> std::uint64_t {
    return XXH3_64bits(data, size);
}

}  // namespace keyroute_bench
