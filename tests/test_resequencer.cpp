// The consumer-side resequencer: each ordering rule on its own, then property tests that replay
// a simulated salting producer through random partition interleavings, drops, re-reads, tight
// memory limits and crashes, and check every event against an exact reference.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using keyroute::delivery_order;
using keyroute::gap_reason;
using keyroute::origin;
using keyroute::push_result;
using keyroute::stamp;
using ms = std::chrono::milliseconds;

struct seen_delivery {
    int event;
    std::string key;
    stamp st;
    origin source;
    delivery_order order;
};

struct seen_gap {
    std::uint64_t producer;
    std::uint16_t lane;
    std::uint64_t episode;
    std::uint64_t first;
    std::uint64_t last;
    std::string key;
    gap_reason reason;
};

auto config(std::size_t max_events = 1000, ms max_delay = ms(100)) -> keyroute::resequencer_config {
    keyroute::resequencer_config c;
    c.max_events = max_events;
    c.max_delay = max_delay;
    return c;
}

// A resequencer of ints that records what it delivers and reports.
struct harness {
    std::vector<seen_delivery> out;
    std::vector<seen_gap> gaps;
    keyroute::resequencer<int> r;

    explicit harness(const keyroute::resequencer_config& c)
        : r(
              c,
              [this](keyroute::delivery<int>&& d) {
                  out.push_back({d.event, std::string(d.key), d.stamp, d.source, d.order});
              },
              [this](const keyroute::gap_report& g) {
                  gaps.push_back({g.producer, g.lane, g.episode, g.first_missing, g.last_missing,
                                  std::string(g.key), g.reason});
              }) {}
    harness(const harness&) = delete;
    auto operator=(const harness&) -> harness& = delete;

    auto unstamped(const std::string& key, std::uint32_t partition, std::int64_t offset, int event,
                   ms t = ms(0)) -> push_result {
        return r.push(key, stamp{}, event, origin{partition, offset}, t);
    }
    auto stamped(const std::string& key, stamp st, std::uint32_t partition, std::int64_t offset,
                 int event, ms t = ms(0)) -> push_result {
        return r.push(key, st, event, origin{partition, offset}, t);
    }
    [[nodiscard]] auto events() const -> std::vector<int> {
        std::vector<int> v;
        for (const auto& d : out) v.push_back(d.event);
        return v;
    }
};

auto lane_a(std::uint64_t seq, std::uint64_t episode = 1) -> stamp {
    return stamp{7, 0, episode, seq, true};
}
auto lane_b(std::uint64_t seq, std::uint64_t episode = 1) -> stamp {
    return stamp{8, 3, episode, seq, true};
}

}  // namespace

TEST_CASE("resequencer_config is validated at construction", "[ordering][resequencer]") {
    const auto sink = [](keyroute::delivery<int>&&) {};
    const auto gap = [](const keyroute::gap_report&) {};
    const auto rejects = [&](keyroute::resequencer_config c, const std::string& text) {
        CHECK_THROWS_AS(keyroute::resequencer<int>(c, sink, gap), std::invalid_argument);
        CHECK_THROWS_WITH(keyroute::resequencer<int>(c, sink, gap), keyroute_test::contains(text));
    };
    auto c = config();
    c.max_events = 0;
    rejects(c, "max_events must be >= 1, got 0");
    c = config();
    c.max_bytes = 0;
    rejects(c, "max_bytes must be >= 1, got 0");
    c = config();
    c.max_delay = ms(-5);
    rejects(c, "max_delay must be >= 0 ms, got -5 ms");
    c = config();
    c.episode_ttl = ms(-1);
    rejects(c, "episode_ttl must be >= 0 ms, got -1 ms");
    c = config();
    c.max_idle_episodes = 0;
    rejects(c, "max_idle_episodes must be >= 1, got 0");
    c = config();
    c.on_full = static_cast<keyroute::full_policy>(9);
    rejects(c, "on_full is not a full_policy value: 9");
    CHECK_THROWS_WITH(keyroute::resequencer<int>(config(), nullptr, gap),
                      keyroute_test::contains("on_delivery is empty"));
    CHECK_THROWS_WITH(keyroute::resequencer<int>(config(), sink, nullptr),
                      keyroute_test::contains("on_gap is empty"));
    CHECK_NOTHROW(keyroute::resequencer<int>(config(1, ms(0)), sink, gap));
}

TEST_CASE("rule 1: an episode's events come out in sequence order", "[ordering][resequencer]") {
    harness h(config());
    CHECK(h.stamped("k", lane_a(2), 1, 0, 2) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(3), 2, 0, 3) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(1), 3, 0, 1) == push_result::accepted);
    CHECK(h.out.empty());
    CHECK(h.r.held_events() == 3);
    CHECK(h.stamped("k", lane_a(0), 0, 0, 0) == push_result::accepted);
    CHECK(h.events() == std::vector<int>{0, 1, 2, 3});
    CHECK(h.r.held_events() == 0);
    CHECK(h.r.held_bytes() == 0);
    CHECK(h.gaps.empty());
    for (const auto& d : h.out) CHECK(d.order == delivery_order::in_order);
    CHECK(h.out[2].key == "k");
    CHECK(h.out[2].st == lane_a(2));
    CHECK(h.out[2].source.partition == 1);
    // The next sequence passes straight through.
    CHECK(h.stamped("k", lane_a(4), 5, 0, 4) == push_result::accepted);
    CHECK(h.events().back() == 4);
}

TEST_CASE("rule 1: sequences far ahead of the next one wait, come in order and are given up",
          "[ordering][resequencer]") {
    // Past the held window (detail::sequence_window::width ahead of next) sequences are kept
    // apart; they must behave as the near ones, as next reaches them or jumps over gaps.
    constexpr std::uint64_t far = std::uint64_t{1} << 40U;
    harness h(config());
    CHECK(h.stamped("k", lane_a(far + 1), 1, 0, 41) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(far), 2, 0, 40) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(200), 3, 0, 200) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(70), 4, 0, 70) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(65), 5, 0, 65) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(3), 6, 0, 3) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(far), 7, 0, -1) == push_result::duplicate);  // held far ahead
    CHECK(h.stamped("k", lane_a(70), 7, 1, -1) == push_result::duplicate);
    CHECK(h.r.held_events() == 6);
    for (int s = 0; s < 3; ++s) h.stamped("k", lane_a(static_cast<std::uint64_t>(s)), 0, s, s);
    CHECK(h.events() == std::vector<int>{0, 1, 2, 3});
    // 64 sequences on from 4 (all near): delivered as they come, the far ones still held.
    for (std::uint64_t s = 4; s < 65; ++s) {
        h.stamped("k", lane_a(s), 8, static_cast<std::int64_t>(s), static_cast<int>(s));
    }
    CHECK(h.events().back() == 65);
    CHECK(h.r.held_events() == 4);
    h.r.flush();
    std::vector<int> expected;
    for (int s = 0; s <= 65; ++s) expected.push_back(s);
    for (const int e : {70, 200, 40, 41}) expected.push_back(e);
    CHECK(h.events() == expected);
    REQUIRE(h.gaps.size() == 3);
    CHECK((h.gaps[0].first == 66 && h.gaps[0].last == 69));
    CHECK((h.gaps[1].first == 71 && h.gaps[1].last == 199));
    CHECK((h.gaps[2].first == 201 && h.gaps[2].last == far - 1));
    CHECK(h.r.held_events() == 0);
    // Given up far below, delivered far above: late and duplicate as anywhere else.
    CHECK(h.stamped("k", lane_a(far), 9, 0, -1) == push_result::duplicate);
    CHECK(h.stamped("k", lane_a(far - 7), 9, 1, 99) == push_result::accepted);
    CHECK(h.out.back().order == delivery_order::late);
    CHECK(h.stamped("k", lane_a(far + 2), 9, 2, 42) == push_result::accepted);
    CHECK(h.events().back() == 42);
    // Next jumps far over a gap given up, straight into held sequences that were past the window.
    harness g(config());
    g.stamped("k", lane_a(far + 5), 1, 0, 5);  // held far ahead
    g.stamped("k", lane_a(far + 9), 2, 0, 9);  // held far ahead
    g.stamped("k", lane_a(far + 6), 2, 1, 6);  // same episode: not behind far + 9
    g.stamped("k", lane_a(0), 0, 0, 0);
    g.r.flush();
    CHECK(g.events() == std::vector<int>{0, 5, 6, 9});
    REQUIRE(g.gaps.size() == 2);
    CHECK((g.gaps[0].first == 1 && g.gaps[0].last == far + 4));
    CHECK((g.gaps[1].first == far + 7 && g.gaps[1].last == far + 8));
    CHECK(g.stamped("k", lane_a(far + 10), 3, 0, 10) == push_result::accepted);
    CHECK(g.events().back() == 10);
}

TEST_CASE("rule 2: an unstamped event queues only behind a held event of its key and partition",
          "[ordering][resequencer]") {
    harness h(config());
    CHECK(h.stamped("k", lane_a(1), 0, 10, 1) == push_result::accepted);  // held: waits for 0
    // Same key, same partition: queues behind the held event.
    CHECK(h.unstamped("k", 0, 11, 100) == push_result::accepted);
    // Same key, other partition; other key, same partition: straight through.
    CHECK(h.unstamped("k", 1, 0, 200) == push_result::accepted);
    CHECK(h.unstamped("other", 0, 12, 300) == push_result::accepted);
    CHECK(h.events() == std::vector<int>{200, 300});
    CHECK(h.r.held_events() == 2);
    // Only the held event's gap keeps the commit point back.
    CHECK(h.r.committable_offset(0) == 10);
    CHECK(h.r.committable_offset(1) == 1);
    CHECK_FALSE(h.r.committable_offset(9).has_value());
    h.stamped("k", lane_a(0), 2, 0, 0);
    CHECK(h.events() == std::vector<int>{200, 300, 0, 1, 100});
    CHECK(h.r.committable_offset(0) == 13);
}

