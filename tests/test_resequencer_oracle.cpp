// A reference model of the ordering rules, written from the rules at the top of
// resequencer.hpp and not from its code, checked against the resequencer on generated streams:
// a simulated salting producer (cold and hot phases per key and lane, runs on random
// partitions, retries that write an event twice), read back from 2 to 64 partitions in a random
// interleaving with lagging partitions, re-reads by offset, tight buffers under both policies,
// short delays, forgetful episode tables and crashes restarted from a checkpoint.
//
// The model knows every event, so it checks each call as it happens:
// - every delivery: the event was taken and not delivered since; in order means every earlier
//   sequence of its episode was delivered or given up (rule 1) and no earlier held event of its
//   key and partition had to go first (rule 2); late means its sequence had been given up, or
//   it is a second copy (then flagged possibly_duplicate); out of order only an event that
//   waits, through held events, for itself (a retry written behind later events of its
//   partition can close such a cycle);
// - every gap: exactly the lowest sequences of the episode neither delivered, given up nor held;
// - every push: `duplicate` only for an event taken before (by offset always, and by stamp);
//   an event never taken is accepted or refused, and refused only under full_policy::refuse;
// - after every call: what is held is what the model holds, within max_events and max_bytes,
//   none past its deadline, each one blocked by rule 1 or 2 (what may go has gone);
// - at the end: every event in the committed output, once, but for second copies the
//   resequencer could not recognise (flagged, or of an episode it forgot).
#include "keyroute_catch.hpp"

#include <keyroute/resequencer.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using keyroute::delivery_order;
using keyroute::gap_reason;
using keyroute::push_result;
using keyroute::stamp;
using ms = std::chrono::milliseconds;

using episode_id = std::tuple<std::uint64_t, std::uint16_t, std::uint64_t>;
using stamp_id = std::tuple<std::uint64_t, std::uint16_t, std::uint64_t, std::uint64_t>;

auto episode_of(const stamp& s) -> episode_id { return {s.producer, s.lane, s.episode}; }
auto stamp_of(const stamp& s) -> stamp_id { return {s.producer, s.lane, s.episode, s.sequence}; }

// One message in a partition log. A retry is another message with the same stamp and event.
struct message {
    int event = 0;  // the logical event: a retry shares it
    std::string key;
    stamp st;
    std::uint32_t partition = 0;
    std::int64_t offset = 0;
    std::size_t size = 1;
};

struct workload {
    std::vector<message> messages;       // by message id
    std::vector<std::vector<int>> logs;  // per partition: message ids by offset
    std::set<std::uint32_t> lagging;     // partitions the consumer reads late
    int events = 0;
};

