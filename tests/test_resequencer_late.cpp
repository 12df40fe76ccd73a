// Late arrivals after many give-ups: an episode that gave up more ranges than it remembers
// (a tiny buffer, timeouts while one partition lags, a full buffer under either policy) still
// delivers every event pushed once, and answers `duplicate` only for an event taken before.
#include "keyroute_catch.hpp"

#include <keyroute/kafka/checkpoint.hpp>
#include <keyroute/resequencer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using keyroute::delivery_order;
using keyroute::gap_reason;
using keyroute::origin;
using keyroute::push_result;
using keyroute::stamp;
using ms = std::chrono::milliseconds;

constexpr std::uint64_t events = 600;  // sequences 0 .. 599 of one episode

auto seq_stamp(std::uint64_t seq) -> stamp { return stamp{7, 0, 1, seq, true}; }

struct event {
    std::uint64_t seq = 0;
    std::size_t size = 1;
};

struct event_size {
    auto operator()(const event& e) const noexcept -> std::size_t { return e.size; }
};

struct seen {
    std::uint64_t seq;
    delivery_order order;
    bool possibly_duplicate;
};

// A resequencer of sequence numbers that records deliveries and gaps; pushes the odd sequences
// from partition 1 and the even ones from partition 2, each partition with its own offsets.
struct harness {
    std::vector<seen> out;
    std::vector<gap_reason> gaps;
    std::int64_t offsets[3] = {0, 0, 0};
    keyroute::resequencer<event, event_size> r;

    explicit harness(const keyroute::resequencer_config& c)
        : r(
              c,
              [this](keyroute::delivery<event>&& d) {
                  out.push_back({d.event.seq, d.order, d.possibly_duplicate});
              },
              [this](const keyroute::gap_report& g) { gaps.push_back(g.reason); }) {}
    harness(const harness&) = delete;
    auto operator=(const harness&) -> harness& = delete;

    auto push(std::uint64_t seq, ms t, std::size_t size = 1) -> push_result {
        const std::uint32_t partition = seq % 2 == 1 ? 1 : 2;
        const push_result res =
            r.push("k", seq_stamp(seq), event{seq, size}, origin{partition, offsets[partition]}, t);
        if (res != push_result::refused) ++offsets[partition];
        return res;
    }

    // Each sequence delivered exactly once.
    void check_each_once() const {
        std::map<std::uint64_t, int> count;
        for (const seen& s : out) ++count[s.seq];
        CHECK(count.size() == events);
        for (const auto& [seq, n] : count) {
            INFO("sequence " << seq);
            CHECK(n == 1);
        }
        CHECK(r.stats().duplicates == 0);
        CHECK(r.held_events() == 0);
    }

    [[nodiscard]] auto late_count() const -> std::size_t {
        std::size_t n = 0;
        for (const seen& s : out) n += s.order == delivery_order::late ? 1U : 0U;
        return n;
    }
};

auto config(std::size_t max_events, ms max_delay) -> keyroute::resequencer_config {
    keyroute::resequencer_config c;
    c.max_events = max_events;
    c.max_delay = max_delay;
    return c;
}

// Partition 2 (the even sequences) lags: every even sequence but the last is given up before
// it arrives, each in a range of its own (300 ranges, more than an episode remembers).
void push_evens_late(harness& h, ms t) {
    for (std::uint64_t s = 0; s < events; s += 2) {
        INFO("sequence " << s);
        CHECK(h.push(s, t) == push_result::accepted);
    }
    h.r.flush();
}

// Re-reads: by offset, always a duplicate; by stamp alone (no offset), a duplicate or, below
// the remembered history, late with possibly_duplicate: never in order, never lost.
void check_rereads(harness& h) {
    const std::size_t before = h.out.size();
    std::int64_t offsets[3] = {0, 0, 0};
    for (std::uint64_t s = 1; s < events; s += 2) {
        CHECK(h.r.push("k", seq_stamp(s), event{s, 1}, origin{1, offsets[1]++}, ms(0)) ==
              push_result::duplicate);
    }
    for (std::uint64_t s = 0; s < events; s += 2) {
        CHECK(h.r.push("k", seq_stamp(s), event{s, 1}, origin{2, offsets[2]++}, ms(0)) ==
              push_result::duplicate);
    }
    CHECK(h.out.size() == before);
    std::size_t dup = 0;
    for (std::uint64_t s = 0; s < events; ++s) {
        const push_result res = h.r.push("k", seq_stamp(s), event{s, 1}, origin{3, -1}, ms(0));
        if (res == push_result::duplicate) {
            ++dup;
            continue;
        }
        INFO("sequence " << s);
        CHECK(res == push_result::accepted);
        REQUIRE(h.out.size() > before);
        CHECK(h.out.back().seq == s);
        CHECK(h.out.back().order == delivery_order::late);
        CHECK(h.out.back().possibly_duplicate);
    }
    CHECK(dup > 0);       // the remembered history still catches re-reads
    CHECK(dup < events);  // and the forgotten part is delivered again, flagged
    CHECK(h.r.held_events() == 0);
}

}  // namespace

