// detail::key_table: admission through the doorkeeper, probe groups, eviction rules, the filter,
// and the hand-over a lane detects by the fingerprint.
#include "keyroute_catch.hpp"

#include <keyroute/router/key_table.hpp>

#include <cstdint>
#include <string>

using keyroute::detail::key_table;

namespace {

// Fingerprints (odd) in probe group `g` of a 16-slot table (2 groups): bits 8+ pick the group,
// bits 20+ the doorkeeper cell, bits 40+ the filter bit; `i` keeps them apart.
constexpr auto fp_in_group(std::uint64_t g, std::uint64_t i) -> std::uint64_t {
    return (i << 44U) | (i << 24U) | (g << 11U) | 1U;
}

// Admits fp (two draws through the doorkeeper) in window w at plan count `plan`.
auto admit(key_table& t, std::uint64_t fp, std::int64_t w, std::uint32_t plan) -> std::uint32_t {
    const std::uint32_t first = t.admit(fp, 0, "key", 1, w, plan, 1U << 20U);
    if (first != key_table::npos) return first;
    return t.admit(fp, 0, "key", 1, w, plan, 1U << 20U);
}

}  // namespace

TEST_CASE("key_table: a key is admitted at its second draw, and found after",
          "[router][key_table]") {
    key_table t(16);
    const std::uint64_t fp = fp_in_group(0, 1);
    CHECK(t.find(fp) == key_table::npos);
    CHECK(t.admit(fp, 7, "user-42", 3, 10, 0, 1U << 20U) ==
          key_table::npos);  // first draw: the doorkeeper
    const std::uint32_t slot = t.admit(fp, 7, "user-42", 3, 10, 0, 1U << 20U);
    REQUIRE(slot < 16U);
    CHECK(t.find(fp) == slot);
    CHECK(t.fingerprint(slot) == fp);
    CHECK(t.at(slot).home.load() == 3U);
    CHECK(t.at(slot).order.load() == 7U);
    char buf[key_table::prefix_bytes];
    const std::size_t len = t.prefix(slot, buf);
    CHECK(std::string(buf, len) == "user-42");
    // Another lane drawing the key again finds it: no second slot.
    CHECK(t.admit(fp, 7, "user-42", 3, 10, 0, 1U << 20U) == key_table::npos);
    CHECK(t.find(fp) == slot);
}

TEST_CASE("key_table: another key in the doorkeeper cell between two draws keeps both out",
          "[router][key_table]") {
    key_table t(16);
    const std::uint64_t a = fp_in_group(0, 1);
    const std::uint64_t b = a ^ (std::uint64_t{1} << 33U);  // same cell, another tag
    CHECK(t.admit(a, 0, "a", 0, 1, 0, 1U << 20U) == key_table::npos);
    CHECK(t.admit(b, 0, "b", 0, 1, 0, 1U << 20U) == key_table::npos);
    CHECK(t.admit(a, 0, "a", 0, 1, 0, 1U << 20U) == key_table::npos);
    CHECK(t.find(a) == key_table::npos);
}

TEST_CASE("key_table: a full group refuses, until a slot may be given up", "[router][key_table]") {
    key_table t(16);
    for (std::uint64_t i = 1; i <= 8; ++i) REQUIRE(admit(t, fp_in_group(0, i), 5, 0) < 16U);
    // New candidates are kept through two plans before they can be pushed out.
    CHECK(admit(t, fp_in_group(0, 9), 5, 1) == key_table::refused);
    // Two plans on: the slot with the fewest events goes.
    for (std::uint64_t i = 1; i <= 8; ++i) {
        key_table::set_volume(t.at(t.find(fp_in_group(0, i))), 5, 100 + i);
    }
    const std::uint32_t weakest = t.find(fp_in_group(0, 1));
    const std::uint32_t taken = admit(t, fp_in_group(0, 9), 5, 2);
    CHECK(taken == weakest);
    CHECK(t.find(fp_in_group(0, 1)) == key_table::npos);
    CHECK(t.find(fp_in_group(0, 9)) == taken);
    // The other group was never touched.
    CHECK(admit(t, fp_in_group(1, 1), 5, 2) < 16U);
}

TEST_CASE("key_table: a key with a stretch open, or spread this window or the last, is kept",
          "[router][key_table]") {
    key_table t(16);
    for (std::uint64_t i = 1; i <= 8; ++i) REQUIRE(admit(t, fp_in_group(0, i), 5, 0) < 16U);
    for (std::uint64_t i = 1; i <= 8; ++i) {
        auto& e = t.at(t.find(fp_in_group(0, i)));
        // Every slot has a lane with a stretch open, and was spread in window 5.
        REQUIRE(key_table::open_stretch(e, e.incarnation.load()));
        e.spread.store(keyroute::detail::window_tag(5));
    }
    CHECK(admit(t, fp_in_group(0, 9), 5, 4) == key_table::refused);
    CHECK(admit(t, fp_in_group(0, 9), 6, 4) == key_table::refused);  // spread in the last window
    // Its lane closes the stretch of one key: that slot may go at once.
    auto& closing = t.at(t.find(fp_in_group(0, 3)));
    key_table::close_stretch(closing, closing.incarnation.load());
    const std::uint32_t taken = admit(t, fp_in_group(0, 9), 6, 4);
    CHECK(taken < 16U);
    CHECK(taken == t.find(fp_in_group(0, 9)));
    CHECK(t.find(fp_in_group(0, 3)) == key_table::npos);
    // Two windows after the last spread the others go too, stretches open or not.
    CHECK(admit(t, fp_in_group(0, 10), 7, 4) < 16U);
}

TEST_CASE("key_table: a hand-over changes the incarnation; a lane that found the old key sees it",
          "[router][key_table]") {
    key_table t(16);
    for (std::uint64_t i = 1; i <= 8; ++i) REQUIRE(admit(t, fp_in_group(0, i), 5, 0) < 16U);
    const std::uint64_t old_fp = fp_in_group(0, 4);
    const std::uint32_t slot = t.find(old_fp);  // a lane finds the old key ...
    const std::uint32_t inc = t.at(slot).incarnation.load();
    for (std::uint64_t i = 1; i <= 8; ++i) {
        key_table::set_volume(t.at(t.find(fp_in_group(0, i))), 5, i == 4 ? 1 : 1000);
    }
    REQUIRE(admit(t, fp_in_group(0, 11), 5, 2) == slot);  // ... the slot goes to another key ...
    CHECK(t.at(slot).incarnation.load() == inc + 1U);
    CHECK(t.fingerprint(slot) != old_fp);  // ... and the lane's second look tells
    // A stretch opened for the old incarnation is refused; one for the new is counted.
    CHECK_FALSE(key_table::open_stretch(t.at(slot), inc));
    CHECK(key_table::open_stretch(t.at(slot), inc + 1U));
    key_table::close_stretch(t.at(slot), inc);  // a late close of the old key changes nothing
    CHECK((t.at(slot).open.load() & 0xffffffffU) == 1U);
}

TEST_CASE("key_table: the filter keeps every live key through a rebuild", "[router][key_table]") {
    key_table t(64);
    std::uint64_t live[20];
    for (std::uint64_t i = 0; i < 20; ++i) {
        live[i] = fp_in_group(i % 8, i + 1);
        REQUIRE(admit(t, live[i], 1, 0) < 64U);
    }
    t.rebuild_filter();
    for (const std::uint64_t fp : live) CHECK(t.find(fp) != key_table::npos);
    CHECK(t.find(fp_in_group(3, 40)) == key_table::npos);
}