// A salting producer: per (lane, key), cold phases (unstamped, home) and hot episodes (stamped
// from 0, first home, then runs on random partitions, last stamped one home again).
// With `alternate`, episodes last long and put every other sequence on a partition that lags:
// hundreds of sequences of one episode are given up, one by one, before they arrive.
auto produce(std::mt19937_64& rng, std::uint32_t partitions, int count, bool retries,
             bool alternate) -> workload {
    workload w;
    w.logs.resize(partitions);
    const auto pick = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
    const std::uint64_t keys = 1 + pick(6);
    const std::uint64_t lanes = 1 + pick(4);
    struct track {
        bool hot = false;
        std::uint64_t episode = 0;
        std::uint64_t next = 0;
        std::uint32_t run_partition = 0;
        std::uint64_t run_left = 0;
    };
    std::map<std::pair<std::uint64_t, std::uint64_t>, track> tracks;
    std::vector<std::uint64_t> episodes_of_lane(lanes, 0);
    std::vector<std::pair<int, int>> pending_retries;  // (countdown, message id)
    const auto append = [&](message m) {
        m.offset = static_cast<std::int64_t>(w.logs[m.partition].size());
        m.size = 1 + pick(4);
        w.logs[m.partition].push_back(static_cast<int>(w.messages.size()));
        w.messages.push_back(std::move(m));
    };
    for (int i = 0; i < count; ++i) {
        const std::uint64_t key = pick(2) == 0 ? 0 : pick(keys);
        const std::uint64_t lane = pick(lanes);
        track& t = tracks[{lane, key}];
        message m;
        m.event = w.events++;
        m.key = "key" + std::to_string(key);
        const auto home = static_cast<std::uint32_t>((key * 7 + 3) % partitions);
        m.partition = home;
        if (!t.hot && pick(4) == 0) {
            t.hot = true;
            t.episode = ++episodes_of_lane[lane];
            t.next = 0;
            t.run_left = 0;
        } else if (t.hot && pick(alternate ? 5000 : 10) == 0) {
            t.hot = false;  // this one, the last stamped event of the episode, goes home
            m.st = stamp{1 + lane / 2, static_cast<std::uint16_t>(lane % 2), t.episode, t.next++,
                         true};
            append(m);
            continue;
        }
        if (t.hot) {
            m.st =
                stamp{1 + lane / 2, static_cast<std::uint16_t>(lane % 2), t.episode, t.next, true};
            if (alternate && t.next != 0) {
                const auto lag = static_cast<std::uint32_t>((home + 1) % partitions);
                w.lagging.insert(lag);
                m.partition = t.next % 2 == 0 ? lag : home;
            } else if (t.next != 0) {
                if (t.run_left == 0) {
                    t.run_partition = static_cast<std::uint32_t>(pick(partitions));
                    t.run_left = 1 + pick(8);
                }
                --t.run_left;
                m.partition = t.run_partition;
            }
            ++t.next;
            if (retries && pick(30) == 0) {
                pending_retries.emplace_back(1 + static_cast<int>(pick(20)),
                                             static_cast<int>(w.messages.size()));
            }
        }
        append(m);
        for (auto& [countdown, id] : pending_retries) {
            if (--countdown == 0) append(w.messages[static_cast<std::size_t>(id)]);
        }
        pending_retries.erase(std::remove_if(pending_retries.begin(), pending_retries.end(),
                                             [](const auto& r) { return r.first <= 0; }),
                              pending_retries.end());
    }
    return w;
}

// Bytes of a held event as the model counts them: the message's size (the resequencer adds the
// key's size).
struct event_size {
    const workload* w = nullptr;
    auto operator()(const int& id) const noexcept -> std::size_t {
        return w->messages[static_cast<std::size_t>(id)].size;
    }
};
using reseq = keyroute::resequencer<int, event_size>;

struct held_item {
    int message = 0;
    bool late = false;
    bool second_copy = false;  // a copy of an event taken before: must come flagged
    ms time{};
};

// What the resequencer knows of one episode, as the rules define it.
struct episode_view {
    std::set<std::uint64_t> delivered;
    std::set<std::uint64_t> given_up;  // and not delivered since
    std::set<std::uint64_t> held;      // sequences held in order (not late)
    std::uint64_t lowest_open = 0;     // lowest sequence neither delivered nor given up
    int generation = 0;                // times the resequencer forgot it

    [[nodiscard]] auto accounted(std::uint64_t s) const -> bool {
        return delivered.count(s) != 0 || given_up.count(s) != 0;
    }
    void advance() {
        while (accounted(lowest_open)) ++lowest_open;
    }
};

enum class call_kind { push, watermark, flush };

// The reference model. Copied whole at a checkpoint: a crash goes back to the copy.
struct oracle_state {
    std::map<std::uint64_t, held_item> held;  // by push serial
    std::map<episode_id, episode_view> episodes;
    std::set<stamp_id> taken_stamps;
    std::set<std::pair<std::uint32_t, std::int64_t>> taken_offsets;
    std::map<int, int> committed;         // event -> deliveries in the committed output
    std::map<int, int> first_generation;  // event -> its episode's generation then
    std::uint64_t serial = 0;
};

struct oracle {
    const workload& w;
    keyroute::resequencer_config config;
    oracle_state s;
    // The push in progress (its message id), and what the model expects of it.
    int pushing = -1;
    bool pushing_late = false;
    bool pushing_second = false;
    bool pushing_delivered = false;
    call_kind call = call_kind::push;
    bool due_at_start = false;  // some held event was past its deadline as the call began
    const reseq* r = nullptr;
    int failures = 0;

    oracle(const workload& wl, const keyroute::resequencer_config& c) : w(wl), config(c) {}

    bool trace = std::getenv("KEYROUTE_ORACLE_TRACE") != nullptr;  // prints every call

