#pragma once

/// @file
/// detail::planner: the closed loop that places hot keys. Every few thousand events (and at the
/// start of each window, when a lane proves a key it has not seen proven, and when a partition
/// goes down or comes back) one lane, never waiting for another, runs a plan:
/// 1. measure: over the lanes, the window's events so far, each partition's load and its load
///    from untracked keys, each tracked key's count;
/// 2. estimate what the rest of the window brings: its events from the recent rate against event
///    time, each partition's untracked share and each key's share, from the recent interval
///    blended with what earlier plans measured (the first plan of a window starts from the last
///    plan of the window before);
/// 3. room: every partition should end the window at the level (fill_level.hpp, corrected from
///    window to window) times the mean; its room is that less what it already has, less what its
///    untracked keys will add, less what tracked keys that are not proven yet (fewer events than
///    the threshold in this window) will send home;
/// 4. water-fill the proven keys' expected volumes into that room (water_fill.hpp) and publish
///    the pieces (plan.hpp).
/// A key whose estimate was wrong, a partition that got more than planned, late events: all show
/// up as load in the next measurement and are corrected by the next plan. A key that turns hot
/// between plans is placed at once into the room the last plan left (place_new).
///
/// The threshold: a key is spread only once its exact count in the window passes it, so a key
/// with fewer events than it (in particular, under a tenth of the mean) never leaves home. In
/// automatic mode it is auto_fraction of the per-partition mean of the previous window (or of
/// this one, once it has seen more), plus three standard deviations of a count that size; in a
/// router's first window, whose rate is not known yet, of twice the projected volume. It never
/// falls below min_threshold and only grows within a window.

#include "availability.hpp"
#include "fill_level.hpp"
#include "key_table.hpp"
#include "lanes.hpp"
#include "plan.hpp"
#include "water_fill.hpp"
#include "window_clock.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

namespace keyroute::detail {

struct planner_config {
    std::uint32_t partitions = 1;
    std::uint32_t slots = 8;
    std::uint64_t threshold = 0;  // 0: automatic
    double auto_fraction = 0.10;
    std::uint64_t min_threshold = 32;
    std::uint32_t run_length = 32;
};

class planner {
public:
    static constexpr std::uint64_t unplanned = std::numeric_limits<std::uint64_t>::max();
    /// How far over the level a key's pieces may be filled, over the mean, before the key takes
    /// one more partition.
    static constexpr double overfill = 0.03;

    explicit planner(const planner_config& c)
        : m_c(c),
          m_min_gap(std::max<std::uint64_t>(256, 8ULL * (c.partitions + c.slots))),
          m_gap(m_min_gap),
          m_parts(std::make_unique<part[]>(c.partitions)),
          m_room(std::make_unique<double[]>(c.partitions)),
          m_keys(std::make_unique<key[]>(c.slots)),
          m_demands(std::make_unique<demand[]>(c.slots)),
          m_placed(std::make_unique<bool[]>(c.slots)),
          m_fill(c.partitions, c.slots, plan_capacity(c.partitions, c.slots)) {}

    /// Pieces a plan may hold: a key's pieces fill whole rooms but its last, so a plan holds
    /// about a piece per partition and one more per key, and the partitions keys kept from
    /// earlier plans of the window.
    [[nodiscard]] static constexpr auto plan_capacity(std::uint32_t partitions,
                                                      std::uint32_t slots) noexcept
        -> std::uint32_t {
        return 2U * partitions + slots;
    }
    [[nodiscard]] static constexpr auto bytes(std::uint32_t partitions,
                                              std::uint32_t slots) noexcept -> std::size_t {
        return std::size_t{partitions} * (sizeof(part) + sizeof(double)) +
               std::size_t{slots} * (sizeof(key) + sizeof(demand) + sizeof(bool)) +
               water_filler::bytes(partitions, slots, plan_capacity(partitions, slots));
    }

    // ---- read on the route path ----------------------------------------------------------------

