// detail::plan_store: pieces published under a sequence counter; picks in proportion; a reader
// that races a writer is told so; a slot of no plan stays home.
#include "keyroute_catch.hpp"

#include <keyroute/router/plan.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

using keyroute::detail::plan_store;

namespace {

const auto none_down = [](std::uint32_t) { return false; };

// Publishes a plan giving `slot` the partitions with the given cursor ends.
void publish(plan_store& s, std::uint32_t slot,
             const std::vector<std::pair<std::uint32_t, std::uint32_t>>& pieces) {
    s.begin();
    for (std::uint32_t j = 0; j < pieces.size(); ++j)
        s.write_piece(j, pieces[j].first, pieces[j].second);
    s.assign(slot, 0, static_cast<std::uint32_t>(pieces.size()));
    s.publish(static_cast<std::uint32_t>(pieces.size()));
}

}  // namespace

TEST_CASE("plan_store: no plan yet, or none for the slot: none", "[router][plan]") {
    plan_store s(4, 16);
    std::uint32_t p = 99;
    CHECK(s.pick(0, 0, none_down, p) == plan_store::outcome::none);
    publish(s, 1, {{5, 0xffffffffU}});
    CHECK(s.pick(0, 0, none_down, p) == plan_store::outcome::none);
    CHECK(s.pick(1, 12345, none_down, p) == plan_store::outcome::picked);
    CHECK(p == 5U);
    // The next plan leaves slot 1 out: every slot is assigned in every plan.
    s.begin();
    for (std::uint32_t k = 0; k < 4; ++k) s.assign(k, 0, 0);
    s.publish(0);
    CHECK(s.pick(1, 12345, none_down, p) == plan_store::outcome::none);
}

TEST_CASE("plan_store: cursor positions pick pieces in proportion to their ranges",
          "[router][plan]") {
    plan_store s(1, 16);
    // Three pieces: a quarter, a half, a quarter of the positions.
    publish(s, 0, {{3, 0x3fffffffU}, {7, 0xbfffffffU}, {9, 0xffffffffU}});
    std::map<std::uint32_t, int> got;
    std::uint32_t cursor = 0;
    for (int i = 0; i < 4000; ++i) {
        cursor += 0x9e3779b9U;  // golden-ratio steps, as the lanes take them
        std::uint32_t p = 0;
        REQUIRE(s.pick(0, cursor, none_down, p) == plan_store::outcome::picked);
        ++got[p];
    }
    CHECK(got[3] > 950);
    CHECK(got[3] < 1050);
    CHECK(got[7] > 1950);
    CHECK(got[7] < 2050);
    CHECK(got[9] > 950);
    // A piece of no range (volume 0) is never picked.
    publish(s, 0, {{3, 0x7fffffffU}, {4, 0x7fffffffU}, {5, 0xffffffffU}});
    for (std::uint32_t u : {0U, 0x7fffffffU, 0x80000000U, 0xffffffffU}) {
        std::uint32_t p = 0;
        REQUIRE(s.pick(0, u, none_down, p) == plan_store::outcome::picked);
        CHECK(p != 4U);
    }
}

TEST_CASE("plan_store: pick_lighter takes the less loaded of two picks half the positions apart",
          "[router][plan]") {
    plan_store s(1, 16);
    publish(s, 0, {{3, 0x7fffffffU}, {7, 0xffffffffU}});  // two halves
    std::map<std::uint32_t, std::uint64_t> load{{3, 10}, {7, 20}};
    const auto by_load = [&](std::uint32_t p) { return load[p]; };
    std::uint32_t p = 0;
    for (std::uint32_t u : {0U, 0x40000000U, 0x80000000U, 0xc0000000U}) {
        REQUIRE(s.pick_lighter(0, u, none_down, by_load, p) == plan_store::outcome::picked);
        CHECK(p == 3U);
    }
    load[3] = 30;
    REQUIRE(s.pick_lighter(0, 0, none_down, by_load, p) == plan_store::outcome::picked);
    CHECK(p == 7U);
    // A tie keeps the first pick; a key with one piece has no choice.
    load[3] = 20;
    REQUIRE(s.pick_lighter(0, 0x80000000U, none_down, by_load, p) == plan_store::outcome::picked);
    CHECK(p == 7U);
    publish(s, 0, {{5, 0xffffffffU}});
    REQUIRE(s.pick_lighter(0, 0, none_down, by_load, p) == plan_store::outcome::picked);
    CHECK(p == 5U);
    // Sending each unit to the lighter pick evens loads that started apart.
    publish(s, 0, {{3, 0x3fffffffU}, {7, 0xbfffffffU}, {9, 0xffffffffU}});
    load = {{3, 500}, {7, 0}, {9, 100}};
    std::uint32_t cursor = 0;
    for (int i = 0; i < 3000; ++i) {
        cursor += 0x9e3779b9U;
        REQUIRE(s.pick_lighter(0, cursor, none_down, by_load, p) == plan_store::outcome::picked);
        ++load[p];
    }
    const auto [lo, hi] = std::minmax({load[3], load[7], load[9]});
    CHECK(hi - lo <= 10);
}

TEST_CASE("plan_store: a down partition is skipped for the next piece that is up",
          "[router][plan]") {
    plan_store s(1, 16);
    publish(s, 0, {{1, 0x7fffffffU}, {2, 0xffffffffU}});
    std::uint32_t p = 0;
    const auto one_down = [](std::uint32_t q) { return q == 1U; };
    REQUIRE(s.pick(0, 0, one_down, p) == plan_store::outcome::picked);
    CHECK(p == 2U);
    const auto all_down = [](std::uint32_t) { return true; };
    CHECK(s.pick(0, 0, all_down, p) == plan_store::outcome::none);
}

TEST_CASE("plan_store: a slot being rewritten reads busy; appended pieces join the published plan",
          "[router][plan]") {
    plan_store s(2, 16);
    publish(s, 0, {{1, 0xffffffffU}});
    std::uint32_t p = 0;
    s.begin();  // the next plan is being written
    CHECK(s.pick(0, 0, none_down, p) == plan_store::outcome::picked);  // the published one holds
    s.write_piece(0, 6, 0xffffffffU);
    s.assign(0, 0, 1);
    CHECK(s.pick(0, 0, none_down, p) == plan_store::outcome::busy);  // its slot is mid-write
    s.assign(1, 0, 0);
    s.publish(1);
    REQUIRE(s.pick(0, 0, none_down, p) == plan_store::outcome::picked);
    CHECK(p == 6U);
    // Between plans, a slot's pieces may be appended after the published ones.
    s.append_piece(0, 8, 0xffffffffU);
    s.assign_appended(1, 1);
    REQUIRE(s.pick(1, 0, none_down, p) == plan_store::outcome::picked);
    CHECK(p == 8U);
    CHECK(s.used() == 2U);
    std::vector<std::pair<std::uint32_t, double>> shares;
    CHECK(s.pieces_of(1, [&](std::uint32_t q, double share) { shares.emplace_back(q, share); }) ==
          1U);
    REQUIRE(shares.size() == 1);
    CHECK(shares[0].first == 8U);
    CHECK(shares[0].second == Approx(1.0));
}
