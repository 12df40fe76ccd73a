#pragma once

/// @file
/// detail::key_table: the keys a router tracks (counts exactly and may spread), shared by all
/// lanes, in memory fixed at construction.
///
/// Layout: `slots` slots in probe groups of 8 (a key lives in the one group its fingerprint
/// names); a filter of 16 bits per slot in front, so that the events of untracked keys, most of
/// them, cost one bit test; a doorkeeper of 2 fingerprints per slot behind, so that a key is
/// admitted only when the admission sampler draws it twice before another key takes its
/// doorkeeper cell (a key with a share s of the draws comes back to its cell before it is taken
/// about as often as s * cells is large: cold keys almost never do).
///
/// Invariants: a slot's fingerprint is published (release) after its other fields. A slot is
/// given to another key only when no lane has a spread stretch of its key open (each lane closes
/// its stretch, with a stamped event home, the next time it routes the key unspread), or when
/// neither a plan nor a lane spread the key in this window or the last (a lane that has not
/// routed it spread since then sends it home unstamped about a whole window after its last
/// stamped event; a lane marks the window of each run it starts, since a run may outlast its
/// plan, and a run carried into the next window is at most a run's length).
/// The filter may hold stale bits (a false positive costs a probe) and may briefly miss a key
/// admitted while it is rebuilt (its events go home unstamped until a draw finds it again); it
/// never misses a key that was spread, since such a key was admitted before the rebuild read it.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace keyroute::detail {

/// The low 32 bits of a window index: tags that tell recent windows apart.
[[nodiscard]] constexpr auto window_tag(std::int64_t w) noexcept -> std::uint32_t {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(w));
}

class key_table {
public:
    static constexpr std::uint32_t npos = 0xffffffffU;
    static constexpr std::uint32_t refused = 0xfffffffeU;  // admit(): the key's group is full
    static constexpr std::uint32_t group = 8;
    static constexpr std::size_t prefix_bytes = 24;

    /// The shared facts of one slot. Written at admission and by the planner; read by lanes.
    struct entry {
        std::atomic<std::uint32_t> incarnation{0};  // changes with each key the slot holds
        std::atomic<std::uint32_t> home{0};
        std::atomic<std::uint32_t> order{0};     // the key's own order of partitions (water_fill)
        std::atomic<std::uint32_t> proven{0};    // window tag: its count passed the threshold
        std::atomic<std::uint32_t> spread{0};    // window tag: a plan placed it off home
        std::atomic<std::uint32_t> active{0};    // window tag: a lane started a run of it (latest)
        std::atomic<std::uint32_t> admitted{0};  // the planner's plan count at admission
        std::atomic<std::uint32_t> volume{0};    // its events in window `volume_window`
        std::atomic<std::uint32_t> volume_window{0};
        std::atomic<std::uint32_t> key_len{0};
        std::atomic<std::uint32_t> key_word[prefix_bytes / 4] = {};
        // incarnation (32 bits) | lanes with a spread stretch of the key open (see evictable)
        std::atomic<std::uint64_t> open{0};
        std::atomic<std::uint32_t> retired{0};  // window tag: kept home to make room (pressure)
    };

    /// @pre slots is a power of two >= 8.
    explicit key_table(std::uint32_t slots)
        : m_slots(slots),
          m_bit_mask(std::uint64_t{slots} * 16U - 1U),
          m_door_mask(door_cells(slots) - 1U),
          m_fp(std::make_unique<std::atomic<std::uint64_t>[]>(slots)),
          m_entries(std::make_unique<entry[]>(slots)),
          m_filter(std::make_unique<std::atomic<std::uint64_t>[]>(filter_words(slots))),
          m_door(std::make_unique<std::atomic<std::uint32_t>[]>(door_cells(slots))),
          m_pending(std::make_unique<std::atomic<std::uint64_t>[]>(slots / group)),
          m_scratch(std::make_unique<std::uint64_t[]>(filter_words(slots))) {}

