#pragma once

/// @file
/// What an ordered_consumer stores at each commit, and its byte encoding: the resequencer's
/// checkpoint with the topic and partition count it was taken on, so that a restart onto a
/// topic whose count changed is refused instead of restoring offsets of other partitions.
///
/// The encoding is text, one field per token, keys in hex: binary-safe, versioned by its first
/// line, and checked on decode (every count and range), so that a truncated or foreign file is
/// an error rather than a wrong restore.

#include "../detail/config.hpp"
#include "../resequencer.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace keyroute::kafka {

/// A checkpoint of one ordered_consumer: store it atomically with the application's output.
struct consumer_checkpoint {
    std::string topic;             ///< the topic it was taken on
    std::int32_t partitions = 0;   ///< the topic's partition count then
    resequencer_checkpoint state;  ///< the resequencer's state (offsets to re-read from)
};

namespace detail {

/// Version 2 adds each episode's forgotten_below; version 1 (read as forgotten_below 0) is
/// still decoded.
inline constexpr std::string_view checkpoint_magic = "keyroute-consumer-checkpoint-2";
inline constexpr std::string_view checkpoint_magic_v1 = "keyroute-consumer-checkpoint-1";

/// The value of a lower-case hex digit as put_hex writes it, or -1.
[[nodiscard]] constexpr auto hex_digit(char c) noexcept -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

inline void put_hex(std::ostringstream& out, std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    out << ' ' << bytes.size() << ' ';
    if (bytes.empty()) out << '-';
    for (const char c : bytes) {
        const auto u = static_cast<unsigned char>(c);
        out << digits[u >> 4U] << digits[u & 15U];
    }
}

/// Reads tokens from an encoded checkpoint; every failure is one runtime_error naming the field.
class checkpoint_reader {
public:
    explicit checkpoint_reader(std::string_view text)
        : m_in(std::string(text)),
          m_size(text.size()) {}

    template <class Int>
    auto number(const char* field) -> Int {
        const std::string w = word(field);
        Int value{};
        const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), value);
        if (ec != std::errc() || end != w.data() + w.size()) fail(field);
        return value;
    }
    /// A count of items that follow, each at least `item_bytes` bytes of what is left of the
    /// input: a short record cannot make its reader allocate much (a vector of n items is
    /// sized before they are read).
    auto count(const char* field, std::size_t item_bytes = 2) -> std::size_t {
        const auto n = number<std::uint64_t>(field);
        const std::streamoff at = m_in.tellg();
        const std::size_t left = at < 0 ? 0 : m_size - static_cast<std::size_t>(at);
        if (n > left / item_bytes) fail(field);
        return static_cast<std::size_t>(n);
    }
    auto word(const char* field) -> std::string {
        std::string w;
        if (!(m_in >> w)) fail(field);
        return w;
    }
    /// True when nothing but blanks is left.
    [[nodiscard]] auto done() -> bool {
        std::string rest;
        return !(m_in >> rest);
    }
    auto hex(const char* field) -> std::string {
        const std::size_t n = count(field);
        const std::string digits = word(field);
        if (n == 0) {
            if (digits != "-") fail(field);
            return {};
        }
        if (digits.size() != 2 * n) fail(field);
        std::string out(n, '\0');
        for (std::size_t i = 0; i < n; ++i) {
            out[i] = static_cast<char>((nibble(digits[2 * i], field) << 4U) |
                                       nibble(digits[2 * i + 1], field));
        }
        return out;
    }
    [[noreturn]] static void fail(const char* field) {
        keyroute::detail::runtime_error(
            std::string("keyroute::kafka::decode_checkpoint: malformed or truncated field ") +
            field);
    }

private:
    static auto nibble(char c, const char* field) -> unsigned {
        const int v = hex_digit(c);
        if (v < 0) fail(field);
        return static_cast<unsigned>(v);
    }
    std::istringstream m_in;
    std::size_t m_size;
};

}  // namespace detail

