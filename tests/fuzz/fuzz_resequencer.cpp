// libFuzzer target for keyroute::resequencer, driven by a fuzzed configuration (both full
// policies, tight memory, short delays, forgetful episode tables) and a fuzzed sequence of
// pushes (stamped or not, from a few partitions, with offsets, re-reads and clock jumps),
// watermarks and flushes. Checked on every call and at the end:
// - the memory bound: never more than max_events events or max_bytes bytes held, even inside
//   the sinks;
// - the invariant, against a model that knows every event: every push is delivered exactly
//   once (accepted), or refused (never delivered), or reported duplicate, and `duplicate` only
//   for an event taken before (an accepted push with the same stamp, or the same partition and
//   offset); a re-read of an offset already accepted is a duplicate. Nothing else may be
//   answered duplicate, however much history the resequencer forgot (runs of hundreds of
//   sequences with every other one missing give up more ranges than an episode remembers);
// - possibly_duplicate only on late or out-of-order deliveries, of a sequence given up or
//   delivered before; a checkpoint's given-up ranges stay within their bound;
// - rule 1: an episode's in-order deliveries come in sequence order, each after every earlier
//   sequence was delivered or reported in a gap, and no sequence is delivered twice;
// - rule 2: of two events of one key read from one partition, the later one never comes out
//   in order before the earlier one when either is unstamped or both are of one lane and
//   different episodes (an event flagged out_of_order is exempt; a late one is not).
// Build: -DKEYROUTE_BUILD_FUZZERS=ON with clang; run: fuzz_resequencer
// tests/fuzz/corpus/resequencer
#include "fuzz_input.hpp"

#include <keyroute/resequencer.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using keyroute_fuzz::input;

using ms = std::chrono::milliseconds;

struct event {
    std::uint32_t id = 0;
    std::uint16_t size = 0;
};

struct event_size {
    auto operator()(const event& e) const noexcept -> std::size_t { return e.size; }
};

using episode_id = std::tuple<std::uint64_t, std::uint16_t, std::uint64_t>;

// Sequences of one episode delivered or given up, as disjoint closed ranges (first -> last).
struct accounted {
    std::map<std::uint64_t, std::uint64_t> ranges;

    [[nodiscard]] auto contains(std::uint64_t s) const -> bool {
        auto it = ranges.upper_bound(s);
        if (it == ranges.begin()) return false;
        --it;
        return s <= it->second;
    }
    // True when every sequence below s is in a range.
    [[nodiscard]] auto all_below(std::uint64_t s) const -> bool {
        if (s == 0) return true;
        return !ranges.empty() && ranges.begin()->first == 0 && ranges.begin()->second >= s - 1;
    }
    [[nodiscard]] auto intersects(std::uint64_t first, std::uint64_t last) const -> bool {
        if (contains(first)) return true;
        const auto it = ranges.upper_bound(first);
        return it != ranges.end() && it->first <= last;
    }
    void add(std::uint64_t first, std::uint64_t last) {
        auto it = ranges.upper_bound(first);
        if (it != ranges.begin()) {
            auto prev = std::prev(it);
            // Touching or overlapping (prev->second + 1 would wrap at 2^64-1, which covers all).
            if (prev->second == std::numeric_limits<std::uint64_t>::max() ||
                prev->second + 1 >= first) {
                first = prev->first;
                last = std::max(last, prev->second);
                it = ranges.erase(prev);
            }
        }
        while (it != ranges.end() &&
               (last == std::numeric_limits<std::uint64_t>::max() || it->first <= last + 1)) {
            last = std::max(last, it->second);
            it = ranges.erase(it);
        }
        ranges.emplace(first, last);
    }
};

struct pushed {
    std::string key;
    keyroute::stamp st;
    keyroute::origin source;
    ms time{};
    std::uint16_t size = 0;
};

// The identity of a stamped event: the same stamp is the same event.
using stamp_id = std::tuple<std::uint64_t, std::uint16_t, std::uint64_t, std::uint64_t>;

struct model {
    keyroute::resequencer_config config;
    std::vector<pushed> pushes;                                      // by event id
    std::set<stamp_id> taken_stamps;                                 // of accepted pushes
    std::set<std::pair<std::uint32_t, std::int64_t>> taken_offsets;  // of accepted pushes
    std::vector<int> outcome;    // by id: 0 none yet, 1 accepted, 2 duplicate, 3 refused
    std::vector<int> delivered;  // by id: times delivered
    std::map<episode_id, accounted> episodes;
    std::map<std::pair<std::string, std::uint32_t>, std::set<std::uint32_t>> undelivered;
    bool forgetful = false;
    bool trace = std::getenv("KEYROUTE_FUZZ_TRACE") !=
                 nullptr;  // prints every call, for triage                // an episode was
                           // forgotten: rule 1 is checked loosely
    const keyroute::resequencer<event, event_size>* r = nullptr;

