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

/// Aligned to a cache line, with what a push, a scan and a release read (the short key, the
/// counts, the flags and the list) in its first 64 bytes: a queue costs one line to reach.
struct alignas(64) key_queue {
    static constexpr std::size_t short_key = 24;
    std::array<char, short_key> key_bytes{};
    std::uint32_t key_size = 0;
    std::uint32_t partition = 0;
    std::uint64_t hash = 0;       ///< of (key, partition): its place in the owner's index
    slot_list events;             ///< its held events, oldest read first
    std::uint32_t count = 0;      ///< events on `events`
    std::uint32_t unstamped = 0;  ///< unstamped events on `events`
    std::uint32_t id = 0;         ///< the owner's number for it (its slot in the owner's store)
    bool dirty = false;           ///< listed for the next scan
    bool emptied = false;         ///< listed for recycling once empty
    std::string long_key;         ///< the key when longer than short_key

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
        key_size = static_cast<std::uint32_t>(k.size());
    }

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