    /// The count a key must pass in window w to be spread; `unplanned` until w's first plan.
    [[nodiscard]] auto threshold(std::int64_t w) const noexcept -> std::uint64_t {
        if (m_level_window.load(std::memory_order_acquire) != w) return unplanned;
        return m_threshold.load(std::memory_order_relaxed);
    }
    [[nodiscard]] auto run_length() const noexcept -> std::uint32_t {
        return m_run.load(std::memory_order_relaxed);
    }
    /// Mean gap between the untracked events that the admission sampler draws.
    [[nodiscard]] auto sample_gap() const noexcept -> std::uint32_t {
        return m_sample_gap.load(std::memory_order_relaxed);
    }
    /// The threshold of the last plan, whichever window it was for (0 before any): keys under it
    /// may be pushed out of the table by newcomers.
    [[nodiscard]] auto last_threshold() const noexcept -> std::uint64_t {
        const std::uint64_t t = m_threshold.load(std::memory_order_relaxed);
        return t == unplanned ? 0 : t;
    }
    /// The level the latest plan filled partitions to, over the mean (fill_level.hpp).
    [[nodiscard]] auto level() const noexcept -> double { return m_level.published(); }
    /// Plans made so far, modulo 2^32 (key_table's eviction grace counts them).
    [[nodiscard]] auto plans() const noexcept -> std::uint32_t {
        return m_plans.load(std::memory_order_relaxed);
    }
    /// A lane proved a key (its own count passed the threshold) that no plan has seen proven:
    /// plan soon.
    void request() noexcept { m_request.store(true, std::memory_order_relaxed); }

    /// Whether a lane in window w should run a plan now (it asks every few dozen events).
    [[nodiscard]] auto due(std::int64_t w, const lane_registry& lanes,
                           const availability& avail) const noexcept -> bool {
        if (m_level_window.load(std::memory_order_acquire) != w) return true;
        if (avail.changes() != m_seen_changes.load(std::memory_order_relaxed)) return true;
        const std::uint64_t since =
            events_in(w, lanes) - m_last_events.load(std::memory_order_relaxed);
        const std::uint64_t gap = m_gap.load(std::memory_order_relaxed);
        return since >= gap || (m_request.load(std::memory_order_relaxed) && since >= gap / 8U);
    }

    /// Does nothing: run()'s default `before_publish`.
    struct no_hook {
        void operator()() const noexcept {}
    };

    /// Runs one plan for window w, unless another thread is running one (then returns at once).
    /// `before_publish` is called with the new plan written and not yet published (a test seam:
    /// the router passes its Traits::point).
    template <class Hook = no_hook>
    void run(std::int64_t w, lane_registry& lanes, key_table& table, plan_store& plans,
             const window_clock& clock, const availability& avail,
             const Hook& before_publish = Hook{}) noexcept {
        if (m_busy.exchange(true, std::memory_order_acquire)) return;
        if (w >= m_window) {  // never plan a window the router has left
            m_seen_changes.store(avail.changes(), std::memory_order_relaxed);
            m_request.store(false, std::memory_order_relaxed);
            m_window_start = w != m_window;
            if (m_window_start) start_window(w, lanes);
            const std::int64_t latest = measure(w, lanes, table);
            const double phi = clock.position(latest, w);
            estimate(phi);
            m_level.note(
                m_c.partitions, static_cast<double>(m_events) / m_c.partitions, phi,
                [&](std::uint32_t p) { return m_room[p]; },
                [&](std::uint32_t p) { return static_cast<double>(m_parts[p].cold_last); });
            make_room(w, table);
            place(w, table, plans, avail, before_publish);
            table.rebuild_filter();
            publish(w);
        }
        m_busy.store(false, std::memory_order_release);
    }

