// encode_checkpoint / decode_checkpoint: every field comes back, version-1 checkpoints are still
// read, and a foreign or truncated text is an error naming the field. The commit hint
// (commit_hint.hpp): what an episode's restore needs comes back, most recent first, within each
// partition's budget; metadata that is not a hint is ignored, a damaged hint is an error.
#include "keyroute_catch.hpp"

#include <keyroute/kafka/checkpoint.hpp>
#include <keyroute/kafka/commit_hint.hpp>

#include <limits>
#include <set>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

auto sample() -> keyroute::kafka::consumer_checkpoint {
    keyroute::kafka::consumer_checkpoint cp;
    cp.topic = "events with spaces\n";
    cp.partitions = 12;
    cp.state.watermark = std::chrono::milliseconds(1764000000000);
    cp.state.partitions.push_back({3, 40, {31, 35}});
    cp.state.partitions.push_back({0, 0, {}});
    keyroute::resequencer_checkpoint::episode_state e;
    e.producer = 0xfeedULL;
    e.lane = 7;
    e.episode = 9;
    e.key = std::string("k\0y", 3);
    e.next_sequence = 500;
    e.last_time = std::chrono::milliseconds(1764000000123);
    e.held_events = 2;
    e.given_up = {{300, 310}, {400, 400}};
    e.delivered_ahead = {502, 510};
    e.forgotten_below = 250;
    cp.state.episodes.push_back(e);
    return cp;
}

}  // namespace

TEST_CASE("a consumer checkpoint comes back field by field", "[checkpoint]") {
    const auto cp = sample();
    const std::string bytes = keyroute::kafka::encode_checkpoint(cp);
    const auto back = keyroute::kafka::decode_checkpoint(bytes);
    CHECK(keyroute::kafka::encode_checkpoint(back) == bytes);
    CHECK(back.topic == cp.topic);
    CHECK(back.partitions == cp.partitions);
    CHECK(back.state.watermark == cp.state.watermark);
    REQUIRE(back.state.partitions.size() == 2);
    CHECK(back.state.partitions[0].partition == 3);
    CHECK(back.state.partitions[0].next_offset == 40);
    CHECK(back.state.partitions[0].held_offsets == cp.state.partitions[0].held_offsets);
    REQUIRE(back.state.episodes.size() == 1);
    const auto& e = back.state.episodes[0];
    const auto& want = cp.state.episodes[0];
    CHECK(e.producer == want.producer);
    CHECK(e.lane == want.lane);
    CHECK(e.episode == want.episode);
    CHECK(e.key == want.key);
    CHECK(e.next_sequence == want.next_sequence);
    CHECK(e.last_time == want.last_time);
    CHECK(e.held_events == want.held_events);
    CHECK(e.given_up == want.given_up);
    CHECK(e.delivered_ahead == want.delivered_ahead);
    // Lost, it would make a forgotten, given-up sequence that comes late after a restart look
    // delivered: dropped as a duplicate instead of delivered late.
    CHECK(e.forgotten_below == 250);
}

TEST_CASE("a version-1 consumer checkpoint is still read", "[checkpoint]") {
    // The text a version-1 encoder wrote: no forgotten_below after delivered_ahead.
    const std::string v1 =
        "keyroute-consumer-checkpoint-1 1 61 4 0\n1\n0 5 1 3\n1\n"
        "1 0 2 1 6b 9 77 1 1 4 6 1 12\nend\n";
    const auto cp = keyroute::kafka::decode_checkpoint(v1);
    CHECK(cp.topic == "a");
    CHECK(cp.partitions == 4);
    REQUIRE(cp.state.partitions.size() == 1);
    CHECK(cp.state.partitions[0].held_offsets == std::vector<std::int64_t>{3});
    REQUIRE(cp.state.episodes.size() == 1);
    CHECK(cp.state.episodes[0].key == "k");
    CHECK(cp.state.episodes[0].delivered_ahead == std::vector<std::uint64_t>{12});
    CHECK(cp.state.episodes[0].forgotten_below == 0);
}

TEST_CASE("a foreign or truncated checkpoint is an error naming the field", "[checkpoint]") {
    using keyroute_test::contains;
    const std::string good = keyroute::kafka::encode_checkpoint(sample());
    CHECK_THROWS_WITH(keyroute::kafka::decode_checkpoint("keyroute-consumer-checkpoint-9 1 61"),
                      contains("magic"));
    CHECK_THROWS_WITH(keyroute::kafka::decode_checkpoint(good.substr(0, good.size() - 12)),
                      contains("field"));
    CHECK_THROWS_AS(keyroute::kafka::decode_checkpoint(""), std::runtime_error);
    CHECK_THROWS_AS(keyroute::kafka::decode_checkpoint("something else"), std::runtime_error);
    std::string huge = good;
    huge.replace(huge.find("\n2\n"), 3, "\n99999999\n");  // more partitions than bytes
    CHECK_THROWS_AS(keyroute::kafka::decode_checkpoint(huge), std::runtime_error);
    // Trailing data after `end` (two records in one): an error.
    CHECK_THROWS_WITH(keyroute::kafka::decode_checkpoint(good + good), contains("end"));
    // A count under half the record's bytes, yet more episodes than what is left can hold: an
    // error naming it, before a vector of that size is made.
    std::string many = good;
    const auto one = many.find("\n1\n");
    REQUIRE(one != std::string::npos);
    many.replace(one, 3, "\n" + std::to_string(good.size() / 4) + "\n");
    CHECK_THROWS_WITH(keyroute::kafka::decode_checkpoint(many), contains("episode count"));
    // Still a number: decode reads it, and the resequencer's restore() checks it.
    std::string negative = good;
    negative.replace(negative.find(" 40 "), 4, " -1 ");
    CHECK_NOTHROW(keyroute::kafka::decode_checkpoint(negative));
}