    void fail(const std::string& what) {
        if (failures++ < 5) FAIL_CHECK(what);
    }
    void expect(bool ok, const char* what) {
        if (!ok) fail(what);
    }

    [[nodiscard]] auto msg(int id) const -> const message& {
        return w.messages[static_cast<std::size_t>(id)];
    }

    // Rule 2: an earlier event `a` of the same key and partition must go before `b`.
    static auto must_precede(const message& a, const message& b) -> bool {
        if (!a.st || !b.st) return true;
        return a.st.producer == b.st.producer && a.st.lane == b.st.lane &&
               a.st.episode != b.st.episode;
    }

    [[nodiscard]] auto deadline(const held_item& h) const -> ms {
        if (h.time.count() > ms::max().count() - config.max_delay.count()) return ms::max();
        return h.time + config.max_delay;
    }

    void on_delivery(const keyroute::delivery<int>& d) {
        if (r != nullptr) {
            expect(r->held_events() <= config.max_events, "more than max_events held");
            expect(r->held_bytes() <= config.max_bytes, "more than max_bytes held");
        }
        const message& m = msg(d.event);
        if (trace) {
            std::fprintf(stderr, "  deliver #%d order %d%s\n", d.event, static_cast<int>(d.order),
                         d.possibly_duplicate ? " possibly_duplicate" : "");
        }
        expect(d.key == m.key && d.stamp == m.st && d.source.partition == m.partition &&
                   d.source.offset == m.offset,
               "a delivery does not carry its event's key, stamp and origin");
        held_item item;
        std::uint64_t serial = 0;
        bool found = false;
        for (const auto& [k, h] : s.held) {
            if (h.message == d.event) {
                item = h;
                serial = k;
                found = true;
                break;
            }
        }
        if (!found) {
            if (d.event != pushing || pushing_delivered) {
                fail("delivered an event not taken, or twice: message " + std::to_string(d.event));
                return;
            }
            pushing_delivered = true;
            item = held_item{d.event, pushing_late, pushing_second, {}};
            serial = s.serial + 1;  // after everything held
        }
        const bool breaks_cycle = d.order == delivery_order::out_of_order;
        expect(!breaks_cycle || on_cycle(serial, item), "out_of_order without a waiting cycle");
        expect(!d.possibly_duplicate || d.order != delivery_order::in_order,
               "possibly_duplicate on an in-order delivery");
        // Rule 2 against every earlier held event of its key and partition.
        for (const auto& [k, h] : s.held) {
            if (k >= serial || breaks_cycle) break;
            const message& a = msg(h.message);
            if (a.key == m.key && a.partition == m.partition && must_precede(a, m)) {
                fail("rule 2: message " + std::to_string(d.event) + " passed message " +
                     std::to_string(h.message));
            }
        }
        if (found) s.held.erase(serial);
        if (m.st) {
            episode_view& v = s.episodes[episode_of(m.st)];
            const std::uint64_t q = m.st.sequence;
            if (d.order == delivery_order::in_order) {
                expect(!item.late, "a late event delivered in order");
                expect(v.lowest_open == q, "rule 1: delivered in order before an earlier sequence");
                v.held.erase(q);
            } else if (breaks_cycle && !item.late) {
                v.held.erase(q);  // ahead of its episode's order, or passing rule 2
            } else {
                expect(item.late, "delivered late, but it was not given up before it came");
                if (v.delivered.count(q) != 0) {
                    expect(d.possibly_duplicate,
                           "a second copy delivered without possibly_duplicate");
                }
            }
            v.given_up.erase(q);
            v.delivered.insert(q);
            v.advance();
        } else {
            expect(d.order == delivery_order::in_order, "an unstamped event delivered late");
        }
        // The committed output: once, but for copies the resequencer could not recognise.
        int& n = s.committed[m.event];
        if (n++ == 0) {
            s.first_generation[m.event] = m.st ? s.episodes[episode_of(m.st)].generation : 0;
        } else {
            const bool forgot =
                m.st && s.episodes[episode_of(m.st)].generation != s.first_generation[m.event];
            expect(m.st && (d.possibly_duplicate || forgot),
                   "an event delivered twice though the resequencer knew it");
        }
    }

