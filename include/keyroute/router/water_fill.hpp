#pragma once

/// @file
/// detail::water_filler: places keys' expected volumes into partitions' room, each key on as
/// few partitions as it can, the largest keys first.
///
/// Two passes, so that a placement changes little from one plan to the next:
/// 1. keep: every key, largest first, takes what it can where it is: all of it at home if home
///    has room for it (and it was not placed elsewhere before: it needs no stamps), else home's
///    room, then the room of the partitions it had in the previous plan;
/// 2. grow: every key with volume left takes more partitions, while what is left is more than
///    its pieces may take over their room (`overfill`): partitions with good room (at least
///    `good` times the largest) in the key's own order, an arithmetic progression from home that
///    every router computes alike, then the largest rooms.
/// Volume for which no partition has room is shared out over the key's pieces in proportion
/// (everything is over the level then; the next plan corrects it). Rooms under `min_piece` are
/// not taken by pass 2. O((n + pieces) log n) per fill, no allocation.

#include "../detail/mix.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>

namespace keyroute::detail {

/// One key to place: its slot (passed through), home partition, volume (events) and own order.
struct demand {
    std::uint32_t slot = 0;
    std::uint32_t home = 0;
    float volume = 0;
    std::uint32_t order = 0;  // any value; the same in every router
};

/// One piece of a key's placement.
struct piece {
    std::uint32_t partition = 0;
    float volume = 0;
};

/// A key's placement: the pieces of the first pass, then those of the second.
struct piece_list {
    piece* first;
    std::uint32_t first_count;
    piece* grown;
    std::uint32_t grown_count;
    [[nodiscard]] auto size() const noexcept -> std::uint32_t { return first_count + grown_count; }
    [[nodiscard]] auto operator[](std::uint32_t i) const noexcept -> piece& {
        return i < first_count ? first[i] : grown[i - first_count];
    }
};

class water_filler {
public:
    /// Rooms at least this fraction of the largest are good enough for a key's own order.
    static constexpr double good = 0.75;

    struct options {
        double min_piece = 0;  ///< pass 2 takes no room under this
        double overfill = 0;   ///< volume a piece may take over its room before the key grows
        /// Rooms within the same multiple of this count as equal, and are taken in a fixed order
        /// of the partitions, the same in every router (so independent routers agree).
        double bucket = 1;
        /// Within a window, a key keeps its previous partitions even with no room left (a piece
        /// of volume 0), so its set of partitions only grows as its volume needs.
        bool keep_empty = false;
    };

    /// @param max_keys the most keys one fill places; @param max_pieces the most pieces
    water_filler(std::uint32_t partitions, std::uint32_t max_keys, std::uint32_t max_pieces)
        : m_n(partitions),
          m_cap(max_pieces),
          m_max_keys(max_keys),
          m_heap(std::make_unique<std::uint64_t[]>(std::size_t{partitions} + max_pieces + 1U)),
          m_pieces(std::make_unique<piece[]>(std::size_t{max_pieces} + 1U)),
          m_mark(std::make_unique<std::uint32_t[]>(partitions)),
          m_first(std::make_unique<std::uint32_t[]>(max_keys)),
          m_count(std::make_unique<std::uint32_t[]>(max_keys)),
          m_left(std::make_unique<float[]>(max_keys)) {}

    [[nodiscard]] static constexpr auto bytes(std::uint32_t partitions, std::uint32_t max_keys,
                                              std::uint32_t max_pieces) noexcept -> std::size_t {
        return (std::size_t{partitions} + max_pieces + 1U) * sizeof(std::uint64_t) +
               (std::size_t{max_pieces} + 1U) * sizeof(piece) +
               std::size_t{partitions} * sizeof(std::uint32_t) +
               std::size_t{max_keys} * (2U * sizeof(std::uint32_t) + sizeof(float));
    }

