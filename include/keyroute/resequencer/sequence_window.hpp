#pragma once

/// @file
/// An episode's held sequences for the resequencer: an ordered map from sequence to a 32-bit
/// value (a slot, or a tombstone), every key at or above a base (the episode's next expected
/// sequence). Keys in [base, base + width) live in a ring array indexed by the sequence itself,
/// so that the look-ups of a push and a release touch one cache line instead of a tree's path;
/// keys further ahead (any 64-bit sequence) go to a std::map, and move into the ring as the base
/// reaches them. The ring and the map's nodes come from a node_pool; the ring is returned to it
/// whenever the window holds nothing, so an idle episode keeps no ring.
///
/// Not thread-safe (one resequencer, one thread).

#include "node_pool.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <utility>

namespace keyroute::detail {

class sequence_window {
public:
    /// Keys in [base, base + width) are in the ring.
    static constexpr std::size_t width = 64;
    /// What get() returns for a sequence not held; never stored as a value.
    static constexpr std::uint32_t vacant = std::numeric_limits<std::uint32_t>::max() - 2;

    using allocator_type = pool_allocator<std::pair<const std::uint64_t, std::uint32_t>>;

    sequence_window() = default;
    explicit sequence_window(const allocator_type& alloc) : m_far(alloc) {}
    sequence_window(const sequence_window&) = delete;
    auto operator=(const sequence_window&) -> sequence_window& = delete;
    sequence_window(sequence_window&& o) noexcept
        : m_base(o.m_base),
          m_ring(o.m_ring),
          m_near(o.m_near),
          m_far(std::move(o.m_far)) {
        o.m_ring = nullptr;
        o.m_near = 0;
    }
    auto operator=(sequence_window&& o) noexcept -> sequence_window& {
        if (this != &o) {
            free_ring();
            m_base = o.m_base;
            m_ring = o.m_ring;
            m_near = o.m_near;
            m_far = std::move(o.m_far);
            o.m_ring = nullptr;
            o.m_near = 0;
        }
        return *this;
    }
    ~sequence_window() { free_ring(); }

    [[nodiscard]] auto empty() const noexcept -> bool { return m_near == 0 && m_far.empty(); }
    [[nodiscard]] auto base() const noexcept -> std::uint64_t { return m_base; }

    /// The value at `seq`, or vacant. O(1) in the ring, O(log n) beyond it.
    [[nodiscard]] auto get(std::uint64_t seq) const -> std::uint32_t {
        if (seq < m_base) return vacant;
        if (seq - m_base < width) return m_ring == nullptr ? vacant : (*m_ring)[pos(seq)];
        const auto it = m_far.find(seq);
        return it == m_far.end() ? vacant : it->second;
    }

    /// Adds `seq`. @pre seq >= base(), seq is not held, value != vacant.
    void insert(std::uint64_t seq, std::uint32_t value) {
        if (seq - m_base < width) {
            if (m_ring == nullptr) take_ring();
            (*m_ring)[pos(seq)] = value;
            ++m_near;
        } else {
            m_far.emplace(seq, value);
        }
    }

    /// Replaces the value of `seq`. @pre seq is held, value != vacant.
    void assign(std::uint64_t seq, std::uint32_t value) {
        if (seq - m_base < width) {
            (*m_ring)[pos(seq)] = value;
        } else {
            m_far.find(seq)->second = value;
        }
    }

    /// Removes `seq`. @pre seq is held.
    void erase(std::uint64_t seq) {
        if (seq - m_base < width) {
            (*m_ring)[pos(seq)] = vacant;
            if (--m_near == 0) free_ring();
        } else {
            m_far.erase(seq);
        }
    }

    /// The lowest held sequence and its value; false if empty. O(width) at worst.
    [[nodiscard]] auto first(std::uint64_t& seq, std::uint32_t& value) const -> bool {
        if (m_near != 0) {
            for (std::uint64_t s = m_base;; ++s) {
                const std::uint32_t v = (*m_ring)[pos(s)];
                if (v != vacant) {
                    seq = s;
                    value = v;
                    return true;
                }
            }
        }
        if (m_far.empty()) return false;
        seq = m_far.begin()->first;
        value = m_far.begin()->second;
        return true;
    }

    /// Calls `f(seq, value)` in increasing sequence order until it returns true; returns
    /// whether it did.
    template <class F>
    auto find_if(F&& f) const -> bool {
        if (m_near != 0) {
            std::size_t left = m_near;
            for (std::uint64_t s = m_base; left != 0; ++s) {
                const std::uint32_t v = (*m_ring)[pos(s)];
                if (v == vacant) continue;
                --left;
                if (f(s, v)) return true;
            }
        }
        for (const auto& [s, v] : m_far) {
            if (f(s, v)) return true;
        }
        return false;
    }

    /// Moves the base up to `next`. @pre no sequence below `next` is held, next >= base().
    void rebase(std::uint64_t next) {
        m_base = next;
        if (!m_far.empty()) pull_far();
    }

private:
    using ring = std::array<std::uint32_t, width>;
    using ring_allocator = pool_allocator<ring>;
    static_assert((width & (width - 1)) == 0, "width is a power of two");

    // Moves the map's keys that the base brought within the window into the ring.
    void pull_far() {
        while (!m_far.empty() && m_far.begin()->first - m_base < width) {
            const auto it = m_far.begin();
            if (m_ring == nullptr) take_ring();
            (*m_ring)[pos(it->first)] = it->second;
            ++m_near;
            m_far.erase(it);
        }
    }

    [[nodiscard]] static auto pos(std::uint64_t seq) noexcept -> std::size_t {
        return static_cast<std::size_t>(seq & (width - 1));
    }

    void take_ring() {
        ring_allocator alloc(m_far.get_allocator());
        m_ring = alloc.allocate(1);
        m_ring->fill(vacant);
    }

    void free_ring() noexcept {
        if (m_ring == nullptr) return;
        ring_allocator alloc(m_far.get_allocator());
        alloc.deallocate(m_ring, 1);
        m_ring = nullptr;
    }

    std::uint64_t m_base = 0;
    ring* m_ring = nullptr;  // null while m_near == 0
    std::size_t m_near = 0;  // keys held in the ring
    std::map<std::uint64_t, std::uint32_t, std::less<>, allocator_type>
        m_far;  // keys >= base + width
};

}  // namespace keyroute::detail