TEST_CASE("rule 2: a later episode of the same lane waits behind an earlier one's held event",
          "[ordering][resequencer]") {
    harness h(config());
    h.stamped("k", lane_a(0, 1), 0, 0, 10);
    h.stamped("k", lane_a(2, 1), 0, 1, 12);  // held: waits for sequence 1
    h.unstamped("k", 0, 2, 50);              // held: behind it
    h.stamped("k", lane_a(0, 2), 0, 3, 20);  // next episode, same lane: behind both
    CHECK(h.events() == std::vector<int>{10});
    h.stamped("k", lane_a(1, 1), 4, 0, 11);
    CHECK(h.events() == std::vector<int>{10, 11, 12, 50, 20});
}

TEST_CASE("rule 3: stamps of different lanes do not wait for each other",
          "[ordering][resequencer]") {
    harness h(config());
    h.stamped("k", lane_a(3), 0, 0, 103);  // held
    h.stamped("k", lane_b(0), 0, 1, 200);  // other lane, same key and partition: passes
    h.stamped("k", lane_b(2), 0, 2, 202);  // held on its own gap
    CHECK(h.events() == std::vector<int>{200});
    h.stamped("k", lane_b(1), 1, 0, 201);
    CHECK(h.events() == std::vector<int>{200, 201, 202});
    CHECK(h.r.held_events() == 1);
}

TEST_CASE("cold -> hot -> cold: one lane's events come out in routing order",
          "[ordering][resequencer]") {
    // Home is partition 0. The lane routed: u0 u1 | s0 s1 (home) s2 s3 (p1) s4 (p2) s5 (home) | u2.
    harness h(config());
    // The consumer reads p1 and p2 before home catches up.
    h.stamped("k", lane_a(2), 1, 0, 2);
    h.stamped("k", lane_a(3), 1, 1, 3);
    h.stamped("k", lane_a(4), 2, 0, 4);
    CHECK(h.out.empty());
    h.unstamped("k", 0, 0, -1);
    h.unstamped("k", 0, 1, -2);
    h.stamped("k", lane_a(0), 0, 2, 0);
    h.stamped("k", lane_a(1), 0, 3, 1);
    h.stamped("k", lane_a(5), 0, 4, 5);
    h.unstamped("k", 0, 5, -3);
    CHECK(h.events() == std::vector<int>{-1, -2, 0, 1, 2, 3, 4, 5, -3});

    // Hot -> cold with the last run still unread: the cold event waits for it.
    harness g(config());
    g.stamped("k", lane_a(0), 0, 0, 0);
    g.stamped("k", lane_a(2), 0, 1, 2);  // home again; 1 is still on p1
    g.unstamped("k", 0, 2, -3);
    CHECK(g.events() == std::vector<int>{0});
    g.stamped("k", lane_a(1), 1, 0, 1);
    CHECK(g.events() == std::vector<int>{0, 1, 2, -3});
}

TEST_CASE("duplicates are reported and never delivered twice", "[ordering][resequencer]") {
    harness h(config());
    CHECK(h.stamped("k", lane_a(0), 0, 0, 0) == push_result::accepted);
    CHECK(h.stamped("k", lane_a(2), 1, 0, 2) == push_result::accepted);  // held
    // Same stamp again: below next expected, or already held.
    CHECK(h.stamped("k", lane_a(0), 3, -1, 0) == push_result::duplicate);
    CHECK(h.stamped("k", lane_a(2), 3, -1, 2) == push_result::duplicate);
    // A re-read by offset (a rebalance): delivered, or held, before.
    CHECK(h.stamped("k", lane_a(0), 0, 0, 0) == push_result::duplicate);
    CHECK(h.stamped("k", lane_a(2), 1, 0, 2) == push_result::duplicate);
    CHECK(h.unstamped("u", 4, 0, 40) == push_result::accepted);
    CHECK(h.unstamped("u", 4, 0, 40) == push_result::duplicate);
    h.stamped("k", lane_a(1), 2, 0, 1);
    CHECK(h.events() == std::vector<int>{0, 40, 1, 2});
    CHECK(h.r.stats().duplicates == 5);
    CHECK(h.r.stats().delivered == 4);
    // Without an offset, an unstamped re-read cannot be recognised: it is delivered again.
    CHECK(h.unstamped("u", 4, -1, 40) == push_result::accepted);
}

TEST_CASE("the watermark gives up a gap after max_delay and reports it",
          "[ordering][resequencer]") {
    harness h(config(1000, ms(100)));
    h.stamped("k", lane_a(0), 0, 0, 0, ms(0));
    h.stamped("k", lane_a(3), 0, 1, 3, ms(10));  // waits for 1 and 2
    h.unstamped("k", 0, 2, 50, ms(20));          // behind it
    h.stamped("k", lane_a(5), 1, 0, 5, ms(60));  // waits for 4
    h.r.advance_watermark(ms(109));
    CHECK(h.events() == std::vector<int>{0});
    CHECK(h.gaps.empty());
    h.r.advance_watermark(ms(110));
    CHECK(h.events() == std::vector<int>{0, 3, 50});
    REQUIRE(h.gaps.size() == 1);
    CHECK(h.gaps[0].producer == 7);
    CHECK(h.gaps[0].lane == 0);
    CHECK(h.gaps[0].episode == 1);
    CHECK(h.gaps[0].first == 1);
    CHECK(h.gaps[0].last == 2);
    CHECK(h.gaps[0].key == "k");
    CHECK(h.gaps[0].reason == gap_reason::timeout);
    // A lower watermark is ignored.
    h.r.advance_watermark(ms(5));
    CHECK(h.r.watermark() == ms(110));
    h.r.advance_watermark(ms(160));
    CHECK(h.events() == std::vector<int>{0, 3, 50, 5});
    REQUIRE(h.gaps.size() == 2);
    CHECK(h.gaps[1].first == 4);
    CHECK(h.gaps[1].last == 4);
    // A given-up sequence that turns up is delivered, flagged late, and only once.
    CHECK(h.stamped("k", lane_a(2), 2, 0, 2) == push_result::accepted);
    CHECK(h.out.back().event == 2);
    CHECK(h.out.back().order == delivery_order::late);
    CHECK(h.stamped("k", lane_a(2), 3, 0, 2) == push_result::duplicate);
    CHECK(h.stamped("k", lane_a(1), 3, 1, 1) == push_result::accepted);
    CHECK(h.out.back().order == delivery_order::late);
    CHECK(h.r.stats().late == 2);
    CHECK(h.r.stats().missing == 3);
}

TEST_CASE("a forced event releases what it waits for first, even younger events",
          "[ordering][resequencer]") {
    harness h(config(1000, ms(100)));
    h.stamped("k", lane_a(2), 0, 0, 2, ms(0));   // deadline 100; waits for 0 and 1
    h.stamped("k", lane_a(1), 1, 0, 1, ms(90));  // deadline 190; waits for 0
    h.r.advance_watermark(ms(100));
    // 2 cannot go before 1, which is here: 1 goes first, and only 0 is given up.
    CHECK(h.events() == std::vector<int>{1, 2});
    REQUIRE(h.gaps.size() == 1);
    CHECK(h.gaps[0].first == 0);
    CHECK(h.gaps[0].last == 0);
}

TEST_CASE("flush releases everything, reporting the gaps", "[ordering][resequencer]") {
    harness h(config(1000, ms(1000000)));
    h.stamped("k", lane_a(4), 0, 0, 4);
    h.unstamped("k", 0, 1, 50);
    h.stamped("j", lane_b(1), 1, 0, 1);
    h.r.flush();
    CHECK(h.events() == std::vector<int>{4, 50, 1});
    REQUIRE(h.gaps.size() == 2);
    CHECK(h.gaps[0].reason == gap_reason::flush);
    CHECK(h.r.held_events() == 0);
    CHECK(h.r.committable_offset(0) == 2);
}

TEST_CASE("full buffer, release_early: the oldest held event goes with a gap report",
          "[ordering][resequencer]") {
    harness h(config(2, ms(1000000)));
    h.stamped("a", lane_a(1, 1), 0, 0, 11, ms(0));
    h.stamped("b", lane_a(1, 2), 1, 0, 21, ms(1));
    CHECK(h.r.held_events() == 2);
    CHECK(h.stamped("c", lane_a(1, 3), 2, 0, 31, ms(2)) == push_result::accepted);
    CHECK(h.r.held_events() == 2);
    CHECK(h.events() == std::vector<int>{11});
    REQUIRE(h.gaps.size() == 1);
    CHECK(h.gaps[0].key == "a");
    CHECK(h.gaps[0].reason == gap_reason::full);
    // Events that need no waiting never count against the limit.
    CHECK(h.unstamped("z", 3, 0, 99) == push_result::accepted);
    CHECK(h.events().back() == 99);
}

TEST_CASE("full buffer, refuse: the push is refused and the event left with the caller",
          "[ordering][resequencer]") {
    auto c = config(1, ms(100));
    c.on_full = keyroute::full_policy::refuse;
    std::vector<int> got;
    std::size_t gaps = 0;
    keyroute::resequencer<std::unique_ptr<int>> r(
        c, [&](keyroute::delivery<std::unique_ptr<int>>&& d) { got.push_back(*d.event); },
        [&](const keyroute::gap_report&) { ++gaps; });
    auto first = std::make_unique<int>(1);
    CHECK(r.push("k", lane_a(1), std::move(first), origin{0, 0}, ms(0)) == push_result::accepted);
    auto second = std::make_unique<int>(2);
    CHECK(r.push("j", lane_b(1), std::move(second), origin{1, 0}, ms(0)) == push_result::refused);
    REQUIRE(second != nullptr);  // not moved from
    CHECK(*second == 2);
    CHECK(r.stats().refused == 1);
    CHECK(r.committable_offset(1) == std::nullopt);  // the refused offset is not passed
    r.advance_watermark(ms(100));
    CHECK(got == std::vector<int>{1});
    CHECK(r.push("j", lane_b(1), std::move(second), origin{1, 0}, ms(100)) ==
          push_result::accepted);
    CHECK(r.held_events() == 1);
}