    /// A lane proved the key in `slot` (home `home`, `share` of the lane's events since it first
    /// counted it) and the published plan has no pieces for it: places it at once, largest room
    /// first, in the room the last plan left, so a key that turns hot mid-window is spread at its
    /// own rate before the next plan measures it. Skipped if another thread is planning.
    void place_new(std::int64_t w, std::uint32_t slot, std::uint32_t home, double share,
                   key_table& table, plan_store& plans) noexcept {
        if (m_busy.exchange(true, std::memory_order_acquire)) return;
        key_table::entry& e = table.at(slot);
        if (w == m_window && m_level_window.load(std::memory_order_relaxed) == w &&
            !key_table::spread_in(e, w) && home < m_c.partitions) {
            demand d{slot, home, static_cast<float>(share * m_rest),
                     e.order.load(std::memory_order_relaxed)};
            m_fill.fill(
                m_room.get(), &d, 1, fill_options(false), [](std::uint32_t, const auto&) {},
                [&](const demand&, const piece_list& all) {
                    const piece_list pieces = fitting(all, plans.capacity() - plans.used());
                    const std::uint32_t count = pieces.size();
                    if (count > 1 || (count == 1 && pieces[0].partition != home)) {
                        write_pieces(pieces,
                                     [&](std::uint32_t j, std::uint32_t p, std::uint32_t end) {
                                         plans.append_piece(j, p, end);
                                     });
                        plans.assign_appended(slot, count);
                        e.spread.store(window_tag(w), std::memory_order_relaxed);
                    }
                });
            e.proven.store(window_tag(w), std::memory_order_relaxed);
        }
        m_busy.store(false, std::memory_order_release);
    }

    /// Events routed in window w so far, over the lanes.
    [[nodiscard]] static auto events_in(std::int64_t w, const lane_registry& lanes) noexcept
        -> std::uint64_t {
        std::uint64_t e = 0;
        for (std::uint32_t i = 0; i < lanes.count(); ++i) {
            const lane& ln = lanes.at(i);
            if (ln.window.load(std::memory_order_acquire) == w) e += ln.routed_in_window();
        }
        return e;
    }

private:
    struct part {
        std::uint64_t cold_last = 0;  // events of untracked keys at the last plan
        float cold_rate = 0;          // their share of the events
    };
    struct key {
        std::uint32_t count = 0;  // this window, over the lanes
        std::uint32_t count_last = 0;
        std::uint64_t seen = 0;  // the lanes' events since each first counted it
        std::uint32_t incarnation = 0;
        float rate = -1;  // share of the events; < 0: not measured yet
    };

    void start_window(std::int64_t w, const lane_registry& lanes) noexcept {
        std::uint64_t prev = 0;
        for (std::uint32_t i = 0; i < lanes.count(); ++i) {
            const lane& ln = lanes.at(i);
            if (ln.window.load(std::memory_order_acquire) == w - 1) {
                prev += ln.routed_in_window();
            } else if (ln.prev_window.load(std::memory_order_relaxed) == w - 1) {
                prev += ln.prev_events.load(std::memory_order_relaxed);
            }
        }
        m_prev_events = m_window == w - 1 ? prev : 0;
        m_level.next_window(m_window == w - 1);
        m_window = w;
        m_events_last = 0;
        m_events_before = 0;
        m_phi_last = 0;
        m_t = 0;
        for (std::uint32_t p = 0; p < m_c.partitions; ++p) m_parts[p].cold_last = 0;
        for (std::uint32_t s = 0; s < m_c.slots; ++s) m_keys[s].count_last = 0;
    }