    // Whether `a` waits for `b` by rule 1 or 2, both taken (held, or being pushed), `b` first.
    [[nodiscard]] auto waits_for(std::uint64_t sa, const held_item& a, std::uint64_t sb,
                                 const held_item& b) const -> bool {
        const message& x = msg(a.message);
        const message& y = msg(b.message);
        if (sb < sa && x.key == y.key && x.partition == y.partition && must_precede(y, x)) {
            return true;
        }
        return x.st && y.st && !a.late && !b.late && episode_of(x.st) == episode_of(y.st) &&
               y.st.sequence < x.st.sequence;
    }

    // Whether the taken event (serial `start`, `item`) waits, through a chain of taken events
    // each waiting for the next, for itself: the only case out_of_order may be delivered.
    [[nodiscard]] auto on_cycle(std::uint64_t start, const held_item& item) const -> bool {
        std::map<std::uint64_t, held_item> nodes = s.held;
        nodes[start] = item;
        std::set<std::uint64_t> seen;
        std::vector<std::uint64_t> todo{start};
        while (!todo.empty()) {
            const std::uint64_t cur = todo.back();
            todo.pop_back();
            for (const auto& [k, h] : nodes) {
                if (!waits_for(cur, nodes.at(cur), k, h)) continue;
                if (k == start) return true;
                if (seen.insert(k).second) todo.push_back(k);
            }
        }
        return false;
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
        expect(g.first_missing <= g.last_missing, "an empty gap");
        expect(g.last_missing - g.first_missing < 1000000, "a gap too wide for these streams");
        expect(
            (call == call_kind::push && g.reason == gap_reason::full) ||
                (call == call_kind::watermark && g.reason == gap_reason::timeout && due_at_start) ||
                (call == call_kind::flush && g.reason == gap_reason::flush),
            "a gap given up for the wrong reason, or with nothing due");
        episode_view& v = s.episodes[episode_id{g.producer, g.lane, g.episode}];
        expect(v.lowest_open == g.first_missing,
               "a gap that does not start at the lowest open sequence");
        for (std::uint64_t q = g.first_missing;
             q <= g.last_missing && q - g.first_missing < 1000000; ++q) {
            expect(!v.accounted(q) && v.held.count(q) == 0, "a gap over a sequence not missing");
            v.given_up.insert(q);
        }
        v.advance();
    }

    // After each call: the held set agrees, the bounds and deadlines hold, and each held event
    // is blocked (an event that may go has gone).
    void after_call() {
        expect(r->held_events() == s.held.size(), "held_events() differs from the model");
        expect(r->held_events() <= config.max_events, "more than max_events held");
        expect(r->held_bytes() <= config.max_bytes, "more than max_bytes held");
        std::map<std::pair<std::string, std::uint32_t>, std::vector<int>> ahead;  // per fifo
        for (const auto& [k, h] : s.held) {
            const message& m = msg(h.message);
            // A push may hold an event already due: the next advance_watermark() releases it.
            if (call != call_kind::push) {
                expect(deadline(h) > r->watermark(), "an event held past its deadline");
            }
            std::vector<int>& before = ahead[{m.key, m.partition}];
            bool blocked = false;
            for (const int id : before) blocked = blocked || must_precede(msg(id), m);
            if (!blocked && m.st && !h.late) {
                blocked = s.episodes[episode_of(m.st)].lowest_open < m.st.sequence;
            }
            if (!blocked) fail("message " + std::to_string(h.message) + " could go, yet is held");
            before.push_back(h.message);
        }
    }

    // Episodes the resequencer forgot (it counts them; a checkpoint lists the remembered ones)
    // start afresh in the model too.
    void forget(std::uint64_t& seen_forgotten) {
        if (r->stats().forgotten_episodes == seen_forgotten) return;
        seen_forgotten = r->stats().forgotten_episodes;
        std::set<episode_id> remembered;
        for (const auto& e : r->checkpoint().episodes) {
            remembered.insert(episode_id{e.producer, e.lane, e.episode});
        }
        for (auto& [id, v] : s.episodes) {
            if (remembered.count(id) != 0) continue;
            if (trace) {
                std::fprintf(stderr, "  forgotten (%llu,%u,%llu)\n",
                             static_cast<unsigned long long>(std::get<0>(id)), std::get<1>(id),
                             static_cast<unsigned long long>(std::get<2>(id)));
            }
            expect(v.held.empty(), "an episode forgotten while it holds events");
            const int generation = v.generation + 1;
            v = episode_view{};
            v.generation = generation;
        }
    }