TEST_CASE("max_bytes counts EventSize plus the key; an oversized event is never held",
          "[ordering][resequencer]") {
    struct payload_size {
        auto operator()(const std::string& s) const noexcept -> std::size_t { return s.size(); }
    };
    auto c = config(1000, ms(1000));
    c.max_bytes = 20;
    std::vector<std::string> got;
    std::vector<keyroute::gap_report> gaps;
    keyroute::resequencer<std::string, payload_size> r(
        c, [&](keyroute::delivery<std::string>&& d) { got.push_back(d.event); },
        [&](const keyroute::gap_report& g) { gaps.push_back(g); });
    r.push("kk", lane_a(1), std::string(8, 'a'), origin{0, 0}, ms(0));  // 10 bytes
    CHECK(r.held_bytes() == 10);
    r.push("kk", lane_b(1), std::string(8, 'b'), origin{1, 0}, ms(0));  // 10 more: full
    CHECK(r.held_bytes() == 20);
    r.push("kk", stamp{9, 9, 9, 1, true}, std::string(1, 'c'), origin{2, 0}, ms(0));
    CHECK(r.held_bytes() <= 20);
    CHECK(got.size() == 1);  // the oldest (lane a) went early
    // 30 bytes can never be held: its gap is given up at once.
    r.push("kk", stamp{9, 9, 10, 3, true}, std::string(28, 'd'), origin{3, 0}, ms(0));
    CHECK(got.back() == std::string(28, 'd'));
    CHECK(gaps.back().first_missing == 0);
    CHECK(gaps.back().last_missing == 2);
    CHECK(gaps.back().reason == gap_reason::full);
    CHECK(r.held_bytes() <= 20);
    CHECK(r.held_events() == 2);  // the events held before it stay held
}

TEST_CASE("idle episodes are forgotten after episode_ttl or past max_idle_episodes",
          "[ordering][resequencer]") {
    auto c = config(1000, ms(10));
    c.episode_ttl = ms(1000);
    c.max_idle_episodes = 3;
    harness h(c);
    h.stamped("k", lane_a(0, 1), 0, -1, 0, ms(0));
    h.stamped("k", lane_a(1, 1), 0, -1, 1, ms(0));
    CHECK(h.r.remembered_episodes() == 1);
    h.r.advance_watermark(ms(999));
    CHECK(h.stamped("k", lane_a(1, 1), 0, -1, 1, ms(999)) == push_result::duplicate);
    h.r.advance_watermark(ms(2000));
    CHECK(h.r.remembered_episodes() == 0);
    CHECK(h.r.stats().forgotten_episodes == 1);
    // Forgotten: a re-read without an offset is a new episode again (documented), delivered.
    CHECK(h.stamped("k", lane_a(0, 1), 0, -1, 0, ms(2000)) == push_result::accepted);
    CHECK(h.out.size() == 3);
    // The count limit: a fourth idle episode pushes out the least recently used.
    for (std::uint64_t e = 2; e <= 4; ++e) h.stamped("k", lane_a(0, e), 0, -1, 0, ms(2000));
    CHECK(h.r.remembered_episodes() == 3);
    CHECK(h.stamped("k", lane_a(0, 4), 0, -1, 0, ms(2000)) == push_result::duplicate);
    // An episode holding events is never forgotten.
    h.stamped("k", lane_b(5, 1), 1, -1, 5, ms(2000));
    for (std::uint64_t e = 10; e <= 20; ++e) h.stamped("k", lane_a(0, e), 0, -1, 0, ms(2000));
    CHECK(h.r.held_events() == 1);
    CHECK(h.stamped("k", lane_b(5, 1), 1, -1, 5, ms(2000)) == push_result::duplicate);
}

TEST_CASE("sinks must not call back into the resequencer", "[ordering][resequencer]") {
    keyroute::resequencer<int>* self = nullptr;
    bool threw = false;
    keyroute::resequencer<int> r(
        config(),
        [&](keyroute::delivery<int>&&) {
            try {
                self->advance_watermark(ms(1));
            } catch (const std::logic_error&) {
                threw = true;
            }
        },
        [](const keyroute::gap_report&) {});
    self = &r;
    r.push("k", stamp{}, 1, origin{}, ms(0));
    CHECK(threw);
    CHECK_NOTHROW(r.advance_watermark(ms(2)));  // usable afterwards
}

TEST_CASE("moves are noexcept unless EventSize's are, and carry the held events",
          "[ordering][resequencer]") {
    struct throwing_size {
        throwing_size() = default;
        throwing_size(const throwing_size&) = default;
        throwing_size(throwing_size&&) noexcept(false) {}
        auto operator=(const throwing_size&) -> throwing_size& = default;
        auto operator=(throwing_size&&) noexcept(false) -> throwing_size& { return *this; }
        ~throwing_size() = default;
        auto operator()(int) const noexcept -> std::size_t { return 1; }
    };
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<keyroute::resequencer<int>>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<keyroute::resequencer<int>>);
    STATIC_REQUIRE_FALSE(
        std::is_nothrow_move_constructible_v<keyroute::resequencer<int, throwing_size>>);
    STATIC_REQUIRE_FALSE(
        std::is_nothrow_move_assignable_v<keyroute::resequencer<int, throwing_size>>);

    std::vector<int> got;
    const auto sink = [&](keyroute::delivery<int>&& d) { got.push_back(d.event); };
    const auto gap = [](const keyroute::gap_report&) {};
    keyroute::resequencer<int> a(config(), sink, gap);
    a.push("k", lane_a(1), 1, origin{1, 0}, ms(0));
    keyroute::resequencer<int> b(std::move(a));
    CHECK(b.held_events() == 1);
    keyroute::resequencer<int> c(config(), sink, gap);
    c = std::move(b);
    c.push("k", lane_a(0), 0, origin{0, 0}, ms(0));
    CHECK(got == std::vector<int>{0, 1});
    CHECK(c.held_events() == 0);

    // The moved-from ones hold nothing, and calling them leaves the new one alone: a
    // moved-from resequencer that kept its idle list, pointing into the episodes the move took,
    // would unlink the new one's when it forgets them (a heap-use-after-free under ASan).
    auto short_ttl = config();
    short_ttl.episode_ttl = ms(10);
    keyroute::resequencer<int> d(short_ttl, sink, gap);
    d.push("j", lane_a(0), 2, origin{2, 0}, ms(0));  // delivered; its episode goes idle
    REQUIRE(d.remembered_episodes() == 1);
    keyroute::resequencer<int> e(std::move(d));
    CHECK(d.held_events() == 0);  // NOLINT(bugprone-use-after-move): what this test is about
    CHECK(d.remembered_episodes() == 0);  // NOLINT(bugprone-use-after-move)
    d.advance_watermark(ms(1000));        // NOLINT(bugprone-use-after-move)
    CHECK(e.remembered_episodes() == 1);
    e.advance_watermark(ms(1000));  // forgets the idle episode: past its ttl
    CHECK(e.remembered_episodes() == 0);
    CHECK(e.stats().forgotten_episodes == 1U);
    CHECK(got == std::vector<int>{0, 1, 2});
    b.advance_watermark(ms(1000));  // NOLINT(bugprone-use-after-move)
    a.advance_watermark(ms(1000));  // NOLINT(bugprone-use-after-move)
    CHECK(c.held_events() == 0);
}

TEST_CASE("a waiting cycle from a broken producer contract is broken, nothing lost",
          "[ordering][resequencer]") {
    // Unstamped events of one key on two partitions (the partition count changed under the
    // producer) let two lanes wait for each other: B6 <- B5 <- U2 <- A5 <- A4 <- U1 <- B6.
    harness h(config(1000, ms(100)));
    for (std::uint64_t s = 0; s < 4; ++s) h.stamped("k", lane_a(s), 2, -1, static_cast<int>(s));
    for (std::uint64_t s = 0; s < 5; ++s)
        h.stamped("k", lane_b(s), 3, -1, 100 + static_cast<int>(s));
    const std::size_t before = h.out.size();
    h.stamped("k", lane_b(6), 0, 0, 106);
    h.unstamped("k", 0, 1, -1);
    h.stamped("k", lane_a(4), 0, 2, 4);
    h.stamped("k", lane_a(5), 1, 0, 5);
    h.unstamped("k", 1, 1, -2);
    h.stamped("k", lane_b(5), 1, 2, 105);
    CHECK(h.out.size() == before);
    CHECK(h.r.held_events() == 6);
    h.r.advance_watermark(ms(100));
    CHECK(h.r.held_events() == 0);
    CHECK(h.out.size() == before + 6);
    CHECK(h.gaps.empty());
    CHECK(h.r.stats().out_of_order == 1);
    // Rule 1 still holds for both lanes.
    std::vector<int> a;
    std::vector<int> b;
    for (const auto& d : h.out) {
        if (d.st.producer == 7) a.push_back(d.event);
        if (d.st.producer == 8) b.push_back(d.event);
    }
    CHECK(std::is_sorted(a.begin(), a.end()));
    CHECK(std::is_sorted(b.begin(), b.end()));
}

