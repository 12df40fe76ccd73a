#pragma once

/// @file
/// The resequencer's held-event lists: an intrusive doubly-linked list of slots (indices into
/// the caller's store of held events), whose links live in the events themselves. A key's
/// queue (its events read from one partition, in partition order) and a partition's held events
/// with an offset (in push order) are each one, threaded through different link fields of the
/// same events: nothing is allocated per event, adding at the back and removing any event are
/// O(1), and walking a list loads only the events on it.
///
/// `Node` is the caller's event type and `prev` / `next` its two link fields; `at(slot)` returns
/// the node of a slot (the node itself is passed where the caller has it: no second look-up). A
/// node is on at most one list per pair of fields; its links are `slot_list::none` when it is on
/// none.

#include <cstdint>
#include <limits>

namespace keyroute::detail {

/// Both ends of one list.
struct slot_list {
    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    std::uint32_t first = none;
    std::uint32_t last = none;

    [[nodiscard]] auto empty() const noexcept -> bool { return first == none; }
};

template <class Node, std::uint32_t Node::*prev, std::uint32_t Node::*next>
struct slot_links {
    /// Appends `slot` (whose node is `n`), which is on no list of these links.
    template <class At>
    static void push_back(slot_list& list, std::uint32_t slot, Node& n, At&& at) noexcept {
        n.*prev = list.last;
        n.*next = slot_list::none;
        if (list.last != slot_list::none) {
            at(list.last).*next = slot;
        } else {
            list.first = slot;
        }
        list.last = slot;
    }

    /// Unlinks node `n`, which is on `list`; its links become none.
    template <class At>
    static void erase(slot_list& list, Node& n, At&& at) noexcept {
        if (n.*prev != slot_list::none) {
            at(n.*prev).*next = n.*next;
        } else {
            list.first = n.*next;
        }
        if (n.*next != slot_list::none) {
            at(n.*next).*prev = n.*prev;
        } else {
            list.last = n.*prev;
        }
        n.*prev = n.*next = slot_list::none;
    }
};

}  // namespace keyroute::detail
