#pragma once

/// @file
/// The resequencer's held-event lists: an intrusive doubly-linked list of slots (indices into
/// the caller's store of held events), whose links live in the events themselves. A key's
/// queue (its events read from one partition, in partition order) and a partition's held events
/// with an offset (in push order) are each one, threaded through different link fields of the
/// same events: nothing is allocated per event, adding at the back and removing any event are
/// O(1), and walking a list loads only the events on it.
///
/// `Node` is the caller's event type and `Prev` / `Next` its two link fields; `at(slot)` returns
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

template <class Node, std::uint32_t Node::*Prev, std::uint32_t Node::*Next>
struct slot_links {
    /// Appends `slot` (whose node is `n`), which is on no list of these links.
    template <class At>
    static void push_back(slot_list& list, std::uint32_t slot, Node& n, At&& at) noexcept {
        n.*Prev = list.last;
        n.*Next = slot_list::none;
        if (list.last != slot_list::none) {
            at(list.last).*Next = slot;
        } else {
            list.first = slot;
        }
        list.last = slot;
    }

    /// Unlinks node `n`, which is on `list`; its links become none.
    template <class At>
    static void erase(slot_list& list, Node& n, At&& at) noexcept {
        if (n.*Prev != slot_list::none) {
            at(n.*Prev).*Next = n.*Next;
        } else {
            list.first = n.*Next;
        }
        if (n.*Next != slot_list::none) {
            at(n.*Next).*Prev = n.*Prev;
        } else {
            list.last = n.*Prev;
        }
        n.*Prev = n.*Next = slot_list::none;
    }
};

}  // namespace keyroute::detail
