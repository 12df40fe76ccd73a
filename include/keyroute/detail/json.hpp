#pragma once

/// @file
/// JSON output shared by the reports' write_json() (migration.hpp, quality.hpp).

#include <cstddef>
#include <ostream>
#include <string_view>

namespace keyroute::detail {

/// The length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629, table 3-7 of
/// the Unicode standard: no overlong forms, no surrogates, nothing past U+10FFFF), or 0 when
/// the first byte does not begin one. `text` is not empty.
inline auto utf8_sequence(std::string_view text) noexcept -> std::size_t {
    const auto at = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned b0 = at(0);
    if (b0 < 0x80U) return 1;
    std::size_t n = 0;
    unsigned lo = 0x80U;  // the second byte's range, [lo, hi]
    unsigned hi = 0xbfU;
    if (b0 >= 0xc2U && b0 <= 0xdfU) {
        n = 2;
    } else if (b0 >= 0xe0U && b0 <= 0xefU) {
        n = 3;
        if (b0 == 0xe0U) lo = 0xa0U;  // overlong below
        if (b0 == 0xedU) hi = 0x9fU;  // surrogates above
    } else if (b0 >= 0xf0U && b0 <= 0xf4U) {
        n = 4;
        if (b0 == 0xf0U) lo = 0x90U;  // overlong below
        if (b0 == 0xf4U) hi = 0x8fU;  // past U+10FFFF above
    } else {
        return 0;
    }
    if (text.size() < n || at(1) < lo || at(1) > hi) return 0;
    for (std::size_t i = 2; i < n; ++i) {
        if (at(i) < 0x80U || at(i) > 0xbfU) return 0;
    }
    return n;
}

/// Whether `text` is well-formed UTF-8 throughout.
inline auto valid_utf8(std::string_view text) noexcept -> bool {
    while (!text.empty()) {
        const std::size_t n = utf8_sequence(text);
        if (n == 0) return false;
        text.remove_prefix(n);
    }
    return true;
}

/// Writes byte `u` as two lowercase hex digits.
inline void write_hex_byte(std::ostream& out, unsigned char u) {
    static constexpr char digits[] = "0123456789abcdef";
    out << digits[u >> 4U] << digits[u & 0xfU];
}

/// Writes every byte of `bytes` as two lowercase hex digits, as a JSON string (`"00ff"`).
inline void write_json_hex(std::ostream& out, std::string_view bytes) {
    out << '"';
    for (const char c : bytes) write_hex_byte(out, static_cast<unsigned char>(c));
    out << '"';
}

/// Writes `text` to `out` as a JSON string: in double quotes, with `"` and `\` escaped by a
/// backslash and the control bytes below 0x20 as `\u00xx`. Well-formed UTF-8 is written as it
/// is; each byte that does not begin a well-formed sequence is written as `\ufffd` (the
/// replacement character), so the output is always valid JSON (RFC 8259) even for binary
/// text, at the cost of those bytes (valid_utf8() tells when a caller should also write the
/// bytes another way, e.g. in hex). O(text.size()).
inline void write_json_string(std::ostream& out, std::string_view text) {
    out << '"';
    while (!text.empty()) {
        const char c = text.front();
        const auto u = static_cast<unsigned char>(c);
        std::size_t n = 1;
        if (c == '"' || c == '\\') {
            out << '\\' << c;
        } else if (u < 0x20U) {
            out << "\\u00";
            write_hex_byte(out, u);
        } else if (u < 0x80U) {
            out << c;
        } else if ((n = utf8_sequence(text)) != 0) {
            out.write(text.data(), static_cast<std::streamsize>(n));
        } else {
            n = 1;
            out << "\\ufffd";
        }
        text.remove_prefix(n);
    }
    out << '"';
}

}  // namespace keyroute::detail