    /// Places `keys` (sorted here, largest volume first) into `room` (per partition, consumed;
    /// a room <= 0 takes nothing). For each key, `previous(slot, f)` calls f(partition) for the
    /// partitions the key had before (all calls come before the first emit); `emit(key, pieces)`
    /// receives its placement, a piece_list (empty only if no partition has any room). Keys
    /// past max_keys stay unplaced.
    template <class Previous, class Emit>
    void fill(double* room, demand* keys, std::uint32_t count, const options& o,
              const Previous& previous, const Emit& emit) {
        count = std::min(count, m_max_keys);
        std::sort(keys, keys + count,
                  [](const demand& a, const demand& b) { return a.volume > b.volume; });
        m_room = room;
        m_o = o;
        m_o.bucket = std::max(o.bucket, 1e-9);
        m_size = 0;
        m_used = 0;
        for (std::uint32_t p = 0; p < m_n; ++p) m_mark[p] = 0;
        for (std::uint32_t i = 0; i < count; ++i) {
            m_key = i + 1U;
            m_first[i] = m_used;
            m_left[i] = static_cast<float>(keep(keys[i], previous));
            m_count[i] = m_used - m_first[i];
        }
        for (std::uint32_t p = 0; p < m_n; ++p) push(p);
        for (std::uint32_t i = 0; i < count; ++i) {
            m_key = i + 1U;
            const std::uint32_t grown = m_used;
            double left = m_left[i];
            if (left > 0) left = grow(keys[i], left, m_count[i]);
            piece_list list{m_pieces.get() + m_first[i], m_count[i], m_pieces.get() + grown,
                            m_used - grown};
            if (left > 0) spread_rest(list, left, keys[i].home);
            if (keys[i].volume > 0) emit(keys[i], list);
        }
    }

private:
    /// Pass 1. Returns the volume left.
    template <class Previous>
    auto keep(const demand& k, const Previous& previous) -> double {
        if (!(k.volume > 0) || k.home >= m_n) return k.volume > 0 ? k.volume : 0;
        bool moved = false;
        previous(k.slot, [&](std::uint32_t p) { moved = moved || p != k.home; });
        if (!moved && m_room[k.home] + m_o.overfill >= static_cast<double>(k.volume)) {
            return add(k.home, k.volume) ? 0 : static_cast<double>(k.volume);
        }
        double left = take(k.home, k.volume, 0);
        // A partition the key already has costs no fan-out: any room it has is taken.
        previous(k.slot, [&](std::uint32_t p) {
            if (p >= m_n || m_mark[p] == m_key || m_used >= m_cap) return;
            if (left > 0 && m_room[p] > 0) {
                left = take(p, left, 0);
            } else if (m_o.keep_empty) {
                add(p, 0);
            }
        });
        return left;
    }

    /// Pass 2. Returns the volume left.
    auto grow(const demand& k, double left, std::uint32_t pieces) -> double {
        const std::uint32_t top = pop();
        if (top == m_n) return left;
        const double floor = std::max(good * m_room[top], m_o.min_piece);
        push(top);
        if (m_n > 1 && k.home < m_n) {
            std::uint32_t step = 1U + k.order % (m_n - 1U);
            while (std::gcd(step, m_n) != 1U) ++step;
            std::uint32_t p = k.home;
            const std::uint32_t walk = std::min<std::uint32_t>(m_n - 1U, 64U + 4U * pieces);
            for (std::uint32_t i = 0; i < walk && left > m_o.overfill * pieces && m_used < m_cap;
                 ++i) {
                p = static_cast<std::uint32_t>((std::uint64_t{p} + step) % m_n);
                if (m_mark[p] == m_key || !(m_room[p] >= floor)) continue;
                left = take(p, left, m_o.min_piece);
                push(p);
                ++pieces;
            }
        }
        while (left > m_o.overfill * pieces && m_used < m_cap) {
            const std::uint32_t p = pop();
            if (p == m_n) break;
            if (m_mark[p] == m_key) continue;  // its room went to this key already
            left = take(p, left, m_o.min_piece);
            push(p);
            ++pieces;
        }
        return left;
    }

    /// Takes up to `left` from p's room (if it has more than `least`); returns what is left.
    auto take(std::uint32_t p, double left, double least) -> double {
        if (!(m_room[p] > least)) return left;
        const double x = std::min(m_room[p], left);
        return add(p, x) ? left - x : left;
    }