    /// Sums the lanes' counters for window w (partition loads into m_room, untracked events per
    /// partition and key counts into their rates); returns the latest event time among them.
    auto measure(std::int64_t w, const lane_registry& lanes, const key_table& table) noexcept
        -> std::int64_t {
        m_events = events_in(w, lanes);
        std::int64_t latest = std::numeric_limits<std::int64_t>::min();
        for (std::uint32_t i = 0; i < lanes.count(); ++i) {
            const lane& ln = lanes.at(i);
            if (ln.window.load(std::memory_order_acquire) == w)
                latest = std::max(latest, ln.latest.load(std::memory_order_relaxed));
        }
        const auto de = static_cast<double>(m_events - std::min(m_events, m_events_last));
        m_interval = de;
        const double prior = static_cast<double>(m_gap.load(std::memory_order_relaxed)) / 2;
        // Recent shares, blended with what earlier plans measured (a prior worth half a gap of
        // events), so one short interval does not swing a key's plan.
        const auto blend = [&](double recent, float before) {
            return static_cast<float>((recent + prior * static_cast<double>(before)) /
                                      std::max(de + prior, 1.0));
        };
        for (std::uint32_t p = 0; p < m_c.partitions; ++p) {
            std::uint64_t cold = 0;
            std::uint64_t load = 0;
            for (std::uint32_t i = 0; i < lanes.count(); ++i) {
                const lane& ln = lanes.at(i);
                if (ln.window.load(std::memory_order_relaxed) != w) continue;
                const std::uint32_t c = ln.cold[p].load(std::memory_order_relaxed);
                cold += c;
                load += c + std::uint64_t{ln.tracked[p].load(std::memory_order_relaxed)};
            }
            part& x = m_parts[p];
            x.cold_rate =
                blend(static_cast<double>(cold - std::min(cold, x.cold_last)), x.cold_rate);
            x.cold_last = cold;
            m_room[p] = static_cast<double>(load);
        }
        for (std::uint32_t s = 0; s < m_c.slots; ++s) {
            key& k = m_keys[s];
            const std::uint32_t inc = table.at(s).incarnation.load(std::memory_order_relaxed);
            if (inc != k.incarnation || !table.live(s)) {
                k.incarnation = inc;
                k.count_last = 0;
                k.rate = -1;
            }
            k.count = 0;
            k.seen = 0;
        }
        for (std::uint32_t i = 0; i < lanes.count(); ++i) {
            const lane& ln = lanes.at(i);
            if (ln.slots == nullptr || ln.window.load(std::memory_order_acquire) != w) continue;
            for (std::uint32_t s = 0; s < m_c.slots; ++s) {
                const lane_slot& ls = ln.slots[s];
                if (ls.incarnation.load(std::memory_order_relaxed) == m_keys[s].incarnation) {
                    m_keys[s].count = static_cast<std::uint32_t>(std::min<std::uint64_t>(
                        std::uint64_t{m_keys[s].count} + ls.count.load(std::memory_order_relaxed),
                        0xffffffffU));
                    m_keys[s].seen += static_cast<std::uint32_t>(ln.routed_in_window()) -
                                      ls.first_seen.load(std::memory_order_relaxed);
                }
            }
        }
        for (std::uint32_t s = 0; s < m_c.slots; ++s) {
            key& k = m_keys[s];
            const double dk = k.count - std::min(k.count, k.count_last);
            // Admitted during the interval: its rate since the lanes first counted it (a key that
            // turns hot mid-window is sized by what it does since, not over the whole interval),
            // from its count taken one standard deviation low: a key seen once in its lane's last
            // event is not taken for all of the traffic (its demand would take the room of
            // hundreds of partitions), and a key of hundreds of events is barely affected.
            const double since = std::min(de, static_cast<double>(k.seen));
            const double sure = std::max(0.0, dk - std::sqrt(dk));
            k.rate =
                k.rate < 0 ? static_cast<float>(since > 0 ? sure / since : 0) : blend(dk, k.rate);
            k.count_last = k.count;
        }
        m_events_last = m_events;
        return latest;
    }

