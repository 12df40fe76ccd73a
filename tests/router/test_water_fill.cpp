// detail::water_filler: home when it fits, few partitions per key, largest keys first, plans
// that stay put, overflow shared out.
#include "keyroute_catch.hpp"

#include <keyroute/router/water_fill.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

using keyroute::detail::demand;
using keyroute::detail::piece_list;
using keyroute::detail::water_filler;

namespace {

struct placement {
    std::map<std::uint32_t, std::vector<std::pair<std::uint32_t, double>>> by_slot;
};

// Fills `keys` into `room`; previous(slot) from `before`.
auto fill(std::vector<double> room, std::vector<demand> keys, const water_filler::options& o,
          const placement& before = {}) -> placement {
    water_filler f(static_cast<std::uint32_t>(room.size()), 64, 256);
    placement out;
    f.fill(
        room.data(), keys.data(), static_cast<std::uint32_t>(keys.size()), o,
        [&](std::uint32_t slot, const auto& each) {
            const auto it = before.by_slot.find(slot);
            if (it == before.by_slot.end()) return;
            for (const auto& [p, v] : it->second) each(p);
        },
        [&](const demand& d, const piece_list& pieces) {
            for (std::uint32_t i = 0; i < pieces.size(); ++i)
                out.by_slot[d.slot].emplace_back(pieces[i].partition, pieces[i].volume);
        });
    return out;
}

auto total(const std::vector<std::pair<std::uint32_t, double>>& pieces) -> double {
    double t = 0;
    for (const auto& [p, v] : pieces) t += v;
    return t;
}

}  // namespace

TEST_CASE("water_filler: a key that fits at home stays there whole", "[router][water_fill]") {
    const auto out = fill({100, 100, 100, 100}, {{7, 2, 60, 0}}, {});
    REQUIRE(out.by_slot.at(7).size() == 1);
    CHECK(out.by_slot.at(7)[0].first == 2U);
    CHECK(out.by_slot.at(7)[0].second == Approx(60));
}

TEST_CASE("water_filler: a key too big for home takes home's room, then the largest rooms",
          "[router][water_fill]") {
    water_filler::options o;
    o.bucket = 1;
    const auto out = fill({10, 50, 90, 70, 20}, {{1, 0, 150, 0}}, o);
    const auto& pieces = out.by_slot.at(1);
    CHECK(total(pieces) == Approx(150));
    REQUIRE(pieces.size() == 3);
    CHECK(pieces[0].first == 0U);  // home first
    CHECK(pieces[0].second == Approx(10));
    std::set<std::uint32_t> others{pieces[1].first, pieces[2].first};
    CHECK(others == std::set<std::uint32_t>{2, 3});  // then the largest: 90 and 70 (40 of it)
}

TEST_CASE("water_filler: larger keys are placed first and get the larger rooms",
          "[router][water_fill]") {
    water_filler::options o;
    o.bucket = 1;
    const auto out = fill({0, 80, 80, 30, 30}, {{1, 0, 50, 1}, {2, 0, 150, 2}}, o);
    std::set<std::uint32_t> big;
    for (const auto& [p, v] : out.by_slot.at(2)) big.insert(p);
    CHECK(big == std::set<std::uint32_t>{1, 2});
    CHECK(total(out.by_slot.at(1)) == Approx(50));
}

TEST_CASE("water_filler: a key keeps its previous partitions while they have room",
          "[router][water_fill]") {
    water_filler::options o;
    o.bucket = 1;
    o.keep_empty = true;
    placement before;
    before.by_slot[1] = {{0, 0}, {4, 0}, {5, 0}};
    const auto out = fill({0, 100, 100, 100, 30, 40}, {{1, 0, 60, 0}}, o, before);
    std::set<std::uint32_t> parts;
    for (const auto& [p, v] : out.by_slot.at(1)) parts.insert(p);
    // 30 + 40 of room where it was: it stays there, though 1 to 3 have more.
    CHECK(parts == std::set<std::uint32_t>{0, 4, 5});
    CHECK(total(out.by_slot.at(1)) == Approx(60));
}

TEST_CASE("water_filler: overfill keeps a key from taking a partition for a sliver",
          "[router][water_fill]") {
    water_filler::options o;
    o.bucket = 1;
    o.overfill = 5;
    // Home holds 100 of the key's 104: the 4 left go over home, no second partition.
    const auto out = fill({100, 100, 100}, {{1, 0, 104, 0}}, o);
    REQUIRE(out.by_slot.at(1).size() == 1);
    CHECK(out.by_slot.at(1)[0].second == Approx(104));
}

TEST_CASE("water_filler: volume no room holds is shared over the key's pieces",
          "[router][water_fill]") {
    water_filler::options o;
    o.bucket = 1;
    const auto out = fill({10, 10, -5}, {{1, 0, 100, 0}}, o);
    const auto& pieces = out.by_slot.at(1);
    CHECK(total(pieces) == Approx(100));
    for (const auto& [p, v] : pieces) CHECK(p != 2U);  // no room there at all
}

TEST_CASE("water_filler: equal rooms are taken in the same order by every router",
          "[router][water_fill]") {
    water_filler::options o;
    o.bucket = 10;  // rooms of 50 to 59 count as equal
    const auto a = fill({0, 51, 55, 58, 50, 52, 57}, {{1, 0, 120, 12345}}, o);
    const auto b = fill({0, 53, 52, 51, 59, 55, 50}, {{1, 0, 120, 12345}}, o);
    std::set<std::uint32_t> pa;
    std::set<std::uint32_t> pb;
    for (const auto& [p, v] : a.by_slot.at(1)) pa.insert(p);
    for (const auto& [p, v] : b.by_slot.at(1)) pb.insert(p);
    CHECK(pa == pb);
}