    void check_bound() const {
        FUZZ_REQUIRE(r->held_events() <= config.max_events);
        FUZZ_REQUIRE(r->held_bytes() <= config.max_bytes);
    }

    void on_delivery(const keyroute::delivery<event>& d) {
        if (trace) {
            std::fprintf(stderr, "  deliver #%u order %d\n", d.event.id, static_cast<int>(d.order));
        }
        FUZZ_REQUIRE(d.event.id < pushes.size());
        const pushed& p = pushes[d.event.id];
        FUZZ_REQUIRE(delivered[d.event.id]++ == 0);
        FUZZ_REQUIRE(outcome[d.event.id] == 0 || outcome[d.event.id] == 1);
        FUZZ_REQUIRE(d.key == p.key && d.stamp == p.st &&
                     d.source.partition == p.source.partition &&
                     d.source.offset == p.source.offset && d.time == p.time);
        if (r != nullptr) check_bound();
        if (d.possibly_duplicate) FUZZ_REQUIRE(d.order != keyroute::delivery_order::in_order);
        if (d.stamp) {
            accounted& a = episodes[episode_id{d.stamp.producer, d.stamp.lane, d.stamp.episode}];
            if (d.order == keyroute::delivery_order::in_order) {
                FUZZ_REQUIRE(!a.contains(d.stamp.sequence));
                if (!forgetful) FUZZ_REQUIRE(a.all_below(d.stamp.sequence));
            } else if (d.order == keyroute::delivery_order::late && !forgetful) {
                FUZZ_REQUIRE(a.contains(d.stamp.sequence));  // it was given up and reported before
            }
            a.add(d.stamp.sequence, d.stamp.sequence);
        }
        std::set<std::uint32_t>& waiting = undelivered[{p.key, p.source.partition}];
        waiting.erase(d.event.id);
        // A cycle breaker is flagged out_of_order (even when late): exempt. A late event keeps
        // rule 2.
        if (d.order == keyroute::delivery_order::out_of_order) return;
        // Rule 2 against every earlier accepted push of the key and partition not yet delivered.
        for (const std::uint32_t id : waiting) {
            if (id > d.event.id) break;
            const pushed& q = pushes[id];
            const bool ordered = !q.st || !p.st ||
                                 (q.st.producer == p.st.producer && q.st.lane == p.st.lane &&
                                  q.st.episode != p.st.episode);
            FUZZ_REQUIRE(!ordered);
        }
    }

    // Whether an event taken before is the very event `p` (its stamp or its offset).
    [[nodiscard]] auto taken_before(const pushed& p) const -> bool {
        if (p.st && taken_stamps.count(
                        stamp_id{p.st.producer, p.st.lane, p.st.episode, p.st.sequence}) != 0) {
            return true;
        }
        return p.source.offset >= 0 &&
               taken_offsets.count({p.source.partition, p.source.offset}) != 0;
    }

    // Called when push() returns accepted: the event waits for delivery unless it already had it.
    void accepted(std::uint32_t id) {
        outcome[id] = 1;
        const pushed& p = pushes[id];
        if (p.st)
            taken_stamps.insert(stamp_id{p.st.producer, p.st.lane, p.st.episode, p.st.sequence});
        if (p.source.offset >= 0) taken_offsets.insert({p.source.partition, p.source.offset});
        if (delivered[id] == 0)
            undelivered[{pushes[id].key, pushes[id].source.partition}].insert(id);
    }

    void on_gap(const keyroute::gap_report& g) {
        if (trace) {
            std::fprintf(stderr, "  gap (%llu,%u,%llu) [%llu, %llu] reason %d\n",
                         static_cast<unsigned long long>(g.producer), g.lane,
                         static_cast<unsigned long long>(g.episode),
                         static_cast<unsigned long long>(g.first_missing),
                         static_cast<unsigned long long>(g.last_missing),
                         static_cast<int>(g.reason));
        }
        FUZZ_REQUIRE(g.first_missing <= g.last_missing);
        accounted& a = episodes[episode_id{g.producer, g.lane, g.episode}];
        // Nothing delivered is given up, and the range starts where delivery stopped.
        if (!forgetful) {
            FUZZ_REQUIRE(a.all_below(g.first_missing));
            FUZZ_REQUIRE(!a.intersects(g.first_missing, g.last_missing));
        }
        a.add(g.first_missing, g.last_missing);
    }
};