    /// The rest of the window and the threshold, given how far into it the latest event is.
    void estimate(double phi) noexcept {
        const auto e = static_cast<double>(m_events);
        const double de = e - static_cast<double>(m_events_before);
        const double dphi = phi - m_phi_last;
        double per_window = 0;  // events per whole window at the recent rate
        if (dphi > 1.0 / 256 && de > 0) {
            per_window = de / dphi;
        } else if (phi > 1.0 / 64 && e > 0) {
            per_window = e / phi;
        } else if (m_prev_events > 0) {
            per_window = static_cast<double>(m_prev_events);
        } else {
            per_window = std::max(e, 1.0) * 16;  // nothing known yet: expect much more to come
        }
        const auto gap = static_cast<double>(m_gap.load(std::memory_order_relaxed));
        m_rest = std::max(per_window * (1.0 - std::min(phi, 1.0)), gap);
        m_end = e + m_rest;
        m_phi_last = phi;
        m_events_before = m_events;
        if (m_c.threshold != 0) {
            m_t = m_c.threshold;
            return;
        }
        const double volume =
            m_prev_events > 0 ? std::max(e, static_cast<double>(m_prev_events)) : 2.0 * m_end;
        // Three standard deviations over the line: a producer whose share of the traffic is
        // random (one of several) must not prove a key on a lucky draw.
        const double line = m_c.auto_fraction * volume / m_c.partitions;
        const auto t = static_cast<std::uint64_t>(std::min(line + 3.0 * std::sqrt(line), 1e18));
        m_t = std::max({m_t, t, m_c.min_threshold});
    }

    [[nodiscard]] auto expected_volume(const key& k) const noexcept -> std::uint64_t {
        const double rest = k.rate > 0 ? static_cast<double>(k.rate) * m_rest : 0.0;
        return k.count + static_cast<std::uint64_t>(std::min(rest, 1e18));
    }

    /// A group whose slots all hold keys that may not be given up while a key with volume is
    /// refused again and again: its smallest key is kept home from now on (retired), so its
    /// lanes close their stretches and its slot can go to the newcomer at its next draw, if the
    /// newcomer is the larger, as its refusals tell (each is about a sample gap of its events,
    /// over the interval since the last plan: scaled to the window, its volume).
    void make_room(std::int64_t w, key_table& table) noexcept {
        const auto gap = static_cast<double>(m_sample_gap.load(std::memory_order_relaxed));
        const double scale = m_end / std::max(m_interval, 1.0);
        for (std::uint32_t g = 0; g < table.groups(); ++g) {
            const std::uint32_t refusals = table.pressure(g);
            if (refusals < 3) continue;
            table.clear_pressure(g);
            std::uint32_t smallest = key_table::npos;
            for (std::uint32_t s = g * key_table::group; s < (g + 1U) * key_table::group; ++s) {
                if (!table.live(s) || key_table::retired_in(table.at(s), w)) continue;
                if (smallest == key_table::npos ||
                    expected_volume(m_keys[s]) < expected_volume(m_keys[smallest]))
                    smallest = s;
            }
            if (smallest != key_table::npos &&
                refusals * gap * scale >
                    2.0 * static_cast<double>(expected_volume(m_keys[smallest])))
                table.at(smallest).retired.store(window_tag(w), std::memory_order_relaxed);
        }
    }

