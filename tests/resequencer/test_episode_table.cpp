// detail::episode_table: episodes found by key at stable addresses; the idle list forgets least
// recently idle first, by count or by an expiry test, and never a busy episode; a move takes the
// episodes and the idle list and leaves the source empty.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/episode_table.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace {

using keyroute::detail::episode_key;

struct episode : keyroute::detail::episode_hook<episode> {
    std::uint64_t last_time = 0;
    int payload = 0;
};
using table = keyroute::detail::episode_table<episode>;

auto key(std::uint64_t n) -> episode_key {
    return episode_key{n % 3, static_cast<std::uint16_t>(n % 5), n};
}

}  // namespace

TEST_CASE("episode_table: find_or_make makes once, finds at the same address",
          "[resequencer][episode_table]") {
    table t;
    int inits = 0;
    std::vector<episode*> where;
    for (std::uint64_t n = 0; n < 500; ++n) {
        episode& ep = t.find_or_make(key(n), [&](episode& e) {
            ++inits;
            e.payload = static_cast<int>(n);
        });
        CHECK(ep.id() == key(n));
        CHECK_FALSE(ep.idle());
        where.push_back(&ep);
    }
    CHECK(inits == 500);
    CHECK(t.size() == 500);
    for (std::uint64_t n = 0; n < 500; ++n) {
        CHECK(t.find(key(n)) == where[n]);
        episode& again = t.find_or_make(key(n), [&](episode&) { ++inits; });
        CHECK(&again == where[n]);
        CHECK(again.payload == static_cast<int>(n));
    }
    CHECK(inits == 500);
    CHECK(t.find(episode_key{1, 1, 100000}) == nullptr);
    // Keys that differ in one field only are different episodes.
    CHECK(t.find(episode_key{key(7).producer + 1, key(7).lane, 7}) == nullptr);
    CHECK(t.find(episode_key{key(7).producer, static_cast<std::uint16_t>(key(7).lane + 1), 7}) ==
          nullptr);
}

TEST_CASE("episode_table: forget_idle drops least recently idle first, never a busy one",
          "[resequencer][episode_table]") {
    std::mt19937_64 rng(11);
    table t;
    std::deque<std::uint64_t> model;           // idle episodes, least recently idle first
    std::map<std::uint64_t, bool> remembered;  // n -> idle
    std::uint64_t next = 0;
    for (int step = 0; step < 5000; ++step) {
        const auto op = rng() % 4;
        if (op == 0 || remembered.empty()) {
            const std::uint64_t n = next++;
            (void)t.find_or_make(key(n), [](episode&) {});
            remembered[n] = false;
        } else if (op == 1) {  // set idle (or move to the back)
            auto it = remembered.begin();
            std::advance(it, static_cast<long>(rng() % remembered.size()));
            t.set_idle(*t.find(key(it->first)));
            if (it->second) model.erase(std::find(model.begin(), model.end(), it->first));
            model.push_back(it->first);
            it->second = true;
        } else if (op == 2) {  // set busy
            auto it = remembered.begin();
            std::advance(it, static_cast<long>(rng() % remembered.size()));
            t.set_busy(*t.find(key(it->first)));
            if (it->second) model.erase(std::find(model.begin(), model.end(), it->first));
            it->second = false;
        } else {  // forget down to a random count
            const std::size_t keep = model.empty() ? 0 : rng() % (model.size() + 1);
            const std::size_t forgotten = t.forget_idle(keep, [](const episode&) { return false; });
            std::size_t expected = 0;
            while (model.size() > keep) {
                REQUIRE(t.find(key(model.front())) == nullptr);
                remembered.erase(model.front());
                model.pop_front();
                ++expected;
            }
            REQUIRE(forgotten == expected);
        }
        REQUIRE(t.idle_count() == model.size());
        REQUIRE(t.size() == remembered.size());
        REQUIRE((t.oldest_idle() == nullptr) == model.empty());
        if (!model.empty()) REQUIRE(t.oldest_idle()->id() == key(model.front()));
    }
    for (const auto& [n, idle] : remembered) {
        REQUIRE(t.find(key(n)) != nullptr);
        REQUIRE(t.find(key(n))->idle() == idle);
    }
}

TEST_CASE("episode_table: expiry forgets from the oldest idle and stops at the first kept",
          "[resequencer][episode_table]") {
    table t;
    for (std::uint64_t n = 0; n < 6; ++n) {
        episode& ep = t.find_or_make(key(n), [&](episode& e) { e.last_time = n; });
        t.set_idle(ep);
    }
    episode& busy = t.find_or_make(key(100), [](episode& e) { e.last_time = 0; });
    t.set_idle(*t.find(key(1)));  // idle order: 0 2 3 4 5 1
    const std::size_t forgotten =
        t.forget_idle(100, [](const episode& e) { return e.last_time <= 3; });
    // 0, 2 and 3 expire; 4 does not, so 1 (idle later) stays though it would expire.
    CHECK(forgotten == 3);
    CHECK(t.find(key(0)) == nullptr);
    CHECK(t.find(key(2)) == nullptr);
    CHECK(t.find(key(3)) == nullptr);
    CHECK(t.find(key(1)) != nullptr);
    CHECK(t.find(key(100)) == &busy);  // busy: never forgotten
    CHECK(t.idle_count() == 3);
    CHECK(t.forget_idle(0, [](const episode&) { return false; }) == 3);
    CHECK(t.size() == 1);
    CHECK(t.find(key(100)) == &busy);
}

TEST_CASE("episode_table: a move takes the episodes and the idle list, leaving the source empty",
          "[resequencer][episode_table]") {
    table a;
    for (std::uint64_t n = 0; n < 4; ++n) a.set_idle(a.find_or_make(key(n), [](episode&) {}));
    episode* first = a.find(key(0));
    table b(std::move(a));
    CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK(a.idle_count() == 0);
    CHECK(a.oldest_idle() == nullptr);
    CHECK(b.find(key(0)) == first);
    CHECK(b.idle_count() == 4);
    table c;
    c = std::move(b);
    CHECK(b.size() == 0);  // NOLINT(bugprone-use-after-move)
    CHECK(c.oldest_idle() == first);
    CHECK(c.forget_idle(1, [](const episode&) { return false; }) == 3);
    CHECK(c.find(key(3)) != nullptr);
}
