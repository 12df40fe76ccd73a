#pragma once

/// @file
/// JSON output shared by the reports' write_json() (migration.hpp, quality.hpp).

#include <ostream>
#include <string_view>

namespace keyroute::detail {

/// Writes `text` to `out` as a JSON string: in double quotes, with `"` and `\` escaped by a
/// backslash and the control bytes below 0x20 as `\u00xx`. Every other byte is written as it
/// is, so UTF-8 stays UTF-8 (invalid UTF-8 is not repaired). O(text.size()).
inline void write_json_string(std::ostream& out, std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    out << '"';
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out << '\\' << c;
        } else if (u < 0x20U) {
            out << "\\u00" << hex[u >> 4U] << hex[u & 0xfU];
        } else {
            out << c;
        }
    }
    out << '"';
}

}  // namespace keyroute::detail