    [[nodiscard]] static constexpr auto filter_words(std::uint32_t slots) noexcept -> std::size_t {
        return std::size_t{slots} * 16U / 64U;
    }
    [[nodiscard]] static constexpr auto door_cells(std::uint32_t slots) noexcept -> std::size_t {
        return std::size_t{slots} * 2U;
    }
    /// Bytes allocated for `slots` slots.
    [[nodiscard]] static constexpr auto bytes(std::uint32_t slots) noexcept -> std::size_t {
        return std::size_t{slots} * (sizeof(std::atomic<std::uint64_t>) + sizeof(entry)) +
               filter_words(slots) * (sizeof(std::atomic<std::uint64_t>) + sizeof(std::uint64_t)) +
               door_cells(slots) * sizeof(std::atomic<std::uint32_t>) +
               slots / group * sizeof(std::atomic<std::uint64_t>);
    }

    [[nodiscard]] auto slots() const noexcept -> std::uint32_t { return m_slots; }
    [[nodiscard]] auto at(std::uint32_t slot) noexcept -> entry& { return m_entries[slot]; }
    [[nodiscard]] auto at(std::uint32_t slot) const noexcept -> const entry& {
        return m_entries[slot];
    }
    /// The fingerprint a slot holds (0: empty; even: being handed over).
    [[nodiscard]] auto fingerprint(std::uint32_t slot) const noexcept -> std::uint64_t {
        return m_fp[slot].load(std::memory_order_acquire);
    }
    /// Whether a slot holds a key (its fingerprint is published).
    [[nodiscard]] auto live(std::uint32_t slot) const noexcept -> bool {
        return (m_fp[slot].load(std::memory_order_acquire) & 1U) != 0;
    }

    /// The slot tracking fingerprint fp (odd: the router's fingerprints are), or npos.
    [[nodiscard]] auto find(std::uint64_t fp) const noexcept -> std::uint32_t {
        const std::uint64_t bit = (fp >> 40U) & m_bit_mask;
        const std::uint64_t word = m_filter[bit / 64U].load(std::memory_order_relaxed);
        if ((word & (std::uint64_t{1} << (bit % 64U))) == 0) return npos;
        // From the key's own place in its group: a key admitted into its place is found at the
        // first look.
        const std::uint32_t first = group_of(fp);
        const std::uint32_t start = place_of(fp);
        for (std::uint32_t i = 0; i < group; ++i) {
            const std::uint32_t s = first + ((start + i) & (group - 1U));
            if (m_fp[s].load(std::memory_order_acquire) == fp) return s;
        }
        return npos;
    }

    /// A drawn event of an untracked key: its slot if it is admitted now (or found admitted by
    /// another lane), npos if not yet (its first draw, or a lost race), refused if no slot of its
    /// group may be given up. A key takes an empty slot of its group, else the evictable slot
    /// (see evictable) with the smallest volume, if that is under `small` (a newcomer's volume
    /// is not known: a key that counts is given up only when the planner retires it to make
    /// room, see pressure). `plan` is the planner's plan count.
    auto admit(std::uint64_t fp, std::uint32_t order, std::string_view key, std::uint32_t home,
               std::int64_t w, std::uint32_t plan, std::uint64_t small) noexcept -> std::uint32_t {
        std::atomic<std::uint32_t>& cell =
            m_door[static_cast<std::size_t>(fp >> 20U) & m_door_mask];
        const auto tag = static_cast<std::uint32_t>(fp >> 32U) | 1U;
        if (cell.load(std::memory_order_relaxed) != tag) {
            cell.store(tag, std::memory_order_relaxed);
            return npos;
        }
        const std::uint32_t victim = choose_slot(fp, w, plan, small);
        if (victim == refused) note_refusal(fp);
        if (victim >= refused) return victim;
        std::uint64_t expected = m_fp[victim].load(std::memory_order_relaxed);
        if (expected == claiming || expected == fp ||
            !m_fp[victim].compare_exchange_strong(expected, claiming, std::memory_order_acquire)) {
            return npos;
        }
        entry& e = m_entries[victim];
        const std::uint32_t old = e.incarnation.load(std::memory_order_relaxed);
        if (!hand_over(e, old, w)) {
            m_fp[victim].store(expected, std::memory_order_release);  // a lane opened a stretch
            return npos;
        }
        e.home.store(home, std::memory_order_relaxed);
        e.order.store(order, std::memory_order_relaxed);
        e.proven.store(window_tag(w - 2), std::memory_order_relaxed);
        e.spread.store(window_tag(w - 2), std::memory_order_relaxed);
        e.active.store(window_tag(w - 2), std::memory_order_relaxed);
        e.admitted.store(plan, std::memory_order_relaxed);
        e.retired.store(window_tag(w - 2), std::memory_order_relaxed);
        e.volume.store(0, std::memory_order_relaxed);
        store_prefix(e, key);
        m_fp[victim].store(fp, std::memory_order_release);
        set_filter(fp);
        return victim;
    }

