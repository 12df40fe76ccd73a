// detail::sequence_window: an ordered sequence -> value map whose keys near the base live in a
// ring and the others in a map; checked against std::map over random operations, with keys
// inside the ring, just past it, and far ahead (2^40, next to 2^64 - 1).
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/node_pool.hpp>
#include <keyroute/resequencer/sequence_window.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

using keyroute::detail::node_pool;
using keyroute::detail::sequence_window;

namespace {
auto contents(const sequence_window& w) -> std::vector<std::pair<std::uint64_t, std::uint32_t>> {
    std::vector<std::pair<std::uint64_t, std::uint32_t>> out;
    w.find_if([&](std::uint64_t s, std::uint32_t v) {
        out.emplace_back(s, v);
        return false;
    });
    return out;
}
}  // namespace

TEST_CASE("sequence_window: keys in and past the ring, rebased, match a std::map",
          "[resequencer][sequence_window]") {
    auto pool = std::make_shared<node_pool>();
    for (const std::uint64_t start : {std::uint64_t{0}, std::uint64_t{1} << 40U,
                                      std::numeric_limits<std::uint64_t>::max() - 1000}) {
        sequence_window w{sequence_window::allocator_type(pool)};
        w.rebase(start);
        std::map<std::uint64_t, std::uint32_t> model;
        std::mt19937_64 rng(start + 7);
        std::uint64_t base = start;
        for (int step = 0; step < 20000; ++step) {
            const auto op = rng() % 8;
            if (op < 4) {
                // Near the base, just past the ring, or far ahead (kept clear of 2^64 overflow).
                const std::uint64_t room = std::numeric_limits<std::uint64_t>::max() - base;
                std::uint64_t ahead =
                    rng() % (op == 3 ? std::uint64_t{1} << 41U : 3 * sequence_window::width);
                if (ahead > room) ahead = room;
                const std::uint64_t seq = base + ahead;
                if (model.count(seq) == 0) {
                    const auto v = static_cast<std::uint32_t>(rng() % 1000);
                    w.insert(seq, v);
                    model.emplace(seq, v);
                }
            } else if (op == 4 && !model.empty()) {
                const auto it = model.begin();
                w.assign(it->first, 7777);
                it->second = 7777;
            } else if (op == 5 && !model.empty()) {
                // Erase the lowest, then move the base past it (as an episode's next does).
                const std::uint64_t seq = model.begin()->first;
                w.erase(seq);
                model.erase(model.begin());
                if (seq != std::numeric_limits<std::uint64_t>::max()) {
                    base = seq + 1;
                    w.rebase(base);
                }
            } else if (op == 6) {
                // Jump the base up to the lowest key (a given-up gap), or a little when empty.
                const std::uint64_t to = model.empty() ? base + rng() % 200 : model.begin()->first;
                if (to >= base && to - base < (std::uint64_t{1} << 50U)) {
                    base = to;
                    w.rebase(base);
                }
            }
            REQUIRE(w.base() == base);
            REQUIRE(w.empty() == model.empty());
            std::uint64_t fs = 0;
            std::uint32_t fv = 0;
            REQUIRE(w.first(fs, fv) == !model.empty());
            if (!model.empty()) {
                REQUIRE(fs == model.begin()->first);
                REQUIRE(fv == model.begin()->second);
            }
            if (step % 64 == 0) {
                const std::vector<std::pair<std::uint64_t, std::uint32_t>> expected(model.begin(),
                                                                                    model.end());
                REQUIRE(contents(w) == expected);
                for (const auto& [s, v] : model) REQUIRE(w.get(s) == v);
                REQUIRE(w.get(base + 1) == (model.count(base + 1) != 0 ? model.at(base + 1)
                                                                       : sequence_window::vacant));
            }
        }
        while (!model.empty()) {
            w.erase(model.begin()->first);
            model.erase(model.begin());
        }
        CHECK(w.empty());
    }
    CHECK(pool->in_use() == 0);  // the ring went back to the pool once the window was empty
}

TEST_CASE("sequence_window: moves carry the ring and the far keys",
          "[resequencer][sequence_window]") {
    auto pool = std::make_shared<node_pool>();
    sequence_window a{sequence_window::allocator_type(pool)};
    a.insert(3, 30);
    a.insert(std::uint64_t{1} << 40U, 40);
    sequence_window b(std::move(a));
    CHECK(b.get(3) == 30);
    CHECK(b.get(std::uint64_t{1} << 40U) == 40);
    sequence_window c;
    c = std::move(b);
    CHECK(c.get(3) == 30);
    c.erase(3);
    c.rebase((std::uint64_t{1} << 40U) - 5);  // the far key comes into the ring
    CHECK(c.get(std::uint64_t{1} << 40U) == 40);
    c.erase(std::uint64_t{1} << 40U);
    CHECK(c.empty());
}