    /// Rooms, demands, the fill, and the plan written.
    template <class Hook>
    void place(std::int64_t w, key_table& table, plan_store& plans, const availability& avail,
               const Hook& before_publish) noexcept {
        const double level = m_level.level() * m_end / m_c.partitions;
        for (std::uint32_t p = 0; p < m_c.partitions; ++p) {
            m_room[p] = avail.down(p) ? -1.0
                                      : level - m_room[p] -
                                            static_cast<double>(m_parts[p].cold_rate) * m_rest;
        }
        std::uint32_t count = 0;
        for (std::uint32_t s = 0; s < m_c.slots; ++s) {
            const key& k = m_keys[s];
            if (!table.live(s) || !(k.rate > 0)) continue;
            key_table::entry& e = table.at(s);
            // Its volume as the table weighs it against a newcomer: its events in the window so
            // far and what its rate brings to the end (a key readmitted lately counts in full).
            key_table::set_volume(e, w, expected_volume(k));
            const bool proven = k.count > m_t;
            if (proven) e.proven.store(window_tag(w), std::memory_order_relaxed);
            const std::uint32_t home = e.home.load(std::memory_order_relaxed);
            if (home >= m_c.partitions) continue;
            double expected = static_cast<double>(k.rate) * m_rest;
            if (key_table::retired_in(e, w)) {  // kept home while it makes room for another key
                m_room[home] -= expected;
                continue;
            }
            if (!proven) {
                // Until it passes the threshold, the key's events go home.
                const auto need = static_cast<double>(m_t + 1U - k.count);
                if (expected <= need) {
                    m_room[home] -= expected;
                    continue;
                }
                m_room[home] -= need;
                expected -= need;
            }
            m_demands[count++] = demand{s, home, static_cast<float>(expected),
                                        e.order.load(std::memory_order_relaxed)};
        }
        raise_level(avail, count);
        // The previous plan is read in the fill's first pass, the new one written (into the
        // other buffer) as its second pass emits each key; then every slot not placed is given
        // no pieces (descriptors are shared by the two buffers: none may change before the first
        // pass has read them all).
        plans.begin();
        std::fill(m_placed.get(), m_placed.get() + m_c.slots, false);
        std::uint32_t at = 0;
        m_fill.fill(
            m_room.get(), m_demands.get(), count, fill_options(!m_window_start),
            [&](std::uint32_t slot, const auto& f) {
                plans.pieces_of(slot, [&](std::uint32_t p, double share) {
                    if (!m_window_start || share > 0) f(p);
                });
            },
            [&](const demand& d, const piece_list& all) {
                const piece_list pieces = fitting(all, plans.capacity() - at);
                const std::uint32_t n = pieces.size();
                if (n == 0 || (n == 1 && pieces[0].partition == d.home)) return;  // stays home
                write_pieces(pieces, [&](std::uint32_t j, std::uint32_t p, std::uint32_t end) {
                    plans.write_piece(at + j, p, end);
                });
                plans.assign(d.slot, at, n);
                table.at(d.slot).spread.store(window_tag(w), std::memory_order_relaxed);
                m_placed[d.slot] = true;
                at += n;
            });
        for (std::uint32_t s = 0; s < m_c.slots; ++s) {
            if (!m_placed[s]) plans.assign(s, 0, 0);
        }
        before_publish();
        plans.publish(at);
    }

    /// Where the demands need more room than the partitions have below the level (a burst the
    /// estimate missed, loads already past it), the level rises for all alike, so the keys still
    /// go where the room is largest instead of piling on their home.
    void raise_level(const availability& avail, std::uint32_t count) noexcept {
        double demand = 0;
        for (std::uint32_t i = 0; i < count; ++i)
            demand += static_cast<double>(m_demands[i].volume);
        demand *= m_level.level();
        for (int round = 0; round < 4; ++round) {
            double room = 0;
            std::uint32_t up = 0;
            for (std::uint32_t p = 0; p < m_c.partitions; ++p) {
                if (avail.down(p)) continue;
                room += std::max(m_room[p], 0.0);
                ++up;
            }
            if (up == 0 || room >= demand) return;
            const double lift = (demand - room) / up;
            for (std::uint32_t p = 0; p < m_c.partitions; ++p) {
                if (!avail.down(p)) m_room[p] += lift;
            }
        }
    }

    [[nodiscard]] auto fill_options(bool keep_empty) const noexcept -> water_filler::options {
        const double mean_rest = m_rest / m_c.partitions;
        water_filler::options o;
        o.min_piece = std::max(static_cast<double>(run_length()), 0.01 * m_end / m_c.partitions);
        o.overfill = overfill * mean_rest;
        o.bucket = 0.05 * mean_rest;
        o.keep_empty = keep_empty;
        return o;
    }