TEST_CASE("the twenty-line case: a one-event buffer, odd then even sequences, none lost",
          "[ordering][resequencer]") {
    harness h(config(1, ms(5000)));
    for (std::uint64_t s = 1; s < events; s += 2) CHECK(h.push(s, ms(0)) == push_result::accepted);
    CHECK(h.gaps.size() == events / 2 - 1);  // 0, 2, ..., 596 given up, one range each
    for (const gap_reason g : h.gaps) CHECK(g == gap_reason::full);
    push_evens_late(h, ms(0));
    h.check_each_once();
    CHECK(h.late_count() == events / 2 - 1);  // 598 was never given up: it comes in order
    std::size_t flagged = 0;
    for (const seen& s : h.out) {
        if (s.possibly_duplicate) {
            ++flagged;
            CHECK(s.order == delivery_order::late);
            CHECK(s.seq % 2 == 0);
        }
    }
    CHECK(flagged > 0);  // the oldest ranges were forgotten: the test reaches that path
    CHECK(h.r.stats().possible_duplicates == flagged);
    check_rereads(h);
}

TEST_CASE("timeouts while one partition lags: every late event is delivered, none a duplicate",
          "[ordering][resequencer]") {
    harness h(config(1000, ms(10)));
    ms t(0);
    for (std::uint64_t s = 1; s < events; s += 2) {
        CHECK(h.push(s, t) == push_result::accepted);
        t += ms(10);
        h.r.advance_watermark(t);  // gives up s - 1, delivers s
    }
    CHECK(h.gaps.size() == events / 2);
    for (const gap_reason g : h.gaps) CHECK(g == gap_reason::timeout);
    push_evens_late(h, t);
    h.check_each_once();
    CHECK(h.late_count() == events / 2);
    check_rereads(h);
}

TEST_CASE("a full buffer under release_early: many ranges given up, every late event delivered",
          "[ordering][resequencer]") {
    harness h(config(8, ms(5000)));
    for (std::uint64_t s = 1; s < events; s += 2) CHECK(h.push(s, ms(0)) == push_result::accepted);
    CHECK(h.r.held_events() == 8);
    CHECK(h.gaps.size() > 256);
    push_evens_late(h, ms(0));
    h.check_each_once();
    check_rereads(h);
}

TEST_CASE("a full buffer under refuse: refusals, then timeouts give up ranges, none lost",
          "[ordering][resequencer]") {
    auto c = config(1, ms(10));
    c.on_full = keyroute::full_policy::refuse;
    harness h(c);
    ms t(0);
    std::size_t refused = 0;
    for (std::uint64_t s = 1; s < events; s += 2) {
        // Refused while the previous one is held: the caller lets the clock run and retries.
        while (h.push(s, t) == push_result::refused) {
            ++refused;
            t += ms(10);
            h.r.advance_watermark(t);
        }
    }
    CHECK(refused == events / 2 - 1);
    CHECK(h.r.stats().refused == refused);
    CHECK(h.gaps.size() == events / 2 - 1);
    push_evens_late(h, t);
    h.check_each_once();
    check_rereads(h);
}

TEST_CASE("oversized events under refuse: each goes at once, its gap given up, none lost",
          "[ordering][resequencer]") {
    auto c = config(100, ms(5000));
    c.on_full = keyroute::full_policy::refuse;
    c.max_bytes = 16;  // an odd event of 64 bytes (plus the key) can never be held
    harness h(c);
    for (std::uint64_t s = 1; s < events; s += 2) {
        CHECK(h.push(s, ms(0), 64) == push_result::accepted);
    }
    CHECK(h.r.held_events() == 0);
    CHECK(h.gaps.size() == events / 2);
    for (const gap_reason g : h.gaps) CHECK(g == gap_reason::full);
    push_evens_late(h, ms(0));
    h.check_each_once();
    check_rereads(h);
}

TEST_CASE("a checkpoint carries the forgotten history: late events after restore, none lost",
          "[ordering][resequencer]") {
    harness a(config(1, ms(5000)));
    for (std::uint64_t s = 1; s < events; s += 2) a.push(s, ms(0));
    const keyroute::resequencer_checkpoint cp = a.r.checkpoint();
    REQUIRE(cp.episodes.size() == 1);
    CHECK(cp.episodes[0].forgotten_below > 0);
    CHECK(cp.episodes[0].given_up.size() <= 256);

    for (const bool old_format : {false, true}) {
        INFO("old format " << old_format);
        keyroute::resequencer_checkpoint restored = cp;
        if (old_format) {
            // As a version-1 consumer checkpoint holds it (written before forgotten_below
            // existed): its 256 ranges are all it kept, and its decoder says so.
            keyroute::kafka::consumer_checkpoint wrapped{"t", 3, cp};
            std::string text = keyroute::kafka::encode_checkpoint(wrapped);
            const std::string v2 = "keyroute-consumer-checkpoint-2";
            REQUIRE(text.rfind(v2, 0) == 0);
            text.replace(0, v2.size(), "keyroute-consumer-checkpoint-1");
            const std::size_t end = text.rfind("\nend\n");
            text.erase(text.rfind(' ', end), end - text.rfind(' ', end));  // its forgotten_below
            restored = keyroute::kafka::decode_checkpoint(text).state;
            CHECK(restored.episodes[0].forgotten_below > 0);
        }
        harness b(config(1, ms(5000)));
        b.r.restore(restored);
        // The replay from the committable offsets: 599 was held, the rest was delivered.
        b.offsets[1] = *b.r.committable_offset(1);
        CHECK(b.offsets[1] == static_cast<std::int64_t>(events / 2 - 1));
        CHECK(b.push(events - 1, ms(0)) == push_result::accepted);
        push_evens_late(b, ms(0));
        CHECK(b.r.stats().duplicates == 0);
        CHECK(b.out.size() == events / 2 + 1);  // the evens and 599
        std::map<std::uint64_t, int> count;
        for (const seen& s : b.out) ++count[s.seq];
        CHECK(count.size() == events / 2 + 1);
        CHECK(b.r.held_events() == 0);
    }
}

