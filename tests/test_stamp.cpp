// Ordering stamps: the version-1 wire format round-trips, every malformed input is rejected with
// its own reason, and arbitrary bytes never crash the decoder.
#include "keyroute_catch.hpp"

#include <keyroute/stamp.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using keyroute::stamp;
using keyroute::stamp_error;

auto bytes_of(std::initializer_list<int> values) -> std::string {
    std::string out;
    for (const int v : values) out.push_back(static_cast<char>(v));
    return out;
}

auto error_of(const std::string& bytes) -> stamp_error {
    stamp_error e = stamp_error::none;
    const auto s = keyroute::try_decode_stamp(bytes, &e);
    CHECK_FALSE(s.has_value());
    return e;
}

auto random_stamp(std::mt19937_64& rng) -> stamp {
    // Mix full-width values with small ones so every varint length 1..10 shows up.
    const auto value = [&]() -> std::uint64_t {
        const unsigned bits = static_cast<unsigned>(rng() % 65);
        return bits == 64 ? rng() : rng() & ((std::uint64_t{1} << bits) - 1);
    };
    stamp s;
    s.producer = value();
    s.lane = static_cast<std::uint16_t>(rng());
    s.episode = value();
    if (s.episode == 0) s.episode = 1;
    s.sequence = value();
    s.salted = (rng() & 1U) != 0;
    return s;
}

}  // namespace

TEST_CASE("encode_stamp writes the documented version-1 bytes", "[ordering][stamp]") {
    // version 1, flags salted, producer 300 = AC 02, lane 1, episode 1, sequence 0.
    const stamp s{300, 1, 1, 0, true};
    const auto enc = keyroute::encode_stamp(s);
    CHECK(std::string(enc.view()) == bytes_of({0x01, 0x01, 0xAC, 0x02, 0x01, 0x01, 0x00}));
    CHECK(enc.data() == enc.bytes.data());
    // Unsalted, the flags byte is 0.
    const stamp u{0, 0, 1, 127, false};
    CHECK(std::string(keyroute::encode_stamp(u).view()) ==
          bytes_of({0x01, 0x00, 0x00, 0x00, 0x01, 0x7F}));
}

TEST_CASE("random stamps round-trip through the wire format", "[ordering][stamp]") {
    std::mt19937_64 rng(20240601);
    std::set<std::size_t> sizes;
    for (int i = 0; i < 100000; ++i) {
        const stamp s = random_stamp(rng);
        const auto enc = keyroute::encode_stamp(s);
        REQUIRE(enc.size <= keyroute::max_encoded_stamp_size);
        sizes.insert(enc.size);
        stamp_error e = stamp_error::trailing_bytes;
        const auto back = keyroute::try_decode_stamp(enc.view(), &e);
        REQUIRE(back.has_value());
        REQUIRE(*back == s);
        REQUIRE(e == stamp_error::none);
        REQUIRE(keyroute::decode_stamp(enc.view()) == s);
    }
    // The extremes: every field at its largest value takes exactly the documented maximum.
    const stamp big{std::numeric_limits<std::uint64_t>::max(), 0xffff,
                    std::numeric_limits<std::uint64_t>::max(),
                    std::numeric_limits<std::uint64_t>::max(), true};
    CHECK(keyroute::encode_stamp(big).size == keyroute::max_encoded_stamp_size);
    CHECK(keyroute::decode_stamp(keyroute::encode_stamp(big).view()) == big);
    CHECK(sizes.size() > 20);  // many encoded lengths were exercised
}

