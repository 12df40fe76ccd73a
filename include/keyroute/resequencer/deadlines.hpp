#pragma once

/// @file
/// The deadlines of a resequencer's held events, earliest first: (deadline, serial) ordered,
/// so that among equal deadlines the event held first comes first.
///
/// Events are mostly held in time order, so their deadlines mostly arrive in order: those go to
/// a queue in arrival order (O(1) a push), and only a deadline earlier than the queue's last one
/// goes to a min-heap beside it (O(log n)). The earliest item is the earlier of the two fronts.
///
/// Deletion is lazy: an event delivered before its deadline leaves its item behind. The owner
/// tells a live item from a stale one by its (slot, serial) (a slot is reused under a new
/// serial), skips stale ones at the front, and calls compact() after each push, which drops them
/// once they are more than 64 and outnumber the live events four to one. So the structure holds
/// at most max(64, 4 x live) + 1 items.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace keyroute::detail {

template <class Time>
class deadline_queue {
public:
    struct item {
        Time deadline;
        std::uint64_t serial;  ///< the held event's serial: unique, increasing with hold order
        std::uint32_t slot;    ///< where the event is held
    };

    void push(const item& it) {
        if (m_head == m_run.size() || !(it.deadline < m_run.back().deadline)) {
            m_run.push_back(it);  // serials increase: (deadline, serial) stays sorted
        } else {
            m_heap.push_back(it);
            std::push_heap(m_heap.begin(), m_heap.end(), later{});
        }
    }

    /// The earliest item (stale or not). Precondition: !empty().
    [[nodiscard]] auto top() const noexcept -> const item& {
        return from_run() ? m_run[m_head] : m_heap.front();
    }
    /// Removes top(). Precondition: !empty().
    void pop() {
        if (from_run()) {
            ++m_head;
            // The popped prefix goes once it is half the queue: O(1) amortised, and the queue
            // never holds more than twice what is left in it (plus 64).
            if (m_head == m_run.size()) {
                m_run.clear();
                m_head = 0;
            } else if (m_head >= 64 && 2 * m_head >= m_run.size()) {
                m_run.erase(m_run.begin(), m_run.begin() + static_cast<std::ptrdiff_t>(m_head));
                m_head = 0;
            }
        } else {
            std::pop_heap(m_heap.begin(), m_heap.end(), later{});
            m_heap.pop_back();
        }
    }

    [[nodiscard]] auto empty() const noexcept -> bool { return size() == 0; }
    [[nodiscard]] auto size() const noexcept -> std::size_t {
        return m_run.size() - m_head + m_heap.size();
    }

    /// Items in memory: size() and the popped ones not yet dropped, at most 2 x size() + 64
    /// plus what compact() has not yet dropped.
    [[nodiscard]] auto stored() const noexcept -> std::size_t {
        return m_run.size() + m_heap.size();
    }

    /// Drops the items `live(item)` says are stale, when they are more than 64 and four times
    /// `live_count` (the events held). O(size) then, so O(1) amortised over the pushes since.
    template <class Live>
    void compact(std::size_t live_count, Live live) {
        if (size() < 64 || size() < 4 * live_count) return;
        const auto stale = [&](const item& it) { return !live(it); };
        m_run.erase(m_run.begin(), m_run.begin() + static_cast<std::ptrdiff_t>(m_head));
        m_head = 0;
        m_run.erase(std::remove_if(m_run.begin(), m_run.end(), stale), m_run.end());
        m_heap.erase(std::remove_if(m_heap.begin(), m_heap.end(), stale), m_heap.end());
        std::make_heap(m_heap.begin(), m_heap.end(), later{});
    }

private:
    struct later {
        auto operator()(const item& a, const item& b) const noexcept -> bool {
            return a.deadline != b.deadline ? a.deadline > b.deadline : a.serial > b.serial;
        }
    };
    [[nodiscard]] auto from_run() const noexcept -> bool {
        if (m_head == m_run.size()) return false;
        return m_heap.empty() || later{}(m_heap.front(), m_run[m_head]);
    }

    std::vector<item> m_run;  // in (deadline, serial) order from m_head
    std::size_t m_head = 0;   // m_run's first item not popped
    std::vector<item> m_heap;
};

}  // namespace keyroute::detail
