// keyroute::detail::write_json_string, the JSON string writer behind the reports' write_json().
#include "keyroute_catch.hpp"

#include <keyroute/detail/json.hpp>

#include <sstream>
#include <string>
#include <string_view>

namespace {

auto json(std::string_view text) -> std::string {
    std::ostringstream out;
    keyroute::detail::write_json_string(out, text);
    return out.str();
}

}  // namespace

TEST_CASE("JSON strings: quoted, with quotes, backslashes and control bytes escaped", "[json]") {
    CHECK(json("") == R"("")");
    CHECK(json("plain text") == R"("plain text")");
    CHECK(json("say \"hi\"") == R"("say \"hi\"")");
    CHECK(json("C:\\dir\\") == R"("C:\\dir\\")");
    CHECK(json("a\nb\tc\rd") == R"("a\u000ab\u0009c\u000dd")");
    CHECK(json(std::string_view("\x00\x1f", 2)) == R"("\u0000\u001f")");
    // From 0x20 up, bytes pass through: DEL, '/', UTF-8 (and invalid UTF-8) as they are.
    CHECK(json("\x20\x7f/") == "\" \x7f/\"");
    CHECK(json("caf\xc3\xa9 \xff") == "\"caf\xc3\xa9 \xff\"");
}
