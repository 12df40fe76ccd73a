// Golden values: each hash functor against the values the real projects pin in their own tests.
#include "keyroute_catch.hpp"

#include <keyroute/hash.hpp>

#include <cstdint>
#include <string>
#include <string_view>

using namespace std::string_view_literals;

namespace {
auto as_int32(std::uint32_t v) -> std::int32_t { return static_cast<std::int32_t>(v); }
}  // namespace

TEST_CASE("murmur2 matches Kafka's UtilsTest.testMurmur2", "[hash][murmur2][compat]") {
    // apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2.
    const keyroute::murmur2 h;
    CHECK(as_int32(h("21")) == -973932308);
    CHECK(as_int32(h("foobar")) == -790332482);
    CHECK(as_int32(h("a-little-bit-long-string")) == -985981536);
    CHECK(as_int32(h("a-little-bit-longer-string")) == -1486304829);
    CHECK(as_int32(h("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8")) == -58897971);
    CHECK(as_int32(h("abc")) == 479470107);
}

TEST_CASE("murmur2 matches librdkafka's rdmurmur2.c unit test", "[hash][murmur2][compat]") {
    // confluentinc/librdkafka src/rdmurmur2.c, unittest_murmur2 (java_murmur2_results).
    const keyroute::murmur2 h;
    const std::string_view unaligned = "PreAmbleWillBeRemoved,ThePrePartThatIs";
    CHECK(h("kafka") == 0xd067cf64U);
    CHECK(h("giberish123456789") == 0x8f552b0cU);
    CHECK(h("1234") == 0x9fc97b14U);
    CHECK(h("234") == 0xe7c009caU);
    CHECK(h("34") == 0x873930daU);
    CHECK(h("4") == 0x5a4b5ca1U);
    CHECK(h(unaligned) == 0x78424f1cU);
    CHECK(h(unaligned.substr(1)) == 0x4a62b377U);
    CHECK(h(unaligned.substr(2)) == 0xe0e4e09eU);
    CHECK(h(unaligned.substr(3)) == 0x62b8b43fU);
    CHECK(h("") == 0x106e08d9U);
    CHECK(h(std::string_view{}) == 0x106e08d9U);
}

TEST_CASE("fnv1a matches librdkafka's rdfnv1a.c unit test", "[hash][fnv1a][compat]") {
    // confluentinc/librdkafka src/rdfnv1a.c, unittest_fnv1a (values from Go's hash/fnv + abs).
    const keyroute::fnv1a h;
    const std::string_view unaligned = "PreAmbleWillBeRemoved,ThePrePartThatIs";
    CHECK(h("kafka") == 0xd33c4e1U);
    CHECK(h("giberish123456789") == 0x77a58295U);
    CHECK(h("1234") == 0x23bdd03U);
    CHECK(h("234") == 0x2dea3cd2U);
    CHECK(h("34") == 0x740fa83eU);
    CHECK(h("4") == 0x310ca263U);
    CHECK(h(unaligned) == 0x65cbd69cU);
    CHECK(h(unaligned.substr(1)) == 0x6e49c79aU);
    CHECK(h(unaligned.substr(2)) == 0x69eed356U);
    CHECK(h(unaligned.substr(3)) == 0x6abcc023U);
    CHECK(h("") == 0x7ee3623bU);
    CHECK(h(std::string_view{}) == 0x7ee3623bU);
}

TEST_CASE("crc32 is the IEEE CRC-32 of zlib and librdkafka", "[hash][crc32][compat]") {
    // The standard check value of CRC-32/ISO-HDLC (the catalogue of parametrised CRC
    // algorithms): "123456789" -> 0xcbf43926; and the CRC of nothing is 0.
    const keyroute::crc32 h;
    CHECK(h("123456789") == 0xcbf43926U);
    CHECK(h("") == 0U);
    CHECK(h("The quick brown fox jumps over the lazy dog") == 0x414fa339U);
}

TEST_CASE("murmur3_32 matches Pulsar's HashTest", "[hash][murmur3][compat]") {
    // apache/pulsar-client-cpp tests/HashTest.cc, testMurmur3_32Hash ("Same value as Java
    // client"); those values are after Pulsar's & 0x7fffffff.
    const keyroute::murmur3_32 h;
    CHECK((h("k1") & 0x7fffffffU) == 2110152746U);
    CHECK((h("k2") & 0x7fffffffU) == 1479966664U);
    CHECK((h("key1") & 0x7fffffffU) == 462881061U);
    CHECK((h("key2") & 0x7fffffffU) == 1936800180U);
    CHECK((h("key01") & 0x7fffffffU) == 39696932U);
    CHECK((h("key02") & 0x7fffffffU) == 751761803U);
}

TEST_CASE("murmur3_32 matches MurmurHash3_x86_32's published values", "[hash][murmur3]") {
    // Values of Austin Appleby's MurmurHash3_x86_32, as listed in the SMHasher discussions and
    // reproduced by every port: empty input with seeds 0 and 1, and short ASCII strings.
    CHECK(keyroute::murmur3_32{}("") == 0U);
    CHECK(keyroute::murmur3_32{1}("") == 0x514e28b7U);
    CHECK(keyroute::murmur3_32{0xffffffffU}("") == 0x81f16f39U);
    CHECK(keyroute::murmur3_32{}("hello") == 0x248bfa47U);
    CHECK(keyroute::murmur3_32{}("Hello, world!") == 0xc0363e43U);
    CHECK(keyroute::murmur3_32{}("The quick brown fox jumps over the lazy dog") == 0x2e4ff723U);
}

TEST_CASE("java_string_hash matches Pulsar's HashTest and Java", "[hash][java][compat]") {
    // apache/pulsar-client-cpp tests/HashTest.cc, testJavaStringHash ("Same as Java client"),
    // after & 0x7fffffff.
    const keyroute::java_string_hash h;
    CHECK((h("keykeykeykeykey1") & 0x7fffffffU) == 434058482U);
    CHECK((h("keykeykey2") & 0x7fffffffU) == 42978643U);
    // Java: "".hashCode() == 0, "a".hashCode() == 97, "hello".hashCode() == 99162322.
    CHECK(h("") == 0U);
    CHECK(h("a") == 97U);
    CHECK(h("hello") == 99162322U);
}

TEST_CASE("xxh3 is XXH3_64bits and its values are pinned", "[hash][xxh3]") {
    const keyroute::xxh3 h;
    for (std::string_view k : {""sv, "a"sv, "user_1"sv, "0123456789abcdef0123456789abcdef0"sv}) {
        CHECK(h(k) == XXH3_64bits(k.data(), k.size()));
        CHECK(keyroute::xxh3{42}(k) == XXH3_64bits_withSeed(k.data(), k.size(), 42));
    }
    // XXH3_64bits of the empty input, xxHash's documented sanity value.
    CHECK(h("") == 0x2d06800538d394c2ULL);
    // Pinned: keyroute's default partitioner depends on these never changing.
    CHECK(h("user_1") == 0x20f909ab6f54d5a1ULL);
    CHECK(h("tenant-42") == 0xee7f6fb0845f540fULL);
}