    /// Groups and their pressure: how often one key was refused there lately (a count that a
    /// refusal of the same key raises and of another lowers, so it names a key drawn again and
    /// again: one with volume). The planner makes room for it (retire) and clears it.
    [[nodiscard]] auto groups() const noexcept -> std::uint32_t { return m_slots / group; }
    [[nodiscard]] auto pressure(std::uint32_t g) const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(m_pending[g].load(std::memory_order_relaxed));
    }
    /// The pressure of the group `fp` belongs to.
    [[nodiscard]] auto pressure_of(std::uint64_t fp) const noexcept -> std::uint32_t {
        return pressure(group_of(fp) / group);
    }
    void clear_pressure(std::uint32_t g) noexcept {
        m_pending[g].store(0, std::memory_order_relaxed);
    }
    [[nodiscard]] static auto retired_in(const entry& e, std::int64_t w) noexcept -> bool {
        return e.retired.load(std::memory_order_relaxed) == window_tag(w);
    }

    /// Rebuilds the filter from the live slots (between rebuilds it only gains bits). One
    /// thread at a time (the planner).
    void rebuild_filter() noexcept {
        const std::size_t words = filter_words(m_slots);
        std::fill(m_scratch.get(), m_scratch.get() + words, std::uint64_t{0});
        for (std::uint32_t s = 0; s < m_slots; ++s) {
            const std::uint64_t fp = m_fp[s].load(std::memory_order_acquire);
            if ((fp & 1U) == 0) continue;  // empty or being claimed
            const std::uint64_t bit = (fp >> 40U) & m_bit_mask;
            m_scratch[bit / 64U] |= std::uint64_t{1} << (bit % 64U);
        }
        for (std::size_t i = 0; i < words; ++i)
            m_filter[i].store(m_scratch[i], std::memory_order_relaxed);
    }

    /// A lane opens a spread stretch of the key in incarnation `inc`; false if the slot holds
    /// another key by now (the lane must then route the event as untracked).
    static auto open_stretch(entry& e, std::uint32_t inc) noexcept -> bool {
        std::uint64_t v = e.open.load(std::memory_order_relaxed);
        while ((v >> 32U) == inc) {
            if (e.open.compare_exchange_weak(v, v + 1U, std::memory_order_acq_rel)) return true;
        }
        return false;
    }
    /// A lane closes its stretch (nothing happens if the slot holds another key by now).
    static void close_stretch(entry& e, std::uint32_t inc) noexcept {
        std::uint64_t v = e.open.load(std::memory_order_relaxed);
        while ((v >> 32U) == inc && (v & 0xffffffffU) != 0) {
            if (e.open.compare_exchange_weak(v, v - 1U, std::memory_order_acq_rel)) return;
        }
    }

    [[nodiscard]] static auto proven_in(const entry& e, std::int64_t w) noexcept -> bool {
        return e.proven.load(std::memory_order_relaxed) == window_tag(w);
    }
    [[nodiscard]] static auto spread_in(const entry& e, std::int64_t w) noexcept -> bool {
        return e.spread.load(std::memory_order_relaxed) == window_tag(w);
    }
    /// A lane routes the key spread in window w (a run's first event): the slot's `active` tag
    /// moves up to w (never back, for a lane still in an older window); a store only when the
    /// window changes.
    static void note_active(entry& e, std::int64_t w) noexcept {
        const std::uint32_t tag = window_tag(w);
        const std::uint32_t seen = e.active.load(std::memory_order_relaxed);
        if (static_cast<std::int32_t>(tag - seen) > 0)
            e.active.store(tag, std::memory_order_relaxed);
    }
    /// A key's volume in window w as the planner last estimated it, or in w - 1 before w's
    /// first estimate (so a key does not look empty at each window's start); 0 if neither.
    [[nodiscard]] static auto volume_in(const entry& e, std::int64_t w) noexcept -> std::uint32_t {
        const std::uint32_t tag = e.volume_window.load(std::memory_order_relaxed);
        return tag == window_tag(w) || tag == window_tag(w - 1)
                   ? e.volume.load(std::memory_order_relaxed)
                   : 0;
    }
    static void set_volume(entry& e, std::int64_t w, std::uint64_t events) noexcept {
        e.volume.store(static_cast<std::uint32_t>(std::min<std::uint64_t>(events, 0xffffffffU)),
                       std::memory_order_relaxed);
        e.volume_window.store(window_tag(w), std::memory_order_relaxed);
    }

    /// The key a slot holds, up to prefix_bytes of it, and its full length.
    [[nodiscard]] auto prefix(std::uint32_t slot, char* out) const noexcept -> std::size_t {
        const entry& e = m_entries[slot];
        for (std::size_t k = 0; k < prefix_bytes / 4; ++k) {
            const std::uint32_t word = e.key_word[k].load(std::memory_order_relaxed);
            std::memcpy(out + 4 * k, &word, 4);
        }
        return e.key_len.load(std::memory_order_relaxed);
    }

