// detail::slab: entries keep their address across growth, released slots are reused last
// released first before new ones are made, every slot is allocated or free exactly once, a
// slot's tag is kept apart from its entry (0 while free), and a move takes the entries and leaves
// the source empty.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/slab.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace {

struct item {
    std::uint64_t value = 0;
};
using small_slab = keyroute::detail::slab<item, 2>;  // chunks of 4: growth is exercised often

}  // namespace

TEST_CASE("slab: an entry never moves as the slab grows", "[resequencer][slab]") {
    small_slab s;
    std::vector<item*> where;
    for (std::uint32_t k = 0; k < 100; ++k) {
        const std::uint32_t slot = s.allocate();
        CHECK(slot == k);  // nothing released: new slots in order
        s[slot].value = 1000 + k;
        where.push_back(&s[slot]);
    }
    CHECK(s.made() == 100);
    CHECK(s.in_use() == 100);
    for (std::uint32_t k = 0; k < 100; ++k) {
        CHECK(&s[k] == where[k]);
        CHECK(s[k].value == 1000 + k);
    }
}

TEST_CASE("slab: released slots are reused last released first, before new ones",
          "[resequencer][slab]") {
    small_slab s;
    for (int k = 0; k < 10; ++k) (void)s.allocate();
    s.release(3);
    s.release(7);
    s.release(5);
    CHECK(s.in_use() == 7);
    CHECK(s.allocate() == 5);
    CHECK(s.allocate() == 7);
    CHECK(s.allocate() == 3);
    CHECK(s.allocate() == 10);
    CHECK(s.made() == 11);
}

TEST_CASE("slab: under random allocations and releases every slot is in use or free once",
          "[resequencer][slab]") {
    std::mt19937_64 rng(7);
    small_slab s;
    std::set<std::uint32_t> used;
    std::size_t peak = 0;
    for (int step = 0; step < 20000; ++step) {
        if (used.empty() || rng() % 3 != 0) {
            const std::uint32_t slot = s.allocate();
            REQUIRE(used.insert(slot).second);  // never handed out twice
            REQUIRE(slot < s.made());
            s[slot].value = slot;
        } else {
            auto it = used.begin();
            std::advance(it, static_cast<long>(rng() % used.size()));
            REQUIRE(s[*it].value == *it);
            s.release(*it);
            used.erase(it);
        }
        peak = std::max(peak, used.size());
        REQUIRE(s.in_use() == used.size());
    }
    // A slot is made only when none is free: as many as the peak in use.
    CHECK(s.made() == peak);
}

TEST_CASE("slab: a slot's tag is kept apart from its entry, 0 while free", "[resequencer][slab]") {
    small_slab s;
    for (std::uint32_t k = 0; k < 10; ++k) {
        const std::uint32_t slot = s.allocate();
        CHECK(s.tag(slot) == 0);
        s.set_tag(slot, 100 + slot);
    }
    for (std::uint32_t k = 0; k < 10; ++k) CHECK(s.tag(k) == 100 + k);
    s[3].value = 9;  // an entry's value is not its tag
    CHECK(s.tag(3) == 103);
    s.release(3);
    CHECK(s.tag(3) == 0);  // a free slot's tag is 0
    CHECK(s.tag(4) == 104);
    CHECK(s.allocate() == 3);
    CHECK(s.tag(3) == 0);
    small_slab moved(std::move(s));
    CHECK(moved.tag(9) == 109);
}

TEST_CASE("slab: a move takes the entries and leaves the source empty", "[resequencer][slab]") {
    small_slab a;
    for (std::uint32_t k = 0; k < 9; ++k) a[a.allocate()].value = k;
    a.release(4);
    item* four = &a[8];
    small_slab b(std::move(a));
    CHECK(a.made() == 0);  // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK(a.in_use() == 0);
    CHECK(b.made() == 9);
    CHECK(&b[8] == four);
    CHECK(b.allocate() == 4);
    small_slab c;
    (void)c.allocate();
    c = std::move(b);
    CHECK(b.made() == 0);  // NOLINT(bugprone-use-after-move)
    CHECK(c[8].value == 8);
    CHECK(c.allocate() == 9);
}
