// detail::hashed_index: finds what was inserted under colliding hashes, an erase leaves every
// other entry reachable (backward shift), and the table stays at most half full.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/hashed_index.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

using keyroute::detail::hashed_index;

namespace {
struct item {
    std::uint64_t hash;
    int id;
};
auto find(const hashed_index<item>& index, const item& x) -> item* {
    return index.find(x.hash, [&](const item& y) { return y.id == x.id; });
}
}  // namespace

TEST_CASE("hashed_index: colliding hashes, erase in any order, growth",
          "[resequencer][hashed_index]") {
    hashed_index<item> index;
    CHECK(index.find(1, [](const item&) { return true; }) == nullptr);
    std::vector<item> items;
    items.reserve(2000);
    std::mt19937_64 rng(7);
    for (int i = 0; i < 2000; ++i) {
        // A few hashes shared by many items, many distinct ones: long probe runs that wrap.
        const std::uint64_t h = i % 3 == 0 ? rng() % 5 : rng();
        items.push_back(item{h, i});
    }
    for (item& x : items) index.insert(x.hash, &x);
    CHECK(index.size() == items.size());
    CHECK(index.capacity() >= 2 * index.size());
    for (const item& x : items) REQUIRE(find(index, x) == &x);
    CHECK(find(index, item{items[3].hash, -1}) == nullptr);  // same hash, another item
    // Erase a random half; the rest must all stay reachable.
    std::vector<std::size_t> order(items.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t k = 0; k < order.size() / 2; ++k) {
        const item& x = items[order[k]];
        index.erase(x.hash, &x);
        REQUIRE(find(index, x) == nullptr);
    }
    index.erase(items[order[0]].hash, &items[order[0]]);  // not there: nothing happens
    CHECK(index.size() == items.size() / 2);
    for (std::size_t k = order.size() / 2; k < order.size(); ++k) {
        const item& x = items[order[k]];
        REQUIRE(find(index, x) == &x);
    }
    // Reinserted, all found again; a moved index takes everything and leaves the source empty.
    for (std::size_t k = 0; k < order.size() / 2; ++k) {
        index.insert(items[order[k]].hash, &items[order[k]]);
    }
    hashed_index<item> moved(std::move(index));
    CHECK(index.size() == 0);  // NOLINT(bugprone-use-after-move): what the move leaves
    CHECK(moved.size() == items.size());
    for (const item& x : items) REQUIRE(find(moved, x) == &x);
    const std::size_t capacity = moved.capacity();
    for (const item& x : items) moved.erase(x.hash, &x);
    CHECK(moved.size() == 0);
    CHECK(moved.capacity() == capacity);  // never shrinks
}
