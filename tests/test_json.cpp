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
    // From 0x20 up, ASCII passes through: DEL and '/' as they are.
    CHECK(json("\x20\x7f/") == "\" \x7f/\"");
}

TEST_CASE("JSON strings: well-formed UTF-8 as it is, any other byte as U+FFFD", "[json]") {
    // 2, 3 and 4-byte sequences at the edges of their ranges pass through.
    for (const std::string_view ok :
         {"caf\xc3\xa9", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xef\xbf\xbf",
          "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"}) {
        CHECK(keyroute::detail::valid_utf8(ok));
        CHECK(json(ok) == "\"" + std::string(ok) + "\"");
    }
    // A stray continuation byte, bytes that never occur (0xc0, 0xc1, 0xf5 to 0xff), an overlong
    // form, a surrogate, a code point past U+10FFFF, and a sequence cut short: each byte that
    // does not begin a well-formed sequence becomes \ufffd; what follows is read afresh.
    CHECK(json("ab\xff\xfe") == R"("ab\ufffd\ufffd")");
    CHECK(json("\x80x") == R"("\ufffdx")");
    CHECK(json("\xc0\xaf") == R"("\ufffd\ufffd")");
    CHECK(json("\xe0\x80\xaf") == R"("\ufffd\ufffd\ufffd")");
    CHECK(json("\xed\xa0\x80") == R"("\ufffd\ufffd\ufffd")");
    CHECK(json("\xf4\x90\x80\x80") == R"("\ufffd\ufffd\ufffd\ufffd")");
    CHECK(json("\xe2\x82") == R"("\ufffd\ufffd")");
    CHECK(json("\xe2\x82\xac\xe2\x82") == "\"\xe2\x82\xac\\ufffd\\ufffd\"");
    for (const std::string_view bad : {"\xff", "\x80", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82"})
        CHECK_FALSE(keyroute::detail::valid_utf8(bad));
    CHECK(keyroute::detail::valid_utf8(""));
}
