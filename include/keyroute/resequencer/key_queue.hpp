#pragma once

/// @file
/// A resequencer's per-key partition queue: the held events of one key read from one
/// partition, in partition order (rule 2 waits along it), as a slot_list threaded through the
/// events, with the counts a scan reads. Its key is stored in place up to `short_key` bytes, so
/// that the push which finds the queue compares it without loading another cache line; a longer
/// key goes to `long_key`, which keeps its capacity when the queue is recycled for another key.

#include "slot_list.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keyroute::detail {

struct key_queue {
    static constexpr std::size_t short_key = 24;
    std::array<char, short_key> key_bytes{};
    std::size_t key_size = 0;
    std::string long_key;

    [[nodiscard]] auto key() const noexcept -> std::string_view {
        return key_size <= short_key ? std::string_view(key_bytes.data(), key_size)
                                     : std::string_view(long_key);
    }
    void set_key(std::string_view k) {
        if (k.size() <= short_key) {
            std::copy(k.begin(), k.end(), key_bytes.begin());
        } else {
            long_key.assign(k.data(), k.size());
        }
        key_size = k.size();
    }

    std::uint32_t partition = 0;
    std::uint64_t hash = 0;  ///< of (key, partition): its place in the owner's index
    slot_list events;        ///< its held events, oldest read first
    std::size_t count = 0;   ///< events on `events`
    std::size_t unstamped = 0;
    bool dirty = false;    ///< listed for the next scan
    bool emptied = false;  ///< listed for recycling once empty

    [[nodiscard]] auto size() const noexcept -> std::size_t { return count; }
    /// Makes an empty queue ready for another key; its key buffer keeps its capacity, and
    /// `dirty` stays as it is (the owner's scan list may still name it).
    void recycle() noexcept {
        events = slot_list{};
        count = 0;
        unstamped = 0;
        emptied = false;
    }
};

}  // namespace keyroute::detail