TEST_CASE("a late event released to break a waiting cycle is out_of_order, not late",
          "[ordering][resequencer]") {
    // Lane b, episode 2: sequence 0 is given up, so its arrival later is late.
    harness h(config(1000, ms(100)));
    h.stamped("k", lane_b(1, 2), 1, 0, 201);
    h.r.advance_watermark(ms(100));
    REQUIRE(h.gaps.size() == 1);
    // Partition 0, in this order: b1 of episode 1 (waits for b0), the late b0 of episode 2
    // (waits behind b1: same lane, other episode), b0 of episode 1 (waits behind the late one,
    // same reason). A cycle: the producer put b1 before b0 on one partition.
    h.stamped("k", lane_b(1), 0, 0, 101, ms(200));
    h.stamped("k", lane_b(0, 2), 0, 1, 200, ms(200));
    h.stamped("k", lane_b(0), 0, 2, 100, ms(200));
    CHECK(h.r.held_events() == 3);
    // The oldest deadline (b1) is forced: its chain b1 -> b0 -> late b0 -> b1 ends on the late one.
    h.r.advance_watermark(ms(300));
    CHECK(h.r.held_events() == 0);
    REQUIRE(h.out.size() == 4);
    CHECK(h.out[1].event == 200);
    CHECK(h.out[1].order == delivery_order::out_of_order);
    CHECK(h.out[2].event == 100);
    CHECK(h.out[2].order == delivery_order::in_order);
    CHECK(h.out[3].event == 101);
    CHECK(h.out[3].order == delivery_order::in_order);
    CHECK(h.r.stats().out_of_order == 1);
    CHECK(h.r.stats().late == 0);
    CHECK(h.gaps.size() == 1);
}

TEST_CASE("a pushed event that closes a waiting cycle on a full buffer goes out_of_order, no gap",
          "[ordering][resequencer]") {
    // Partition 0, in this order: a1 (waits for a0), an unstamped event (waits behind a1), then
    // a0 written late (a retry), which waits behind the unstamped one: a cycle through the event
    // being pushed. The buffer is full, so something must go now; giving up a0 would report a
    // gap for an event that is delivered the moment after.
    keyroute::resequencer_config c = config(2, ms(100));
    c.on_full = keyroute::full_policy::release_early;
    harness h(c);
    CHECK(h.stamped("k", lane_a(1), 0, 0, 1) == push_result::accepted);
    CHECK(h.unstamped("k", 0, 1, -1) == push_result::accepted);
    CHECK(h.r.held_events() == 2);
    CHECK(h.stamped("k", lane_a(0), 0, 2, 0) == push_result::accepted);
    CHECK(h.gaps.empty());
    CHECK(h.r.held_events() == 0);
    REQUIRE(h.out.size() == 3);
    CHECK(h.out[0].event == 0);
    CHECK(h.out[0].order == delivery_order::out_of_order);
    CHECK(h.out[1].event == 1);
    CHECK(h.out[1].order == delivery_order::in_order);
    CHECK(h.out[2].event == -1);
    CHECK(h.out[2].order == delivery_order::in_order);
    CHECK(h.r.stats().out_of_order == 1);
    CHECK(h.r.stats().late == 0);
}

TEST_CASE("a partition whose old event stays held keeps its commit there as others pass",
          "[ordering][resequencer]") {
    // Offset 0 of partition 0 waits (sequence 1 of an episode whose 0 never comes); later events
    // of partition 0 are held, then released by partition 1. The commit stays at 0 (a
    // partition's held offsets are linked through the held events themselves: a released one
    // leaves nothing behind).
    harness h(config(1000, ms(3600 * 1000)));
    CHECK(h.stamped("k", lane_a(1), 0, 0, -1) == push_result::accepted);
    for (std::uint64_t i = 1; i <= 2000; ++i) {
        const auto offset = static_cast<std::int64_t>(i);
        CHECK(h.r.push("k", stamp{9, 0, i, 1, true}, static_cast<int>(i), origin{0, offset},
                       ms(0)) == push_result::accepted);
        CHECK(h.r.push("k", stamp{9, 0, i, 0, true}, -static_cast<int>(i), origin{1, offset},
                       ms(0)) == push_result::accepted);
    }
    CHECK(h.r.held_events() == 1);
    CHECK(h.r.committable_offset(0) == 0);
    CHECK(h.r.committable_offset(1) == 2001);
    CHECK(h.r.checkpoint().partitions.size() == 2);
}

TEST_CASE("restore keeps the most recently used idle episodes when it must forget some",
          "[ordering][resequencer]") {
    // checkpoint() lists episodes in hash order; restore() orders the idle ones by their last
    // time, so the count limit forgets the least recently used first, not the first in the
    // checkpoint's order.
    keyroute::resequencer_checkpoint cp;
    for (const auto& [episode, last] : {std::pair{1, 30}, std::pair{2, 10}, std::pair{3, 20}}) {
        keyroute::resequencer_checkpoint::episode_state e;
        e.producer = 7;  // lane_a's
        e.episode = static_cast<std::uint64_t>(episode);
        e.key = "k";
        e.next_sequence = 5;
        e.last_time = ms(last);
        cp.episodes.push_back(e);
    }
    auto c = config(1000, ms(100));
    c.max_idle_episodes = 1;
    harness h(c);
    h.r.restore(cp);
    CHECK(h.r.remembered_episodes() == 1);
    // Episode 1 (the latest) is remembered: its sequence 3 is a duplicate, not a new episode.
    CHECK(h.stamped("k", lane_a(3, 1), 0, 0, 3) == push_result::duplicate);
    CHECK(h.stamped("k", lane_a(3, 2), 1, 0, 4) == push_result::accepted);  // forgotten: new
}

TEST_CASE("restore refuses a checkpoint that checkpoint() could not have written",
          "[ordering][resequencer][bad-input]") {
    using cp_t = keyroute::resequencer_checkpoint;
    const auto episode = [](std::uint64_t next, std::vector<std::uint64_t> ahead) {
        cp_t::episode_state e;
        e.producer = 7;  // lane_a's episode 1
        e.lane = 0;
        e.episode = 1;
        e.key = "k";
        e.next_sequence = next;
        e.delivered_ahead = std::move(ahead);
        return e;
    };
    const auto partition = [](std::uint32_t id, std::int64_t next, std::vector<std::int64_t> held) {
        cp_t::partition_state p;
        p.partition = id;
        p.next_offset = next;
        p.held_offsets = std::move(held);
        return p;
    };
    const auto refused = [](const cp_t& cp, const std::string& why) {
        harness h(config(1000, ms(100)));
        CHECK_THROWS_WITH(h.r.restore(cp), keyroute_test::contains("corrupt checkpoint: "));
        CHECK_THROWS_WITH(h.r.restore(cp), keyroute_test::contains(why));
        CHECK(h.r.remembered_episodes() == 0);  // nothing restored
        CHECK_FALSE(h.r.committable_offset(0).has_value());
    };
    cp_t cp;
    SECTION("a sequence delivered ahead at or below next_sequence") {
        // Taken, it would leave sequence 6 held behind 5, a later release would erase the
        // stale entry instead of its own, and a forced event would read a freed slot.
        cp.episodes.push_back(episode(5, {2}));
        refused(cp, "has sequence 2 delivered ahead of next_sequence 5");
        cp.episodes[0].delivered_ahead = {5};
        refused(cp, "has sequence 5 delivered ahead of next_sequence 5");
    }
    SECTION("a held offset outside [0, next_offset)") {
        cp.partitions.push_back(partition(0, 10, {3, 10}));
        refused(cp, "partition 0 holds offset 10, not in [0, next_offset 10)");
        cp.partitions[0].held_offsets = {-1};
        refused(cp, "partition 0 holds offset -1");
        cp.partitions[0] = partition(0, -5, {});
        refused(cp, "partition 0 has next_offset -5");
    }
    SECTION("a partition or an episode listed twice") {
        cp.partitions = {partition(0, 10, {}), partition(0, 12, {})};
        refused(cp, "partition 0 is listed twice");
        cp.partitions.clear();
        cp.episodes = {episode(5, {}), episode(6, {})};
        refused(cp, "episode (producer 7, lane 0, episode 1) is listed twice");
    }
    SECTION("a given-up range whose first sequence is above its last") {
        cp.episodes.push_back(episode(5, {}));
        cp.episodes[0].given_up = {{3, 2}};
        refused(cp, "gave up the range [3, 2]");
    }
    SECTION("the limits checkpoint() writes are taken") {
        // A finished episode: 2^64-1 both as next_sequence and delivered ahead.
        const std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
        cp.episodes.push_back(episode(last, {last}));
        cp.partitions.push_back(partition(0, 10, {0, 9}));
        harness h(config(1000, ms(100)));
        h.r.restore(cp);
        CHECK(h.r.remembered_episodes() == 1);
        CHECK(h.r.committable_offset(0) == 0);
    }
}

TEST_CASE("checkpoint and restore carry the state across a restart", "[ordering][resequencer]") {
    harness a(config());
    a.stamped("k", lane_a(0), 0, 0, 0);
    a.stamped("k", lane_a(2), 1, 0, 2);  // held
    a.unstamped("k", 1, 1, 50);          // held behind it
    a.unstamped("j", 1, 2, 60);          // delivered past the held ones
    const auto cp = a.r.checkpoint();
    CHECK(a.r.committable_offset(1) == 0);
    harness b(config());
    b.r.restore(cp);
    CHECK(b.r.committable_offset(1) == 0);
    CHECK(b.r.committable_offset(0) == 1);
    // The re-read from the committable offsets: only what was not delivered comes out.
    CHECK(b.stamped("k", lane_a(2), 1, 0, 2) == push_result::accepted);
    CHECK(b.unstamped("k", 1, 1, 50) == push_result::accepted);
    CHECK(b.unstamped("j", 1, 2, 60) == push_result::duplicate);
    CHECK(b.stamped("k", lane_a(1), 0, 1, 1) == push_result::accepted);
    CHECK(b.events() == std::vector<int>{1, 2, 50});
    CHECK(b.r.committable_offset(1) == 3);
    CHECK_THROWS_AS(b.r.restore(cp), std::invalid_argument);
}

