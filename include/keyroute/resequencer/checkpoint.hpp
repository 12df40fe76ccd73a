#pragma once

/// @file
/// What a resequencer stores across a restart (resequencer_checkpoint, plain data) and the
/// check restore() makes before it trusts one: a checkpoint that checkpoint() could not have
/// written is refused with an error naming the first fault, before anything is restored.

#include "../detail/config.hpp"

#include <chrono>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace keyroute {

/// What a resequencer must remember across a restart for exactly-once delivery: taken with
/// checkpoint() at the moment the application commits its own output, stored with (or as the
/// metadata of) the committed offsets, and given to restore() in a fresh resequencer before
/// the consumer re-reads each partition from its committable offset. Plain data; its size is
/// bounded by the held events plus the remembered episodes.
struct resequencer_checkpoint {
    /// One partition's read position and the offsets the replay must deliver.
    struct partition_state {
        std::uint32_t partition = 0;
        std::int64_t next_offset = 0;            ///< one past the highest offset accepted
        std::vector<std::int64_t> held_offsets;  ///< below next_offset, not delivered yet
    };
    /// One remembered episode's progress (for duplicate and late detection).
    struct episode_state {
        std::uint64_t producer = 0;
        std::uint16_t lane = 0;
        std::uint64_t episode = 0;
        std::string key;
        /// Every sequence below it is delivered or given up. A finished episode (sequence 2^64-1
        /// delivered, see resequencer) has 2^64-1 here and in delivered_ahead.
        std::uint64_t next_sequence = 0;
        std::chrono::milliseconds last_time{};
        std::vector<std::pair<std::uint64_t, std::uint64_t>> given_up;  ///< ranges, for `late`
        std::vector<std::uint64_t> delivered_ahead;  ///< above next_sequence, already delivered
        /// Its events held at the checkpoint that have an offset (the replay re-reads them):
        /// restore() remembers the episode at least until they are re-read. 0 in checkpoints
        /// of keyroute 0.2.6 and earlier, which did not have the field.
        std::uint64_t held_events = 0;
        /// Below it the episode forgot which sequences were delivered and which given up (its
        /// given-up ranges outgrew their budget): a sequence there comes `late`,
        /// possibly_duplicate. 0 in checkpoints of keyroute 0.2.13 and earlier.
        std::uint64_t forgotten_below = 0;
    };
    std::chrono::milliseconds watermark = std::chrono::milliseconds::min();
    std::vector<partition_state> partitions;
    std::vector<episode_state> episodes;
};

namespace detail {

/// Throws std::invalid_argument ("keyroute resequencer::restore: corrupt checkpoint: ...") on a
/// partition or episode listed twice, a negative next_offset, a held offset outside
/// [0, next_offset), a delivered_ahead sequence not above next_sequence (2^64-1 at 2^64-1 marks
/// a finished episode), a forgotten_below above next_sequence, or a given-up range whose first
/// sequence is above its last. restore()'s state relies on each of these.
inline void check_checkpoint(const resequencer_checkpoint& cp) {
    constexpr std::uint64_t last_sequence = std::numeric_limits<std::uint64_t>::max();
    const auto fail = [](const std::string& what) {
        invalid_argument("keyroute resequencer::restore: corrupt checkpoint: " + what);
    };
    std::set<std::uint32_t> partitions;
    for (const auto& p : cp.partitions) {
        const std::string name = "partition " + std::to_string(p.partition);
        if (!partitions.insert(p.partition).second) fail(name + " is listed twice");
        if (p.next_offset < 0) fail(name + " has next_offset " + std::to_string(p.next_offset));
        for (const std::int64_t offset : p.held_offsets) {
            if (offset < 0 || offset >= p.next_offset) {
                fail(name + " holds offset " + std::to_string(offset) +
                     ", not in [0, next_offset " + std::to_string(p.next_offset) + ")");
            }
        }
    }
    std::set<std::tuple<std::uint64_t, std::uint16_t, std::uint64_t>> episodes;
    for (const auto& e : cp.episodes) {
        const std::string name = "episode (producer " + std::to_string(e.producer) + ", lane " +
                                 std::to_string(e.lane) + ", episode " + std::to_string(e.episode) +
                                 ")";
        if (!episodes.emplace(e.producer, e.lane, e.episode).second)
            fail(name + " is listed twice");
        for (const std::uint64_t seq : e.delivered_ahead) {
            if (seq < e.next_sequence || (seq == e.next_sequence && seq != last_sequence)) {
                fail(name + " has sequence " + std::to_string(seq) +
                     " delivered ahead of next_sequence " + std::to_string(e.next_sequence));
            }
        }
        if (e.forgotten_below > e.next_sequence) {
            fail(name + " has forgotten_below " + std::to_string(e.forgotten_below) +
                 " above next_sequence " + std::to_string(e.next_sequence));
        }
        for (const auto& [first, last] : e.given_up) {
            if (first > last) {
                fail(name + " gave up the range [" + std::to_string(first) + ", " +
                     std::to_string(last) + "]");
            }
        }
    }
}

}  // namespace detail
}  // namespace keyroute