TEST_CASE("every stamp_error has its own path", "[ordering][stamp]") {
    const std::string good(keyroute::encode_stamp(stamp{5, 2, 9, 300, false}).view());

    CHECK(error_of("") == stamp_error::empty);
    CHECK(error_of(bytes_of({0x00})) == stamp_error::unknown_version);
    CHECK(error_of(bytes_of({0x02, 0x00, 0x00, 0x00, 0x01, 0x00})) == stamp_error::unknown_version);
    CHECK(error_of(bytes_of({0xFF})) == stamp_error::unknown_version);
    CHECK(error_of(bytes_of({0x01})) == stamp_error::truncated);
    CHECK(error_of(bytes_of({0x01, 0x02, 0x00, 0x00, 0x01, 0x00})) == stamp_error::bad_flags);
    CHECK(error_of(bytes_of({0x01, 0x80, 0x00, 0x00, 0x01, 0x00})) == stamp_error::bad_flags);
    // Every strict prefix longer than the version byte is truncated.
    for (std::size_t n = 2; n < good.size(); ++n) {
        CAPTURE(n);
        CHECK(error_of(good.substr(0, n)) == stamp_error::truncated);
    }
    // lane 65536 = 80 80 04
    CHECK(error_of(bytes_of({0x01, 0x00, 0x00, 0x80, 0x80, 0x04, 0x01, 0x00})) ==
          stamp_error::bad_lane);
    CHECK(error_of(bytes_of({0x01, 0x00, 0x00, 0x00, 0x00, 0x00})) == stamp_error::zero_episode);
    CHECK(error_of(good + '\0') == stamp_error::trailing_bytes);
    // A varint longer than 64 bits: ten bytes whose last sets bits above 63, or eleven bytes.
    CHECK(error_of(bytes_of({0x01, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02,
                             0x00, 0x01, 0x00})) == stamp_error::truncated);
    CHECK(error_of(bytes_of({0x01, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                             0x00, 0x00, 0x01, 0x00})) == stamp_error::truncated);
    // The largest ten-byte form is still accepted.
    CHECK(keyroute::try_decode_stamp(bytes_of({0x01, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                               0xFF, 0xFF, 0x01, 0x00, 0x01, 0x00}))
              ->producer == std::numeric_limits<std::uint64_t>::max());

    // A varint padded with 0x80 bytes within 64 bits (not the shortest form) is accepted, as any
    // LEB128 reader does (docs/bad-input.md): producer 5 as 85 80 00, lane 2 as 82 80 80 00, and
    // the longest stamp the decoder reads, every varint ten bytes (2 + 4 x 10 = 42).
    const auto padded = keyroute::try_decode_stamp(
        bytes_of({0x01, 0x00, 0x85, 0x80, 0x00, 0x82, 0x80, 0x80, 0x00, 0x09, 0xAC, 0x02}));
    REQUIRE(padded.has_value());
    CHECK(*padded == stamp{5, 2, 9, 300, false});
    std::string longest = bytes_of({0x01, 0x01});
    for (int field = 0; field < 4; ++field) {
        longest += bytes_of({0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00});
    }
    CHECK(longest.size() == 42);
    CHECK(keyroute::try_decode_stamp(longest) == std::optional<stamp>(stamp{1, 1, 1, 1, true}));

    // Without an error pointer the decoder still fails cleanly.
    CHECK_FALSE(keyroute::try_decode_stamp("").has_value());

    // decode_stamp throws, naming the reason.
    CHECK_THROWS_AS(keyroute::decode_stamp(good + 'x'), std::runtime_error);
    CHECK_THROWS_WITH(keyroute::decode_stamp(""), keyroute_test::contains("empty stamp"));
    CHECK_THROWS_WITH(keyroute::decode_stamp(bytes_of({0x01, 0x00, 0x00, 0x00, 0x00, 0x00})),
                      keyroute_test::contains("episode 0"));

    // Every error has a distinct readable name.
    std::set<std::string> names;
    for (const stamp_error e :
         {stamp_error::none, stamp_error::empty, stamp_error::unknown_version,
          stamp_error::bad_flags, stamp_error::truncated, stamp_error::bad_lane,
          stamp_error::zero_episode, stamp_error::trailing_bytes}) {
        names.insert(keyroute::to_string(e));
    }
    CHECK(names.size() == 8);
}

TEST_CASE("a default stamp means no stamp", "[ordering][stamp]") {
    CHECK_FALSE(static_cast<bool>(stamp{}));
    CHECK(static_cast<bool>(stamp{0, 0, 1, 0, false}));
    CHECK(stamp{1, 2, 3, 4, true} != stamp{1, 2, 3, 4, false});
}

TEST_CASE("no stamp encodes to no bytes, never to bytes a decoder rejects", "[ordering][stamp]") {
    for (const stamp& none : {stamp{}, stamp{7, 3, 0, 12, true}}) {
        const auto bytes = keyroute::encode_stamp(none);
        CHECK(bytes.size == 0);
        CHECK(bytes.view().empty());
    }
    CHECK(keyroute::encode_stamp(stamp{0, 0, 1, 0, false}).size == 6);
}

TEST_CASE("random bytes never crash the decoder and accepted ones re-encode", "[ordering][stamp]") {
    std::mt19937_64 rng(77);
    std::size_t accepted = 0;
    for (int i = 0; i < 300000; ++i) {
        std::string in(rng() % 40, '\0');
        for (auto& c : in) c = static_cast<char>(rng());
        // Bias towards plausible inputs so the deep paths run too.
        if (!in.empty() && (rng() & 1U) != 0) in[0] = 0x01;
        if (in.size() > 1 && (rng() & 1U) != 0) in[1] = static_cast<char>(rng() & 1U);
        for (std::size_t j = 2; j < in.size(); ++j) {
            if ((rng() & 3U) == 0) in[j] = static_cast<char>(in[j] & 0x7F);
        }
        stamp_error e = stamp_error::none;
        const auto s = keyroute::try_decode_stamp(in, &e);
        if (!s) {
            REQUIRE(e != stamp_error::none);
            continue;
        }
        ++accepted;
        REQUIRE(e == stamp_error::none);
        REQUIRE(static_cast<bool>(*s));
        // Over-long (non-minimal) varints decode too; the canonical re-encoding is never longer
        // and decodes to the same stamp.
        const auto enc = keyroute::encode_stamp(*s);
        REQUIRE(enc.size <= in.size());
        REQUIRE(keyroute::try_decode_stamp(enc.view()) == s);
    }
    CHECK(accepted > 1000);
}