TEST_CASE("a late event still held at the checkpoint is late again after restore",
          "[ordering][resequencer]") {
    harness a(config(1000, ms(10)));
    a.stamped("k", lane_a(0, 1), 0, 0, 10, ms(0));
    a.stamped("k", lane_a(2, 1), 1, 0, 12, ms(0));
    a.r.advance_watermark(ms(10));  // gives up episode 1's sequence 1
    REQUIRE(a.gaps.size() == 1);
    a.stamped("k", lane_a(1, 2), 0, 1, 21, ms(20));  // episode 2 waits for its sequence 0
    // Episode 1's sequence 1 turns up behind it (same lane, later episode ahead): held, late.
    CHECK(a.stamped("k", lane_a(1, 1), 0, 2, 11, ms(20)) == push_result::accepted);
    CHECK(a.r.held_events() == 2);
    const auto cp = a.r.checkpoint();
    harness b(config(1000, ms(10)));
    b.r.restore(cp);
    CHECK(b.r.committable_offset(0) == 1);
    CHECK(b.stamped("k", lane_a(1, 2), 0, 1, 21, ms(30)) == push_result::accepted);
    CHECK(b.stamped("k", lane_a(1, 1), 0, 2, 11, ms(30)) == push_result::accepted);
    CHECK(b.stamped("k", lane_a(0, 2), 2, 0, 20, ms(30)) == push_result::accepted);
    CHECK(b.events() == std::vector<int>{20, 21, 11});
    CHECK(b.out.back().order == delivery_order::late);
    CHECK(b.gaps.empty());
}

namespace {

// A resequencer of ints whose delivery sink throws when given `throw_on`, and whose gap sink
// throws while `throw_gap` is set (once each).
struct throwing_harness {
    std::vector<int> got;
    std::vector<delivery_order> orders;
    std::vector<seen_gap> gaps;
    int throw_on = -1;
    bool throw_gap = false;
    keyroute::resequencer<int> r;

    explicit throwing_harness(const keyroute::resequencer_config& c)
        : r(
              c,
              [this](keyroute::delivery<int>&& d) {
                  if (d.event == throw_on) {
                      throw_on = -1;
                      throw std::runtime_error("delivery sink");
                  }
                  got.push_back(d.event);
                  orders.push_back(d.order);
              },
              [this](const keyroute::gap_report& g) {
                  if (throw_gap) {
                      throw_gap = false;
                      throw std::runtime_error("gap sink");
                  }
                  gaps.push_back({g.producer, g.lane, g.episode, g.first_missing, g.last_missing,
                                  std::string(g.key), g.reason});
              }) {}
    throwing_harness(const throwing_harness&) = delete;
    auto operator=(const throwing_harness&) -> throwing_harness& = delete;
};

}  // namespace

TEST_CASE("a throwing sink loses only its event: what was ready goes at the next call",
          "[ordering][resequencer]") {
    SECTION("the sink throws on an event that a due event waits for") {
        throwing_harness h(config(1000, ms(100)));
        h.r.push("k", lane_a(2), 2, origin{1, 0}, ms(0));   // waits for 0 and 1
        h.r.push("k", lane_a(1), 1, origin{2, 0}, ms(50));  // waits for 0
        h.throw_on = 1;
        // Sequence 2 is due: 0 is given up, 1 goes first, and the sink throws on it.
        CHECK_THROWS_AS(h.r.advance_watermark(ms(100)), std::runtime_error);
        CHECK(h.r.held_events() == 1);
        // Sequence 2 keeps its deadline: flush() must not leave it held for good.
        h.r.flush();
        CHECK(h.r.held_events() == 0);
        CHECK(h.got == std::vector<int>{2});
    }
    SECTION("the gap sink throws") {
        throwing_harness h(config(1000, ms(100)));
        h.r.push("k", lane_a(2), 2, origin{1, 0}, ms(0));
        h.throw_gap = true;
        CHECK_THROWS_AS(h.r.advance_watermark(ms(100)), std::runtime_error);
        // Sequences 0 and 1 are given up all the same; sequence 2 goes at the next call.
        h.r.push("other", stamp{}, 99, origin{5, 0}, ms(100));
        CHECK(h.got == std::vector<int>{2, 99});
        CHECK(h.r.held_events() == 0);
        // A given-up sequence that turns up is late, not in order: it was reported.
        CHECK(h.r.push("k", lane_a(0), 0, origin{3, 0}, ms(100)) == push_result::accepted);
        CHECK(h.got.back() == 0);
        CHECK(h.orders.back() == delivery_order::late);
    }
    SECTION("the gap sink throws where the next sequence was delivered ahead") {
        throwing_harness h(config(1000, ms(10)));
        keyroute::resequencer_checkpoint cp;  // lane a's 1 was delivered ahead of its 0
        keyroute::resequencer_checkpoint::episode_state ep;
        ep.producer = 7;
        ep.episode = 1;
        ep.key = "k";
        ep.delivered_ahead = {1};
        cp.episodes.push_back(ep);
        h.r.restore(cp);
        h.r.push("k", lane_a(2), 2, origin{0, 0}, ms(0));
        h.throw_gap = true;
        CHECK_THROWS_AS(h.r.advance_watermark(ms(10)), std::runtime_error);
        h.r.push("other", stamp{}, 99, origin{5, 0}, ms(10));
        CHECK(h.got == std::vector<int>{2, 99});  // 2 was ready: 0 given up, 1 delivered
    }
    SECTION("the gap sink throws while an event too big to hold waits for its gaps") {
        auto c = config(1000, ms(100));
        c.max_bytes = 1;  // every event is too big to hold
        throwing_harness h(c);
        h.throw_gap = true;
        CHECK_THROWS_AS(h.r.push("k", lane_a(2), 2, origin{1, 0}, ms(0)), std::runtime_error);
        CHECK(h.r.stats().pushed == 0);  // not taken: the caller still has it
        CHECK(h.r.push("k", lane_a(2), 2, origin{1, 0}, ms(0)) == push_result::accepted);
        CHECK(h.got == std::vector<int>{2});
    }
    SECTION("the sink throws half-way through a fifo's ready events") {
        throwing_harness h(config(1000, ms(1000)));
        for (int seq = 1; seq <= 3; ++seq)
            h.r.push("k", lane_a(static_cast<std::uint64_t>(seq)), seq, origin{1, seq}, ms(0));
        CHECK(h.r.held_events() == 3);
        h.throw_on = 1;
        CHECK_THROWS_AS(h.r.push("k", lane_a(0), 0, origin{1, 4}, ms(0)), std::runtime_error);
        CHECK(h.got == std::vector<int>{0});
        CHECK(h.r.held_events() == 2);
        // 2 and 3 were ready: they go at the next call, before its own event, not at their
        // deadline.
        h.r.push("other", stamp{}, 99, origin{5, 0}, ms(0));
        CHECK(h.got == std::vector<int>{0, 2, 3, 99});
        CHECK(h.r.held_events() == 0);
    }
}

TEST_CASE("an event whose copy throws is not taken", "[ordering][resequencer]") {
    struct fragile {
        int value = 0;
        bool* fail = nullptr;
        fragile(int v, bool* f) : value(v), fail(f) {}
        fragile(const fragile& o) : value(o.value), fail(o.fail) {
            if (*fail) throw std::runtime_error("copy");
        }
        fragile(fragile&&) noexcept = default;
        auto operator=(const fragile&) -> fragile& = default;
        auto operator=(fragile&&) noexcept -> fragile& = default;
        ~fragile() = default;
    };
    bool fail = false;
    std::vector<int> got;
    keyroute::resequencer<fragile> r(
        config(), [&](keyroute::delivery<fragile>&& d) { got.push_back(d.event.value); },
        [](const keyroute::gap_report&) {});
    const fragile e0(0, &fail);
    const fragile e2(2, &fail);
    fail = true;
    CHECK_THROWS_AS(r.push("k", lane_a(0), e0, origin{0, 0}, ms(0)), std::runtime_error);
    CHECK_THROWS_AS(r.push("k", lane_a(2), e2, origin{0, 0}, ms(0)), std::runtime_error);
    CHECK(r.stats().pushed == 0);
    CHECK(r.held_events() == 0);
    CHECK_FALSE(r.committable_offset(0).has_value());
    fail = false;  // the same events again: taken as if the first tries had not happened
    CHECK(r.push("k", lane_a(0), e0, origin{0, 0}, ms(0)) == push_result::accepted);
    CHECK(got == std::vector<int>{0});
}

namespace {

// An event whose moves succeed until `*moves_left` reaches 0, and then throw once (-1: never).
struct countdown {
    int value = 0;
    int* moves_left = nullptr;
    countdown(int v, int* m) : value(v), moves_left(m) {}
    countdown(const countdown&) = default;
    countdown(countdown&& o) noexcept(false) : value(o.value), moves_left(o.moves_left) {
        if (*moves_left >= 0 && (*moves_left)-- == 0) throw std::runtime_error("move");
    }
    auto operator=(const countdown&) -> countdown& = delete;
    auto operator=(countdown&&) -> countdown& = delete;
    ~countdown() = default;
};

}  // namespace

TEST_CASE("a held event whose move throws stays held", "[ordering][resequencer]") {
    int moves_left = -1;
    std::vector<int> got;
    keyroute::resequencer<countdown> r(
        config(1000, ms(10)),
        [&](keyroute::delivery<countdown>&& d) { got.push_back(d.event.value); },
        [](const keyroute::gap_report&) {});
    r.push("k", lane_a(1), countdown(1, &moves_left), origin{0, 0}, ms(0));  // held: waits for 0
    moves_left = 0;                                                          // its next move throws
    CHECK_THROWS_AS(r.advance_watermark(ms(10)), std::runtime_error);
    CHECK(r.held_events() == 1);  // still counted: it is pending, and counting it out hangs
    r.flush();
    CHECK(got == std::vector<int>{1});
    CHECK(r.held_events() == 0);
    CHECK(r.push("j", stamp{}, countdown(2, &moves_left), origin{1, 0}, ms(20)) ==
          push_result::accepted);
    CHECK(got == std::vector<int>{1, 2});
}