auto fuzzed_config(input& in) -> keyroute::resequencer_config {
    keyroute::resequencer_config c;
    c.max_events = 1 + in.byte() % 16U;
    c.max_bytes = 1 + in.u64(1) * 2;
    c.max_delay =
        ms(in.byte() % 8U == 0 ? static_cast<std::int64_t>(in.u64(8) >> 1U) : in.byte() % 64U);
    c.on_full =
        in.byte() % 2U == 0 ? keyroute::full_policy::release_early : keyroute::full_policy::refuse;
    const std::uint8_t memory = in.byte();
    c.episode_ttl = memory % 2U == 0 ? ms(1000000000) : ms(in.byte() % 128U);
    c.max_idle_episodes = memory % 4U < 2 ? 1000000 : 1 + in.byte() % 4U;
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    input in(data, size);
    model m;
    m.config = fuzzed_config(in);
    keyroute::resequencer<event, event_size> r(
        m.config, [&](keyroute::delivery<event>&& d) { m.on_delivery(d); },
        [&](const keyroute::gap_report& g) { m.on_gap(g); });
    m.r = &r;

    constexpr std::uint32_t partitions = 3;
    std::vector<std::int64_t> next_offset(partitions, 0);
    std::vector<std::int64_t> accepted_max(partitions, -1);
    std::vector<std::vector<std::uint32_t>> log(partitions);  // event ids by offset
    auto now = static_cast<std::int64_t>(in.u64(2));
    std::uint64_t forgotten = 0;
    // After every call: an episode forgotten (idle past episode_ttl or max_idle_episodes) starts
    // afresh if its stamps come again, so what was accounted for it no longer holds.
    const auto after_call = [&] {
        if (r.stats().forgotten_episodes != forgotten) {
            forgotten = r.stats().forgotten_episodes;
            m.forgetful = true;
            m.episodes.clear();
        }
        m.check_bound();
    };

    const auto push = [&](const pushed& event_in) {
        const auto id = static_cast<std::uint32_t>(m.pushes.size());
        m.pushes.push_back(event_in);  // may reallocate: use the copy from here on
        const pushed p = m.pushes.back();
        m.outcome.push_back(0);
        m.delivered.push_back(0);
        if (m.trace) {
            std::fprintf(stderr,
                         "push #%u key %s partition %u offset %lld time %lld size %u stamp "
                         "(%llu,%u,%llu) seq %llu\n",
                         id, p.key.c_str(), p.source.partition,
                         static_cast<long long>(p.source.offset),
                         static_cast<long long>(p.time.count()), p.size,
                         static_cast<unsigned long long>(p.st.producer), p.st.lane,
                         static_cast<unsigned long long>(p.st.episode),
                         static_cast<unsigned long long>(p.st.sequence));
        }
        const bool repeat = m.taken_before(p);
        const keyroute::push_result result =
            r.push(p.key, p.st, event{id, p.size}, p.source, p.time);
        if (m.trace) std::fprintf(stderr, "  -> %d\n", static_cast<int>(result));
        // The invariant: an event never taken before is never answered duplicate.
        if (result == keyroute::push_result::duplicate) FUZZ_REQUIRE(repeat);
        if (result == keyroute::push_result::accepted) {
            m.accepted(id);
        } else {
            FUZZ_REQUIRE(m.delivered[id] == 0);
            m.outcome[id] = result == keyroute::push_result::duplicate ? 2 : 3;
        }
        after_call();
        if (p.source.offset >= 0 && p.source.offset <= accepted_max[p.source.partition]) {
            FUZZ_REQUIRE(result == keyroute::push_result::duplicate);
        }
        if (result == keyroute::push_result::accepted && p.source.offset >= 0) {
            accepted_max[p.source.partition] =
                std::max(accepted_max[p.source.partition], p.source.offset);
        }
        return result;
    };

    // A new event (offset next_offset if with_offset): refused, the same event again before
    // anything later of its partition. A flush always makes room.
    const auto push_new = [&](const pushed& p, bool with_offset) {
        keyroute::push_result result = push(p);
        for (int attempt = 0; result == keyroute::push_result::refused; ++attempt) {
            FUZZ_REQUIRE(attempt < 3);
            if (attempt == 0) {
                r.advance_watermark(ms(p.time.count() + in.byte()));
            } else {
                r.flush();
            }
            after_call();
            result = push(p);
        }
        if (with_offset) {
            log[p.source.partition].push_back(static_cast<std::uint32_t>(m.pushes.size() - 1));
            ++next_offset[p.source.partition];
        }
    };

    // The bound on what an episode remembers: its given-up ranges, plus one per late event held.
    const auto check_memory = [&] {
        const keyroute::resequencer_checkpoint cp = r.checkpoint();
        for (const auto& e : cp.episodes) {
            FUZZ_REQUIRE(e.given_up.size() <= 256 + r.held_events());
            FUZZ_REQUIRE(e.forgotten_below <= e.next_sequence);
        }
    };

    while (!in.empty()) {
        const std::uint8_t op = in.byte();
        if (op < 32) {  // watermark
            std::int64_t w = now + static_cast<std::int64_t>(in.byte()) - 32;
            if (op == 0) w = std::numeric_limits<std::int64_t>::max();
            if (op == 1) w = std::numeric_limits<std::int64_t>::min();
            if (m.trace) std::fprintf(stderr, "watermark %lld\n", static_cast<long long>(w));
            r.advance_watermark(ms(w));
            after_call();
        } else if (op < 36) {
            if (m.trace) std::fprintf(stderr, "flush\n");
            r.flush();
            after_call();
            FUZZ_REQUIRE(r.held_events() == 0 && r.held_bytes() == 0);
            check_memory();
        } else if (op < 48) {  // the clock jumps
            switch (op % 4U) {
            case 0: now -= 3600000; break;
            case 1: now += 365LL * 24 * 3600000; break;
            default: now += static_cast<std::int64_t>(in.u64(2)); break;
            }
        } else if (op < 64) {  // a re-read of an earlier offset: its very event, again
            const std::uint32_t part = in.byte() % partitions;
            if (log[part].empty()) continue;
            const std::uint32_t original = log[part][in.u64(2) % log[part].size()];
            if (m.outcome[original] == 3) continue;
            (void)push(m.pushes[original]);  // a duplicate by offset, unless never accepted
        } else if (op < 68) {
            // A run of one episode's sequences with every other one missing, from one partition
            // (another run of the other parity, later, brings the missing ones): with a small
            // buffer or short delays, more ranges are given up than an episode remembers.
            pushed p;
            const std::uint8_t shape = in.byte();
            p.key = std::string(1, static_cast<char>('a' + shape % 3U));
            p.source.partition = (shape >> 2U) % partitions;
            const bool with_offset = (shape & 0x20U) == 0;
            p.st = keyroute::stamp{3, 0, 1U + (shape >> 6U) % 2U, 0, true};
            const std::uint64_t first = op % 2U;
            const std::uint64_t count = 1 + std::uint64_t{in.byte()} * 3;
            const std::uint8_t pace = in.byte();
            for (std::uint64_t k = 0; k < count; ++k) {
                p.st.sequence = first + 2 * k;
                p.source.offset = with_offset ? next_offset[p.source.partition] : -1;
                p.size = static_cast<std::uint16_t>(k % 3U);
                p.time = ms(now);
                now += pace % 4U;
                push_new(p, with_offset);
                if (pace >= 128 && k % 4U == 0) {
                    r.advance_watermark(ms(now));
                    after_call();
                }
            }
        } else {  // a new event
            pushed p;
            const std::uint8_t shape = in.byte();
            p.key = std::string(1, static_cast<char>('a' + shape % 3U));
            p.source.partition = (shape >> 2U) % partitions;
            const bool with_offset = (shape & 0x20U) == 0;
            p.source.offset = with_offset ? next_offset[p.source.partition] : -1;
            p.size = static_cast<std::uint16_t>(in.byte() % 8U);
            p.time = ms(now);
            now += in.byte() % 4U;
            if (op >= 80) {
                p.st.producer = 1 + op % 2U;
                p.st.lane = static_cast<std::uint16_t>((op >> 1U) % 2U);
                p.st.episode = 1 + (op >> 2U) % 3U;
                p.st.sequence = in.byte() % 12U;
                // The top of the range, 2^64-1 (an episode's last sequence) included.
                if (op >= 250)
                    p.st.sequence = std::numeric_limits<std::uint64_t>::max() - (op - 250U);
                p.st.salted = (op & 0x10U) != 0;
            }
            push_new(p, with_offset);
        }
    }
    r.flush();
    FUZZ_REQUIRE(r.held_events() == 0 && r.held_bytes() == 0);
    check_memory();
    // Exactly once: accepted pushes delivered once, the others never.
    std::uint64_t accepted = 0;
    for (std::size_t id = 0; id < m.pushes.size(); ++id) {
        FUZZ_REQUIRE(m.delivered[id] == (m.outcome[id] == 1 ? 1 : 0));
        accepted += m.outcome[id] == 1 ? 1U : 0U;
    }
    const keyroute::resequencer_stats& s = r.stats();
    FUZZ_REQUIRE(s.delivered == accepted);
    FUZZ_REQUIRE(s.pushed + s.refused == m.pushes.size());
    return 0;
}