    // Before a push: what the rules allow for it.
    enum class expected { new_event, late, copy, duplicate };
    [[nodiscard]] auto classify(const message& m) -> expected {
        if (s.taken_offsets.count({m.partition, m.offset}) != 0) return expected::duplicate;
        if (!m.st) return expected::new_event;
        const episode_view& v = s.episodes[episode_of(m.st)];
        const std::uint64_t q = m.st.sequence;
        if (v.held.count(q) != 0) return expected::duplicate;  // held in order: known
        if (v.delivered.count(q) != 0) return expected::copy;
        bool held_late = false;
        for (const auto& [k, h] : s.held) {
            held_late = held_late || (h.late && msg(h.message).st == m.st);
        }
        if (held_late) return expected::copy;
        if (v.given_up.count(q) != 0) return expected::late;
        return expected::new_event;
    }

    void take(int id, const message& m, bool late, bool second, bool delivered, ms time) {
        s.taken_offsets.insert({m.partition, m.offset});
        if (m.st) s.taken_stamps.insert(stamp_of(m.st));
        ++s.serial;
        if (delivered) return;
        s.held.emplace(s.serial, held_item{id, late, second, time});
        if (m.st && !late) s.episodes[episode_of(m.st)].held.insert(m.st.sequence);
    }
};

struct case_options {
    std::uint32_t partitions = 2;
    int events = 100;
    bool retries = false;
    bool rereads = false;
    bool alternate = false;
    int restarts = 0;
};

auto random_config(std::mt19937_64& rng) -> keyroute::resequencer_config {
    keyroute::resequencer_config c;
    const auto pick = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
    switch (pick(4)) {
    case 0: c.max_events = 1 + pick(3); break;
    case 1: c.max_events = 4 + pick(60); break;
    default: c.max_events = 100000; break;
    }
    c.max_bytes = pick(4) == 0 ? 8 + pick(64) : std::size_t{1} << 20U;
    const std::int64_t delays[] = {0, 3, 20, 200, 1000000};
    c.max_delay = ms(delays[pick(5)]);
    c.on_full = pick(2) == 0 ? keyroute::full_policy::release_early : keyroute::full_policy::refuse;
    if (pick(3) == 0) {
        c.episode_ttl = ms(static_cast<std::int64_t>(pick(50)));
        c.max_idle_episodes = 1 + pick(4);
    }
    return c;
}