TEST_CASE("an event is moved once on its way out: a throwing move loses nothing",
          "[ordering][resequencer]") {
    // An event is moved once on its way to the sink: moved twice (out of its slot, then into the
    // delivery, after the bookkeeping), a throw at the second move would lose it, neither held
    // nor delivered.
    int moves_left = -1;  // -1: never throw
    std::vector<int> got;
    keyroute::resequencer<countdown> r(
        config(1000, ms(10)),
        [&](keyroute::delivery<countdown>&& d) { got.push_back(d.event.value); },
        [](const keyroute::gap_report&) {});
    SECTION("a held event released by the watermark") {
        r.push("k", lane_a(1), countdown(1, &moves_left), origin{0, 0}, ms(0));  // waits for 0
        REQUIRE(r.held_events() == 1);
        for (int allowed = 0; allowed < 3; ++allowed) {
            CAPTURE(allowed);
            moves_left = allowed;  // the first `allowed` moves succeed
            try {
                r.advance_watermark(ms(10));
            } catch (const std::runtime_error&) {
                CHECK(r.held_events() == 1);  // not taken out: still held, its deadline kept
                CHECK(got.empty());
                continue;
            }
            break;
        }
        moves_left = -1;
        r.flush();
        CHECK(got == std::vector<int>{1});
        CHECK(r.held_events() == 0);
    }
    SECTION("an event delivered as it is pushed") {
        for (int allowed = 0; allowed < 3; ++allowed) {
            CAPTURE(allowed);
            moves_left = allowed;
            const countdown e(0, &moves_left);
            push_result result = push_result::refused;
            try {
                result = r.push("k", lane_a(0), countdown(e), origin{0, 0}, ms(0));
            } catch (const std::runtime_error&) {
                CHECK(r.stats().pushed == 0U);  // not taken: the same event may come again
                CHECK(got.empty());
                continue;
            }
            CHECK(result == push_result::accepted);
            break;
        }
        moves_left = -1;
        CHECK(got == std::vector<int>{0});
        CHECK(r.push("k", lane_a(0), countdown(0, &moves_left), origin{0, 0}, ms(0)) ==
              push_result::duplicate);
    }
}

TEST_CASE("an oversized event goes at once after what it waits for, and nothing else",
          "[ordering][resequencer]") {
    struct payload_size {
        auto operator()(const std::string& s) const noexcept -> std::size_t { return s.size(); }
    };
    for (const auto policy :
         {keyroute::full_policy::release_early, keyroute::full_policy::refuse}) {
        CAPTURE(static_cast<int>(policy));
        auto c = config(1000, ms(1000));
        c.max_bytes = 100;
        c.on_full = policy;
        std::vector<std::string> got;
        std::vector<keyroute::gap_report> gaps;
        keyroute::resequencer<std::string, payload_size> r(
            c, [&](keyroute::delivery<std::string>&& d) { got.push_back(d.event); },
            [&](const keyroute::gap_report& g) { gaps.push_back(g); });
        // Unrelated held events (other keys), one of another lane ahead of the big event in
        // its key and partition (rule 3: not waited for), and two of its own episode's.
        r.push("x", lane_b(1), "x1", origin{0, 0}, ms(0));
        r.push("y", stamp{9, 9, 9, 5, true}, "y5", origin{1, 0}, ms(0));
        r.push("k", lane_a(1), "k1", origin{2, 0}, ms(0));
        r.push("k", lane_b(2), "kb2", origin{3, 0}, ms(0));
        r.push("k", lane_a(3), "k3", origin{3, 1}, ms(0));
        REQUIRE(r.held_events() == 5);
        const std::string big(150, 'b');
        // Sequence 4 of lane a: its sequences 1 and 3 first, 0 and 2 given up.
        CHECK(r.push("k", lane_a(4), big, origin{3, 2}, ms(0)) == push_result::accepted);
        CHECK(got == std::vector<std::string>{"k1", "k3", big});
        // x1, y5 and kb2 stay: none is released early for the big event, not even kb2, the
        // head of its fifo, and the big event is not refused.
        CHECK(r.held_events() == 3);
        for (const auto& g : gaps) CHECK(g.lane == 0);  // only lane a's sequences 0 and 2
    }
}

TEST_CASE("a re-read offset that is a duplicate by its stamp does not hold back the commit",
          "[ordering][resequencer]") {
    harness a(config());
    a.stamped("a", lane_a(0), 0, 0, 0);
    a.stamped("a", lane_a(2), 1, 0, 2);  // held at the checkpoint
    harness b(config());
    b.r.restore(a.r.checkpoint());
    CHECK(b.r.committable_offset(1) == 0);
    // A broken producer contract: the same stamp on another partition, read first.
    CHECK(b.stamped("a", lane_a(2), 2, 0, 2) == push_result::accepted);
    CHECK(b.stamped("a", lane_a(2), 1, 0, 2) == push_result::duplicate);  // the re-read
    // The re-read happened: partition 1's commit moves past it, off 0.
    CHECK(b.r.committable_offset(1) == 1);
    CHECK(b.stamped("a", lane_a(1), 3, 0, 1) == push_result::accepted);
    CHECK(b.events() == std::vector<int>{1, 2});
}

TEST_CASE("an offset of 2^63 - 1 is refused before anything changes", "[ordering][resequencer]") {
    harness h(config());
    const auto last = std::numeric_limits<std::int64_t>::max();
    // One past it would be the partition's next offset, a signed overflow: the partition would
    // then have no committable offset, and re-reads would not be recognised.
    CHECK_THROWS_WITH(h.unstamped("k", 0, last, 1), keyroute_test::contains("below 2^63 - 1"));
    CHECK(h.r.stats().pushed == 0);
    CHECK_FALSE(h.r.committable_offset(0).has_value());
    CHECK(h.unstamped("k", 0, last - 1, 2) == push_result::accepted);
    CHECK(h.r.committable_offset(0) == last);
    CHECK(h.unstamped("k", 0, last - 1, 2) == push_result::duplicate);
}

TEST_CASE("restore keeps an episode that held events until they are re-read",
          "[ordering][resequencer]") {
    auto c = config(1000, ms(1000));
    c.max_idle_episodes = 1;
    harness a(c);
    a.stamped("a", lane_a(0), 0, 0, 0);              // delivered
    a.stamped("a", lane_a(2), 1, 0, 2);              // held: waits for 1
    for (std::uint16_t lane = 1; lane <= 5; ++lane)  // five other episodes, idle
        a.stamped("b", stamp{9, lane, 1, 0, true}, 3, lane - 1, 100 + lane);
    const auto cp = a.r.checkpoint();
    harness b(c);
    b.r.restore(cp);
    // A new episode before the replay: with one idle episode allowed, lane a's must survive.
    b.stamped("c", stamp{11, 0, 1, 0, true}, 4, 0, 200);
    CHECK(b.stamped("a", lane_a(2), 1, 0, 2) == push_result::accepted);  // the re-read
    CHECK(b.stamped("a", lane_a(1), 2, 0, 1) == push_result::accepted);
    // 1 then 2 at once, no gap: as without the restart (lane a's episode is not forgotten, or 2
    // would wait max_delay and 0, delivered before the restart, would be reported missing).
    CHECK(b.events() == std::vector<int>{200, 1, 2});
    CHECK(b.gaps.empty());
    CHECK(b.r.held_events() == 0);
    // Once re-read, the episode is idle again and counts against max_idle_episodes.
    CHECK(b.r.remembered_episodes() <= 2);
}

TEST_CASE("re-reads that retention deleted are passed, counted, and do not pin the commit",
          "[ordering][resequencer]") {
    auto c = config(1000, ms(1000));
    harness a(c);
    a.stamped("a", lane_a(0), 0, 0, 0);  // delivered
    a.stamped("a", lane_a(2), 0, 1, 2);  // held: waits for 1
    a.stamped("b", lane_b(0), 0, 2, 10);
    a.stamped("b", lane_b(2), 1, 0, 12);  // held: waits for 1
    a.stamped("b", lane_b(3), 1, 1, 13);  // held
    const auto cp = a.r.checkpoint();
    CHECK(a.r.committable_offset(0) == 1);
    CHECK(a.r.committable_offset(1) == 0);

    harness b(c);
    b.r.restore(cp);
    // Partition 0's offsets 0 to 4 were deleted: its reading starts at 5. Offset 1 (held at
    // the checkpoint) never comes, and the commit must not wait for it.
    CHECK(b.stamped("a", lane_a(3), 0, 5, 3) == push_result::accepted);  // waits for 1 and 2
    CHECK(b.r.stats().lost_rereads == 1);
    CHECK(b.r.committable_offset(0) == 5);
    // Partition 1 gives nothing after its jump: skip_to says where its reading is.
    b.r.skip_to(1, 7);
    CHECK(b.r.stats().lost_rereads == 3);
    CHECK(b.r.committable_offset(1) == 7);
    b.r.skip_to(1, 9);  // nothing more expected: no effect
    CHECK(b.r.stats().lost_rereads == 3);
    // The lost sequences are given up and reported, and what came after them is delivered.
    b.r.advance_watermark(ms(5000));
    CHECK(b.events() == std::vector<int>{3});
    REQUIRE(b.gaps.size() == 1);
    CHECK(b.gaps[0].first == 1);
    CHECK(b.gaps[0].last == 2);
    CHECK(b.r.held_events() == 0);
    CHECK(b.r.committable_offset(0) == 6);
}

// ---------------------------------------------------------------------------------------------
// Property tests: a simulated salting producer, a consumer reading partitions in random order.

