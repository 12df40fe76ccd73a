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
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace keyroute::kafka::detail {

inline constexpr std::string_view hint_magic = "keyroute-hint-1";
/// The default most bytes of hint in one partition's commit metadata.
inline constexpr std::size_t hint_budget = 3072;

/// The episodes of `recent` (most recently active first, as resequencer::recent_episodes gives
/// them) that have a next sequence to tell (above 0, not finished), spread over `slots` texts
/// of at most `budget` bytes each; a text with no episode is empty (no metadata).
[[nodiscard]] inline auto encode_hints(
    const std::vector<resequencer_checkpoint::episode_state>& recent, std::size_t slots,
    std::size_t budget = hint_budget) -> std::vector<std::string> {
    std::vector<std::string> out(slots);
    if (slots == 0 || budget <= hint_magic.size()) return out;
    std::size_t slot = 0;  // round robin; an episode too big for one slot may fit the next
    for (const auto& e : recent) {
        if (e.next_sequence == 0 || e.next_sequence == std::numeric_limits<std::uint64_t>::max()) {
            continue;
        }
        std::ostringstream item;
        item << ' ' << e.producer << ' ' << e.lane << ' ' << e.episode;
        put_hex(item, e.key);
        item << ' ' << e.next_sequence;
        const std::string bytes = item.str();
        for (std::size_t tries = 0; tries < slots; ++tries) {
            std::string& text = out[slot];
            slot = (slot + 1) % slots;
            const std::size_t used = text.empty() ? hint_magic.size() : text.size();
            if (used + bytes.size() <= budget) {
                if (text.empty()) text = hint_magic;
                text += bytes;
                break;
            }
        }
    }
    return out;
}

/// The episodes one partition's metadata tells, as restore() takes them (forgotten below their
/// next sequence, last active at `now`): none for metadata that is not a hint, nullopt for a
/// hint that is malformed or truncated. Throws nothing but std::bad_alloc.
[[nodiscard]] inline auto try_decode_hint(std::string_view metadata, std::chrono::milliseconds now)
    -> std::optional<std::vector<resequencer_checkpoint::episode_state>> {
    std::vector<resequencer_checkpoint::episode_state> out;
    std::vector<std::string_view> words;
    for (std::size_t at = 0; at < metadata.size();) {
        const std::size_t end = std::min(metadata.find(' ', at), metadata.size());
        if (end > at) words.push_back(metadata.substr(at, end - at));
        at = end + 1;
    }
    if (words.empty() || words[0] != hint_magic) return out;  // someone else's, or none
    if ((words.size() - 1) % 6 != 0) return std::nullopt;
    const auto number = [](std::string_view w, auto& value) {
        const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), value);
        return ec == std::errc() && end == w.data() + w.size();
    };
    for (std::size_t i = 1; i < words.size(); i += 6) {
        resequencer_checkpoint::episode_state e;
        std::size_t key_size = 0;
        if (!number(words[i], e.producer) || !number(words[i + 1], e.lane) ||
            !number(words[i + 2], e.episode) || !number(words[i + 3], key_size) ||
            !number(words[i + 5], e.next_sequence)) {
            return std::nullopt;
        }
        const std::string_view hex = words[i + 4];
        if (key_size == 0 ? hex != "-" : hex.size() / 2 != key_size || hex.size() % 2 != 0) {
            return std::nullopt;
        }
        for (std::size_t k = 0; k < key_size; ++k) {
            const int high = hex_digit(hex[2 * k]);
            const int low = hex_digit(hex[2 * k + 1]);
            if (high < 0 || low < 0) return std::nullopt;
            e.key.push_back(static_cast<char>(high * 16 + low));
        }
        e.forgotten_below = e.next_sequence;
        e.last_time = now;
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace keyroute::kafka::detail