// One generated case: returns the number of model failures.
auto run_case(std::uint64_t seed, const case_options& o) -> int {
    std::mt19937_64 rng(seed);
    const auto pick = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
    const workload w = produce(rng, o.partitions, o.events, o.retries, o.alternate);
    const keyroute::resequencer_config config = random_config(rng);
    INFO("seed " << seed << ", partitions " << o.partitions << ", events " << o.events
                 << ", alternate " << o.alternate << ", max_events " << config.max_events
                 << ", max_bytes " << config.max_bytes << ", max_delay " << config.max_delay.count()
                 << ", refuse " << (config.on_full == keyroute::full_policy::refuse) << ", ttl "
                 << config.episode_ttl.count() << ", idle " << config.max_idle_episodes);
    oracle model(w, config);
    const auto make = [&] {
        auto fresh = std::make_unique<reseq>(
            config, [&](keyroute::delivery<int>&& d) { model.on_delivery(d); },
            [&](const keyroute::gap_report& g) { model.on_gap(g); }, event_size{&w});
        model.r = fresh.get();
        return fresh;
    };
    std::unique_ptr<reseq> r = make();

    std::vector<double> weight(o.partitions);
    for (double& x : weight) x = pick(4) == 0 ? 0.02 : 1.0 + static_cast<double>(pick(10));
    for (const std::uint32_t p : w.lagging) weight[p] = 0.005;
    std::vector<std::size_t> position(o.partitions, 0);
    auto now = static_cast<std::int64_t>(pick(1000));
    std::uint64_t forgotten = 0;
    int restarts_left = o.restarts;
    std::optional<std::pair<keyroute::resequencer_checkpoint, oracle_state>> saved;
    int crash_in = -1;

    const auto advance = [&](call_kind kind, std::int64_t to) {
        model.call = kind;
        model.due_at_start = false;
        for (const auto& [k, h] : model.s.held) {
            model.due_at_start = model.due_at_start || model.deadline(h) <= ms(to);
        }
        if (model.trace)
            std::fprintf(stderr, "%s %lld\n", kind == call_kind::flush ? "flush" : "watermark",
                         static_cast<long long>(to));
        if (kind == call_kind::flush) {
            r->flush();
        } else {
            r->advance_watermark(ms(to));
        }
        model.forget(forgotten);
        model.after_call();
        if (kind == call_kind::flush) model.expect(r->held_events() == 0, "held after flush");
    };

    // One message, pushed (again, while refused) until taken or answered duplicate.
    const auto push = [&](int id) {
        const message& m = w.messages[static_cast<std::size_t>(id)];
        for (int attempt = 0;; ++attempt) {
            const oracle::expected e = model.classify(m);
            model.pushing = id;
            model.pushing_late = e == oracle::expected::late || e == oracle::expected::copy;
            model.pushing_second = e == oracle::expected::copy;
            model.pushing_delivered = false;
            model.call = call_kind::push;
            if (model.trace) {
                std::fprintf(stderr, "push #%d %s p%u@%lld t%lld (%llu,%u,%llu) seq %llu: %d\n", id,
                             m.key.c_str(), m.partition, static_cast<long long>(m.offset),
                             static_cast<long long>(now),
                             static_cast<unsigned long long>(m.st.producer), m.st.lane,
                             static_cast<unsigned long long>(m.st.episode),
                             static_cast<unsigned long long>(m.st.sequence), static_cast<int>(e));
            }
            const push_result res =
                r->push(m.key, m.st, id, keyroute::origin{m.partition, m.offset}, ms(now));
            model.pushing = -1;
            if (model.trace) std::fprintf(stderr, "  -> %d\n", static_cast<int>(res));
            if (res == push_result::duplicate) {
                // Its event taken before: by offset, or by stamp (the resequencer may still
                // know the stamp, or the offset of a copy answered duplicate, when the model's
                // view of the episode started afresh).
                const bool taken = e == oracle::expected::duplicate ||
                                   e == oracle::expected::copy ||
                                   (m.st && model.s.taken_stamps.count(stamp_of(m.st)) != 0);
                model.expect(taken, "duplicate for an event never taken");
                model.expect(!model.pushing_delivered, "a duplicate was delivered");
            } else if (res == push_result::refused) {
                model.expect(e != oracle::expected::duplicate, "refused a known duplicate");
                model.expect(config.on_full == keyroute::full_policy::refuse,
                             "refused under release_early");
                model.expect(!model.pushing_delivered, "a refused event was delivered");
            } else {
                model.expect(e != oracle::expected::duplicate,
                             "accepted an event it knew was taken before");
                model.take(id, m, model.pushing_late, model.pushing_second, model.pushing_delivered,
                           ms(now));
            }
            model.forget(forgotten);
            model.after_call();
            if (res != push_result::refused) return;
            // Refused: let time pass (what is due goes), then flush if it must.
            if (attempt == 0) {
                now += config.max_delay.count() + 1;
                advance(call_kind::watermark, now);
            } else {
                REQUIRE(attempt < 2);
                advance(call_kind::flush, now);
            }
        }
    };

    const auto unread = [&] {
        for (std::uint32_t p = 0; p < o.partitions; ++p) {
            if (position[p] < w.logs[p].size()) return true;
        }
        return false;
    };
    while (unread() && model.failures == 0) {
        // Lagging partitions (weight 0.02) are read mostly at the end.
        double total = 0;
        for (std::uint32_t p = 0; p < o.partitions; ++p) {
            if (position[p] < w.logs[p].size()) total += weight[p];
        }
        double x = std::uniform_real_distribution<double>(0, total)(rng);
        std::uint32_t part = 0;
        for (std::uint32_t p = 0; p < o.partitions; ++p) {
            if (position[p] >= w.logs[p].size()) continue;
            part = p;
            if ((x -= weight[p]) < 0) break;
        }
        push(w.logs[part][position[part]++]);
        now += static_cast<std::int64_t>(pick(4));
        if (pick(4) == 0) advance(call_kind::watermark, now);
        if (o.rereads && pick(200) == 0) {  // a rebalance: the partition is read again from back
            position[part] -= std::min<std::size_t>(position[part], 1 + pick(8));
        }
        if (saved && --crash_in <= 0) {
            // The crash: what was delivered since the checkpoint is not committed. A new
            // resequencer restores the checkpoint and each partition is read again from its
            // committable offset.
            model.s = saved->second;
            for (const auto& [k, h] : model.s.held) {
                const message& m = model.msg(h.message);
                model.s.taken_offsets.erase({m.partition, m.offset});
                // A held event is taken again when re-read; a late one stays given up.
                if (m.st) {
                    bool copy_delivered =
                        model.s.episodes[episode_of(m.st)].delivered.count(m.st.sequence) != 0;
                    if (!copy_delivered) model.s.taken_stamps.erase(stamp_of(m.st));
                    model.s.episodes[episode_of(m.st)].held.erase(m.st.sequence);
                }
            }
            model.s.held.clear();
            r = make();
            forgotten = 0;
            r->restore(saved->first);
            model.forget(forgotten);
            model.after_call();
            for (std::uint32_t p = 0; p < o.partitions; ++p) {
                const auto c = r->committable_offset(p);
                position[p] = c ? static_cast<std::size_t>(*c) : 0;
            }
            saved.reset();
        } else if (!saved && restarts_left > 0 &&
                   pick(static_cast<std::uint64_t>(o.events) / 2) == 0) {
            --restarts_left;
            saved.emplace(r->checkpoint(), model.s);
            crash_in = static_cast<int>(pick(40));
        }
    }
    if (model.failures == 0) advance(call_kind::flush, now);
    // Every event in the committed output.
    for (int e = 0; e < w.events && model.failures == 0; ++e) {
        if (model.s.committed.count(e) == 0) model.fail("event " + std::to_string(e) + " lost");
    }
    return model.failures;
}

