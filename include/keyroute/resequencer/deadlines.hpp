#pragma once

/// @file
/// The deadlines of a resequencer's held events: a min-heap on (deadline, serial), the earliest
/// deadline first and, among equal ones, the event held first.
///
/// Deletion is lazy: an event delivered before its deadline leaves its item in the heap. The
/// owner tells a live item from a stale one by its (slot, serial) (a slot is reused under a new
/// serial), skips stale ones at the top, and calls compact() after each push, which drops them
/// once they are more than 64 and outnumber the live events four to one. So the heap holds at
/// most max(64, 4 x live) + 1 items, and a push costs O(log n) amortised.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace keyroute::detail {

template <class Time>
class deadline_heap {
public:
    struct item {
        Time deadline;
        std::uint64_t serial;  ///< the held event's serial: unique, increasing with hold order
        std::uint32_t slot;    ///< where the event is held
    };

    void push(const item& it) {
        m_items.push_back(it);
        std::push_heap(m_items.begin(), m_items.end(), later{});
    }

    /// The earliest item (stale or not). Precondition: !empty().
    [[nodiscard]] auto top() const noexcept -> const item& { return m_items.front(); }
    /// Removes top(). Precondition: !empty().
    void pop() {
        std::pop_heap(m_items.begin(), m_items.end(), later{});
        m_items.pop_back();
    }

    [[nodiscard]] auto empty() const noexcept -> bool { return m_items.empty(); }
    [[nodiscard]] auto size() const noexcept -> std::size_t { return m_items.size(); }

    /// Drops the items `live(item)` says are stale, when they are more than 64 and four times
    /// `live_count` (the events held).
    template <class Live>
    void compact(std::size_t live_count, Live live) {
        if (m_items.size() < 64 || m_items.size() < 4 * live_count) return;
        m_items.erase(std::remove_if(m_items.begin(), m_items.end(),
                                     [&](const item& it) { return !live(it); }),
                      m_items.end());
        std::make_heap(m_items.begin(), m_items.end(), later{});
    }

private:
    struct later {
        auto operator()(const item& a, const item& b) const noexcept -> bool {
            return a.deadline != b.deadline ? a.deadline > b.deadline : a.serial > b.serial;
        }
    };
    std::vector<item> m_items;
};

}  // namespace keyroute::detail