/// The bytes of `cp`, for a store of the application's choosing (a file, a database row).
[[nodiscard]] inline auto encode_checkpoint(const consumer_checkpoint& cp) -> std::string {
    std::ostringstream out;
    out << detail::checkpoint_magic;
    detail::put_hex(out, cp.topic);
    out << ' ' << cp.partitions << ' ' << cp.state.watermark.count() << '\n'
        << cp.state.partitions.size() << '\n';
    for (const auto& p : cp.state.partitions) {
        out << p.partition << ' ' << p.next_offset << ' ' << p.held_offsets.size();
        for (const auto o : p.held_offsets) out << ' ' << o;
        out << '\n';
    }
    out << cp.state.episodes.size() << '\n';
    for (const auto& e : cp.state.episodes) {
        out << e.producer << ' ' << e.lane << ' ' << e.episode;
        detail::put_hex(out, e.key);
        out << ' ' << e.next_sequence << ' ' << e.last_time.count() << ' ' << e.held_events << ' '
            << e.given_up.size();
        for (const auto& [first, last] : e.given_up) out << ' ' << first << ' ' << last;
        out << ' ' << e.delivered_ahead.size();
        for (const auto s : e.delivered_ahead) out << ' ' << s;
        out << ' ' << e.forgotten_below << '\n';
    }
    out << "end\n";
    return out.str();
}

/// The checkpoint encode_checkpoint() wrote.
/// @throws std::runtime_error naming the field when `bytes` are not such an encoding (another
///         format, a truncated file). The resequencer's restore() checks the state's consistency.
[[nodiscard]] inline auto decode_checkpoint(std::string_view bytes) -> consumer_checkpoint {
    detail::checkpoint_reader in(bytes);
    const std::string magic = in.word("magic");
    const bool v1 = magic == detail::checkpoint_magic_v1;
    if (!v1 && magic != detail::checkpoint_magic) detail::checkpoint_reader::fail("magic");
    consumer_checkpoint cp;
    cp.topic = in.hex("topic");
    cp.partitions = in.number<std::int32_t>("partitions");
    cp.state.watermark = std::chrono::milliseconds(in.number<std::int64_t>("watermark"));
    // At least: 3 numbers a partition, 11 fields an episode, 2 numbers a range.
    cp.state.partitions.resize(in.count("partition count", 6));
    for (auto& p : cp.state.partitions) {
        p.partition = in.number<std::uint32_t>("partition");
        p.next_offset = in.number<std::int64_t>("next_offset");
        p.held_offsets.resize(in.count("held offsets"));
        for (auto& o : p.held_offsets) o = in.number<std::int64_t>("held offset");
    }
    cp.state.episodes.resize(in.count("episode count", 22));
    for (auto& e : cp.state.episodes) {
        e.producer = in.number<std::uint64_t>("producer");
        e.lane = in.number<std::uint16_t>("lane");
        e.episode = in.number<std::uint64_t>("episode");
        e.key = in.hex("key");
        e.next_sequence = in.number<std::uint64_t>("next_sequence");
        e.last_time = std::chrono::milliseconds(in.number<std::int64_t>("last_time"));
        e.held_events = in.number<std::uint64_t>("held_events");
        e.given_up.resize(in.count("given_up count", 4));
        for (auto& [first, last] : e.given_up) {
            first = in.number<std::uint64_t>("given_up");
            last = in.number<std::uint64_t>("given_up");
        }
        e.delivered_ahead.resize(in.count("delivered_ahead count"));
        for (auto& s : e.delivered_ahead) s = in.number<std::uint64_t>("delivered_ahead");
        if (!v1) {
            e.forgotten_below = in.number<std::uint64_t>("forgotten_below");
        } else if (e.given_up.size() >= keyroute::detail::given_up_ranges::max_ranges) {
            // Version 1 kept at most that many ranges and dropped older ones silently: below its
            // lowest range, the history may be lost.
            e.forgotten_below = std::min_element(e.given_up.begin(), e.given_up.end())->first;
        }
    }
    if (in.word("end") != "end" || !in.done()) detail::checkpoint_reader::fail("end");
    return cp;
}

}  // namespace keyroute::kafka
