#pragma once

/// @file
/// The commit hint: what an ordered_consumer without a checkpoint_store writes into its commits'
/// metadata, so that a restart from the committed offsets knows where the spread keys'
/// episodes stood. Without it, a restart waits max_delay for the sequences delivered before it
/// and then reports them as a gap, although none was lost.
///
/// A hint names recently active episodes (producer, lane, episode, key) and each one's next
/// sequence: every sequence below it was delivered or given up when the offsets were committed.
/// Restored, an episode takes a sequence below it as forgotten history (delivered `late`,
/// `possibly_duplicate`: at least once, never dropped) and waits only for the sequences from
/// it on. A hint older or newer than another partition's offsets is still a lower bound of what
/// was taken, so it never makes an event a duplicate.
///
/// Text, versioned by its first word, keys in hex; each partition's share is at most a budget
/// (ordered_consumer_config::commit_hint_bytes, 3072 by default: brokers refuse metadata above
/// offset.metadata.max.bytes, 4096 by default). Episodes that do not fit are left out: theirs
/// is the hint-less restart.

#include "../resequencer.hpp"
#include "checkpoint.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace keyroute::kafka::detail {

inline constexpr std::string_view hint_magic = "keyroute-hint-1";
/// The default most bytes of hint in one partition's commit metadata.
inline constexpr std::size_t hint_budget = 3072;

/// `cp`'s episodes that have a next sequence to tell (above 0, not finished), most recently
/// active first, spread over `slots` texts of at most `budget` bytes each.
[[nodiscard]] inline auto encode_hints(const resequencer_checkpoint& cp, std::size_t slots,
                                       std::size_t budget = hint_budget)
    -> std::vector<std::string> {
    std::vector<const resequencer_checkpoint::episode_state*> told;
    for (const auto& e : cp.episodes) {
        if (e.next_sequence > 0 && e.next_sequence != std::numeric_limits<std::uint64_t>::max()) {
            told.push_back(&e);
        }
    }
    std::stable_sort(told.begin(), told.end(),
                     [](const auto* a, const auto* b) { return a->last_time > b->last_time; });
    std::vector<std::string> out(slots);
    if (slots == 0) return out;
    for (auto& text : out) text = std::string(hint_magic);
    std::size_t slot = 0;  // round robin; an episode too big for one slot may fit the next
    for (const auto* e : told) {
        std::ostringstream item;
        item << ' ' << e->producer << ' ' << e->lane << ' ' << e->episode;
        put_hex(item, e->key);
        item << ' ' << e->next_sequence;
        const std::string bytes = item.str();
        for (std::size_t tries = 0; tries < slots; ++tries) {
            std::string& text = out[slot];
            slot = (slot + 1) % slots;
            if (text.size() + bytes.size() <= budget) {
                text += bytes;
                break;
            }
        }
    }
    return out;
}

/// The episodes one partition's metadata tells, as restore() takes them (forgotten below their
/// next sequence, last active at `now`); none for metadata that is not a hint.
/// @throws std::runtime_error naming the field for a hint that is malformed or truncated
[[nodiscard]] inline auto decode_hint(std::string_view metadata, std::chrono::milliseconds now)
    -> std::vector<resequencer_checkpoint::episode_state> {
    std::vector<resequencer_checkpoint::episode_state> out;
    if (metadata.substr(0, hint_magic.size()) != hint_magic) return out;
    checkpoint_reader in(metadata.substr(hint_magic.size()));
    while (!in.at_end()) {
        resequencer_checkpoint::episode_state e;
        e.producer = in.number<std::uint64_t>("hint producer");
        e.lane = in.number<std::uint16_t>("hint lane");
        e.episode = in.number<std::uint64_t>("hint episode");
        e.key = in.hex("hint key");
        e.next_sequence = in.number<std::uint64_t>("hint next_sequence");
        e.forgotten_below = e.next_sequence;
        e.last_time = now;
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace keyroute::kafka::detail
