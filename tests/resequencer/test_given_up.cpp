// detail::given_up_ranges: an episode's given-up sequences, checked against a brute-force model
// (a set of sequences and a bound), including the budget of ranges and checkpoint loads.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/given_up.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <utility>
#include <vector>

using keyroute::detail::given_up_ranges;
using status = given_up_ranges::status;

namespace {

// The invariants the header states.
void check_invariants(const given_up_ranges& g) {
    const auto& r = g.ranges();
    REQUIRE(r.size() <= given_up_ranges::max_ranges);
    for (std::size_t i = 0; i < r.size(); ++i) {
        REQUIRE(r[i].first <= r[i].second);
        REQUIRE(r[i].first >= g.forgotten_below());
        if (i > 0) REQUIRE(r[i - 1].second + 1 < r[i].first);  // disjoint, not adjacent
    }
}

}  // namespace

TEST_CASE("given_up_ranges: append merges adjacent ranges, take splits them",
          "[resequencer][given_up]") {
    given_up_ranges g;
    CHECK(g.of(0) == status::taken);
    g.append(3, 5);
    g.append(6, 9);  // adjacent: one range
    REQUIRE(g.ranges().size() == 1);
    CHECK(g.ranges()[0] == std::make_pair(std::uint64_t{3}, std::uint64_t{9}));
    CHECK(g.of(2) == status::taken);
    CHECK(g.of(3) == status::given_up);
    CHECK(g.of(9) == status::given_up);
    CHECK(g.of(10) == status::taken);
    g.take(6);  // splits
    REQUIRE(g.ranges().size() == 2);
    CHECK(g.of(6) == status::taken);
    CHECK(g.of(5) == status::given_up);
    CHECK(g.of(7) == status::given_up);
    g.take(3);
    g.take(9);
    g.take(100);  // not given up: nothing changes
    REQUIRE(g.ranges().size() == 2);
    CHECK(g.ranges()[0] == std::make_pair(std::uint64_t{4}, std::uint64_t{5}));
    CHECK(g.ranges()[1] == std::make_pair(std::uint64_t{7}, std::uint64_t{8}));
    check_invariants(g);
}

TEST_CASE("given_up_ranges: past the budget the oldest are forgotten, never answered taken",
          "[resequencer][given_up]") {
    given_up_ranges g;
    for (std::uint64_t i = 0; i < given_up_ranges::max_ranges + 10; ++i) g.append(2 * i, 2 * i);
    check_invariants(g);
    REQUIRE(g.ranges().size() == given_up_ranges::max_ranges);
    CHECK(g.forgotten_below() == 2 * 9 + 1);
    CHECK(g.of(0) == status::forgotten);   // given up, then forgotten
    CHECK(g.of(17) == status::forgotten);  // delivered, then forgotten: a possible duplicate
    CHECK(g.of(19) == status::taken);
    CHECK(g.of(20) == status::given_up);
    // A split that exceeds the budget forgets the oldest too.
    given_up_ranges h;
    for (std::uint64_t i = 0; i < given_up_ranges::max_ranges; ++i) h.append(10 * i, 10 * i + 5);
    h.take(10 * 200 + 2);
    check_invariants(h);
    CHECK(h.of(0) == status::forgotten);
    CHECK(h.of(10 * 200 + 2) == status::taken);
    CHECK(h.of(10 * 200 + 3) == status::given_up);
}

TEST_CASE("given_up_ranges: assign sorts and merges a checkpoint's ranges and late singletons",
          "[resequencer][given_up]") {
    constexpr std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
    given_up_ranges g;
    g.assign({{10, 12}, {3, 4}, {5, 5}, {11, 20}, {30, 30}, {top - 1, top}, {top, top}}, 0);
    check_invariants(g);
    REQUIRE(g.ranges().size() == 4);
    CHECK(g.ranges()[0] == std::make_pair(std::uint64_t{3}, std::uint64_t{5}));
    CHECK(g.ranges()[1] == std::make_pair(std::uint64_t{10}, std::uint64_t{20}));
    CHECK(g.ranges()[3] == std::make_pair(top - 1, top));
    // A full checkpoint's bound is taken as written: with 0, nothing below its ranges was
    // forgotten (only a version-1 consumer checkpoint's decoder infers a bound).
    std::vector<given_up_ranges::range> full;
    for (std::uint64_t i = 0; i < given_up_ranges::max_ranges; ++i)
        full.emplace_back(5 + 3 * i, 5 + 3 * i);
    given_up_ranges h;
    h.assign(full, 0);
    CHECK(h.forgotten_below() == 0);
    CHECK(h.of(4) == status::taken);
    CHECK(h.of(5) == status::given_up);
    CHECK(h.of(6) == status::taken);
    given_up_ranges k;
    k.assign({{7, 9}}, 2);  // a bound given is kept
    CHECK(k.of(1) == status::forgotten);
    CHECK(k.of(2) == status::taken);
}

TEST_CASE("given_up_ranges: random appends and takes agree with a set of sequences",
          "[resequencer][given_up]") {
    std::mt19937_64 rng(20261203);
    for (int round = 0; round < 100; ++round) {
        given_up_ranges g;
        std::set<std::uint64_t> model;  // given up and not taken
        std::uint64_t next = 0;         // the episode's next expected sequence
        const int steps = 50 + static_cast<int>(rng() % 1000);
        for (int step = 0; step < steps; ++step) {
            if (rng() % 3 == 0 || next == 0) {
                const std::uint64_t skip = rng() % 3;  // delivered in between
                const std::uint64_t len = 1 + rng() % 4;
                const std::uint64_t first = next + skip;
                g.append(first, first + len - 1);
                for (std::uint64_t s = first; s < first + len; ++s) model.insert(s);
                next = first + len;
            } else {
                const std::uint64_t seq = rng() % next;
                g.take(seq);
                model.erase(seq);
            }
            check_invariants(g);
        }
        for (std::uint64_t seq = 0; seq < next; ++seq) {
            const status s = g.of(seq);
            if (seq < g.forgotten_below()) {
                REQUIRE(s == status::forgotten);
            } else {
                REQUIRE(s == (model.count(seq) != 0 ? status::given_up : status::taken));
            }
        }
    }
}