    /// The first `left` of a key's pieces (its first pass's first: home and the partitions it
    /// had), when the plan has no room for all: a key that does not fit whole is spread over
    /// fewer partitions until the next plan, rather than sent home whole.
    [[nodiscard]] static auto fitting(const piece_list& pieces, std::uint32_t left) noexcept
        -> piece_list {
        if (pieces.size() <= left) return pieces;
        const std::uint32_t first = std::min(pieces.first_count, left);
        return piece_list{pieces.first, first, pieces.grown, left - first};
    }

    /// A key's pieces as cursor ranges: piece j covers the positions up to its end, in
    /// proportion to its volume (a piece of volume 0 covers none).
    template <class Write>
    static void write_pieces(const piece_list& kp, const Write& write) noexcept {
        const std::uint32_t count = kp.size();
        double total = 0;
        for (std::uint32_t j = 0; j < count; ++j) total += static_cast<double>(kp[j].volume);
        double cum = 0;
        for (std::uint32_t j = 0; j < count; ++j) {
            cum += static_cast<double>(kp[j].volume);
            // No volume at all: the pieces share alike.
            const double share = total > 0 ? cum / total : static_cast<double>(j + 1U) / count;
            const double end =
                j + 1 == count ? 4294967295.0 : std::floor(share * 4294967296.0) - 1.0;
            write(j, kp[j].partition,
                  static_cast<std::uint32_t>(std::clamp(end, 0.0, 4294967295.0)));
        }
    }

    void publish(std::int64_t w) noexcept {
        const double mean = m_end / m_c.partitions;
        m_run.store(static_cast<std::uint32_t>(
                        std::clamp(mean / 64.0, 1.0, static_cast<double>(m_c.run_length))),
                    std::memory_order_relaxed);
        m_sample_gap.store(static_cast<std::uint32_t>(std::clamp<std::uint64_t>(m_t / 32U, 1, 64)),
                           std::memory_order_relaxed);
        m_gap.store(std::max<std::uint64_t>(m_min_gap, m_prev_events / 32U),
                    std::memory_order_relaxed);
        m_last_events.store(m_events, std::memory_order_relaxed);
        m_threshold.store(m_t, std::memory_order_relaxed);
        m_level.publish();
        m_plans.store(m_plans.load(std::memory_order_relaxed) + 1U, std::memory_order_relaxed);
        m_level_window.store(w, std::memory_order_release);
    }

    planner_config m_c;
    std::uint64_t m_min_gap;
    // Published for the lanes.
    alignas(64) std::atomic<std::int64_t> m_level_window{no_window};
    std::atomic<std::uint64_t> m_threshold{unplanned};
    std::atomic<std::uint32_t> m_run{1};
    std::atomic<std::uint32_t> m_sample_gap{1};
    std::atomic<std::uint64_t> m_gap;
    std::atomic<std::uint64_t> m_last_events{0};
    std::atomic<std::uint32_t> m_plans{0};
    std::atomic<std::uint64_t> m_seen_changes{0};
    std::atomic<bool> m_request{false};
    alignas(64) std::atomic<bool> m_busy{false};
    // The planning thread's (under m_busy).
    std::int64_t m_window = no_window;
    bool m_window_start = false;  // this plan is its window's first
    fill_level m_level;
    std::uint64_t m_prev_events = 0;
    std::uint64_t m_events = 0;
    std::uint64_t m_events_last = 0;    // at the last measurement (rates)
    std::uint64_t m_events_before = 0;  // at the last estimate (the rate against event time)
    double m_phi_last = 0;
    double m_interval = 0;  // events since the last measurement
    double m_rest = 0;
    double m_end = 0;
    std::uint64_t m_t = 0;
    std::unique_ptr<part[]> m_parts;
    std::unique_ptr<double[]> m_room;  // loads after measure(), rooms after place()
    std::unique_ptr<key[]> m_keys;
    std::unique_ptr<demand[]> m_demands;
    std::unique_ptr<bool[]> m_placed;  // [slot]: given pieces by the plan being written
    water_filler m_fill;
};

}  // namespace keyroute::detail
