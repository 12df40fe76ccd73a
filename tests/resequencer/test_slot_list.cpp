// detail::slot_list / slot_links: two lists threaded through different link fields of the same
// nodes, under random appends and removals anywhere, agree with std::list models walked from
// both ends.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/slot_list.hpp>

#include <algorithm>
#include <cstdint>
#include <list>
#include <random>
#include <vector>

namespace {

using keyroute::detail::slot_list;

struct node {
    std::uint32_t a_prev = slot_list::none;
    std::uint32_t a_next = slot_list::none;
    std::uint32_t b_prev = slot_list::none;
    std::uint32_t b_next = slot_list::none;
};
using a_links = keyroute::detail::slot_links<node, &node::a_prev, &node::a_next>;
using b_links = keyroute::detail::slot_links<node, &node::b_prev, &node::b_next>;

auto forward(const slot_list& l, const std::vector<node>& nodes, std::uint32_t node::*next)
    -> std::vector<std::uint32_t> {
    std::vector<std::uint32_t> out;
    for (auto k = l.first; k != slot_list::none; k = nodes[k].*next) out.push_back(k);
    return out;
}
auto backward(const slot_list& l, const std::vector<node>& nodes, std::uint32_t node::*prev)
    -> std::vector<std::uint32_t> {
    std::vector<std::uint32_t> out;
    for (auto k = l.last; k != slot_list::none; k = nodes[k].*prev) out.push_back(k);
    std::reverse(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("slot_list: appends and removals at the front, the back and the middle",
          "[resequencer][slot_list]") {
    std::vector<node> nodes(4);
    const auto at = [&](std::uint32_t s) -> node& { return nodes[s]; };
    slot_list l;
    CHECK(l.empty());
    for (std::uint32_t s = 0; s < 4; ++s) a_links::push_back(l, s, nodes[s], at);
    CHECK(forward(l, nodes, &node::a_next) == std::vector<std::uint32_t>{0, 1, 2, 3});
    a_links::erase(l, nodes[1], at);  // middle
    a_links::erase(l, nodes[0], at);  // front
    a_links::erase(l, nodes[3], at);  // back
    CHECK(forward(l, nodes, &node::a_next) == std::vector<std::uint32_t>{2});
    CHECK(l.first == 2);
    CHECK(l.last == 2);
    CHECK(nodes[1].a_prev == slot_list::none);
    CHECK(nodes[1].a_next == slot_list::none);
    a_links::erase(l, nodes[2], at);
    CHECK(l.empty());
    CHECK(l.last == slot_list::none);
}

TEST_CASE("slot_list: two lists through the same nodes agree with std::list models",
          "[resequencer][slot_list]") {
    constexpr std::uint32_t slots = 64;
    std::mt19937 rng(29);
    std::vector<node> nodes(slots);
    const auto at = [&](std::uint32_t s) -> node& { return nodes[s]; };
    slot_list a;
    slot_list b;
    std::list<std::uint32_t> model_a;
    std::list<std::uint32_t> model_b;
    const auto on = [](const std::list<std::uint32_t>& m, std::uint32_t s) {
        return std::find(m.begin(), m.end(), s) != m.end();
    };
    for (int step = 0; step < 20000; ++step) {
        const auto s = static_cast<std::uint32_t>(rng() % slots);
        const bool use_a = (rng() & 1U) != 0;
        auto& list = use_a ? a : b;
        auto& model = use_a ? model_a : model_b;
        if (on(model, s)) {
            if (use_a) {
                a_links::erase(list, nodes[s], at);
            } else {
                b_links::erase(list, nodes[s], at);
            }
            model.remove(s);
        } else {
            if (use_a) {
                a_links::push_back(list, s, nodes[s], at);
            } else {
                b_links::push_back(list, s, nodes[s], at);
            }
            model.push_back(s);
        }
        if (step % 97 == 0 || step == 19999) {
            const std::vector<std::uint32_t> want_a(model_a.begin(), model_a.end());
            const std::vector<std::uint32_t> want_b(model_b.begin(), model_b.end());
            REQUIRE(forward(a, nodes, &node::a_next) == want_a);
            REQUIRE(backward(a, nodes, &node::a_prev) == want_a);
            REQUIRE(forward(b, nodes, &node::b_next) == want_b);
            REQUIRE(backward(b, nodes, &node::b_prev) == want_b);
            REQUIRE(a.empty() == model_a.empty());
        }
    }
}
