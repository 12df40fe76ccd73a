#pragma once

// What the libFuzzer targets share: a reader of the fuzz input, and FUZZ_REQUIRE, a check that
// names the failing expression, file and line before it aborts (libFuzzer then keeps the input).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace keyroute_fuzz {

/// Reads the input front to back; past the end every read is 0 (or empty).
class input {
public:
    input(const std::uint8_t* data, std::size_t size) : m_data(data), m_size(size) {}

    [[nodiscard]] auto empty() const -> bool { return m_pos >= m_size; }

    auto byte() -> std::uint8_t { return m_pos < m_size ? m_data[m_pos++] : 0; }

    /// `bytes` bytes (at most 8), little-endian.
    auto u64(std::size_t bytes) -> std::uint64_t {
        std::uint64_t v = 0;
        for (std::size_t i = 0; i < bytes; ++i) v |= std::uint64_t{byte()} << (8U * i);
        return v;
    }

    /// The next `n` bytes, fewer at the end.
    auto bytes(std::size_t n) -> std::string_view {
        const std::size_t take = std::min(n, m_size - std::min(m_pos, m_size));
        const std::string_view out(reinterpret_cast<const char*>(m_data) + m_pos, take);
        m_pos += take;
        return out;
    }

    /// Everything not read yet.
    auto rest() -> std::string_view { return bytes(m_size); }

private:
    const std::uint8_t* m_data;
    std::size_t m_size;
    std::size_t m_pos = 0;
};

inline void require_at(bool ok, const char* what, const char* file, int line) {
    if (ok) return;
    std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    std::abort();
}

}  // namespace keyroute_fuzz

// NOLINTNEXTLINE(cppcoreguidelines-macro-usage): the failing expression and line, for triage
#define FUZZ_REQUIRE(...) \
    ::keyroute_fuzz::require_at((__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__)