TEST_CASE("a commit hint tells recent episodes' next sequences within each partition's budget",
          "[checkpoint]") {
    namespace kd = keyroute::kafka::detail;
    std::vector<keyroute::resequencer_checkpoint::episode_state> recent;  // most recent first
    for (std::uint64_t n = 0; n < 400; ++n) {
        keyroute::resequencer_checkpoint::episode_state e;
        e.producer = 0xabcdef0123ULL;
        e.lane = static_cast<std::uint16_t>(n % 8);
        e.episode = n;
        e.key = n == 7 ? std::string("a key\0with bytes", 16) : "tenant-" + std::to_string(n);
        e.next_sequence = n == 3 ? 0 : 1000 + n;  // 0: nothing to tell
        recent.push_back(e);
    }
    recent[5].next_sequence = std::numeric_limits<std::uint64_t>::max();  // finished
    const auto now = std::chrono::milliseconds(77);
    for (const std::size_t budget : {std::size_t{256}, kd::hint_budget}) {
        const std::size_t slots = budget == 256 ? 4 : 16;  // room for a few; for all
        const auto hints = kd::encode_hints(recent, slots, budget);
        REQUIRE(hints.size() == slots);
        std::set<std::uint64_t> told;
        for (const auto& h : hints) {
            CHECK(h.size() <= budget);
            const auto decoded = kd::try_decode_hint(h, now);
            REQUIRE(decoded.has_value());
            for (const auto& e : *decoded) {
                const auto& from = recent[e.episode];
                CHECK(e.producer == from.producer);
                CHECK(e.lane == from.lane);
                CHECK(e.key == from.key);
                CHECK(e.next_sequence == from.next_sequence);
                CHECK(e.forgotten_below == e.next_sequence);  // below it: late, never a duplicate
                CHECK(e.last_time == now);
                CHECK(told.insert(e.episode).second);
            }
        }
        CHECK(told.count(3) == 0);
        CHECK(told.count(5) == 0);
        if (budget == 256) {
            // Room for a few: the first ones, the most recently active.
            REQUIRE_FALSE(told.empty());
            CHECK(told.size() < 40);
            CHECK(*told.rbegin() < 40);
        } else {
            CHECK(told.size() == 398);
        }
    }
    CHECK(kd::encode_hints(recent, 0).empty());
    // A budget with no room for an episode: no metadata at all.
    for (const auto& h : kd::encode_hints(recent, 3, kd::hint_magic.size())) CHECK(h.empty());
}

TEST_CASE("metadata that is not a hint is ignored; a damaged hint is refused without a throw",
          "[checkpoint]") {
    namespace kd = keyroute::kafka::detail;
    const auto now = std::chrono::milliseconds(0);
    CHECK(kd::try_decode_hint("", now).value().empty());
    CHECK(kd::try_decode_hint("someone else's metadata", now).value().empty());
    CHECK(kd::try_decode_hint(std::string(kd::hint_magic) + "x 1 2 3 2 6b31 9", now)->empty());
    CHECK(kd::try_decode_hint(kd::hint_magic, now).value().empty());
    const std::string good = std::string(kd::hint_magic) + " 1 2 3 2 6b31 9 4 5 6 0 - 7";
    const auto decoded = kd::try_decode_hint(good, now);
    REQUIRE(decoded.has_value());
    REQUIRE(decoded->size() == 2);
    CHECK((*decoded)[0].key == "k1");
    CHECK((*decoded)[1].key.empty());
    CHECK((*decoded)[1].next_sequence == 7);
    for (const std::string& bad : {std::string(kd::hint_magic) + " 1 2 3 2 6b31",
                                   std::string(kd::hint_magic) + " 1 2 3 9 6b31 9",
                                   std::string(kd::hint_magic) + " 1 2 3 2 6b3 9",
                                   std::string(kd::hint_magic) + " 1 2 3 2 6bZZ 9",
                                   std::string(kd::hint_magic) + " 1 2 3 0 6b 9",
                                   std::string(kd::hint_magic) + " 1 70000 3 2 6b31 9",
                                   std::string(kd::hint_magic) + " x 2 3 2 6b31 9"}) {
        INFO(bad);
        CHECK_FALSE(kd::try_decode_hint(bad, now).has_value());
    }
}