TEST_CASE("release_early never gives up the sequence of the event being pushed",
          "[ordering][resequencer]") {
    harness h(config(2, ms(5000)));
    // 3 is the oldest held, then 1 (both from partition 1): both wait for 0. The buffer is full
    // when 2 comes (from partition 2).
    CHECK(h.push(3, ms(0)) == push_result::accepted);
    CHECK(h.push(1, ms(1)) == push_result::accepted);
    CHECK(h.r.held_events() == 2);
    // Making room releases 3 after what it waits for: 0 is given up, 1 goes, and 2 is the event
    // in hand: it goes in order (not `late` behind a gap reported for itself), then 3.
    CHECK(h.push(2, ms(2)) == push_result::accepted);
    REQUIRE(h.out.size() == 3);
    CHECK(h.out[0].seq == 1);
    CHECK(h.out[1].seq == 2);
    CHECK(h.out[2].seq == 3);
    for (const seen& s : h.out) CHECK(s.order == delivery_order::in_order);
    CHECK(h.gaps.size() == 1);  // 0 alone
    CHECK(h.r.held_events() == 0);
}

TEST_CASE("a checkpoint of exactly 256 given-up ranges forgot nothing below them",
          "[ordering][resequencer]") {
    // 0 delivered, then 2, 4, ..., 512 each given up the sequence below it: 256 ranges, the most
    // an episode keeps without forgetting any.
    harness a(config(100, ms(0)));
    CHECK(a.push(0, ms(0)) == push_result::accepted);
    for (std::uint64_t s = 2; s <= 512; s += 2) {
        CHECK(a.push(s, ms(static_cast<std::int64_t>(s))) == push_result::accepted);
        a.r.advance_watermark(ms(static_cast<std::int64_t>(s) + 1));
    }
    const keyroute::resequencer_checkpoint cp = a.r.checkpoint();
    REQUIRE(cp.episodes.size() == 1);
    REQUIRE(cp.episodes[0].given_up.size() == 256);
    CHECK(cp.episodes[0].forgotten_below == 0);
    // A copy of 0 (a producer's retry, from another partition): a duplicate before the restart
    // and after it.
    const auto retry = [](harness& h) {
        return h.r.push("k", seq_stamp(0), event{0, 1}, origin{0, 0}, ms(600));
    };
    CHECK(retry(a) == push_result::duplicate);
    harness b(config(100, ms(0)));
    b.r.restore(cp);
    CHECK(retry(b) == push_result::duplicate);
    CHECK(b.out.empty());
}

TEST_CASE("a producer's retry dropped as a duplicate is not read again after a restart",
          "[ordering][resequencer]") {
    // Sequences 0 to 3 at offsets 0 to 3 of partition 0, then a retry of 3 at offset 4: dropped
    // by its stamp, yet read, so the committable offset passes it. Once the episode is forgotten
    // (episode_ttl), a restart that re-read offset 4 would take the copy for a new event.
    keyroute::resequencer_config c = config(100, ms(100));
    c.episode_ttl = ms(1000);
    harness a(c);
    for (std::int64_t s = 0; s < 4; ++s) {
        CHECK(a.r.push("k", seq_stamp(static_cast<std::uint64_t>(s)),
                       event{static_cast<std::uint64_t>(s), 1}, origin{0, s},
                       ms(0)) == push_result::accepted);
    }
    CHECK(a.r.push("k", seq_stamp(3), event{3, 1}, origin{0, 4}, ms(0)) == push_result::duplicate);
    CHECK(a.r.committable_offset(0) == std::optional<std::int64_t>(5));
    a.r.advance_watermark(ms(5000));
    CHECK(a.r.remembered_episodes() == 0);
    const keyroute::resequencer_checkpoint cp = a.r.checkpoint();
    harness b(c);
    b.r.restore(cp);
    CHECK(b.r.committable_offset(0) == std::optional<std::int64_t>(5));
    CHECK(a.out.size() == 4);
}