private:
    static constexpr std::uint64_t claiming = 2;  // even: never a fingerprint

    /// An empty slot of fp's group, else its evictable slot with the smallest volume (under
    /// `small`, or retired), else refused; or npos with the slot's index if fp is there already (a
    /// bit lost to a rebuild).
    auto choose_slot(std::uint64_t fp, std::int64_t w, std::uint32_t plan,
                     std::uint64_t small) noexcept -> std::uint32_t {
        const std::uint32_t first = group_of(fp);
        const std::uint32_t start = place_of(fp);
        std::uint32_t victim = refused;
        std::uint32_t victim_volume = 0xffffffffU;
        for (std::uint32_t i = 0; i < group; ++i) {
            const std::uint32_t s = first + ((start + i) & (group - 1U));
            const std::uint64_t held = m_fp[s].load(std::memory_order_acquire);
            if (held == fp) {
                set_filter(fp);
                return npos;
            }
            if (held == claiming) continue;
            std::uint32_t v = 0xffffffffU;
            if (held == 0) {
                v = 0;
            } else if (evictable(m_entries[s], w, plan)) {
                const std::uint32_t volume = volume_in(m_entries[s], w);
                if (volume < small || retired_in(m_entries[s], w))
                    v = std::min(volume, 0xfffffffdU) + 1U;
            }
            // Strictly less: of equals, the first from the key's place (an empty slot, at 0,
            // first).
            if (v < victim_volume) {
                victim = s;
                victim_volume = v;
            }
        }
        return victim_volume == 0xffffffffU ? refused : victim;
    }

    /// Evictable: measured by at least one whole plan since its admission (so a new candidate
    /// is not pushed out before it is counted), and with no stretch open or none spread in this
    /// window or the last (the file comment).
    [[nodiscard]] static auto evictable(const entry& e, std::int64_t w, std::uint32_t plan) noexcept
        -> bool {
        if (plan - e.admitted.load(std::memory_order_relaxed) < 2U) return false;
        return (e.open.load(std::memory_order_relaxed) & 0xffffffffU) == 0 || stale(e, w);
    }

    /// Neither a plan nor a lane spread the key in window w or w - 1.
    [[nodiscard]] static auto stale(const entry& e, std::int64_t w) noexcept -> bool {
        const auto recent = [w](std::uint32_t tag) {
            return tag == window_tag(w) || tag == window_tag(w - 1);
        };
        return !recent(e.spread.load(std::memory_order_relaxed)) &&
               !recent(e.active.load(std::memory_order_relaxed));
    }

    /// The slot's new incarnation, taken only if no lane opened a stretch since evictable() (a
    /// lane opens one with a compare-exchange on the same word).
    static auto hand_over(entry& e, std::uint32_t old, std::int64_t w) noexcept -> bool {
        std::uint64_t v = e.open.load(std::memory_order_relaxed);
        const bool is_stale = stale(e, w);
        const std::uint64_t next = std::uint64_t{old + 1U} << 32U;
        do {
            if ((v >> 32U) != old || ((v & 0xffffffffU) != 0 && !is_stale)) return false;
        } while (!e.open.compare_exchange_weak(v, next, std::memory_order_acq_rel));
        e.incarnation.store(old + 1U, std::memory_order_release);
        return true;
    }

    void note_refusal(std::uint64_t fp) noexcept {
        std::atomic<std::uint64_t>& p = m_pending[group_of(fp) / group];
        const std::uint64_t tag = (fp >> 32U) << 32U;
        const std::uint64_t v = p.load(std::memory_order_relaxed);
        const std::uint64_t count = v & 0xffffffffU;
        if ((v & ~std::uint64_t{0xffffffffU}) == tag) {
            p.store(tag | std::min<std::uint64_t>(count + 1U, 0xffffffffU),
                    std::memory_order_relaxed);
        } else {
            p.store(count <= 1U ? tag | 1U : v - 1U, std::memory_order_relaxed);
        }
    }

    [[nodiscard]] static constexpr auto place_of(std::uint64_t fp) noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(fp >> 4U) & (group - 1U);
    }
    [[nodiscard]] auto group_of(std::uint64_t fp) const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(fp >> 8U) & (m_slots - group);
    }
    void set_filter(std::uint64_t fp) noexcept {
        const std::uint64_t bit = (fp >> 40U) & m_bit_mask;
        m_filter[bit / 64U].fetch_or(std::uint64_t{1} << (bit % 64U), std::memory_order_relaxed);
    }
    static void store_prefix(entry& e, std::string_view key) noexcept {
        char buf[prefix_bytes] = {};
        if (!key.empty()) std::memcpy(buf, key.data(), std::min(key.size(), prefix_bytes));
        for (std::size_t k = 0; k < prefix_bytes / 4; ++k) {
            std::uint32_t word = 0;
            std::memcpy(&word, buf + 4 * k, 4);
            e.key_word[k].store(word, std::memory_order_relaxed);
        }
        e.key_len.store(static_cast<std::uint32_t>(std::min<std::size_t>(key.size(), 0xffffffffU)),
                        std::memory_order_relaxed);
    }

    std::uint32_t m_slots;
    std::uint64_t m_bit_mask;
    std::size_t m_door_mask;
    std::unique_ptr<std::atomic<std::uint64_t>[]> m_fp;
    std::unique_ptr<entry[]> m_entries;
    std::unique_ptr<std::atomic<std::uint64_t>[]> m_filter;
    std::unique_ptr<std::atomic<std::uint32_t>[]> m_door;
    std::unique_ptr<std::atomic<std::uint64_t>[]> m_pending;  // per group: key tag | count
    std::unique_ptr<std::uint64_t[]> m_scratch;               // rebuild_filter's
};

}  // namespace keyroute::detail
