// java_string_hash against values printed by the JDK (OpenJDK 17:
// `new String(bytes, StandardCharsets.UTF_8).hashCode()`), for non-ASCII and ill-formed keys.
// test_java_string_hash_live repeats the check on 200k random keys where a JDK is installed.
#include "keyroute_catch.hpp"

#include <keyroute/hash.hpp>
#include <keyroute/partitioner.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace {
auto java(std::string_view key) -> std::int32_t {
    return static_cast<std::int32_t>(keyroute::java_string_hash{}(key));
}
}  // namespace

TEST_CASE("java_string_hash hashes UTF-16 code units as Java does", "[hash][java][compat]") {
    CHECK(java("h\xc3\xa9llo") == 103094734);           // "héllo": é is one UTF-16 unit
    CHECK(java("\xe6\x97\xa5\xe6\x9c\xac") == 835047);  // "日本"
    CHECK(java("\xf0\x9f\x98\x80") == 1772899);         // U+1F600: a surrogate pair
    CHECK(java("tenant-\xe6\x97\xa5\xe6\x9c\xac-42") == 316418369);
    CHECK(java(std::string_view("key\0nul", 7)) == -817954204);  // NUL is a character
}

TEST_CASE("java_string_hash replaces ill-formed UTF-8 as Java's decoder does", "[hash][java]") {
    CHECK(java("\xff") == 65533);          // never a lead byte: U+FFFD
    CHECK(java("\xe1\x80") == 65533);      // truncated sequence: one U+FFFD
    CHECK(java("\xed\xa0\x80") == 65533);  // encoded surrogate: one U+FFFD (Java's reading)
    CHECK(java("\xc0\xaf") == 2097056);    // overlong '/': two U+FFFD (31 * 65533 + 65533)
}

TEST_CASE("pulsar_java_string_partitioner differs from Pulsar's C++ client only for non-ASCII",
          "[partitioner][java]") {
    // Pulsar's C++ JavaStringHash adds each byte as a signed char; for ASCII that is the same.
    const auto cpp_client = [](std::string_view key) {
        std::uint32_t h = 0;
        for (char c : key) h = 31U * h + static_cast<std::uint32_t>(static_cast<int>(c));
        return h & 0x7fffffffU;
    };
    const keyroute::pulsar_java_string_partitioner p(16);
    CHECK(p.route("keykeykey2") == cpp_client("keykeykey2") % 16);
    CHECK((keyroute::java_string_hash{}("h\xc3\xa9llo") & 0x7fffffffU) !=
          cpp_client("h\xc3\xa9llo"));
}