namespace {

struct sim_event {
    std::string key;
    std::size_t lane = 0;          // index of the producer lane that routed it
    std::uint64_t lane_order = 0;  // position in that lane's routing of that key
    stamp st;
    std::uint32_t partition = 0;
    std::int64_t offset = -1;
    bool dropped = false;
};

struct sim_options {
    std::uint32_t partitions = 8;
    double drop = 0.0;    // probability a stamped event is lost
    double reread = 0.0;  // probability of a rebalance-like re-read at a step
    bool offsets = true;  // push offsets or not
    keyroute::resequencer_config config;
    bool exact = false;  // no early release may happen: check strict lane order and gaps
};

struct simulation {
    std::vector<sim_event> events;
    std::vector<std::vector<std::size_t>> logs;  // per partition: event ids in partition order
};

auto home_of(const std::string& key, std::uint32_t partitions) -> std::uint32_t {
    return static_cast<std::uint32_t>(keyroute::xxh3{}(key) % partitions);
}

// Each (lane, key) routes: cold unstamped events on home, then episodes of stamped events (first
// part home, runs on random partitions, back home at the end), cold events between and after.
auto simulate_producer(std::mt19937_64& rng, const sim_options& o) -> simulation {
    simulation sim;
    const std::size_t lanes = 1 + rng() % 3;
    const std::size_t keys = 1 + rng() % 24;
    struct stream {
        std::vector<sim_event> items;
        std::size_t next = 0;
    };
    std::vector<stream> streams;
    std::vector<std::uint64_t> lane_episode(lanes, 0);
    for (std::size_t l = 0; l < lanes; ++l) {
        for (std::size_t k = 0; k < keys; ++k) {
            stream s;
            const std::string key = "key-" + std::to_string(k);
            const std::uint32_t home = home_of(key, o.partitions);
            std::uint64_t order = 0;
            const auto cold = [&](std::size_t n) {
                for (std::size_t i = 0; i < n; ++i) {
                    s.items.push_back({key, l, order++, stamp{}, home, -1, false});
                }
            };
            cold(rng() % 5);
            const std::size_t episodes = rng() % 3;
            for (std::size_t e = 0; e < episodes; ++e) {
                // Episode ids of a lane only grow; other keys' episodes interleave, so leave room.
                lane_episode[l] += 1 + rng() % 3;
                const stamp base{1000 + l, static_cast<std::uint16_t>(l * 7), lane_episode[l], 0,
                                 false};
                const std::uint64_t length = 1 + rng() % 120;
                const std::uint64_t head = 1 + rng() % 4;
                const std::uint64_t tail = 1 + rng() % 3;
                std::uint32_t run_partition = home;
                std::uint64_t run_left = 0;
                for (std::uint64_t q = 0; q < length; ++q) {
                    std::uint32_t p = home;
                    bool salted = false;
                    if (q >= head && q + tail < length) {
                        if (run_left == 0) {
                            run_partition = static_cast<std::uint32_t>(rng() % o.partitions);
                            run_left = 1 + rng() % 10;
                        }
                        --run_left;
                        p = run_partition;
                        salted = true;
                    }
                    stamp st = base;
                    st.sequence = q;
                    st.salted = salted;
                    s.items.push_back({key, l, order++, st, p, -1, false});
                }
                cold(rng() % 4);
            }
            cold(rng() % 3);
            streams.push_back(std::move(s));
        }
    }
    // Interleave the streams; each event reaches its partition after a random in-flight delay,
    // never before an earlier event of the same lane on the same partition.
    std::vector<std::tuple<std::uint64_t, std::uint64_t, sim_event>> arrivals;
    std::map<std::pair<std::size_t, std::uint32_t>, std::uint64_t> last_arrival;
    std::uint64_t now = 0;
    std::size_t left = 0;
    for (const auto& s : streams) left += s.items.size();
    while (left > 0) {
        auto& s = streams[rng() % streams.size()];
        if (s.next == s.items.size()) continue;
        sim_event ev = s.items[s.next++];
        --left;
        ++now;
        std::uint64_t at = now + (rng() % 4 == 0 ? rng() % 200 : 0);
        auto& last = last_arrival[{ev.lane, ev.partition}];
        at = std::max(at, last);
        last = at;
        arrivals.emplace_back(at, now, std::move(ev));
    }
    std::sort(arrivals.begin(), arrivals.end(), [](const auto& a, const auto& b) {
        return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    sim.logs.resize(o.partitions);
    for (auto& a : arrivals) {
        sim_event& ev = std::get<2>(a);
        if (ev.st && o.drop > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < o.drop) {
            ev.dropped = true;
        } else {
            ev.offset = static_cast<std::int64_t>(sim.logs[ev.partition].size());
            sim.logs[ev.partition].push_back(sim.events.size());
        }
        sim.events.push_back(std::move(ev));
    }
    return sim;
}

struct episode_of {
    std::uint64_t producer;
    std::uint16_t lane;
    std::uint64_t episode;
    friend auto operator<(const episode_of& a, const episode_of& b) -> bool {
        return std::tie(a.producer, a.lane, a.episode) < std::tie(b.producer, b.lane, b.episode);
    }
};

auto episode_id(const stamp& s) -> episode_of { return {s.producer, s.lane, s.episode}; }

// A consumer: one resequencer plus what it delivered and reported.
struct consumer {
    std::vector<std::pair<int, delivery_order>> out;
    std::vector<seen_gap> gaps;
    std::size_t max_held = 0;
    std::size_t max_bytes = 0;
    keyroute::resequencer<int> r;
    explicit consumer(const keyroute::resequencer_config& c)
        : r(
              c,
              [this](keyroute::delivery<int>&& d) {
                  out.emplace_back(d.event, d.order);
                  note_memory();
              },
              [this](const keyroute::gap_report& g) {
                  gaps.push_back({g.producer, g.lane, g.episode, g.first_missing, g.last_missing,
                                  std::string(g.key), g.reason});
              }) {}
    void note_memory() {
        max_held = std::max(max_held, r.held_events());
        max_bytes = std::max(max_bytes, r.held_bytes());
    }
};

// Reads partitions in random order and batch sizes until every log is read (or `stop_after`
// pushes), with re-reads, refusals and watermark advances.
struct reader {
    const simulation& sim;
    const sim_options& o;
    std::vector<std::size_t> position;
    std::vector<std::size_t> read_max;  // highest position ever reached (for re-read checks)
    std::int64_t clock = 0;
    std::size_t pushes = 0;
    std::size_t unexpected = 0;  // push results contradicting the reference

    reader(const simulation& s, const sim_options& opts)
        : sim(s),
          o(opts),
          position(s.logs.size(), 0),
          read_max(s.logs.size(), 0) {}

    [[nodiscard]] auto done() const -> bool {
        for (std::size_t p = 0; p < sim.logs.size(); ++p) {
            if (position[p] < sim.logs[p].size()) return false;
        }
        return true;
    }

    // `delivered_before`: events already delivered (and committed) by an earlier consumer.
    void run(std::mt19937_64& rng, consumer& c, std::size_t stop_after,
             const std::vector<int>& delivered_before) {
        while (!done() && pushes < stop_after) {
            const auto p = static_cast<std::size_t>(rng() % sim.logs.size());
            if (position[p] == sim.logs[p].size()) continue;
            if (o.reread > 0 && position[p] > 0 &&
                std::uniform_real_distribution<double>(0, 1)(rng) < o.reread) {
                position[p] -= std::min<std::size_t>(position[p], 1 + rng() % 6);
            }
            const std::size_t batch = 1 + rng() % 16;
            for (std::size_t b = 0; b < batch && position[p] < sim.logs[p].size(); ++b) {
                const std::size_t id = sim.logs[p][position[p]];
                const sim_event& ev = sim.events[id];
                const bool again = position[p] < read_max[p] || delivered_before[id] > 0;
                if (again && !o.offsets && !ev.st) {
                    ++position[p];  // an unstamped re-read without offsets is not detectable
                    continue;
                }
                ++clock;
                const auto res =
                    c.r.push(ev.key, ev.st, static_cast<int>(id),
                             origin{ev.partition, o.offsets ? ev.offset : -1}, ms(clock));
                ++pushes;
                c.note_memory();
                if (res == push_result::refused) {
                    clock += 5;
                    c.r.advance_watermark(ms(clock));
                    c.note_memory();
                    break;  // pause this partition; the same event is pushed again later
                }
                if ((res == push_result::duplicate) != again) ++unexpected;
                ++position[p];
                read_max[p] = std::max(read_max[p], position[p]);
            }
            if (rng() % 4 == 0) {
                c.r.advance_watermark(ms(clock));
                c.note_memory();
            }
        }
    }
};

// Checks one complete delivery history (possibly two consumers, before and after a crash).
struct verdict {
    std::size_t lost = 0;             // not dropped, never delivered
    std::size_t twice = 0;            // delivered more than once
    std::size_t dropped_out = 0;      // dropped, yet delivered
    std::size_t episode_order = 0;    // rule 1 broken among non-late deliveries
    std::size_t partition_order = 0;  // rule 2 broken
    std::size_t lane_order = 0;       // a lane's events of a key out of routing order
    std::size_t gap_wrong = 0;        // gaps reported differ from the reference
    std::size_t out_of_order = 0;
    std::size_t late = 0;
};

auto check_history(const simulation& sim, const std::vector<std::pair<int, delivery_order>>& out,
                   const std::vector<seen_gap>& gaps, bool at_least_once) -> verdict {
    verdict v;
    std::vector<int> count(sim.events.size(), 0);
    std::map<episode_of, std::uint64_t> last_seq;
    std::map<episode_of, std::set<std::uint64_t>> late;
    std::map<std::pair<std::string, std::size_t>, std::uint64_t> last_lane_order;
    // Rule 2: per key and partition, the events in partition order and the first one not yet
    // delivered; only events between it and a delivered one can break the rule.
    std::map<std::pair<std::string, std::uint32_t>, std::vector<std::size_t>> lists;
    std::vector<std::size_t> index(sim.events.size(), 0);
    for (const auto& log : sim.logs) {
        for (const std::size_t id : log) {
            auto& l = lists[{sim.events[id].key, sim.events[id].partition}];
            index[id] = l.size();
            l.push_back(id);
        }
    }
    std::map<std::pair<std::string, std::uint32_t>, std::size_t> first_undelivered;
    for (const auto& [id_int, order] : out) {
        const auto id = static_cast<std::size_t>(id_int);
        const sim_event& ev = sim.events[id];
        if (++count[id] > 1) continue;  // judged at its first delivery
        if (order == delivery_order::out_of_order) ++v.out_of_order;
        if (ev.st) {
            const auto e = episode_id(ev.st);
            if (order == delivery_order::late) {
                ++v.late;
                late[e].insert(ev.st.sequence);
            } else {
                const auto it = last_seq.find(e);
                if (it != last_seq.end() && it->second >= ev.st.sequence) ++v.episode_order;
                last_seq[e] = ev.st.sequence;
            }
        }
        auto& lo = last_lane_order[{ev.key, ev.lane}];
        if (lo > ev.lane_order) ++v.lane_order;
        lo = std::max(lo, ev.lane_order + 1);
        if (ev.dropped) continue;
        const std::pair<std::string, std::uint32_t> kp{ev.key, ev.partition};
        const auto& list = lists[kp];
        std::size_t& f = first_undelivered[kp];
        for (std::size_t i = f; i < index[id]; ++i) {
            const sim_event& x = sim.events[list[i]];
            const bool related = !x.st || !ev.st ||
                                 (x.st.producer == ev.st.producer && x.st.lane == ev.st.lane &&
                                  x.st.episode != ev.st.episode);
            if (related && count[list[i]] == 0) ++v.partition_order;
        }
        while (f < list.size() && count[list[f]] > 0) ++f;
    }
    for (std::size_t id = 0; id < sim.events.size(); ++id) {
        if (sim.events[id].dropped) {
            if (count[id] != 0) ++v.dropped_out;
        } else if (count[id] == 0) {
            ++v.lost;
        } else if (count[id] > 1 && !at_least_once) {
            ++v.twice;
        }
    }
    // Gaps: exactly the dropped sequences below the episode's highest delivered one, plus the
    // ones that arrived late; each reported once.
    std::map<episode_of, std::uint64_t> highest;
    for (std::size_t id = 0; id < sim.events.size(); ++id) {
        const auto& ev = sim.events[id];
        if (ev.st && count[id] > 0) {
            auto& h = highest[episode_id(ev.st)];
            h = std::max(h, ev.st.sequence + 1);
        }
    }
    std::set<std::pair<episode_of, std::uint64_t>> expected;
    for (const auto& ev : sim.events) {
        if (ev.st && ev.dropped && ev.st.sequence + 1 < highest[episode_id(ev.st)]) {
            expected.insert({episode_id(ev.st), ev.st.sequence});
        }
    }
    for (const auto& [e, seqs] : late) {
        for (const auto s : seqs) expected.insert({e, s});
    }
    std::multiset<std::pair<episode_of, std::uint64_t>> reported;
    for (const auto& g : gaps) {
        for (std::uint64_t s = g.first; s <= g.last; ++s) {
            reported.insert({episode_of{g.producer, g.lane, g.episode}, s});
        }
    }
    if (!at_least_once) {
        if (reported.size() != expected.size()) ++v.gap_wrong;
        for (const auto& x : expected) {
            if (reported.count(x) != 1) ++v.gap_wrong;
        }
    }
    return v;
}

auto random_options(std::mt19937_64& rng) -> sim_options {
    sim_options o;
    o.partitions = static_cast<std::uint32_t>(2 + rng() % 63);
    o.config.max_delay = ms(static_cast<std::int64_t>(1 + rng() % 400));
    o.config.episode_ttl = ms(1000000);
    return o;
}

}  // namespace

TEST_CASE("property: with a long enough max_delay every lane's order is restored exactly",
          "[ordering][resequencer][property]") {
    std::mt19937_64 rng(1);
    std::size_t gaps_seen = 0;
    for (int run = 0; run < 40; ++run) {
        sim_options o = random_options(rng);
        o.drop = run % 2 == 0 ? 0.0 : 0.03;
        o.reread = run % 3 == 0 ? 0.05 : 0.0;
        o.offsets = run % 4 != 1;
        o.config.max_delay = ms(1000000000);  // nothing is given up before the end
        const simulation sim = simulate_producer(rng, o);
        consumer c(o.config);
        reader rd(sim, o);
        rd.run(rng, c, std::numeric_limits<std::size_t>::max(),
               std::vector<int>(sim.events.size(), 0));
        c.r.flush();
        CAPTURE(run, o.partitions, sim.events.size(), o.offsets);
        const verdict v = check_history(sim, c.out, c.gaps, false);
        CHECK(rd.unexpected == 0);
        CHECK(v.lost == 0);
        CHECK(v.twice == 0);
        CHECK(v.dropped_out == 0);
        CHECK(v.episode_order == 0);
        CHECK(v.partition_order == 0);
        if (o.drop == 0) CHECK(v.lane_order == 0);  // a lost last event home can let cold ones pass
        CHECK(v.gap_wrong == 0);
        CHECK(v.late == 0);
        CHECK(v.out_of_order == 0);
        CHECK(c.r.held_events() == 0);
        for (std::uint32_t p = 0; p < o.partitions && o.offsets; ++p) {
            if (sim.logs[p].empty()) continue;
            CHECK(c.r.committable_offset(p) == static_cast<std::int64_t>(sim.logs[p].size()));
        }
        gaps_seen += c.gaps.size();
    }
    CHECK(gaps_seen > 0);  // the drops were detected somewhere
}

TEST_CASE("property: short delays and tight memory keep rules 1 and 2, the bound and every event",
          "[ordering][resequencer][property]") {
    std::mt19937_64 rng(2);
    for (int run = 0; run < 60; ++run) {
        sim_options o = random_options(rng);
        o.drop = (rng() % 2 == 0) ? 0.0 : 0.05;
        o.reread = 0.03;
        o.config.max_events = 1 + rng() % 64;
        o.config.max_bytes = sizeof(int) + 6 + rng() % 400;
        o.config.max_idle_episodes = 1000000;
        o.config.on_full =
            run % 2 == 0 ? keyroute::full_policy::release_early : keyroute::full_policy::refuse;
        const simulation sim = simulate_producer(rng, o);
        consumer c(o.config);
        reader rd(sim, o);
        rd.run(rng, c, std::numeric_limits<std::size_t>::max(),
               std::vector<int>(sim.events.size(), 0));
        c.r.advance_watermark(ms(rd.clock) + o.config.max_delay);
        CAPTURE(run, o.partitions, o.config.max_events, o.config.max_bytes, sim.events.size());
        const verdict v = check_history(sim, c.out, c.gaps, false);
        CHECK(rd.unexpected == 0);
        CHECK(v.lost == 0);
        CHECK(v.twice == 0);
        CHECK(v.dropped_out == 0);
        CHECK(v.episode_order == 0);
        CHECK(v.partition_order == 0);
        CHECK(v.gap_wrong == 0);
        CHECK(v.out_of_order == 0);
        CHECK(c.max_held <= o.config.max_events);
        CHECK(c.max_bytes <= o.config.max_bytes);
        CHECK(c.r.held_events() == 0);
    }
}

TEST_CASE("property: a crash and a replay from the committable offsets lose nothing",
          "[ordering][resequencer][property]") {
    std::mt19937_64 rng(3);
    for (int run = 0; run < 40; ++run) {
        sim_options o = random_options(rng);
        o.drop = run % 2 == 0 ? 0.0 : 0.03;
        o.reread = 0.02;
        const simulation sim = simulate_producer(rng, o);
        std::size_t total = 0;
        for (const auto& l : sim.logs) total += l.size();
        const std::size_t crash_at = rng() % (total + 1);
        CAPTURE(run, o.partitions, total, crash_at);

        // Before the crash: what the application committed with its checkpoint.
        consumer before(o.config);
        reader rd(sim, o);
        const std::vector<int> none(sim.events.size(), 0);
        rd.run(rng, before, crash_at, none);
        const auto cp = before.r.checkpoint();
        std::vector<int> committed(sim.events.size(), 0);
        for (const auto& d : before.out) committed[static_cast<std::size_t>(d.first)] = 1;
        std::vector<std::size_t> restart(o.partitions, 0);
        for (std::uint32_t p = 0; p < o.partitions; ++p) {
            restart[p] = static_cast<std::size_t>(before.r.committable_offset(p).value_or(0));
        }

        // Exactly once: a fresh resequencer restored from the checkpoint.
        {
            consumer after(o.config);
            after.r.restore(cp);
            reader again(sim, o);
            again.position = restart;
            again.clock = rd.clock;
            for (std::uint32_t p = 0; p < o.partitions; ++p) again.read_max[p] = restart[p];
            again.run(rng, after, std::numeric_limits<std::size_t>::max(), committed);
            after.r.advance_watermark(ms(again.clock) + o.config.max_delay);
            auto history = before.out;
            history.insert(history.end(), after.out.begin(), after.out.end());
            auto gaps = before.gaps;
            gaps.insert(gaps.end(), after.gaps.begin(), after.gaps.end());
            const verdict v = check_history(sim, history, gaps, false);
            CHECK(again.unexpected == 0);
            CHECK(v.lost == 0);
            CHECK(v.twice == 0);
            CHECK(v.dropped_out == 0);
            CHECK(v.episode_order == 0);
            CHECK(v.partition_order == 0);
            CHECK(v.gap_wrong == 0);
        }
        // At least once: a fresh resequencer without the checkpoint, same offsets.
        {
            consumer after(o.config);
            reader again(sim, o);
            again.position = restart;
            again.clock = rd.clock;
            std::vector<int> no_memory(sim.events.size(), 0);
            // It cannot know what was delivered: every re-read is new to it.
            again.run(rng, after, std::numeric_limits<std::size_t>::max(), no_memory);
            after.r.advance_watermark(ms(again.clock) + o.config.max_delay);
            auto history = before.out;
            history.insert(history.end(), after.out.begin(), after.out.end());
            const verdict v = check_history(sim, history, {}, true);
            CHECK(v.lost == 0);
            CHECK(v.dropped_out == 0);
        }
    }
}