// Options drawn from the seed: partitions 2 to 64, 50 to 650 events.
auto options_for(std::uint64_t seed, bool faults) -> case_options {
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL);
    case_options o;
    o.partitions = 2 + static_cast<std::uint32_t>(rng() % 63);
    o.events = 50 + static_cast<int>(rng() % 600);
    o.retries = faults && rng() % 2 == 0;
    o.rereads = faults && rng() % 2 == 0;
    o.restarts = faults ? static_cast<int>(rng() % 3) : 0;
    if (rng() % 4 == 0) {
        o.alternate = true;
        o.events = 600 + static_cast<int>(rng() % 900);
    }
    return o;
}

}  // namespace

TEST_CASE("oracle: random interleavings of 2 to 64 partitions, delays and buffer pressure",
          "[ordering][resequencer][oracle]") {
    // KEYROUTE_ORACLE_SEED=n runs case n alone (with KEYROUTE_ORACLE_TRACE, every call).
    if (const char* one = std::getenv("KEYROUTE_ORACLE_SEED")) {
        const std::uint64_t seed = std::stoull(one);
        CHECK(run_case(seed, options_for(seed, seed > 1000)) == 0);
        return;
    }
    int failed = 0;
    for (std::uint64_t seed = 1; seed <= 200 && failed < 3; ++seed) {
        const int f = run_case(seed, options_for(seed, false));
        CHECK(f == 0);
        failed += f != 0 ? 1 : 0;
    }
}

TEST_CASE("oracle: re-reads by offset, retries by stamp and restarts from checkpoints",
          "[ordering][resequencer][oracle]") {
    int failed = 0;
    for (std::uint64_t seed = 1001; seed <= 1200 && failed < 3; ++seed) {
        const int f = run_case(seed, options_for(seed, true));
        CHECK(f == 0);
        failed += f != 0 ? 1 : 0;
    }
    // Found by wider sweeps: 7000246, an oversized retry that closes a waiting cycle.
    for (const std::uint64_t seed : {7000246ULL})
        CHECK(run_case(seed, options_for(seed, true)) == 0);
}