    auto add(std::uint32_t p, double x) -> bool {
        if (m_used >= m_cap) return false;
        m_mark[p] = m_key;
        m_pieces[m_used++] = piece{p, static_cast<float>(x)};
        m_room[p] -= x;
        return true;
    }

    /// Volume no room holds: over the key's pieces in proportion (evenly if none has volume),
    /// or home when it has no piece.
    void spread_rest(piece_list& list, double left, std::uint32_t home) {
        double placed = 0;
        for (std::uint32_t i = 0; i < list.size(); ++i)
            placed += static_cast<double>(list[i].volume);
        if (placed > 0) {
            for (std::uint32_t i = 0; i < list.size(); ++i) {
                list[i].volume +=
                    static_cast<float>(left * static_cast<double>(list[i].volume) / placed);
            }
        } else if (list.size() > 0) {
            for (std::uint32_t i = 0; i < list.size(); ++i)
                list[i].volume = static_cast<float>(left / list.size());
        } else if (home < m_n && m_used < m_cap) {
            list.grown = m_pieces.get() + m_used;
            list.grown_count = 1;
            m_pieces[m_used++] = piece{home, static_cast<float>(left)};
        }
    }

    // A max-heap of partitions by rank: their room in buckets, then a fixed order of the
    // partitions; an entry whose rank no longer matches its partition's room is skipped when it
    // comes up (a fresher one was pushed when the room changed). Entries are rank << 20 | p.
    [[nodiscard]] auto rank(std::uint32_t p) const -> std::uint64_t {
        const double bucket = std::min(std::floor(m_room[p] / m_o.bucket), 16777215.0);
        const std::uint64_t order = (mix64(p + 0x9e3779b97f4a7c15ULL) >> 44U) & 0xfffffU;
        return (static_cast<std::uint64_t>(bucket) << 20U) | order;
    }

    void push(std::uint32_t p) {
        if (!(m_room[p] > m_o.min_piece)) return;
        std::size_t i = m_size++;
        m_heap[i] = (rank(p) << 20U) | p;
        while (i > 0) {
            const std::size_t parent = (i - 1U) / 2U;
            if (!(m_heap[parent] < m_heap[i])) break;
            std::swap(m_heap[parent], m_heap[i]);
            i = parent;
        }
    }

    /// The partition with the largest room above min_piece, or m_n.
    auto pop() -> std::uint32_t {
        while (m_size > 0) {
            const std::uint64_t top = m_heap[0];
            m_heap[0] = m_heap[--m_size];
            std::size_t i = 0;
            for (;;) {
                const std::size_t l = 2U * i + 1U;
                const std::size_t r = l + 1U;
                std::size_t best = i;
                if (l < m_size && m_heap[best] < m_heap[l]) best = l;
                if (r < m_size && m_heap[best] < m_heap[r]) best = r;
                if (best == i) break;
                std::swap(m_heap[best], m_heap[i]);
                i = best;
            }
            const auto p = static_cast<std::uint32_t>(top & 0xfffffU);
            if (p < m_n && m_room[p] > m_o.min_piece && (top >> 20U) == rank(p)) return p;
        }
        return m_n;
    }

    std::uint32_t m_n;
    std::uint32_t m_cap;
    std::uint32_t m_max_keys;
    std::unique_ptr<std::uint64_t[]> m_heap;
    std::unique_ptr<piece[]> m_pieces;
    std::unique_ptr<std::uint32_t[]> m_mark;   // [partition]: the key (m_key) with a piece there
    std::unique_ptr<std::uint32_t[]> m_first;  // per key: its first-pass pieces in m_pieces
    std::unique_ptr<std::uint32_t[]> m_count;
    std::unique_ptr<float[]> m_left;
    std::uint32_t m_key = 0;
    double* m_room = nullptr;
    options m_o;
    std::size_t m_size = 0;
    std::uint32_t m_used = 0;
};

}  // namespace keyroute::detail
